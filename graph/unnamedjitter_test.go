package graph

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestUnnamedJitterRanges: full jitter read from too few calls that
// waited twice to rule out decorrelated jitter is present but unnamed;
// the schedule then states the waits' median, and each step's range must
// still hold what the policy configured whichever formula it was, here
// the ceiling, which lies above every wait.
func TestUnnamedJitterRanges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls int
		base  float64
	}{
		{"50ms ×2, 40 calls", 40, 50},
		{"50ms ×2, 60 calls", 60, 50},
		{"20ms ×2, 60 calls", 60, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unnamed := 0
			for seed := uint64(1); seed <= 10; seed++ {
				b := newBuilder()
				chainOf(b, tc.calls, seed, 2, func(rng *rand.Rand, k int) float64 {
					return rng.Float64() * tc.base * math.Pow(2, float64(k))
				})
				bo := edge(t, b.infer(), "api", "backend").Backoff
				if bo.Jitter != JitterUnknown || bo.JitterPresent == nil || !*bo.JitterPresent {
					continue
				}
				unnamed++
				for i, s := range bo.Schedule {
					if c := tc.base * math.Pow(2, float64(i)); s.RangeMS[0] > c || s.RangeMS[1] < c {
						t.Errorf("seed %d: retry %d: range %v (from %d waits) excludes the configured ceiling %vms", seed, s.Retry, s.RangeMS, s.Waits, c)
					}
				}
			}
			if unnamed == 0 {
				t.Errorf("every seed named the jitter: the case no longer reaches an unnamed jitter")
			}
		})
	}
}
