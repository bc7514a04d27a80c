package graph

import "testing"

// TestConcurrentShare: calls made at once while serving one request are
// parallel fan-out; calls made one after another are not. A pool of
// workers over one edge's calls overlaps them with each other, not with
// the calls before and after it, and shows its width.
func TestConcurrentShare(t *testing.T) {
	b := newBuilder()
	for i := range 5 {
		b.newTrace()
		base := float64(i) * 1000
		root := b.server(-1, "api", "GET /page", base, 600)
		// In parallel: profile and cart at once.
		b.call(root, "profile", "GET /profile", base+10, 50)
		b.call(root, "cart", "GET /cart", base+12, 60)
		// Then, one after another: two calls to pricing.
		b.call(root, "pricing", "GET /price", base+100, 20)
		b.call(root, "pricing", "GET /price", base+130, 20)
		// Then 10 route calls of 50 ms through a pool of 3 (HotROD's
		// frontend), in rounds starting 55 ms apart.
		for k := range 10 {
			b.call(root, "route", "GET /route", base+200+55*float64(k/3)+0.1*float64(k%3), 50)
		}
	}
	tp := b.infer()
	for _, tc := range []struct {
		callee       string
		share, other float64
		width        int
	}{{"profile", 1, 1, 0}, {"cart", 1, 1, 0}, {"pricing", 0, 0, 1}, {"route", 0.9, 0, 3}} { // the tenth call, alone in its round, overlaps none
		e := edge(t, tp, "api", tc.callee)
		if e.ConcurrentShare != tc.share || e.ConcurrentOtherShare != tc.other || e.FanOutWidth != tc.width {
			t.Errorf("api → %s: concurrent share %v, with other edges %v, fan-out width %d; want %v, %v, %d",
				tc.callee, e.ConcurrentShare, e.ConcurrentOtherShare, e.FanOutWidth, tc.share, tc.other, tc.width)
		}
	}
}

func TestMedianCount(t *testing.T) {
	for _, tc := range []struct {
		counts map[int]int
		want   int
	}{{nil, 0}, {map[int]int{3: 1}, 3}, {map[int]int{1: 2, 3: 2}, 1}, {map[int]int{1: 1, 3: 2}, 3}, {map[int]int{10: 1, 2: 5, 1: 1}, 2}} {
		if got := medianCount(tc.counts); got != tc.want {
			t.Errorf("medianCount(%v) = %d, want %d", tc.counts, got, tc.want)
		}
	}
}
