package audit

import (
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
)

// TestWorstCase: the most attempts one request may send along a path is
// the product of the attempts each layer allows, over the path that
// multiplies most (the longest among equals), a cycle cut where it
// comes back; the recommendation states it only where it differs from
// today's.
func TestWorstCase(t *testing.T) {
	attempts := func(n ...int) *replay.Model {
		m := threeLayers(0.5, replay.Policy{MaxAttempts: 1})
		for i := range m.Edges {
			m.Edges[i].Policy.MaxAttempts = n[i]
		}
		return m
	}
	fanOut := func() *replay.Model {
		// api calls db (2 attempts) and cache (5 attempts): cache's path
		// multiplies more.
		m := attempts(1, 3, 2)
		m.Services = append(m.Services, replay.Service{Name: "cache", Workers: 1, Ops: []replay.Op{{Name: "get", Time: replay.Constant(0.001)}}})
		m.Edges = append(m.Edges, replay.Edge{Caller: 2, Callee: 4, Prob: 1, Repeat: 1, Policy: replay.Policy{MaxAttempts: 5}})
		m.Services[2].Ops[0].Calls = append(m.Services[2].Ops[0].Calls, len(m.Edges)-1)
		return m
	}
	cycle := func() *replay.Model {
		// db calls edge back: the walk stops where it would come round.
		m := attempts(2, 2, 2)
		m.Edges = append(m.Edges, replay.Edge{Caller: 3, Callee: 1, Prob: 1, Repeat: 1, Policy: replay.Policy{MaxAttempts: 7}})
		m.Services[3].Ops[0].Calls = []int{len(m.Edges) - 1}
		return m
	}
	for _, tc := range []struct {
		name string
		m    *replay.Model
		want int
		path []string
	}{
		{"no retries", attempts(1, 1, 1), 1, []string{"client", "edge", "api", "db"}},
		{"three layers", attempts(3, 3, 3), 27, []string{"client", "edge", "api", "db"}},
		{"only the edge retries: the longest path among equals", attempts(4, 1, 1), 4, []string{"client", "edge", "api", "db"}},
		{"fan-out: the branch that multiplies most", fanOut(), 15, []string{"client", "edge", "api", "cache"}},
		{"cycle cut", cycle(), 8, []string{"client", "edge", "api", "db"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, path := worstCase(tc.m)
			if got != tc.want || !slices.Equal(path, tc.path) {
				t.Errorf("worst case %d along %v, want %d along %v", got, path, tc.want, tc.path)
			}
		})
	}
	if w := worstCaseChange(attempts(3, 1, 1), attempts(3, 1, 1)); w != nil {
		t.Errorf("same worst case: want no statement, got %+v", *w)
	}
	w := worstCaseChange(attempts(1, 4, 1), attempts(3, 4, 3))
	if w == nil || w.Today != 4 || w.Recommended != 36 {
		t.Fatalf("got %+v, want 4x today and 36x recommended", w)
	}
	if s := w.Sentence(); !strings.Contains(s, "36x along client → edge → api → db, today 4x") || !strings.Contains(s, "multiply") {
		t.Errorf("sentence %q", s)
	}
	if s := worstCaseChange(attempts(3, 4, 3), attempts(1, 4, 1)).Sentence(); strings.Contains(s, "multiply") {
		t.Errorf("a lower worst case warns of multiplying: %q", s)
	}
}
