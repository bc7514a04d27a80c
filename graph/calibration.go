package graph

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/retryaudit/retryaudit/ingest"
)

// legacyBucketS is the width of the time buckets in which versions before
// failure episodes kept the traces' failure timeline (Calibration.BucketS,
// Incident.Bucket): ReadTopology reads their topologies' incidents as
// spans of that width.
const legacyBucketS = 0.5

// Calibration is what the traces say about the system as it ran, beyond its
// retry policies: the figures a replay must reproduce (root outcomes and
// latency), and the inputs it needs to do so (the arrival window, the
// head-sampling probability, how many requests each service held at once).
type Calibration struct {
	// ArrivalWindowS spans the root requests' start times, plus one mean
	// gap between them, so that roots / window is their rate.
	ArrivalWindowS float64 `json:"arrival_window_s"`
	// RootRatePerS is the root requests per second over the arrival
	// window, before any scaling for sampling.
	RootRatePerS float64 `json:"root_rate_per_s"`
	// Arrivals is when the root requests of the arrival window came, and
	// to which root operation; nil with fewer than two, or when some are
	// no root operation of the topology (see arrivalTimeline).
	Arrivals *ArrivalTimeline `json:"arrivals,omitempty"`
	// ClientRoots are the root operations that are calls of a client with
	// no span around them (root CLIENT spans: a load generator, a script,
	// a client app): each call is a root request, its attempts (those
	// joined from other traces too) the request's, its latency from the
	// first attempt's start to the last one's end, its outcome the last
	// one's. A replay sends them to the client's operation, which makes
	// the call with no work of its own. Omitted when there are none.
	ClientRoots []ClientRoot `json:"client_roots,omitempty"`
	// BucketS is read from topologies written before failure episodes
	// (the width of their incidents' time buckets) and never written:
	// ReadTopology turns those incidents into spans of time.
	BucketS  float64   `json:"bucket_s,omitempty"`
	Sampling Sampling  `json:"sampling"`
	Root     RootStats `json:"root"`
	// InFlight is each service's mean number of requests in flight by
	// Little's law: the sum of its span durations over the arrival window.
	InFlight []ServiceLoad `json:"in_flight"`
}

// ClientRoot is one root operation whose root requests are a client's
// calls: the client's service and operation (the edge's caller and
// caller operation) and how many root requests it made.
type ClientRoot struct {
	Service   string `json:"service"`
	Operation string `json:"operation"`
	Requests  int    `json:"requests"`
}

// clientRoots lists the root operations of roots that are client calls,
// sorted; nil when there are none.
func clientRoots(roots map[node]*rootOp) []ClientRoot {
	var out []ClientRoot
	for _, n := range sortedNodes(roots) {
		if o := roots[n]; o.client && !o.server {
			out = append(out, ClientRoot{Service: n.svc, Operation: n.op, Requests: len(o.reqs)})
		}
	}
	return out
}

// Sampling is the head-sampling probability the rates are scaled by.
type Sampling struct {
	// Probability is the effective share of traces kept (1: all).
	Probability float64 `json:"probability"`
	// Source says where it came from: "jaeger probabilistic", "tracestate
	// th", "--sample-rate", "none seen", or a mix of those.
	Source string `json:"source"`
	// LowerBound is true when no root said how it was sampled: the rates
	// are then lower bounds, exact only if every trace was kept.
	LowerBound bool `json:"lower_bound"`
	// Roots is how many roots carried a probability.
	Roots int `json:"roots"`
}

// RootStats are the root requests' outcomes and latency as traced. A 4xx is
// the client's error, not a loss of availability: server errors are 5xx
// and error statuses.
type RootStats struct {
	Requests        int     `json:"requests"`
	SuccessRate     float64 `json:"success_rate"`
	ServerErrorRate float64 `json:"server_error_rate"`
	P50MS           float64 `json:"p50_ms"`
	P90MS           float64 `json:"p90_ms"`
	P99MS           float64 `json:"p99_ms"`
	// P50BandMS and P90BandMS are how precisely the traces know the p50
	// and p90: their distribution-free one-sigma (68.27%) confidence
	// intervals, from the
	// order statistics at the binomial ranks (quantileBand). Narrow for
	// many roots or a smooth distribution; wide when the percentile falls
	// in a gap between clusters (fast successes, slow retried requests).
	P50BandMS [2]float64 `json:"p50_band_ms"`
	P90BandMS [2]float64 `json:"p90_band_ms"`
}

// ServiceLoad is one service's concurrency: the mean by Little's law, and
// the most requests it was seen holding at once (it has at least that many
// request slots, since it served them).
type ServiceLoad struct {
	Service      string  `json:"service"`
	InFlight     float64 `json:"in_flight"`
	PeakInFlight int     `json:"peak_in_flight"`
}

// Outcomes is an edge's failure model: how its attempts ended when the
// callee's own downstream calls succeeded (the callee's own outcome),
// first attempts apart from retries, outside and inside incidents, and
// how often a failure below the callee made the attempt fail.
type Outcomes struct {
	First OutcomeMix `json:"first"`
	Retry OutcomeMix `json:"retry"`
	// FirstAfterFailure are the first attempts (counted in First too) of
	// calls whose request had already failed on this edge (an earlier call
	// of the same trace, from a caller retried above): failures stick to
	// requests across calls, not only across one call's retries.
	FirstAfterFailure OutcomeMix `json:"first_after_failure"`
	// FirstAfterOtherFailure are the other first attempts (counted in
	// First too) of requests that had already failed on another edge:
	// failures at different dependencies may come together, or exclude
	// each other.
	FirstAfterOtherFailure OutcomeMix `json:"first_after_other_failure"`
	// RetryByAttempt splits Retry by attempt: [0] second attempts, [1]
	// third… The later a retry, the likelier its request fails for good.
	RetryByAttempt []OutcomeMix `json:"retry_by_attempt"`
	// RetryAfterFailureByAttempt is the part of RetryByAttempt in calls
	// whose request had already failed on this edge in an earlier call: a
	// request that keeps failing is likelier to fail again.
	RetryAfterFailureByAttempt []OutcomeMix `json:"retry_after_failure_by_attempt"`
	// FirstAfterEdgeFailure are the other first attempts (counted in
	// First too, not in FirstAfterFailure or FirstAfterOtherFailure) of calls
	// made while the latest call of another request to end on the edge
	// had failed: failures that come in runs (a dependency bad for a while)
	// rather than one attempt at a time.
	FirstAfterEdgeFailure OutcomeMix `json:"first_after_edge_failure"`
	// RetryAfterEdgeFailureByAttempt is the part of RetryByAttempt in
	// such calls (and not in RetryAfterFailureByAttempt).
	RetryAfterEdgeFailureByAttempt []OutcomeMix `json:"retry_after_edge_failure_by_attempt"`
	// Runs count the edge's calls by how the edge's latest call to end
	// before each began had ended, and how many of them failed in turn:
	// the conditional failure rates that show failures in runs.
	Runs Runs `json:"runs"`
	// SlowTries are the tries the callee was still working on when the
	// caller gave up on them (counted in none of the mixes above), by
	// what came before them in their call; nil when the edge has none.
	SlowTries *SlowTries `json:"slow_tries,omitempty"`
	// RetryAfterDownstream are the retries (counted in Retry, not in
	// RetryByAttempt) whose previous attempt failed because a call the
	// callee made failed: the callee's own failure is no likelier then.
	RetryAfterDownstream OutcomeMix `json:"retry_after_downstream"`
	// DownstreamFailed counts attempts during which one of the callee's
	// own calls failed; Propagated how many of them failed in turn (the
	// rest were absorbed by a fallback).
	DownstreamFailed int `json:"downstream_failed"`
	Propagated       int `json:"propagated"`
	// FirstDownstreamFailed is how many of DownstreamFailed were first
	// attempts of requests that had not failed before, outside the
	// incidents: they got past whatever the callee fails on before it
	// calls anything, so they count towards the first attempts (First
	// less FirstAfterFailure and FirstAfterOtherFailure) those failures
	// are a share of.
	FirstDownstreamFailed int `json:"first_downstream_failed,omitempty"`
	// GivenUp lists, on an edge whose caller retries, every status its
	// calls failed with, where some call ended failing with attempts left
	// (fewer attempts than the most the edge made): how often the caller
	// retried a failure with that status and how often it gave the call
	// up instead. Nil when no call was given up so.
	GivenUp []StatusRetries `json:"given_up,omitempty"`
	// RetryAfterMS is the mean Retry-After the callee sent with failures.
	RetryAfterMS float64 `json:"retry_after_ms"`
	// Incidents are the edge's failure episodes: the spans of time (from
	// the first root request) whose first attempts failed well beyond the
	// rest, found where the first attempts' failure rate changes
	// (episodeSpans): the traces' own failure timeline, at its own time
	// scale. Every mix above and Runs exclude the attempts (and calls)
	// that started inside them.
	Incidents []Incident `json:"incidents"`
}

// Runs count an edge's calls outside its failure episodes after a failed
// call and after a successful one (by the latest call of another request
// to end on the edge before each began, in an episode or not), with how
// many of each failed: P(fail | previous failed) far above P(fail |
// previous succeeded) means failures come in runs.
type Runs struct {
	AfterFailure CallCount `json:"after_failure"`
	AfterSuccess CallCount `json:"after_success"`
}

// SlowTries count an edge's tries by what came before them in their call,
// and how many of each were slow: the callee had not answered when the
// caller gave up on the try (it failed without an answer, or timed out
// when the attempt that caused the caller's work ended: a deadline the
// caller's own caller propagated, gRPC's grpc-timeout) and its span
// lasted longer than the caller's or ended after it (it was still at
// work). A request that is slow
// is often slow on every try (a slow key, a poison request): tries after
// a slow try far likelier slow than tries after another failure show it.
// Only tries to an instrumented callee count: elsewhere no span shows
// whether it was still at work.
type SlowTries struct {
	First TryCount `json:"first"`
	// AfterSlowByAttempt[0] counts second tries after a slow first try,
	// [1] third tries after a slow second…; AfterFailureByAttempt the
	// tries after a try that failed otherwise (or was not seen at the
	// callee).
	AfterSlowByAttempt    []TryCount `json:"after_slow_by_attempt"`
	AfterFailureByAttempt []TryCount `json:"after_failure_by_attempt"`
}

// TryCount is a number of tries and how many of them were slow.
type TryCount struct {
	Tries int `json:"tries"`
	Slow  int `json:"slow"`
}

// count adds one try at index k (0: a first try) after a slow try
// (afterSlow) or not.
func (st *SlowTries) count(k int, afterSlow, slow bool) {
	c := &st.First
	if k > 0 {
		by := &st.AfterFailureByAttempt
		if afterSlow {
			by = &st.AfterSlowByAttempt
		}
		for len(st.AfterSlowByAttempt) < k {
			st.AfterSlowByAttempt = append(st.AfterSlowByAttempt, TryCount{})
			st.AfterFailureByAttempt = append(st.AfterFailureByAttempt, TryCount{})
		}
		c = &(*by)[k-1]
	}
	c.Tries++
	if slow {
		c.Slow++
	}
}

// merge adds o's counts to st.
func (st *SlowTries) merge(o *SlowTries) {
	for len(st.AfterSlowByAttempt) < len(o.AfterSlowByAttempt) {
		st.AfterSlowByAttempt = append(st.AfterSlowByAttempt, TryCount{})
		st.AfterFailureByAttempt = append(st.AfterFailureByAttempt, TryCount{})
	}
	add := func(to *TryCount, c TryCount) { to.Tries += c.Tries; to.Slow += c.Slow }
	add(&st.First, o.First)
	for k := range o.AfterSlowByAttempt {
		add(&st.AfterSlowByAttempt[k], o.AfterSlowByAttempt[k])
		add(&st.AfterFailureByAttempt[k], o.AfterFailureByAttempt[k])
	}
}

// StatusRetries is how a caller went on after attempts that failed with
// one status (of one outcome class): it retried Retried of them, and
// GivenUp calls ended failing with it although they had attempts left.
// StopAsked counts the given-up answers that told the caller not to retry
// (a negative grpc-retry-pushback-ms, gRFC A6); Reason says why the caller
// gave up where a span shows it, and "unknown" otherwise.
type StatusRetries struct {
	Status    string `json:"status"`
	Class     string `json:"class"`
	Retried   int    `json:"retried"`
	GivenUp   int    `json:"given_up"`
	StopAsked int    `json:"stop_asked,omitempty"`
	Reason    string `json:"reason"`
	// Unknown: attempts of the edge ran in other requests' contexts
	// (context leaks), so a call may have made more attempts than it
	// shows: the traces cannot tell a call given up from one whose later
	// attempts are elsewhere.
	Unknown bool `json:"unknown,omitempty"`
}

// GiveUpShare is the share of the failures of the classes named (OutcomeMix
// field names: server_error, throttled, retry_after, timeout, transport)
// with attempts left that the caller gave up on, with how many it gave up
// on of how many such failures; 0 of 0 when the traces show none, or
// cannot tell (Unknown).
func GiveUpShare(rs []StatusRetries, classes ...string) (share float64, given, failures int) {
	for _, r := range rs {
		if slices.Contains(classes, r.Class) && !r.Unknown {
			given += r.GivenUp
			failures += r.Retried + r.GivenUp
		}
	}
	if failures == 0 {
		return 0, 0, 0
	}
	return float64(given) / float64(failures), given, failures
}

// statusClass is a status and the outcome class an attempt that failed
// with it falls in.
type statusClass struct {
	status label
	class  mixClass
}

// statusRetries counts, for one status and class, the failed attempts a
// call went on from (retried) and, by the attempts of the call, the calls
// that ended on it (ended[n-1]: after n attempts), stop of them with an
// answer that asked not to be retried.
type statusRetries struct {
	retried int
	ended   []int
	stop    []int
}

func (r *statusRetries) merge(o *statusRetries) {
	r.retried += o.retried
	for len(r.ended) < len(o.ended) {
		r.ended = append(r.ended, 0)
		r.stop = append(r.stop, 0)
	}
	for i := range o.ended {
		r.ended[i] += o.ended[i]
		r.stop[i] += o.stop[i]
	}
}

// givenUp is the statuses' counts where calls ended with attempts left
// (fewer than most), sorted by status and class; nil when none did.
// leaked: how many of the edge's attempts ran in other requests' contexts.
func givenUp(decisions map[statusClass]*statusRetries, most, leaked int) []StatusRetries {
	var out []StatusRetries
	anyGivenUp := false
	for sc, r := range decisions {
		sr := StatusRetries{Status: sc.status.String(), Class: sc.class.String(), Retried: r.retried, Reason: "unknown: no span says why"}
		for n := 1; n < most && n <= len(r.ended); n++ {
			sr.GivenUp += r.ended[n-1]
			sr.StopAsked += r.stop[n-1]
		}
		switch {
		case sr.GivenUp == 0:
			sr.Reason = ""
		case leaked > 0:
			sr.Unknown = true
			sr.Reason = fmt.Sprintf("unknown: %d of the edge's attempts ran in other requests' contexts (context leaks), so these calls may have made more attempts than they show", leaked)
		case sr.StopAsked == sr.GivenUp:
			sr.Reason = "the answers asked not to retry (grpc-retry-pushback-ms < 0)"
		case sr.StopAsked > 0:
			sr.Reason = fmt.Sprintf("%d of the answers asked not to retry (grpc-retry-pushback-ms < 0); for the others no span says why", sr.StopAsked)
		}
		anyGivenUp = anyGivenUp || sr.GivenUp > 0
		out = append(out, sr)
	}
	if !anyGivenUp {
		return nil
	}
	slices.SortFunc(out, func(a, b StatusRetries) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), cmp.Compare(a.Class, b.Class))
	})
	return out
}

// CallCount is a number of calls and how many of them failed.
type CallCount struct {
	Calls  int `json:"calls"`
	Failed int `json:"failed"`
}

// Incident is one failure episode of an edge: from StartMS to EndMS
// (milliseconds from the first root request; the end excluded), the
// outcomes of the first attempts and of the retries that started in it.
type Incident struct {
	StartMS float64 `json:"start_ms"`
	EndMS   float64 `json:"end_ms"`
	// Bucket is read from topologies written before failure episodes (the
	// incident's time bucket, Calibration.BucketS wide) and never written.
	Bucket *int       `json:"bucket,omitempty"`
	First  OutcomeMix `json:"first"`
	Retry  OutcomeMix `json:"retry"`
}

// OutcomeMix counts attempts by how they ended.
type OutcomeMix struct {
	OK          int `json:"ok"`
	ServerError int `json:"server_error"` // 5xx, a retryable gRPC status, an error status
	Throttled   int `json:"throttled"`    // 429 or RESOURCE_EXHAUSTED without Retry-After
	RetryAfter  int `json:"retry_after"`  // a failure that carried Retry-After (429, 503)
	ClientError int `json:"client_error"` // a 4xx or gRPC status that callers do not retry
	Timeout     int `json:"timeout"`
	Transport   int `json:"transport"` // reset, refused: failed without an answer
}

// Total is the number of attempts counted.
func (m OutcomeMix) Total() int {
	return m.OK + m.Failed()
}

// Failed is the number of attempts that failed.
func (m OutcomeMix) Failed() int {
	return m.ServerError + m.Throttled + m.RetryAfter + m.ClientError + m.Timeout + m.Transport
}

// mixClass is the OutcomeMix field an attempt counts in.
type mixClass uint8

const (
	classOK mixClass = iota
	classServerError
	classThrottled
	classRetryAfter
	classClientError
	classTimeout
	classTransport
)

// String is the class's JSON field name in OutcomeMix.
func (c mixClass) String() string {
	return [...]string{"ok", "server_error", "throttled", "retry_after", "client_error", "timeout", "transport"}[c]
}

// classOf is the class attempt a counts in.
func classOf(a *attempt) mixClass {
	switch {
	case a.status == grpcLabel(1): // CANCELLED: the client gave up, nothing answered
		return classTimeout
	case a.outcome == outcomeClientError:
		return classClientError
	case a.outcome == outcomeResult:
		// Answered, but not to its caller's liking: retried as a
		// failure is, and so replayed (extra work for the callee).
		return classServerError
	case !a.outcome.failed():
		return classOK
	case a.retryAfter >= 0:
		return classRetryAfter
	case a.status == httpLabel(429) || a.status == grpcLabel(8): // RESOURCE_EXHAUSTED
		return classThrottled
	case a.status == labelTimeout || a.status == httpLabel(408) || a.status == grpcLabel(4): // DEADLINE_EXCEEDED
		return classTimeout
	case a.transport:
		return classTransport
	}
	return classServerError
}

func (m *OutcomeMix) add(a *attempt) { m.addClass(classOf(a)) }

// addClass counts one attempt of class c.
func (m *OutcomeMix) addClass(c mixClass) {
	*[...]*int{&m.OK, &m.ServerError, &m.Throttled, &m.RetryAfter, &m.ClientError, &m.Timeout, &m.Transport}[c]++
}

// merge adds o's counts to m.
func (m *OutcomeMix) merge(o OutcomeMix) {
	m.OK += o.OK
	m.ServerError += o.ServerError
	m.Throttled += o.Throttled
	m.RetryAfter += o.RetryAfter
	m.ClientError += o.ClientError
	m.Timeout += o.Timeout
	m.Transport += o.Transport
}

// calibrate adds the calibration statistics to t: every edge's outcome mix
// and timeline, work-only self times, the roots' outcomes and latency,
// concurrency by Little's law and the sampling probability.
func calibrate(ix *index, ecs []*edgeCalls, roots map[node]*rootOp, t *Topology) {
	starts := rootStarts(roots)
	cal := &Calibration{InFlight: []ServiceLoad{}}
	t0, hi, window, strays := arrivalWindow(starts)
	ix.strayRoots = strays
	cal.ArrivalWindowS = round3(window)
	if window > 0 {
		cal.RootRatePerS = round3(float64(len(starts)-strays) / window)
		cal.Arrivals = arrivalTimeline(roots, t0, hi, MaxTimelineArrivals)
	}
	cal.Sampling = sampling(ix)
	cal.Root = rootStats(roots)
	cal.ClientRoots = clientRoots(roots)

	// Per span: a call made while serving it failed; it made calls.
	type serving struct{ downFailed, calling spanSet }
	sv := mapShards(ix, func(s sel) serving {
		sv := serving{newSpanSet(len(ix.spans)), newSpanSet(len(ix.spans))}
		for _, ec := range ecs {
			for _, c := range ec.calls {
				if !s.has(c.from) {
					continue
				}
				srv := ix.serverOf(c.from)
				sv.calling.set(srv)
				if ix.last(c).outcome.failed() {
					sv.downFailed.set(srv)
				}
			}
		}
		return sv
	}, func(sum, p serving) { sum.downFailed.or(p.downFailed); sum.calling.or(p.calling) })
	downFailed, calling := sv.downFailed, sv.calling
	keys := edgeKeys(ecs)
	perEdge := mapShards(ix, func(s sel) *perEdge[map[ingest.TraceID]int64] {
		out := newPerEdge[map[ingest.TraceID]int64](keys, nil)
		for i, ec := range ecs {
			out.of[i] = firstFailures(ix, s, ec)
		}
		return out
	}, func(sum, p *perEdge[map[ingest.TraceID]int64]) { sum.merge(p, mergeEarliest) }).in(keys)
	anyFail := map[ingest.TraceID]int64{}
	for i := range ecs {
		for id, t := range perEdge[i] {
			earliest(anyFail, id, t)
		}
	}
	breakerFast := mapShards(ix, func(s sel) spanSet { return breakerFastFails(ix, s, calling, t) }, spanSet.or)
	for i, ec := range ecs {
		edgeOutcomes(ix, ec, &t.Edges[i], t0, downFailed, breakerFast, perEdge[i], anyFail)
	}
	userOutcomes(ix, downFailed, breakerFast, t)
	ownFailed := mapShards(ix, func(s sel) spanSet {
		own := newSpanSet(len(ix.spans))
		for i := range ix.spans {
			sp := &ix.spans[i]
			if ix.keep[i] && !downFailed.has(int32(i)) && !breakerFast.has(int32(i)) && (isServer(sp) || ix.parent[i] < 0) && s.has(int32(i)) {
				o, _ := classify(ix, int32(i), int32(i))
				if o.failed() {
					own.set(int32(i))
				}
			}
		}
		// An execution whose answer its caller retried on the result
		// (outcomeResult) failed as its caller sees it, and replay draws
		// it as a failure of the edge: its work and whether it called
		// anything are a failed execution's, or the replay would skip
		// the calls of those it draws failed on top of the ones the
		// traces already left out.
		markAttempts(ix, ecs, s, own, func(a *attempt, _ int32) bool {
			return a.outcome == outcomeResult && a.server >= 0 && !downFailed.has(a.server) && !breakerFast.has(a.server)
		})
		return own
	}, spanSet.or)
	// The executions whose caller gave up on them while they worked.
	slowServed := mapShards(ix, func(s sel) spanSet {
		slow := newSpanSet(len(ix.spans))
		markAttempts(ix, ecs, s, slow, ix.slowTry)
		return slow
	}, spanSet.or)
	workSelfTimes(ix, ecs, ownFailed, slowServed, t)
	ownFailures(ix, ownFailed, calling, t)
	countBreakerFast(ix, breakerFast, t)
	callOrder(ix, ecs, t)
	cal.InFlight = inFlight(ix, ecs, window)
	t.Calibration = cal
}

// edgeOutcomes measures one edge's failure model and transit times. Its
// map step (outcomesOf) reads the attempts of each shard's calls; the
// reduce finds the incident buckets, which need every attempt of the edge,
// and counts the attempts outside them.
func edgeOutcomes(ix *index, ec *edgeCalls, e *Edge, t0 int64, downFailed, breakerFast spanSet, firstFail, anyFail map[ingest.TraceID]int64) {
	prevFailed := previousCallFailed(ix, ec)
	mapShards(ix, func(s sel) *outcomeStats {
		return outcomesOf(ix, s, ec, t0, downFailed, breakerFast, firstFail, anyFail, prevFailed)
	}, (*outcomeStats).merge).reduce(e)
}

// reduce sets e's outcomes, waits and transit times from st, the merged
// partials of e's calls.
func (st *outcomeStats) reduce(e *Edge) {
	o := &Outcomes{Incidents: []Incident{}, RetryByAttempt: []OutcomeMix{}, RetryAfterFailureByAttempt: []OutcomeMix{},
		RetryAfterEdgeFailureByAttempt: []OutcomeMix{}, DownstreamFailed: st.downstreamFailed, Propagated: st.propagated}
	if st.slow.seen() {
		o.SlowTries = &st.slow
		// An edge without retries has slow first tries only: its lists
		// are empty, not null.
		if o.SlowTries.AfterSlowByAttempt == nil {
			o.SlowTries.AfterSlowByAttempt, o.SlowTries.AfterFailureByAttempt = []TryCount{}, []TryCount{}
		}
	}
	if st.raN > 0 {
		o.RetryAfterMS = round3(st.raSum / float64(st.raN))
	}
	if e.MaxAttempts > 1 {
		o.GivenUp = givenUp(st.decisions, e.MaxAttempts, e.LeakedAttempts)
	}
	// Episodes: where the first attempts' failure rate changes, the
	// pieces that failed far beyond the rest. The attempts are sorted by
	// start (ties by class, then what came before them), so the pieces do
	// not depend on the order the shards merged in.
	slices.SortFunc(st.recs, func(a, b outcomeRec) int {
		return cmp.Or(cmpInt64(a.at, b.at), cmp.Compare(a.k, b.k), cmp.Compare(a.class, b.class), cmp.Compare(a.flags(), b.flags()))
	})
	firsts := 0
	for _, r := range st.recs {
		if r.k == 0 {
			firsts++
		}
	}
	at, retryAt := make([]int64, 0, firsts), make([]int64, 0, len(st.recs)-firsts)
	failed, retryFailed := make([]bool, 0, firsts), make([]bool, 0, len(st.recs)-firsts)
	for _, r := range st.recs {
		f := r.class != classOK && r.class != classClientError
		if r.k == 0 {
			at, failed = append(at, r.at), append(failed, f)
		} else {
			retryAt, retryFailed = append(retryAt, r.at), append(retryFailed, f)
		}
	}
	eps := splitByRetries(episodeSpans(at, failed, retryAt, retryFailed), retryAt, retryFailed)
	for _, ep := range eps {
		o.Incidents = append(o.Incidents, Incident{StartMS: round3(float64(ep.start) / 1e6), EndMS: round3(float64(ep.end) / 1e6)})
	}
	for _, c := range st.calls {
		if episodeAt(eps, c.at) >= 0 || c.prev == 0 {
			continue
		}
		cc := &o.Runs.AfterSuccess
		if c.prev > 0 {
			cc = &o.Runs.AfterFailure
		}
		cc.Calls++
		if c.failed {
			cc.Failed++
		}
	}
	for _, r := range st.recs {
		if i := episodeAt(eps, r.at); i >= 0 {
			inc := &o.Incidents[i]
			if r.k == 0 {
				inc.First.addClass(r.class)
			} else {
				inc.Retry.addClass(r.class)
			}
			continue
		}
		switch {
		case r.k == 0:
			o.First.addClass(r.class)
			if r.other {
				o.FirstAfterOtherFailure.addClass(r.class)
			}
			if r.after {
				o.FirstAfterFailure.addClass(r.class)
			}
			if r.run {
				o.FirstAfterEdgeFailure.addClass(r.class)
			}
		case r.afterDown:
			o.Retry.addClass(r.class)
			o.RetryAfterDownstream.addClass(r.class)
		default:
			o.Retry.addClass(r.class)
			for len(o.RetryByAttempt) < r.k {
				o.RetryByAttempt = append(o.RetryByAttempt, OutcomeMix{})
				o.RetryAfterFailureByAttempt = append(o.RetryAfterFailureByAttempt, OutcomeMix{})
				o.RetryAfterEdgeFailureByAttempt = append(o.RetryAfterEdgeFailureByAttempt, OutcomeMix{})
			}
			o.RetryByAttempt[r.k-1].addClass(r.class)
			if r.after {
				o.RetryAfterFailureByAttempt[r.k-1].addClass(r.class)
			}
			if r.run {
				o.RetryAfterEdgeFailureByAttempt[r.k-1].addClass(r.class)
			}
		}
	}
	for _, t := range st.firstDown {
		if episodeAt(eps, t) < 0 {
			o.FirstDownstreamFailed++
		}
	}
	e.Outcomes = o
	for k := range st.waits {
		w := &st.waits[k]
		if w.n() == 0 {
			break // a gap in the indices: the waits after it would be misplaced
		}
		e.WaitQuantilesMS = append(e.WaitQuantilesMS, w.quantiles(WorkLevels))
		summarized(&e.Summarized, "waits_by_retry_"+strconv.Itoa(k+1), w.summary())
	}
	if st.transit.n() > 0 {
		e.TransitQuantilesMS = st.transit.quantiles(WorkLevels)
		summarized(&e.Summarized, "transit", st.transit.summary())
	}
	if rt := laterAttempts(&st.byKind[0], &st.byKind[1]); rt != nil {
		e.RetryTransit = rt
		if rt.Split {
			e.FirstTransitQuantilesMS = st.byKind[0].quantiles(WorkLevels)
			e.RetryTransitQuantilesMS = st.byKind[1].quantiles(WorkLevels)
			summarized(&e.Summarized, "first_transit", st.byKind[0].summary())
			summarized(&e.Summarized, "retry_transit", st.byKind[1].summary())
		}
	}
}

// outcomeRec is one attempt whose outcome is the callee's own, by value:
// its class, and what came before it.
type outcomeRec struct {
	class mixClass
	k     int   // its index in the call
	at    int64 // when it started, ns from the first root request (at least 0)
	after bool  // the request had failed on this edge before
	other bool  // else, it had failed on another edge before
	// run: else, the latest call of another request to end on the edge
	// before this call began had failed
	run bool
	// afterDown: the previous attempt failed because of the callee's calls
	afterDown bool
}

// flags packs what came before r into one byte (the wire form's, and a
// sort key).
func (r outcomeRec) flags() uint8 {
	var f uint8
	for i, b := range []bool{r.after, r.other, r.run, r.afterDown} {
		if b {
			f |= 1 << i
		}
	}
	return f
}

// callRec is one call of an edge for its Runs: when its first attempt
// started (ns from the first root request, at least 0), how the latest
// call of another request to end on the edge before it had ended (1
// failed, -1 succeeded, 0 none yet: previousCallFailed) and whether it
// failed.
type callRec struct {
	at     int64
	prev   int8
	failed bool
}

// outcomeStats is what the attempts of some of an edge's calls say of its
// failure model: the attempts whose outcome is the callee's own (recs),
// the calls with how the edge's previous call ended (calls), attempts during
// which the callee's own calls failed, the Retry-After sent with failures,
// transit times and the waits between attempts by index.
type outcomeStats struct {
	key                          edgeKey // the edge's
	recs                         []outcomeRec
	calls                        []callRec
	slow                         SlowTries
	downstreamFailed, propagated int
	// firstDown: when the first attempts, of requests not failed before,
	// that failed downstream started (ns from the first root request)
	firstDown []int64
	raSum     float64 // of whole milliseconds: exact in any order
	raN       int
	transit   dist
	// byKind: the transit times of first attempts and of later ones, of
	// the attempts with a client span of their own
	byKind [2]dist
	waits  []dist // by retry
	// decisions: how calls went on after failed attempts, by status
	decisions map[statusClass]*statusRetries
}

func (st *outcomeStats) merge(o *outcomeStats) {
	st.recs = append(st.recs, o.recs...)
	st.calls = append(st.calls, o.calls...)
	st.slow.merge(&o.slow)
	st.downstreamFailed += o.downstreamFailed
	st.firstDown = append(st.firstDown, o.firstDown...)
	st.propagated += o.propagated
	st.raSum += o.raSum
	st.raN += o.raN
	st.transit.merge(&o.transit)
	st.byKind[0].merge(&o.byKind[0])
	st.byKind[1].merge(&o.byKind[1])
	for sc, r := range o.decisions {
		if st.decisions[sc] == nil {
			st.decisions[sc] = &statusRetries{}
		}
		st.decisions[sc].merge(r)
	}
	for len(st.waits) < len(o.waits) {
		st.waits = append(st.waits, dist{})
	}
	for k := range o.waits {
		st.waits[k].merge(&o.waits[k])
	}
}

// outcomesOf is edgeOutcomes' map step, over the selected calls.
func outcomesOf(ix *index, s sel, ec *edgeCalls, t0 int64, downFailed, breakerFast spanSet, firstFail, anyFail map[ingest.TraceID]int64, prevFailed []int8) *outcomeStats {
	st := &outcomeStats{key: ec.key, decisions: map[statusClass]*statusRetries{}}
	n := 0
	for _, c := range ec.calls {
		n += len(ix.attemptsOf(c))
	}
	st.recs = make([]outcomeRec, 0, n)
	for ci, c := range ec.calls {
		if !s.has(c.from) {
			continue
		}
		as := ix.attemptsOf(c)
		if p := prevFailed[ci]; p != 0 {
			st.calls = append(st.calls, callRec{at: max(ix.arrival(&as[0])-t0, 0), prev: p, failed: ix.last(c).outcome.failed()})
		}
		if !c.hedged {
			st.countDecisions(as, len(as)+int(c.missing))
		}
		for k := range as {
			a := &as[k]
			// idx is the attempt's index as its outcome is counted: a
			// hedge followed no failure of its call, and counts as a first
			// attempt.
			idx := k
			if c.hedged && ix.sentConcurrently(as, k) {
				idx = 0
			}
			if a.retryAfter >= 0 && a.outcome.failed() {
				st.raSum += float64(a.retryAfter)
				st.raN++
			}
			slow := ix.slowTry(a, c.from)
			if a.server >= 0 && a.server != a.span && !a.synthetic {
				st.slow.count(k, k > 0 && ix.slowTry(&as[k-1], c.from), slow)
			}
			if slow {
				// The callee answered too late: its own time, which replay
				// draws, times the attempt out again (its per-try timeout,
				// or the caller's deadline it propagated). Counting the
				// timeout here as well would fail it twice.
				continue
			}
			switch {
			case a.server >= 0 && a.span != a.server:
				tr := float64(max(ix.spans[a.span].Duration()-ix.spans[a.server].Duration(), 0)) / 1e6
				st.transit.add(tr)
				st.byKind[min(k, 1)].add(tr)
			case a.server >= 0 && k == 0:
				// Attempts read from the callee's spans under one client
				// span have no transit of their own (their span is the
				// callee's): the call gives one, of its first request out
				// and the answer that ended it back.
				if tr, ok := ix.belowTransit(as); ok {
					st.transit.add(tr)
				}
			}
			if a.server >= 0 && breakerFast.has(a.server) {
				// The callee's breaker failed it fast; replay's breaker,
				// built from the same traces, does so itself.
				continue
			}
			id := ix.spans[a.span].TraceID
			ff, failed := firstFail[id]
			af, anyFailed := anyFail[id]
			// For a retry, a failure before its call began: an earlier call.
			after := failed && ff <= ix.spans[as[0].span].Start
			other := !after && anyFailed && af <= ix.spans[a.span].Start
			start := max(ix.arrival(a)-t0, 0)
			if a.server >= 0 && downFailed.has(a.server) {
				st.downstreamFailed++
				if k == 0 && !after && !other {
					st.firstDown = append(st.firstDown, start)
				}
				if a.outcome.failed() {
					st.propagated++
				}
				continue
			}
			afterDown := false
			if idx > 0 {
				p := &as[k-1]
				afterDown = p.server >= 0 && downFailed.has(p.server) && p.outcome.failed()
			}
			// (A retry's other is its own call's failure: no bar to run.)
			run := !after && (idx > 0 || !other) && prevFailed[ci] > 0
			st.recs = append(st.recs, outcomeRec{class: classOf(a), k: idx, at: start, after: after, run: run, other: other, afterDown: afterDown})
		}
		for k := 1; k < len(as); k++ {
			prev, next := &as[k-1], &as[k]
			if prev.synthetic || next.synthetic || prev.retryAfter >= 0 || prev.nth < 0 || next.nth != prev.nth+1 || ix.lateConcurrent(as, k) {
				continue // no wait known, or none: next was sent before prev's call was answered
			}
			for len(st.waits) < k {
				st.waits = append(st.waits, dist{})
			}
			from, to := ix.waitOf(prev, next)
			st.waits[k-1].add(float64(max(to-from, 0)) / 1e6)
		}
	}
	return st
}

// belowTransit is the transit time, in ms, of a call whose attempts (as)
// are its callee's spans under one client span (belowCall): from the
// client span's start to the first attempt's start, plus from the end of
// the attempt whose answer ended the call (the latest to end before the
// client span did) to the client span's end. That is one request's way
// out and one answer's way back, what a call of one attempt's transit
// holds; the time between attempts (waits, hedge delays) is left out.
// ok is false where no attempt ended within the client span (the callee's
// clock runs apart from the caller's) or the first began before it.
func (ix *index) belowTransit(as []attempt) (ms float64, ok bool) {
	cl := &ix.spans[as[0].req]
	first := &ix.spans[as[0].span]
	var last *ingest.Span
	for k := range as {
		sp := &ix.spans[as[k].span]
		if sp.End <= cl.End+overlapTolerance && (last == nil || sp.End > last.End) {
			last = sp
		}
	}
	if last == nil || first.Start+overlapTolerance < cl.Start {
		return 0, false
	}
	out := max(first.Start-cl.Start, 0)
	back := max(cl.End-last.End, 0)
	return float64(out+back) / 1e6, true
}

// arrival is when attempt a reached its callee, the instant the callee's
// state decided its outcome and the one replay reads the failure timeline
// at (a job's start): the callee's span's start where the callee is
// instrumented, never before the attempt was sent (clocks of two hosts
// can disagree), else the attempt's own start. Under load the two lie
// apart: a retry sent while every connection to a failing callee was busy
// reached it milliseconds later, after the callee had come back.
func (ix *index) arrival(a *attempt) int64 {
	at := ix.spans[a.span].Start
	if a.server >= 0 {
		at = max(at, ix.spans[a.server].Start)
	}
	return at
}

// countDecisions counts how a call of n attempts (as, and any not
// exported) went on after each failed attempt: retried, or ended on it. A
// client error is not retried by any caller, and a CANCELLED attempt is
// the caller's own context ending, not its choice: neither counts.
func (st *outcomeStats) countDecisions(as []attempt, n int) {
	for k := range as {
		a := &as[k]
		cl := classOf(a)
		if cl == classOK || cl == classClientError || a.status == grpcLabel(1) {
			continue
		}
		sc := statusClass{a.status, cl}
		r := st.decisions[sc]
		if r == nil {
			r = &statusRetries{}
			st.decisions[sc] = r
		}
		if k < len(as)-1 {
			r.retried++
			continue
		}
		for len(r.ended) < n {
			r.ended = append(r.ended, 0)
			r.stop = append(r.stop, 0)
		}
		r.ended[n-1]++
		if a.retryAfter == ingest.NoRetry {
			r.stop[n-1]++
		}
	}
}

// slowTry reports whether the callee was still at work on attempt a
// (made from span from) when its caller gave up: the attempt failed
// without an answer, or was cut by the deadline its caller's own caller
// propagated (a DEADLINE_EXCEEDED or CANCELLED that ended with the
// attempt that caused from's work: gRPC's grpc-timeout), and the callee's
// span lasted longer than the client's or ended after it (a callee host
// that starts serving late and ends its span when the client hangs up, as
// Node's http server does, is shorter but ends later).
func (ix *index) slowTry(a *attempt, from int32) bool {
	if a.server < 0 || !a.transport && !ix.deadlineCut(a, from) {
		return false
	}
	cl, sv := &ix.spans[a.span], &ix.spans[a.server]
	return cl.Duration() < sv.Duration() || a.server != a.span && sv.End > cl.End+overlapTolerance
}

// deadlineCut reports whether attempt a, made from span from, said it
// timed out or was cancelled when the attempt that caused from's work
// ended: its caller's deadline, propagated, cut it (endsWithCaller).
func (ix *index) deadlineCut(a *attempt, from int32) bool {
	return timedOut(a.status) && ix.endsWithCaller(from, ix.spans[a.span].End)
}

// seen reports whether any try was slow.
func (st *SlowTries) seen() bool {
	n := st.First.Slow
	for k := range st.AfterSlowByAttempt {
		n += st.AfterSlowByAttempt[k].Slow + st.AfterFailureByAttempt[k].Slow
	}
	return n > 0
}

// previousCallFailed says, per call of the edge, how the latest call of
// another request (trace) to end on the edge before it began had ended:
// 1 failed, -1 succeeded, 0 none had ended yet. A call ends with its
// last attempt to end (a hedge may outlast the attempt after it). The
// request's own earlier calls are its own stickiness (FirstAfterFailure),
// not the edge's.
func previousCallFailed(ix *index, ec *edgeCalls) []int8 {
	// The calls' ends cross traces: each shard lists its calls' (map), the
	// lists join and are sorted by time, ties in the edge's call order
	// whichever order the shards merged in (reduce).
	sorted := mapShards(ix, func(s sel) *callEndList { return endsOf(ix, s, ec) }, (*callEndList).merge).ends
	slices.SortFunc(sorted, func(a, b callEnd) int { return cmp.Or(cmpInt64(a.at, b.at), cmp.Compare(a.pos, b.pos)) })
	// runStart[j] is where the run of same-request calls that ends at
	// sorted[j] begins: skipping the request's own calls is one step, not
	// a walk back over each of them (one request calling an edge 100k
	// times in sequence made that quadratic).
	runStart := make([]int32, len(sorted))
	for j := 1; j < len(sorted); j++ {
		if sorted[j].trace == sorted[j-1].trace {
			runStart[j] = runStart[j-1]
		} else {
			runStart[j] = int32(j)
		}
	}
	out := make([]int8, len(ec.calls))
	for i, c := range ec.calls {
		// The last call to end strictly before this one began, of another
		// request.
		first := ix.attemptsOf(c)[0].span
		k, _ := slices.BinarySearchFunc(sorted, ix.spans[first].Start, func(e callEnd, t int64) int { return cmpInt64(e.at, t) })
		if k > 0 && sorted[k-1].trace == ix.spans[first].TraceID {
			k = int(runStart[k-1])
		}
		switch {
		case k == 0:
		case sorted[k-1].failed:
			out[i] = 1
		default:
			out[i] = -1
		}
	}
	return out
}

// callEnd is when a call ended, whether it failed and its trace, by
// value (32 bytes); pos is its place in the edge's calls, the order the
// reduce of the calls gave every map step (the input's span order), which
// orders calls that ended at the same instant.
type callEnd struct {
	at     int64
	trace  ingest.TraceID
	pos    int32
	failed bool
}

// callEndList is the ends of some of an edge's calls.
type callEndList struct {
	key  edgeKey
	ends []callEnd
}

// merge adds p's ends (of other calls of the edge) to l's.
func (l *callEndList) merge(p *callEndList) { l.ends = append(l.ends, p.ends...) }

// endsOf is previousCallFailed's map step: the ends of the selected calls.
func endsOf(ix *index, s sel, ec *edgeCalls) *callEndList {
	ends := make([]callEnd, 0, len(ec.calls))
	for i, c := range ec.calls {
		if !s.has(c.from) {
			continue
		}
		as := ix.attemptsOf(c)
		e := callEnd{at: ix.spans[as[0].span].End, trace: ix.spans[as[0].span].TraceID, pos: int32(i), failed: as[len(as)-1].outcome.failed()}
		for _, a := range as[1:] {
			e.at = max(e.at, ix.spans[a.span].End)
		}
		ends = append(ends, e)
	}
	return &callEndList{ec.key, ends}
}

// breakerFastFails marks the executions a circuit breaker failed fast: of
// an operation with a breaker on one of its calls, the failed executions
// that made no call at all. Replay's breaker, built from the same traces,
// fails those itself, so they are not the operation's own failures.
func breakerFastFails(ix *index, s sel, calling spanSet, t *Topology) spanSet {
	withBreaker := map[node]bool{}
	for _, e := range t.Edges {
		if e.Breaker != nil && e.Breaker.Detected {
			withBreaker[node{e.Caller, e.CallerOperation}] = true
		}
	}
	out := newSpanSet(len(ix.spans))
	if len(withBreaker) == 0 {
		return out
	}
	for i := range ix.spans {
		sp := &ix.spans[i]
		if !ix.keep[i] || !isServer(sp) || calling.has(int32(i)) || !s.has(int32(i)) || !withBreaker[node{ix.str(sp.Service), ix.opName(int32(i))}] {
			continue
		}
		if o, _ := classify(ix, int32(i), int32(i)); o.failed() {
			out.set(int32(i))
		}
	}
	return out
}

// countBreakerFast sets each operation's BreakerFastFails.
func countBreakerFast(ix *index, breakerFast spanSet, t *Topology) {
	n := mapShards(ix, func(s sel) map[node]int {
		n := map[node]int{}
		for i := range ix.spans {
			if breakerFast.has(int32(i)) && s.has(int32(i)) {
				n[node{ix.str(ix.spans[i].Service), ix.opName(int32(i))}]++
			}
		}
		return n
	}, addCounts[node])
	for si := range t.Services {
		s := &t.Services[si]
		for oi := range s.Operations {
			s.Operations[oi].BreakerFastFails = n[node{s.Name, s.Operations[oi].Name}]
		}
	}
}

// firstFailures returns, per selected trace, when the first failed
// attempt on the edge ended.
func firstFailures(ix *index, s sel, ec *edgeCalls) map[ingest.TraceID]int64 {
	out := map[ingest.TraceID]int64{}
	for _, c := range ec.calls {
		if !s.has(c.from) {
			continue
		}
		for _, a := range ix.attemptsOf(c) {
			// An answer retried on its result is a failure the replay
			// draws (classOf): what follows it in the trace follows a
			// failure there too.
			if a.outcome.retried() {
				earliest(out, ix.spans[a.span].TraceID, ix.spans[a.span].End)
			}
		}
	}
	return out
}

// mergeEarliest keeps in *sum, per trace, the earlier of its time and p's.
func mergeEarliest(sum *map[ingest.TraceID]int64, p map[ingest.TraceID]int64) {
	if *sum == nil {
		*sum = map[ingest.TraceID]int64{}
	}
	for id, t := range p {
		earliest(*sum, id, t)
	}
}

// earliest keeps in m the earlier of m[id] and t.
func earliest(m map[ingest.TraceID]int64, id ingest.TraceID, t int64) {
	if old, ok := m[id]; !ok || t < old {
		m[id] = t
	}
}

// spanSet marks spans by index, a bit each (a byte each would be 10 MB
// a set at 10M spans).
type spanSet []uint64

// markAttempts sets in set the callee span of every attempt, of the calls
// made from shard s's spans, that mark holds for (from: the calling span).
func markAttempts(ix *index, ecs []*edgeCalls, s sel, set spanSet, mark func(a *attempt, from int32) bool) {
	for _, ec := range ecs {
		for _, c := range ec.calls {
			if !s.has(c.from) {
				continue
			}
			as := ix.attemptsOf(c)
			for k := range as {
				if a := &as[k]; mark(a, c.from) {
					set.set(a.server)
				}
			}
		}
	}
}

func newSpanSet(n int) spanSet { return make(spanSet, (n+63)/64) }

func (s spanSet) has(i int32) bool { return s[i>>6]&(1<<(i&63)) != 0 }

func (s spanSet) set(i int32) { s[i>>6] |= 1 << (i & 63) }

// or adds o's spans to s.
func (s spanSet) or(o spanSet) {
	for i := range s {
		s[i] |= o[i]
	}
}

// rootStarts is when the root requests started (ns), in no particular
// order.
func rootStarts(roots map[node]*rootOp) []int64 {
	starts := make([]int64, 0, requests(roots))
	for _, o := range roots {
		for _, r := range o.reqs {
			starts = append(starts, r.start)
		}
	}
	return starts
}

// strayGap is the least gap that sets a root request apart from the
// others as a stray (arrivalWindow): a day.
const strayGap = 24 * 3600 * 1e9

// arrivalWindow returns, of the root requests' starts (which it sorts in
// place), the first and last kept and the window of root
// arrivals in seconds (0 when there are fewer than two roots or they all
// started within a millisecond), and how many roots it left out as strays.
// A stray is one of a few roots (at most 1% of them, at least one) that
// starts more than a day, and more than ten times the span of all the
// others, before or after the rest: a clock's error (a start of 0, a year
// off, microseconds read as nanoseconds), not traffic. Counted in, one
// such start stretches the window to years and turns the root rate into
// 0; traffic that really pauses for a day is more than 1% of the roots on
// either side and is kept.
func arrivalWindow(starts []int64) (lo, hi int64, window float64, strays int) {
	if len(starts) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(starts)
	a, b := 0, len(starts)-1 // the roots kept: starts[a..b]
	stray := func(gap, rest int64) bool { return float64(gap) > strayGap && float64(gap) > 10*float64(rest) }
	for limit := max(1, len(starts)/100); strays < limit && b-a >= 2; strays++ {
		low, high := starts[a+1]-starts[a], starts[b]-starts[b-1]
		lowStray, highStray := stray(low, starts[b]-starts[a+1]), stray(high, starts[b-1]-starts[a])
		switch {
		case lowStray && (!highStray || low >= high):
			a++
		case highStray:
			b--
		default:
			return kept(starts[a:b+1], strays)
		}
	}
	return kept(starts[a:b+1], strays)
}

// kept is arrivalWindow's answer for the sorted starts it kept.
func kept(starts []int64, strays int) (int64, int64, float64, int) {
	lo, hi := starts[0], starts[len(starts)-1]
	span := float64(hi-lo) / 1e9
	if len(starts) < 2 || span < 1e-3 {
		return lo, hi, 0, strays
	}
	return lo, hi, span + span/float64(len(starts)-1), strays
}

// sampling weighs every root by its own head-sampling probability: the
// probability is the roots' count over their weights' sum (a root of
// unknown probability weighs 1). Its map step counts the roots of each
// shard by probability; the reduce sums the weights in probability order,
// so no split of the traces changes the sum.
func sampling(ix *index) Sampling {
	return mapShards(ix, func(s sel) *headSampling { return samplingOf(ix, s) }, (*headSampling).merge).sampling()
}

// headSampling is sampling's partial: the roots of some traces counted by
// their head-sampling probability (0 for the roots whose probability is
// unknown), and where the probabilities were read or could not be.
type headSampling struct {
	byP     map[float64]int
	sources map[string]bool
}

// samplingOf is sampling's map step, over the selected root requests.
func samplingOf(ix *index, s sel) *headSampling {
	h := &headSampling{byP: map[float64]int{}, sources: map[string]bool{}}
	for i := range ix.spans {
		r := int32(i)
		if !ix.keep[i] || !ix.isRootRequest(r) || !s.has(r) {
			continue
		}
		smp := ix.set.Sampling(&ix.spans[r])
		switch p := smp.P; {
		case p > 0 && p <= 1:
			h.byP[p]++
			h.sources[smp.Source] = true
		default:
			h.byP[0]++
			if smp.Source != "" {
				h.sources[smp.Source+" (probability unknown)"] = true
			}
		}
	}
	return h
}

// merge adds o's roots (of other traces) to h.
func (h *headSampling) merge(o *headSampling) {
	addCounts(h.byP, o.byP)
	maps.Copy(h.sources, o.sources)
}

// sampling is the reduce: the probability of all the roots counted.
func (h *headSampling) sampling() Sampling {
	s := Sampling{Probability: 1, Source: "none seen", LowerBound: true}
	roots, inv := 0, 0.0
	for _, p := range slices.Sorted(maps.Keys(h.byP)) {
		n := h.byP[p]
		roots += n
		if p == 0 {
			inv += float64(n)
			continue
		}
		s.Roots += n
		inv += float64(n) / p
	}
	if len(h.sources) > 0 {
		s.Source = strings.Join(slices.Sorted(maps.Keys(h.sources)), " + ")
	}
	if s.Roots > 0 {
		s.Probability = round6(float64(roots) / inv)
		s.LowerBound = s.Roots < roots
	}
	return s
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// rootStats measures the root requests' outcomes and latency.
func rootStats(roots map[node]*rootOp) RootStats {
	st := RootStats{Requests: requests(roots)}
	if st.Requests == 0 {
		return st
	}
	d := make([]float64, 0, st.Requests)
	ok, server := 0, 0
	for _, o := range roots {
		for _, r := range o.reqs {
			d = append(d, float64(r.dur)/1e6)
			switch r.out {
			case outcomeRetryable:
				server++
			case outcomeClientError:
			default:
				ok++
			}
		}
	}
	slices.Sort(d)
	n := float64(len(d))
	st.SuccessRate, st.ServerErrorRate = round6(float64(ok)/n), round6(float64(server)/n)
	st.P50MS, st.P90MS, st.P99MS = round3(nearestRank(d, 0.5)), round3(nearestRank(d, 0.9)), round3(nearestRank(d, 0.99))
	band := func(p float64) [2]float64 {
		lo, hi := quantileBand(len(d), p, PercentileBandAlpha)
		return [2]float64{round3(d[lo-1]), round3(d[hi-1])}
	}
	st.P50BandMS, st.P90BandMS = band(0.5), band(0.9)
	return st
}

// PercentileBandAlpha is the chance a percentile band misses the true
// percentile: the bands are one-sigma (68.27%) confidence intervals, as
// precise as the traces know the percentile to one standard deviation,
// but exact for any distribution and any number of roots.
const PercentileBandAlpha = 0.3173

// quantileBand returns the ranks (1-based, in 1..n) of the order
// statistics that bound the distribution-free confidence interval of the
// p-quantile from n observations: with B ~ Binomial(n, p) the count of
// observations below the true quantile, the lower rank l is the largest
// with P(B < l) ≤ alpha/2 and the upper u the smallest with P(B ≥ u) ≤
// alpha/2, so [X(l), X(u)] covers it with probability ≥ 1-alpha whatever
// the distribution (clipped to the extremes for few observations).
func quantileBand(n int, p, alpha float64) (int, int) {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	lp, lq := math.Log(p), math.Log1p(-p)
	lo, hi := 1, n
	cdf := 0.0 // P(B ≤ i-1) before step i, P(B ≤ i) after
	found := false
	for i := 0; i <= n; i++ {
		below := cdf // P(B < i)
		cdf += math.Exp(lg(n) - lg(i) - lg(n-i) + float64(i)*lp + float64(n-i)*lq)
		if below <= alpha/2 {
			lo = max(i, 1)
		}
		if !found && 1-below <= alpha/2 {
			hi, found = min(max(i, 1), n), true
		}
	}
	return lo, max(hi, lo)
}

// userOutcomes gives every user edge the outcome mix of its root spans. A
// root whose call was failed fast by a circuit breaker (breakerFast) failed
// below it, as one whose call failed did: the replay's breaker fails that
// call, so the root's own mix must not count the failure again.
func userOutcomes(ix *index, downFailed, breakerFast spanSet, t *Topology) {
	var keys []edgeKey
	var at []int // the user edges' places in t.Edges
	for i := range t.Edges {
		if e := &t.Edges[i]; e.Caller == userCaller {
			keys = append(keys, edgeKey{e.Caller, e.CallerOperation, e.Callee, e.Operation})
			at = append(at, i)
		}
	}
	os := mapShards(ix, func(s sel) *perEdge[rootOutcomes] {
		p := newPerEdge[rootOutcomes](keys, nil)
		roots := ix.rootSpans(s)
		for j, k := range keys {
			o := &p.of[j]
			for _, r := range roots[node{k.callee, k.op}] {
				a := ix.newAttempt(r, r)
				if downFailed.has(r) || breakerFast.has(r) {
					o.downstreamFailed++
					if a.outcome.failed() {
						o.propagated++
					}
					continue
				}
				o.first.add(&a)
			}
		}
		return p
	}, func(sum, p *perEdge[rootOutcomes]) { sum.merge(p, (*rootOutcomes).merge) }).in(keys)
	for j, o := range os {
		// A root request is a first attempt.
		t.Edges[at[j]].Outcomes = &Outcomes{Incidents: []Incident{}, First: o.first,
			DownstreamFailed: o.downstreamFailed, FirstDownstreamFailed: o.downstreamFailed, Propagated: o.propagated}
	}
}

// rootOutcomes is what a user edge's root requests say of its failure
// model: those whose outcome is the callee's own (first), and those
// during which the callee's own calls failed.
type rootOutcomes struct {
	first                        OutcomeMix
	downstreamFailed, propagated int
}

func (o *rootOutcomes) merge(p rootOutcomes) {
	o.first.merge(p.first)
	o.downstreamFailed += p.downstreamFailed
	o.propagated += p.propagated
}

// ownFailures counts, per operation of the instrumented services, the
// executions that failed on their own and those of them that failed before
// making any call: a request the service rejects does not go on to call
// its dependencies, and a replay that made the calls anyway would take too
// long to fail and call too often when it succeeds.
func ownFailures(ix *index, ownFailed, calling spanSet, t *Topology) {
	byOp := mapShards(ix, func(s sel) map[node][2]int {
		byOp := map[node][2]int{} // own failures, of them without calls
		for i := range ix.spans {
			sp := &ix.spans[i]
			if !ownFailed.has(int32(i)) || !isServer(sp) || !s.has(int32(i)) {
				continue
			}
			n := node{ix.str(sp.Service), ix.opName(int32(i))}
			c := byOp[n]
			c[0]++
			if !calling.has(int32(i)) {
				c[1]++
			}
			byOp[n] = c
		}
		return byOp
	}, func(sum, p map[node][2]int) {
		for n, c := range p {
			sum[n] = [2]int{sum[n][0] + c[0], sum[n][1] + c[1]}
		}
	})
	for si := range t.Services {
		s := &t.Services[si]
		for oi := range s.Operations {
			op := &s.Operations[oi]
			if c, ok := byOp[node{s.Name, op.Name}]; ok {
				op.OwnFailures, op.FailedWithoutCalls = c[0], c[1]
			}
		}
	}
}

// callOrder measures, per operation, what follows a failed call: whether
// the execution stops there (most handlers return on the first error) or
// makes its other calls anyway; and per edge how many executions of the
// caller's operation could still make it (no earlier call had failed, or
// the operation goes on after failures) and when, after the execution
// starts, it is made.
func callOrder(ix *index, ecs []*edgeCalls, t *Topology) {
	keys := edgeKeys(ecs)
	o := mapShards(ix, func(s sel) *callOrders { return callOrderOf(ix, s, ecs, keys) }, (*callOrders).merge)
	for i, eo := range o.edges.in(keys) {
		e := &t.Edges[i]
		e.NotReached = o.failedRuns[node{ecs[i].key.caller, ecs[i].key.callerOp}] - eo.reached
		slices.Sort(eo.offsets)
		e.CallOffsetMS = round3(quantile(eo.offsets, 0.5))
	}
	for si := range t.Services {
		s := &t.Services[si]
		for oi := range s.Operations {
			op := &s.Operations[oi]
			n := node{s.Name, op.Name}
			op.StoppedAfterFailure, op.ContinuedAfterFailure = o.stopped[n], o.continued[n]
		}
	}
}

// callOrders is what callOrder counts: per caller operation its executions
// with a failed call (failedRuns), those that stopped at it and the calls
// made after one; per edge what edgeOrder counts.
type callOrders struct {
	failedRuns, stopped, continued map[node]int
	edges                          *perEdge[edgeOrder]
}

// edgeOrder is, of one edge, the failed executions that made it (reached)
// and when after the execution's start its calls were made (offsets, in
// no particular order).
type edgeOrder struct {
	reached int
	offsets []float64
}

func (o *callOrders) merge(p *callOrders) {
	addCounts(o.failedRuns, p.failedRuns)
	addCounts(o.stopped, p.stopped)
	addCounts(o.continued, p.continued)
	o.edges.merge(p.edges, (*edgeOrder).merge)
}

func (e *edgeOrder) merge(p edgeOrder) {
	e.reached += p.reached
	e.offsets = append(e.offsets, p.offsets...)
}

// callOrderOf is callOrder's map step, over the selected calls of ecs
// (whose keys are keys).
func callOrderOf(ix *index, s sel, ecs []*edgeCalls, keys []edgeKey) *callOrders {
	// 16 bytes a call; the sort compares server, start and edge, so the
	// order comes out the same whatever else is held.
	type made struct {
		start  int64
		server int32
		edge   int32 // << 1 | failed
	}
	total := 0
	for _, ec := range ecs {
		total += len(ec.calls)
	}
	all := make([]made, 0, total)
	o := &callOrders{failedRuns: map[node]int{}, stopped: map[node]int{}, continued: map[node]int{},
		edges: newPerEdge[edgeOrder](keys, nil)}
	for i, ec := range ecs {
		eo := &o.edges.of[i]
		eo.offsets = make([]float64, 0, len(ec.calls))
		for _, c := range ec.calls {
			if !s.has(c.from) {
				continue
			}
			srv := ix.serverOf(c.from)
			start := ix.spans[ix.attemptsOf(c)[0].span].Start
			edge := int32(i) << 1
			if ix.last(c).outcome.failed() {
				edge |= 1
			}
			all = append(all, made{start, srv, edge})
			eo.offsets = append(eo.offsets, float64(start-ix.spans[srv].Start)/1e6)
		}
	}
	slices.SortFunc(all, func(a, b made) int {
		if a.server != b.server {
			return int(a.server - b.server)
		}
		return cmp.Or(cmpInt64(a.start, b.start), int(a.edge-b.edge))
	})
	// An edge is not reached by an execution of its caller operation in
	// which some call failed and none went to the edge: counted as the
	// executions of the operation with a failure less those of them that
	// made the edge, so that an operation with many edges costs no more
	// per execution than the calls it made (testing every edge of the
	// operation in every execution was quadratic in the operations a
	// caller reaches, 29 s for 20,000 unique server operations).
	edgeNode := make([]node, len(ecs))
	for i, ec := range ecs {
		edgeNode[i] = node{ec.key.caller, ec.key.callerOp}
	}
	seen := make([]int, len(ecs)) // the last failed execution (numbered from 1) that counted the edge
	run := 0
	for lo := 0; lo < len(all); {
		hi := lo + 1
		for hi < len(all) && all[hi].server == all[lo].server {
			hi++
		}
		calls := all[lo:hi]
		lo = hi
		failed := false
		for _, c := range calls {
			if failed {
				o.continued[node{ix.str(ix.spans[c.server].Service), ix.opName(c.server)}]++
			}
			failed = failed || c.edge&1 != 0
		}
		if !failed {
			continue
		}
		n := node{ix.str(ix.spans[calls[0].server].Service), ix.opName(calls[0].server)}
		if calls[len(calls)-1].edge&1 != 0 {
			o.stopped[n]++
		}
		run++
		o.failedRuns[n]++
		for _, c := range calls {
			if e := c.edge >> 1; seen[e] != run && edgeNode[e] == n {
				seen[e] = run
				o.edges.of[e].reached++
			}
		}
	}
	return o
}

// workSelfTimes replaces each instrumented operation's self-time quantiles
// with the work it did itself: its span's duration minus the time covered
// by its children and minus the waits between the attempts of its calls
// (backoff and Retry-After sleeps), which hold a request but do no work.
func workSelfTimes(ix *index, ecs []*edgeCalls, ownFailed, slowServed spanSet, t *Topology) {
	instrumented := map[string]bool{}
	for _, s := range t.Services {
		instrumented[s.Name] = !s.Virtual
	}
	self := mapShards(ix, func(s sel) map[node]*workTimes { return workOf(ix, s, ecs, ownFailed, slowServed, instrumented) }, mergeWork)
	keys := edgeKeys(ecs)
	byKind := mapShards(ix, func(s sel) *perEdge[attemptWork] {
		return attemptWorkOf(ix, s, ecs, keys, ownFailed, slowServed, instrumented)
	}, func(sum, p *perEdge[attemptWork]) { sum.merge(p, mergeAttemptWork) }).in(keys)
	above := make([]float64, len(byKind))
	for i := range byKind {
		e, w := &t.Edges[i], &byKind[i]
		above[i] = math.NaN()
		pooled := w[0].clone()
		pooled.merge(&w[1])
		if pooled.n() > 0 {
			if a, ok := slowSplit(pooled.quantiles(WorkLevels)); ok {
				above[i] = a
			}
		}
		if la := laterAttempts(&w[0], &w[1]); la != nil {
			e.RetryWork = la
			if la.Split {
				e.FirstWorkQuantilesMS = w[0].quantiles(WorkLevels)
				e.RetryWorkQuantilesMS = w[1].quantiles(WorkLevels)
				summarized(&e.Summarized, "first_work", w[0].summary())
				summarized(&e.Summarized, "retry_work", w[1].summary())
			}
		}
	}
	pairs := mapShards(ix, func(s sel) *perEdge[workPairs] {
		return workPairsOf(ix, s, ecs, keys, above, ownFailed, slowServed, instrumented)
	}, func(sum, p *perEdge[workPairs]) { sum.merge(p, mergeWorkPairs) }).in(keys)
	for i := range pairs {
		if !math.IsNaN(above[i]) {
			t.Edges[i].WorkCorrelation = workCorrelation(above[i], &pairs[i], &byKind[i])
		}
	}
	for si := range t.Services {
		s := &t.Services[si]
		for oi := range s.Operations {
			op := &s.Operations[oi]
			x := self[node{s.Name, op.Name}]
			if x == nil {
				continue
			}
			all := x[0].clone()
			all.merge(&x[1])
			if !s.Virtual && all.n() > 0 {
				op.SelfQuantilesMS = all.quantiles(SelfQuantileLevels)
				summarized(&op.Summarized, "self_times", all.summary())
			}
			op.WorkQuantilesMS = op.work(&x[0], "work")
			op.FailedWorkQuantilesMS = op.work(&x[1], "failed_work")
			if x[2].n() > 0 {
				op.SlowWorkQuantilesMS = op.work(&x[2], "slow_work")
				op.AnsweredWorkQuantilesMS = op.work(&x[3], "answered_work")
			}
		}
	}
}

// workTimes are an operation's work times: of
// the executions that did not fail on their own ([0]), of those that did
// ([1]), of those whose caller gave up on them while they worked ([2]),
// and of the executions in [0] that are not in [2] ([3]).
type workTimes [4]dist

// mergeWork adds p's work times (of other executions) to sum's.
func mergeWork(sum, p map[node]*workTimes) {
	for n, x := range p {
		if y := sum[n]; y != nil {
			for k := range y {
				y[k].merge(&x[k])
			}
		} else {
			sum[n] = x
		}
	}
}

// workOf is workSelfTimes' map step: per operation, the work times of the
// selected executions.
func workOf(ix *index, s sel, ecs []*edgeCalls, ownFailed, slowServed spanSet, instrumented map[string]bool) map[node]*workTimes {
	waits := attemptWaits(ix, s, ecs)
	// A request refused or failing fast takes less work than one served,
	// and one its caller gave up on often more.
	self := map[node]*workTimes{}
	at := func(n node) *workTimes {
		if self[n] == nil {
			self[n] = &workTimes{}
		}
		return self[n]
	}
	for i := range ix.spans {
		sp := &ix.spans[i]
		if !ix.keep[i] || !isServer(sp) && ix.parent[i] >= 0 || !s.has(int32(i)) {
			continue
		}
		k := 0
		if ownFailed.has(int32(i)) && !slowServed.has(int32(i)) {
			// A failed execution its caller gave up on while it worked
			// (cut by a propagated deadline) is a slow one: its time is
			// not that of a failure of the callee's own.
			k = 1
		}
		x := at(node{ix.str(sp.Service), ix.opName(int32(i))})
		w := float64(workTime(ix, int32(i), waits[int32(i)])) / 1e6
		x[k].add(w)
		switch {
		case slowServed.has(int32(i)):
			x[2].add(w)
		case k == 0:
			x[3].add(w)
		}
	}
	for _, ec := range ecs {
		if instrumented[ec.key.callee] {
			continue
		}
		for _, c := range ec.calls {
			if !s.has(c.from) {
				continue
			}
			for _, a := range ix.attemptsOf(c) {
				k := 0
				if a.outcome.failed() {
					k = 1
				}
				x := at(node{ec.key.callee, ec.key.op})
				x[k].add(float64(ix.spans[a.span].Duration()) / 1e6)
			}
		}
	}
	return self
}

// attemptWork is one edge's callee work times: of the executions its
// first attempts reached ([0]) and of those its later attempts (retries
// and hedges) reached ([1]); of each, those workOf counts among the
// operation's work times ([0] of workTimes: not failed on their own).
type attemptWork [2]dist

// mergeAttemptWork adds p's work times (of other calls) to sum's.
func mergeAttemptWork(sum *attemptWork, p attemptWork) {
	sum[0].merge(&p[0])
	sum[1].merge(&p[1])
}

// attemptWorkOf is the map step of the edges' callee work by kind of
// attempt: the work of the executions the selected calls' attempts
// reached, each measured as workOf measures it (its span less its
// children and the waits between its own calls' attempts; an
// uninstrumented callee's, the attempt's duration). Attempts that stand
// for tries hidden in one span have no time of their own.
func attemptWorkOf(ix *index, s sel, ecs []*edgeCalls, keys []edgeKey, ownFailed, slowServed spanSet, instrumented map[string]bool) *perEdge[attemptWork] {
	waits := attemptWaits(ix, s, ecs)
	out := newPerEdge[attemptWork](keys, nil)
	for i, ec := range ecs {
		inst := instrumented[ec.key.callee]
		for _, c := range ec.calls {
			if !s.has(c.from) {
				continue
			}
			as := ix.attemptsOf(c)
			for k := range as {
				a := &as[k]
				var w int64
				switch {
				case a.synthetic:
					continue
				case !inst:
					if a.outcome.failed() {
						continue
					}
					w = ix.spans[a.span].Duration()
				case a.server < 0 || ownFailed.has(a.server) && !slowServed.has(a.server):
					continue
				default:
					w = workTime(ix, a.server, waits[a.server])
				}
				out.of[i][min(k, 1)].add(float64(w) / 1e6)
			}
		}
	}
	return out
}

// attemptWaits are, per caller span of the selected calls, the waits
// between the attempts of its calls (backoff and Retry-After sleeps), which
// hold a request but do no work.
func attemptWaits(ix *index, s sel, ecs []*edgeCalls) map[int32][][2]int64 {
	waits := map[int32][][2]int64{}
	for _, ec := range ecs {
		for _, c := range ec.calls {
			if !s.has(c.from) {
				continue
			}
			as := ix.attemptsOf(c)
			for k := 1; k < len(as); k++ {
				prev, next := &as[k-1], &as[k]
				if pe, ns := ix.waitOf(prev, next); ns > pe && !prev.synthetic && !next.synthetic {
					waits[c.from] = append(waits[c.from], [2]int64{pe, ns})
				}
			}
		}
	}
	return waits
}

// work returns d at WorkLevels, nil for none, and names d in op's
// summaries if d is one.
func (op *Operation) work(d *dist, name string) []float64 {
	if d.n() == 0 {
		return nil
	}
	summarized(&op.Summarized, name, d.summary())
	return d.quantiles(WorkLevels)
}

// WorkLevels are the quantile levels of the work and transit times replay
// draws from: every percentile, fine enough that a bimodal time (fast
// answers and a slow tail past a client's timeout) keeps its gap.
var WorkLevels = func() []float64 {
	l := make([]float64, 101)
	for i := range l {
		l[i] = float64(i) / 100
	}
	return l
}()

// requestsHeld is, per service, the times of the requests it held, by
// value: the SERVER spans and local roots of the services with spans
// (served), and the attempts of calls to each callee (attempted), which
// time it only if no trace has spans of it (instrumented).
type requestsHeld struct {
	served, attempted map[string]*heldTimes
	instrumented      map[string]bool
}

// heldTimes is some of a service's requests: the sum of their durations
// in whole nanoseconds (exact in any order), and their starts and ends,
// which the reduce sorts for the peak (16 bytes a request: the lists the
// reduce made from the spans before).
type heldTimes struct {
	busy         int64
	starts, ends []int64
}

func (h *requestsHeld) merge(o *requestsHeld) {
	for _, m := range [][2]map[string]*heldTimes{{h.served, o.served}, {h.attempted, o.attempted}} {
		for svc, t := range m[1] {
			if sum := m[0][svc]; sum != nil {
				sum.busy += t.busy
				sum.starts, sum.ends = append(sum.starts, t.starts...), append(sum.ends, t.ends...)
			} else {
				m[0][svc] = t
			}
		}
	}
	maps.Copy(h.instrumented, o.instrumented)
}

// heldBy is inFlight's map step, over the selected spans and calls.
func heldBy(ix *index, s sel, ecs []*edgeCalls) *requestsHeld {
	// The spans are listed by index while the step runs (4 bytes a
	// request), then read into lists of their exact size.
	served, attempted := map[string][]int32{}, map[string][]int32{}
	instrumented := map[string]bool{}
	for i := range ix.spans {
		sp := &ix.spans[i]
		if !ix.keep[i] || !s.has(int32(i)) {
			continue
		}
		if svc := ix.str(sp.Service); isServer(sp) || ix.parent[i] < 0 && !isAttempt(sp) {
			instrumented[svc] = true
			served[svc] = append(served[svc], int32(i))
		}
	}
	for _, ec := range ecs {
		if instrumented[ec.key.callee] {
			continue // known here to have spans: no need to list its attempts
		}
		for _, c := range ec.calls {
			if !s.has(c.from) {
				continue
			}
			for _, a := range ix.attemptsOf(c) {
				attempted[ec.key.callee] = append(attempted[ec.key.callee], a.span)
			}
		}
	}
	h := &requestsHeld{served: make(map[string]*heldTimes, len(served)), attempted: make(map[string]*heldTimes, len(attempted)),
		instrumented: instrumented}
	for _, m := range []struct {
		to   map[string]*heldTimes
		from map[string][]int32
	}{{h.served, served}, {h.attempted, attempted}} {
		for svc, l := range m.from {
			t := &heldTimes{starts: make([]int64, len(l)), ends: make([]int64, len(l))}
			for k, i := range l {
				sp := &ix.spans[i]
				t.busy += sp.End - sp.Start
				t.starts[k], t.ends[k] = sp.Start, sp.End
			}
			m.to[svc] = t
		}
	}
	return h
}

// peak is the most requests in flight at once, from their start and end
// times: an end at the same instant as a start comes first, so requests
// back to back do not count as overlapping.
func peak(starts, ends []int64) int {
	slices.Sort(starts)
	slices.Sort(ends)
	n, most, e := 0, 0, 0
	for _, t := range starts {
		for e < len(ends) && ends[e] <= t {
			e++
			n--
		}
		n++
		most = max(most, n)
	}
	return most
}

// nearestRank is the nearest-rank p-quantile of sorted xs, the definition
// replay's latency percentiles use.
func nearestRank(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[max(int(math.Ceil(p*float64(len(sorted))))-1, 0)]
}

// workTime is span i's duration minus the union of its children's
// intervals and the given waits, clipped to the span.
func workTime(ix *index, i int32, waits [][2]int64) int64 {
	if len(waits) == 0 {
		return selfTime(ix, i)
	}
	sp := &ix.spans[i]
	ivs := slices.Clone(waits)
	for _, c := range ix.kids(i) {
		ivs = append(ivs, [2]int64{ix.spans[c].Start, ix.spans[c].End})
	}
	slices.SortFunc(ivs, func(a, b [2]int64) int { return cmpInt64(a[0], b[0]) })
	covered, end := int64(0), sp.Start
	for _, iv := range ivs {
		cs, ce := max(iv[0], end), min(iv[1], sp.End)
		if ce > cs {
			covered += ce - cs
			end = ce
		}
	}
	return max(sp.Duration()-covered, 0)
}

// inFlight is Little's law per service: the sum of its span durations
// (server spans for instrumented services, attempts for virtual ones)
// over the arrival window.
func inFlight(ix *index, ecs []*edgeCalls, window float64) []ServiceLoad {
	out := []ServiceLoad{}
	if window <= 0 {
		return out
	}
	// One pass to name the requests each service held, as intervals; then
	// per service its busy time and, sweeping starts and ends in order,
	// its peak.
	// The services' instrumented spans and virtual attempts are listed
	// per shard (map) and joined (reduce); the busy time is summed in
	// whole nanoseconds, exact in any order.
	held := mapShards(ix, func(s sel) *requestsHeld { return heldBy(ix, s, ecs) }, (*requestsHeld).merge)
	bySvc := held.served
	for svc, t := range held.attempted {
		if !held.instrumented[svc] {
			bySvc[svc] = t
		}
	}
	for svc, t := range bySvc {
		out = append(out, ServiceLoad{Service: svc, InFlight: round3(float64(t.busy) / 1e9 / window), PeakInFlight: peak(t.starts, t.ends)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service < out[j].Service })
	return out
}
