package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// sweepTally gathers one sweep's errors per host: how many edges named
// the jitter kind, and the absolute errors of the figures read.
type sweepTally struct {
	edges, named, ranged, unknownWidth int
	errs                               map[string][]float64
}

func (s *sweepTally) add(what string, err float64) {
	if s.errs == nil {
		s.errs = map[string][]float64{}
	}
	s.errs[what] = append(s.errs[what], err)
}

// quantiles returns the mean, p50, p90 and largest of what's errors
// (NaN where none).
func (s *sweepTally) quantiles(what string) (mean, p50, p90, top float64) {
	e := slices.Sorted(slices.Values(s.errs[what]))
	if len(e) == 0 {
		return math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	return stat.Mean(e, nil), quantile(e, 0.5), quantile(e, 0.9), e[len(e)-1]
}

func (s *sweepTally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d edges, %d named", s.edges, s.named)
	if s.ranged+s.unknownWidth > 0 {
		fmt.Fprintf(&b, ", %d with a range holding the width, %d width unknown", s.ranged, s.unknownWidth)
	}
	for _, what := range slices.Sorted(func(yield func(string) bool) {
		for k := range s.errs {
			if !yield(k) {
				return
			}
		}
	}) {
		mean, p50, p90, top := s.quantiles(what)
		fmt.Fprintf(&b, "; %s mean %.3f p50 %.3f p90 %.3f max %.3f", what, mean, p50, p90, top)
	}
	return b.String()
}

// sweepSizes: calls per edge, for about 10, 30 and 60 waits (laggedCalls'
// calls wait 1.8 times on average).
var sweepSizes = []int{6, 17, 33}

// TestProportionalSweep reads proportional jitter, c·(1 + f·U[−1,1)) on
// c = base·2^k, over fractions 0.1-0.5, bases 10-100ms and 10-60 waits,
// on a quiet host, a busy Go host (a fifth of the timers 2-8ms late)
// and a loaded one (a fifth 5-25ms late), the network legs late alike
// or on time (the edge's noise then does not show the timers' tail),
// four seeds each: 1,200 edges. Figures:
// how many named proportional jitter, and of those the error of the
// fraction (absolute) and of the base (relative to the configured
// base, whose timers fire at least 1ms late here).
func TestProportionalSweep(t *testing.T) {
	hosts := []struct {
		name        string
		lag, legLag [3]float64
	}{
		{"quiet host", onTime, onTime},
		{"busy Go host", goBusy, goBusy},
		{"busy Go host, legs on time", goBusy, onTime},
		{"loaded Go host", goLate, goLate},
		{"loaded Go host, legs on time", goLate, onTime},
	}
	for _, h := range hosts {
		var s sweepTally
		for _, f := range []float64{0.1, 0.2, 0.3, 0.4, 0.5} {
			for _, base := range []float64{10, 25, 50, 100} {
				for _, n := range sweepSizes {
					for seed := uint64(1); seed <= 4; seed++ {
						b := newBuilder()
						laggedCalls(b, n, seed*101+uint64(n), h.lag, h.legLag, func(rng *rand.Rand, k int) float64 {
							return base * math.Pow(2, float64(k)) * (1 + f*(2*rng.Float64()-1))
						})
						bo := edge(t, b.infer(), "front", "stock").Backoff
						s.edges++
						if bo.Jitter != JitterProportional || bo.JitterFraction == nil {
							continue
						}
						s.named++
						s.add("base rel err", math.Abs(bo.BaseMS-base)/base)
						s.add("fraction abs err", math.Abs(*bo.JitterFraction-f))
					}
				}
			}
		}
		t.Logf("%s: %s", h.name, &s)
		// Where named, the fraction within 0.06 on average on every host
		// (main at eea6143: up to 0.051), and on a quiet host within
		// 0.1 everywhere (main: one edge 0.35 off).
		mean, _, _, top := s.quantiles("fraction abs err")
		if mean > 0.06 || h.lag == onTime && top > 0.1 {
			t.Errorf("%s: fraction off by %.3f on average, %.3f at most", h.name, mean, top)
		}
	}
}

// TestAdditiveSweep reads additive jitter, base·2^k + U[0,a), a of
// 20-200ms on bases 200ms and 1s, 10-60 waits, on a quiet host and on a
// busy Node host (a fifth of the timers 20-300ms late, as wide as the
// jitter or wider; the network legs late alike or on time), four seeds
// each: 216 edges. Figures: how many named
// additive jitter, how many stated a width range holding a, how many
// left the width unknown, and the relative error of the width stated.
// Every named edge's range must hold the width.
func TestAdditiveSweep(t *testing.T) {
	hosts := []struct {
		name        string
		lag, legLag [3]float64
	}{
		{"quiet host", onTime, onTime},
		{"busy Node host", nodeLate, nodeLate},
		{"busy Node host, legs on time", nodeLate, onTime},
	}
	for _, h := range hosts {
		var s sweepTally
		for _, a := range []float64{20, 50, 200} {
			for _, base := range []float64{200, 1000} {
				for _, n := range sweepSizes {
					for seed := uint64(1); seed <= 4; seed++ {
						b := newBuilder()
						laggedCalls(b, n, seed*103+uint64(n), h.lag, h.legLag, func(rng *rand.Rand, k int) float64 {
							return base*math.Pow(2, float64(k)) + a*rng.Float64()
						})
						bo := edge(t, b.infer(), "front", "stock").Backoff
						s.edges++
						if bo.Jitter != JitterAdditive {
							continue
						}
						s.named++
						if r := additiveRange(bo); r != nil && r[0] <= a && a <= r[1] {
							s.ranged++
						} else {
							t.Errorf("%s, +U[0,%vms) on %vms ×2, %d calls, seed %d: range %v excludes the width (%s)", h.name, a, base, n, seed, r, fmtBackoff(bo))
						}
						if bo.JitterAdditiveMS == nil {
							s.unknownWidth++
							continue
						}
						s.add("width rel err", math.Abs(*bo.JitterAdditiveMS-a)/a)
					}
				}
			}
		}
		t.Logf("%s: %s", h.name, &s)
		// On a quiet host the width within a tenth on average.
		if mean, _, _, _ := s.quantiles("width rel err"); h.lag == onTime && mean > 0.1 {
			t.Errorf("%s: width off by %.3f on average", h.name, mean)
		}
	}
}

// additiveRange is the range of additive widths the backoff states.
func additiveRange(b Backoff) *[2]float64 { return b.JitterAdditiveRangeMS }
