package replay

import (
	"math"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
)

func TestWorkChainProb(t *testing.T) {
	c := &graph.WorkCorrelation{SlowAboveMS: 2, Attempts: 100, SlowAttempts: 40, First: graph.TryCount{Tries: 60, Slow: 30},
		AfterSlowByAttempt: []graph.TryCount{{Tries: 20, Slow: 15}, {Tries: 0}},
		AfterFastByAttempt: []graph.TryCount{{Tries: 10, Slow: 1}, {Tries: 5, Slow: 0}},
		AfterSlow:          graph.TryCount{Tries: 20, Slow: 15}, AfterFast: graph.TryCount{Tries: 15, Slow: 1},
		SlowWorkQuantilesMS: make([]float64, len(graph.WorkLevels)), FastWorkQuantilesMS: make([]float64, len(graph.WorkLevels))}
	e := graph.Edge{Caller: "a", Callee: "b", Operation: "GET /"}
	w, err := workChainOf(&e, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		n    int16
		prev int8
		want float64
	}{
		{"first attempt", 1, prevNone, 0.5},
		{"a later attempt with none before it at the callee: as a first", 3, prevNone, 0.5},
		{"second after slow", 2, prevSlow, 0.75},
		{"second after fast", 2, prevFast, 0.1},
		{"third after slow: none seen, the pooled after-slow rate", 3, prevSlow, 0.75},
		{"third after fast", 3, prevFast, 0},
		{"beyond the traces after slow: pooled", 7, prevSlow, 0.75},
		{"beyond the traces after fast: pooled", 7, prevFast, 1.0 / 15},
	} {
		if got := w.prob(tc.n, tc.prev); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: prob(%d, %d) = %g, want %g", tc.name, tc.n, tc.prev, got, tc.want)
		}
	}
	c.SlowWorkQuantilesMS = c.SlowWorkQuantilesMS[:3]
	if _, err := workChainOf(&e, c); err == nil {
		t.Error("slow work with 3 quantiles: no error")
	}
}

// TestWorkChainHedges: a client hedges after 10 ms, up to 3 requests, at
// a callee whose work is 50 ms when slow and 1 ms when fast, a first
// request slow half the time. Slowness of the request (every request of a
// slow call slow) makes every slow call send all 3: 0.5·1 + 0.5·3 = 2
// requests a call. Slowness of the attempt drawn independently (a half
// after a slow one): 0.5·1 + 0.5·(0.5·2 + 0.5·3) = 1.75. A hedge that
// always escapes (never slow after a slow one): 0.5·1 + 0.5·2 = 1.5.
// Without the chain the callee's pooled time, 50 ms, makes every call
// send 3.
func TestWorkChainHedges(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		afterSlow, afterFast float64
		chain                bool
		attempts             float64
	}{
		{"slowness of the request", 1, 0, true, 2},
		{"slowness of the attempt", 0.5, 0.5, true, 1.75},
		{"the hedge escapes it", 0, 0, true, 1.5},
		{"no chain: the pooled time", 0, 0, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := single("db", 1000, Constant(0.05), 100, 0, Policy{MaxAttempts: 3, HedgeAfter: 0.01})
			if tc.chain {
				m.Edges[0].Slowness = &WorkChain{Above: 0.01, First: 0.5, AfterSlow: tc.afterSlow, AfterFast: tc.afterFast,
					Slow: Constant(0.05), Fast: Constant(0.001)}
			}
			r := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 20})
			a := r.Attempts[0]
			calls := float64(a.Attempts - a.Retries)
			if got := float64(a.Attempts) / calls; math.Abs(got-tc.attempts) > 0.03*tc.attempts {
				t.Errorf("%.4f attempts per call over %.0f calls, want %.3g", got, calls, tc.attempts)
			}
		})
	}
}
