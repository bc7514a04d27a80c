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
	// LongestFailureRun is the most consecutive failed calls seen.
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
// calls in a row). It is linear in the spans: each SERVER span is visited
// once per edge out of its operation.
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
	states := map[int][]uint8{}
	for n, eis := range edgesOf {
		spans := bySrc[n]
		clear(states)
		for _, ei := range eis {
			states[ei] = make([]uint8, len(spans))
		}
		// Which requests called each edge, and whether the call failed:
		// each request's calls visited once.
		for k, s := range spans {
			for _, c := range byServer.of(s) {
				st := states[int(c.edge)]
				switch {
				case st == nil:
				case ix.refused(byServer.call(c)):
					// A breaker below the instrumentation refused the call:
					// no request went out, as if no call was made.
				case ix.last(byServer.call(c)).outcome.failed():
					st[k] = callFailed
				case st[k] == noCall:
					st[k] = callOK
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

// breakerOf reads one edge's breaker from its caller operation's requests
// in time order and what each did with the callee (state); tail is the
// edge's late-tail noise (ms, 0 for none). With size it also keeps what
// each request did and sizes a failure-rate breaker from it (breakers
// asks for that only of one it found on a failure rate: most edges' many
// requests need no record kept).
func breakerOf(ix *index, spans []int32, state []uint8, tail float64, size bool) *Breaker {
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
	b := &Breaker{}
	run, open := 0, false
	var trippedAt, lastFast int64
	var opens, unclosed []float64
	// passed: failure runs after which a request made the call while the
	// breaker was closed, with how soon after the run's last failure ended
	// (ms): read against TripAfter and OpenMS once both are known.
	type passedRun struct {
		run   int
		after float64
	}
	var passed []passedRun
	// What each request did, for sizing a failure-rate breaker.
	var evs []brEvent
	// Requests seen while the callee's calls were healthy and while they
	// had failed minTrip times in a row (or a breaker was open), and the
	// quick server errors without a call among the healthy ones: a handler
	// that fails fast on its own does so in both states; a breaker only
	// after failures.
	var healthy, tripped, healthyFast int
	for k, s := range spans {
		sp := &ix.spans[s]
		if open || run >= minTrip {
			tripped++
		} else {
			healthy++
		}
		if state[k] != noCall && !open && run > 0 {
			passed = append(passed, passedRun{run, float64(sp.Start-trippedAt) / 1e6})
		}
		switch state[k] {
		case callFailed:
			if size {
				evs = append(evs, brEvent{sp.Start, sp.End, brKind(open, brProbeBad, brFailed)})
			}
			run++
			b.LongestFailureRun = max(b.LongestFailureRun, run)
			if open {
				// The probe failed: the breaker opens again from here.
				open = false
				opens = append(opens, float64((lastFast+sp.Start)/2-trippedAt)/1e6)
			}
			trippedAt = sp.End
		case callOK:
			if size {
				evs = append(evs, brEvent{sp.Start, sp.End, brKind(open, brProbeOK, brOK)})
			}
			if open {
				opens = append(opens, float64((lastFast+sp.Start)/2-trippedAt)/1e6)
			}
			run, open = 0, false
		default:
			// An open breaker answers as a server error (503, 500): a
			// quick 4xx is the request's own fault, not a breaker's.
			o, _ := classify(ix, s, s)
			quick := o == outcomeRetryable && float64(sp.Duration()) < fast
			if quick && !open && run < minTrip {
				healthyFast++
			}
			if !quick || !open && run < minTrip {
				continue
			}
			if !open {
				b.OpenPeriods++
				if b.TripAfter == 0 || run < b.TripAfter {
					b.TripAfter = run
				}
				open = true
			}
			b.FastFailedCalls++
			lastFast = sp.Start
			if size {
				evs = append(evs, brEvent{sp.Start, sp.End, brRejected})
			}
		}
	}
	if open {
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
			b.FailureRate = fitFailureRate(evs, b.OpenMS)
		}
	}
	return b
}
