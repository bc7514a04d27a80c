package audit

import (
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// TestSizedBudget pins the budget sized to today's retry share on
// hand-built topologies: the callee retried most, per logical call over
// every retrying edge into it, ×1.5, rounded up to 0.05; none when that is
// within the standard budget's 10%, without the traces' figures or without
// a ratio budget to size.
func TestSizedBudget(t *testing.T) {
	edge := func(caller, callee string, calls, attempts int) graph.Edge {
		return graph.Edge{Caller: caller, Callee: callee, Operation: "GET /x", Calls: calls, Attempts: attempts, Retries: attempts > calls}
	}
	m := oneService(0.5, replay.Policy{MaxAttempts: 3})
	budget, err := replay.ApplyPolicy(m, "budget")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		edges  []graph.Edge
		model  *replay.Model
		ratio  float64 // 0: no candidate
		callee string
	}{
		{"shared by two callers", []graph.Edge{edge("a", "db", 100, 130), edge("b", "db", 100, 100), edge("a", "cache", 50, 52)}, budget, 0.25, "db"},
		{"exactly 20% today: 30%, not 35%", []graph.Edge{edge("a", "db", 100, 120)}, budget, 0.3, "db"},
		{"more retries than calls", []graph.Edge{edge("a", "db", 100, 215)}, budget, 1.75, "db"},
		{"within the standard budget", []graph.Edge{edge("a", "db", 100, 105)}, budget, 0, ""},
		{"no retries", []graph.Edge{edge("a", "db", 100, 100)}, budget, 0, ""},
		{"no ratio budget to size", []graph.Edge{edge("a", "db", 100, 150)}, m, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, s, ok := sizedBudget(&graph.Topology{Edges: c.edges}, c.model)
			if ok != (c.ratio > 0) {
				t.Fatalf("candidate %v (%+v), want %v", ok, s, c.ratio > 0)
			}
			if !ok {
				return
			}
			if s.Ratio != c.ratio || s.Callee != c.callee || v.Policy != SizedBudgetPolicy || s.Standard != 0.1 {
				t.Errorf("sized %+v, want ratio %g at %s", s, c.ratio, c.callee)
			}
			for i, e := range v.Model.Edges {
				if b := e.Policy.Budget; b.Kind != replay.BudgetRatio || b.Ratio != c.ratio || !e.Policy.SharedBudget || b.Window != budget.Edges[i].Policy.Budget.Window {
					t.Errorf("edge %d: budget %+v shared %v", i, b, e.Policy.SharedBudget)
				}
			}
			if budget.Edges[0].Policy.Budget.Ratio != 0.1 {
				t.Errorf("the standard budget candidate was changed: %+v", budget.Edges[0].Policy.Budget)
			}
			for _, want := range []string{SizedBudgetPolicy, c.callee, "headroom", "10%"} {
				if !strings.Contains(s.Sentence(), want) {
					t.Errorf("sentence %q lacks %q", s.Sentence(), want)
				}
			}
		})
	}
	if _, _, ok := sizedBudget(nil, budget); ok {
		t.Error("a sized budget without the traces' figures")
	}
}
