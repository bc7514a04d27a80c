package graph

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// sweepTally gathers one sweep's errors per host: how many edges named
// the jitter kind, how many stated a range holding quantity (the
// additive width, where empty) and how many left it unknown, and the
// absolute errors of the figures read.
type sweepTally struct {
	edges, named, ranged, unknownWidth int
	quantity                           string
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
		q := cmp.Or(s.quantity, "width")
		fmt.Fprintf(&b, ", %d with a range holding the %s, %d %s unknown", s.ranged, q, s.unknownWidth, q)
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

// proportionalHosts are the hosts TestProportionalSweep reads on: a
// quiet one, a busy Go host (a fifth of the timers 2-8ms late) and a
// loaded one (a fifth 5-25ms late), the network legs late alike or on
// time (the edge's noise then does not show the timers' tail).
var proportionalHosts = []struct {
	name        string
	lag, legLag [3]float64
}{
	{"quiet host", onTime, onTime},
	{"busy Go host", goBusy, goBusy},
	{"busy Go host, legs on time", goBusy, onTime},
	{"loaded Go host", goLate, goLate},
	{"loaded Go host, legs on time", goLate, onTime},
}

// proportionalSweep infers proportional jitter, c·(1 + f·U[−1,1)) on
// c = base·2^k, over fractions 0.1-0.5, bases 10-100ms and 10-60 waits,
// four seeds each, on every host of proportionalHosts (240 edges per
// host), and hands each edge's backoff to read with its host, fraction
// and base.
func proportionalSweep(t *testing.T, read func(host int, f, base float64, bo Backoff)) {
	t.Helper()
	for hi, h := range proportionalHosts {
		for _, f := range []float64{0.1, 0.2, 0.3, 0.4, 0.5} {
			for _, base := range []float64{10, 25, 50, 100} {
				for _, n := range sweepSizes {
					for seed := uint64(1); seed <= 4; seed++ {
						b := newBuilder()
						laggedCalls(b, n, seed*101+uint64(n), h.lag, h.legLag, func(rng *rand.Rand, k int) float64 {
							return base * math.Pow(2, float64(k)) * (1 + f*(2*rng.Float64()-1))
						})
						read(hi, f, base, edge(t, b.infer(), "front", "stock").Backoff)
					}
				}
			}
		}
	}
}

// TestProportionalSweep reads proportional jitter over proportionalSweep's
// 1,200 edges. Figures: how many named proportional jitter, of those
// how many stated the fraction, and the error of the fraction stated
// (absolute) and of the base (relative to the configured base, whose
// timers fire at least 1ms late here, over every edge naming the kind).
// Every range stated must hold the fraction.
func TestProportionalSweep(t *testing.T) {
	tallies := make([]sweepTally, len(proportionalHosts))
	for i := range tallies {
		tallies[i].quantity = "fraction"
	}
	proportionalSweep(t, func(hi int, f, base float64, bo Backoff) {
		s := &tallies[hi]
		s.edges++
		if bo.Jitter != JitterProportional {
			return
		}
		s.named++
		s.add("base rel err", math.Abs(bo.BaseMS-base)/base)
		if r := bo.JitterFractionRange; r != nil && r[0] <= f && f <= r[1] {
			s.ranged++
		} else {
			t.Errorf("%s, ±%v on %vms ×2: fraction range %v excludes the fraction (%s)", proportionalHosts[hi].name, f, base, r, fmtBackoff(bo))
		}
		if bo.JitterFraction == nil {
			s.unknownWidth++
			return
		}
		s.add("fraction abs err", math.Abs(*bo.JitterFraction-f))
	})
	for hi, h := range proportionalHosts {
		s := &tallies[hi]
		t.Logf("%s: %s", h.name, s)
		// Where stated, the fraction within 0.05 everywhere (before the
		// fraction's range, main at 00de5b0 stated it on every edge
		// naming the kind: within 0.055 on average, up to 0.65 off).
		if _, _, _, top := s.quantiles("fraction abs err"); top > 0.05+1e-9 {
			t.Errorf("%s: fraction off by %.3f at most", h.name, top)
		}
	}
}

// TestFractionBoundSweep states the proportional fraction of
// proportionalSweep's edges at several bounds on the width of its range
// (maxFractionWidth): how many it states, how many of those are off by
// more than 0.05 (wrong), and their mean and largest error, per host.
// The bound in use must state no wrong fraction on any host.
func TestFractionBoundSweep(t *testing.T) {
	inUse := maxFractionWidth
	defer func() { maxFractionWidth = inUse }()
	maxFractionWidth = math.Inf(1) // the figure on every edge; the bounds below applied here
	bounds := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, math.Inf(1)}
	type tally struct {
		proportional int
		stated       []int
		wrong        []int
		errs         [][]float64
	}
	tallies := make([]tally, len(proportionalHosts))
	for i := range tallies {
		tallies[i] = tally{stated: make([]int, len(bounds)), wrong: make([]int, len(bounds)), errs: make([][]float64, len(bounds))}
	}
	proportionalSweep(t, func(hi int, f, _ float64, bo Backoff) {
		if bo.Jitter != JitterProportional || bo.JitterFraction == nil || bo.JitterFractionRange == nil {
			return
		}
		s := &tallies[hi]
		s.proportional++
		for i, bound := range bounds {
			if !fractionStated(*bo.JitterFraction, *bo.JitterFractionRange, bound) {
				continue
			}
			e := math.Abs(*bo.JitterFraction - f)
			s.stated[i]++
			s.errs[i] = append(s.errs[i], e)
			if e > 0.05+1e-9 { // the figures are rounded to 0.05
				s.wrong[i]++
			}
		}
	})
	for hi, h := range proportionalHosts {
		s := tallies[hi]
		var b strings.Builder
		for i, bound := range bounds {
			mean, top := 0.0, 0.0
			if len(s.errs[i]) > 0 {
				mean, top = stat.Mean(s.errs[i], nil), slices.Max(s.errs[i])
			}
			fmt.Fprintf(&b, "; ≤%.2f: %d stated, %d wrong, mean %.3f max %.3f", bound, s.stated[i], s.wrong[i], mean, top)
			if bound == inUse {
				b.WriteString(" (in use)")
			}
		}
		t.Logf("%s: %d proportional%s", h.name, s.proportional, b.String())
		if i := slices.Index(bounds, inUse); i >= 0 {
			if s.wrong[i] > 0 {
				t.Errorf("%s: %d fractions wrong at the bound in use", h.name, s.wrong[i])
			}
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
