package graph

import (
	"strings"
	"testing"
)

// retryBreakerTraffic sends requests to gateway one after another, 5ms
// after the one before ended, each in its own trace; gateway calls
// payments through a retry loop around a circuit breaker, waiting
// waits[k-1] ms before try k (10ms each where waits is nil). Each call is a word of tries: 'o' a request payments answers
// 200 in 2ms, 'x' one it answers 503 in 2ms, 'r' a try the open breaker
// refuses (no request, no span; the loop still waits before the next).
// The request ends 0.2ms after its last try, 200 if that succeeded,
// else 503. slowMS, where a word is 's', is a request that answers 503
// after that long without calling payments at all (the handler's own
// failure, not a refused loop).
func retryBreakerTraffic(b *builder, calls []string, slowMS float64, waits []float64) {
	const leg = 2.0
	if waits == nil {
		waits = []float64{10, 10}
	}
	at := 0.0
	for i, word := range calls {
		if i > 0 {
			b.newTrace()
		}
		if word == "s" {
			b.server(-1, "gateway", "GET /pay", at, slowMS, httpStatus(503))
			at += slowMS + 5
			continue
		}
		// Lay the tries out, then the request's span around them.
		type sent struct {
			at     float64
			status int
		}
		var reqs []sent
		t := at + 0.1
		for k, try := range word {
			if k > 0 {
				t += waits[k-1]
			}
			switch try {
			case 'o':
				reqs = append(reqs, sent{t, 200})
				t += leg
			case 'x':
				reqs = append(reqs, sent{t, 503})
				t += leg
			case 'r':
				t += 0.05
			}
		}
		status := 503
		if strings.HasSuffix(word, "o") {
			status = 200
		}
		root := b.server(-1, "gateway", "GET /pay", at, t+0.2-at, httpStatus(status))
		for _, r := range reqs {
			b.call(root, "payments", "POST /charge", r.at, leg, httpStatus(r.status))
		}
		at = t + 0.2 + 5
	}
}

// repeat returns n copies of word.
func repeat(word string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = word
	}
	return out
}

// joinCalls concatenates lists of calls.
func joinCalls(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestRetryAroundBreaker: a retry loop wrapped around a circuit breaker
// (failsafe-go's failsafe.With(retryPolicy, circuitBreaker), Polly or
// resilience4j with the retry outside) retries the breaker's refusals
// after its own waits: a call whose every try it refused makes no
// request and lasts the loop's waits, not failing at once, and a call it
// refused in part sends fewer requests than tries. Those whole refusals
// are the breaker's fast failures; the refused tries inside calls that
// sent requests are unknown; and the breaker's trip rule, which counts
// tries, not calls, is unknown. A handler that fails slowly on its own
// without calling is no breaker, nor is a breaker around the loop read as
// one inside it.
func TestRetryAroundBreaker(t *testing.T) {
	healthy := repeat("o", 6)
	recovered := joinCalls(repeat("xo", 5), repeat("xxo", 3))
	retried := joinCalls(recovered, repeat("xxx", 2))
	outage := []string{"xxx", "rrr", "rrr", "rrx", "rrr", "xrr", "rro", "o"}
	runCases(t, []inferCase{
		{
			name: "calls refused whole after the loop's waits: fast failures, refused tries unknown",
			build: func(b *builder) {
				retryBreakerTraffic(b, joinCalls(healthy, retried, outage, healthy, outage, healthy), 0, nil)
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "gateway", "payments")
				br := e.Breaker
				if br == nil || !br.Detected {
					t.Fatalf("breaker %+v, want one detected", br)
				}
				rr := br.RetriedRefusals
				if rr == nil {
					t.Fatalf("breaker %+v, want its retried refusals read", *br)
				}
				// Per outage: 3 calls refused whole; "rrx" and "rro" sent
				// their request two waits late; "rrx" and "xrr" gave up
				// with fewer than 3 requests, "xrr" two waits after its
				// last answer ("rrx" ended at once: its refusals came
				// first).
				wantEq(t, "fast-failed calls", br.FastFailedCalls, 6)
				wantEq(t, "waited calls", rr.WaitedCalls, 6)
				wantEq(t, "late-start calls", rr.LateStartCalls, 4)
				wantEq(t, "early-end calls", rr.EarlyEndCalls, 2)
				wantEq(t, "joined-gap calls", rr.JoinedGapCalls, 0)
				wantEq(t, "refused tries", rr.RefusedTries, TripUnknown)
				wantEq(t, "trip rule", br.TripRule, TripUnknown)
				wantEq(t, "trip after", br.TripAfter, 0)
				if rr.WaitsMS[0] > 20.5 || rr.WaitsMS[1] < 20 {
					t.Errorf("waits %v ms, want about 20 (two 10ms waits)", rr.WaitsMS)
				}
				if !strings.Contains(rr.Trip, "counts tries") {
					t.Errorf("trip %q, want why the rule is unknown", rr.Trip)
				}
				// The loop's schedule, read from the requests it sent.
				wantEq(t, "max attempts", e.MaxAttempts, 3)
				wantEq(t, "exact", e.MaxAttemptsExact, true)
				wantEq(t, "backoff", e.Backoff.Kind, BackoffConstant)
			},
		},
		{
			// A probe let through after a refused try: two waits between
			// two requests of one call, which is no longer wait of the
			// loop's schedule nor its jitter.
			name: "requests two waits apart, a refused try between them: the schedule stays 10ms constant, unjittered",
			build: func(b *builder) {
				joined := []string{"xxx", "rrr", "xro", "xro", "xrx", "xro", "o"}
				retryBreakerTraffic(b, joinCalls(healthy, retried, joined, healthy, joined, retried, joined, healthy, joined, healthy), 0, nil)
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "gateway", "payments")
				wantEq(t, "backoff", e.Backoff.Kind, BackoffConstant)
				wantEq(t, "jitter", e.Backoff.Jitter, JitterNone)
				wantEq(t, "server-directed waits", e.RetryAfterHonored, 0)
				// Every "xro" and "xrx" call: a gap of two waits.
				if br := e.Breaker; br == nil || br.RetriedRefusals == nil {
					t.Errorf("breaker %+v, want its retried refusals read", br)
				} else {
					wantEq(t, "joined-gap calls", br.RetriedRefusals.JoinedGapCalls, 16)
					wantEq(t, "fast-failed calls", br.FastFailedCalls, 4)
				}
				if e.Backoff.BaseMS < 9.5 || e.Backoff.BaseMS > 10.5 {
					t.Errorf("base %.3gms, want 10", e.Backoff.BaseMS)
				}
			},
		},
		{
			// 10ms then 20ms: a call refused whole lasts 30ms; a request
			// sent, a try refused, a request sent lie 30ms apart where
			// the schedule waits 10.
			name: "an exponential loop: whole refusals after 30ms, joined gaps against the schedule's first step",
			build: func(b *builder) {
				joined := []string{"xxx", "rrr", "xro", "o"}
				retryBreakerTraffic(b, joinCalls(healthy, retried, joined, healthy, outage, retried, joined, healthy), 0, []float64{10, 20})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "gateway", "payments")
				wantEq(t, "backoff", e.Backoff.Kind, BackoffExponential)
				br := e.Breaker
				if br == nil || br.RetriedRefusals == nil {
					t.Fatalf("breaker %+v, want its retried refusals read", br)
				}
				rr := br.RetriedRefusals
				wantEq(t, "fast-failed calls", br.FastFailedCalls, 5)
				wantEq(t, "waited calls", rr.WaitedCalls, 5)
				wantEq(t, "joined-gap calls", rr.JoinedGapCalls, 2)
				if rr.WaitsMS[0] > 30.5 || rr.WaitsMS[1] < 30 {
					t.Errorf("waits %v ms, want about 30 (10 and 20ms)", rr.WaitsMS)
				}
			},
		},
		{
			name: "requests failed slowly without calling, after failures: the handler's own, no breaker",
			build: func(b *builder) {
				calls := joinCalls(healthy, retried, []string{"xxx", "s", "s", "s", "o"}, healthy, []string{"xxx", "s", "s", "s", "o"}, healthy)
				retryBreakerTraffic(b, calls, 80, nil)
			},
			check: func(t *testing.T, tp *Topology) {
				if br := edge(t, tp, "gateway", "payments").Breaker; br != nil && br.Detected {
					t.Errorf("breaker %+v, want none detected", *br)
				}
			},
		},
		{
			name: "requests failed at once after failures: a breaker around the loop, nothing retried",
			build: func(b *builder) {
				calls := joinCalls(healthy, recovered, []string{"xxx", "s", "s", "s", "o"}, healthy, []string{"xxx", "s", "s", "s", "o"}, healthy)
				retryBreakerTraffic(b, calls, 0.3, nil)
			},
			check: func(t *testing.T, tp *Topology) {
				br := edge(t, tp, "gateway", "payments").Breaker
				if br == nil || !br.Detected || br.FastFailedCalls != 6 || br.RetriedRefusals != nil || br.TripRule != TripConsecutive || br.TripAfter != 1 {
					t.Errorf("breaker %+v, want 6 fast failures read around the loop (after 1 failed call, consecutive; no retried refusals)", br)
				}
			},
		},
	})
}
