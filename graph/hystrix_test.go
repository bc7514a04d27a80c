package graph

import (
	"strings"
	"testing"
)

// TestNormallyCalls: which caller operations are read for a breaker on a
// callee: those whose requests mostly call it, and those whose calls are
// fewer only because most requests failed without one (a breaker open
// most of the time), as long as the calls are at least an eighth of the
// requests.
func TestNormallyCalls(t *testing.T) {
	for _, tc := range []struct {
		name                string
		calls, requests, ok int
		want                bool
	}{
		{"every request calls it", 100, 100, 90, true},
		{"half the requests call it", 50, 100, 90, true},
		{"43% call it, every request that succeeded among them (a breaker open most of the time)", 75, 175, 35, true},
		{"an eighth call it, all the successes", 25, 200, 20, true},
		{"fewer than an eighth call it, all the successes", 24, 200, 20, false},
		{"a third call it, but most successes do not (a cache in front of it)", 40, 120, 100, false},
		{"nothing succeeded and a quarter call it", 30, 120, 0, true},
	} {
		if got := normallyCalls(tc.calls, tc.requests, tc.ok); got != tc.want {
			t.Errorf("%s: normallyCalls(%d, %d, %d) = %v, want %v", tc.name, tc.calls, tc.requests, tc.ok, got, tc.want)
		}
	}
}

// TestBreakerOpenMostOfTheTime: a breaker that stays open through long
// outages fails more requests fast than it lets call; it is read all the
// same (the operation's successes all call the callee), and an operation
// that calls the callee in fewer than an eighth of its requests is not.
func TestBreakerOpenMostOfTheTime(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "24 requests failed fast and 12 calls: a breaker",
			build: func(b *builder) {
				breakerTraffic(b, "oooo"+"xxx"+strings.Repeat("f", 14)+"o"+"xx"+strings.Repeat("f", 10)+"oo", nil)
			},
			check: func(t *testing.T, tp *Topology) {
				br := edge(t, tp, "gateway", "payments").Breaker
				if br == nil || !br.Detected || br.FastFailedCalls != 24 || br.OpenPeriods != 2 {
					t.Fatalf("breaker %+v, want one detected with 24 fast failures in 2 open periods", br)
				}
				wantFindings(t, tp)
			},
		},
		{
			name: "2 calls among 22 requests: not read for a breaker",
			build: func(b *builder) {
				breakerTraffic(b, "ox"+strings.Repeat("f", 20), nil)
			},
			check: func(t *testing.T, tp *Topology) {
				if br := edge(t, tp, "gateway", "payments").Breaker; br != nil {
					t.Errorf("breaker %+v, want none read", br)
				}
			},
		},
	})
}

// TestTimeoutAroundTheCall: a caller whose timeout wraps the call
// without cancelling its request (Hystrix's command timeout,
// resilience4j's TimeLimiter, Polly's pessimistic timeout) answers its
// own caller when the timeout fires, and the abandoned request ends only
// after (cancelled with the answered request, or answered late): that is
// the caller's per-try timeout on the call, not its caller's deadline
// propagated, although both attempts end within moments of each other.
// Where the upstream attempt got no answer, or the call ended before the
// caller answered, the deadline reading stands.
func TestTimeoutAroundTheCall(t *testing.T) {
	// each builds one request to api calling inventory that times out:
	// upstream is the edge's attempt to api (its options), apiEnd when
	// api's SERVER span ends, callEnd when its call's CLIENT span does.
	each := func(upstream []opt, apiEnd, callEnd float64) func(b *builder) {
		return func(b *builder) {
			sequential(b, 6, "edge", func(root, i int) {
				jit := 0.05 * float64(i)
				c := b.client(root, "api", 10, apiEnd+jit-9.8, upstream...)
				s := b.server(c, "api", "GET /orders/{id}", 10.2, apiEnd+jit-10.2, httpStatus(502))
				ic := b.client(s, "inventory", 10.5, callEnd+jit-10.5, failed("context canceled"))
				// The callee goes on to the end of its slow answer.
				b.server(ic, "inventory", "GET /inventory/{sku}", 10.7, 250, httpStatus(200))
				c2 := b.client(root, "api", 400, 10, httpStatus(200))
				s2 := b.server(c2, "api", "GET /orders/{id}", 400.2, 9.6, httpStatus(200))
				b.call(s2, "inventory", "GET /inventory/{sku}", 401, 5, httpStatus(200))
			})
		}
	}
	for _, tc := range []struct {
		name     string
		upstream []opt
		apiEnd   float64
		callEnd  float64
		timeout  float64 // 0: none
		cut      int
	}{
		{"api answered 502 at its 100ms timeout, its call cancelled after: api's own timeout",
			[]opt{httpStatus(502)}, 110.6, 110.7, 100.2, 0},
		{"the edge gave up with no answer, api's call cut then: the edge's deadline",
			[]opt{failed("context deadline exceeded")}, 110.6, 110.7, 0, 6},
		{"api answered 504 after its call was cut: the deadline it passed on",
			[]opt{httpStatus(504)}, 110.8, 110.7, 0, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			each(tc.upstream, tc.apiEnd, tc.callEnd)(b)
			e := edge(t, b.infer(), "api", "inventory")
			if tc.timeout == 0 {
				wantNil(t, "api → inventory per-try timeout", e.PerTryTimeoutMS)
			} else {
				wantPtr(t, "api → inventory per-try timeout", e.PerTryTimeoutMS, tc.timeout)
			}
			wantEq(t, "api → inventory attempts cut by the caller", e.DeadlineFromCaller, tc.cut)
		})
	}
}

// TestWaitsInSpans: a client that holds each failed answer open through
// its backoff (gojek/heimdall closes a failed try's response body, which
// ends otelhttp's CLIENT span, only when its next try goes out) shows
// its waits inside the failed attempts' spans, the next attempt starting
// as the last one ends: the backoff is unknown, not immediate, and no
// retry-without-jitter finding is made. Where the successes' spans
// outlast their callee's as long (the network), or the failed spans end
// with their callee's, the gaps are the waits as before.
func TestWaitsInSpans(t *testing.T) {
	// calls builds 12 calls from api to inventory: a failed attempt
	// whose client span ends hold ms after the callee's (2ms long), the
	// next attempt gap ms after it, answered OK with okHold ms after the
	// callee's; waits[i%3] is the wait the caller slept.
	calls := func(hold func(wait float64) float64, gap func(wait float64) float64, okHold float64) func(b *builder) {
		return func(b *builder) {
			waits := []float64{10, 11.5, 13}
			sequential(b, 12, "api", func(root, i int) {
				w := waits[i%3]
				c := b.client(root, "inventory", 1, 2.5+hold(w), httpStatus(503))
				b.server(c, "inventory", "GET /inventory/{sku}", 1.25, 2, httpStatus(503))
				at := 1 + 2.5 + hold(w) + gap(w)
				c2 := b.client(root, "inventory", at, 2.5+okHold, httpStatus(200))
				b.server(c2, "inventory", "GET /inventory/{sku}", at+0.25, 2, httpStatus(200))
			})
		}
	}
	for _, tc := range []struct {
		name    string
		build   func(b *builder)
		kind    BackoffKind
		inSpans int
		noJit   bool // a retry-without-jitter finding
	}{
		{"failed answers held through the wait, the next try 0.2ms after: waits inside the spans",
			calls(func(w float64) float64 { return w }, func(float64) float64 { return 0.2 }, 0.2), BackoffUnknown, 12, false},
		{"every answer 10ms late (the network) and retries at once: immediate, as before",
			calls(func(float64) float64 { return 10 }, func(float64) float64 { return 0.2 }, 10), BackoffImmediate, 0, true},
		// Two attempts a call: one wait index, which tells no kind; the
		// waits are read, and found unjittered.
		{"failed answers taken at once, a constant 10ms between the spans: as before",
			calls(func(float64) float64 { return 0.2 }, func(float64) float64 { return 10 }, 0.2), BackoffUnknown, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			tc.build(b)
			tp := b.infer()
			e := edge(t, tp, "api", "inventory")
			wantEq(t, "backoff kind", e.Backoff.Kind, tc.kind)
			wantEq(t, "waits in spans", e.Backoff.WaitsInSpans, tc.inSpans)
			has := false
			for _, f := range tp.Findings {
				has = has || f.ID == FindingNoJitter
			}
			wantEq(t, "retry-without-jitter finding", has, tc.noJit)
		})
	}
}

// TestHeldAnswersDecision pins when an edge's waits are read as inside
// its failed attempts' spans.
func TestHeldAnswersDecision(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    heldAnswers
		want bool
	}{
		{"every failed answer held, no success", heldAnswers{12, 12, 12, 0}, true},
		{"three in four held, one in ten successes", heldAnswers{8, 6, 10, 1}, true},
		{"fewer than three in four held", heldAnswers{8, 5, 10, 0}, false},
		{"successes held as often (the network)", heldAnswers{8, 8, 10, 2}, false},
		{"too few failed attempts before a retry", heldAnswers{2, 2, 10, 0}, false},
		{"too few successes to compare with", heldAnswers{8, 8, 2, 0}, false},
	} {
		if got := tc.h.waitsInSpans(); got != tc.want {
			t.Errorf("%s: waitsInSpans(%+v) = %v, want %v", tc.name, tc.h, got, tc.want)
		}
	}
}
