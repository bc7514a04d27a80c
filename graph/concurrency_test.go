package graph

import "testing"

// TestConcurrentShare: calls made at once while serving one request are
// parallel fan-out; calls made one after another are not.
func TestConcurrentShare(t *testing.T) {
	b := newBuilder()
	for i := range 5 {
		b.newTrace()
		base := float64(i) * 1000
		root := b.server(-1, "api", "GET /page", base, 200)
		// In parallel: profile and cart at once.
		b.call(root, "profile", "GET /profile", base+10, 50)
		b.call(root, "cart", "GET /cart", base+12, 60)
		// Then, one after another: two calls to pricing.
		b.call(root, "pricing", "GET /price", base+100, 20)
		b.call(root, "pricing", "GET /price", base+130, 20)
	}
	tp := b.infer()
	for _, tc := range []struct {
		callee string
		want   float64
	}{{"profile", 1}, {"cart", 1}, {"pricing", 0}} {
		if got := edge(t, tp, "api", tc.callee).ConcurrentShare; got != tc.want {
			t.Errorf("api → %s: concurrent share %v, want %v", tc.callee, got, tc.want)
		}
	}
}
