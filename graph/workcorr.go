package graph

import (
	"math"
	"slices"
)

// WorkCorrelation says how the callee's work on the attempts of one call
// relate: whether slowness is a property of the request (a hot key, a big
// payload, a slow shard: the attempts after a slow one are slow too) or of
// the attempt (a GC pause, a bad connection: the next attempt escapes it).
// Hedging helps only in the second case; in the first it adds load. The
// replay draws a call's later attempts' work conditioned on the earlier
// ones only where the traces decide "correlated".
//
// An attempt is slow when the callee worked more than SlowAboveMS on it.
// The split is fitted from the edge's work times, not a fixed percentile:
// slowness from a hot key or a pause is a mode of its own, and the split
// is where the logarithm of the work divides best into two groups (Otsu's
// criterion: the largest between-group variance, over the work times at
// WorkLevels; a fixed p75 cuts through a mode wherever the slow share is
// not a quarter). On a unimodal time it falls near the middle, and the
// test below still compares above against below.
//
// Counted are the attempts whose work replay draws from the edge's work
// times: those that reached an instrumented callee and did not fail on
// their own (the same executions as RetryWork's). The first attempts give
// First; an attempt after the first is counted after a slow or a fast
// attempt by the work of the latest earlier attempt of its call that
// reached the callee, failed or not (a timeout or a slow error is slow
// too), by its attempt number (index 0: the second attempt).
type WorkCorrelation struct {
	SlowAboveMS float64 `json:"slow_above_ms"`
	// Attempts is how many attempts were counted (first and later), and
	// SlowAttempts how many of them were slow: the marginal rate.
	Attempts     int      `json:"attempts"`
	SlowAttempts int      `json:"slow_attempts"`
	First        TryCount `json:"first"`
	// AfterSlowByAttempt[0] counts second attempts after a slow first
	// attempt, [1] third attempts after a slow second…; AfterFastByAttempt
	// those after an attempt that was not slow. AfterSlow and AfterFast
	// are their sums.
	AfterSlowByAttempt []TryCount `json:"after_slow_by_attempt"`
	AfterFastByAttempt []TryCount `json:"after_fast_by_attempt"`
	AfterSlow          TryCount   `json:"after_slow"`
	AfterFast          TryCount   `json:"after_fast"`
	// P is the chance, were an attempt's slowness independent of the
	// attempt before it, that the attempts after a slow one would be slow
	// at least as often as the traces show: Fisher's exact test of the
	// 2×2 table (after slow, after fast) × (slow, not), one-sided
	// (rounded to six decimals; the verdict reads it unrounded).
	P float64 `json:"p"`
	// Verdict is WorkCorrelated (P below CorrelationAlpha),
	// WorkIndependent, or WorkUnknown: too few attempts followed a slow
	// one (or none a fast one) for even all of them slow to clear
	// CorrelationAlpha.
	Verdict string `json:"verdict"`
	// SlowWorkQuantilesMS and FastWorkQuantilesMS are the counted
	// attempts' work above and up to SlowAboveMS, at WorkLevels: replay
	// draws a slow or fast attempt's work from its own.
	SlowWorkQuantilesMS []float64 `json:"slow_work_quantiles_ms"`
	FastWorkQuantilesMS []float64 `json:"fast_work_quantiles_ms"`
}

// The verdicts of WorkCorrelation.
const (
	WorkCorrelated  = "correlated"
	WorkIndependent = "independent"
	WorkUnknown     = "unknown"
)

// CorrelationAlpha is the significance below which the attempts after a
// slow one count as slow more often than the others: three standard
// deviations, one-sided, the bar runs and episodes clear too.
const CorrelationAlpha = EpisodeAlpha

// splitRange is the range of work times, as a share of the longest, that
// slowSplit tells apart: times below a thousandth of the longest count
// alike (their logarithms would otherwise spread a fast group of tens of
// microseconds over as many decades as the slow mode lies above it).
const splitRange = 1e-3

// slowSplit is the split of work times into fast and slow fitted from
// their quantiles q (at evenly spaced levels, ascending): the middle, on
// the logarithmic scale, of the gap between the fast group's largest
// quantile and the slow group's smallest (a quantile at 1% steps does not
// reach the fast group's longest time), the groups chosen where the logarithms of the
// quantiles (each at least splitRange of the longest and a microsecond)
// have the largest between-group variance, between two distinct values;
// ok is false when all are equal.
func slowSplit(q []float64) (above float64, ok bool) {
	x := make([]float64, len(q))
	total, floor := 0.0, max(q[len(q)-1]*splitRange, 1e-3)
	for i, v := range q {
		x[i] = math.Log(max(v, floor))
		total += x[i]
	}
	best, n := -1.0, float64(len(q))
	sum := 0.0
	for t := 1; t < len(q); t++ {
		sum += x[t-1]
		if !(q[t] > q[t-1]) {
			continue
		}
		w0 := float64(t)
		m0, m1 := sum/w0, (total-sum)/(n-w0)
		if b := w0 * (n - w0) * (m0 - m1) * (m0 - m1); b > best {
			best, above, ok = b, math.Sqrt(max(q[t-1], floor)*q[t]), true
		}
	}
	return above, ok
}

// workPairs is one edge's partial of WorkCorrelation: the counted
// attempts after the first, by what came before them (SlowTries' counts,
// its AfterFailureByAttempt standing for the attempts after a fast one).
// The first attempts and the work times come from the edge's attempt
// work (attemptWork), split at the same place.
type workPairs struct {
	tries SlowTries
}

// mergeWorkPairs adds p's counts (of other calls) to sum's.
func mergeWorkPairs(sum *workPairs, p workPairs) {
	sum.tries.merge(&p.tries)
}

// workPairsOf is the map step of the edges' work correlation: for each
// edge with a split (above, by edge; NaN for none), its selected calls'
// counted attempts after the first (see WorkCorrelation), each slow or
// not, by the attempt before. A call of one attempt has none and is
// passed over: its work is in the edge's attempt work already.
func workPairsOf(ix *index, s sel, ecs []*edgeCalls, keys []edgeKey, above []float64, ownFailed, slowServed spanSet, instrumented map[string]bool) *perEdge[workPairs] {
	waits := attemptWaits(ix, s, ecs)
	out := newPerEdge[workPairs](keys, nil)
	for i, ec := range ecs {
		if math.IsNaN(above[i]) || !instrumented[ec.key.callee] {
			continue
		}
		wp := &out.of[i]
		for _, c := range ec.calls {
			if c.more == 0 || !s.has(c.from) {
				continue // at most one attempt
			}
			prev := 0 // the latest earlier attempt that reached the callee: 0 none, 1 fast, 2 slow
			for k, a := range ix.attemptsOf(c) {
				if a.synthetic || a.server < 0 {
					continue
				}
				slow := float64(workTime(ix, a.server, waits[a.server]))/1e6 > above[i]
				if k > 0 && prev != 0 && (!ownFailed.has(a.server) || slowServed.has(a.server)) {
					wp.tries.count(k, prev == 2, slow)
				}
				prev = 1
				if slow {
					prev = 2
				}
			}
		}
	}
	return out
}

// workCorrelation is the reduce of one edge's work pairs with its split
// above and its attempt work w (first attempts and later ones): nil when
// no attempt after the first was counted.
func workCorrelation(above float64, wp *workPairs, w *attemptWork) *WorkCorrelation {
	st := &wp.tries
	if len(st.AfterSlowByAttempt) == 0 {
		return nil
	}
	wc := &WorkCorrelation{SlowAboveMS: round3(above),
		AfterSlowByAttempt: st.AfterSlowByAttempt, AfterFastByAttempt: st.AfterFailureByAttempt}
	for k := range st.AfterSlowByAttempt {
		wc.AfterSlow.add(st.AfterSlowByAttempt[k])
		wc.AfterFast.add(st.AfterFailureByAttempt[k])
	}
	wc.First.Tries = w[0].n()
	wc.First.Slow, _, _ = w[0].above(above, nil)
	pooled := w[0].clone()
	pooled.merge(&w[1])
	wc.Attempts = pooled.n()
	wc.SlowAttempts, wc.SlowWorkQuantilesMS, wc.FastWorkQuantilesMS = pooled.above(above, WorkLevels)
	s, f := wc.AfterSlow, wc.AfterFast
	p := HypergeometricTail(s.Tries+f.Tries, s.Slow+f.Slow, s.Tries, s.Slow)
	wc.P = round6(p)
	switch {
	case f.Tries == 0 || HypergeometricTail(s.Tries+f.Tries, s.Tries+f.Slow, s.Tries, s.Tries) >= CorrelationAlpha:
		wc.Verdict = WorkUnknown
	case p < CorrelationAlpha:
		wc.Verdict = WorkCorrelated
	default:
		wc.Verdict = WorkIndependent
	}
	return wc
}

// above is how many of d's values exceed x, and, at levels (none: nil),
// the quantiles of those values (slow) and of the others (fast), each
// empty for none. Exact values are split as they are; a sketch's by the
// share of its values up to x (its quantile at that level is the largest
// at or below x), read from its quantiles.
func (d *dist) above(x float64, levels []float64) (n int, slow, fast []float64) {
	slow, fast = []float64{}, []float64{}
	if d.sk == nil {
		if !d.sorted {
			slices.Sort(d.exact)
			d.sorted = true
		}
		i, _ := slices.BinarySearchFunc(d.exact, x, func(v, x float64) int {
			if v > x {
				return 1
			}
			return -1
		})
		if levels != nil {
			if i < len(d.exact) {
				slow = quantilesOf(d.exact[i:], levels)
			}
			if i > 0 {
				fast = quantilesOf(d.exact[:i], levels)
			}
		}
		return len(d.exact) - i, slow, fast
	}
	lo, hi := 0.0, 1.0 // the level of the last value up to x lies in [lo, hi]
	switch {
	case d.quantile(0) > x:
		hi = 0
	case d.quantile(1) <= x:
		lo = 1
	}
	for range 40 {
		if hi-lo < 1e-9 {
			break
		}
		if mid := (lo + hi) / 2; d.quantile(mid) <= x {
			lo = mid
		} else {
			hi = mid
		}
	}
	total := d.n()
	// The value at rank r is fast for every r below the fast values'
	// count: the largest level at or below x reaches it from below.
	n = total - min(int(math.Ceil(lo*float64(total-1)-1e-6)), total)
	switch {
	case hi == 0:
		n = total
	case lo == 1:
		n = 0
	}
	// The sketch reads the value at rank p·(total−1): the fast values are
	// ranks 0 to total−n−1, the slow ones the rest.
	rank := func(r float64) float64 { return round3(d.quantile(r / float64(max(total-1, 1)))) }
	if levels != nil {
		for _, l := range levels {
			if n > 0 {
				slow = append(slow, rank(float64(total-n)+l*float64(n-1)))
			}
			if n < total {
				fast = append(fast, rank(l*float64(total-n-1)))
			}
		}
	}
	return n, slow, fast
}

// quantilesOf is sorted's quantiles at levels, rounded.
func quantilesOf(sorted []float64, levels []float64) []float64 {
	out := make([]float64, len(levels))
	for i, p := range levels {
		out[i] = round3(quantile(sorted, p))
	}
	return out
}

// add adds c's tries and slow ones to t.
func (t *TryCount) add(c TryCount) {
	t.Tries += c.Tries
	t.Slow += c.Slow
}

// HypergeometricTail is P(X ≥ k) for X the marked items among n drawn
// without replacement from total of which marked are marked; 1 when k is
// 0 or nothing is drawn. It is the one-sided Fisher's exact test of a 2×2
// table: n in the first row, k of them marked, marked in all.
func HypergeometricTail(total, marked, n, k int) float64 {
	if n == 0 || k <= 0 {
		return 1
	}
	lc := func(a, b int) float64 {
		x, _ := math.Lgamma(float64(a) + 1)
		y, _ := math.Lgamma(float64(b) + 1)
		z, _ := math.Lgamma(float64(a-b) + 1)
		return x - y - z
	}
	tail := 0.0
	for x := k; x <= min(n, marked); x++ {
		if n-x <= total-marked {
			tail += math.Exp(lc(marked, x) + lc(total-marked, n-x) - lc(total, n))
		}
	}
	return min(tail, 1)
}
