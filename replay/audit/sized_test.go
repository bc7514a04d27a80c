package audit

import (
	"math"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// TestSizedBudget pins the budgets sized to today's retry share on
// hand-built topologies (the chain client → edge → api → db): each callee
// its own share of retries per logical call over every retrying edge into
// it, ×1.5, rounded up to 0.05, never below the standard 10%; no candidate
// when every callee is within the standard budget, without the traces'
// figures or without a ratio budget to size. Along the most amplified path
// the budgets compound: the sustained bound is the product of 1+b over the
// retrying layers, each capped by the layer's max attempts (unbounded: the
// product of max attempts, 3 × 3).
func TestSizedBudget(t *testing.T) {
	edge := func(caller, callee string, calls, attempts, max int) graph.Edge {
		return graph.Edge{Caller: caller, Callee: callee, Operation: "GET /x", Calls: calls, Attempts: attempts, Retries: attempts > calls, MaxAttempts: max}
	}
	chain := func(layers ...string) []graph.Path {
		return []graph.Path{{Services: []string{"client", "edge", "api", "db"}, RetryingLayers: layers, WorstCaseAmplification: 27}}
	}
	m := threeLayers(0.5, replay.Policy{MaxAttempts: 3})
	budget, err := replay.ApplyPolicy(m, "budget")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		top    graph.Topology
		model  *replay.Model
		ratios []float64 // per model edge (client→edge, edge→api, api→db); nil: no candidate
		callee string
		loose  string // a callee the sentence says is not bounded
		path   float64
	}{
		{"per callee, shared by two callers", graph.Topology{Edges: []graph.Edge{edge("client", "edge", 100, 100, 1), edge("edge", "api", 100, 130, 3), edge("api", "db", 100, 110, 3), edge("x", "db", 100, 100, 1)}, Paths: chain("edge", "api")},
			budget, []float64{0.1, 0.45, 0.1}, "api", "", 1.45 * 1.1},
		{"exactly 20% today: 30%, not 35%", graph.Topology{Edges: []graph.Edge{edge("api", "db", 100, 120, 3)}, Paths: chain("api")}, budget, []float64{0.1, 0.1, 0.3}, "db", "", 0},
		{"more retries than calls", graph.Topology{Edges: []graph.Edge{edge("edge", "api", 100, 110, 3), edge("api", "db", 100, 215, 3)}, Paths: chain("edge", "api")}, budget, []float64{0.1, 0.15, 1.75}, "db", "", 1.15 * 2.75},
		{"at or above the retries a call may make", graph.Topology{Edges: []graph.Edge{edge("edge", "api", 100, 110, 3), edge("api", "db", 100, 300, 3)}, Paths: chain("edge", "api")}, budget, []float64{0.1, 0.15, 3}, "db", "db (300% ≥ the 2 retries", 1.15 * 3},
		{"within the standard budget", graph.Topology{Edges: []graph.Edge{edge("api", "db", 100, 105, 3)}}, budget, nil, "", "", 0},
		{"no retries", graph.Topology{Edges: []graph.Edge{edge("api", "db", 100, 100, 1)}}, budget, nil, "", "", 0},
		{"no ratio budget to size", graph.Topology{Edges: []graph.Edge{edge("api", "db", 100, 150, 3)}}, m, nil, "", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, s, ok := sizedBudget(&c.top, c.model)
			if ok != (c.ratios != nil) {
				t.Fatalf("candidate %v (%+v), want %v", ok, s, c.ratios != nil)
			}
			if !ok {
				return
			}
			if s.Callee != c.callee || v.Policy != SizedBudgetPolicy || s.Standard != 0.1 || s.Ratio != slicesMax(c.ratios) {
				t.Errorf("sized %+v, want the largest ratio %g at %s", s, slicesMax(c.ratios), c.callee)
			}
			for i, e := range v.Model.Edges {
				if b := e.Policy.Budget; b.Kind != replay.BudgetRatio || b.Ratio != c.ratios[i] || !e.Policy.SharedBudget || b.Window != budget.Edges[i].Policy.Budget.Window {
					t.Errorf("edge %d → %s: budget %+v shared %v, want ratio %g", i, v.Model.Services[e.Callee].Name, b, e.Policy.SharedBudget, c.ratios[i])
				}
			}
			if budget.Edges[0].Policy.Budget.Ratio != 0.1 {
				t.Errorf("the standard budget candidate was changed: %+v", budget.Edges[0].Policy.Budget)
			}
			sentence := s.Sentence()
			for _, want := range []string{SizedBudgetPolicy, c.callee, "headroom", "10%"} {
				if !strings.Contains(sentence, want) {
					t.Errorf("sentence %q lacks %q", sentence, want)
				}
			}
			if got := strings.Contains(sentence, "does not bound"); got != (c.loose != "") || c.loose != "" && !strings.Contains(sentence, c.loose) {
				t.Errorf("sentence %q: want %q said of what it does not bound", sentence, c.loose)
			}
			switch {
			case c.path == 0 && s.Path != nil:
				t.Errorf("path %+v, want none (one retrying layer)", s.Path)
			case c.path > 0 && (s.Path == nil || math.Abs(s.Path.Sized-c.path) > 1e-9 || math.Abs(s.Path.Standard-1.21) > 1e-9 || s.Path.Unbounded != 9):
				t.Errorf("path %+v, want %.4g sized, 1.21 standard, 9 unbounded", s.Path, c.path)
			case c.path > 0 && !strings.Contains(sentence, "compound"):
				t.Errorf("sentence %q does not say the budgets compound", sentence)
			}
		})
	}
	if _, _, ok := sizedBudget(nil, budget); ok {
		t.Error("a sized budget without the traces' figures")
	}
	// A saved audit from before the budgets per callee still reads.
	old := SizedBudget{Policy: SizedBudgetPolicy, Ratio: 0.3, Window: 10, Callee: "db", Retries: 20, Calls: 100, Share: 0.2, Headroom: 1.5, Standard: 0.1}
	if s := old.Sentence(); !strings.Contains(s, "30% of calls") || !strings.Contains(s, "20 retries in 100 calls") {
		t.Errorf("sentence of a one-ratio budget: %q", s)
	}
}

func slicesMax(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
