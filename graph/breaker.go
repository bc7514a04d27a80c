package graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/retryaudit/retryaudit/ingest"
)

// Breaker is what the traces show of a circuit breaker on an edge: calls
// that failed fast without any attempt (a SERVER span of the caller's
// operation answering an error quickly with no call to the callee) in runs
// that follow a failed call and end when a call goes through again (the
// half-open probe). Every breaker opens on a failure, whether it counts
// failures in a row (gobreaker, cockatiel's ConsecutiveBreaker) or their
// share over a rolling window (opossum, resilience4j, Hystrix, Polly's
// advanced breaker): TripRule says which the traces are consistent with.
type Breaker struct {
	Detected bool `json:"detected"`
	// Unknown is true where the traces hint at a breaker too thinly to
	// claim one or deny it: fewer than minFastFailed requests failed fast
	// without the call after failed calls, and no quick failures while
	// the callee was healthy say the handler fails so on its own.
	// FastFailedCalls and OpenPeriods count that evidence, Evidence says
	// it (and RetriedRefusals, where the fast failures lasted a retry
	// loop's waits, what the traces show of the loop). Not Detected:
	// replay runs no breaker from it, and its absence is not a finding.
	Unknown bool `json:"unknown,omitempty"`
	// FastFailedCalls counts requests answered without calling the callee
	// while the breaker was open.
	FastFailedCalls int `json:"fast_failed_calls"`
	// OpenPeriods counts runs of fast failures.
	OpenPeriods int `json:"open_periods"`
	// TripAfter is the fewest consecutive failed calls seen before an open
	// period: the breaker's threshold, as far as the traces show, if it
	// counts failures in a row.
	TripAfter int `json:"trip_after_failures,omitempty"`
	// TripRule is "consecutive" where a threshold of TripAfter failures
	// in a row explains every open period and every call let through, or
	// "failure-rate" where none can: after TripAfter or more failures in
	// a row a request was let through while the breaker, had it opened,
	// would still have been open (sooner after the failure than half the
	// time it stays open), so it counts something else, a share of
	// failures over a window; "unknown" where the caller's instances,
	// each with a breaker of its own, disagree on it (Instances.Unknown
	// says how). Empty where no breaker is detected.
	TripRule string `json:"trip_rule,omitempty"`
	// PassedRuns counts those let-through calls: the evidence for
	// "failure-rate".
	PassedRuns int `json:"passed_runs,omitempty"`
	// OpenMS is the median time the breaker stayed open: from the end of
	// the request whose failed call tripped it (when the breaker heard the
	// failure) to the middle between the last request it failed fast and
	// the probe it let through, the two requests that bound the moment it
	// closed (to the last fast failure when no probe was seen: a lower
	// bound).
	OpenMS float64 `json:"open_ms,omitempty"`
	// LongestFailureRun is the most consecutive failed calls seen, in the
	// order their results came in.
	LongestFailureRun int `json:"longest_failure_run"`
	// ProxyShed counts the attempts the caller's sidecar refused itself
	// because its circuit breaker's limits were full (Envoy's UO response
	// flag: max connections, pending or concurrent requests to the
	// cluster). That is a concurrency limit, not a breaker that opens on
	// failures: it is not Detected, and replay does not simulate it as
	// one (its fast failures are in the edge's outcome mix).
	ProxyShed int `json:"proxy_shed,omitempty"`
	// Instances, where the traces name the caller's process instances,
	// says how many of them showed the breaker and what they disagree on:
	// each instance keeps a breaker of its own, read apart and pooled
	// (decideBreaker). Null where no span names an instance.
	Instances *BreakerInstances `json:"instances,omitempty"`
	// FailureRate sizes a breaker whose TripRule is "failure-rate": the
	// windows, shares and minimum calls that fit every failure the traces
	// show it opening on or letting calls through after (or "unknown" and
	// why). Null for other trip rules.
	FailureRate *FailureRateFit `json:"failure_rate,omitempty"`
	// RetriedRefusals, where the caller's retry loop wraps the breaker
	// (failsafe-go's failsafe.With(retryPolicy, circuitBreaker), Polly's
	// and resilience4j's retry decorating a breaker), is what the traces
	// show of the tries it refused. Null where no call failed fast
	// after waiting through its retry policy's waits: a breaker around
	// the retry loop fails a call at once.
	RetriedRefusals *RetriedRefusals `json:"retried_refusals,omitempty"`
	// Evidence says, where the breaker is Unknown, what the traces show
	// of one and why it is not claimed.
	Evidence string `json:"evidence,omitempty"`
}

// RetriedRefusals is what the traces show of a retry loop around a
// breaker: the loop retries each try the open breaker refuses, after its
// own wait, and a refused try sends nothing, so no span shows it.
type RetriedRefusals struct {
	// WaitedCalls counts the fast-failed calls (FastFailedCalls) that
	// lasted their retry policy's waits through every retry, WaitsMS
	// (low, high: the shortest and longest waits the edge's calls show
	// before each retry, summed): every try refused and retried, nothing
	// sent.
	WaitedCalls int        `json:"waited_calls"`
	WaitsMS     [2]float64 `json:"waits_ms"`
	// LateStartCalls counts the calls that sent their first request at
	// least one wait (the shortest before a first retry) later into their
	// request than calls usually start: tries refused before it, or work
	// the request did first. EarlyEndCalls counts the calls that failed
	// with fewer requests than max_attempts and whose request ended at
	// least one wait after their last answer: tries refused after it, or
	// work the request did after. Such calls count fewer attempts in the
	// edge's attempts_histogram than they made, and the gap between two
	// of their requests may hold several waits.
	LateStartCalls int `json:"late_start_calls"`
	EarlyEndCalls  int `json:"early_end_calls"`
	// JoinedGapCalls counts the calls with a gap between two of their
	// requests longer than the schedule's wait there (its range's top)
	// by at least one wait: a try refused between them, the gap joining
	// its wait and the next, or a wait the server directed.
	JoinedGapCalls int `json:"joined_gap_calls"`
	// RefusedTries is "unknown": how many tries the breaker refused
	// inside calls that did send requests the traces cannot show (a
	// refused try leaves no span); Evidence says what they do show.
	RefusedTries string `json:"refused_tries"`
	Evidence     string `json:"evidence"`
	// Trip says why the breaker's TripRule is "unknown" (and no
	// trip_after_failures is given): what its calls alone would read.
	Trip string `json:"trip"`
}

// retryWaits is how long a retry loop around a breaker waits when the
// breaker refuses every try of a call: an open breaker refuses at once
// and sends nothing, so such a call lasts its policy's waits before
// retries 1 to attempts−1 and little else. Read from the waits the
// edge's calls show before each retry (the shortest and the longest at
// each index, summed, ms), noise being the edge's timing noise; the zero
// value where the edge does not retry, hedges, has no exact attempt
// count, or shows no wait before one of its retries.
type retryWaits struct {
	lo, hi, first, noise float64
	attempts             int
	// joined counts the calls with a gap longer than the schedule's
	// wait at its index (Backoff.Schedule's range top) by a wait or
	// more (RetriedRefusals.JoinedGapCalls).
	joined int
}

// retryWaitsOf reads an edge's retryWaits from its calls (ec) and its
// inferred policy (e).
func retryWaitsOf(ix *index, ec *edgeCalls, e *Edge) retryWaits {
	if !e.Retries || !e.MaxAttemptsExact || e.MaxAttempts < 2 || e.Hedging != nil {
		return retryWaits{}
	}
	n := e.MaxAttempts - 1
	lo, hi := make([]float64, n), make([]float64, n)
	seen := make([]bool, n)
	for _, c := range ec.calls {
		as := ix.attemptsOf(c)
		for i := 1; i < len(as) && i <= n; i++ {
			g := float64(ix.spans[as[i].span].Start-ix.spans[as[i-1].span].End) / 1e6
			if !seen[i-1] || g < lo[i-1] {
				lo[i-1] = g
			}
			if !seen[i-1] || g > hi[i-1] {
				hi[i-1] = g
			}
			seen[i-1] = true
		}
	}
	w := retryWaits{first: lo[0], noise: e.Backoff.NoiseMS, attempts: e.MaxAttempts}
	for i := range n {
		if !seen[i] {
			return retryWaits{}
		}
		w.lo, w.hi = w.lo+max(lo[i], 0), w.hi+hi[i]
	}
	if step := w.first - w.noise; step > 0 && len(e.Backoff.Schedule) > 0 {
		sched := e.Backoff.Schedule
		for _, c := range ec.calls {
			as := ix.attemptsOf(c)
			for i := 1; i < len(as); i++ {
				top := sched[min(i, len(sched))-1].RangeMS[1]
				if float64(ix.spans[as[i].span].Start-ix.spans[as[i-1].span].End)/1e6 >= top+step {
					w.joined++
					break
				}
			}
		}
	}
	return w
}

// holds reports whether a request that lasted d (ns) without calling
// the callee lasted its retry loop's waits, fast (ns) being how long a
// request takes beyond them.
func (w retryWaits) holds(d, fast float64) bool {
	return w.attempts > 0 && d >= (w.lo-w.noise)*1e6 && d <= w.hi*1e6+fast
}

// BreakerInstances is how an edge's breaker reads across the caller's
// process instances, each with a breaker of its own.
type BreakerInstances struct {
	// WithBreaker counts the instances that failed requests fast after
	// failed calls (opened at least once); Calling those whose requests
	// called the callee.
	WithBreaker int `json:"with_breaker"`
	Calling     int `json:"calling"`
	// Unknown says what the instances do not agree on and why: the trip
	// rule (TripUnknown) where each instance alone fits failures in a row
	// but at thresholds no one threshold reconciles, and the open time
	// where the instances' own medians lie further apart than
	// openAgree (OpenMS then is the median over all their open periods,
	// a representative, not a shared setting).
	Unknown []string `json:"unknown,omitempty"`
}

// openAgree is how far apart (a factor) the instances' median open times
// may lie and still be read as one setting: each is the midpoint between
// the last request failed fast and the probe, so the gaps between one
// instance's requests blur it.
const openAgree = 1.5

// Breaker evidence thresholds: a breaker is claimed from at least
// minFastFailed fast failures after a failed call (minTrip: a breaker
// opens on a failure; how many failures it counts, in a row or over a
// window, is its own); its absence only on an edge that saw minAbsentRun failed calls
// in a row all sent (common breakers trip at 5; fewer say nothing). An
// answer is fast below fastShare of the median duration of the requests
// that did make the call, plus, where the edge's legs have a late tail
// (a busy host, whose event loop ends fast answers late too), that tail's
// noise; and a caller operation "normally calls" the callee when at least
// half its requests do.
// Trip rules (Breaker.TripRule).
const (
	TripConsecutive = "consecutive"
	TripFailureRate = "failure-rate"
	// TripUnknown: instances of the caller disagree (BreakerInstances.Unknown).
	TripUnknown = "unknown"
)

const (
	minFastFailed = 3
	minTrip       = 1
	minAbsentRun  = 5
	fastShare     = 0.5
)

// breakers reads each edge's breaker from the SERVER spans of its caller's
// operation in time order; nil where the traces cannot tell (no failed
// calls in a row). Each SERVER span is visited once per edge out of its
// operation, after the calls' results and the fast failures are sorted by
// when they came (n log n in the operation's requests).
//
// A breaker's runs cross traces: the map step lists each caller
// operation's requests (requestsByOp), the lists merge, and the reduce
// puts them in time order (ties by trace and span id, whatever order the
// shards merged in) and reads each request's calls.
func breakers(ix *index, ecs []*edgeCalls, byServer *serverCalls, tails []float64, waits []retryWaits) []*Breaker {
	bySrc := mapShards(ix, ix.requestsByOp, func(sum, p map[node][]int32) {
		for n, l := range p {
			sum[n] = append(sum[n], l...)
		}
	})
	for _, spans := range bySrc {
		slices.SortFunc(spans, func(a, b int32) int {
			if c := cmpInt64(ix.spans[a].Start, ix.spans[b].Start); c != 0 {
				return c
			}
			return keyOf(&ix.spans[a], a).cmpID(keyOf(&ix.spans[b], b))
		})
	}
	// Per caller operation, the edges it may normally call
	// (normallyCalls). Only those are walked, which keeps the work
	// linear: each has at least an eighth as many calls as the requests
	// it visits.
	edgesOf := map[node][]int{}
	okOf := map[node]int{}
	for n, spans := range bySrc {
		okOf[n] = answeredOK(ix, spans)
	}
	for ei, ec := range ecs {
		n := node{ec.key.caller, ec.key.callerOp}
		if normallyCalls(len(ec.calls), len(bySrc[n]), okOf[n]) {
			edgesOf[n] = append(edgesOf[n], ei)
		}
	}
	out := make([]*Breaker, len(ecs))
	states := map[int]*brCalls{}
	for n, eis := range edgesOf {
		spans := bySrc[n]
		clear(states)
		for _, ei := range eis {
			states[ei] = &brCalls{make([]uint8, len(spans)), make([]int64, len(spans)), make([]int64, len(spans)), make([]uint8, len(spans))}
		}
		// Which requests called each edge, whether the call failed, when
		// it was made and when its last answer came (when a breaker around
		// it heard the result): each request's calls visited once.
		for k, s := range spans {
			for _, c := range byServer.of(s) {
				bc := states[int(c.edge)]
				if bc == nil {
					continue
				}
				cl := byServer.call(c)
				switch {
				case ix.refused(cl):
					// A breaker below the instrumentation refused the call:
					// no request went out, as if no call was made.
					continue
				case ix.last(cl).outcome.failed():
					bc.state[k] = callFailed
				case bc.state[k] == noCall:
					bc.state[k] = callOK
				}
				atts := ix.attemptsOf(cl)
				bc.sent[k] = uint8(min(int(bc.sent[k])+len(atts), 255))
				for _, a := range atts {
					as := &ix.spans[a.span]
					if bc.start[k] == 0 || as.Start < bc.start[k] {
						bc.start[k] = as.Start
					}
					bc.end[k] = max(bc.end[k], as.End)
				}
			}
		}
		for _, ei := range eis {
			out[ei] = breakerOf(ix, spans, states[ei], tails[ei], waits[ei], false)
			if b := out[ei]; b != nil && b.TripRule == TripFailureRate {
				// Read again, keeping what each request did, to size it.
				out[ei] = breakerOf(ix, spans, states[ei], tails[ei], waits[ei], true)
			}
		}
	}
	return out
}

// normallyCalls reports whether a caller operation with requests
// requests, ok of them answered OK, normally calls a callee it called
// calls times: at least half its requests did, or, where a breaker open
// most of the time failed most of them fast without the call, at least
// half of those it answered OK did (an operation that needs the callee
// calls it whenever it succeeds) and at least an eighth of all of them
// (minCalledShare: so that a breaker's walk over the requests stays
// within eight times the calls).
func normallyCalls(calls, requests, ok int) bool {
	return calls*2 >= requests || calls*2 >= ok && calls*minCalledShare >= requests
}

// minCalledShare: an operation whose requests call a callee less than
// once in minCalledShare is not read for a breaker on it.
const minCalledShare = 8

// answeredOK counts the requests (SERVER spans) that answered OK.
func answeredOK(ix *index, spans []int32) int {
	n := 0
	for _, s := range spans {
		if o, _ := classify(ix, s, s); o == outcomeOK {
			n++
		}
	}
	return n
}

// requestsByOp is breakers' map step: the selected SERVER spans (that ran
// in their own request's context) by service and operation.
func (ix *index) requestsByOp(s sel) map[node][]int32 {
	bySrc := map[node][]int32{}
	for i := range ix.spans {
		sp := &ix.spans[i]
		if ix.keep[i] && !ix.leaked[i] && isServer(sp) && s.has(int32(i)) {
			n := node{ix.str(sp.Service), ix.opName(int32(i))}
			bySrc[n] = append(bySrc[n], int32(i))
		}
	}
	return bySrc
}

// refused reports whether a call was refused by a circuit breaker inside
// the client (below or around its instrumentation): every attempt failed
// at once, reached no server, and says its circuit or breaker is open.
func (ix *index) refused(c *call) bool {
	for _, a := range ix.attemptsOf(c) {
		if a.server >= 0 || !a.outcome.failed() || ix.spans[a.span].Duration() > refusedNS {
			return false
		}
		sp := &ix.spans[a.span]
		x := ix.set.Extra(sp)
		msg := strings.ToLower(ix.str(x.StatusMessage) + " " + ix.str(x.ErrorType))
		if !strings.Contains(msg, "circuit") && !strings.Contains(msg, "breaker") {
			return false
		}
	}
	return true
}

// refusedNS is the longest a refusal by an open breaker takes: no network,
// no wait.
const refusedNS = 1_000_000

// What a request did with one edge's callee.
const (
	noCall uint8 = iota
	callOK
	callFailed
)

// brCalls is what each of a caller operation's requests (in start order)
// did with one edge's callee: state, and for those that called it when the
// call was made (its first attempt's start) and when its result came in
// (its last answer's end), ns, and how many requests it sent (to 255).
type brCalls struct {
	state      []uint8
	start, end []int64
	sent       []uint8
}

// breakerOf reads one edge's breaker from its caller operation's requests
// in start order and what each did with the callee (bc); tail is the
// edge's late-tail noise (ms, 0 for none). With size it also keeps what
// each request did and sizes a failure-rate breaker from it (breakers
// asks for that only of one it found on a failure rate: most edges' many
// requests need no record kept).
//
// A breaker's state is a function of time, and requests overlap, so it is
// read in time, not request by request: a call's result counts when it
// came in (its end: where a busy host answers late, the breaker hears
// late too), a call went through when its request started, and a
// request failed fast was refused when requests normally make the call
// (the median time from a request's start to its call's, within the
// request: a busy host ends fast answers late). An open period starts
// at the failure whose result came last before the first fast failure
// (the request end of that failure), and whatever a call did that started
// before it was decided while the breaker was closed: results of calls in
// flight when it opened, which come in while it is open or after it
// closed again, change nothing (the breaker no longer counts them). A
// call that starts while it is open is its probe: the period closes when
// the probe starts, and requests failed fast while the probe is out
// (a half-open breaker lets one call through) belong to the same period.
// On traffic sent one request at a time this is the reading in start
// order.
//
// Where the caller's retry loop wraps the breaker (w, the loop's waits),
// a request whose every try the breaker refused lasts the loop's waits
// rather than failing fast: it counts as failed fast too.
func breakerOf(ix *index, spans []int32, bc *brCalls, tail float64, w retryWaits, size bool) *Breaker {
	state := bc.state
	var called []float64
	for k, s := range spans {
		if state[k] != noCall {
			called = append(called, float64(ix.spans[s].Duration()))
		}
	}
	if len(called) == 0 || !normallyCalls(len(called), len(spans), answeredOK(ix, spans)) {
		return nil // the operation does not normally call this callee
	}
	slices.Sort(called)
	fast := fastShare*quantile(called, 0.5) + tail*1e6
	offsets := called[:0] // the durations are read: their room holds the offsets
	for k, s := range spans {
		if state[k] != noCall {
			offsets = append(offsets, float64(bc.start[k]-ix.spans[s].Start))
		}
	}
	slices.Sort(offsets)
	offset := int64(max(quantile(offsets, 0.5), 0))
	var rs []*brReading
	waited := 0
	for _, g := range instanceGroups(ix, spans, bc) {
		r := readBreaker(ix, g.spans, g.calls, fast, offset, w, size)
		r.instance, r.named = g.instance, g.named
		rs = append(rs, r)
		waited += r.waited
	}
	b := decideBreaker(ix, rs, size)
	if b != nil && b.Unknown && waited > 0 {
		b.RetriedRefusals = retriedRefusals(ix, spans, bc, offset, w, waited)
		b.RetriedRefusals.Trip = fmt.Sprintf("unknown: fast-failed calls %d, too few to claim a breaker", b.FastFailedCalls)
		return b
	}
	if b != nil && b.Detected && waited > 0 {
		b.RetriedRefusals = retriedRefusals(ix, spans, bc, offset, w, waited)
		// A breaker inside the retry loop counts tries, and its refused
		// tries leave no span: failed calls in a row do not size it,
		// nor do the calls it let through tell its rule.
		b.RetriedRefusals.Trip = fmt.Sprintf("unknown: the breaker counts tries, not calls, and refuses some unseen; read by call it opened after %d failed calls in a row at fewest, %s",
			b.TripAfter, tripReading(b))
		b.TripRule, b.TripAfter, b.PassedRuns, b.FailureRate = TripUnknown, 0, 0, nil
	}
	return b
}

// tripReading says what a breaker's calls alone would read its rule as.
func tripReading(b *Breaker) string {
	if b.TripRule == TripFailureRate {
		return fmt.Sprintf("and let %d calls through after as many (which no count of failed calls in a row explains)", b.PassedRuns)
	}
	return "and never let one through after as many"
}

// retriedRefusals is what the traces show of a retry loop around a
// breaker (w its waits) that failed waited calls fast after their
// waits: the calls whose first request left a wait late, and those that
// gave up early a wait after their last answer (bc, in start order;
// offset the usual time from a request's start to its call's, ns).
func retriedRefusals(ix *index, spans []int32, bc *brCalls, offset int64, w retryWaits, waited int) *RetriedRefusals {
	rr := &RetriedRefusals{WaitedCalls: waited, WaitsMS: [2]float64{round3(w.lo), round3(w.hi)}, JoinedGapCalls: w.joined, RefusedTries: TripUnknown}
	if step := (w.first - w.noise) * 1e6; step > 0 {
		for k, s := range spans {
			sp := &ix.spans[s]
			if bc.state[k] == noCall {
				continue
			}
			if float64(bc.start[k]-sp.Start-offset) >= step {
				rr.LateStartCalls++
			}
			if bc.state[k] == callFailed && int(bc.sent[k]) < w.attempts && float64(sp.End-bc.end[k]) >= step {
				rr.EarlyEndCalls++
			}
		}
	}
	rr.Evidence = fmt.Sprintf("%d calls failed without a request after %.4g–%.4gms, their retry policy's waits through %d attempts: its retry loop retries the breaker's refusals, which send nothing; %d calls sent their first request a wait (%.4gms) or more late, %d gave up with fewer than %d requests a wait or more after their last answer and %d waited a wait or more longer than the schedule between two requests, tries the breaker may have refused, which no span shows",
		waited, rr.WaitsMS[0], rr.WaitsMS[1], w.attempts, rr.LateStartCalls, w.first, rr.EarlyEndCalls, w.attempts, rr.JoinedGapCalls)
	return rr
}

// brGroup is the requests of one caller instance (in start order) and
// what each did with the callee.
type brGroup struct {
	instance ingest.Sym
	named    bool // the traces name the caller's instances
	spans    []int32
	calls    *brCalls
}

// instanceGroups splits a caller operation's requests (spans, in start
// order, bc what each did) by the process instance that served them: each
// instance of a caller keeps a breaker of its own (gobreaker, opossum,
// resilience4j and Polly hold their state in the process). Where no span
// names an instance there is one group, spans as they are; requests that
// name none beside ones that do are one more instance.
func instanceGroups(ix *index, spans []int32, bc *brCalls) []brGroup {
	if !slices.ContainsFunc(spans, func(s int32) bool { return ix.set.Instance(&ix.spans[s]) != 0 }) {
		return []brGroup{{spans: spans, calls: bc}}
	}
	idx := map[ingest.Sym]int{}
	var groups []brGroup
	for k, s := range spans {
		inst := ix.set.Instance(&ix.spans[s])
		i, ok := idx[inst]
		if !ok {
			i = len(groups)
			idx[inst] = i
			groups = append(groups, brGroup{instance: inst, calls: &brCalls{}})
		}
		g := &groups[i]
		g.spans = append(g.spans, s)
		g.calls.state = append(g.calls.state, bc.state[k])
		g.calls.start = append(g.calls.start, bc.start[k])
		g.calls.end = append(g.calls.end, bc.end[k])
		g.calls.sent = append(g.calls.sent, bc.sent[k])
	}
	slices.SortFunc(groups, func(a, b brGroup) int { return strings.Compare(ix.str(a.instance), ix.str(b.instance)) })
	for i := range groups {
		groups[i].named = true
	}
	return groups
}

// passedRun is a failure run after which a request made the call while
// the breaker was closed, with how soon after the run's last failure
// ended (ms): read against TripAfter and OpenMS once both are known.
type passedRun struct {
	run   int
	after float64
}

// brReading is what one breaker (one caller instance's, or the edge's
// where the traces name no instances) showed in time: the counts of its
// Breaker, the open periods' durations (ms; unclosed: the one still open
// at the end, a lower bound), the runs let through, the requests seen
// while the callee was healthy and while it had failed (healthyFast: the
// quick server errors among the healthy ones), and with size what each
// request did, for the failure-rate fit.
type brReading struct {
	instance                      ingest.Sym
	named                         bool
	b                             Breaker
	opens, unclosed               []float64
	passed                        []passedRun
	healthy, tripped, healthyFast int
	calls                         int
	evs                           []brEvent
	// waited counts the requests failed fast that lasted the retry
	// loop's waits (retryWaits), not failing fast at once; refusedTries
	// the tries the breaker refused in the requests it failed fast: one
	// each, or for a waited one every try its loop makes.
	waited, refusedTries int
}

// readBreaker reads one breaker from its requests in start order and what
// each did with the callee (bc): fast is the duration below which an
// answer without the call is fast (ns), offset the median time from a
// request's start to its call's, w the waits of a retry loop around the
// breaker, which an answer without the call may last too.
func readBreaker(ix *index, spans []int32, bc *brCalls, fast float64, offset int64, w retryWaits, size bool) *brReading {
	state := bc.state
	r := &brReading{}
	// The requests' moments in time order (results before starts and
	// fast failures at the same moment: the breaker heard the result,
	// then decided).
	tl := brTimeline{ix: ix, spans: spans, end: bc.end, offset: offset, fast: make([]bool, len(spans))}
	var waited []bool // requests failed fast after the retry loop's waits
	for k, s := range spans {
		sp := &ix.spans[s]
		switch {
		case state[k] != noCall:
			tl.results = append(tl.results, int32(k))
			r.calls++
		default:
			// An open breaker answers as a server error (503, 500): a
			// quick 4xx is the request's own fault, not a breaker's.
			o, _ := classify(ix, s, s)
			if o != outcomeRetryable {
				continue
			}
			d := float64(sp.Duration())
			slow := d >= fast && w.holds(d, fast)
			if d < fast || slow {
				tl.fasts = append(tl.fasts, int32(k))
				tl.fast[k] = true
			}
			if slow {
				if waited == nil {
					waited = make([]bool, len(spans))
				}
				waited[k] = true
			}
		}
	}
	tl.sort()
	b := &r.b
	run, streak, st := 0, 0, brClosed
	// trippedAt: the end of the request of the latest failed call counted
	// (the trip, once a period opens); since: calls whose requests started
	// before it were decided before the latest period opened.
	var trippedAt, since, lastFast int64
	// held: the failures in a row the latest failure ended (at heldAt),
	// kept when successes reset the run whose calls were in flight then
	// (their requests started before it), while no call has gone through
	// since (lastThrough: the latest request to make the call while it
	// was closed). A breaker that opened on that failure no longer counts
	// those results (gobreaker's generations, resilience4j's ignored
	// calls), so a refusal that follows them is its open period. Under
	// overlapping calls to a callee that fails some of the time, as a
	// failure-rate breaker sees it, in-flight successes are common.
	var held int
	var heldAt, lastThrough int64
	tripRun := func() int {
		if run < minTrip && held > 0 && lastThrough < heldAt {
			return held
		}
		return run
	}
	probe := make([]bool, len(spans))
	// What each request did, for sizing a failure-rate breaker, in start
	// order.
	var kinds []uint8
	if size {
		kinds = make([]uint8, len(spans))
		for k := range kinds {
			kinds[k] = brNone
		}
	}
	// Requests seen while the callee's calls were healthy and while they
	// had failed minTrip times in a row (or a breaker was open), and the
	// quick server errors without a call among the healthy ones: a handler
	// that fails fast on its own does so in both states; a breaker only
	// after failures.
	for e, ok := tl.next(); ok; e, ok = tl.next() {
		sp := &ix.spans[spans[e.k]]
		if e.what != momentResult {
			if st != brClosed || tripRun() >= minTrip {
				r.tripped++
			} else {
				r.healthy++
			}
		}
		switch e.what {
		case momentStart:
			switch {
			case state[e.k] == noCall:
			case st == brOpen:
				// The call went through an open breaker: its probe. It
				// closed between the last request it failed and this one.
				r.opens = append(r.opens, float64((lastFast+sp.Start)/2-trippedAt)/1e6)
				probe[e.k], st = true, brProbing
			case st == brProbing:
				probe[e.k] = true
			case run > 0:
				r.passed = append(r.passed, passedRun{run, float64(sp.Start-trippedAt) / 1e6})
			}
			if state[e.k] != noCall && st == brClosed {
				lastThrough = sp.Start
			}
		case momentResult:
			if probe[e.k] && st == brClosed {
				// Let through while half-open, but an earlier probe's
				// success closed the breaker before this result came in:
				// an ordinary call, which neither closes nor clears it.
				probe[e.k] = false
			}
			if size {
				kinds[e.k] = brKind(probe[e.k], brProbeOK, brOK)
				if state[e.k] == callFailed {
					kinds[e.k] = brKind(probe[e.k], brProbeBad, brFailed)
				}
			}
			// Failed calls in a row, every result counted.
			if streak++; state[e.k] == callOK {
				streak = 0
			}
			b.LongestFailureRun = max(b.LongestFailureRun, streak)
			if !probe[e.k] && (st != brClosed || sp.Start < since) {
				continue // in flight when it opened: the breaker no longer counts it
			}
			if state[e.k] == callOK {
				if run > 0 && st == brClosed && sp.Start < trippedAt && lastThrough < trippedAt {
					held, heldAt = run, trippedAt
				}
				run, st = 0, brClosed
				continue
			}
			// A failed call; after a failed probe the breaker opens again
			// from here.
			run, st = run+1, brClosed
			trippedAt = sp.End
		case momentFast:
			trip := tripRun()
			if st == brClosed && trip < minTrip {
				r.healthyFast++
				continue
			}
			if st == brClosed {
				b.OpenPeriods++
				if b.TripAfter == 0 || trip < b.TripAfter {
					b.TripAfter = trip
				}
				st, since, held = brOpen, trippedAt, 0
			}
			b.FastFailedCalls++
			if waited != nil && waited[e.k] {
				r.waited++
				r.refusedTries += w.attempts
			} else {
				r.refusedTries++
			}
			if st == brOpen {
				lastFast = sp.Start
			}
			if size {
				kinds[e.k] = brRejected
			}
		}
	}
	if st == brOpen {
		r.unclosed = append(r.unclosed, float64(lastFast-trippedAt)/1e6)
	}
	if size {
		// Each request at the moments the breaker decided on it (when the
		// call went out, or when it was refused: a request's start plus
		// the usual offset) and heard its result (the call's last answer),
		// as the time line read them.
		for k, s := range spans {
			switch {
			case kinds[k] == brNone:
			case kinds[k] == brRejected:
				r.evs = append(r.evs, brEvent{tl.fastAt(int32(k)), ix.spans[s].End, kinds[k]})
			default:
				r.evs = append(r.evs, brEvent{bc.start[k], bc.end[k], kinds[k]})
			}
		}
		slices.SortStableFunc(r.evs, func(a, b brEvent) int { return cmpInt64(a.start, b.start) })
	}
	return r
}

// decideBreaker reads an edge's breaker from what each of its caller's
// instances showed (rs; one reading where the traces name no
// instances). The instances' evidence is pooled, as one deployment runs
// one setting: fast failures and open periods are summed, the threshold
// is the fewest failures in a row any instance opened after, the open
// time the median of every instance's open periods, and the trip rule is
// read from the calls let through by every instance that opened against
// them; a
// failure-rate breaker is sized on every instance's windows at once.
// Where the instances are named, Breaker.Instances says how many showed
// the breaker and what they disagree on.
func decideBreaker(ix *index, rs []*brReading, size bool) *Breaker {
	b := &Breaker{}
	var opens, unclosed []float64
	var passed []passedRun
	var healthy, tripped, healthyFast, refusedTries int
	for _, r := range rs {
		refusedTries += r.refusedTries
		b.FastFailedCalls += r.b.FastFailedCalls
		b.OpenPeriods += r.b.OpenPeriods
		if r.b.TripAfter > 0 && (b.TripAfter == 0 || r.b.TripAfter < b.TripAfter) {
			b.TripAfter = r.b.TripAfter
		}
		b.LongestFailureRun = max(b.LongestFailureRun, r.b.LongestFailureRun)
		opens, unclosed = append(opens, r.opens...), append(unclosed, r.unclosed...)
		if r.b.OpenPeriods > 0 || !r.named {
			// An instance that never opened shows no breaker to read its
			// calls let through against (it has none, or another
			// setting): only those that did tell the rule.
			passed = append(passed, r.passed...)
		}
		healthy, tripped, healthyFast = healthy+r.healthy, tripped+r.tripped, healthyFast+r.healthyFast
	}
	// Fast failures must be far likelier after failures in a row than
	// while the callee is healthy (at most a fifth as likely there).
	ownFailures := float64(healthyFast)*float64(max(tripped, 1)) >= 0.2*float64(b.FastFailedCalls)*float64(max(healthy, 1))
	// And an open breaker refuses every try until its probe: refusals
	// come in runs, not one at a time among failed calls (a request
	// failed after its retry loop's waits is a run of its own: each of
	// its tries refused).
	b.Detected = b.OpenPeriods > 0 && b.FastFailedCalls >= minFastFailed && !ownFailures &&
		2*refusedTries >= 3*b.OpenPeriods
	if !b.Detected {
		if b.OpenPeriods > 0 && b.FastFailedCalls < minFastFailed && !ownFailures {
			// Too few fast failures to claim a breaker, and nothing says
			// the handler fails fast on its own: neither is known.
			*b = Breaker{Unknown: true, FastFailedCalls: b.FastFailedCalls, OpenPeriods: b.OpenPeriods, LongestFailureRun: b.LongestFailureRun,
				Instances: instancesOf(ix, rs, nil)}
			b.Evidence = fmt.Sprintf("requests failed fast without calling the callee after failed calls: %d (runs: %d), fewer than the %d a breaker is claimed from; while the callee was healthy: %d, too few to call them the handler's own: a breaker that opened, or the handler's own failures, the traces cannot tell",
				b.FastFailedCalls, b.OpenPeriods, minFastFailed, healthyFast)
			return b
		}
		if b.LongestFailureRun < minAbsentRun {
			return nil // too few failures in a row to tell
		}
		*b = Breaker{LongestFailureRun: b.LongestFailureRun, Instances: instancesOf(ix, rs, nil)}
		return b
	}
	b.OpenMS = medianOpen(opens, unclosed)
	b.TripRule = TripConsecutive
	b.PassedRuns = passedAgainst(passed, b.TripAfter, b.OpenMS)
	if b.PassedRuns > 0 {
		b.TripRule = TripFailureRate
	}
	b.Instances = instancesOf(ix, rs, b)
	if b.TripRule == TripFailureRate && size {
		groups := make([][]brEvent, len(rs))
		for i, r := range rs {
			groups[i] = r.evs
		}
		b.FailureRate = fitFailureRate(groups, b.OpenMS)
	}
	return b
}

// instancesOf summarises the readings of a caller's named instances for
// b (nil where the breaker is not detected), settling b's trip rule to
// TripUnknown where the instances disagree on it; nil where the traces
// name no instances.
func instancesOf(ix *index, rs []*brReading, b *Breaker) *BreakerInstances {
	if len(rs) == 0 || !rs[0].named {
		return nil
	}
	in := &BreakerInstances{}
	var trips, opens []string
	distinct := map[int]bool{}
	aloneFailureRate := false
	lo, hi := 0.0, 0.0
	for _, r := range rs {
		if r.calls > 0 {
			in.Calling++
		}
		if r.b.OpenPeriods == 0 || b == nil {
			continue
		}
		in.WithBreaker++
		name := ix.str(r.instance)
		if name == "" {
			name = "(unnamed)"
		}
		distinct[r.b.TripAfter] = true
		trips = append(trips, fmt.Sprintf("%d on %s", r.b.TripAfter, name))
		if passedAgainst(r.passed, r.b.TripAfter, b.OpenMS) > 0 {
			aloneFailureRate = true
		}
		if len(r.opens) > 0 {
			m := medianOpen(r.opens, nil)
			opens = append(opens, fmt.Sprintf("%.4gms on %s", m, name))
			if lo == 0 || m < lo {
				lo = m
			}
			hi = max(hi, m)
		}
	}
	if b == nil {
		return in
	}
	if b.TripRule == TripFailureRate && !aloneFailureRate && len(distinct) > 1 {
		b.TripRule = TripUnknown
		in.Unknown = append(in.Unknown, fmt.Sprintf("trip rule: each instance alone fits failures in a row (opening after %s), but no one threshold fits them all (%d calls let through after %d or more): different thresholds per instance, or a failure rate",
			strings.Join(trips, ", "), b.PassedRuns, b.TripAfter))
	}
	if len(opens) > 1 && hi > openAgree*lo {
		in.Unknown = append(in.Unknown, fmt.Sprintf("open time: %s, more than %gx apart: open_ms is the median over every instance's open periods, not one setting",
			strings.Join(opens, ", "), openAgree))
	}
	return in
}

// medianOpen is the median of the open periods that closed (ms), or of
// those still open at the end where none closed (a lower bound); 0 for
// none.
func medianOpen(opens, unclosed []float64) float64 {
	if len(opens) == 0 {
		opens = unclosed
	}
	if len(opens) == 0 {
		return 0
	}
	opens = slices.Clone(opens)
	slices.Sort(opens)
	return round3(quantile(opens, 0.5))
}

// passedAgainst counts the runs let through that a breaker opening after
// tripAfter failures in a row for openMS would have failed fast: at least
// that many failures, and sooner after the last than half the open time.
func passedAgainst(passed []passedRun, tripAfter int, openMS float64) int {
	n := 0
	for _, p := range passed {
		if p.run >= tripAfter && p.after < openMS/2 {
			n++
		}
	}
	return n
}

// A breaker's state as breakerOf reads it in time.
const (
	brClosed  uint8 = iota
	brOpen          // failing requests fast
	brProbing       // a call went through an open breaker; its result is awaited
)

// What a request's moment is (and their order at the same instant).
const (
	momentResult uint8 = iota // a call's result came in
	momentFast                // a request answered fast without the call
	momentStart               // a request started
)

// brMoment is one moment of one request (spans[k]) in breakerOf's time
// line (ns).
type brMoment struct {
	at   int64
	what uint8
	k    int32
}

// before orders moments by time, then by what they are, then by request.
func (m brMoment) before(o brMoment) bool {
	if m.at != o.at {
		return m.at < o.at
	}
	if m.what != o.what {
		return m.what < o.what
	}
	return m.k < o.k
}

// brTimeline hands out a caller operation's moments for one edge in time
// order without listing them all: requests start in the order they are
// held, and the calls' results and the fast failures are each sorted
// apart (a request index each), then the three are merged.
type brTimeline struct {
	ix             *index
	spans          []int32
	end            []int64 // each call's result
	offset         int64   // from a request's start to its call's (median)
	fast           []bool  // answered fast without the call: a moment of its own
	results, fasts []int32
	ri, fi, si     int
}

// fastAt is when the breaker refused request k: when requests normally
// make the call, within the request.
func (tl *brTimeline) fastAt(k int32) int64 {
	sp := &tl.ix.spans[tl.spans[k]]
	return min(sp.Start+tl.offset, sp.End)
}

func (tl *brTimeline) sort() {
	slices.SortFunc(tl.results, func(a, b int32) int {
		if c := cmpInt64(tl.end[a], tl.end[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	slices.SortFunc(tl.fasts, func(a, b int32) int {
		if c := cmpInt64(tl.fastAt(a), tl.fastAt(b)); c != 0 {
			return c
		}
		return int(a - b)
	})
}

// next returns the next moment, false after the last.
func (tl *brTimeline) next() (brMoment, bool) {
	for tl.si < len(tl.spans) && tl.fast[tl.si] {
		tl.si++
	}
	var m brMoment
	from := -1 // 0 results, 1 fasts, 2 starts
	if tl.ri < len(tl.results) {
		k := tl.results[tl.ri]
		m, from = brMoment{tl.end[k], momentResult, k}, 0
	}
	if tl.fi < len(tl.fasts) {
		k := tl.fasts[tl.fi]
		if c := (brMoment{tl.fastAt(k), momentFast, k}); from < 0 || c.before(m) {
			m, from = c, 1
		}
	}
	if tl.si < len(tl.spans) {
		k := int32(tl.si)
		if c := (brMoment{tl.ix.spans[tl.spans[k]].Start, momentStart, k}); from < 0 || c.before(m) {
			m, from = c, 2
		}
	}
	switch from {
	case 0:
		tl.ri++
	case 1:
		tl.fi++
	case 2:
		tl.si++
	default:
		return m, false
	}
	return m, true
}
