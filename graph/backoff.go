package graph

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Thresholds of the backoff and jitter inference. A wait shorter than
// immediateMS is scheduling noise, not backoff; spreads within noiseMS or
// noiseFrac of the median are not jitter; fewer than minJitterSamples gaps
// cannot tell one jitter formula from another.
const (
	immediateMS      = 1.0
	noiseMS          = 3.0
	noiseFrac        = 0.08
	minJitterSamples = 8
	minKindIndices   = 2
	// minNoJitter is how many waits at one attempt index must agree before
	// the absence of jitter is claimed: two jittered waits fall within the
	// noise of each other one time in six.
	minNoJitter = 4
	// minPerIndex is how many waits an attempt index needs to count towards
	// the backoff kind.
	minPerIndex = 2
)

// quantile returns the p-quantile of sorted xs (0 for none).
func quantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return stat.Quantile(p, stat.LinInterp, sorted, nil)
}

func ptr(v float64) *float64 { return &v }

// latency returns the p50, p95 and p99 of sorted durations (ms), rounded.
func latency(sorted []float64) (p50, p95, p99 float64) {
	return round3(quantile(sorted, 0.5)), round3(quantile(sorted, 0.95)), round3(quantile(sorted, 0.99))
}

// round3 keeps figures readable and output stable across platforms.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// inferBackoff reads the backoff and jitter from the waits between
// attempts: gaps[k] holds, over all calls, the waits before attempt k+2 in
// milliseconds (waits forced by a honoured Retry-After already removed).
func inferBackoff(gaps [][]float64) Backoff {
	b := Backoff{Kind: BackoffUnknown, Jitter: JitterUnknown}
	var all []float64
	var meds []float64 // median wait per attempt index, while samples last
	for _, g := range gaps {
		if len(g) < minPerIndex && len(meds) > 0 {
			break
		}
		if len(g) == 0 {
			break
		}
		slices.Sort(g)
		all = append(all, g...)
		meds = append(meds, quantile(g, 0.5))
	}
	b.Samples = len(all)
	if len(all) == 0 {
		return b
	}
	slices.Sort(all)
	if all[len(all)-1] < immediateMS {
		b.Kind = BackoffImmediate
		for _, g := range gaps[:len(meds)] {
			if len(g) >= minNoJitter {
				// Enough waits agree to claim there is no jitter.
				b.Jitter = JitterNone
				b.JitterPresent = new(bool)
			}
		}
		return b
	}

	// Jitter: pool the waits normalised by their index's median.
	var z []float64
	jittered, steady := false, false
	for k, g := range gaps[:len(meds)] {
		for _, x := range g {
			if meds[k] >= immediateMS { // an immediate median normalises nothing
				z = append(z, x/meds[k])
			}
		}
		if len(g) >= 2 && g[len(g)-1]-g[0] > math.Max(noiseMS, noiseFrac*meds[k]) {
			jittered = true
		}
		steady = steady || len(g) >= minNoJitter
	}
	slices.Sort(z)
	if jittered || steady {
		b.JitterPresent = &jittered
	}
	envelope := 1.0 // median wait as a share of the formula's wait
	switch {
	case b.JitterPresent == nil:
	case !jittered:
		b.Jitter = JitterNone
	case len(z) < minJitterSamples:
		// Present, but too few samples to tell the formula: Jitter stays unknown.
	case decorrelated(gaps[:len(meds)]):
		b.Jitter = JitterDecorrelated
	default:
		// A wait drawn uniformly from m·[1-x, 1+x] has a coefficient of
		// variation of x/√3: full jitter is x = 1 (uniform on [0, 2m]),
		// equal jitter x = 1/3 (uniform on [b/2, b]), anything else is
		// proportional jitter of ±x (grpc-go's ±20%, backoff's
		// RandomizationFactor). The spread is a steadier estimate than the
		// extremes, which few samples understate.
		mean, sd := stat.MeanStdDev(z, nil)
		switch x := math.Sqrt(3) * sd / mean; {
		case x > 0.8 && z[0] < 0.2:
			b.Jitter, envelope = JitterFull, 0.5
		case math.Abs(x-1.0/3) < 0.04:
			b.Jitter, envelope = JitterEqual, 0.75
		default:
			b.Jitter = JitterProportional
			b.JitterFraction = ptr(math.Round(x*20) / 20)
		}
	}

	// Kind: how the median wait moves from one attempt to the next.
	b.BaseMS = round3(meds[0] / envelope)
	if len(meds) < minKindIndices {
		return b
	}
	var ratios []float64
	for k := 1; k < len(meds); k++ {
		if meds[k-1] < immediateMS {
			// Immediate retries mixed with waits (an immediate first retry,
			// then backoff) fit none of the kinds.
			return b
		}
		ratios = append(ratios, meds[k]/meds[k-1])
	}
	first := ratios[0]
	switch {
	case first < 1.3 && first > 0.77:
		b.Kind = BackoffConstant
	case first >= 1.3:
		b.Kind = BackoffExponential
		// The multiplier is read where waits still grow; a later ratio near
		// 1 means the cap was reached.
		var grow []float64
		capAt := -1
		for k, r := range ratios {
			if r < 1.15 {
				capAt = k + 1
				break
			}
			grow = append(grow, r)
		}
		b.Multiplier = ptr(math.Round(stat.Mean(grow, nil)*4) / 4)
		if capAt > 0 {
			b.CapMS = ptr(round3(meds[capAt] / envelope))
		}
	}
	return b
}

// decorrelated recognises Brooker's decorrelated jitter, sleep =
// min(cap, random(base, 3*sleep)): the shortest wait stays near the base
// while the waits above it spread further at every attempt. Its floor sets
// it apart from full jitter (whose shortest waits are near zero), the
// floor falling behind the median sets it apart from equal jitter, and the
// growing spread (coefficient of variation) from proportional jitter,
// whose spread scales with the wait.
func decorrelated(gaps [][]float64) bool {
	if len(gaps) < 2 || len(gaps[0]) < 3 || len(gaps[len(gaps)-1]) < 3 {
		return false
	}
	g0, gn := gaps[0], gaps[len(gaps)-1] // sorted
	cv := func(g []float64) float64 {
		mean, sd := stat.MeanStdDev(g, nil)
		return sd / mean
	}
	return g0[0] >= 0.25*quantile(g0, 0.5) && gn[0] < 0.5*quantile(gn, 0.5) && cv(gn) > 1.4*cv(g0)
}
