package graph

import (
	"cmp"
	"math"
	"slices"
	"sort"
)

// EpisodeAlpha is the significance of a change point in an edge's failure
// rate: the one-sided tail of three standard deviations of a normal, the
// bar an episode's failure share clears against the rest of the edge too.
const EpisodeAlpha = 0.00135

// An edge's failure episodes are found on its first attempts in the order
// they started, each a success or a (retryable) failure: a Bernoulli
// sequence whose failure probability changes where the callee went bad
// and where it came back. changePoints cuts the sequence where the
// probability changes, by seeded binary segmentation with the
// narrowest-over-threshold selection (Kovács, Li, Bühlmann et al., 2020;
// Baranowski, Chen and Fryzlewicz, 2019), and episodeSpans keeps the
// pieces whose failure share is far above the rest of the edge's. Change
// points are found at the attempts' own time scale: a 60 ms outage among
// requests every 3 ms is twenty failures in a row, whatever clock the
// timeline is otherwise kept in.

// changePenalty is the least log-likelihood ratio (nats) a change point
// must gain among n attempts: ln(n/EpisodeAlpha). Twice the ratio of one
// change at a known place is χ² with one degree of freedom under no
// change, whose tail beyond 2β is below e^−β; a Bonferroni bound over
// the n places a change may be at gives a false change point with
// probability below EpisodeAlpha. It is the penalty per change point.
func changePenalty(n int) float64 {
	return math.Log(float64(n) / EpisodeAlpha)
}

// bernoulliLL is the maximum log-likelihood of k failures among n
// independent attempts at one failure probability (k/n).
func bernoulliLL(k, n int) float64 {
	if k == 0 || k == n {
		return 0
	}
	p := float64(k) / float64(n)
	return float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p)
}

// changeCandidate is the best single change point of one seeded interval
// [lo, hi) of attempts: at, and the log-likelihood it gains.
type changeCandidate struct {
	lo, hi, at int
	gain       float64
}

// changePoints returns, in order, the indices i (0 < i < len(failed))
// at which the failure probability of the sequence changes: every piece
// between two of them is homogeneous at the penalty changePenalty.
//
// The best single change point of a piece of a Bernoulli sequence lies
// where the outcome flips (moving it inside a run of equal outcomes
// changes the gain monotonically or not at all), so the intervals are
// seeded over the sequence's runs: interval widths halve from the whole
// sequence, each width's intervals overlapping by half, about twice the
// runs' count per width and log₂ of it widths, down to every two runs
// side by side. Each interval's best change point is found in one pass
// over its runs with prefix sums; of the intervals whose best gains more
// than the penalty, the narrowest is taken first, and an interval that
// straddles a change point already taken is passed over
// (narrowest-over-threshold: a short outage shows in a narrow interval
// before a wide one blurs it). Each piece between the change points
// taken is then searched again in the same way, as a whole sequence of
// its own, until none yields another: a change the seeded intervals
// only met together with a sharper one is found inside its piece. A
// round costs O(r log r) for r runs, at most twice the failures plus
// one; there are as many rounds as the pieces nest.
func changePoints(failed []bool) []int {
	n := len(failed)
	if n < 2 {
		return nil
	}
	cs := &changeSearch{cum: make([]int, n+1), rs: []int{0}, beta: changePenalty(n)}
	for i, f := range failed {
		cs.cum[i+1] = cs.cum[i]
		if f {
			cs.cum[i+1]++
		}
		if i > 0 && f != failed[i-1] {
			cs.rs = append(cs.rs, i)
		}
	}
	cs.rs = append(cs.rs, n)
	return cs.search(0, len(cs.rs)-1)
}

// changeSearch is changePoints' state: the prefix sums of the failures
// (cum[i]: failures among the first i attempts), where each run of equal
// outcomes starts (rs; rs[len(rs)-1] is the sequence's length) and the
// penalty per change point.
type changeSearch struct {
	cum, rs []int
	beta    float64
}

// ll is the maximum log-likelihood of the attempts [lo, hi).
func (cs *changeSearch) ll(lo, hi int) float64 {
	return bernoulliLL(cs.cum[hi]-cs.cum[lo], hi-lo)
}

// best is the best single change point of the runs [a, b), when it gains
// more than the penalty.
func (cs *changeSearch) best(a, b int) (changeCandidate, bool) {
	lo, hi := cs.rs[a], cs.rs[b]
	if b-a < 2 || float64(hi-lo)*math.Ln2 <= cs.beta {
		return changeCandidate{}, false // no split of so few attempts can gain the penalty
	}
	whole := cs.ll(lo, hi)
	c := changeCandidate{lo: lo, hi: hi, gain: math.Inf(-1)}
	for j := a + 1; j < b; j++ {
		if g := cs.ll(lo, cs.rs[j]) + cs.ll(cs.rs[j], hi) - whole; g > c.gain {
			c.at, c.gain = cs.rs[j], g
		}
	}
	return c, c.gain > cs.beta
}

// search returns the change points inside the runs [first, last), in
// order.
func (cs *changeSearch) search(first, last int) []int {
	runs := last - first
	if runs < 2 {
		return nil
	}
	var cands []changeCandidate
	try := func(a, b int) {
		if c, ok := cs.best(first+a, first+b); ok {
			cands = append(cands, c)
		}
	}
	for level := 0; ; level++ {
		width := float64(runs) / math.Pow(2, float64(level))
		if width < 3 {
			break
		}
		count := 1<<(level+1) - 1
		shift := 0.0
		if count > 1 {
			shift = (float64(runs) - width) / float64(count-1)
		}
		for i := range count {
			try(int(math.Floor(float64(i)*shift)), min(runs, int(math.Ceil(float64(i)*shift+width))))
		}
	}
	// The narrowest intervals: every two runs side by side, so that each
	// flip of the outcome is tested on its own.
	for a := 0; a+2 <= runs; a++ {
		try(a, a+2)
	}
	slices.SortFunc(cands, func(x, y changeCandidate) int {
		return cmp.Or(cmp.Compare(x.hi-x.lo, y.hi-y.lo), cmp.Compare(x.lo, y.lo), cmp.Compare(x.at, y.at))
	})
	var taken []int // sorted
	for _, c := range cands {
		// Is a change point already taken strictly inside (lo, hi)?
		k := sort.SearchInts(taken, c.lo+1)
		if k < len(taken) && taken[k] < c.hi {
			continue
		}
		taken = slices.Insert(taken, sort.SearchInts(taken, c.at), c.at)
	}
	if len(taken) == 0 {
		return nil
	}
	// Search each piece between them again, as a sequence of its own.
	var out []int
	from := first
	for i := 0; i <= len(taken); i++ {
		to := last
		if i < len(taken) {
			to = sort.SearchInts(cs.rs, taken[i]) // taken points start runs
		}
		out = append(out, cs.search(from, to)...)
		if i < len(taken) {
			out = append(out, taken[i])
		}
		from = to
	}
	return out
}

// episodeSpan is one episode's span of time [start, end) (ns from the
// first root request).
type episodeSpan struct {
	start, end int64
}

// episodeSpans cuts the first attempts (their start times, sorted, and
// whether each failed retryably) at their change points and returns the
// pieces whose failures stand out from the rest of the edge's first
// attempts (episodeTest), with their time spans. The rest is the pieces
// that are no episode: a piece that passes the test against every other
// piece is an episode, and the others are tested again without it, until
// none passes (a second outage is not the baseline a first one is held
// to).
//
// Where an episode begins and ends is read from every attempt, the
// retries' too (rs, sorted, and rFailed): the callee's state at an
// instant shows in any attempt that reached it then. The end lies after
// the piece's last failed first attempt and after the retries that failed
// after it before any attempt succeeded, and before the next first attempt
// or that successful retry, whichever came first: the episode ends halfway
// between the two, the most the data can say (the change fell somewhere
// between them). The beginning mirrors it: after the first attempt before
// the piece, or the latest retry that succeeded after it, and before the
// earliest of the failed retries that came between that success and the
// piece's first attempt. Where first attempts thin out while the callee
// fails (a breaker open, callers backing off), only retries still show
// that it failed: read from first attempts alone, the episodes of
// breaker-concurrent and breaker-instances ended 2–13 ms before their
// outages did. At either end of the edge's timeline the bound beyond the
// last attempt is half the piece's mean gap between first attempts.
func episodeSpans(at []int64, failed []bool, rs []int64, rFailed []bool) []episodeSpan {
	cps := changePoints(failed)
	if len(cps) == 0 {
		return nil
	}
	n := len(failed)
	bounds := append(append([]int{0}, cps...), n)
	type piece struct {
		k, n    int
		episode bool
	}
	pieces := make([]piece, len(bounds)-1)
	restK, restN := 0, n
	for i := range pieces {
		p := &pieces[i]
		p.n = bounds[i+1] - bounds[i]
		for _, f := range failed[bounds[i]:bounds[i+1]] {
			if f {
				p.k++
			}
		}
		restK += p.k
	}
	for found := true; found; {
		found = false
		for i := range pieces {
			p := &pieces[i]
			if !p.episode && episodeTest(p.k, p.n, restK-p.k, restN-p.n) {
				p.episode, found = true, true
				restK, restN = restK-p.k, restN-p.n
			}
		}
	}
	var out []episodeSpan
	for i, p := range pieces {
		if !p.episode {
			continue
		}
		from, to := bounds[i], bounds[i+1]
		halfGap := int64(0)
		if to-from > 1 {
			halfGap = (at[to-1] - at[from]) / int64(to-from-1) / 2
		}
		// The end: from the last failure on through the retries that
		// failed before anything succeeded.
		last, next := at[to-1], int64(math.MaxInt64)
		if to < n {
			next = at[to]
		}
		for i, _ := slices.BinarySearch(rs, last); i < len(rs) && rs[i] < next; i++ {
			if !rFailed[i] {
				next = rs[i]
				break
			}
			last = rs[i]
		}
		// The beginning: back from the first failure through the retries
		// that failed since the latest success.
		first, prev := at[from], int64(math.MinInt64)
		if from > 0 {
			prev = at[from-1]
		}
		for i, _ := slices.BinarySearch(rs, first); i > 0 && rs[i-1] > prev; i-- {
			if !rFailed[i-1] {
				prev = rs[i-1]
				break
			}
			first = rs[i-1]
		}
		e := episodeSpan{start: max(first-halfGap, 0), end: last + halfGap}
		if prev != math.MinInt64 {
			e.start = prev + (first-prev)/2
		}
		if next != math.MaxInt64 {
			e.end = last + (next-last)/2
		}
		if e.end <= e.start {
			e.end = e.start + 1 // attempts at one instant: a span of a nanosecond
		}
		out = append(out, e)
	}
	return out
}

// splitByRetries cuts each episode where the outcomes of the retries that
// started in it change (changePoints on them alone, in order of start,
// at the penalty for their number), halfway between the retries on
// either side: the first attempts of an episode fail alike, but its
// retries may not (a request's retry succeeds early in an outage and
// fails later on), and a replay drawing them from one mix would spread
// the calls that fail for good evenly over the episode, where a breaker
// trips on them coming together. rs are the retries' starts, sorted,
// and whether each failed retryably.
func splitByRetries(eps []episodeSpan, rs []int64, failed []bool) []episodeSpan {
	var out []episodeSpan
	for _, e := range eps {
		lo, _ := slices.BinarySearch(rs, e.start)
		hi, _ := slices.BinarySearch(rs, e.end)
		start := e.start
		for _, c := range changePoints(failed[lo:hi]) {
			cut := rs[lo+c-1] + (rs[lo+c]-rs[lo+c-1])/2
			if cut > start && cut < e.end {
				out = append(out, episodeSpan{start, cut})
				start = cut
			}
		}
		out = append(out, episodeSpan{start, e.end})
	}
	return out
}

// episodeTest returns whether k failures among n first attempts are an
// episode beside kRest among nRest for the rest of the edge: at least
// half of them failed, and more than three binomial deviations and one
// attempt beyond the rest's failure share.
func episodeTest(k, n, kRest, nRest int) bool {
	if n < 2 || nRest == 0 {
		return false
	}
	h := float64(kRest) / float64(nRest)
	fn, fk := float64(n), float64(k)
	return fk >= 0.5*fn && fk > fn*h+3*math.Sqrt(fn*h*(1-h))+1
}

// episodeAt returns the index of the episode whose span holds t, -1 for
// none; eps are sorted and do not overlap.
func episodeAt(eps []episodeSpan, t int64) int {
	i := sort.Search(len(eps), func(i int) bool { return eps[i].end > t })
	if i < len(eps) && eps[i].start <= t {
		return i
	}
	return -1
}
