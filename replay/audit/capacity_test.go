package audit

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/replay"
)

// oneService is a hand-built single-service topology: clients calling a
// server of 8 workers with exponential service times of 50 ms (capacity
// 160/s) at utilization u, every attempt timing out after 0.5 s.
func oneService(u float64, p replay.Policy) *replay.Model {
	p.PerTryTimeout = 0.5
	return &replay.Model{
		Services: []replay.Service{
			{Name: "client", Workers: 1 << 20, Ops: []replay.Op{{Name: "request", Time: replay.Constant(0), Calls: []int{0}}}},
			{Name: "server", Workers: 8, Ops: []replay.Op{{Name: "serve", Time: replay.Exponential{MeanS: 0.05}}}},
		},
		Edges: []replay.Edge{{Caller: 0, CallerOp: 0, Callee: 1, CalleeOp: 0, Prob: 1, Repeat: 1, Idempotent: true, Policy: p}},
		Entry: []replay.Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:  u * 160, ClientDeadline: 5,
	}
}

// TestCriticalUtilizationBistability pins the capacity plan of one
// service against the bistability condition. A 3 s slowdown (service
// times ×10) leaves a backlog that times every attempt out; servers keep
// working for callers who left. A ratio budget b lets retries add at most
// b× the demand, so the system drains its backlog, and recovers, up to
// about 1/(1+b) of the utilization at which it recovers with no retries
// (its trigger-free capacity within the verdict's settling time); five
// immediate retries recover only far below.
func TestCriticalUtilizationBistability(t *testing.T) {
	immediate := replay.Backoff{Kind: "immediate", Jitter: "none"}
	slow := replay.Degradation{Name: "slow", Faults: degrade.Schedule{{Kind: degrade.Latency, Service: "server", At: 10, For: 3, Factor: 10}}}
	seeds := []uint64{1, 2, 3}
	crit := func(p replay.Policy) float64 {
		t.Helper()
		m := oneService(0.5, p)
		u0, err := Utilization(m, "server")
		if err != nil || math.Abs(u0-0.5) > 1e-9 {
			t.Fatalf("utilization %v, %v: want 0.5", u0, err)
		}
		c, err := searchCritical(context.Background(), newPool(nil), &variant{model: m}, probeLogs{}, "server", u0, false, slow, seeds, replay.RunConfig{Duration: 40})
		if err != nil || !c.Searched {
			t.Fatalf("search: %+v, %v", c, err)
		}
		if c.Utilization == nil {
			return 1 // recovers at the top of the range
		}
		return *c.Utilization
	}
	none := crit(replay.Policy{MaxAttempts: 1})
	retries := crit(replay.Policy{MaxAttempts: 6, Backoff: immediate})
	t.Logf("critical utilization: none %.2f, 5 immediate retries %.2f", none, retries)
	if retries > none/2 {
		t.Errorf("5 immediate retries: critical utilization %.2f, want far below no retries' %.2f", retries, none)
	}
	for _, b := range []float64{0.1, 0.5, 1} {
		budget := replay.BudgetSpec{Kind: replay.BudgetRatio, Ratio: b, Window: 10}
		got := crit(replay.Policy{MaxAttempts: 6, Backoff: immediate, Budget: budget})
		t.Logf("ratio budget %g: critical utilization %.2f", b, got)
		if want := 1 / (1 + b); math.Abs(got/none-want) > 0.1 {
			t.Errorf("ratio budget %g: critical utilization %.2f = %.2f of no retries' %.2f, want about 1/(1+b) = %.2f", b, got, got/none, none, want)
		}
		if got <= retries {
			t.Errorf("ratio budget %g: critical utilization %.2f, not above unbudgeted retries' %.2f", b, got, retries)
		}
	}
}

// TestCriticalUtilizationFullOutage: N immediate retries under a full
// outage of the one service tolerate far less utilization than no
// retries, where the outage holds attempts until their per-try timeout
// (mode timeout) or lets them queue and cost work before failing (mode
// error-after-work): the retries of every request caught in it arrive at
// once when it ends. A fail-fast outage (mode error, the audit's default)
// costs the service nothing per attempt and leaves no backlog; its figure
// is logged.
func TestCriticalUtilizationFullOutage(t *testing.T) {
	immediate := replay.Backoff{Kind: "immediate", Jitter: "none"}
	crit := func(mode string, p replay.Policy) float64 {
		t.Helper()
		out := replay.Degradation{Name: "outage", Faults: degrade.Schedule{{Kind: degrade.Outage, Service: "server", At: 10, For: 5, Mode: mode}}}
		c, err := searchCritical(context.Background(), newPool(nil), &variant{model: oneService(0.5, p)}, probeLogs{}, "server", 0.5, false, out, []uint64{1, 2, 3}, replay.RunConfig{Duration: 40})
		if err != nil || !c.Searched {
			t.Fatalf("search: %+v, %v", c, err)
		}
		if c.Utilization == nil {
			return 1
		}
		return *c.Utilization
	}
	for _, mode := range []string{degrade.ModeTimeout, degrade.ModeAfterWork, degrade.ModeError} {
		none := crit(mode, replay.Policy{MaxAttempts: 1})
		retries := crit(mode, replay.Policy{MaxAttempts: 6, Backoff: immediate})
		t.Logf("outage, mode %s: critical utilization none %.2f, 5 immediate retries %.2f", mode, none, retries)
		if mode != degrade.ModeError && retries > none/2 {
			t.Errorf("outage, mode %s: 5 immediate retries tolerate %.2f, want far below no retries' %.2f", mode, retries, none)
		}
	}
}

// threeLayers is a hand-built chain: client → edge → api → db, db with 8
// workers of 50 ms (exponential) at utilization u, each of the three
// calling layers under policy p with a per-try timeout that shrinks with
// depth (2 s, 1 s, 0.5 s).
func threeLayers(u float64, p replay.Policy) *replay.Model {
	svc := func(name string, t replay.Dist, calls ...int) replay.Service {
		return replay.Service{Name: name, Workers: 1 << 16, Ops: []replay.Op{{Name: name, Time: t, Calls: calls}}}
	}
	m := &replay.Model{
		Services: []replay.Service{svc("client", replay.Constant(0), 0), svc("edge", replay.Constant(0.001), 1), svc("api", replay.Constant(0.001), 2), svc("db", replay.Exponential{MeanS: 0.05})},
		Entry:    []replay.Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:     u * 160, ClientDeadline: 5,
	}
	m.Services[3].Workers = 8
	for i, timeout := range []float64{2, 1, 0.5} {
		q := p
		q.PerTryTimeout = timeout
		m.Edges = append(m.Edges, replay.Edge{Caller: i, Callee: i + 1, Prob: 1, Repeat: 1, Idempotent: true, Policy: q})
	}
	return m
}

// TestThreeLayersVersusBudget: under a dependency outage, three retrying
// layers (up to 27 attempts at the db per request) collapse at a lower
// utilization than the same retries under a shared retry budget, and no
// retries at all never below retrying everywhere.
func TestThreeLayersVersusBudget(t *testing.T) {
	backoff := replay.Backoff{Kind: "exponential", Base: 0.01, Multiplier: 2, Cap: 0.1, Jitter: "full"}
	budget := replay.BudgetSpec{Kind: replay.BudgetRatio, Ratio: 0.1, Window: 10}
	outage := replay.Degradation{Name: "outage", Faults: degrade.Schedule{{Kind: degrade.Outage, Service: "db", At: 10, For: 5, Mode: degrade.ModeTimeout}}}
	crit := func(p replay.Policy) float64 {
		t.Helper()
		m := threeLayers(0.5, p)
		u0, err := Utilization(m, "db")
		if err != nil {
			t.Fatal(err)
		}
		c, err := searchCritical(context.Background(), newPool(nil), &variant{model: m}, probeLogs{}, "db", u0, false, outage, []uint64{1, 2, 3}, replay.RunConfig{Duration: 40})
		if err != nil || !c.Searched {
			t.Fatalf("search: %+v, %v", c, err)
		}
		if c.Utilization == nil {
			return 1
		}
		return *c.Utilization
	}
	retrying := crit(replay.Policy{MaxAttempts: 3, Backoff: backoff})
	budgeted := crit(replay.Policy{MaxAttempts: 3, Backoff: backoff, Budget: budget, SharedBudget: true})
	none := crit(replay.Policy{MaxAttempts: 1})
	t.Logf("critical utilization: retrying %.2f, budget %.2f, none %.2f", retrying, budgeted, none)
	if retrying >= budgeted {
		t.Errorf("retrying layers: critical utilization %.2f, not below the budget's %.2f", retrying, budgeted)
	}
	if none < retrying {
		t.Errorf("no retries: critical utilization %.2f below retrying everywhere's %.2f", none, retrying)
	}
}

// TestThreeLayersVersusBudgetOnSamples checks the same claims on the
// topologies inferred from committed samples whose deepest path retries
// at three layers, under the audit's own outage of the deepest retried
// dependency (its default degradation, fail-fast): the observed policies
// (three retrying layers) never tolerate more utilization than the same
// retries under the standard shared budget, and no retries never less
// than retrying everywhere (nil, recovering at SearchHigh, counts as 1).
// Where the three layers collapse within the range, the budget must
// tolerate strictly more: the claim "lower". They collapse only where an
// overload turns into retries: a per-try timeout on a retried edge (mixed:
// inventory → db after 100 ms); where no retried edge has one
// (retry-everywhere, incident), latency is never retried, nothing feeds
// the overload, and every policy recovers at SearchHigh. At least one
// sample must exercise the strict claim. Two seeds, the policies
// compared only: a few CPU-seconds.
func TestThreeLayersVersusBudgetOnSamples(t *testing.T) {
	strict := 0
	for _, name := range []string{"mixed", "retry-everywhere", "incident"} {
		t.Run(name, func(t *testing.T) {
			cfg := sampleConfig(t, name, replay.BuildOptions{})
			top := cfg.Topology
			if len(top.Paths) == 0 || len(top.Paths[0].RetryingLayers) < 3 {
				t.Fatalf("the deepest path retries at %v, want three layers", top.Paths)
			}
			target := Targets(top)[0]
			var outage []replay.Degradation
			for _, d := range cfg.Degradations {
				if f := d.Faults[0]; f.Kind == degrade.Outage && f.Service == target {
					outage = append(outage, d)
				}
			}
			if len(outage) != 1 {
				t.Fatalf("%d outages of %s in the default matrix, want 1", len(outage), target)
			}
			keep := []string{"observed", "none", "everywhere", "budget"}
			cfg.Variants = slices.DeleteFunc(cfg.Variants, func(v replay.Variant) bool { return !slices.Contains(keep, v.Policy) })
			cfg.Degradations, cfg.Seeds = outage, 2
			a, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			crit := map[string]float64{}
			for _, v := range a.Verdicts {
				if v.Degradation != outage[0].Name {
					continue
				}
				if !v.CriticalSearched {
					t.Fatalf("%s: not searched: %s", v.Policy, v.CriticalNote)
				}
				crit[v.Policy] = 1
				if v.CriticalUtilization != nil {
					crit[v.Policy] = *v.CriticalUtilization
				}
			}
			t.Logf("outage of %s, critical utilization: three retrying layers (observed) %.2f, budget %.2f, everywhere %.2f, none %.2f",
				target, crit["observed"], crit["budget"], crit["everywhere"], crit["none"])
			if crit["observed"] > crit["budget"] {
				t.Errorf("three retrying layers tolerate %.2f, more than the budget's %.2f", crit["observed"], crit["budget"])
			}
			if crit["observed"] < 1 {
				strict++
				if crit["observed"] >= crit["budget"] {
					t.Errorf("three retrying layers collapse above %.2f, not below the budget's %.2f", crit["observed"], crit["budget"])
				}
			}
			if crit["none"] < crit["everywhere"] {
				t.Errorf("no retries tolerate %.2f, less than retrying everywhere's %.2f", crit["none"], crit["everywhere"])
			}
		})
	}
	if strict == 0 {
		t.Error("no sample's three retrying layers collapsed within the range: the strict claim was not exercised")
	}
}
