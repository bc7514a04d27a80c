package graph

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestHedgesAmplify: 3 gateway attempts, each hedged by api into 3
// concurrent requests, is 9 requests at the bottom, not 3, at worst and as
// observed; a hedged POST is a finding.
func TestHedgesAmplify(t *testing.T) {
	b := newBuilder()
	sequential(b, 3, "gateway", func(root, i int) {
		at := 1.0
		for k := 0; k < 3; k++ {
			status := httpStatus(503)
			if k == 2 {
				status = httpStatus(200)
			}
			c := b.client(root, "api", at, 100, status)
			s := b.server(c, "api", "POST /pay", at+0.5, 99, status)
			for h := 0; h < 3; h++ { // the original and two hedges, 20ms apart
				opts := []opt{method("POST"), name("POST"), target("http://ledger/pay/1")}
				if h == 2 {
					opts = append(opts, httpStatus(200))
				} else {
					opts = append(opts, failed("context canceled"))
				}
				b.client(s, "ledger", at+1+20*float64(h), 60-10*float64(h), opts...)
			}
			at += 110
		}
	})
	tp := b.infer()
	e := edge(t, tp, "api", "ledger")
	if e.Hedging == nil || e.Hedging.MaxRequests != 3 || e.Hedging.DelayMS != 20 || e.Hedging.NonIdempotent != 9 {
		t.Fatalf("hedging %+v", e.Hedging)
	}
	var worst int
	for _, p := range tp.Paths {
		if p.Services[len(p.Services)-1] == "ledger" {
			worst = p.WorstCaseAmplification
			wantEq(t, "exact", p.WorstCaseExact, false)
			wantEq(t, "layers", len(p.RetryingLayers), 2)
			// Each trace sent ledger 9 requests for one root request:
			// the hedges count, as retries do.
			wantEq(t, "observed at ledger", p.ObservedMaxAmplification, 9.0)
		}
	}
	wantEq(t, "worst case at ledger", worst, 9)
	f := finding(t, tp, FindingHedgeWrite)
	wantEq(t, "location", f.Location, "api → ledger POST")
	wantEq(t, "severity", f.Severity, SeverityHigh)
}

// below is one call whose attempts a library below the instrumentation
// made: a CLIENT span from front to stock (an RPC unless opts name an HTTP
// method) and under it one stock SERVER span per attempt, each {start,
// duration, failed} in ms from the call's start.
type below struct {
	start, dur float64
	failed     bool
}

func belowCall(b *builder, root int, at float64, atts []below, opts ...opt) {
	end := 0.0
	for _, a := range atts {
		if !a.failed && (end == 0 || a.start+a.dur < end) {
			end = a.start + a.dur // the first answer commits the call
		}
	}
	if end == 0 {
		end = atts[len(atts)-1].start + atts[len(atts)-1].dur
	}
	opts = append([]opt{method("Get"), name("retryaudit.Stock/Get")}, opts...)
	c := b.client(root, "stock", at, end+1, opts...)
	for _, a := range atts {
		status := grpcCode(0)
		if a.failed {
			status = grpcCode(14)
		}
		b.server(c, "stock", "retryaudit.Stock/Get", at+0.5+a.start, a.dur, status)
	}
}

// TestHedgesBelowInstrumentation: attempts of one call that a library
// below the instrumentation sent (grpc-js's hedgingPolicy), seen only as
// the callee's SERVER spans under one CLIENT span, are hedges when one
// starts while an earlier one still runs, and retries when each starts
// after the one before has failed. A hedge's delay counts from the start
// of the attempt before it (a non-fatal failure sent again at once does
// not stretch it); a call allowed N concurrent requests multiplies by N;
// a hedged RPC, whose idempotency no span shows, is a finding, a hedged
// GET is not. Only a call answered by an earlier attempt while a later one
// still ran tells hedging from per-try timeouts that leave the callee at
// work; where no call shows it, a warning says so.
func TestHedgesBelowInstrumentation(t *testing.T) {
	slowWins := []below{{0, 150, false}, {30, 1, false}}                    // the hedge answers first
	allSlow := []below{{0, 150, false}, {30, 150, false}, {60, 150, false}} // the first answers first
	for _, tc := range []struct {
		name      string
		calls     [][]below
		opts      []opt
		hedged    int     // calls read as hedged
		delay     float64 // their delay (ms)
		most      int     // the most requests one sent
		unknown   int     // hedged calls of unknown idempotency
		earlier   int     // hedged calls answered by an earlier attempt
		retries   bool
		worst     int
		findingID string // the hedging finding expected, "" for none
	}{
		{name: "overlapping attempts 30ms apart are hedges", calls: [][]below{slowWins, allSlow, slowWins, {{0, 1, false}}},
			hedged: 3, delay: 30, most: 3, unknown: 3, earlier: 1, worst: 3, findingID: FindingHedgeUnknown},
		{name: "a hedged GET is idempotent: no finding", calls: [][]below{slowWins, allSlow, {{0, 1, false}}}, opts: []opt{method("GET"), name("GET")},
			hedged: 2, delay: 30, most: 3, earlier: 1, worst: 3},
		{name: "each call answered by its latest attempt: hedges or per-try timeouts, and a warning says so",
			calls:  [][]below{slowWins, {{0, 150, false}, {30, 150, false}, {60, 1, false}}},
			hedged: 2, delay: 30, most: 3, unknown: 2, worst: 3, findingID: FindingHedgeUnknown},
		{name: "the delay counts from the attempt before the hedge, not from a failure sent again",
			calls:  [][]below{{{0, 1, true}, {3, 150, false}, {33, 1, false}}, {{0, 1, true}, {3, 150, false}, {33, 150, false}, {63, 1, false}}},
			hedged: 2, delay: 30, most: 4, unknown: 2, worst: 4, findingID: FindingHedgeUnknown},
		{name: "attempts each after the one before failed are retries, not hedges",
			calls:   [][]below{{{0, 1, true}, {3, 1, false}}, {{0, 1, true}, {3, 1, true}, {6, 1, true}}, {{0, 1, false}}},
			retries: true, worst: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, len(tc.calls), "front", func(root, i int) { belowCall(b, root, 1, tc.calls[i], tc.opts...) })
			tp := b.infer()
			e := edge(t, tp, "front", "stock")
			wantEq(t, "calls", e.Calls, len(tc.calls))
			wantEq(t, "retries", e.Retries, tc.retries)
			switch h := e.Hedging; {
			case tc.hedged == 0 && h != nil:
				t.Errorf("hedging %+v, want none", *h)
			case tc.hedged > 0 && h == nil:
				t.Errorf("no hedging, want %d hedged calls", tc.hedged)
			case tc.hedged > 0:
				want := Hedging{Calls: tc.hedged, DelayMS: tc.delay, MaxRequests: tc.most, IdempotencyUnknown: tc.unknown,
					BelowInstrumentation: tc.hedged, AnsweredByEarlier: tc.earlier, OnFailure: HedgeFailUnknown} // no attempt fails while another is out
				if *h != want {
					t.Errorf("hedging %+v, want %+v", *h, want)
				}
			}
			warned := slices.ContainsFunc(tp.Warnings, func(w string) bool { return strings.Contains(w, "may be retries, not hedges") })
			wantEq(t, "warned that the overlaps may be per-try timeouts", warned, tc.hedged > 0 && tc.earlier == 0)
			wantEq(t, "worst case", tp.Paths[0].WorstCaseAmplification, tc.worst)
			for _, id := range []string{FindingHedgeUnknown, FindingHedgeWrite} {
				if got := slices.Contains(findingIDs(tp), id); got != (id == tc.findingID) {
					t.Errorf("finding %s present %v, want %v: %v", id, got, id == tc.findingID, findingIDs(tp))
				}
			}
			if tc.findingID != "" {
				wantEq(t, "severity", finding(t, tp, tc.findingID).Severity, SeverityMedium)
			}
			if tc.hedged > 0 {
				// A hedge follows no failure: its outcome counts as a
				// first attempt's, so that a replay draws it as one.
				first, retried := 0, 0
				if o := e.Outcomes; o != nil {
					first = o.First.Total()
					for _, m := range o.RetryByAttempt {
						retried += m.Total()
					}
				}
				hedges, resent := 0, 0
				for _, c := range tc.calls {
					for k := 1; k < len(c); k++ {
						if c[k].start < c[k-1].start+c[k-1].dur {
							hedges++
						} else {
							resent++
						}
					}
				}
				wantEq(t, "first attempts and hedges counted first", first, len(tc.calls)+hedges)
				wantEq(t, "attempts sent again after a failure counted as retries", retried, resent)
			}
		})
	}
}

// TestImmediateBelowInstrumentation: waits read between the callee's
// spans hold the round trip through the caller, which the edge's answered
// single attempts show (client span less server span): a library sending
// a failed request again at once below the instrumentation retries
// immediately, though every wait between the callee's spans is 2.5ms. The
// same 2.5ms with a 0.2ms round trip is a wait of the caller's own.
func TestImmediateBelowInstrumentation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		roundTrip float64 // ms the single attempts' client spans outlast their server spans
		want      BackoffKind
	}{
		{"2.5ms waits with a 3ms round trip are immediate", 3, BackoffImmediate},
		{"2.5ms waits with a 0.2ms round trip are not", 0.2, BackoffConstant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, 16, "front", func(root, i int) {
				if i%2 == 0 {
					// A single attempt, answered: the round trip.
					c := b.client(root, "stock", 1, 1+tc.roundTrip, method("Get"), name("retryaudit.Stock/Get"), grpcCode(0))
					b.server(c, "stock", "retryaudit.Stock/Get", 1+tc.roundTrip/2, 1, grpcCode(0))
					return
				}
				belowCall(b, root, 1, []below{{0, 1, true}, {3.5, 1, true}, {7, 1, false}})
			})
			e := edge(t, b.infer(), "front", "stock")
			wantEq(t, "evidence", e.Evidence, "below-instrumentation")
			wantEq(t, "backoff", e.Backoff.Kind, tc.want)
		})
	}
}

// TestLateConcurrentAttempts: attempts read below the instrumentation (the
// callee's spans under one client span) are ordered by when they reached
// the callee, which on a loaded host is not when they were sent. One that
// reached it after another attempt of the call had answered OK was sent
// before the client read that answer, since no library sends a request
// again after a success: a concurrent attempt delayed in transit (here the
// first attempt, overtaken by the hedge sent 30 ms after it), which makes
// the call hedged, with no hedge delay of its own (delay_unknown; where no
// hedged call shows one, the delay is unknown and a warning says so), no
// wait before it and no retry after an OK answer. Attempts sent again after a failure stay
// retries, with their waits, beside such calls as well as without them.
func TestLateConcurrentAttempts(t *testing.T) {
	retried := []below{{0, 1, true}, {3, 1, false}}        // UNAVAILABLE, sent again 2 ms after
	overtaken := []below{{30, 1, false}, {45, 150, false}} // the hedge answers before the first attempt arrives
	hedged := []below{{0, 150, false}, {30, 1, false}}     // the hedge answers first, both on time
	for _, tc := range []struct {
		name         string
		calls        [][]below
		hedged       int      // calls read as hedged
		delay        float64  // their delay (ms), from the calls that show it
		delayUnknown int      // hedged calls that show no delay
		waits        int      // waits read between attempts
		retriedCodes []string // the statuses sent again
		retries      bool
		firsts       int     // attempts whose outcome counts as a first attempt's
		longest      float64 // the longest wait before a first retry replay draws (ms; a hedge's is 0)
	}{
		{name: "a plain retry below the instrumentation stays a retry", calls: [][]below{retried, retried, retried, {{0, 1, false}}},
			waits: 3, retriedCodes: []string{"grpc UNAVAILABLE"}, retries: true, firsts: 4, longest: 2},
		{name: "a first attempt overtaken by its hedge is no retry after OK", calls: [][]below{overtaken, overtaken, hedged, {{0, 1, false}}},
			hedged: 3, delay: 30, delayUnknown: 2, retriedCodes: []string{}, firsts: 7},
		{name: "overtaken attempts beside retries", calls: [][]below{overtaken, retried, hedged, retried, {{0, 1, false}}},
			hedged: 2, delay: 30, delayUnknown: 1, waits: 2, retriedCodes: []string{"grpc UNAVAILABLE"}, retries: true, firsts: 7, longest: 2},
		{name: "every hedged call overtaken: the delay is unknown, and a warning says so", calls: [][]below{overtaken, overtaken, retried, {{0, 1, false}}},
			hedged: 2, delayUnknown: 2, waits: 1, retriedCodes: []string{"grpc UNAVAILABLE"}, retries: true, firsts: 6, longest: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, len(tc.calls), "front", func(root, i int) { belowCall(b, root, 1, tc.calls[i]) })
			tp := b.infer()
			e := edge(t, tp, "front", "stock")
			switch h := e.Hedging; {
			case tc.hedged == 0 && h != nil:
				t.Errorf("hedging %+v, want none", *h)
			case tc.hedged > 0 && h == nil:
				t.Errorf("no hedging, want %d hedged calls", tc.hedged)
			case tc.hedged > 0:
				wantEq(t, "hedged calls", h.Calls, tc.hedged)
				wantEq(t, "hedge delay", h.DelayMS, tc.delay)
				wantEq(t, "hedged calls that show no delay", h.DelayUnknown, tc.delayUnknown)
			}
			warned := slices.ContainsFunc(tp.Warnings, func(w string) bool { return strings.Contains(w, "hedge delay unknown") })
			wantEq(t, "warned that the hedge delay is unknown", warned, tc.hedged > 0 && tc.delayUnknown == tc.hedged)
			wantEq(t, "retries", e.Retries, tc.retries)
			wantEq(t, "waits read", e.Backoff.Samples, tc.waits)
			if !slices.Equal(e.RetriedStatus, tc.retriedCodes) {
				t.Errorf("retried statuses %q, want %q", e.RetriedStatus, tc.retriedCodes)
			}
			longest := 0.0
			if len(e.WaitQuantilesMS) > 0 {
				longest = e.WaitQuantilesMS[0][len(e.WaitQuantilesMS[0])-1]
			}
			if math.Abs(longest-tc.longest) > 1e-6 {
				t.Errorf("longest wait before a first retry replay draws %g ms, want %g", longest, tc.longest)
			}
			first := 0
			if o := e.Outcomes; o != nil {
				first = o.First.Total()
			}
			wantEq(t, "attempts counted as first attempts", first, tc.firsts)
		})
	}
}

// wire is one request a library below the instrumentation sent over HTTP:
// the callee's SERVER span, {start, duration} in ms from the call's start,
// answered with HTTP status code (0: the span ends without one).
type wire struct {
	start, dur float64
	code       int
}

// httpBelowCall adds one GET from parent to db whose requests a library
// below the instrumentation sent: one CLIENT span, ending at end (ms from
// at) with status code answer (0: no answer reached it, an EOF), and under
// it one db SERVER span per request.
func httpBelowCall(b *builder, parent int, at, end float64, answer int, reqs []wire) {
	opts := []opt{method("GET"), target("http://db/db/stock/1")}
	if answer != 0 {
		opts = append(opts, httpStatus(answer))
	} else {
		opts = append(opts, failed("EOF"))
	}
	c := b.client(parent, "db", at, end, opts...)
	for _, r := range reqs {
		sopts := []opt{method("GET")}
		if r.code != 0 {
			sopts = append(sopts, httpStatus(r.code))
		}
		b.server(c, "db", "GET /db/stock/{sku}", at+0.1+r.start, r.dur, sopts...)
	}
}

// TestUnansweredBelowInstrumentation: an HTTP SERVER span that ends
// without a status code sent no answer (a handler that aborted, a
// connection closed under it) where the callee's instrumentation is seen
// to record codes (a sibling span under the same client span carries one)
// or the client span got no answer either. The request sent right after
// it is sent again after a failure, at once (net/http resending a GET on
// a new connection, a hedging library's next request), not a hedge that
// reached the callee late after an OK answer; without either evidence a
// span without a code stays an answer.
func TestUnansweredBelowInstrumentation(t *testing.T) {
	aborted := []wire{{0, 0.1, 0}, {0.3, 0.1, 200}}                     // aborted, sent again at once, answered
	abortedTwice := []wire{{0, 0.1, 0}, {0.3, 0.1, 0}, {0.6, 0.1, 200}} // the same after two aborts
	hedgeAborted := []wire{{0, 150, 200}, {25, 0.1, 0}, {25.3, 0.1, 200}}
	for _, tc := range []struct {
		name    string
		calls   [][]wire
		ends    []float64 // when each call's client span ends (ms)
		answers []int     // its status code, 0 for none (EOF)
		retries bool
		hedged  int     // calls read as hedged
		delay   float64 // their delay (ms)
		unknown int     // hedged calls that show no delay
		retried []string
	}{
		{name: "an answer-less span beside an answered one failed: the next request is a retry at once",
			calls: [][]wire{aborted, abortedTwice, aborted, {{0, 0.1, 200}}}, ends: []float64{0.6, 0.9, 0.6, 0.3}, answers: []int{200, 200, 200, 200},
			retries: true, retried: []string{"transport error"}},
		{name: "a client span without an answer: every span without a code under it failed",
			calls: [][]wire{{{0, 0.1, 0}, {0.3, 0.1, 0}}, aborted, {{0, 0.1, 200}}}, ends: []float64{0.6, 0.6, 0.3}, answers: []int{0, 200, 200},
			retries: true, retried: []string{"transport error"}},
		{name: "a hedge that got no answer, sent again at once: the call is hedged after the delay",
			calls: [][]wire{hedgeAborted, hedgeAborted, {{0, 0.1, 200}}}, ends: []float64{26, 26, 0.3}, answers: []int{200, 200, 200},
			hedged: 2, delay: 25, retried: []string{}}, // a hedged call's requests count as hedging's, not as retries
		{name: "no code anywhere and an answered client: no evidence, the spans stay answers",
			calls: [][]wire{{{0, 0.1, 0}, {0.3, 0.1, 0}}, {{0, 0.1, 0}}}, ends: []float64{0.6, 0.3}, answers: []int{200, 200},
			hedged: 1, unknown: 1, retried: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, len(tc.calls), "inventory", func(root, i int) { httpBelowCall(b, root, 1, tc.ends[i], tc.answers[i], tc.calls[i]) })
			e := edge(t, b.infer(), "inventory", "db")
			wantEq(t, "calls", e.Calls, len(tc.calls))
			wantEq(t, "retries", e.Retries, tc.retries)
			if !slices.Equal(e.RetriedStatus, tc.retried) {
				t.Errorf("retried statuses %q, want %q", e.RetriedStatus, tc.retried)
			}
			if tc.retries {
				wantEq(t, "backoff", e.Backoff.Kind, BackoffImmediate)
			}
			switch h := e.Hedging; {
			case tc.hedged == 0 && h != nil:
				t.Errorf("hedging %+v, want none", *h)
			case tc.hedged > 0 && h == nil:
				t.Errorf("no hedging, want %d hedged calls", tc.hedged)
			case tc.hedged > 0:
				wantEq(t, "hedged calls", h.Calls, tc.hedged)
				wantEq(t, "hedge delay", h.DelayMS, tc.delay)
				wantEq(t, "hedged calls that show no delay", h.DelayUnknown, tc.unknown)
			}
		})
	}
}

// TestBelowJoinsAbove: a layer above the instrumentation may send a
// request again through a library that resends below it (hedgedhttp over
// net/http, whose Transport resends a GET on a new connection when a
// reused one closes with no answer): one client span holding several of
// the callee's spans, and sibling client spans of the same request. When
// a client span starts after the call before it ended failing, or while
// that call's request still runs (a hedge), its requests are that call's,
// in the order sent; the wait before a client span sent again counts
// from when the client span before it ended, not from its last request's
// end at the callee. After a call that answered OK, a client span starts
// a call of its own.
func TestBelowJoinsAbove(t *testing.T) {
	type step struct {
		at, end float64 // the client span, ms from the root's start
		answer  int     // its status code, 0: no answer (EOF), -1: cancelled (a hedge that lost)
		reqs    []wire  // the callee's spans under it, ms from at
	}
	// The client span ends 4.6ms after its last request's end at the
	// callee (net/http noticing the closed connection): the layer above
	// sends again at once after that.
	resentBelowFailed := []step{{1, 6, 0, []wire{{0, 0.1, 0}, {0.3, 0.1, 0}}}, {6, 6.5, 200, []wire{{0.1, 0.2, 200}}}}
	failedThenBelow := []step{{1, 1.3, 0, []wire{{0, 0.1, 0}}}, {1.3, 2, 200, []wire{{0, 0.1, 0}, {0.3, 0.2, 200}}}}
	hedgeResentBelow := []step{{1, 27, -1, []wire{{0.1, 150, 200}}}, {26, 27, 200, []wire{{0.1, 0.1, 0}, {0.4, 0.2, 200}}}}
	okThenBelow := []step{{1, 1.3, 200, []wire{{0.1, 0.1, 200}}}, {2, 2.6, 200, []wire{{0, 0.1, 0}, {0.3, 0.2, 200}}}}
	for _, tc := range []struct {
		name     string
		call     []step
		calls    int // calls per trace
		attempts int // attempts per trace
		hedged   bool
		delay    float64
		waits    int // waits read per trace
	}{
		{"a client span sent again after one whose requests all failed below it", resentBelowFailed, 1, 3, false, 0, 2},
		{"requests resent below a client span sent again after a failure", failedThenBelow, 1, 3, false, 0, 2},
		{"a hedge whose first request got no answer and was resent below it", hedgeResentBelow, 1, 3, true, 25, 0}, // a hedged call's gaps are no waits
		{"a client span after a call answered OK is a call of its own", okThenBelow, 2, 3, false, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 6
			b := newBuilder()
			sequential(b, n, "inventory", func(root, i int) {
				for _, s := range tc.call {
					opts := []opt{method("GET"), target("http://db/db/stock/1")}
					switch s.answer {
					case 0:
						opts = append(opts, failed("EOF"))
					case -1:
						opts = append(opts, failed("context canceled"))
					default:
						opts = append(opts, httpStatus(s.answer))
					}
					c := b.client(root, "db", s.at, s.end-s.at, opts...)
					for _, r := range s.reqs {
						sopts := []opt{method("GET")}
						if r.code != 0 {
							sopts = append(sopts, httpStatus(r.code))
						}
						b.server(c, "db", "GET /db/stock/{sku}", s.at+r.start, r.dur, sopts...)
					}
				}
			})
			e := edge(t, b.infer(), "inventory", "db")
			wantEq(t, "calls", e.Calls, n*tc.calls)
			wantEq(t, "attempts", e.Attempts, n*tc.attempts)
			wantEq(t, "hedged", e.Hedging != nil, tc.hedged)
			if tc.hedged && e.Hedging != nil {
				wantEq(t, "hedged calls", e.Hedging.Calls, n)
				wantEq(t, "hedge delay", e.Hedging.DelayMS, tc.delay)
			}
			wantEq(t, "waits read", e.Backoff.Samples, n*tc.waits)
			if tc.waits > 0 {
				wantEq(t, "backoff", e.Backoff.Kind, BackoffImmediate)
			}
		})
	}
}

// TestAbortedResentNoDeadline: a request the callee aborted and the
// client sent again at once ends as fast as the short call around it,
// within the tolerance that tells an attempt cut by the caller's own
// deadline; the call went on after it, so its caller was still waiting:
// no deadline cut it. An attempt cut with nothing after it, when the
// caller's attempt ended, is one.
func TestAbortedResentNoDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  bool // the db attempt is the call's last, cut as the caller's attempt ends
		want int
	}{
		{"an aborted request sent again at once", false, 0},
		{"an attempt cut as its caller's attempt ended", true, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, 8, "api", func(root, i int) {
				up := b.client(root, "inventory", 1, 1.5, method("GET"), httpStatus(200))
				inv := b.server(up, "inventory", "GET /inventory/{sku}", 1.05, 1.4, method("GET"), httpStatus(200))
				if tc.cut {
					c := b.client(inv, "db", 1.1, 1.35, method("GET"), target("http://db/db/stock/1"), failed("context deadline exceeded"))
					b.server(c, "db", "GET /db/stock/{sku}", 1.15, 100, method("GET"), httpStatus(200))
					return
				}
				httpBelowCall(b, inv, 1.1, 0.6, 200, []wire{{0, 0.1, 0}, {0.3, 0.1, 200}})
			})
			e := edge(t, b.infer(), "inventory", "db")
			wantEq(t, "attempts cut by the caller's deadline", e.DeadlineFromCaller, tc.want)
		})
	}
}

// TestImmediateRetriesOverlapping: a library that retries at once from
// inside the failed response's handler (superagent) sends the next request
// before the instrumentation ends the span of the one that failed, so the
// client spans overlap by the handler's run; the callee's spans, on one
// clock, show the failed attempt answered before the next arrived. Those
// are immediate retries, not hedges. An attempt that reached the callee
// while the one before was still being served there is a hedge, whatever
// the client spans show; so is one whose callee is another process (its
// clock says nothing of the other's).
func TestImmediateRetriesOverlapping(t *testing.T) {
	// attempt adds one attempt from root to stock at ms for dur ms,
	// answered 503 (or 200) by stock's SERVER span from at+srvFrom for
	// srvDur ms, recorded by the stock process named inst.
	attempt := func(b *builder, root int, at, dur, srvFrom, srvDur float64, ok bool, inst string) {
		st := httpStatus(503)
		if ok {
			st = httpStatus(200)
		}
		c := b.client(root, "stock", at, dur, st, target("http://stock/stock/1"))
		b.server(c, "stock", "GET /stock/:sku", at+srvFrom, srvDur, st, instance(inst))
	}
	for _, tc := range []struct {
		name string
		// next is when the second attempt starts (the first runs 0-2ms,
		// its server span 0.3-1.2ms), and where the callee serves it.
		next       float64
		nextSrvAt  float64
		nextInst   string
		wantHedged bool
	}{
		{"the next request sent 0.4ms before the failed span ended, after the callee answered: an immediate retry", 1.6, 1.9, "stock-0", false},
		{"the next request reached the callee 0.5ms before the first was answered there: the server ended its span late, a retry still", 1.6, 0.7, "stock-0", false},
		{"the next request sent 1.5ms before the failed span ended: more than a handler's run, a hedge", 0.5, 0.8, "stock-0", true},
		{"answered first on another callee process: its clock cannot say, a hedge", 1.6, 1.9, "stock-1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, 8, "front", func(root, _ int) {
				attempt(b, root, 0, 2, 0.3, 0.9, false, "stock-0")
				c := b.client(root, "stock", tc.next, 1.5, httpStatus(200), target("http://stock/stock/1"))
				b.server(c, "stock", "GET /stock/:sku", tc.nextSrvAt, 0.5, httpStatus(200), instance(tc.nextInst))
			})
			e := edge(t, b.infer(), "front", "stock")
			wantEq(t, "hedged", e.Hedging != nil, tc.wantHedged)
			if !tc.wantHedged {
				wantEq(t, "calls", e.Calls, 8)
				wantEq(t, "retries", e.Retries, true)
				wantEq(t, "backoff", e.Backoff.Kind, BackoffImmediate)
			}
		})
	}
}

// TestHedgeFailureFollows: in a hedged call where an attempt answered
// with a failure while another was still out, what the client did next is
// read from the spans: it ended the call (its client span ends before
// the attempt out answered, nothing more sent), sent the next request at
// once (before the attempt out answered and before its hedge timer was
// due), or waited (nothing sent until the attempt out answered, or only
// when the timer fired). Below the instrumentation the call's one client
// span says when the client stopped waiting; above it, each attempt's
// own client span, cancelled before its callee answered. No call that
// shows it: unknown.
func TestHedgeFailureFollows(t *testing.T) {
	type call struct {
		end    float64 // the client span's end, ms from its start
		answer int     // its status code, 0: no answer (EOF)
		reqs   []wire
	}
	ended := call{40.5, 503, []wire{{0, 40, 503}, {25, 250, 200}}}                   // hedgedhttp: the 503 is the call's answer
	sentNext := call{26, 200, []wire{{0, 150, 200}, {25, 0.1, 0}, {25.3, 0.1, 200}}} // no answer: the next at once
	sentNextLate := call{31, 200, []wire{{0, 150, 200}, {25, 5, 503}, {30.1, 0.1, 200}}}
	waited := call{125.5, 200, []wire{{0, 40, 503}, {25, 100, 200}}}           // the call waited for the hedge
	timer := call{52, 200, []wire{{0, 30, 503}, {25, 100, 200}, {50, 1, 200}}} // the next only when the timer fired
	quiet := call{27, 200, []wire{{0, 150, 200}, {25, 1, 200}}}                // no failure while one was out
	fast := call{0.5, 200, []wire{{0, 0.1, 200}}}
	// A lone failure sent again at once, then a hedge failing while that
	// request is out: the second failure is the one read.
	loneFirst := call{26.5, 200, []wire{{0, 0.1, 0}, {0.3, 150, 200}, {25.3, 0.1, 0}, {25.6, 0.1, 200}}}
	for _, tc := range []struct {
		name  string
		calls []call
		want  FailedWhileOut
		on    string
	}{
		{"a failure ends the call", []call{ended, ended, quiet, fast}, FailedWhileOut{Ended: 2}, HedgeFailEnds},
		{"the next request at once", []call{sentNext, sentNextLate, quiet, fast}, FailedWhileOut{SentNext: 2}, HedgeFailSendsNext},
		{"a lone failure first: the one while another is out is read", []call{loneFirst, fast}, FailedWhileOut{SentNext: 1}, HedgeFailSendsNext},
		{"some end, some send the next", []call{ended, sentNext, fast}, FailedWhileOut{Ended: 1, SentNext: 1}, HedgeFailEndsOrSendsNext},
		{"the client waits for the attempt out or its timer", []call{waited, timer, fast}, FailedWhileOut{Waited: 2}, HedgeFailWaits},
		{"more wait than act", []call{waited, timer, ended}, FailedWhileOut{Ended: 1, Waited: 2}, HedgeFailWaits},
		{"no call shows it", []call{quiet, quiet, fast}, FailedWhileOut{}, HedgeFailUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, len(tc.calls), "inventory", func(root, i int) {
				c := tc.calls[i]
				httpBelowCall(b, root, 1, c.end, c.answer, c.reqs)
			})
			e := edge(t, b.infer(), "inventory", "db")
			if e.Hedging == nil {
				t.Fatal("no hedging")
			}
			wantEq(t, "failed while out", e.Hedging.FailedWhileOut, tc.want)
			wantEq(t, "on failure", e.Hedging.OnFailure, tc.on)
		})
	}
	// Above the instrumentation: each request its own client span.
	for _, tc := range []struct {
		name      string
		cancelled bool // the hedge's client span ends when the 503 comes, before its callee answers
		want      FailedWhileOut
	}{{"the hedge cancelled at the failure: ended", true, FailedWhileOut{Ended: 1}},
		{"the hedge's answer read: waited", false, FailedWhileOut{Waited: 1}}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, 2, "api", func(root, i int) {
				get := []opt{method("GET"), name("GET"), target("http://ledger/entries/1")}
				if i == 1 {
					c := b.client(root, "ledger", 1, 2, append(get, httpStatus(200))...)
					b.server(c, "ledger", "GET /entries/{id}", 1.2, 1.6, httpStatus(200))
					return
				}
				c := b.client(root, "ledger", 1, 40, append(get, httpStatus(503))...)
				b.server(c, "ledger", "GET /entries/{id}", 1.2, 39.6, httpStatus(503))
				hedge := append(get, httpStatus(200))
				dur := 200.0
				if tc.cancelled {
					hedge, dur = append(get, failed("context canceled")), 15.2
				}
				h := b.client(root, "ledger", 26, dur, hedge...)
				b.server(h, "ledger", "GET /entries/{id}", 26.2, 199.6, httpStatus(200))
			})
			e := edge(t, b.infer(), "api", "ledger")
			if e.Hedging == nil {
				t.Fatal("no hedging")
			}
			wantEq(t, "failed while out", e.Hedging.FailedWhileOut, tc.want)
		})
	}
}
