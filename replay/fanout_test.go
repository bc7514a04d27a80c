package replay

import (
	"math"
	"testing"
)

// TestFanOutWidth: an operation that makes 10 calls of 50 ms one after
// another takes 500 ms; through a pool of 3, four rounds, 200 ms; all at
// once (a pool of 10, or a Parallel operation) 50 ms. Calls after the
// pool's wait for every one of its calls to end.
func TestFanOutWidth(t *testing.T) {
	for _, tc := range []struct {
		name     string
		width    int
		parallel bool
		wantMS   float64
	}{
		{"one after another", 0, false, 500 + 20},
		{"a pool of 1", 1, false, 500 + 20},
		{"a pool of 3", 3, false, 200 + 20},
		{"a pool of 10", 10, false, 50 + 20},
		{"parallel", 0, true, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Model{
				Services: []Service{
					{Name: "frontend", Workers: 1000, Ops: []Op{{Name: "dispatch", Time: Constant(0), Calls: []int{0, 1}, Parallel: tc.parallel}}},
					{Name: "route", Workers: 1000, Ops: []Op{{Name: "route", Time: Constant(0.05)}}},
					{Name: "audit", Workers: 1000, Ops: []Op{{Name: "log", Time: Constant(0.02)}}},
				},
				Edges: []Edge{
					{Caller: 0, CallerOp: 0, Callee: 1, CalleeOp: 0, Prob: 1, Repeat: 10, Width: tc.width, Policy: Policy{MaxAttempts: 1}},
					{Caller: 0, CallerOp: 0, Callee: 2, CalleeOp: 0, Prob: 1, Repeat: 1, Policy: Policy{MaxAttempts: 1}},
				},
				Entry:          []Entry{{Service: 0, Op: 0, Weight: 1}},
				Rate:           2,
				ClientDeadline: 5,
			}
			r, err := Run(m, nil, RunConfig{Seed: 1, Duration: 20, Drain: 5})
			if err != nil {
				t.Fatal(err)
			}
			if r.Availability != 1 || math.Abs(r.P50MS-tc.wantMS) > 0.5 || math.Abs(r.P99MS-tc.wantMS) > 0.5 {
				t.Errorf("availability %g, p50 %gms, p99 %gms; want 1, %gms", r.Availability, r.P50MS, r.P99MS, tc.wantMS)
			}
			// Each request's work is the same whichever way: 10 × 50 ms + 20 ms.
			if perReq := r.WorkS / float64(r.RootRequests); math.Abs(perReq-0.52) > 1e-6 {
				t.Errorf("work %gs per request, want 0.52s", perReq)
			}
		})
	}
}
