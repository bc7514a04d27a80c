package replay

import (
	"container/heap"
	"math"
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
				now = got.time()
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

// TestHeapOrder: the 4-ary heap, with its branch-free choice of the
// smallest child, pops the same events in the same order as
// container/heap fed the same pushes, on times with ties, negative
// times, -0 beside +0, and +Inf (where a wrong mapping of a time's bits
// to an integer order would show).
func TestHeapOrder(t *testing.T) {
	times := []float64{math.Copysign(0, -1), 0, -0.5, -2, 1e-300, 0.25, 3, math.Inf(1)}
	r := rand.New(rand.NewPCG(5, 5))
	var h eventHeap
	ref := &stdHeap{}
	for i := range 200_000 {
		if h.len() != ref.Len() {
			t.Fatalf("step %d: heap holds %d events, container/heap %d", i, h.len(), ref.Len())
		}
		if h.len() == 0 || r.IntN(2) == 0 {
			at := times[r.IntN(len(times))]
			if r.IntN(2) == 0 {
				at = r.NormFloat64()
			}
			h.push(at, evServed, int32(i), 0)
			heap.Push(ref, event{at: timeKey(at), key: h.seq<<kindBits | uint64(evServed), id: int32(i)})
			continue
		}
		got, want := h.pop(), heap.Pop(ref).(event)
		if got != want {
			t.Fatalf("step %d: popped %+v, container/heap %+v", i, got, want)
		}
	}
}
