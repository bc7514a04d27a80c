package replay

import (
	"math/rand/v2"
	"testing"
)

// TestAgendaOrder: the agenda (heap, arrival slot, timeout lane) pops the
// same events in the same order as one heap fed the same pushes, for
// interleavings with ties, timeouts in and out of time order, and more
// than one arrival pending.
func TestAgendaOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed uint64
		// delay draws an event's delay from now; kinds are drawn from kinds.
		delay func(r *rand.Rand, k evKind) float64
		kinds []evKind
	}{
		{"coarse ties", 1, func(r *rand.Rand, _ evKind) float64 { return float64(r.IntN(5)) / 10 },
			[]evKind{evArrival, evTimeout, evServed, evTimeout, evRequest}},
		{"constant timeouts", 2, func(r *rand.Rand, k evKind) float64 {
			if k == evTimeout {
				return 0.1
			}
			return r.ExpFloat64() / 100
		}, []evKind{evArrival, evTimeout, evServed, evResponse}},
		{"timeouts mostly in order", 3, func(r *rand.Rand, k evKind) float64 {
			if k == evTimeout && r.IntN(10) > 0 {
				return 0.1
			}
			return r.Float64() / 5
		}, []evKind{evTimeout, evTimeout, evServed, evArrival, evArrival}},
		{"heap only", 4, func(r *rand.Rand, _ evKind) float64 { return r.Float64() }, []evKind{evServed, evRetry}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(tc.seed, 9))
			var a agenda
			var h eventHeap
			now := 0.0
			for i := range 100_000 {
				if a.len() != h.len() {
					t.Fatalf("step %d: agenda holds %d events, the heap %d", i, a.len(), h.len())
				}
				if h.len() == 0 || r.IntN(2) == 0 {
					k := tc.kinds[r.IntN(len(tc.kinds))]
					at := now + tc.delay(r, k)
					a.push(at, k, int32(i), int32(i%7))
					h.push(at, k, int32(i), int32(i%7))
					continue
				}
				got, want := a.pop(), h.pop()
				if got != want {
					t.Fatalf("step %d: agenda popped %+v, heap %+v", i, got, want)
				}
				now = got.t
			}
			for h.len() > 0 {
				if got, want := a.pop(), h.pop(); got != want {
					t.Fatalf("draining: agenda popped %+v, heap %+v", got, want)
				}
			}
			if a.len() != 0 {
				t.Fatalf("agenda holds %d events after the heap is empty", a.len())
			}
		})
	}
}
