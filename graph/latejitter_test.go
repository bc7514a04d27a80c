package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// lateTimerCalls builds n calls on a busy host: call i retries 1 to 3
// times (more calls wait once than thrice, as failures thin out), each
// wait wait(rng, k) plus how late its timer fired: most 0-8ms, a fifth
// 20-300ms (a heavy late tail that does not grow with the wait). The
// network legs are late alike, so the edge's noise has the same tail.
func lateTimerCalls(b *builder, n int, seed uint64, wait func(rng *rand.Rand, k int) float64) {
	laggedCalls(b, n, seed, nodeLate, nodeLate, wait)
}

// A host's lateness for laggedCalls, as lagger's small, lo, hi: nodeLate
// a busy Node event loop's (lateTimerCalls), goLate a Go process on a
// loaded machine's (most 1-3ms, a fifth 5-25ms), goBusy one on a busy
// machine whose tail is no wider than a short jitter (most 1-2ms, a
// fifth 2-8ms), onTime a quiet host's (1-1.6ms, no tail).
var (
	nodeLate = [3]float64{8, 20, 300}
	goLate   = [3]float64{2, 5, 25}
	goBusy   = [3]float64{1, 2, 8}
	onTime   = [3]float64{0.6, 1, 1.6}
)

// laggedCalls is lateTimerCalls with the timers' lateness lag and the
// network legs' legLag (lagger's small, lo, hi): a runtime whose timers
// fire late need not delay its network legs alike (a Go process's
// timers wait for a free processor; its legs are the kernel's).
func laggedCalls(b *builder, n int, seed uint64, lag, legLag [3]float64, wait func(rng *rand.Rand, k int) float64) {
	rng := rand.New(rand.NewPCG(seed, 21))
	timer := lagger(rng, lag[0], lag[1], lag[2])
	legRng := rand.New(rand.NewPCG(seed, 22))
	legLate := lagger(legRng, legLag[0], legLag[1], legLag[2])
	late := func() float64 {
		if lag == legLag {
			return timer() // one stream, as lateTimerCalls always drew
		}
		return legLate()
	}
	sequential(b, n, "front", func(root, call int) {
		retries := []int{1, 1, 2, 2, 3}[call%5]
		at := 10.0
		for k := 0; k <= retries; k++ {
			st := 503
			if k == retries {
				st = 200
			}
			leg := late()
			c := b.client(root, "stock", at, 2+leg, httpStatus(st))
			b.server(c, "stock", "GET /stock/:sku", at+leg/2, 2, httpStatus(st))
			at += 2 + leg
			if k < retries {
				at += wait(rng, k) + timer()
			}
		}
	})
}

// TestJitterKindUnderLateTimers: proportional jitter (axios-retry's
// 2ⁿ·100ms·(1 + 0.2·U[0,1)), from 200ms) and additive jitter (got's 1s ×2
// plus U[0,100ms)) under late timers, at several sizes and seeds. Late
// timers widen every index alike, which pulls a width that grows with the
// wait towards one that stays put: the kind read may be unknown where
// the waits are few (then with both candidates), never the other kind,
// and with enough waits it is the right one at every seed (for
// proportional jitter, or equal jitter: late timers can give the pooled
// shape equal jitter's, a width still growing with the wait).
func TestJitterKindUnderLateTimers(t *testing.T) {
	axios := func(rng *rand.Rand, k int) float64 { return 200 * math.Pow(2, float64(k)) * (1 + 0.2*rng.Float64()) }
	got := func(rng *rand.Rand, k int) float64 { return 1000*math.Pow(2, float64(k)) + 100*rng.Float64() }
	for _, tc := range []struct {
		name  string
		wait  func(rng *rand.Rand, k int) float64
		want  JitterKind
		calls int
		// decide: every seed must name the kind (else unknown between the
		// two is allowed too).
		decide bool
	}{
		{"proportional, 30 calls", axios, JitterProportional, 30, false},
		{"proportional, 60 calls", axios, JitterProportional, 60, false},
		{"proportional, 200 calls", axios, JitterProportional, 200, true},
		{"additive, 30 calls", got, JitterAdditive, 30, false},
		{"additive, 60 calls", got, JitterAdditive, 60, false},
		{"additive, 200 calls", got, JitterAdditive, 200, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			named := 0
			for seed := uint64(1); seed <= 6; seed++ {
				b := newBuilder()
				lateTimerCalls(b, tc.calls, seed, tc.wait)
				bo := edge(t, b.infer(), "front", "stock").Backoff
				switch {
				case bo.Jitter == tc.want:
					named++
				case tc.want == JitterProportional && bo.Jitter == JitterEqual:
					// A width that grows with the wait, as the kind's
					// does; the pooled shape, which tells proportional
					// from equal jitter, is not what this test holds.
				case bo.Jitter == JitterUnknown && !tc.decide &&
					slices.Equal(bo.JitterCandidates, []JitterKind{JitterAdditive, JitterProportional}):
				default:
					t.Errorf("seed %d: jitter %s %v, want %s (%s)", seed, bo.Jitter, bo.JitterCandidates, tc.want, fmtBackoff(bo))
				}
				if tc.decide && bo.Kind != BackoffExponential {
					t.Errorf("seed %d: backoff %s, want exponential (%s)", seed, bo.Kind, fmtBackoff(bo))
				}
			}
			t.Logf("%d of 6 seeds named %s", named, tc.want)
		})
	}
}

// TestWidthGrowth: the widths' verdict on hand-set waits at three
// indices (sorted, uniform over their bounds by construction), with late
// timers and without: widths that double with the wait scale, widths that
// stay put are additive, a late tail on the first index alone (the width
// it would show if additive) does not make proportional waits additive,
// and two small indices cannot tell.
func TestWidthGrowth(t *testing.T) {
	// even returns n waits spread evenly over [lo, lo+w], the top late
	// ones moved later by late each.
	even := func(n int, lo, w float64, lateN int, late float64) []float64 {
		g := make([]float64, n)
		for i := range g {
			g[i] = lo + w*(float64(i)+0.5)/float64(n)
			if i >= n-lateN {
				g[i] += late
			}
		}
		return g
	}
	for _, tc := range []struct {
		name  string
		gaps  [][]float64
		noise float64
		want  growth
	}{
		{"proportional ±10%", [][]float64{even(32, 200, 40, 0, 0), even(20, 400, 80, 0, 0), even(12, 800, 160, 0, 0)}, 2, growthScales},
		{"proportional, a sixth of each index 60-100ms late", [][]float64{even(32, 200, 40, 5, 100), even(20, 400, 80, 3, 80), even(12, 800, 160, 2, 60)}, 6, growthScales},
		{"additive +U[0,100ms)", [][]float64{even(32, 1000, 100, 0, 0), even(20, 2000, 100, 0, 0), even(12, 4000, 100, 0, 0)}, 2, growthNone},
		{"additive, a sixth of each index 100-200ms late", [][]float64{even(32, 1000, 100, 5, 200), even(20, 2000, 100, 3, 150), even(12, 4000, 100, 2, 100)}, 15, growthNone},
		{"proportional, four waits at each of two indices", [][]float64{even(4, 200, 40, 0, 0), even(4, 400, 80, 0, 0)}, 6, growthUntold},
		{"one index", [][]float64{even(32, 200, 40, 0, 0)}, 2, growthAbsent},
		{"a constant schedule", [][]float64{even(32, 200, 40, 0, 0), even(20, 200, 40, 0, 0)}, 2, growthAbsent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := make([]waitIndex, len(tc.gaps))
			for k, g := range tc.gaps {
				idx[k] = summarise(g)
			}
			if got, _ := widthGrowth(tc.gaps, idx, tc.noise, false); got != tc.want {
				t.Errorf("growth %d, want %d", got, tc.want)
			}
		})
	}
}

// TestJitterKindCandidates: what jitterKind names from the widths' verdict
// and the pooled shape. Widths that cannot tell additive from proportional
// jitter leave the kind unknown with both as candidates; widths that can
// name it; waits spread from near zero (full jitter's) keep the pooled
// shape's kind whatever the widths.
func TestJitterKindCandidates(t *testing.T) {
	// spread returns n waits evenly over [lo, lo+w].
	spread := func(n int, lo, w float64) []float64 {
		g := make([]float64, n)
		for i := range g {
			g[i] = lo + w*(float64(i)+0.5)/float64(n)
		}
		return g
	}
	for _, tc := range []struct {
		name       string
		gaps       [][]float64
		want       JitterKind
		candidates []JitterKind
	}{
		{"±10%, five waits at each of two indices", [][]float64{spread(5, 200, 40), spread(5, 400, 80)}, JitterUnknown, []JitterKind{JitterAdditive, JitterProportional}},
		{"±10%, thirty waits at each of three indices", [][]float64{spread(30, 200, 40), spread(30, 400, 80), spread(30, 800, 160)}, JitterProportional, nil},
		{"+U[0,100ms), thirty waits at each of three indices", [][]float64{spread(30, 1000, 100), spread(30, 2000, 100), spread(30, 4000, 100)}, JitterAdditive, nil},
		{"full jitter, five waits at each of two indices", [][]float64{{2, 20, 50, 80, 98}, {4, 40, 100, 160, 196}}, JitterFull, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := make([]waitIndex, len(tc.gaps))
			for k, g := range tc.gaps {
				idx[k] = summarise(g)
			}
			kind, _, _, cands := jitterKind(tc.gaps, idx, 2, false)
			if kind != tc.want || !slices.Equal(cands, tc.candidates) {
				t.Errorf("jitter %s %v, want %s %v", kind, cands, tc.want, tc.candidates)
			}
		})
	}
}
