package graph

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pollyV2 is Polly's decorrelated jitter "V2" (cockatiel 3's default
// ExponentialBackoff generator) from base ms ×2: the time waited in all up
// to retry k (from 0) is f(k+u)·base/1.4, f(t) = 2^t·tanh(√(4t)), u drawn
// afresh at every retry, so each wait is the step from the previous
// retry's f.
func pollyV2(base float64) func(rng *rand.Rand, k int, prev float64) float64 {
	var at float64 // f at the previous retry of this call
	return func(rng *rand.Rand, k int, _ float64) float64 {
		if k == 0 {
			at = 0
		}
		next := pollyF(float64(k) + rng.Float64())
		w := max(0, next-at) * base / 1.4
		at = next
		return w
	}
}

func pollyF(t float64) float64 { return math.Pow(2, t) * math.Tanh(math.Sqrt(4*t)) }

// brooker is decorrelated jitter as Marc Brooker's AWS article writes it:
// sleep = min(cap, U[base, 3·sleep]), sleep = base before the first.
func brooker(base float64) func(rng *rand.Rand, k int, prev float64) float64 {
	return func(rng *rand.Rand, k int, prev float64) float64 {
		if k == 0 {
			prev = base
		}
		return min(10000, base+rng.Float64()*(3*prev-base))
	}
}

// dealt draws n calls' waits with wait and deals each attempt index's
// waits to the calls in an order of its own: every index keeps its
// distribution, while one call's waits no longer depend on each other.
func dealt(seed uint64, n int, wait func(rng *rand.Rand, k int, prev float64) float64) [][]float64 {
	w := jitterWaits(seed, n, wait)
	rng := rand.New(rand.NewPCG(seed, 77))
	for k := range w[0] {
		rng.Shuffle(n, func(i, j int) { w[i][k], w[j][k] = w[j][k], w[i][k] })
	}
	return w
}

// TestDecorrelatedJitter: decorrelated jitter is told by how one call's
// consecutive waits depend on each other, never by each attempt index's
// spread alone, in both published forms, over many seeds (80 calls of
// three retries: a pooled weight of 158, where the weaker form's
// dependence lies 5.8 standard errors from zero on average); where too
// few calls waited twice for that dependence to show, waits spread from
// zero (full jitter's, and the timeline form's) are unknown.
func TestDecorrelatedJitter(t *testing.T) {
	const base = 128.0
	full := func(rng *rand.Rand, k int, _ float64) float64 { return rng.Float64() * base * math.Pow(2, float64(k)) }
	cases := []struct {
		name  string
		calls int
		waits func(seed uint64, n int) [][]float64
		// want is the jitter named every time; never, one it must never
		// be named (and form, when that is decorrelated, its form).
		want, never JitterKind
		form        DecorrelatedForm
		kind        BackoffKind
	}{
		// A long wait is followed by a short one: the steps of one timeline.
		{name: "timeline (Polly V2, cockatiel's default)", calls: 80, waits: func(s uint64, n int) [][]float64 { return jitterWaits(s, n, pollyV2(base)) },
			want: JitterDecorrelated, form: DecorrelatedTimeline, kind: BackoffExponential},
		// A long wait is followed by a long one.
		{name: "from the previous wait (Brooker)", calls: 80, waits: func(s uint64, n int) [][]float64 { return jitterWaits(s, n, brooker(base)) },
			want: JitterDecorrelated, form: DecorrelatedFromPrevious, kind: BackoffConstant},
		// The same spreads at every index, drawn on their own: no
		// dependence in 40 calls (weight 78), so not decorrelated.
		{name: "Brooker's spreads drawn on their own", calls: 40, waits: func(s uint64, n int) [][]float64 { return dealt(s, n, brooker(base)) },
			never: JitterDecorrelated},
		{name: "Polly V2's spreads drawn on their own", calls: 40, waits: func(s uint64, n int) [][]float64 { return dealt(s, n, pollyV2(base)) },
			never: JitterDecorrelated},
		{name: "full jitter, 40 calls", calls: 40, waits: func(s uint64, n int) [][]float64 { return jitterWaits(s, n, full) },
			want: JitterFull},
		// 12 calls: a weight of 22, too few for the weaker published
		// dependence to show; full jitter's floor is zero at every index,
		// as the timeline form's is.
		{name: "full jitter, 12 calls", calls: 12, waits: func(s uint64, n int) [][]float64 { return jitterWaits(s, n, full) },
			never: JitterFull},
		// Named decorrelated where its dependence shows even so, never the
		// other form.
		{name: "timeline, 12 calls", calls: 12, waits: func(s uint64, n int) [][]float64 { return jitterWaits(s, n, pollyV2(base)) },
			never: JitterFull, form: DecorrelatedTimeline},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= jitterSeeds; seed++ {
				b := newBuilder()
				waits := tc.waits(seed, tc.calls)
				sequential(b, tc.calls, "api", func(root, i int) {
					b.chain(root, "backend", 10, waits[i], 5, httpStatus(200))
				})
				bo := edge(t, b.infer(), "api", "backend").Backoff
				if bo.WaitDependence == nil {
					t.Fatalf("seed %d: no wait dependence (%s)", seed, fmtBackoff(bo))
				}
				dep := *bo.WaitDependence
				switch {
				case tc.want != "" && bo.Jitter != tc.want, tc.never != "" && bo.Jitter == tc.never:
					t.Errorf("seed %d: jitter %s %q, want %s, never %s (%s, %+v)", seed, bo.Jitter, bo.DecorrelatedForm, tc.want, tc.never, fmtBackoff(bo), dep)
				case bo.Jitter == JitterDecorrelated && bo.DecorrelatedForm != tc.form:
					t.Errorf("seed %d: decorrelated %q, want %q (%s, %+v)", seed, bo.DecorrelatedForm, tc.form, fmtBackoff(bo), dep)
				case tc.kind != "" && bo.Kind != tc.kind:
					t.Errorf("seed %d: kind %s, want %s (%s)", seed, bo.Kind, tc.kind, fmtBackoff(bo))
				}
				if bo.Jitter != JitterDecorrelated {
					continue
				}
				switch tc.form {
				case DecorrelatedTimeline:
					// The schedule is the time waited in all up to each
					// retry, whose median is f(k+½)·base/1.4.
					for k, s := range bo.Schedule {
						if want := pollyF(float64(k)+0.5) * base / 1.4; s.RangeMS[0] > want || s.RangeMS[1] < want {
							t.Errorf("seed %d: retry %d range %v excludes the median elapsed %.1fms", seed, s.Retry, s.RangeMS, want)
						}
					}
				case DecorrelatedFromPrevious:
					if r := bo.BaseRangeMS; r == nil || r[0] > base || r[1] < base {
						t.Errorf("seed %d: base range %v excludes %vms", seed, r, base)
					}
				}
			}
		})
	}
}
