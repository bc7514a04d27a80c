package graph

import (
	"slices"
	"strings"
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
	// failures over a window. Empty where no breaker is detected.
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
	// FailureRate sizes a breaker whose TripRule is "failure-rate": the
	// windows, shares and minimum calls that fit every failure the traces
	// show it opening on or letting calls through after (or "unknown" and
	// why). Null for other trip rules.
	FailureRate *FailureRateFit `json:"failure_rate,omitempty"`
}

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
func breakers(ix *index, ecs []*edgeCalls, byServer *serverCalls, tails []float64) []*Breaker {
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
	// Per caller operation, the edges it may normally call (at least half
	// as many calls as requests). Only those are walked, which keeps the
	// work linear: together they have at least half as many calls as the
	// requests they visit.
	edgesOf := map[node][]int{}
	for ei, ec := range ecs {
		n := node{ec.key.caller, ec.key.callerOp}
		if len(ec.calls)*2 >= len(bySrc[n]) {
			edgesOf[n] = append(edgesOf[n], ei)
		}
	}
	out := make([]*Breaker, len(ecs))
	states := map[int]*brCalls{}
	for n, eis := range edgesOf {
		spans := bySrc[n]
		clear(states)
		for _, ei := range eis {
			states[ei] = &brCalls{make([]uint8, len(spans)), make([]int64, len(spans)), make([]int64, len(spans))}
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
				for _, a := range ix.attemptsOf(cl) {
					as := &ix.spans[a.span]
					if bc.start[k] == 0 || as.Start < bc.start[k] {
						bc.start[k] = as.Start
					}
					bc.end[k] = max(bc.end[k], as.End)
				}
			}
		}
		for _, ei := range eis {
			out[ei] = breakerOf(ix, spans, states[ei], tails[ei], false)
			if b := out[ei]; b != nil && b.TripRule == TripFailureRate {
				// Read again, keeping what each request did, to size it.
				out[ei] = breakerOf(ix, spans, states[ei], tails[ei], true)
			}
		}
	}
	return out
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
// (its last answer's end), ns.
type brCalls struct {
	state      []uint8
	start, end []int64
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
func breakerOf(ix *index, spans []int32, bc *brCalls, tail float64, size bool) *Breaker {
	state := bc.state
	var called []float64
	for k, s := range spans {
		if state[k] != noCall {
			called = append(called, float64(ix.spans[s].Duration()))
		}
	}
	if len(called)*2 < len(spans) || len(called) == 0 {
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
	// The requests' moments in time order (results before starts and
	// fast failures at the same moment: the breaker heard the result,
	// then decided).
	tl := brTimeline{ix: ix, spans: spans, end: bc.end, offset: offset, fast: make([]bool, len(spans))}
	for k, s := range spans {
		sp := &ix.spans[s]
		switch {
		case state[k] != noCall:
			tl.results = append(tl.results, int32(k))
		default:
			// An open breaker answers as a server error (503, 500): a
			// quick 4xx is the request's own fault, not a breaker's.
			if o, _ := classify(ix, s, s); o == outcomeRetryable && float64(sp.Duration()) < fast {
				tl.fasts = append(tl.fasts, int32(k))
				tl.fast[k] = true
			}
		}
	}
	tl.sort()
	b := &Breaker{}
	run, streak, st := 0, 0, brClosed
	// trippedAt: the end of the request of the latest failed call counted
	// (the trip, once a period opens); since: calls whose requests started
	// before it were decided before the latest period opened.
	var trippedAt, since, lastFast int64
	var opens, unclosed []float64
	probe := make([]bool, len(spans))
	// passed: failure runs after which a request made the call while the
	// breaker was closed, with how soon after the run's last failure ended
	// (ms): read against TripAfter and OpenMS once both are known.
	type passedRun struct {
		run   int
		after float64
	}
	var passed []passedRun
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
	var healthy, tripped, healthyFast int
	for e, ok := tl.next(); ok; e, ok = tl.next() {
		sp := &ix.spans[spans[e.k]]
		if e.what != momentResult {
			if st != brClosed || run >= minTrip {
				tripped++
			} else {
				healthy++
			}
		}
		switch e.what {
		case momentStart:
			switch {
			case state[e.k] == noCall:
			case st == brOpen:
				// The call went through an open breaker: its probe. It
				// closed between the last request it failed and this one.
				opens = append(opens, float64((lastFast+sp.Start)/2-trippedAt)/1e6)
				probe[e.k], st = true, brProbing
			case st == brProbing:
				probe[e.k] = true
			case run > 0:
				passed = append(passed, passedRun{run, float64(sp.Start-trippedAt) / 1e6})
			}
		case momentResult:
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
				run, st = 0, brClosed
				continue
			}
			// A failed call; after a failed probe the breaker opens again
			// from here.
			run, st = run+1, brClosed
			trippedAt = sp.End
		case momentFast:
			if st == brClosed && run < minTrip {
				healthyFast++
				continue
			}
			if st == brClosed {
				b.OpenPeriods++
				if b.TripAfter == 0 || run < b.TripAfter {
					b.TripAfter = run
				}
				st, since = brOpen, trippedAt
			}
			b.FastFailedCalls++
			if st == brOpen {
				lastFast = sp.Start
			}
			if size {
				kinds[e.k] = brRejected
			}
		}
	}
	if st == brOpen {
		unclosed = append(unclosed, float64(lastFast-trippedAt)/1e6)
	}
	// Fast failures must be far likelier after failures in a row than
	// while the callee is healthy (at most a fifth as likely there).
	ownFailures := float64(healthyFast)*float64(max(tripped, 1)) >= 0.2*float64(b.FastFailedCalls)*float64(max(healthy, 1))
	// And an open breaker fails every request until its probe: fast
	// failures come in runs, not one at a time among failed calls.
	b.Detected = b.OpenPeriods > 0 && b.FastFailedCalls >= minFastFailed && !ownFailures &&
		2*b.FastFailedCalls >= 3*b.OpenPeriods
	if !b.Detected {
		if b.LongestFailureRun < minAbsentRun {
			return nil // too few failures in a row to tell
		}
		*b = Breaker{LongestFailureRun: b.LongestFailureRun}
		return b
	}
	if len(opens) == 0 {
		opens = unclosed
	}
	if len(opens) > 0 {
		slices.Sort(opens)
		b.OpenMS = round3(quantile(opens, 0.5))
	}
	b.TripRule = TripConsecutive
	for _, p := range passed {
		if p.run >= b.TripAfter && p.after < b.OpenMS/2 {
			b.PassedRuns++
		}
	}
	if b.PassedRuns > 0 {
		b.TripRule = TripFailureRate
		if size {
			var evs []brEvent
			for k, s := range spans {
				if kinds[k] != brNone {
					evs = append(evs, brEvent{ix.spans[s].Start, ix.spans[s].End, kinds[k]})
				}
			}
			b.FailureRate = fitFailureRate(evs, b.OpenMS)
		}
	}
	return b
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
