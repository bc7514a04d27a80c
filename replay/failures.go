package replay

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/retryaudit/retryaudit/graph"
)

// Mix is how attempts end when the callee's own calls succeeded: the
// probabilities of a retryable failure (Throttled of them a 429 or
// RESOURCE_EXHAUSTED, NoAnswer of them a request the callee sent no
// answer to, both of which a policy's GiveUp tells apart), of one that
// carries Retry-After, and of a client error (a 4xx callers do not retry).
// The rest succeed.
type Mix struct {
	Fail, Throttled, RetryAfter, ClientError float64
	NoAnswer                                 float64
}

// Failures is the failure model of an edge (or of a root operation): the
// callee's own outcomes, for first attempts apart from retries (a retry of
// a failed request fails far more often than a first try: a bad shard, a
// poisoned key), the failure episodes of the traces' timeline, and how
// often a failure of the callee's own calls fails the attempt.
type Failures struct {
	// First is for first attempts of requests that have not failed on
	// the edge yet, FirstAfterFailure for those of requests that have
	// (failures stick to requests across calls); Retry for retries, and
	// RetryBy[i] for attempt i+2 where the traces show it.
	First, FirstAfterFailure, Retry Mix
	// FirstAfterOtherFailure is for first attempts of requests that have
	// failed on another edge (but not this one).
	FirstAfterOtherFailure Mix
	RetryBy                []Mix
	// RetryAfterFailureBy is RetryBy for calls whose request had failed
	// on the edge in an earlier call.
	RetryAfterFailureBy []Mix
	// FirstAfterEdgeFailure is for first attempts of calls made while
	// the latest call of another request to end on the edge had failed
	// (failures in runs), and RetryAfterEdgeFailureBy[i] for their
	// attempt i+2; a request that failed itself, on the edge or on
	// another, draws from the mixes above first.
	FirstAfterEdgeFailure   Mix
	RetryAfterEdgeFailureBy []Mix
	// Runs are the traces' calls after a failed and after a successful
	// call; RunsP the chance of as many failures after failures if calls
	// failed independently (see runsP); Drawn: the calls after a failure
	// draw from their own mixes (false: those mixes are not used). RunsUnknown: the runs are beyond chance
	// but never seen to end, so they are drawn as the other calls.
	Runs struct {
		graph.Runs
		Drawn bool
	}
	RunsP       float64
	RunsUnknown bool
	// Slow draws which tries the callee is still working on when the
	// caller gives up (nil: the traces show none, or no per-try timeout
	// to place them by).
	Slow *SlowTries
	// RetryAfterDownstream is for retries of an attempt that failed
	// because one of the callee's own calls failed.
	RetryAfterDownstream Mix
	// Propagate is the probability that a failed downstream call makes the
	// attempt fail (1 without a fallback).
	Propagate float64
	// RetryAfter is the Retry-After the callee sends (seconds).
	RetryAfter float64
	// Incidents are the traces' failure episodes, sorted by start: when
	// the observed degradation is replayed, an attempt that starts inside
	// one draws from its mix and from no other (no runs on top).
	Incidents []Episode
}

// Episode is a span of the traces' failure timeline (seconds from the
// first root request, End excluded) and how the first attempts and the
// retries that started in it ended.
type Episode struct {
	Start, End   float64
	First, Retry Mix
}

// episodeAt returns the episode of eps (sorted, not overlapping) whose
// span holds t, nil for none.
func episodeAt(eps []Episode, t float64) *Episode {
	i, _ := slices.BinarySearchFunc(eps, t, func(e Episode, t float64) int {
		if e.End <= t {
			return -1
		}
		return 1
	})
	if i < len(eps) && eps[i].Start <= t {
		return &eps[i]
	}
	return nil
}

// outcome is how the callee answers an attempt.
type outcome uint8

const (
	outOK outcome = iota
	outFail
	outRetryAfter
	outClientError
	outThrottled // a failure that is a 429 or RESOURCE_EXHAUSTED
	outNoAnswer  // a failure without an answer (a transport error)
)

func (m Mix) draw(u float64) outcome {
	switch {
	case u < m.Throttled:
		return outThrottled
	case u < m.Throttled+m.NoAnswer:
		return outNoAnswer
	case u < m.Fail:
		return outFail
	case u < m.Fail+m.RetryAfter:
		return outRetryAfter
	case u < m.Fail+m.RetryAfter+m.ClientError:
		return outClientError
	}
	return outOK
}

// draw picks the callee's own outcome of attempt number n that started at
// t on the failure timeline (seconds, -1: no timeline); after: the request has failed on the edge before;
// other: else, on another edge; run: else (and for a retry, not after),
// the latest call of another request to end on the edge had failed when
// the call began; afterDown: the previous attempt failed because of the callee's
// calls.
func (f *Failures) draw(n int16, after, other, run, afterDown bool, t float64, rng *rand.Rand) outcome {
	if t >= 0 && len(f.Incidents) > 0 {
		if ep := episodeAt(f.Incidents, t); ep != nil {
			if n > 1 {
				return ep.Retry.draw(rng.Float64())
			}
			return ep.First.draw(rng.Float64())
		}
	}
	var mix Mix
	run = run && f.Runs.Drawn
	switch {
	case n > 1 && afterDown:
		mix = f.RetryAfterDownstream
	case n > 1 && after && int(n)-2 < len(f.RetryAfterFailureBy):
		mix = f.RetryAfterFailureBy[n-2]
	case n > 1 && !after && run && int(n)-2 < len(f.RetryAfterEdgeFailureBy):
		mix = f.RetryAfterEdgeFailureBy[n-2]
	case n > 1 && int(n)-2 < len(f.RetryBy):
		mix = f.RetryBy[n-2]
	case n > 1:
		mix = f.Retry
	case after:
		mix = f.FirstAfterFailure
	case other:
		mix = f.FirstAfterOtherFailure
	case run:
		mix = f.FirstAfterEdgeFailure
	default:
		mix = f.First
	}
	return mix.draw(rng.Float64())
}

// mixOf turns counted outcomes into a Mix. With no attempts counted it
// returns fallback.
func mixOf(m graph.OutcomeMix, fallback Mix) Mix {
	n := float64(m.Total())
	if n == 0 {
		return fallback
	}
	ra := float64(m.RetryAfter)
	return Mix{Fail: float64(m.Failed()-m.RetryAfter-m.ClientError) / n, Throttled: float64(m.Throttled) / n, NoAnswer: float64(m.Transport) / n, RetryAfter: ra / n,
		ClientError: float64(m.ClientError) / n}
}

// RunsAlpha is the significance below which an edge's failures count as
// coming in runs: the one-sided tail of three standard deviations of a
// normal, the bar incidents clear too.
const RunsAlpha = 0.00135

// runsP is the probability that, if a call's outcome did not depend on
// how the edge's latest call had ended, the calls after a failed call
// would fail at least as often as the traces show: Fisher's exact test of
// the 2×2 table of calls (after a failure, after a success) × (failed,
// not), one-sided, the upper tail of the hypergeometric distribution of
// the failures among the calls after a failure given how many calls
// failed in all. It conditions on the edge's failures rather than taking
// their share as known, which a binomial tail at the pooled rate does
// while the rate counts the very failures tested (conservative: on
// 11 of 14 after a failure and 3 of 17 after a success it gives 0.012,
// the exact test 0.00098). 1 when no call followed a failure.
func runsP(r graph.Runs) float64 {
	n, k := r.AfterFailure.Calls, r.AfterFailure.Failed
	return graph.HypergeometricTail(n+r.AfterSuccess.Calls, k+r.AfterSuccess.Failed, n, k)
}

// binomialTail is P(X ≥ k) for X ~ Binomial(n, p); 1 when k is 0 or p is
// 1 or more.
func binomialTail(n, k int, p float64) float64 {
	if n == 0 || k == 0 || p >= 1 {
		return 1
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	tail := 0.0
	for i := k; i <= n; i++ {
		tail += math.Exp(lg(n) - lg(i) - lg(n-i) + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return min(tail, 1)
}

// SlowTries is an edge's model of slow tries, those the callee is still
// working on when the caller gives up (graph.SlowTries counts them). Each
// try that reaches the callee is drawn slow or not: a first try with
// probability First, a retry by its attempt number (By; a retry follows a
// failed try, so By against First is how much likelier a failed request
// is to be slow again), and, where the traces show tries after a slow try
// slow more often than the other retries beyond chance (ByPrevious), by
// whether the try before it was slow (AfterSlowBy) or failed otherwise
// (AfterFailureBy). A slow try's callee works at least Timeout, drawn from
// its work on the tries its callers gave up on (SlowTime); any other
// try's from its work on the others (Time), so that a try is slow as
// often as the traces show, not as often as a slow time comes out of the
// callee's pooled times.
type SlowTries struct {
	Counts graph.SlowTries
	First  float64
	// Retry is the share of slow tries among every retry; By[i],
	// AfterSlowBy[i] and AfterFailureBy[i] are for attempt i+2, each
	// falling back to the coarser share where the traces show no try.
	Retry                           float64
	By, AfterSlowBy, AfterFailureBy []float64
	// P is the chance, if a retry's slowness did not depend on the try
	// before it, of as many slow tries after slow ones (the binomial upper
	// tail at Retry); ByPrevious: P below RunsAlpha. Unknown: too few tries
	// followed a slow one (AfterSlow of them) for even all of them slow to
	// clear RunsAlpha, so the traces cannot tell; retries are then drawn by
	// attempt number alone, as where P is not below it.
	P                   float64
	AfterSlow           int
	ByPrevious, Unknown bool
	// Timeout is the caller's per-try timeout in the traces (seconds).
	Timeout float64
	// SlowTime and Time are the callee's work on slow tries and on the
	// others (nil: its pooled work times, a slow try's at least Timeout).
	SlowTime, Time Dist
}

// slowTriesOf builds the slow-try model from the traces' counts (its
// Timeout and Level are the topology's to set).
func slowTriesOf(c graph.SlowTries) *SlowTries {
	rate := func(t graph.TryCount, fallback float64) float64 {
		if t.Tries == 0 {
			return fallback
		}
		return float64(t.Slow) / float64(t.Tries)
	}
	sum := func(cs []graph.TryCount) graph.TryCount {
		var t graph.TryCount
		for _, c := range cs {
			t.Tries += c.Tries
			t.Slow += c.Slow
		}
		return t
	}
	sl := &SlowTries{Counts: c, First: rate(c.First, 0)}
	afterSlow := sum(c.AfterSlowByAttempt)
	retries := sum(append(slices.Clone(c.AfterSlowByAttempt), c.AfterFailureByAttempt...))
	sl.Retry = rate(retries, sl.First)
	for i := range c.AfterSlowByAttempt {
		var fail graph.TryCount
		if i < len(c.AfterFailureByAttempt) {
			fail = c.AfterFailureByAttempt[i]
		}
		by := rate(sum([]graph.TryCount{c.AfterSlowByAttempt[i], fail}), sl.Retry)
		sl.By = append(sl.By, by)
		sl.AfterSlowBy = append(sl.AfterSlowBy, rate(c.AfterSlowByAttempt[i], by))
		sl.AfterFailureBy = append(sl.AfterFailureBy, rate(fail, by))
	}
	sl.AfterSlow = afterSlow.Tries
	sl.Unknown = afterSlow.Tries == 0 || math.Pow(sl.Retry, float64(afterSlow.Tries)) >= RunsAlpha
	sl.P = binomialTail(afterSlow.Tries, afterSlow.Slow, sl.Retry)
	sl.ByPrevious = !sl.Unknown && sl.P < RunsAlpha
	return sl
}

// prob is the chance that try n (1: the first) is slow, the try before
// it slow or not (afterSlow).
func (sl *SlowTries) prob(n int16, afterSlow bool) float64 {
	i := int(n) - 2
	switch {
	case n <= 1:
		return sl.First
	case i >= len(sl.By):
		return sl.Retry
	case sl.ByPrevious && afterSlow:
		return sl.AfterSlowBy[i]
	case sl.ByPrevious:
		return sl.AfterFailureBy[i]
	}
	return sl.By[i]
}

// work draws the callee's work time for a try, slow or not, from d: from
// SlowTime if slow (at least Timeout), else from Time; either in place
// of the callee's pooled work times d where the traces did not split
// them.
func (sl *SlowTries) work(d Dist, slow bool, rng *rand.Rand) float64 {
	if !slow {
		return sample(cmp.Or[Dist](sl.Time, d), rng)
	}
	return max(sample(cmp.Or[Dist](sl.SlowTime, d), rng), sl.Timeout)
}

// minus is a's counts less b's, each at least 0.
func minus(a, b graph.OutcomeMix) graph.OutcomeMix {
	return graph.OutcomeMix{OK: max(a.OK-b.OK, 0), ServerError: max(a.ServerError-b.ServerError, 0),
		Throttled: max(a.Throttled-b.Throttled, 0), RetryAfter: max(a.RetryAfter-b.RetryAfter, 0),
		ClientError: max(a.ClientError-b.ClientError, 0), Timeout: max(a.Timeout-b.Timeout, 0),
		Transport: max(a.Transport-b.Transport, 0)}
}

// failuresOf builds the failure model of an edge from what the traces
// show, nil when they show nothing (a topology written without outcomes).
//
// failFast is the share of the callee operation's own failures that come
// before it calls anything. A first attempt that failed because one of
// the callee's calls failed got past those, so the first attempts' share
// of own failures is of the attempts whose outcome was the callee's own
// plus failFast of those (exact where every own failure comes before the
// calls, as where none does). Retries are not scaled so: an attempt that
// failed downstream is mostly a retry after another downstream failure,
// which draws from RetryAfterDownstream, and the traces do not split the
// retries that failed downstream by what came before them.
func failuresOf(o *graph.Outcomes, failFast float64) *Failures {
	if o == nil {
		return nil
	}
	f := &Failures{Propagate: 1, RetryAfter: o.RetryAfterMS / 1000}
	f.Runs.Runs = o.Runs
	all := mixOf(o.First, Mix{})
	// Runs of failures the traces never see end (no attempt after a
	// failed call succeeded) give no rate at which they end, and a replay
	// drawing them would never leave one: such calls draw as the others,
	// and the notes say the runs are unknown.
	runsEnd := o.FirstAfterEdgeFailure.OK > 0
	for _, m := range o.RetryAfterEdgeFailureByAttempt {
		runsEnd = runsEnd || m.OK > 0
	}
	// Calls are drawn by the latest other request's outcome only where
	// the traces show runs beyond chance: elsewhere the few calls after
	// a failure would only add their noise, and how often a call follows
	// another request's failure depends on how requests interleave, which
	// the replay's arrivals do not copy.
	f.RunsP = runsP(o.Runs)
	runs := runsEnd && f.RunsP < RunsAlpha
	first := minus(minus(o.First, o.FirstAfterFailure), o.FirstAfterOtherFailure)
	if runs {
		first = minus(first, o.FirstAfterEdgeFailure)
	}
	f.First = mixOf(first, all)
	if n := first.Total(); n > 0 && failFast > 0 {
		sc := float64(n) / (float64(n) + failFast*float64(o.FirstDownstreamFailed))
		f.First = Mix{Fail: f.First.Fail * sc, Throttled: f.First.Throttled * sc, NoAnswer: f.First.NoAnswer * sc, RetryAfter: f.First.RetryAfter * sc, ClientError: f.First.ClientError * sc}
	}
	f.FirstAfterFailure = mixOf(o.FirstAfterFailure, all)
	f.FirstAfterOtherFailure = mixOf(o.FirstAfterOtherFailure, all)
	f.RunsUnknown = !runsEnd && f.RunsP < RunsAlpha
	f.Runs.Drawn = runs
	f.FirstAfterEdgeFailure = f.First
	if runs {
		f.FirstAfterEdgeFailure = mixOf(o.FirstAfterEdgeFailure, all)
	}
	// Retries never seen outside incidents fail as first attempts do.
	f.Retry = mixOf(o.Retry, all)
	for i, m := range o.RetryByAttempt {
		var tainted, run graph.OutcomeMix
		if i < len(o.RetryAfterFailureByAttempt) {
			tainted = o.RetryAfterFailureByAttempt[i]
		}
		if i < len(o.RetryAfterEdgeFailureByAttempt) && runs {
			run = o.RetryAfterEdgeFailureByAttempt[i]
		}
		pooled := mixOf(m, f.Retry)
		f.RetryBy = append(f.RetryBy, mixOf(minus(minus(m, tainted), run), pooled))
		f.RetryAfterFailureBy = append(f.RetryAfterFailureBy, mixOf(tainted, pooled))
		f.RetryAfterEdgeFailureBy = append(f.RetryAfterEdgeFailureBy, mixOf(run, f.RetryBy[i]))
	}
	f.RetryAfterDownstream = mixOf(o.RetryAfterDownstream, all)
	if o.SlowTries != nil {
		f.Slow = slowTriesOf(*o.SlowTries)
	}
	if o.DownstreamFailed > 0 {
		f.Propagate = float64(o.Propagated) / float64(o.DownstreamFailed)
	}
	for _, inc := range o.Incidents {
		first := mixOf(inc.First, f.First)
		f.Incidents = append(f.Incidents, Episode{Start: inc.StartMS / 1000, End: inc.EndMS / 1000, First: first, Retry: mixOf(inc.Retry, first)})
	}
	slices.SortStableFunc(f.Incidents, func(a, b Episode) int { return cmp.Compare(a.Start, b.Start) })
	return f
}

// timelineAt is where simulated time t falls on the traces' failure
// timeline (repeated every TimelinePeriod), -1 when the run does not
// replay it.
func (s *sim) timelineAt(t float64) float64 {
	if !s.observed {
		return -1
	}
	if p := s.m.TimelinePeriod; p > 0 {
		t = math.Mod(t, p)
	}
	return t
}

// ownOutcome decides how job ji's attempt ends once its work and calls are
// done: a failed call fails it with the edge's propagation probability;
// otherwise the callee's own outcome is drawn from the failure model.
func (s *sim) ownOutcome(ji int32) (outcome, float64) {
	j := &s.jobs[ji]
	f := s.fails[j.fail]
	if j.failed {
		if f != nil && f.Propagate < 1 && s.rngOutcome.Float64() >= f.Propagate {
			return outOK, 0
		}
		if j.clientErr {
			return outClientError, 0
		}
		return outFail, 0
	}
	if j.drawn {
		return j.own, j.ownRA
	}
	return s.drawOwn(j)
}

// drawOwn draws job j's own outcome from its failure model, with the
// Retry-After that comes with it.
func (s *sim) drawOwn(j *job) (outcome, float64) {
	f := s.fails[j.fail]
	if f == nil {
		return outOK, 0
	}
	o := f.draw(j.attemptNo, j.afterFailure, j.afterOther, j.afterRun, j.afterDown, s.timelineAt(j.start), s.rngOutcome)
	if o == outRetryAfter {
		return o, f.RetryAfter
	}
	return o, 0
}

// rootOf returns the root request call c serves, with its generation.
func (s *sim) rootOf(ci int32) (int32, int32) {
	c := &s.calls[ci]
	if c.job < 0 {
		return ci, c.gen
	}
	if j := &s.jobs[c.job]; j.gen == c.jobGen {
		return j.root, j.rootGen
	}
	return -1, 0
}

// taint records that the request call ci serves has failed on its edge.
func (s *sim) taint(ci int32) {
	e := s.calls[ci].edge
	if r, gen := s.rootOf(ci); r >= 0 && s.calls[r].gen == gen && e >= 0 && !slices.Contains(s.calls[r].failedEdges, e) {
		s.calls[r].failedEdges = append(s.calls[r].failedEdges, e)
	}
}

// tainted reports whether the request call ci serves has failed on the
// same edge before (same), or else on another edge (other).
func (s *sim) tainted(ci int32) (same, other bool) {
	r, gen := s.rootOf(ci)
	if r < 0 || s.calls[r].gen != gen {
		return false, false
	}
	failed := s.calls[r].failedEdges
	same = slices.Contains(failed, s.calls[ci].edge)
	return same, !same && len(failed) > 0
}

// edgeRun is how an edge's latest calls to end had ended: the latest
// one's request and outcome, and the outcome of the latest one of any
// other request, so that a call can be told how the latest call of
// another request than its own had ended.
type edgeRun struct {
	root, rootGen int32
	seen, failed  bool
	// otherSeen, otherFailed: the latest call of another request than
	// root's.
	otherSeen, otherFailed bool
}

// ended records that a call of root request r (generation gen) ended on
// the edge, failed or not.
func (e *edgeRun) ended(r, gen int32, failed bool) {
	if !e.seen || r != e.root || gen != e.rootGen {
		e.otherSeen, e.otherFailed = e.seen, e.failed
	}
	e.root, e.rootGen, e.seen, e.failed = r, gen, true, failed
}

// failedFor reports whether the latest call of another request than r's
// to end on the edge had failed.
func (e *edgeRun) failedFor(r, gen int32) bool {
	if e.seen && (r != e.root || gen != e.rootGen) {
		return e.failed
	}
	return e.otherSeen && e.otherFailed
}
