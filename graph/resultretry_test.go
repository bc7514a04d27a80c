package graph

import (
	"slices"
	"strings"
	"testing"
)

// attemptSpec is one attempt of a hand-built call: when it starts (ms
// from the call's start), how long it takes, and the HTTP status answered.
type attemptSpec struct {
	start, dur float64
	status     int
}

// pollAbove builds one call from root as sibling HTTP client spans to
// stock, one per attempt, each for url.
func pollAbove(b *builder, root int, at float64, url string, atts []attemptSpec) {
	for _, a := range atts {
		b.call(root, "stock", "GET /stock/{sku}", at+a.start, a.dur, httpStatus(a.status), method("GET"), target(url))
	}
}

// pollBelow builds one call from root whose attempts a library below the
// instrumentation sent under one HTTP client span: each a stock SERVER
// span, the first out after 0.5 ms, the client span ending back ms after
// the last attempt's answer (it waited for it: no earlier answer ended
// the call).
func pollBelow(b *builder, root int, at, back float64, atts []attemptSpec) {
	pollBelowAs(b, root, "GET", at, back, atts)
}

// pollBelowAs is pollBelow with HTTP method m.
func pollBelowAs(b *builder, root int, m string, at, back float64, atts []attemptSpec) {
	last := atts[len(atts)-1]
	c := b.client(root, "stock", at, 0.5+last.start+last.dur+back, method(m), target("http://stock/stock/7"))
	for _, a := range atts {
		b.server(c, "stock", m+" /stock/{sku}", at+0.5+a.start, a.dur, httpStatus(a.status), method(m))
	}
}

// TestResultRetriesAbove: a client that sends the very same HTTP request
// again right after an OK answer, with nothing else between, retried on
// the result (a 200 whose body says "pending", a poll until ready): one
// call, its 200 retried (marked so), its waits its backoff's. A request
// repeated with other calls between, other URLs (a loop over items), and
// RPCs whose identity does not hold their arguments stay calls of their
// own.
func TestResultRetriesAbove(t *testing.T) {
	pending := []attemptSpec{{0, 2, 200}, {12, 2, 200}, {24, 2, 200}}
	failedThenPending := []attemptSpec{{0, 2, 503}, {12, 2, 200}, {24, 2, 200}}
	for _, tc := range []struct {
		name           string
		build          func(b *builder, root int)
		calls          int
		retried        []string
		resultCalls    int
		resultRetries  int
		waits          int
		resultStatuses []string
	}{
		{name: "the same request after a 200, nothing between: retries on the result",
			build: func(b *builder, root int) { pollAbove(b, root, 1, "http://stock/stock/7", pending) },
			calls: 1, retried: []string{"200"}, resultCalls: 1, resultRetries: 2, waits: 2, resultStatuses: []string{"200"}},
		{name: "a 503, then a 200 retried on the result: one call, both retried",
			build: func(b *builder, root int) { pollAbove(b, root, 1, "http://stock/stock/7", failedThenPending) },
			calls: 1, retried: []string{"200", "503"}, resultCalls: 1, resultRetries: 1, waits: 2, resultStatuses: []string{"200"}},
		{name: "the same request with another call between: two calls",
			build: func(b *builder, root int) {
				pollAbove(b, root, 1, "http://stock/stock/7", pending[:1])
				b.call(root, "audit", "POST /log", 6, 2, httpStatus(200), method("POST"), target("http://audit/log"))
				pollAbove(b, root, 13, "http://stock/stock/7", pending[:1])
			},
			calls: 2, retried: []string{}},
		{name: "other URLs after a 200: a loop, not retries",
			build: func(b *builder, root int) {
				for i, u := range []string{"http://stock/stock/1", "http://stock/stock/2", "http://stock/stock/3"} {
					pollAbove(b, root, 1+float64(12*i), u, pending[:1])
				}
			},
			calls: 3, retried: []string{}},
		{name: "an RPC repeated after OK: its arguments are not in the span, so calls of their own",
			build: func(b *builder, root int) {
				for i := range 3 {
					b.call(root, "stock", "retryaudit.Stock/Get", 1+float64(12*i), 2, grpcCode(0), method("Get"), name("retryaudit.Stock/Get"), target("retryaudit.Stock/Get"))
				}
			},
			calls: 3, retried: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each in two traces: the backoff fit reads an attempt
			// index's waits from two or more.
			b := newBuilder()
			sequential(b, 2, "front", func(root, _ int) { tc.build(b, root) })
			tp := b.infer()
			e := edge(t, tp, "front", "stock")
			wantEq(t, "calls", e.Calls, 2*tc.calls)
			if !slices.Equal(e.RetriedStatus, tc.retried) {
				t.Errorf("retried statuses %q, want %q", e.RetriedStatus, tc.retried)
			}
			if e.Hedging != nil {
				t.Errorf("hedging %+v, want none: each attempt began after the one before had answered", *e.Hedging)
			}
			r := e.ResultRetries
			switch {
			case tc.resultCalls == 0 && r != nil:
				t.Errorf("result retries %+v, want none", *r)
			case tc.resultCalls > 0 && r == nil:
				t.Errorf("no result retries, want %d calls", tc.resultCalls)
			case tc.resultCalls > 0:
				wantEq(t, "calls retried on the result", r.Calls, 2*tc.resultCalls)
				wantEq(t, "retries on the result", r.Retries, 2*tc.resultRetries)
				if !slices.Equal(r.Statuses, tc.resultStatuses) {
					t.Errorf("statuses retried on the result %q, want %q", r.Statuses, tc.resultStatuses)
				}
				wantEq(t, "waits read", e.Backoff.Samples, 2*tc.waits)
			}
		})
	}
}

// TestResultRetriesBelow: under one client span, a request that reached
// the callee after an earlier one had answered OK there is a retry on the
// result when it came later than any round trip of the edge (the client
// had the answer: it waited for it, and sent the request again after its
// backoff); within the edge's transit it may be a hedge sent before that
// answer came back, which the spans cannot tell from a retry: unknown, and
// counted as a hedge, as it is on an edge whose other calls show hedges
// (requests that overlapped).
func TestResultRetriesBelow(t *testing.T) {
	polled := []attemptSpec{{0, 1, 200}, {11, 1, 200}, {32, 1, 200}} // 10 ms, then 20 ms after each answer
	soon := []attemptSpec{{0, 1, 200}, {2, 1, 200}}                  // 1 ms after the answer
	overlapping := []attemptSpec{{0, 30, 200}, {10, 1, 200}}         // a hedge while the first still runs
	for _, tc := range []struct {
		name    string
		calls   [][]attemptSpec
		back    []float64 // each call's answer's way back (ms)
		results int       // calls read as retried on the result
		retries int       // requests sent after an OK answer
		unknown int       // calls whose late request may be either
		hedged  int
		waits   int
		// replayed is how many attempts the replay's outcome mixes draw
		// as retryable failures (server_error): the answers retried on
		// their result, sent again as the caller did.
		replayed int
	}{
		{name: "late by far more than the edge's transit: retries on the result",
			calls: [][]attemptSpec{polled, polled, {{0, 1, 200}}}, back: []float64{0.5, 0.5, 0.5},
			results: 2, retries: 4, waits: 4, replayed: 4},
		{name: "late by less than the edge's transit: a hedge or a retry, unknown",
			calls: [][]attemptSpec{soon, soon, {{0, 1, 200}}}, back: []float64{0.5, 0.5, 0.5},
			unknown: 2, hedged: 2},
		{name: "the edge's transit is long: 10 ms late is no proof",
			calls: [][]attemptSpec{polled, {{0, 1, 200}}}, back: []float64{0.5, 25},
			unknown: 1, hedged: 1},
		{name: "on an edge that hedges, a late request is a hedge",
			calls: [][]attemptSpec{polled, overlapping, {{0, 1, 200}}}, back: []float64{0.5, 0.5, 0.5},
			hedged: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, len(tc.calls), "front", func(root, i int) { pollBelow(b, root, 1, tc.back[i], tc.calls[i]) })
			tp := b.infer()
			e := edge(t, tp, "front", "stock")
			hedged := 0
			if e.Hedging != nil {
				hedged = e.Hedging.Calls
			}
			wantEq(t, "hedged calls", hedged, tc.hedged)
			var r ResultRetries
			if e.ResultRetries != nil {
				r = *e.ResultRetries
			}
			wantEq(t, "calls retried on the result", r.Calls, tc.results)
			wantEq(t, "retries on the result", r.Retries, tc.retries)
			wantEq(t, "calls that may be either", r.Unknown, tc.unknown)
			wantEq(t, "retried 200", slices.Contains(e.RetriedStatus, "200"), tc.results > 0)
			wantEq(t, "waits read", e.Backoff.Samples, tc.waits)
			warned := slices.ContainsFunc(tp.Warnings, func(w string) bool { return strings.Contains(w, "hedge or retry on the result unknown") })
			wantEq(t, "warned that it is unknown", warned, tc.unknown > 0)
			replayed := 0
			if o := e.Outcomes; o != nil {
				replayed = o.First.ServerError + o.Retry.ServerError
			}
			wantEq(t, "attempts replayed as retryable failures", replayed, tc.replayed)
		})
	}
}

// TestResultRetryUnknownWrite: a write whose requests under one client
// span may be hedges or retries on the result repeats the request either
// way: the hedged-non-idempotent finding stands and says how many of the
// calls may be retries on the result; an edge whose hedges are not in
// doubt says nothing of it.
func TestResultRetryUnknownWrite(t *testing.T) {
	soon := []attemptSpec{{0, 1, 200}, {2, 1, 200}}
	overlapping := []attemptSpec{{0, 30, 200}, {10, 1, 200}}
	for _, tc := range []struct {
		name  string
		calls [][]attemptSpec
		note  bool
	}{
		{"late within the transit: maybe retries on the result", [][]attemptSpec{soon, soon}, true},
		{"overlapping: hedges", [][]attemptSpec{overlapping, overlapping}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, len(tc.calls), "front", func(root, i int) { pollBelowAs(b, root, "POST", 1, 0.5, tc.calls[i]) })
			tp := b.infer()
			var msg string
			for _, f := range tp.Findings {
				if f.ID == FindingHedgeWrite {
					msg = f.Message
				}
			}
			if msg == "" {
				t.Fatalf("no %s finding in %+v", FindingHedgeWrite, tp.Findings)
			}
			wantEq(t, "says the calls may be retries on the result", strings.Contains(msg, "2 of the edge's hedged calls may be retries on the result instead"), tc.note)
		})
	}
}
