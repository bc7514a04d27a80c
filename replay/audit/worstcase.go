package audit

import (
	"fmt"
	"strings"

	"github.com/retryaudit/retryaudit/replay"
)

// WorstCase is what a recommended policy does to the most attempts one
// root request may send a service at the end of a path: the product of
// the attempts (hedges included) each layer's calls allow along it, as
// the topology's worst-case amplification counts, for the recommended
// policy and for today's. A budget bounds the retries of all requests
// together, not one request's, so it leaves these products as they are.
type WorstCase struct {
	Recommended     int      `json:"recommended"`
	RecommendedPath []string `json:"recommended_path"`
	Today           int      `json:"today"`
	TodayPath       []string `json:"today_path"`
}

// Sentence says the recommended worst case beside today's.
func (w WorstCase) Sentence() string {
	s := fmt.Sprintf("the most attempts one request may send along a path: %dx along %s, today %dx along %s",
		w.Recommended, strings.Join(w.RecommendedPath, " → "), w.Today, strings.Join(w.TodayPath, " → "))
	if w.Recommended > w.Today {
		s += " (the layers' attempts multiply, and a sustained fault at the path's end meets them all: the capacity plan's load forecast shows what the runs sent)"
	}
	return s
}

// worstCase returns the largest product of attempts along any path of m
// from a root operation, and that path's services (the first found in
// model order among the longest on a tie). A call back into an operation already on the
// path (a cycle) stops there.
func worstCase(m *replay.Model) (int, []string) {
	type op struct{ svc, op int }
	onPath := map[op]bool{}
	var walk func(o op) (int, []int)
	walk = func(o op) (int, []int) {
		onPath[o] = true
		defer delete(onPath, o)
		best, tail := 1, []int(nil)
		for _, ei := range m.Services[o.svc].Ops[o.op].Calls {
			e := m.Edges[ei]
			next := op{e.Callee, e.CalleeOp}
			if onPath[next] {
				continue
			}
			n, t := walk(next)
			if k := max(e.Policy.MaxAttempts, 1) * n; k > best || k == best && len(t) > len(tail) {
				best, tail = k, t
			}
		}
		return best, append([]int{o.svc}, tail...)
	}
	best, path := 0, []int(nil)
	for _, en := range m.Entry {
		if n, p := walk(op{en.Service, en.Op}); n > best {
			best, path = n, p
		}
	}
	names := make([]string, len(path))
	for i, s := range path {
		names[i] = m.Services[s].Name
	}
	return best, names
}

// worstCaseChange compares the recommended model's worst case with
// today's; nil when they are the same.
func worstCaseChange(observed, recommended *replay.Model) *WorstCase {
	if observed == nil || recommended == nil {
		return nil
	}
	today, tp := worstCase(observed)
	rec, rp := worstCase(recommended)
	if today == rec {
		return nil
	}
	return &WorstCase{Recommended: rec, RecommendedPath: rp, Today: today, TodayPath: tp}
}
