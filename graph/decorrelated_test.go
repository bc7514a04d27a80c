package graph

import (
	"math"
	"math/rand/v2"
	"slices"
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

// fewTwice keeps all three waits of the first calls only, two of the
// next, and one of the rest: many waits at the first attempt index, few
// calls that waited twice.
func fewTwice(w [][]float64, twice, thrice int) [][]float64 {
	for i := range w {
		switch {
		case i >= twice:
			w[i] = w[i][:1]
		case i >= thrice:
			w[i] = w[i][:2]
		}
	}
	return w
}

// TestDecorrelatedJitter: decorrelated jitter is told by how one call's
// consecutive waits depend on each other, never by each attempt index's
// spread alone, in both published forms, over many seeds (80 calls of
// three retries: a pooled weight of 158, where the weaker form's
// dependence lies 5.8 standard errors from zero on average); where too
// few calls waited twice for that dependence to show, waits spread from
// zero (full jitter's, and the timeline form's) are left between the two
// (jitter unknown, candidates decorrelated and full), and the schedule
// read as full jitter's ceilings with ranges that hold either kind's own.
func TestDecorrelatedJitter(t *testing.T) {
	const base = 128.0
	full := func(rng *rand.Rand, k int, _ float64) float64 { return rng.Float64() * base * math.Pow(2, float64(k)) }
	ceiling := func(k int) float64 { return base * math.Pow(2, float64(k)) }
	medianElapsed := func(k int) float64 { return pollyF(float64(k)+0.5) * base / 1.4 }
	cases := []struct {
		name  string
		calls int
		waits func(seed uint64, n int) [][]float64
		// want is the jitter named every time; never, one it must never
		// be named (and form, when that is decorrelated, its form).
		want, never JitterKind
		form        DecorrelatedForm
		kind        BackoffKind
		// schedule is the policy's wait before retry k+1 as its own
		// kind reads it (full jitter's ceiling, the timeline's median
		// time waited in all): where the jitter is left between full and
		// decorrelated, every step's range must hold it; candidates, that
		// it is left so every time; between, in at least that many seeds
		// (36 waits from zero are sometimes read as proportional ±65% or
		// wider, never as full).
		schedule   func(k int) float64
		candidates bool
		between    int
		// decided is how many seeds must claim kind (the others may
		// leave it unknown, kind among the candidates).
		decided int
	}{
		// A long wait is followed by a short one: the steps of one timeline.
		{name: "timeline (Polly V2, cockatiel's default)", calls: 80, waits: func(s uint64, n int) [][]float64 { return jitterWaits(s, n, pollyV2(base)) },
			want: JitterDecorrelated, form: DecorrelatedTimeline, kind: BackoffExponential, decided: 18},
		// A long wait is followed by a long one.
		{name: "from the previous wait (Brooker)", calls: 80, waits: func(s uint64, n int) [][]float64 { return jitterWaits(s, n, brooker(base)) },
			want: JitterDecorrelated, form: DecorrelatedFromPrevious, kind: BackoffConstant, decided: jitterSeeds},
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
		// as the timeline form's is. Twelve waits a step leave each
		// ceiling's range about two thirds of it wide: linear growth
		// fits them too, and the kind is left unknown.
		{name: "full jitter, 12 calls", calls: 12, waits: func(s uint64, n int) [][]float64 { return jitterWaits(s, n, full) },
			never: JitterFull, kind: BackoffExponential, schedule: ceiling, between: 17},
		// Named decorrelated where its dependence shows even so, never the
		// other form.
		{name: "timeline, 12 calls", calls: 12, waits: func(s uint64, n int) [][]float64 { return jitterWaits(s, n, pollyV2(base)) },
			never: JitterFull, form: DecorrelatedTimeline, schedule: medianElapsed},
		// Many calls retried once, 40 twice (weight 72, just short of
		// pairsToTell): the ceilings are read from many waits, so full
		// jitter's schedule, multiplier included, is stated.
		{name: "full jitter, 200 calls, 40 retried twice", calls: 200, waits: func(s uint64, n int) [][]float64 { return fewTwice(jitterWaits(s, n, full), 40, 34) },
			want: JitterUnknown, candidates: true, kind: BackoffExponential, schedule: ceiling, decided: jitterSeeds},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			betweenSeeds, decided := 0, 0
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
				case tc.kind != "" && bo.Kind != tc.kind && !(bo.Kind == BackoffUnknown && slices.Contains(bo.KindCandidates, tc.kind)):
					// Unknown is allowed where the steps also fit other
					// growth (a few waits at the last step, or a timeline
					// that happens to grow about linearly), the configured
					// kind among the candidates.
					t.Errorf("seed %d: kind %s %v, want %s (%s)", seed, bo.Kind, bo.KindCandidates, tc.kind, fmtBackoff(bo))
				}
				if tc.kind != "" && bo.Kind == tc.kind {
					decided++
				}
				between := bo.Jitter == JitterUnknown && len(bo.JitterCandidates) > 0
				switch {
				case tc.candidates && !between:
					t.Errorf("seed %d: jitter %s, candidates %v; want it left between decorrelated and full (%s)", seed, bo.Jitter, bo.JitterCandidates, fmtBackoff(bo))
				case between && !slices.Equal(bo.JitterCandidates, []JitterKind{JitterDecorrelated, JitterFull}):
					t.Errorf("seed %d: candidates %v, want [decorrelated full]", seed, bo.JitterCandidates)
				case between && bo.Kind == BackoffConstant:
					t.Errorf("seed %d: constant backoff from waits spread from zero (%s)", seed, fmtBackoff(bo))
				}
				if between {
					betweenSeeds++
					for k, s := range bo.Schedule {
						if want := tc.schedule(k); s.RangeMS[0] > want || s.RangeMS[1] < want {
							t.Errorf("seed %d: retry %d range %v excludes the schedule %.1fms (%s)", seed, s.Retry, s.RangeMS, want, fmtBackoff(bo))
						}
					}
					if tc.schedule(0) == base && math.Abs(bo.BaseMS-base) > 0.25*base {
						t.Errorf("seed %d: base %vms, want full jitter's ceiling %vms ±25%%", seed, bo.BaseMS, base)
					}
					if m := bo.Multiplier; m != nil && *m != 2 {
						t.Errorf("seed %d: multiplier %v, want 2 or unknown", seed, *m)
					}
					if r := bo.MultiplierRange; bo.Kind == BackoffExponential && (r == nil || r[0] > 2 || r[1] < 2) {
						t.Errorf("seed %d: multiplier range %v excludes ×2", seed, r)
					}
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
			if betweenSeeds < tc.between {
				t.Errorf("left between decorrelated and full in %d of %d seeds, want at least %d", betweenSeeds, jitterSeeds, tc.between)
			}
			if tc.kind != "" && decided < tc.decided {
				t.Errorf("kind %s in %d of %d seeds, want at least %d (unknown in the others)", tc.kind, decided, jitterSeeds, tc.decided)
			}
			t.Logf("kind %s in %d of %d seeds", tc.kind, decided, jitterSeeds)
		})
	}
}

// TestOneGrowth: full jitter's ceilings grow by one multiplier; the
// timeline form's (Polly's "V2", ×2.06 then ×1.53) do not, which ranges
// narrow enough tell and wide ones cannot; an overhead every wait shares
// pulls the ratios towards 1, so it may reconcile them.
func TestOneGrowth(t *testing.T) {
	c := 128 / 1.4
	polly := []float64{pollyF(1) * c, (pollyF(2) - pollyF(0)) * c, (pollyF(3) - pollyF(1)) * c}
	within := func(steps []float64, share float64) (lo, hi []float64) {
		for _, s := range steps {
			lo, hi = append(lo, s*(1-share)), append(hi, s*(1+share))
		}
		return lo, hi
	}
	for _, tc := range []struct {
		name  string
		steps []float64
		share float64 // each range ±share of its step
		oMax  float64
		want  bool
	}{
		{"×2, ranges ±2%", []float64{100, 200, 400}, 0.02, 0, true},
		{"×2 then capped, read before the cap", []float64{100, 200}, 0.02, 0, true},
		{"the timeline's ceilings, ranges ±5%", polly, 0.05, 0, false},
		{"the timeline's ceilings, ranges ±30%", polly, 0.30, 0, true},
		{"×2.5 then ×2.2, ranges ±1%", []float64{20.5, 50.5, 110.5}, 0.01, 0, false},
		{"the same with up to 10ms of overhead", []float64{20.5, 50.5, 110.5}, 0.01, 10, true},
	} {
		lo, hi := within(tc.steps, tc.share)
		if got := oneGrowth(lo, hi, tc.oMax); got != tc.want {
			t.Errorf("%s: oneGrowth(%v, %v, %v) = %v, want %v", tc.name, lo, hi, tc.oMax, got, tc.want)
		}
	}
}
