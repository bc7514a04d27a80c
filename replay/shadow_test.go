package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
)

// shadowBase is the model the shadow tests run: fourLayer's topology at
// 200 root requests a second, edge → api and inventory → db retrying (3
// attempts, backoff, per-try timeouts), api → inventory making one
// attempt, and the client giving up on a quarter of the failures on
// inventory → db with attempts left (a draw from the client's stream).
func shadowBase() *Model {
	m := fourLayer("everywhere")
	m.Rate = 200
	m.Edges[1].Policy = Policy{MaxAttempts: 1, PerTryTimeout: 0.5}
	m.Edges[2].Policy.GiveUp[GiveUpFail] = 0.25
	return m
}

// TestShadowedRunsAreTheRuns is the proof of RunShadowed by experiment:
// over faults that make the shadows' limits act and faults that leave
// them idle, and several seeds, every shadow reported never to act is run
// on its own and gives the shadowed run's Result byte for byte (JSON);
// and the shadows that do act are run too, so that a hook missing from
// the simulator, which would call a shadow idle that acts, shows as a
// difference. Each shadow must be found idle somewhere and acting
// somewhere, so that the test decides both ways.
func TestShadowedRunsAreTheRuns(t *testing.T) {
	base := shadowBase()
	alt := func(edit func(i int, p *Policy)) *Model {
		c := base.clone()
		forEdges(c, func(e *Edge, p *Policy) {
			for i := range c.Edges {
				if &c.Edges[i] == e {
					edit(i, p)
				}
			}
		})
		return c
	}
	none, err := ApplyPolicy(base, "none")
	if err != nil {
		t.Fatal(err)
	}
	budget, err := ApplyPolicy(base, "budget")
	if err != nil {
		t.Fatal(err)
	}
	everywhere, err := ApplyPolicy(base, "everywhere")
	if err != nil {
		t.Fatal(err)
	}
	alts := []struct {
		name string
		m    *Model
	}{
		{"none", none},
		{"budget (ratio 0.1, shared)", budget},
		{"everywhere (api → inventory retries, with a backoff of its own)", everywhere},
		{"a cap of 2 attempts at the edge", alt(func(i int, p *Policy) {
			if i == 0 {
				p.MaxAttempts = 2
			}
		})},
		{"AWS quota per edge", alt(func(_ int, p *Policy) { p.Budget = BudgetSpec{Kind: BudgetAWS} })},
		{"Envoy budget, 1 retry in flight, shared", alt(func(_ int, p *Policy) {
			p.Budget, p.SharedBudget = BudgetSpec{Kind: BudgetEnvoy, Percent: 0, Min: 1}, true
		})},
		{"gRPC throttling", alt(func(_ int, p *Policy) { p.Budget = BudgetSpec{Kind: BudgetGRPC, Max: 10, Ratio: 0.1} })},
	}
	var pols [][]Policy
	for _, a := range alts {
		if !ShadowOf(base, a.m) {
			t.Fatalf("%s: not a shadow of the base model", a.name)
		}
		var p []Policy
		for _, e := range a.m.Edges {
			p = append(p, e.Policy)
		}
		pols = append(pols, p)
	}
	faults := []struct {
		name string
		f    degrade.Schedule
	}{
		{"no fault", nil},
		{"db outage", schedule("outage:svc=db,at=5s,for=5s")},
		{"db errors, 5%", schedule("error-rate:svc=db,at=5s,for=5s,p=0.05")},
		{"inventory errors, 50%", schedule("error-rate:svc=inventory,at=5s,for=3s,p=0.5")},
		{"slow db shard", schedule("slow-shard:svc=db,at=5s,for=5s,x=20")},
		{"packet loss at api", schedule("packet-loss:svc=api,at=5s,for=5s,p=0.2")},
	}
	cfg := RunConfig{Duration: 20, Drain: 5}
	idle, acted := make([]int, len(alts)), make([]int, len(alts))
	for _, f := range faults {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed %d", f.name, seed), func(t *testing.T) {
				c := cfg
				c.Seed = seed
				r, same, err := RunShadowed(context.Background(), base, f.f, c, pols)
				if err != nil {
					t.Fatal(err)
				}
				plain, err := Run(base, f.f, c)
				if err != nil {
					t.Fatal(err)
				}
				want := resultJSON(t, plain)
				if !bytes.Equal(resultJSON(t, r), want) {
					t.Fatalf("the shadows changed the run")
				}
				for k, a := range alts {
					ra, err := Run(a.m, f.f, c)
					if err != nil {
						t.Fatal(err)
					}
					equal := bytes.Equal(resultJSON(t, ra), want)
					switch {
					case same[k] && !equal:
						t.Errorf("%s: reported never to act, but its own run differs", a.name)
					case same[k]:
						idle[k]++
					default:
						acted[k]++
					}
				}
			})
		}
	}
	for k, a := range alts {
		if idle[k] == 0 || acted[k] == 0 {
			t.Errorf("%s: idle in %d runs, acting in %d: want both", a.name, idle[k], acted[k])
		}
	}
}

func resultJSON(t *testing.T, r Result) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestShadowOf: only the policies a run can follow as shadows qualify;
// any other difference in a policy makes ShadowOf false and RunShadowed
// refuse the policies, and a difference elsewhere in the model makes
// ShadowOf false (RunShadowed is given policies alone).
func TestShadowOf(t *testing.T) {
	hedging := func(m *Model) { m.Edges[2].Policy.HedgeAfter = 0.01 }
	tests := []struct {
		name   string
		both   func(m *Model) // applied to both models first
		edit   func(m *Model)
		shadow bool // ShadowOf
		runs   bool // RunShadowed takes the policies
	}{
		{"the same model", nil, func(*Model) {}, true, true},
		{"fewer attempts", nil, func(m *Model) { m.Edges[0].Policy.MaxAttempts = 1 }, true, true},
		{"a budget", nil, func(m *Model) { m.Edges[2].Policy.Budget = BudgetSpec{Kind: BudgetAWS} }, true, true},
		{"a shared budget", nil, func(m *Model) {
			m.Edges[0].Policy.Budget, m.Edges[0].Policy.SharedBudget = BudgetSpec{Kind: BudgetRatio, Ratio: 0.2, Window: 10}, true
		}, true, true},
		{"retries and a backoff where there were none", nil, func(m *Model) {
			m.Edges[1].Policy.MaxAttempts, m.Edges[1].Policy.Backoff = 3, DefaultBackoff
		}, true, true},
		{"one attempt, so another chance of giving up", nil, func(m *Model) {
			m.Edges[2].Policy.MaxAttempts, m.Edges[2].Policy.GiveUp = 1, [giveUpClasses]float64{0.5}
		}, true, true},
		{"a budget on a hedging edge", hedging, func(m *Model) { m.Edges[2].Policy.Budget = BudgetSpec{Kind: BudgetAWS} }, true, true},
		{"another backoff with retries on both", nil, func(m *Model) { m.Edges[0].Policy.Backoff.Base = 0.1 }, false, false},
		{"another chance of giving up with retries on both", nil, func(m *Model) { m.Edges[2].Policy.GiveUp[GiveUpFail] = 0.5 }, false, false},
		{"Retry-After honoured with retries on both", nil, func(m *Model) { m.Edges[0].Policy.HonorRetryAfter = true }, false, false},
		{"another per-try timeout", nil, func(m *Model) { m.Edges[0].Policy.PerTryTimeout = 0.3 }, false, false},
		{"a breaker", nil, func(m *Model) { m.Edges[0].Policy.Breaker = DefaultBreaker }, false, false},
		{"a hedge", nil, hedging, false, false},
		{"other attempts on a hedging edge", hedging, func(m *Model) { m.Edges[2].Policy.MaxAttempts = 2 }, false, false},
		{"an invalid budget", nil, func(m *Model) { m.Edges[0].Policy.Budget = BudgetSpec{Kind: BudgetRatio, Ratio: -1} }, true, false},
		{"more workers", nil, func(m *Model) { m.Services[3].Workers++ }, false, true},
		{"another rate", nil, func(m *Model) { m.Rate++ }, false, true},
		{"deadlines propagated", nil, func(m *Model) { m.RootPropagate = true }, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, alt := shadowBase(), shadowBase()
			if tt.both != nil {
				tt.both(base)
				tt.both(alt)
			}
			tt.edit(alt)
			if got := ShadowOf(base, alt); got != tt.shadow {
				t.Errorf("ShadowOf = %v, want %v", got, tt.shadow)
			}
			var pol []Policy
			for _, e := range alt.Edges {
				pol = append(pol, e.Policy)
			}
			_, _, err := RunShadowed(context.Background(), base, nil, RunConfig{Duration: 2, Drain: 1, Seed: 1}, [][]Policy{pol})
			if (err == nil) != tt.runs {
				t.Errorf("RunShadowed: error %v, want one: %v", err, !tt.runs)
			}
		})
	}
}
