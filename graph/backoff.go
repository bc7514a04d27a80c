package graph

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Thresholds of the backoff and jitter inference. A wait shorter than
// immediateMS is scheduling noise, not backoff; spreads within
// noiseFactor times the edge's own timing noise (and never less than
// minNoiseMS, the granularity of timers and exporters) are not jitter;
// fewer than minJitterSamples gaps cannot tell one jitter formula from
// another.
const (
	immediateMS      = 1.0
	minNoiseMS       = 1.5
	noiseFactor      = 3.0
	minJitterSamples = 8
	minKindIndices   = 2
	// minNoJitter is how many waits at one attempt index must agree before
	// the absence of jitter is claimed: two jittered waits fall within the
	// noise of each other one time in six.
	minNoJitter = 4
	// minPerIndex is how many waits an attempt index needs to count towards
	// the backoff kind.
	minPerIndex = 2
	// minFloor is how many waits at one index it takes to read a floor of
	// agreeing waits under a tail of late ones.
	minFloor = 8
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
// milliseconds (waits the server directed already removed). noise is the
// timing noise the edge shows elsewhere (ms), the central 80% of its
// spread: spreads within it are the clocks', not the policy's; bulk is
// the part of it that the faster half of the edge's timings shows (their
// 10th percentile to their median). On a busy host (a Node event loop) the
// noise has a late tail (the slower half spreads more than twice as wide
// as the faster: tailed), which most waits do not see: there the waits at
// one attempt index are judged to agree or to spread against bulk, and
// either reading needs the shape late timers leave, as the tail's noise
// could hide a jitter as wide as it: a pile of waits at the floor for
// none, a bare floor for jitter (see below). The tail still bounds what
// the waits can show at all.
//
// chains are the same waits call by call (splitServerDirected): how one
// call's consecutive waits depend on each other tells decorrelated
// jitter from the kinds that draw each wait on its own (see
// dependence). roundTrip is how long a wait of nothing lasts as the waits
// were read: 0 between client spans, the trip back to the caller and out
// again between the callee's spans.
func inferBackoff(gaps [][]float64, chains [][]float64, noise, bulk, roundTrip float64) Backoff {
	b := Backoff{Kind: BackoffUnknown, Jitter: JitterUnknown}
	var all []float64
	var idx []waitIndex // per attempt index, while samples last
	for _, g := range gaps {
		if len(g) == 0 || len(g) < minPerIndex && len(idx) > 0 {
			break
		}
		slices.Sort(g)
		all = append(all, g...)
		idx = append(idx, summarise(g))
	}
	b.Samples = len(all)
	counts := make([]int, len(idx)) // waits per index, before any are set aside as late
	for k := range idx {
		counts[k] = len(gaps[k])
	}
	if len(all) == 0 {
		return b
	}
	slices.Sort(all)
	tol := max(minNoiseMS, noiseFactor*noise)
	// agree: the spread within which the waits at one index agree.
	agree, tailed := tol, tailed(noise, bulk)
	if tailed {
		agree = max(minNoiseMS, noiseFactor*bulk)
		b.NoiseTailMS = ptr(round3(tol))
	}
	b.NoiseMS = round3(agree)
	// Immediate retries: nine waits in ten under immediateMS. A timer
	// never fires early, so the rest are a busy host's late ones (HotROD's
	// driver, four dispatches at a time: 99 of 100 waits under 0.35 ms, one
	// of 4.1 ms); a jitter whose range reaches past immediateMS would put
	// more than a tenth of its waits there. Waits that hold a round trip
	// through the caller (read between the callee's spans) are that much
	// longer. With few waits two late ones are more than a tenth: there
	// the retries are immediate too where the waits at every attempt
	// index have their median under immediateMS and none is longer than
	// the edge's timing noise (its late tail) allows a wait of nothing
	// (superagent's POSTs: 6 of 8 waits under 0.6ms, two of 4.5 and 10.3ms
	// on an edge whose timings spread 22ms): a jitter wide enough to
	// reach past immediateMS would put half its waits there.
	latenessOnly := all[len(all)-1] <= tol+roundTrip
	for _, w := range idx {
		latenessOnly = latenessOnly && w.med < immediateMS+roundTrip
	}
	if quantile(all, 0.9) < immediateMS+roundTrip || latenessOnly {
		b.Kind = BackoffImmediate
		for _, w := range idx {
			if w.n >= minNoJitter {
				// Enough waits agree to claim there is no jitter.
				b.Jitter = JitterNone
				b.JitterPresent = new(bool)
			}
		}
		return b
	}

	// Jitter spreads waits evenly over its range; timer noise piles them
	// at the schedule with a tail of late ones (a timer never fires early,
	// a loaded machine fires some very late). So jitter is absent where
	// most waits at one attempt index sit within the noise of their
	// median, or a third of them form a floor within the noise of the
	// shortest with a tail of late ones; present where neither
	// holds and the middle half is wider than the noise, or, with too few
	// waits for quartiles, the extremes are far apart.
	jittered, steady := false, false
	// steadyAt: the waits at this index agree so well (four in five
	// within the noise of their median, or a floor) that this index waits
	// a fixed time even if others are jittered.
	steadyAt, closeAt := make([]bool, len(idx)), make([]bool, len(idx))
	// wide: the waits at this index spread beyond the bulk's noise.
	wide := false
	// spreadBeyond: at some index the waits spread beyond the noise.
	spreadBeyond := false
	// judgeable: at some index the edge's own noise is smaller than the
	// waits; where it is as large as them at every index, no spread they
	// could show, from none to full jitter, stands out of it.
	judgeable := false
	for k, w := range idx {
		if tol < w.med {
			judgeable = true
		}
		// share and floor at a spread d: how many waits lie within d of
		// their median, and within d of the shortest.
		agreeing := func(d float64) (share float64, floor int) {
			near := 0
			for _, x := range gaps[k] {
				if math.Abs(x-w.med) <= d {
					near++
				}
				if x <= w.lo+d {
					floor++
				}
			}
			return float64(near) / float64(w.n), floor
		}
		// A floor: half the waits within the noise of the shortest, or a
		// third with the shortest quarter packed far tighter than the
		// middle half (uniform jitter spaces them evenly); and enough
		// waits for that not to be chance.
		floored := func(floor int) bool {
			return w.n >= minFloor && (2*floor >= w.n || 3*floor >= w.n && w.q25-w.lo <= 0.15*(w.q75-w.q25))
		}
		share, floor := agreeing(agree)
		_, pile := agreeing(noiseFactor * minNoiseMS)
		// Where the noise has a late tail, late timers pile waits at the
		// shortest and jitter spreads them: agreement is none only with a
		// pile (three waits, and a quarter, within a timer's granularity
		// of the shortest), a spread jitter only over a bare floor (fewer
		// than half of minFloor or more within the bulk's noise of it:
		// most late timers are no later than the bulk). Where neither
		// shows, the tail's noise could hide a jitter as wide as it, or
		// make one of late timers.
		piled := !tailed || pile >= max(minNoJitter-1, (w.n+3)/4)
		bare := !tailed || w.n >= minFloor && 2*floor < w.n
		spreadWide := w.n >= minNoJitter && share < 0.4 && w.q75-w.q25 > agree || w.n < minNoJitter && w.n >= 2 && w.hi-w.lo > 3*agree
		wide = wide || spreadWide
		spreadHere := bare && spreadWide
		// Like with like: the edge's noise is the width of the central
		// 80% of its timings, so waits that agree spread their own
		// central 80% no wider than the whole noise allows (within), or
		// spread as late timers do: piled at a floor (the shortest
		// quarter far tighter than the middle half) or with a
		// late tail (their central 80% over three times as wide as their
		// 10th percentile to median, as tailed() reads the edge's noise). A
		// uniform jitter of width W does none of these once 0.8·W passes
		// tol, yet puts three in five waits within agree of their median,
		// or half within agree of the shortest, up to W = 10/3·agree:
		// those shares alone would call it none.
		late := w.q25-w.lo <= 0.15*(w.q75-w.q25) || w.q90-w.q10 > 3*(w.med-w.q10)
		within := w.q90-w.q10 <= tol || late
		// And timer noise does not grow with the wait: an index whose
		// waits spread beyond it shows that the waits are not fixed, even
		// where too little to name a jitter, so no other index's agreeing
		// waits (a shorter wait, whose jitter is narrower) can claim none.
		spreadBeyond = spreadBeyond || w.n >= minNoJitter && !within
		switch {
		case piled && w.n >= minNoJitter && (share >= 0.6 || floored(floor)):
			steady = steady || within
		case spreadHere:
			jittered = true
		}
		// The fit reads an index as a fixed wait where its waits agree
		// within the whole noise, tail included, unless they spread as
		// jitter does, or, once jitter shows at some index, unless they
		// also agree within the bulk's noise.
		// Nor where they spread unlike timers (within false): a uniform
		// jitter narrower than 1.25 times the noise puts four waits in
		// five within it of their median (async-retry's U[1,2)·50ms,
		// 57-101ms, on an edge whose noise was 24ms read as a fixed
		// 61ms).
		tshare, tfloor := agreeing(tol)
		steadyAt[k] = w.n >= minNoJitter && (tshare >= 0.8 || floored(tfloor)) && !spreadHere && within
		closeAt[k] = w.n >= minNoJitter && (share >= 0.8 || floored(floor))
	}
	steady = steady && !spreadBeyond
	for k := range steadyAt {
		steadyAt[k] = steadyAt[k] && (!jittered || closeAt[k])
	}
	// How one call's consecutive waits depend on each other, over the
	// indices whose waits are not fixed.
	use := make([]bool, len(idx))
	for k := range use {
		use[k] = !judgeable || !steadyAt[k]
	}
	dep, weight := dependence(chains, use)
	b.WaitDependence = dep
	// Timer noise only ever lengthens a wait, and a loaded host lengthens
	// a call's consecutive waits alike if at all: it cannot make a long
	// wait be followed by a short one. So waits that spread beyond the
	// bulk's noise and depend on each other negatively are jittered (and
	// decorrelated, below) even where the edge's noise is as large as the
	// waits; a positive dependence there could be the host's.
	negative := wide && dep != nil && dep.Z <= -zDependent
	if !judgeable {
		jittered, steady = negative, false
		if negative {
			clear(steadyAt)
		}
	}
	if jittered || steady {
		b.JitterPresent = &jittered
	}
	kind, fraction, additive := JitterUnknown, proportionalFraction{}, additiveWidth{}
	// fullOrTimeline: the waits spread as full jitter's do, and too few
	// pairs tell it from decorrelated jitter's timeline form.
	fullOrTimeline := false
	// rawTop[k] > 0: the waits at index k had a tail of late ones left
	// out of the fit; rawTop is the longest of them (less the overhead),
	// which the schedule's range must still allow.
	rawTop := make([]float64, len(idx))
	// longest[k]: the longest wait at index k as read (less the
	// overhead), late or not.
	longest := make([]float64, len(idx))
	for k := range idx {
		longest[k] = gaps[k][len(gaps[k])-1]
	}
	overhead := 0.0
	switch {
	case b.JitterPresent == nil:
	case !jittered:
		kind = JitterNone
	case len(all) < minJitterSamples:
		// Present, but too few samples to tell the formula.
	default:
		// Name the jitter from the indices whose waits spread: a library
		// may wait its base unjittered first (go-resty) and jitter after.
		var jk []int
		var jg [][]float64
		for k := range idx {
			if !steadyAt[k] {
				jk, jg = append(jk, k), append(jg, gaps[k])
			}
		}
		// Decorrelated: one call's consecutive waits depend on each
		// other; or, where too few calls waited twice for that to show
		// (and what pairs there are do not lean the other way), a floor
		// that stays at the base while the waits spread ever wider, as
		// drawn from the previous wait.
		few := weight < pairsToTell
		if negative || dep != nil && dep.Z >= zDependent || few && (dep == nil || dep.Z >= 0) && decorrelated(jg) {
			kind = JitterDecorrelated
			b.DecorrelatedForm = DecorrelatedFromPrevious
			if negative {
				b.DecorrelatedForm = DecorrelatedTimeline
			}
			break
		}
		// The fit reads copies: late tails left out, then the overhead
		// every wait shares taken off.
		gaps = slices.Clone(gaps)
		for _, k := range jk {
			if t := trimLate(gaps[k], tol); len(t) < len(gaps[k]) {
				rawTop[k] = top(gaps[k])
				gaps[k], idx[k] = t, summarise(t)
			}
		}
		if o := commonFloor(gaps, idx, steadyAt, tol); o > 0 {
			overhead = o
			for k := range gaps {
				g := make([]float64, len(gaps[k]))
				for i, x := range gaps[k] {
					g[i] = max(x-o, 0)
				}
				gaps[k], idx[k] = g, summarise(g)
				if rawTop[k] > 0 {
					rawTop[k] = max(rawTop[k]-o, 0)
				}
				longest[k] = max(longest[k]-o, 0)
			}
			b.OverheadMS = ptr(round3(o))
		}
		jg, ji := jg[:0], []waitIndex(nil)
		for _, k := range jk {
			jg, ji = append(jg, gaps[k]), append(ji, idx[k])
		}
		var candidates []JitterKind
		kind, fraction, additive, candidates = jitterKind(jg, ji, agree, tailed)
		b.JitterCandidates = candidates
		if kind == JitterFull && few {
			// Decorrelated jitter as the steps of one timeline spreads its
			// waits from zero at every index, as full jitter does: too few
			// pairs to have shown the dependence cannot tell them apart.
			// The kind is unknown, the candidates stated, and the
			// schedule read as both allow (fullOrTimeline, below).
			kind = JitterUnknown
			fullOrTimeline = true
			b.JitterCandidates = []JitterKind{JitterDecorrelated, JitterFull}
		}
	}
	b.Jitter = kind
	switch kind {
	case JitterProportional:
		b.JitterFractionRange = &[2]float64{math.Floor(fraction.lo*100) / 100, math.Ceil(fraction.hi*100) / 100}
		if f := math.Round(fraction.f*20) / 20; fractionStated(f, *b.JitterFractionRange, maxFractionWidth) {
			b.JitterFraction = ptr(f)
		}
	case JitterAdditive:
		b.JitterAdditiveRangeMS = &[2]float64{round3(additive.lo), round3(additive.hi)}
		if additive.known() {
			b.JitterAdditiveMS = ptr(round3(additive.ms))
		}
	}

	// The schedule: what the formula waits before each attempt, read with
	// the estimator the jitter calls for (the median of a full-jitter wait
	// is half its ceiling).
	// Jittered waits are uniform between bounds the formula sets: the
	// bounds are best read from the extreme waits, corrected for the
	// distance n waits leave on average from the true bound (the second
	// from the end when the extreme stands apart: a late timer; for the
	// ceiling of full and equal jitter, one a few waits from the end,
	// ceilingOf).
	// Each estimate comes with the range the true schedule may lie in
	// (99%: [slo, shi]), from which the multiplier's range follows. An
	// extreme wait errs on one side only: n uniform waits fall short of
	// their bound by more than 4.6/n of the width one time in a hundred.
	sched, slo, shi := make([]float64, len(idx)), make([]float64, len(idx)), make([]float64, len(idx))
	// mlo, mhi: the ranges the multiplier is read from, those of the
	// schedule unless the jitter is full or decorrelated's timeline
	// (fullOrTimeline): there the multiplier is the growth of the waits'
	// ceilings, which both share, while each step's range also holds the
	// timeline's own reading, which does not grow from the same base.
	mlo, mhi := slo, shi
	if fullOrTimeline {
		mlo, mhi = make([]float64, len(idx)), make([]float64, len(idx))
	}
	timeline := 0.0 // the timeline form's reading at the index before
	for k, w := range idx {
		g := gaps[k]
		n := float64(len(g))
		sym := func(v, se float64) { sched[k], slo[k], shi[k] = v, v-z99*se, v+z99*se }
		switch {
		case kind == JitterNone || steadyAt[k]:
			// Without jitter the schedule is the floor: a timer never
			// fires early, and a loaded machine fires many late.
			sym(w.q10, tol/math.Sqrt(n))
		case kind == JitterUnknown && !fullOrTimeline || len(g) < 3:
			sym(w.med, 1.25*max(w.hi-w.lo, tol)/math.Sqrt(n))
		case kind == JitterFull || kind == JitterEqual || fullOrTimeline:
			// The ceiling: the median of a full-jitter wait is half of it.
			floor := 0.0
			if kind == JitterEqual {
				floor = 0.5
			}
			c, lo, hi := ceilingOf(g, floor)
			if cm, late := ceilingFromMedian(c, w.med, floor, n); late && kind == JitterEqual {
				c, lo = cm, min(lo, cm)
			}
			sched[k], slo[k], shi[k] = c, lo, max(hi, rawTop[k])
			if t := longest[k]; t-shi[k] > tol+roundTrip {
				// A wait past the ceiling's range by more than the
				// edge's timers are late (its noise, tail included)
				// may be no late timer but a draw (async-retry's third
				// step, 8 waits of 507 to 612ms and one of 896 under a
				// ceiling of 900, on an edge whose noise was 2.2ms):
				// the range holds the ceiling that draw allows, n
				// waits uniform over [floor·C, C] all lying below t
				// one time in a hundred when C = t/(floor + (1 −
				// floor)·0.01^(1/n)).
				shi[k] = t / (floor + (1-floor)*math.Pow(0.01, 1/float64(counts[k])))
			}
		case kind == JitterAdditive:
			sched[k], slo[k], shi[k] = max(g[0]-additive.ms/(n+1), 0), max(g[0]-tail99*additive.ms/n, 0), g[0]
		case kind == JitterDecorrelated && b.DecorrelatedForm == DecorrelatedTimeline:
			prev := 0.0
			if k > 0 {
				prev = sched[k-1]
			}
			sym(timelineReading(chains, k, prev, w, tol))
		case kind == JitterDecorrelated:
			// The first wait is uniform over [base, 3·base], twice as wide
			// as from its floor to its median.
			sched[k], slo[k], shi[k] = w.lo, w.lo-tail99*2*(w.med-w.lo)/n, w.lo
		default: // proportional: the centre between the bounds
			// The midrange of n uniform waits over a width W errs by
			// W/√(2(n+1)(n+2)); the observed range understates W by
			// (n-1)/(n+1).
			width := (top(g) - g[0]) * (n + 1) / max(n-1, 1)
			sym((g[0]+top(g))/2, width/math.Sqrt(2*(n+1)*(n+2)))
			// Unless late timers stretched it: a width that late waits
			// do not reach (widthOf: up to the upper quartile, or the
			// bulk's) puts the centre at the floor, g[0] less the
			// W/(n+1) the shortest of n waits lies above it on average,
			// plus W/2, erring by about half the width's error. Where
			// the midrange lies above that by more than z99 of their
			// errors combined, the longest waits are late, and the
			// centre is that one; the range still holds the midrange.
			if len(g) >= minJitterSamples/2 {
				bw, rel, _ := widthOf(g, agree)
				c, se := g[0]+bw*(0.5-1/(n+1)), rel*bw/2
				if mid := sched[k]; mid-c > z99*math.Hypot(se, (shi[k]-mid)/z99) {
					sched[k], slo[k] = c, c-z99*se
					shi[k] = max(shi[k], c+z99*se)
				}
			}
			// A late timer stretches the longest wait, which the midrange
			// rests on, and a busy host has many: the centre may lie lower
			// by as much. The median stands a late tail, so the range
			// reaches down to its 99% interval too (the median of n
			// uniform waits errs by W/(2√n)). Timers are never early: the
			// range needs no widening up.
			slo[k] = min(slo[k], w.med-z99*width/(2*math.Sqrt(n)))
			// Were the waits left out not late after all, the centre
			// would lie between the shortest and the longest of them.
			if rawTop[k] > 0 {
				rawWidth := (rawTop[k] - g[0]) * (n + 1) / max(n-1, 1)
				shi[k] = max(shi[k], (g[0]+rawTop[k])/2+z99*rawWidth/math.Sqrt(2*(n+1)*(n+2)))
			}
		}
		if fullOrTimeline {
			// The ceiling is full jitter's schedule; were the waits
			// decorrelated's timeline, the schedule would be its own
			// reading, which the range holds too.
			mlo[k], mhi[k] = slo[k], shi[k]
			v, se := timelineReading(chains, k, timeline, w, tol)
			timeline = v
			slo[k], shi[k] = min(slo[k], v-z99*se), max(shi[k], v+z99*se)
		}
	}
	// Jittered by a formula the traces cannot name, or, where too few
	// waits tell whether they are jittered at all, spread beyond the
	// edge's noise as a jitter would spread them: the configured figure
	// may be any of the readings.
	if kind == JitterUnknown && (jittered || b.JitterPresent == nil && wide) {
		widenUnknownJitter(gaps, rawTop, slo, shi)
	}
	b.BaseMS = round3(sched[0])
	// A fixed overhead in every wait (time between attempts the policy
	// does not sleep: the client's, the network's) adds to every wait
	// alike; unless one was measured, an overhead as large as the
	// variation of the edge's own network legs cannot be ruled out, so the
	// ranges allow it.
	oMax := noiseFactor * noise
	if overhead > 0 {
		oMax = 0 // measured, and taken off
	}
	b.BaseRangeMS = &[2]float64{round3(max(slo[0]-oMax, 0)), round3(shi[0])}
	for k := range sched {
		b.Schedule = append(b.Schedule, WaitStep{Retry: k + 1, Waits: counts[k], MS: round3(sched[k]),
			RangeMS: [2]float64{round3(max(slo[k]-oMax, 0)), round3(shi[k])}})
	}
	if len(sched) < minKindIndices {
		return b
	}
	var ratios []float64
	for k := 1; k < len(sched); k++ {
		if sched[k-1] < immediateMS {
			// Immediate retries mixed with waits (an immediate first retry,
			// then backoff) fit none of the kinds.
			return b
		}
		ratios = append(ratios, sched[k]/sched[k-1])
	}
	first := ratios[0]
	// The first steps' reading: near-equal first steps read constant,
	// growing ones exponential (with a cap where growth falls short).
	legacy := BackoffUnknown
	switch {
	case b.DecorrelatedForm == DecorrelatedFromPrevious:
		// Decorrelated jitter drawn from the previous wait keeps its floor
		// at its base whatever the attempt.
		b.Kind = BackoffConstant
		return b
	case first < minGrowth && first > 1/minGrowth:
		legacy = BackoffConstant
	case first >= minGrowth:
		legacy = BackoffExponential
	default:
		return b
	}
	// The multiplier is read where waits still grow (their geometric
	// mean); a later ratio near 1, or one that falls far short of the
	// growth before it (80 → 100 after ×2 steps), means the cap was
	// reached.
	logSum, n := 0.0, 0
	capAt := -1
	for k, r := range ratios {
		if r < 1.15 || n > 0 && r < capShortfall*math.Exp(logSum/float64(n)) {
			capAt = k + 1
			break
		}
		logSum += math.Log(r)
		n++
	}
	if legacy == BackoffExponential && fullOrTimeline && !oneGrowth(mlo[:n+1], mhi[:n+1], oMax) {
		// Full jitter's ceilings grow by one multiplier up to the
		// cap; the timeline form's by f(k+2)−f(k) over f(k+1)−f(k−1)
		// (for Polly's "V2": ×2.06, ×1.53, ×1.98, then ×2), which
		// enough waits tell from any one growth. Here no one growth
		// fits, so the two candidates share no schedule: no kind and
		// no multiplier is claimed, the steps (ceilings, with ranges
		// that hold both readings) stand as read.
		return b
	}
	// Each step's standard error for the joint fit: how far its reading
	// strays from the schedule by chance, from the spread of its waits
	// (their middle half, as a normal spread's 1.349 standard deviations,
	// for the median's error 1.25σ/√n), and at least the agreement noise
	// over √n; where the jitter is left between full and decorrelated's
	// timeline, the range of the ceilings both share; for the timeline,
	// the spread of the time waited in all.
	se := make([]float64, len(idx))
	for k, w := range idx {
		rn := math.Sqrt(float64(w.n))
		se[k] = max(1.25*(w.q75-w.q25)/1.349/rn, agree/rn)
		switch {
		case fullOrTimeline:
			// The ceilings, which full jitter and decorrelated's timeline
			// share and the multiplier is read from: their own range.
			se[k] = max(mhi[k]-mlo[k], 0) / (2 * z99)
		case kind == JitterDecorrelated && b.DecorrelatedForm == DecorrelatedTimeline:
			// The time waited in all up to the retry, at its median: the
			// spread of those times.
			if e := elapsed(chains, k); len(e) >= 2 {
				s := summarise(e)
				se[k] = max(1.25*(s.q75-s.q25)/1.349/math.Sqrt(float64(s.n)), agree/rn)
			}
		}
		if w.n < minSpreadWaits {
			se[k] = math.Inf(1) // too few waits for their middle half to say: the range's
		}
	}
	// Each step's standard error below and above it: the lesser of what
	// its range allows (99%, before the padding for an overhead, which
	// the joint fit takes as a parameter of its own: jointKind) and what
	// the spread of its waits gives.
	seLo, seHi := stepErrors(sched, slo, shi)
	for k := range seLo {
		seLo[k], seHi[k] = min(seLo[k], se[k]), min(seHi[k], se[k])
	}
	b.Kind, b.KindCandidates, b.KindEvidence = scheduleKind(b.Schedule, legacy, capAt, seLo, seHi, oMax)
	if b.Kind == BackoffConstant && len(sched) == 2 && jittered && growthAllowed(sched, seLo, seHi) {
		// Two jittered steps read alike that chance lets grow as much
		// as the first steps must to be read as growth (wide jitter
		// over few waits: Traefik's ×√2 ±50%, 100 and 141ms, read 104
		// and 133ms from 17 and 14 waits): a constant schedule is not
		// told from a growing one. (Unjittered waits agree within the
		// timers' noise, which the steps' errors hold whole.)
		b.Kind, b.KindCandidates = BackoffUnknown, []BackoffKind{BackoffConstant, BackoffExponential, BackoffLinear}
		return b
	}
	// No kind fits, or exponential growth fits only the steps' ranges,
	// wide on a busy host, and not the steps jointly: the steps may
	// still grow exponentially from an offset, which reads them better
	// where it fits them jointly.
	_, _, ms := stepRanges(b.Schedule)
	if b.Kind == BackoffUnknown && len(b.KindCandidates) == 0 ||
		b.Kind == BackoffExponential && capAt < 0 && b.KindEvidence == nil && !jointKind(BackoffExponential, ms, seLo, seHi, -1, oMax).ok {
		if f, ok := offsetGrowth(b.Schedule, seLo, seHi); ok {
			b.KindCandidates = nil
			b.Kind, b.OffsetMS = BackoffExponential, ptr(round3(f.offset))
			b.MultiplierFit, b.MultiplierRange = ptr(f.m), &[2]float64{math.Round(100*f.lo) / 100, math.Round(100*f.hi) / 100}
			if f.stated {
				b.Multiplier = ptr(f.m)
			}
			b.CapAboveMS = capAbove(b.Schedule)
			return b
		}
	}
	switch b.Kind {
	case BackoffExponential:
		if n == 0 {
			// Read exponential where the first steps were near-equal
			// (no growth to read a multiplier from): none is claimed.
			b.Kind, b.KindCandidates = BackoffUnknown, []BackoffKind{BackoffExponential}
			return b
		}
		m := math.Exp(logSum / float64(n))
		// The geometric mean of the ratios is (sched[n]/sched[0])^(1/n):
		// its range is that of the first and last estimates, and of an
		// overhead up to oMax, which adds the same to both and pulls the
		// ratio towards 1.
		root := 1 / float64(n)
		lo := math.Pow(max(mlo[n], 0)/max(mhi[0], immediateMS), root)
		hi := math.Pow(max(mhi[n]-oMax, 0)/max(mlo[0]-oMax, immediateMS), root)
		fit := bestQuarter(roundMultiplier(m, lo, hi), lo, hi, sched[:n+1], mlo[:n+1], mhi[:n+1], oMax)
		b.MultiplierFit = ptr(fit)
		if hi <= maxMultiplierSpread*lo && growsThroughSteps(fit, mlo[:n+1], mhi[:n+1], oMax) {
			b.Multiplier = ptr(fit)
		}
		b.MultiplierRange = &[2]float64{math.Round(100*lo) / 100, math.Round(100*hi) / 100}
		if capAt > 0 {
			b.CapMS = ptr(round3(sched[capAt]))
		}
	case BackoffLinear, BackoffFibonacci:
		coef := linearCoef
		if b.Kind == BackoffFibonacci {
			coef = fibonacciCoef
		}
		lo, hi, ms := stepRanges(b.Schedule)
		n := len(ms)
		if c := growthCap(b.Kind, lo, hi, ms, capAt); c > 0 {
			// Capped: the growth is read from the steps before the cap.
			n = c
			b.CapMS = ptr(round3(sched[c]))
		}
		f := fitTwo(stepRows(lo[:n], hi[:n], coef), coef, ms[:n])
		b.IncrementMS = ptr(round3(f.y))
		b.IncrementRangeMS = &[2]float64{round3(max(f.yLo, 0)), round3(f.yHi)}
	}
	growing := b.Kind == BackoffExponential || b.Kind == BackoffLinear || b.Kind == BackoffFibonacci
	if growing && b.CapMS == nil && b.DecorrelatedForm != DecorrelatedTimeline {
		// No cap seen: any cap there is lies at or above every step.
		b.CapAboveMS = capAbove(b.Schedule)
	}
	return b
}

// capAbove is what a growing schedule's steps (none capped) say of its
// cap: a capped schedule never waits past its cap, so the cap is at or
// above every step's wait, and so (99% each) above the low end of every
// step's range; the highest of those, nil where none is above zero. The
// step is the schedule the formula sets before its jitter (a centre, a
// ceiling, a floor), which the cap bounds whatever the jitter does
// after. The time waited in all, decorrelated's timeline reading, is no
// such step.
func capAbove(steps []WaitStep) *float64 {
	most := 0.0
	for _, s := range steps {
		most = max(most, s.RangeMS[0])
	}
	if most <= 0 {
		return nil
	}
	return ptr(most)
}

// scheduleKind names the kind of a schedule of two or more steps. The
// first steps give a reading (legacy: constant or exponential, capped
// from capAt where capAt > 0). A kind is claimed only where it fits every
// step within its range (kindfit.go) and, of the kinds that fit the steps
// jointly (jointKind), either it alone does or it fits them best by a
// likelihood ratio of kindEvidenceRatio or more over each of the others
// (kindFit.aic): the joint fit being what tells kinds apart. With two
// steps, which any growth of two parameters fits, the reading stands
// where it fits. Where no kind fits jointly, the ranges alone decide: the
// reading if it fits them, else the one kind that does. Otherwise the
// kind is unknown, with candidates naming the kinds that fit the ranges
// or the steps jointly (sorted; none where no kind fits). Fibonacci is
// claimed only with minFibonacciSteps steps, its rule seen twice (10, 20,
// 30ms is also linear's). A constant reading leaves out exponential and
// linear growth where it fits (they hold it, with a multiplier of 1 or no
// increment), an exponential one the constant kind. Where several kinds
// fit jointly, the evidence says which fits best and by how much over the
// next, claimed or not.
//
// seLo and seHi are each step's standard errors below and above it, and
// oMax the most overhead (time every wait shares) the ranges of steps
// allow for, which the joint fit takes as a parameter rather than an
// error (jointKind).
func scheduleKind(steps []WaitStep, legacy BackoffKind, capAt int, seLo, seHi []float64, oMax float64) (BackoffKind, []BackoffKind, *KindEvidence) {
	lo, hi, ms := stepRanges(steps)
	fits := map[BackoffKind]bool{
		BackoffConstant:    constantFits(lo, hi),
		BackoffExponential: exponentialFits(lo, hi, capAt),
	}
	// Where a growth kind fits only with a cap, the cap is where the first
	// steps' reading put exponential growth's (capFrom).
	capFrom := map[BackoffKind]int{BackoffConstant: -1, BackoffExponential: capAt}
	for _, k := range []BackoffKind{BackoffLinear, BackoffFibonacci} {
		capFrom[k] = growthCap(k, lo, hi, ms, capAt)
		fits[k] = capFrom[k] != noFit
	}
	// A constant schedule is linear's with no increment and exponential's
	// with a multiplier of 1: where it fits, those two fit too and add
	// no other reading of the steps; and a constant reading that fits
	// needs no growth.
	nested := func(k BackoffKind) bool {
		growth := k == BackoffLinear || k == BackoffExponential
		return fits[legacy] && (legacy == BackoffConstant && growth || legacy == BackoffExponential && k == BackoffConstant) ||
			!fits[legacy] && fits[BackoffConstant] && growth
	}
	// fitting: the kinds that fit every step's range; joint: those that
	// fit the steps jointly (jointKind), whether or not every range holds
	// them: each stands in the way of any other's claim.
	var fitting, joint []BackoffKind
	var jointFit []kindFit
	for _, k := range []BackoffKind{BackoffConstant, BackoffExponential, BackoffFibonacci, BackoffLinear} {
		if nested(k) || k == BackoffFibonacci && len(steps) < 3 {
			continue
		}
		if fits[k] {
			fitting = append(fitting, k)
		}
		if f := jointKind(k, ms, seLo, seHi, max(capFrom[k], -1), oMax); f.ok {
			joint, jointFit = append(joint, k), append(jointFit, f)
		}
	}
	// Several kinds fit jointly: the one that fits best, and by how much
	// over the next (the kinds in a fixed order where they fit alike).
	ev := evidenceOf(jointFit)
	claimable := func(k BackoffKind) bool {
		return fits[k] && (k != BackoffFibonacci || len(steps) >= minFibonacciSteps)
	}
	switch {
	case fits[legacy] && len(steps) < 3:
		// Two steps fit any growth of two parameters: the first steps'
		// reading stands.
		return legacy, nil, nil
	case len(joint) == 1 && claimable(joint[0]):
		return joint[0], nil, nil
	case ev != nil && claimable(ev.Best) && ev.Ratio >= kindEvidenceRatio:
		return ev.Best, nil, ev
	case len(joint) == 0 && fits[legacy]:
		// No kind fits the steps jointly (late waits the ranges allow
		// for, one at a time): the ranges alone decide, and the first
		// steps' reading fits them.
		return legacy, nil, nil
	case len(joint) == 0 && len(fitting) == 1 && claimable(fitting[0]):
		return fitting[0], nil, nil
	}
	c := slices.Clone(fitting)
	for _, k := range joint {
		if !slices.Contains(c, k) {
			c = append(c, k)
		}
	}
	slices.Sort(c)
	return BackoffUnknown, c, ev
}

// growthAllowed reports whether the first two steps ms[0] and ms[1],
// with standard errors seLo below and seHi above each, may grow by
// minGrowth or more: the logarithm of their ratio lies within z99 of
// its standard error (the first step's below it, the second's above it,
// each relative to its step) of log minGrowth or above.
func growthAllowed(ms, seLo, seHi []float64) bool {
	if ms[0] <= 0 || ms[1] <= 0 {
		return true
	}
	se := math.Hypot(seLo[0]/ms[0], seHi[1]/ms[1])
	return math.Log(ms[1]/ms[0])+z99*se >= math.Log(minGrowth)
}

// minSpreadWaits is how many waits a step needs for their spread to
// give its standard error in the joint fit (the middle half of fewer
// strays too far from the spread's).
const minSpreadWaits = 12

// noFit is growthCap's answer where a kind fits neither way.
const noFit = -2

// growthCap reports how linear or Fibonacci growth (kind) fits every
// step: -1 uncapped, capAt where only with a cap from capAt on (the
// steps before it grow by the kind, three or more for Fibonacci, whose
// rule needs them, two or more for linear, and one cap fits every step
// from capAt on), noFit where neither; Fibonacci needs three steps.
func growthCap(kind BackoffKind, lo, hi, ms []float64, capAt int) int {
	coef, least := linearCoef, 2
	if kind == BackoffFibonacci {
		coef, least = fibonacciCoef, 3
	}
	fits := func(n int) bool { return n >= least && fitTwo(stepRows(lo[:n], hi[:n], coef), coef, ms[:n]).ok }
	switch {
	case fits(len(ms)):
		return -1
	case capAt > 0 && fits(capAt) && constantFits(lo[capAt:], hi[capAt:]):
		return capAt
	}
	return noFit
}

// stepRanges returns the steps' ranges and their waits as read.
func stepRanges(steps []WaitStep) (lo, hi, ms []float64) {
	for _, s := range steps {
		lo, hi, ms = append(lo, s.RangeMS[0]), append(hi, s.RangeMS[1]), append(ms, s.MS)
	}
	return lo, hi, ms
}

// tailed reports whether timings whose central 80% spread noise and
// whose faster half spread bulk (spread) have a late tail: their slower
// half spreads more than twice as wide as the faster (a normal spread's
// halves are alike).
func tailed(noise, bulk float64) bool { return noise > 3*bulk }

// maxMultiplierSpread is how wide (high over low) a multiplier's range
// may be for the multiplier to be stated: a third, the step from ×1.5 to
// ×2. Past it the fit is kept (multiplier_fit) but the multiplier is
// unknown.
const maxMultiplierSpread = 4.0 / 3

// trimLate leaves out a tail of late waits from sorted jittered waits g:
// jitter spreads waits evenly up to its bound, and a loaded host wakes a
// few sleepers late, far past it, where they sit sparse. The tail is the
// top t waits (two or more, at most a quarter) where a stretch of even
// density gives way to a sparser one, if that tail spans more than the
// noise tol and is at least lateSparse times sparser: the top two of n
// uniform waits are spaced that widely three times in a thousand. A
// single late wait is top's to set aside. With fewer than minFloor waits no spacing
// is known and g stands.
func trimLate(g []float64, tol float64) []float64 {
	n := len(g)
	if n < minFloor {
		return g
	}
	// Where the tail begins: the split of the waits into two stretches of
	// even density that fits them best (the log-likelihood of two uniform
	// stretches, the kept one with j spacings and the tail with t).
	best, bestLL := 0, math.Inf(-1)
	for t := 2; t <= n/4; t++ {
		j := n - 1 - t // the longest wait kept
		wb, wt := g[j]-g[0], g[n-1]-g[j]
		if wb <= 0 || wt <= 0 {
			continue
		}
		if ll := float64(j)*math.Log(float64(j)/wb) + float64(t)*math.Log(float64(t)/wt); ll > bestLL {
			best, bestLL = t, ll
		}
	}
	if best == 0 {
		return g
	}
	j := n - 1 - best
	if g[n-1]-g[j] <= tol || (g[n-1]-g[j])/float64(best) < lateSparse*(g[j]-g[0])/float64(j) {
		return g
	}
	return g[:j+1]
}

// lateSparse: a tail of waits this many times sparser than those below
// it is late, not jitter.
const lateSparse = 4.0

// commonFloor returns the overhead every wait of an edge shares, or 0: the
// shortest waits at two or more attempt indices agree (within the noise
// tol and the distance n uniform waits leave above their bound, 99%)
// while the waits themselves grow at least 1.3-fold, the floors stay
// nearer each other than to a floor growing with the waits, and that
// floor is above the noise. A schedule the waits follow grows its floor with it
// (no, proportional, equal and additive jitter); full jitter's floor is
// zero; so a floor that stays put is time the client spends between
// attempts that the policy did not sleep (a fixed cost of the library,
// the network legs between server spans). Decorrelated jitter, whose
// floor is its base, is told apart before. Indices whose waits agree
// (steady) are left out.
func commonFloor(gaps [][]float64, idx []waitIndex, steady []bool, tol float64) float64 {
	var use []int
	for k, w := range idx {
		if !steady[k] && w.n >= minNoJitter && w.med >= immediateMS {
			use = append(use, k)
		}
	}
	if len(use) < 2 {
		return 0
	}
	first, last := idx[use[0]], idx[use[len(use)-1]]
	if last.med < 1.3*first.med {
		return 0 // a schedule that does not grow keeps its floor anyway
	}
	floor := math.Inf(1)
	for _, k := range use {
		floor = min(floor, idx[k].lo)
	}
	if floor <= tol {
		return 0
	}
	for _, k := range use {
		if w := idx[k]; w.lo-floor > tol+tail99*(w.hi-w.lo)/float64(w.n) {
			return 0
		}
	}
	// Agreeing with a fixed floor is not enough when few waits leave
	// their shortest far above it: the last index's floor must also sit
	// clearly below where a floor growing with the waits would put it,
	// even where the first index's floor lies as far below its shortest
	// wait as chance allows (tail99/n of its spread, 99%): a ±50%
	// schedule of 100 and 141ms (Traefik's ×√2) whose 17 and 14 shortest
	// waits were 61 and 71ms grows its floor from 50 to 71ms, which a
	// floor read from 61ms alone would call fixed. Else the waits cannot
	// tell, and none is claimed.
	grown := first.lo * last.med / first.med
	lowest := max(first.lo-tail99*(first.hi-first.lo)/float64(first.n), 0) * last.med / first.med
	if last.lo > grown-max(tol, (grown-floor)/4) || last.lo > lowest-tol {
		return 0
	}
	return floor
}

// widenUnknownJitter widens the 99% ranges [slo[k], shi[k]] of a schedule
// whose waits are jittered by a formula the traces cannot name: the
// figure the policy configured is the waits' ceiling under full or equal
// jitter, their centre under proportional jitter and about their floor
// under additive or decorrelated jitter, so its range has to hold every
// one of those readings, not only the median the schedule states. Up to
// the ceiling: n waits uniform below a bound c all lie below t one time
// in a hundred when t = c·0.01^(1/n), so c ≤ t·100^(1/n) (or the longest
// wait left out as late, rawTop[k]). Down to the floor: the shortest
// wait lies above the floor of an additive jitter as wide as the spread
// by more than tail99/n of it one time in a hundred.
func widenUnknownJitter(gaps [][]float64, rawTop, slo, shi []float64) {
	for k, g := range gaps {
		if k >= len(shi) || len(g) == 0 {
			continue
		}
		n, t := float64(len(g)), top(g)
		shi[k] = max(shi[k], t*math.Pow(100, 1/n), rawTop[k])
		slo[k] = min(slo[k], max(g[0]-tail99*(t-g[0])/n, 0))
	}
}

// z99: a normal variable lies within z99 standard deviations of its mean
// 99% of the time.
const z99 = 2.58

// tail99: the shortest of n waits uniform over a width W lies more than
// tail99/n·W above the bound one time in a hundred.
const tail99 = 4.6

// top is the largest of sorted waits, or the second largest when the
// largest stands apart: more than 10% above it, and further from it than
// six times the mean spacing of the others (n jittered waits leave gaps
// of about their range over n-1, wider than six times that one time in
// 400; a late timer leaves one far wider). With fewer than four waits no
// spacing is known and the largest stands.
func top(g []float64) float64 {
	n := len(g)
	if n >= 4 && g[n-1] > 1.1*g[n-2] && g[n-1]-g[n-2] > 6*(g[n-2]-g[0])/float64(n-2) {
		return g[n-2]
	}
	return g[n-1]
}

// lateShare is the share of the waits at one attempt index (at least
// one) that ceilingOf lets be late: a timer that fired late on a loaded
// host, by any amount. lateAlpha is how often ceilingOf takes on-time
// waits for late ones.
const (
	lateShare = 0.05
	lateAlpha = 0.01
)

// ceilingOf reads the ceiling C of sorted waits g (three or more) drawn
// uniformly from [a·C, C]: full jitter (a = 0) or equal jitter (a = ½).
// It returns the estimate and its 99% range, tolerating up to
// j = ⌈lateShare·n⌉ waits (at least one) fired late by any amount: a
// timer never fires early, so late waits only ever lengthen.
//
// The range rests on x, the (n−j)-th smallest wait, not on the longest,
// which one late timer sets: the share of the width below the (n−j)-th of
// n uniform draws is Beta(n−j, j+1) distributed, so with q its 0.5%
// quantile, [x, x/(a+(1−a)q)] holds C at least 99.5% of the time whatever
// m ≤ j late waits did (x ≤ C always, as at least n−j waits are on time
// and at most C; x is no shorter than the on-time (n−j)-th smallest).
//
// The estimate is the longest wait's, unbiased for uniform waits,
// top/(a+(1−a)n/(n+1)) (standard error about (1−a)/n of C), unless the
// top j waits stand apart from the rest: (x−g₀)/(top−g₀), which for n
// uniform waits is Beta(n−j−1, j) whatever the bounds, falls below its
// lateAlpha quantile t*. Then it is x's, x/(a+(1−a)(n−j)/(n+1)), also
// unbiased without late waits (standard error about √(j+1)/n of C).
// Error bound with m ≤ j late waits: where they are seen apart, the
// estimate errs upward by at most a factor 1/(a+(1−a)(n−j)/(n+1))
// (full jitter: (n+1)/(n−j), 1.5 at n = 5, 1.11 at n = 20, 1.06 at
// n ≥ 100) and on average by (n+1)/(n+1−m); where they are not, the
// longest wait is within x/t* of the floor, so for full jitter the
// estimate is at most C(n+1)/(n·t*) (5.6 C at n = 5, 1.36 C at n = 20,
// 1.14 C at n = 100, 1.08 C at n = 500) and lies inside the range, which is
// stretched to hold it. More than j late waits (a busy host's tail)
// are trimLate's to set aside first.
func ceilingOf(g []float64, a float64) (c, lo, hi float64) {
	n := len(g)
	j := min(max(1, int(math.Ceil(lateShare*float64(n)))), n-2)
	r := n - j
	x, top := g[r-1], g[n-1]
	q := distuv.Beta{Alpha: float64(r), Beta: float64(j + 1)}.Quantile(0.005)
	lo, hi = x, x/(a+(1-a)*q)
	c = x / (a + (1-a)*float64(r)/float64(n+1))
	apart := distuv.Beta{Alpha: float64(r - 1), Beta: float64(j)}.Quantile(lateAlpha)
	if top > g[0] && (x-g[0])/(top-g[0]) >= apart {
		c = top / (a + (1-a)*float64(n)/float64(n+1))
	}
	return c, lo, max(hi, c)
}

// ceilingFromMedian checks ceiling c, read from the longest of n waits
// drawn uniformly over [a·C, C], against their median med: the median is
// (a+1)/2·C, erring by the width (1−a)·C over 2√n, and stands a late tail
// that the longest waits do not. A c above the median's reading by more
// than z99 of its error rests on late timers (a busy host's: a
// nice-grpc capture's equal-jitter ceiling read 74.3ms for 50 from two
// waits 9 and 23ms past it); then the median's reading is returned, and
// true. Only equal jitter's waits are read so: full jitter's median
// strays too far with few waits (a sweep of 12-call captures read half
// the ceiling in some seeds), and decorrelated jitter's are not uniform.
func ceilingFromMedian(c, med, a, n float64) (float64, bool) {
	cm := med / ((a + 1) / 2)
	se := (1 - a) * cm / (2 * math.Sqrt(n)) / ((a + 1) / 2)
	return cm, c > cm+z99*se
}

// minGrowth is the least ratio between the first two steps read as
// growth (below it and above its inverse, as alike).
const minGrowth = 1.3

// capShortfall: a ratio between consecutive waits below this share of
// the growth before it is the cap cutting the schedule short.
const capShortfall = 0.7

// growsThroughSteps reports whether one schedule base·m^k passes through
// every step's range [lo[k], hi[k]] (each wait may also hold an overhead
// up to oMax, the same in all): some base lies in every step's range
// shrunk by m^k. The multiplier is read from the first and last steps
// alone; a cap that cut the last step short without standing out (ky's or
// nice-grpc's 200 → 300 ms after ×2 steps, equal jitter's wide ranges
// hiding the shortfall) pulls it below the growth the steps before show,
// and a stated ×1.75 that no step in between allows misleads more than
// an unknown one with its range.
func growsThroughSteps(m float64, lo, hi []float64, oMax float64) bool {
	bLo, bHi := 0.0, math.Inf(1)
	for k := range lo {
		f := math.Pow(m, float64(k))
		bLo, bHi = max(bLo, (lo[k]-oMax)/f), min(bHi, hi[k]/f)
	}
	return bLo <= bHi
}

// bestQuarter picks, where more than one quarter multiplier within [lo,
// hi] passes through every step's range (growsThroughSteps), the one that
// fits the steps best: the least sum of squared deviations of the steps'
// logarithms from base·q^k, each over its step's error (a quarter of its
// 99% range's logarithmic width, as ±z99 spans it), the base the best for
// that q. The first-to-last growth that fit is rounded from rests on two
// steps; a cap that cut the last short pulls it down (nice-grpc's ×2
// steps 50, 100, 200 and a cap at 300 read ×1.83, rounded to ×1.75, while
// the steps between grow by ×2). Otherwise fit stands.
func bestQuarter(fit, lo, hi float64, sched, slo, shi []float64, oMax float64) float64 {
	var passing []float64
	for q := math.Ceil(lo*4) / 4; q <= hi; q += 0.25 {
		if q > 1 && growsThroughSteps(q, slo, shi, oMax) {
			passing = append(passing, q)
		}
	}
	if len(passing) < 2 {
		return fit
	}
	best, bestSS := fit, math.Inf(1)
	for _, q := range passing {
		// Weighted least squares of ln sched[k] − k·ln q for ln base.
		var sw, swy float64
		w := make([]float64, len(sched))
		for k := range sched {
			se := math.Log(max(shi[k], immediateMS)/max(slo[k], immediateMS)) / (2 * z99)
			w[k] = 1 / max(se*se, 1e-9)
			sw += w[k]
			swy += w[k] * (math.Log(max(sched[k], immediateMS)) - float64(k)*math.Log(q))
		}
		lb := swy / sw
		ss := 0.0
		for k := range sched {
			d := math.Log(max(sched[k], immediateMS)) - float64(k)*math.Log(q) - lb
			ss += w[k] * d * d
		}
		if ss < bestSS {
			best, bestSS = q, ss
		}
	}
	return best
}

// roundMultiplier rounds a fitted multiplier m, whose 99% range is
// [lo, hi], to the nearest quarter when the waits allow it (a spurious
// ×2.1 for a ×2 misleads more than it informs; libraries use ×1.5 or ×2,
// rarely ×2.1), else to a tenth: rounding never claims a value the waits
// rule out, and the range says how far the figure can be trusted.
func roundMultiplier(m, lo, hi float64) float64 {
	if q := math.Round(m*4) / 4; q >= lo && q <= hi {
		return q
	}
	return math.Round(m*10) / 10
}

// waitIndex summarises the sorted waits at one attempt index.
type waitIndex struct {
	n                               int
	lo, q10, q25, med, q75, q90, hi float64
}

func summarise(g []float64) waitIndex {
	return waitIndex{n: len(g), lo: g[0], q10: quantile(g, 0.1), q25: quantile(g, 0.25), med: quantile(g, 0.5),
		q75: quantile(g, 0.75), q90: quantile(g, 0.9), hi: g[len(g)-1]}
}

// jitterKind names the jitter of waits that spread beyond the noise
// (noise: the spread within which the edge's waits agree, NoiseMS).
// A wait drawn uniformly from [L, H] has mean (L+H)/2 and standard
// deviation (H-L)/√12, so the moments give the bounds more steadily than
// the extremes, which few samples understate. Over the waits pooled (each
// divided by its index's median): full jitter has L near 0 (uniform on
// [0, d]), equal jitter L = H/2 (uniform on [d/2, d]); otherwise the waits
// sit at ±x around a centre. Whether x scales with the wait
// (multiplicative, ±x%) or the spread stays the same width while the waits
// grow (additive, +U[0,a]) only attempt indices with different waits can
// tell (widthGrowth); with one index or a constant schedule the two are
// the same distribution, reported as proportional. Where the indices
// cannot tell them apart, the kind is unknown and candidates names both.
//
// late says the edge's timings have a late tail (tailed): widths are
// then read so that late waits do not stretch them (widthOf).
func jitterKind(gaps [][]float64, idx []waitIndex, noise float64, late bool) (kind JitterKind, fraction proportionalFraction, additive additiveWidth, candidates []JitterKind) {
	var z []float64
	for k, g := range gaps {
		if idx[k].med < immediateMS {
			continue // an immediate median normalises nothing
		}
		for _, x := range g {
			z = append(z, x/idx[k].med)
		}
	}
	if len(z) < minJitterSamples {
		return JitterUnknown, proportionalFraction{}, additiveWidth{}, nil
	}
	// Additive or a kind that widens with the wait, asked first: the
	// per-index widths tell them apart where the pooled shape may not
	// (waits 20ms ×2 plus U[0,30ms) pool into the shape of equal jitter).
	// Only where the medians of two indices differ at least 1.8-fold.
	verdict, a := widthGrowth(gaps, idx, noise, late)
	slices.Sort(z)
	mean, sd := stat.MeanStdDev(z, nil)
	lo, hi := mean-math.Sqrt(3)*sd, mean+math.Sqrt(3)*sd
	fromZero := lo/hi < 0.12 && z[0] < 0.2
	// Waits that spread from near zero (fromZero) are full jitter's
	// even where their widths did not show growing (few waits at two
	// indices whose schedules differ little: full jitter under ×1.5
	// read as +U[0,a] over a schedule of 0): an additive jitter over no
	// schedule is full jitter of a constant one, and read as that.
	if verdict == growthNone && !fromZero {
		return JitterAdditive, proportionalFraction{}, a, nil
	}
	switch r := lo / hi; {
	case fromZero:
		kind = JitterFull
	case math.Abs(r-0.5) < 0.05:
		kind = JitterEqual
	default:
		kind, fraction.f = JitterProportional, (hi-lo)/(hi+lo)
		// The pooled moments take in every late timer; where an index
		// has the waits for widthOf, its width W and centre (the floor,
		// g[0] less the W/(n+1) the shortest lies above it on average,
		// plus W/2) give the fraction W/(2·centre) instead, weighted
		// by the inverse of the width's variance.
		var sum, sw float64
		for k, g := range gaps {
			if len(g) < minJitterSamples/2 || idx[k].med < immediateMS {
				continue
			}
			w, rel, _ := widthOf(g, noise)
			if c := g[0] + w*(0.5-1/float64(len(g)+1)); c > 0 {
				sum, sw = sum+w/(2*c)/(rel*rel), sw+1/(rel*rel)
			}
		}
		if sw > 0 {
			fraction.f = sum / sw
		}
		fraction.lo, fraction.hi = fractionRange(gaps, idx, z, noise)
		fraction.lo, fraction.hi = min(fraction.lo, fraction.f), max(fraction.hi, fraction.f)
	}
	if verdict == growthUntold && kind == JitterProportional && floorHigh(gaps, idx) {
		// The widths fit a spread that stays put and one that grows
		// with the wait alike (or neither): no kind is claimed. Only
		// where the waits sit about a centre, as both do: full and
		// equal jitter, and waits spread from near zero, keep the
		// pooled shape's kind.
		return JitterUnknown, proportionalFraction{}, additiveWidth{}, []JitterKind{JitterAdditive, kind}
	}
	return kind, fraction, additiveWidth{}, nil
}

// proportionalFraction is jitterKind's reading of a proportional
// jitter's fraction: f, and its 99% range [lo, hi] (fractionRange).
type proportionalFraction struct{ f, lo, hi float64 }

// maxFractionWidth is how wide (high less low) a proportional fraction's
// range may be for the fraction to be stated: past it, jitter_fraction
// is null and only its range is said. Chosen from TestFractionBoundSweep
// (README: the sweep at several bounds): the widest bound that states no
// fraction off by more than 0.05 on any host it simulates. A variable
// only so that the sweep can lift it to read the figure at every bound.
var maxFractionWidth = 0.5

// fractionStated reports whether a proportional fraction f, as
// published (rounded to 0.05), may be stated with its 99% range r: f
// lies inside the range and the range is no wider than bound.
func fractionStated(f float64, r [2]float64, bound float64) bool {
	return r[0] <= f && f <= r[1] && r[1]-r[0] <= bound
}

// fractionRange returns the 99% range of a proportional jitter's
// fraction, read as widthGrowth reads an additive width's: at every
// index with minJitterSamples/2 or more waits (else over the pooled
// waits z, each over its index's median, as one index), by each of the
// three width estimators (the range, up to the upper quartile, the
// bulk's), the fraction W/(2·centre) (the centre the floor, the shortest
// wait less the W/(n+1) it lies above it on average, plus W/2) and its
// weighted mean (by the inverse variance of the width's logarithm),
// whose 99% range is widthSpan's, the noise late timers widen every
// index by taken over twice the centre; the high end stops at 1 (a wait of (1 ± f) times its centre is never
// negative). The range is the union of the three.
func fractionRange(gaps [][]float64, idx []waitIndex, z []float64, noise float64) (lo, hi float64) {
	var use [][]float64
	for k, g := range gaps {
		if len(g) >= minJitterSamples/2 && idx[k].med >= immediateMS {
			use = append(use, g)
		}
	}
	if len(use) == 0 {
		// z is each wait over its index's median: so is the noise, over
		// the shortest median (the most it can be of one).
		least := math.Inf(1)
		for _, w := range idx {
			if w.med >= immediateMS {
				least = min(least, w.med)
			}
		}
		use, noise = [][]float64{z}, noise/least
	}
	lo, hi = math.Inf(1), 0
	for by := range lateShift {
		var sum, nsum, sw float64
		for _, g := range use {
			w, rel, _ := widthWith(g, by)
			c := g[0] + w*(0.5-1/float64(len(g)+1))
			if c <= 0 || w <= 0 {
				continue
			}
			wt := 1 / (rel * rel)
			sum, nsum, sw = sum+wt*w/(2*c), nsum+wt*noise/(2*c), sw+wt
		}
		if sw == 0 {
			continue
		}
		l, h := widthSpan(sum/sw, 1/math.Sqrt(sw), by, nsum/sw)
		lo, hi = min(lo, l), max(hi, min(h, 1))
	}
	if lo > hi {
		return 0, 1 // no index had a width to read: any fraction
	}
	return lo, hi
}

// bulkWidth estimates the width W of sorted jittered waits g (two or
// more) from the bulk that late timers leave alone: the spacing D from
// the shortest wait to the r-th, r = ⌈n/2⌉ (at least the second), which
// for n waits uniform over W is W·Beta(r−1, n−r+2) distributed, so W is
// D·(n+1)/(r−1); rel is the standard deviation of its logarithm
// (logBetaSD(r−1, n+1): 0.26 at 20 waits, 0.53 at 8). Up to n−r late
// waits, by any amount, do not reach the r-th: a busy host that wakes a
// fifth of its sleepers late puts more than half of six waits there 1.7%
// of the time (more than a quarter, 34%: the third quartile would not
// do).
func bulkWidth(g []float64) (w, rel float64) {
	n := len(g)
	r := max(2, int(math.Ceil(0.5*float64(n))))
	return (g[r-1] - g[0]) * float64(n+1) / float64(r-1), logBetaSD(r-1, n+1)
}

// logBetaSD is the standard deviation of log X for X ~ Beta(a, b−a),
// integers 0 < a < b: ψ₁(a) − ψ₁(b) is the variance (ψ₁ the trigamma
// function), which for integers is the sum of 1/i² from a to b−1. The
// widths are compared as logarithms, whose spread this is (a spacing
// of few waits has a long tail towards zero, which a relative standard
// error understates).
func logBetaSD(a, b int) float64 {
	v := 0.0
	for i := a; i < b; i++ {
		v += 1 / float64(i*i)
	}
	return math.Sqrt(v)
}

// quartileWidth estimates the width W of sorted jittered waits g (two or
// more) as bulkWidth does, from the spacing of the shortest wait to the
// r-th, r = ⌈3n/4⌉ (at least the second): up to n−r late waits, a
// quarter, by any amount, do not reach it, and it errs less than the
// bulk's (the standard deviation of its logarithm logBetaSD(r−1, n+1):
// 0.11 at 33 waits against the bulk's 0.18).
func quartileWidth(g []float64) (w, rel float64) {
	n := len(g)
	r := max(2, int(math.Ceil(0.75*float64(n))))
	return (g[r-1] - g[0]) * float64(n+1) / float64(r-1), logBetaSD(r-1, n+1)
}

// widthOf estimates the width W of sorted jittered waits g (four or
// more) and the standard deviation of its logarithm, and reports whether
// late timers stretched their range (stretched). From the range (the
// longest wait top's, unless it stands apart), which n uniform waits
// understate by (n−1)/(n+1) and whose share of W is Beta(n−1, 2)
// distributed (logBetaSD(n−1, n+1): 0.07 at 20 waits), unless late
// timers stretched it; then from the spacing up to the upper quartile
// (quartileWidth), which a late quarter does not reach, unless that too
// is stretched; then the bulk's (bulkWidth), which late waits up to half
// do not reach. Each is stretched where it exceeds the more robust one
// by more than z99 of their errors combined; the range also where
// trimLate, at the noise within which waits agree, sets a late tail
// aside. (A busy Go host fires a sixth of its timers a few milliseconds
// late: on a 25ms ±20% wait that stretches the range by half, which the
// range against the bulk's, erring by a fifth, does not show.)
func widthOf(g []float64, noise float64) (w, rel float64, stretched bool) {
	w, rel, by := widthWith(g, widthLevel(g, noise, false))
	return w, rel, by != byRange
}

// How widthBy read a width: from the range, up to the upper quartile, or
// from the bulk, each more robust to late waits than the one before.
const (
	byRange = iota
	byQuartile
	byBulk
)

// lateShift is, by estimator, how far late waits may have shifted the
// r-th wait its width reads up, as a factor on the width: none for the
// range, which holds them; up to a quarter of the waits late under the
// upper quartile's (4/3); up to half under the bulk's (2).
var lateShift = [...]float64{byRange: 1, byQuartile: 0.75, byBulk: 0.5}

// widthSpan is the 99% range of an estimator's weighted mean width m
// (se: the standard deviation of its logarithm), reaching lower by what
// late waits may have shifted the estimator (lateShift[by]) and by noise,
// what late timers widen every index by; never below 0.
func widthSpan(m, se float64, by int, noise float64) (lo, hi float64) {
	return max(m*math.Exp(-z99*se)*lateShift[by]-noise, 0), m * math.Exp(z99*se)
}

// widthLevel is the estimator widthOf reads g's width with. Where late
// says the edge's timings have a late tail (tailed), the range is not
// read at all: a busy host's late waits need not stand out of a few
// jittered ones to stretch it (got's 1s ×2 + U[0,100ms) on a Node event
// loop spread its first waits over 124ms).
func widthLevel(g []float64, noise float64, late bool) int {
	bw, brel := bulkWidth(g)
	qw, qrel := quartileWidth(g)
	rw, rrel := rangeWidth(g)
	beyond := func(w, rel, robust, robustRel float64) bool {
		return w-robust > z99*math.Hypot(robustRel*robust, rel*w)
	}
	switch {
	case beyond(qw, qrel, bw, brel):
		return byBulk
	case late || len(trimLate(g, noise)) < len(g) || beyond(rw, rrel, qw, qrel):
		return byQuartile
	}
	return byRange
}

// rangeStretched reports whether late timers stretched the range of
// sorted waits g: trimLate, at the noise, sets a late tail aside, or the
// range's width exceeds the bulk's by more than z99 of their errors
// combined.
func rangeStretched(g []float64, noise float64) bool {
	bw, brel := bulkWidth(g)
	rw, rrel := rangeWidth(g)
	return len(trimLate(g, noise)) < len(g) || rw-bw > z99*math.Hypot(brel*bw, rrel*rw)
}

// widthWith reads the width of sorted waits g with estimator by.
func widthWith(g []float64, by int) (w, rel float64, _ int) {
	switch by {
	case byBulk:
		w, rel = bulkWidth(g)
	case byQuartile:
		w, rel = quartileWidth(g)
	default:
		w, rel = rangeWidth(g)
	}
	return w, rel, by
}

// rangeWidth is the width of sorted waits g (four or more) read from
// their range (the longest wait top's, unless it stands apart), which n
// uniform waits understate by (n−1)/(n+1), and the standard deviation
// of its logarithm.
func rangeWidth(g []float64) (w, rel float64) {
	t := top(g)
	n := float64(len(g))
	if t < g[len(g)-1] {
		n-- // the longest stands apart: n−1 waits span the range
	}
	return (t - g[0]) * (n + 1) / (n - 1), logBetaSD(int(n)-1, int(n)+1)
}

// floorHigh reports whether, at every index with minJitterSamples/2 or
// more waits, the shortest wait is at least half the median: waits about
// a centre (proportional jitter up to ±50%, additive jitter up to twice
// the schedule), not spread from near zero.
func floorHigh(gaps [][]float64, idx []waitIndex) bool {
	for k, g := range gaps {
		if len(g) >= minJitterSamples/2 && g[0] < 0.5*idx[k].med {
			return false
		}
	}
	return true
}

// What the widths of the waits at several attempt indices say of how
// their jitter grows with the wait (widthGrowth).
type growth int

const (
	growthAbsent growth = iota // too few indices, or too alike, to ask
	growthNone                 // the same width at every index: additive
	growthScales               // widths grow with the wait
	growthUntold               // the widths cannot tell the two apart
)

// widthGrowth asks whether the jitter's width grows with the wait
// (proportional, full, equal jitter: width ∝ the wait's centre) or stays
// the same (additive, +U[0,a]), from the indices with at least
// minJitterSamples/2 waits whose medians span 1.8-fold or more, and
// returns the additive width where it stays.
//
// Each index's width resists late timers: a busy host wakes some
// sleepers late by any amount, which stretches the longest waits, the
// standard deviation and the range, and so widens the shortest wait's
// index most against its jitter (as late timers do not grow with the
// wait, they make any jitter look additive). The width is the range's
// where at every index the range agrees with the bulk's, else the
// bulk's at every index (widthOf, bulkWidth), each with its own sampling
// uncertainty (the standard deviation of the bulk's logarithm 0.26 at 20
// waits, 0.53 at 8), so few waits rule little out.
//
// Timers that fire late by up to the noise widen every index by as much
// whatever the wait, which pulls a growth towards none; so the widths,
// log W against the log of the index's median (slope β: 0 for additive,
// 1 for any width that scales with the wait), are fitted twice (weighted
// by the inverse of each width's variance). Additive is ruled out only
// where β exceeds 0 by z99 standard errors with the widths as read (the
// reading most favourable to it); growth is ruled out only where β falls
// short of 1 by z99 standard errors with the noise taken off every
// width (the reading most favourable to growth; an index whose width is
// within the noise rules nothing out). One ruled out and the other not
// names the kind; neither or both, the widths cannot tell.
func widthGrowth(gaps [][]float64, idx []waitIndex, noise float64, late bool) (growth, additiveWidth) {
	var use []int
	lo, hi := math.Inf(1), 0.0
	for k, w := range idx {
		if w.n >= minJitterSamples/2 && w.med >= immediateMS {
			use = append(use, k)
			lo, hi = min(lo, w.med), max(hi, w.med)
		}
	}
	if len(use) < 2 || hi < 1.8*lo {
		return growthAbsent, additiveWidth{}
	}
	xs, ws, ses := make([]float64, len(use)), make([]float64, len(use)), make([]float64, len(use))
	level := byRange
	for i, k := range use {
		xs[i] = math.Log(idx[k].med)
		if rangeStretched(gaps[k], noise) {
			level = byBulk
		}
	}
	// One estimator at every index: late waits, a share of every
	// index's alike, shift the bulk's r-th wait up the on-time waits by
	// the same factor (1/(1−share)) at every index, which the slope does
	// not see, but not the range of an index with none late. (Not the
	// upper quartile's: a busy host that wakes a fifth of its sleepers
	// late puts more than a quarter of an index's few waits late often
	// enough to tilt the slope.)
	for i, k := range use {
		ws[i], ses[i], _ = widthWith(gaps[k], level)
	}
	// slope fits log(W−off) on xs; ok false where a width is within off.
	slope := func(off float64) (beta, se float64, ok bool) {
		var sw, sx, sy float64
		ys, wt := make([]float64, len(ws)), make([]float64, len(ws))
		for i, w := range ws {
			if w-off <= 0 {
				return 0, 0, false
			}
			rel := ses[i] * w / (w - off) // the spread of log(W−off)
			ys[i], wt[i] = math.Log(w-off), 1/(rel*rel)
			sw, sx, sy = sw+wt[i], sx+wt[i]*xs[i], sy+wt[i]*ys[i]
		}
		var sxx, sxy float64
		for i := range ws {
			dx := xs[i] - sx/sw
			sxx, sxy = sxx+wt[i]*dx*dx, sxy+wt[i]*dx*(ys[i]-sy/sw)
		}
		return sxy / sxx, 1 / math.Sqrt(sxx), true
	}
	b0, se0, _ := slope(0)
	notAdditive := b0-z99*se0 > 0
	bn, sen, ok := slope(noise)
	notScaling := ok && bn+z99*sen < 1
	switch {
	case notScaling && !notAdditive:
		// The additive width: the widths' weighted mean. Where the
		// edge's timings have a late tail (late), the widths that told
		// the kind are read again so that late waits do not stretch
		// them: the kind needs the range's precision, the width a
		// reading the late tail leaves alone (up to the upper quartile,
		// or the bulk's where that too is stretched).
		if late {
			level = byQuartile
			for _, k := range use {
				level = max(level, widthLevel(gaps[k], noise, true))
			}
		}
		a := additiveWidth{lo: math.Inf(1), tail: math.Inf(-1)}
		// Its 99% range holds the reading of every estimator
		// (widthSpan): on the range alone, where the edge's noise does
		// not show the timers' lateness, it would rest on late waits.
		for by := range lateShift {
			var sum, sw float64
			for _, k := range use {
				w, rel, _ := widthWith(gaps[k], by)
				sum, sw = sum+w/(rel*rel), sw+1/(rel*rel)
			}
			if by == level {
				a.ms = sum / sw
			}
			l, h := widthSpan(sum/sw, 1/math.Sqrt(sw), by, noise)
			a.lo, a.hi = min(a.lo, l), max(a.hi, h)
		}
		// tail: how far the longest wait at any index reaches past its
		// floor and the width.
		for _, k := range use {
			g := gaps[k]
			a.tail = max(a.tail, g[len(g)-1]-g[0]-a.ms)
		}
		return growthNone, a
	case notAdditive && !notScaling:
		return growthScales, additiveWidth{}
	}
	return growthUntold, additiveWidth{}
}

// additiveWidth is widthGrowth's reading of an additive jitter's width:
// ms, its 99% range [lo, hi], and tail, how far the longest wait at any
// index reaches past its floor and ms. Where late timers put a tail as
// wide as the width (tail ≥ ms), which of the waits are the jitter's and
// which the host's the traces cannot tell: the width is unknown, its
// range stated (known).
type additiveWidth struct{ ms, lo, hi, tail float64 }

// known reports whether the width is told apart from the late tail.
func (a additiveWidth) known() bool { return a.tail < a.ms }

// Thresholds of the dependence test. zDependent: how many standard
// errors from zero one call's consecutive waits must depend on each other
// to be read as decorrelated jitter (waits drawn on their own show that
// one time in 370). minPairs: the fewest calls with waits at both of two
// consecutive indices for their rank correlation to count.
// weakestDependence: the weakest rank correlation between consecutive
// waits of the published decorrelated formulas (Polly's "V2", cockatiel's
// default: −0.35 between the second and third waits, −0.57 between the
// first two; Brooker's min(cap, U[base, 3·previous]): +0.46 and +0.6), so
// pairsToTell, the weight (pairs less one per index) the test needs for
// that dependence to reach zDependent on average.
const (
	zDependent        = 3.0
	minPairs          = 5
	weakestDependence = 0.35
)

var pairsToTell = math.Pow(zDependent/weakestDependence, 2)

// dependence measures how one call's consecutive waits depend on each
// other: Spearman's rank correlation between the waits at indices k and
// k+1 of the calls that waited at both, for every k where use[k] and
// use[k+1] and at least minPairs calls did, pooled with weights n−1 (a
// coefficient's variance over n independent pairs), and its z score. A
// schedule that draws each wait on its own (none, full, equal,
// proportional, additive jitter) leaves them independent; decorrelated
// jitter does not: drawn from the previous wait (min(cap, U[base,
// 3·previous])) a long wait is followed by a long one; as the steps of one
// jittered timeline (Polly's "V2": the time waited in all up to retry n is
// f(n+u)·c) a long wait is followed by a short one. nil where no two
// indices have the pairs. weight is the pairs less one per index (the
// z score's denominator squared).
func dependence(chains [][]float64, use []bool) (dep *WaitDependence, weight float64) {
	var sum float64
	pairs := 0
	for k := 0; k+1 < len(use); k++ {
		if !use[k] || !use[k+1] {
			continue
		}
		var xs, ys []float64
		for _, c := range chains {
			if len(c) > k+1 {
				xs, ys = append(xs, c[k]), append(ys, c[k+1])
			}
		}
		if len(xs) < minPairs {
			continue
		}
		rho := stat.Correlation(ranks(xs), ranks(ys), nil)
		if math.IsNaN(rho) {
			rho = 0 // every wait alike at one index: no order to correlate
		}
		n := float64(len(xs))
		sum += rho * (n - 1)
		weight += n - 1
		pairs += len(xs)
	}
	if pairs == 0 {
		return nil, 0
	}
	return &WaitDependence{Pairs: pairs, RankCorrelation: round3(sum / weight), Z: math.Round(100*sum/math.Sqrt(weight)) / 100}, weight
}

// ranks returns the rank of each of xs (from 1; ties share their mean
// rank), whatever their order.
func ranks(xs []float64) []float64 {
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(xs[a], xs[b]) })
	r := make([]float64, len(xs))
	for i := 0; i < len(order); {
		j := i
		for j+1 < len(order) && xs[order[j+1]] == xs[order[i]] {
			j++
		}
		for _, o := range order[i : j+1] {
			r[o] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// timelineReading is the schedule of decorrelated jitter's timeline form
// before retry k+1, as sym takes it (a value and its standard error):
// the waits are steps of one jittered timeline, so what follows the
// schedule is the time waited in all up to this retry, read at its
// median (the formula's centre: Polly's "V2" scales it to about
// base·multiplierⁿ; the median of n values errs by about 1.25 times
// their spread over √n). Where fewer than three calls waited at every
// index up to this one, the timeline goes on from the reading before
// (prev) by this index's median wait w.
func timelineReading(chains [][]float64, k int, prev float64, w waitIndex, tol float64) (v, se float64) {
	if e := elapsed(chains, k); len(e) >= 3 {
		s := summarise(e)
		return s.med, 1.25 * max(s.hi-s.lo, tol) / math.Sqrt(float64(len(e)))
	}
	return prev + w.med, 1.25 * max(w.hi-w.lo, tol) / math.Sqrt(float64(w.n))
}

// oneGrowth reports whether one multiplier fits every step of a schedule
// whose 99% ranges are [lo[k], hi[k]]: the ratios each pair of
// consecutive ranges allows (an overhead up to oMax, which pulls a
// ratio towards 1, included) have one in common.
func oneGrowth(lo, hi []float64, oMax float64) bool {
	rlo, rhi := 0.0, math.Inf(1)
	for k := 1; k < len(lo); k++ {
		rlo = max(rlo, max(lo[k], 0)/max(hi[k-1], immediateMS))
		rhi = min(rhi, max(hi[k]-oMax, 0)/max(lo[k-1]-oMax, immediateMS))
	}
	return rlo <= rhi
}

// elapsed returns, sorted, the time each call that waited before retry
// k+1 had waited in all by then (its waits at indices 0..k).
func elapsed(chains [][]float64, k int) []float64 {
	var e []float64
	for _, c := range chains {
		if len(c) > k {
			sum := 0.0
			for _, w := range c[:k+1] {
				sum += w
			}
			e = append(e, sum)
		}
	}
	slices.Sort(e)
	return e
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
	// The first wait is uniform over [base, 3·base]: its median twice its
	// floor (a fixed overhead under full jitter leaves any ratio).
	return quantile(g0, 0.5) <= 2.6*g0[0] && gn[0] < 0.5*quantile(gn, 0.5) && cv(gn) > 1.4*cv(g0)
}
