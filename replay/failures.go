package replay

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/retryaudit/retryaudit/graph"
)

// Mix is how attempts end when the callee's own calls succeeded: the
// probabilities of a retryable failure, of one that carries Retry-After,
// and of a client error (a 4xx callers do not retry). The rest succeed.
type Mix struct {
	Fail, RetryAfter, ClientError float64
}

// Failures is the failure model of an edge (or of a root operation): the
// callee's own outcomes, for first attempts apart from retries (a retry of
// a failed request fails far more often than a first try: a bad shard, a
// poisoned key), the incidents of the traces' timeline by time bucket, and
// how often a failure of the callee's own calls fails the attempt.
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
	// RetryAfterDownstream is for retries of an attempt that failed
	// because one of the callee's own calls failed.
	RetryAfterDownstream Mix
	// Propagate is the probability that a failed downstream call makes the
	// attempt fail (1 without a fallback).
	Propagate float64
	// RetryAfter is the Retry-After the callee sends (seconds).
	RetryAfter float64
	// Incidents replace First and Retry in their time buckets (see
	// Model.Bucket) when the observed degradation is replayed.
	Incidents map[int][2]Mix
}

// outcome is how the callee answers an attempt.
type outcome uint8

const (
	outOK outcome = iota
	outFail
	outRetryAfter
	outClientError
)

func (m Mix) draw(u float64) outcome {
	switch {
	case u < m.Fail:
		return outFail
	case u < m.Fail+m.RetryAfter:
		return outRetryAfter
	case u < m.Fail+m.RetryAfter+m.ClientError:
		return outClientError
	}
	return outOK
}

// draw picks the callee's own outcome of attempt number n in time bucket
// b (-1: no timeline); after: the request has failed on the edge before;
// other: else, on another edge; run: else (and for a retry, not after),
// the latest call of another request to end on the edge had failed when
// the call began; afterDown: the previous attempt failed because of the callee's
// calls.
func (f *Failures) draw(n int16, after, other, run, afterDown bool, b int, rng *rand.Rand) outcome {
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
	if b >= 0 { // no map lookup for a run that does not replay the timeline
		if inc, ok := f.Incidents[b]; ok {
			mix = inc[0]
			if n > 1 {
				mix = inc[1]
			}
		}
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
	return Mix{Fail: float64(m.Failed()-m.RetryAfter-m.ClientError) / n, RetryAfter: ra / n, ClientError: float64(m.ClientError) / n}
}

// RunsAlpha is the significance below which an edge's failures count as
// coming in runs: the one-sided tail of three standard deviations of a
// normal, the bar incidents clear too.
const RunsAlpha = 0.00135

// runsP is the probability that, if every call failed independently at
// the edge's overall rate, the calls after a failed call would fail at
// least as often as the traces show: the binomial upper tail
// P(X ≥ failed | calls, rate). 1 when no call followed a failure.
func runsP(r graph.Runs) float64 {
	n, k := r.AfterFailure.Calls, r.AfterFailure.Failed
	total := n + r.AfterSuccess.Calls
	if n == 0 || k == 0 || total == 0 {
		return 1
	}
	p := float64(k+r.AfterSuccess.Failed) / float64(total)
	if p >= 1 {
		return 1
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	tail := 0.0
	for i := k; i <= n; i++ {
		tail += math.Exp(lg(n) - lg(i) - lg(n-i) + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return min(tail, 1)
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
func failuresOf(o *graph.Outcomes) *Failures {
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
	if o.DownstreamFailed > 0 {
		f.Propagate = float64(o.Propagated) / float64(o.DownstreamFailed)
	}
	for _, inc := range o.Incidents {
		if f.Incidents == nil {
			f.Incidents = map[int][2]Mix{}
		}
		first := mixOf(inc.First, f.First)
		f.Incidents[inc.Bucket] = [2]Mix{first, mixOf(inc.Retry, first)}
	}
	return f
}

// bucket is the timeline bucket of simulated time t, -1 when the model
// has no timeline or the run does not replay it.
func (s *sim) bucket(t float64) int {
	if !s.observed || s.m.Bucket <= 0 {
		return -1
	}
	if p := s.m.TimelinePeriod; p > 0 {
		t = math.Mod(t, p)
	}
	return int(t / s.m.Bucket)
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
	o := f.draw(j.attemptNo, j.afterFailure, j.afterOther, j.afterRun, j.afterDown, s.bucket(j.start), s.rngOutcome)
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
