package audit

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/policyfile"
)

func sampleTopology(t testing.TB, scenario string) *graph.Topology {
	t.Helper()
	set, err := ingest.ReadFiles(context.Background(), []string{filepath.Join("..", "..", "samples", scenario, "traces.otlp.jsonl.gz")}, nil, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	top, err := graph.Infer(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func sampleConfig(t testing.TB, scenario string, o replay.BuildOptions) Config {
	t.Helper()
	top := sampleTopology(t, scenario)
	m, err := replay.FromTopology(top, o)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Topology: top, Degradations: Degradations(Targets(top), m), Run: replay.RunConfig{Seed: 1}}
	for _, p := range append([]string{"observed", "none"}, StandardPolicies...) {
		if p == "observed" && len(cfg.Variants) > 0 || p == "none" && len(cfg.Variants) > 1 {
			continue
		}
		pm, err := replay.ApplyPolicy(m, p)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Variants = append(cfg.Variants, replay.Variant{Policy: p, Model: pm})
	}
	return cfg
}

// TestRecommendationAcrossSeeds: on the mixed sample, the recommendation
// is the same for first seeds 1, 2 and 3, and it never hedges or adds or
// keeps retries on a POST or PATCH without keys; its changes say why.
func TestRecommendationAcrossSeeds(t *testing.T) {
	var first *Audit
	for _, seed := range []uint64{1, 2, 3} {
		cfg := sampleConfig(t, "mixed", replay.BuildOptions{})
		cfg.Run.Seed, cfg.NoSearch, cfg.Seeds = seed, true, 3
		a, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		rec := a.Recommendation
		if rec.Policy == "" || rec.Reason == "" || a.Recommended == nil {
			t.Fatalf("seed %d: recommendation %+v", seed, rec)
		}
		if first == nil {
			first = a
		} else if rec.Policy != first.Recommendation.Policy {
			t.Errorf("seed %d recommends %s, seed 1 %s", seed, rec.Policy, first.Recommendation.Policy)
		}
		m := a.Recommended
		for i, e := range m.Edges {
			op := m.Services[e.Callee].Ops[e.CalleeOp].Name
			if !strings.HasPrefix(op, "POST") && !strings.HasPrefix(op, "PATCH") {
				continue
			}
			keyed := false
			for _, te := range cfg.Topology.Edges {
				if te.Operation == op && te.Idempotency != nil {
					keyed = te.Idempotency.RetriedCalls > 0 && te.Idempotency.WithKey == te.Idempotency.RetriedCalls
				}
			}
			// Or the recommendation sends a key there (observed+keys).
			keyed = keyed || slices.ContainsFunc(rec.Changes, func(c Change) bool {
				return c.Action == ActionSendIdempotencyKey && c.Operation == op && strings.Contains(c.To, "retries kept")
			})
			if p := e.Policy; p.HedgeAfter > 0 || p.MaxAttempts > 1 && !keyed {
				t.Errorf("seed %d: %s edge %d (%s) under %s: %d attempts, hedge after %g", seed, rec.Policy, i, op, rec.Policy, p.MaxAttempts, p.HedgeAfter)
			}
		}
		for _, c := range rec.Changes {
			if c.Action == "" || c.Why == "" || c.From == c.To {
				t.Errorf("seed %d: change %+v", seed, c)
			}
		}
		// The ordinary day (degradation observed) is added to the matrix,
		// and so is budget-sized: the mixed sample retries over 10% of the
		// calls to inventory.
		sz := rec.SizedBudget
		if sz == nil || sz.Ratio <= 0.1 || sz.Calls == 0 {
			t.Errorf("seed %d: sized budget %+v", seed, sz)
		}
		// POST /reservations is retried without a key: observed+keys and
		// budget-sized+keys keep those retries with one.
		if len(a.Verdicts) != (len(cfg.Degradations)+1)*(len(cfg.Variants)+4) {
			t.Errorf("%d verdicts for %d degradations + the ordinary day × %d policies (+ observed+safe, observed+keys, budget-sized, budget-sized+keys)",
				len(a.Verdicts), len(cfg.Degradations), len(cfg.Variants))
		}
		// The recommendation is not below today's safe policies on an
		// ordinary day beyond the seed spread: neither observed+safe nor
		// observed+keys.
		day := map[string]Stat{}
		for _, v := range a.Verdicts {
			if v.Degradation == "observed" {
				day[v.Policy] = v.Availability
			}
		}
		for _, base := range []string{"observed" + SafeSuffix, "observed" + KeysSuffix} {
			if r, b := day[rec.Policy], day[base]; !r.Overlaps(b) && r.Mean < b.Mean {
				t.Errorf("seed %d recommends %s, available %v on an ordinary day against %s's %v", seed, rec.Policy, r, base, b)
			}
		}
	}
}

// TestEmitRecommended: the policy file emitted from the recommendation,
// read back and applied to the observed model, gives the recommended
// (safe) attempts, hedges, budgets and Retry-After on every edge, so the
// safety rules hold for --emit-policy as for the recommendation.
func TestEmitRecommended(t *testing.T) {
	cfg := sampleConfig(t, "mixed", replay.BuildOptions{})
	cfg.NoSearch, cfg.Seeds = true, 1
	for i, v := range cfg.Variants {
		if v.Policy == "hedge-p95" {
			// hedge-p95 and the observed policy made safe are the candidates.
			cfg.Variants = []replay.Variant{cfg.Variants[0], cfg.Variants[1], cfg.Variants[i]}
			break
		}
	}
	a, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.Recommended == nil {
		t.Fatalf("no recommendation: %+v", a.Recommendation)
	}
	out, err := policyfile.Emit(policyfile.FormatNative, policyfile.EdgesOf(a.Recommended))
	if err != nil {
		t.Fatal(err)
	}
	data := out.Files[0].Data
	pf, err := policyfile.Read("emitted.yaml", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	got, err := pf.Apply(a.Observed)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range a.Recommended.Edges {
		g, w := got.Edges[i].Policy, e.Policy
		if g.MaxAttempts != w.MaxAttempts || g.HedgeAfter != w.HedgeAfter || g.Budget != w.Budget || g.SharedBudget != w.SharedBudget || g.HonorRetryAfter != w.HonorRetryAfter || g.Breaker != w.Breaker {
			t.Errorf("edge %d: applied %+v, want %+v\n%s", i, g, w, data)
		}
		op := a.Recommended.Services[e.Callee].Ops[e.CalleeOp].Name
		if strings.HasPrefix(op, "POST") && g.HedgeAfter > 0 {
			t.Errorf("the emitted file hedges %s", op)
		}
	}
}

// TestServiceNamesAreData: services named like spec syntax are degraded,
// searched and reported as the names they are, because faults are values.
func TestServiceNamesAreData(t *testing.T) {
	for _, name := range []string{"db=primary", "nosuch,mode=timeout", "a->b"} {
		m := oneService(0.5, replay.Policy{MaxAttempts: 2})
		m.Services[1].Name = name
		ds := Degradations([]string{name, "absent"}, m)
		if len(ds) != 5 {
			t.Fatalf("%q: %d degradations, want the 5 of the one service present", name, len(ds))
		}
		for _, d := range ds {
			if f := d.Faults[0]; f.Service != name || f.Kind == "" {
				t.Errorf("%q: fault %+v", name, f)
			}
		}
		none, _ := replay.ApplyPolicy(m, "none")
		a, err := Run(context.Background(), Config{Variants: []replay.Variant{{Policy: "observed", Model: m}, {Policy: "none", Model: none}},
			Degradations: ds[:1], Seeds: 1, Run: replay.RunConfig{Seed: 1, Duration: 30}, Utilization: map[string]float64{name: 0.4}})
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if v := a.Verdicts[0]; v.Service != name || !v.CriticalSearched || !v.UtilizationGiven || v.Utilization != 0.4 {
			t.Errorf("%q: verdict %+v", name, v)
		}
		// An outage mode in the name does not leak into the fault.
		if f := ds[0].Faults[0]; f.Mode != "error" {
			t.Errorf("%q: outage mode %q", name, f.Mode)
		}
	}
	m := oneService(0.5, replay.Policy{MaxAttempts: 2})
	none, _ := replay.ApplyPolicy(m, "none")
	bad := replay.Degradation{Name: "x", Faults: Degradations([]string{"server"}, m)[0].Faults}
	bad.Faults[0].Service = "nosuch,mode=timeout"
	_, err := Run(context.Background(), Config{Variants: []replay.Variant{{Policy: "observed", Model: m}, {Policy: "none", Model: none}}, Degradations: []replay.Degradation{bad}})
	if err == nil || !strings.Contains(err.Error(), `no service "nosuch,mode=timeout" in the model (have client, server)`) {
		t.Errorf("a fault on a service the model lacks: %v", err)
	}
}

// TestIfIdempotent: on grpc-pushback (grpc-go retrying a gRPC Lookup the
// traces cannot show to be idempotent) the safety rules stop the retries,
// and the recommendation says what it would be if Lookup were declared
// idempotent: the retries kept. Declared by the user, or on a sample whose
// writes are known (mixed: HTTP POSTs), there is no such branch.
func TestIfIdempotent(t *testing.T) {
	const method = "retryaudit.Catalog/Lookup"
	run := func(scenario string, declared ...string) Recommendation {
		cfg := sampleConfig(t, scenario, replay.BuildOptions{})
		cfg.NoSearch, cfg.Seeds = true, 2
		cfg.Declarations.Idempotent = declared
		a, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a.Recommendation
	}
	rec := run("grpc-pushback")
	c := rec.IfIdempotent
	if c == nil || len(c.Declare) != 1 || c.Declare[0] != method {
		t.Fatalf("grpc-pushback: recommendation %s, if idempotent %+v; want the branch for %s", rec.Policy, c, method)
	}
	has := func(cs []Change, action, to string) bool {
		return slices.ContainsFunc(cs, func(ch Change) bool { return ch.Action == action && strings.Contains(ch.To, to) })
	}
	// Stopping Lookup's retries ends the availability they buy (the
	// outage plan: about 0.3 against 0.9), so the safe advice keeps them
	// with a key, and the branch keeps them as they are.
	if has(rec.Changes, ActionStopRetrying, "") || !has(rec.Changes, ActionSendIdempotencyKey, "retries kept") ||
		has(c.Changes, ActionStopRetrying, "") || has(c.Changes, ActionSendIdempotencyKey, "") || c.Policy == "" {
		t.Errorf("grpc-pushback: %s %+v, if idempotent %s %+v: want the retries kept with a key, and kept as they are if idempotent", rec.Policy, rec.Changes, c.Policy, c.Changes)
	}
	if !strings.Contains(c.Sentence(), "whether "+method+" is idempotent, so the safety rules treat it as a write; if it is, declare it (--idempotent "+method+")") {
		t.Errorf("the sentence: %s", c.Sentence())
	}
	two := Conditional{Declare: []string{"a.A/Get", "b.B/Count"}, Policy: "observed", Reason: "r"}
	if want := "whether a.A/Get, b.B/Count are idempotent, so the safety rules treat them as writes; if they are, declare them (--idempotent a.A/Get --idempotent b.B/Count) and the advice becomes: run observed: r"; !strings.Contains(two.Sentence(), want) {
		t.Errorf("the sentence for two: %s", two.Sentence())
	}
	if d := run("grpc-pushback", method); d.IfIdempotent != nil || d.Policy != c.Policy {
		t.Errorf("declared: %s, if idempotent %+v; want %s and no branch", d.Policy, d.IfIdempotent, c.Policy)
	}
	if m := run("mixed"); m.IfIdempotent != nil {
		t.Errorf("mixed: a branch %+v, though its writes are known", m.IfIdempotent)
	}
}

// TestNoAdviceThatEndsAvailability: on Jaeger's HotROD, driver retries
// GetDriver (an operation nothing shows to be a read or a write) and a
// dispatch needs ten of them to succeed, with one first attempt in four
// failing. Stopping those retries (observed+safe) ends nearly every
// dispatch, so the advice must keep them: with a key (observed+keys),
// and as they are if GetDriver is declared idempotent. It must never
// cost the availability today's policies have on an ordinary day.
func TestNoAdviceThatEndsAvailability(t *testing.T) {
	for _, tc := range []struct {
		sample string
		// op is the operation of unknown idempotency whose retries
		// observed+safe stops, at a loss of most of today's availability.
		op string
	}{
		{"hotrod", "GetDriver"},
		{"grpc-deadlines", "retryaudit.Orders/Get"},
	} {
		t.Run(tc.sample, func(t *testing.T) {
			cfg := sampleConfig(t, tc.sample, replay.BuildOptions{})
			cfg.NoSearch, cfg.Seeds = true, 2
			a, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			rec := a.Recommendation
			day := map[string]Stat{}
			for _, v := range a.Verdicts {
				if v.Degradation == "observed" {
					day[v.Policy] = v.Availability
				}
			}
			if r, o, s := day[rec.Policy], day["observed"], day["observed"+SafeSuffix]; rec.Policy == "" || !r.Overlaps(o) && r.Mean < o.Mean || s.Mean > 0.5*o.Mean {
				t.Fatalf("recommends %q with availability %+v on an ordinary day, observed %+v, observed+safe %+v: want today's availability kept where stopping retries would end it",
					rec.Policy, r, o, s)
			}
			keeps := false
			for _, c := range rec.Changes {
				if strings.HasPrefix(c.Operation, tc.op) && c.Action == ActionStopRetrying {
					t.Errorf("stops %s's retries: %+v", tc.op, c)
				}
				keeps = keeps || strings.HasPrefix(c.Operation, tc.op) && c.Action == ActionSendIdempotencyKey && strings.Contains(c.To, "retries kept")
			}
			if !strings.HasSuffix(rec.Policy, KeysSuffix) || !keeps {
				t.Errorf("recommends %s %+v: want a +keys candidate, a key on %s with its retries kept", rec.Policy, rec.Changes, tc.op)
			}
			if c := rec.IfIdempotent; c == nil || !slices.Contains(c.Declare, tc.op) {
				t.Errorf("if idempotent: %+v; want %s declared", c, tc.op)
			}
		})
	}
}

// TestMoreSeedsDecide: on grpc-deadlines with first seed 1 the five seeds
// leave the choice between observed+keys and budget-sized+keys within the
// seed noise (one seed of budget-sized+keys collapses at 0.35 under one
// degradation where the other four recover to 0.50); those two alone run
// over the next five seeds too and the ten decide it, which the reason
// and recommendation.more_seeds say (the five seeds paired chose
// budget-sized+keys, sets of four kept observed+keys: the choice first). The audit's own verdicts keep their
// five seeds.
func TestMoreSeedsDecide(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole audit of a sample, searches included")
	}
	a, err := Run(context.Background(), sampleConfig(t, "grpc-deadlines", replay.BuildOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	rec := a.Recommendation
	more := rec.MoreSeeds
	if more == nil {
		t.Fatalf("no more seeds: %s", rec.Reason)
	}
	if want := DefaultSeeds + ExtraSeeds; more.Seeds != want || !strings.Contains(rec.Reason, "decided on 10 seeds (--seed to --seed+9) for budget-sized+keys, observed+keys, the first 5 having left the choice within the seed noise") {
		t.Errorf("more seeds %d, reason %q: want %d said", more.Seeds, rec.Reason, want)
	}
	if !slices.Equal(more.Candidates, []string{"budget-sized+keys", "observed+keys"}) || !slices.Contains(more.Candidates, rec.Policy) {
		t.Errorf("decided between %v: %s", more.Candidates, rec.Policy)
	}
	for _, v := range more.Verdicts {
		if v.Seeds != more.Seeds || v.Policy != "none" && !slices.Contains(more.Candidates, v.Policy) {
			t.Errorf("verdict of %s under %s over %d seeds", v.Policy, v.Degradation, v.Seeds)
		}
	}
	for _, v := range a.Verdicts {
		if v.Seeds != DefaultSeeds {
			t.Errorf("the audit's verdict of %s under %s over %d seeds", v.Policy, v.Degradation, v.Seeds)
		}
	}
	// Every candidate of the audit is still ranked or ruled out.
	for _, v := range a.Verdicts {
		if v.Policy != "none" && !slices.Contains(rec.Ranking, v.Policy) && !slices.ContainsFunc(rec.RuledOut, func(r RuledOut) bool { return r.Policy == v.Policy }) {
			t.Errorf("%s neither ranked (%v) nor ruled out", v.Policy, rec.Ranking)
		}
	}
}
