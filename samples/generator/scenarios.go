package main

import (
	"math/rand/v2"
	"net/http"
	"time"
)

// Edge is one caller→callee operation of the mesh with the caller's retry
// policy for it. Route is the callee's ServeMux pattern ("GET /orders/{id}").
type Edge struct {
	Caller, Callee string
	Route          string
	Policy         Policy
}

// Case is a group of root requests that share a fault script.
type Case struct {
	Count int
	// Pay sends POST /checkout/{id}/pay instead of GET /checkout/{id}.
	Pay bool
	// Target is where Script is injected; Script nil means no fault.
	Target target
	Script []Fault
}

// Scenario is one run of the mesh.
type Scenario struct {
	Name        string
	Description string
	// Seed shuffles the root requests (math/rand/v2 PCG).
	Seed uint64
	// Ordered sends the cases in the order written instead: a breaker sees
	// failures in a row only if they come in a row.
	Ordered bool
	// Pace is a pause between root requests (a breaker's open period is
	// measured in time, not requests).
	Pace time.Duration
	// OpenLoop sends a root request every Pace without waiting for the
	// earlier ones' answers, so that several are in flight at once, as
	// production traffic is; otherwise each is sent once the one before
	// was answered, Pace after it.
	OpenLoop bool
	// Outages are faults in time (after the first root request), on top
	// of the cases' scripts.
	Outages []Outage
	// Instances runs a service as that many instances (processes with
	// their own service.instance.id, servers and callers, so breakers of
	// their own); its callers spread their calls over them in turn. A
	// service not named runs as one.
	Instances map[string]int
	// OnlyByName leaves the scenario out of a run of every scenario: it
	// is written only when named (-scenario), a capture kept
	// reproducible but not committed under samples/.
	OnlyByName bool
	// CountAtCallee counts the requests of each hedged call where its
	// callee received them (one call per fault key: the scenario's
	// hedged edge is called once per root request), for the truth.
	CountAtCallee bool
	// ManualCache makes api look each order up in a cache first, through
	// hand-made CLIENT spans under another service name (mesh.go).
	ManualCache bool
	Edges       []Edge
	Cases       []Case
}

// order is the scenario's root requests, one Case each, in the order they
// are sent: shuffled by Seed unless Ordered.
func (s Scenario) order() []Case {
	var cases []Case
	for _, c := range s.Cases {
		for range c.Count {
			cases = append(cases, c)
		}
	}
	if !s.Ordered {
		rand.New(rand.NewPCG(s.Seed, s.Seed)).Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
	}
	return cases
}

// rootRequests is the number of root requests the scenario sends.
func (s Scenario) rootRequests() int {
	n := 0
	for _, c := range s.Cases {
		n += c.Count
	}
	return n
}

const ms = time.Millisecond

// scenarios returns every scenario the generator writes.
func scenarios() []Scenario {
	return []Scenario{retryEverywhere(), edgeOnly(), mixed(), retryAfterUncaptured(), breakerOverRetries(), breakerConcurrent(), breakerInstances(), hedging(), otherServiceName(),
		replicas(), retryBelowOtelhttp(), additiveJitter(), fullJitter(), goResiliency(), awsStandardQuota(),
		linearJitter(), fibonacci(), hedgedHTTPAbove(), hedgedHTTPBelow(), hedgedHTTPPerAttempt(), retryAroundBreaker(), resultRetryBelow(), resultRetryAbove(), resultRetryImmediate(),
		hystrixBreaker(), heimdallHystrix(), cenkaltiDefaults()}
}

// resultRetryCases are the root requests of the result-retry scenarios:
// plain ones that meet no fault, then ones for which target answers 200
// "pending" 1 to 4 times before the real answer (four exhaust a caller of
// 4 attempts, which returns the last "pending" 200: a success in the
// traces), a 503 and then "pending" (a status and a result retried in one
// call), and 503 four times, which exhausts a caller of 4 attempts on
// failures the traces show.
func resultRetryCases(t target, plain int) []Case {
	return []Case{
		{Count: plain},
		{Count: 10, Target: t, Script: times(1, notReady)},
		{Count: 7, Target: t, Script: times(2, notReady)},
		{Count: 5, Target: t, Script: times(3, notReady)},
		{Count: 2, Target: t, Script: times(4, notReady)},
		{Count: 4, Target: t, Script: []Fault{unavailable, notReady}},
		{Count: 2, Target: t, Script: times(4, unavailable)},
	}
}

// resultRetryBelow has inventory poll db until its answer is ready:
// go-retryablehttp under otelhttp whose CheckRetry reads the body and
// retries a 200 that says "pending" as it retries a 503. One CLIENT span
// per call; each request a db SERVER span under it, answered 200, the
// next sent after the backoff: retries on the result, not hedges.
func resultRetryBelow() Scenario {
	return Scenario{
		Name: "result-retry-below",
		Description: "inventory polls db with go-retryablehttp as the RoundTripper under otelhttp (4 attempts, 10ms ×2 up to 80ms, " +
			"no jitter) whose CheckRetry also retries a 200 whose body says \"pending\": one CLIENT span per call, a db SERVER span " +
			"per attempt under it, most of them answered 200.",
		Seed: 41,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, single()},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, retryableHTTP(4, 10*ms, 80*ms).withResultPredicate().withRetriesBelowInstrumentation()},
		},
		Cases: resultRetryCases(dbStock, 20),
	}
}

// resultRetryImmediate is result-retry-below polling with no wait at
// all: each request after a "pending" 200 reaches db a transit after the
// answer, as a hedge sent just before it would, so the traces cannot tell
// the two apart (inference says unknown). Written only when named: a
// check of that reading, not a committed sample.
func resultRetryImmediate() Scenario {
	sc := resultRetryBelow()
	sc.Name = "result-retry-immediate"
	sc.Description = "inventory polls db with go-retryablehttp as the RoundTripper under otelhttp (4 attempts, no wait between them) whose " +
		"CheckRetry also retries a 200 whose body says \"pending\": each poll reaches db a transit after the answer before it."
	sc.OnlyByName = true
	sc.Edges[3].Policy = retryableHTTP(4, 0, 0).withResultPredicate().withRetriesBelowInstrumentation()
	return sc
}

// resultRetryAbove has the same poll above the instrumentation, at two
// layers: inventory retries db with go-retryablehttp whose CheckRetry
// reads the body (each attempt its own otelhttp CLIENT span), and api
// retries inventory with failsafe-go's retry policy whose HandleIf
// predicate reads the result. A retry after a 200 is a sibling CLIENT
// span for the same request after the one before ended.
func resultRetryAbove() Scenario {
	return Scenario{
		Name: "result-retry-above",
		Description: "inventory polls db with go-retryablehttp (4 attempts, 10ms ×2 up to 80ms, no jitter) and api polls inventory " +
			"with failsafe-go's retry policy (3 attempts, 15ms apart), each retrying a 200 whose body says \"pending\" as it retries " +
			"a 503; every attempt its own CLIENT span.",
		Seed: 42,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, failsafeResultRetry(3, 15*ms)},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, retryableHTTP(4, 10*ms, 80*ms).withResultPredicate()},
		},
		Cases: append(resultRetryCases(dbStock, 10),
			Case{Count: 8, Target: inventoryStock, Script: times(1, notReady)},
			Case{Count: 5, Target: inventoryStock, Script: times(2, notReady)},
			Case{Count: 2, Target: inventoryStock, Script: times(3, notReady)},
			Case{Count: 3, Target: inventoryStock, Script: []Fault{unavailable, notReady}},
			Case{Count: 1, Target: inventoryStock, Script: times(3, unavailable)}),
	}
}

// hedgedHTTPCases are the root requests of the hedgedhttp scenarios, by
// what db does with the requests of one call in turn: fast; slow, so that
// a hedge answers first (the second, or after two slow ones the third);
// slower than the hedge delay but faster than the slow hedge after it,
// so that the earlier request answers while a later one still runs (what
// only hedging does); aborted without an answer, which hedgedhttp follows
// with the next request at once (an immediate resend, not a hedge); 503,
// which it returns like any answer (never sent again), also when it comes
// while a hedge runs; and two aborts in a row. net/http's Transport
// itself writes a GET again on a new connection when the reused one it
// was sent on closes with no answer (truth's transport_resends), so an
// abort is sent again by net/http or by hedgedhttp, whichever saw it
// first: two aborts make three requests either way, the last answered.
func hedgedHTTPCases() []Case {
	late := Fault{Delay: 40 * ms}
	lateUnavailable := Fault{Status: http.StatusServiceUnavailable, Delay: 40 * ms}
	return []Case{
		{Count: 20},
		{Count: 10, Target: dbStock, Script: times(1, slow)},
		{Count: 6, Target: dbStock, Script: times(2, slow)},
		{Count: 8, Target: dbStock, Script: []Fault{late, slow}},
		{Count: 6, Target: dbStock, Script: times(1, aborted)},
		{Count: 4, Target: dbStock, Script: []Fault{slow, aborted}},
		{Count: 6, Target: dbStock, Script: times(1, unavailable)},
		{Count: 4, Target: dbStock, Script: []Fault{lateUnavailable, slow}},
		{Count: 4, Target: dbStock, Script: times(2, aborted)},
	}
}

// hedgedHTTPAbove has inventory hedge its GETs to db with
// cristalhq/hedgedhttp's round tripper over otelhttp's transport: every
// request it sends is a CLIENT span of its own, siblings under
// inventory's SERVER span, as failsafe-go's are (hedging).
func hedgedHTTPAbove() Scenario {
	return Scenario{
		Name: "hedgedhttp",
		Description: "inventory hedges GET /db/stock to db with cristalhq/hedgedhttp (upto 3 requests, each 25ms after the one before " +
			"or at once after one got no answer; the first answer, a 503 too, ends the call) over otelhttp's transport: " +
			"one CLIENT span per request. db is sometimes slow (250ms), sometimes aborts the connection, sometimes answers 503.",
		Seed:          29,
		OnlyByName:    true, // hedgedhttp-below is the committed capture
		CountAtCallee: true,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, single()},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, hedgedHTTP(25*ms, 3)},
		},
		Cases: hedgedHTTPCases(),
	}
}

// hedgedHTTPBelow is hedgedhttp with the hedging below the
// instrumentation: otelhttp's transport wraps hedgedhttp's round tripper,
// so one CLIENT span covers every request of a call, and db's SERVER
// spans, one per request, overlap under it (hedgedhttp shares the
// request's headers, the traceparent among them, with every hedge).
func hedgedHTTPBelow() Scenario {
	sc := hedgedHTTPAbove()
	sc.Name, sc.OnlyByName = "hedgedhttp-below", false
	sc.Description = "inventory hedges GET /db/stock to db with cristalhq/hedgedhttp (upto 3 requests, each 25ms after the one before " +
		"or at once after one got no answer; the first answer, a 503 too, ends the call) below otelhttp: one CLIENT span per call, " +
		"db's SERVER spans of its requests overlapping under it. db is sometimes slow (250ms), sometimes aborts the connection, sometimes answers 503."
	sc.Edges[3].Policy = sc.Edges[3].Policy.withRetriesBelowInstrumentation()
	return sc
}

// hedgedHTTPPerAttempt is hedgedhttp-below with db slow per attempt, not
// per call: each request of a call is slow (250ms) with chance 0.4 and
// otherwise aborted with chance 0.15, each drawn on its own (PCG seeded
// by the scenario's Seed), so that a hedge after a slow request is as
// likely slow as any request. hedgedHTTPCases script slowness per call
// (two slow requests in a row); this is the other side of the rule that
// tells the two apart (graph.WorkCorrelation). Kept in graph/testdata.
func hedgedHTTPPerAttempt() Scenario {
	sc := hedgedHTTPBelow()
	sc.Name, sc.OnlyByName, sc.Seed = "hedgedhttp-per-attempt", true, 37
	sc.Description = "inventory hedges GET /db/stock to db with cristalhq/hedgedhttp (upto 3 requests, each 25ms after the one before " +
		"or at once after one got no answer; the first answer ends the call) below otelhttp: one CLIENT span per call. " +
		"Each request db serves is slow (250ms) with chance 0.4, else aborted with chance 0.15, independently of the call's other requests."
	sc.Cases = perAttemptCases(sc.Seed, 100, 0.4, 0.15)
	return sc
}

// perAttemptCases are n root requests whose calls to db draw each of their
// (up to 3) requests slow with chance slowP, else aborted with chance
// abortP, else answered at once, every draw independent. net/http's
// Transport writes an aborted GET again on a new connection (truth's
// transport_resends) while hedgedhttp's timer runs on, so a call can make
// a fourth request (the truth's path counts it).
func perAttemptCases(seed uint64, n int, slowP, abortP float64) []Case {
	rng := rand.New(rand.NewPCG(seed, seed))
	cases := make([]Case, n)
	for i := range cases {
		script := make([]Fault, 3)
		for k := range script {
			switch u := rng.Float64(); {
			case u < slowP:
				script[k] = slow
			case u < slowP+(1-slowP)*abortP:
				script[k] = aborted
			}
		}
		cases[i] = Case{Count: 1, Target: dbStock, Script: script}
	}
	return cases
}

// linearJitter has inventory retry db with go-retryablehttp's
// LinearJitterBackoff (issue 11): before retry n, n times a wait drawn
// from [16ms, 24ms), so 20, 40, 60, 80ms ±20% (linear, base and
// increment 20ms, proportional jitter): ratios 2, 1.5, 1.33, which a fit
// from the first ratio reads as exponential ×2 with an invented cap.
// Enough calls fail four times for the fourth wait to tell linear from
// Fibonacci (80ms, not 100ms).
func linearJitter() Scenario {
	return Scenario{
		Name: "linear-jitter",
		Description: "inventory retries db with go-retryablehttp's LinearJitterBackoff (RetryWaitMin 16ms, RetryWaitMax 24ms, RetryMax 4): " +
			"before retry n, n·U[16ms, 24ms), so 20, 40, 60, 80ms ±20%; 5 attempts, no Retry-After read.",
		Seed: 17,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, single()},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, retryableHTTPLinear(5, 16*ms, 24*ms)},
		},
		Cases: []Case{
			{Count: 20},
			{Count: 10, Target: dbStock, Script: times(1, unavailable)},
			{Count: 10, Target: dbStock, Script: times(2, unavailable)},
			{Count: 10, Target: dbStock, Script: times(3, unavailable)},
			{Count: 14, Target: dbStock, Script: times(4, unavailable)},
			{Count: 4, Target: dbStock, Script: times(5, unavailable)},
		},
	}
}

// fibonacci has inventory retry db with sethvargo/go-retry's
// NewFibonacci(10ms) under WithMaxRetries(4), no jitter (issue 11):
// 10, 20, 30, 50ms before retries 1 to 4, ratios 2, 1.5, 1.67, which no
// exponential or linear schedule fits at every step.
func fibonacci() Scenario {
	return Scenario{
		Name: "fibonacci",
		Description: "inventory retries db with sethvargo/go-retry's NewFibonacci(10ms), WithMaxRetries(4): " +
			"10, 20, 30, 50ms before retries 1 to 4, no jitter, 5 attempts.",
		Seed: 19,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, single()},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, goRetryFibonacci(5, 10*ms)},
		},
		Cases: []Case{
			{Count: 20},
			{Count: 8, Target: dbStock, Script: times(1, unavailable)},
			{Count: 8, Target: dbStock, Script: times(2, unavailable)},
			{Count: 8, Target: dbStock, Script: times(3, unavailable)},
			{Count: 10, Target: dbStock, Script: times(4, unavailable)},
			{Count: 3, Target: dbStock, Script: times(5, unavailable)},
		},
	}
}

// fullJitter has two edges retry with avast/retry-go's full-jitter delay
// (issue 11 items 2 and 3: the median of a full-jitter wait is half its
// ceiling, which the schedule is). inventory retries db often enough
// that 80 pairs of one call's consecutive waits show them independent
// (full jitter, not decorrelated's timeline, which also spreads waits
// from zero); api retries inventory with 24 pairs, too few to tell the
// two: the traces leave that jitter between them, and its ceilings give
// the schedule both share.
func fullJitter() Scenario {
	return Scenario{
		Name: "full-jitter",
		Description: "inventory retries db and api retries inventory with retry-go's FullJitterBackoffDelay, U[0, Delay·2ⁿ) " +
			"before retry n (4 attempts, MaxDelay 1s, never reached): ceilings 20, 40, 80ms (Delay 10ms) and 30, 60, 120ms (Delay 15ms).",
		Seed: 13,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, retryGoFullJitter(4, 30*ms, time.Second)},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, retryGoFullJitter(4, 20*ms, time.Second)},
		},
		Cases: []Case{
			{Count: 20},
			{Count: 15, Target: dbStock, Script: times(1, unavailable)},
			{Count: 25, Target: dbStock, Script: times(2, unavailable)},
			{Count: 25, Target: dbStock, Script: times(3, unavailable)},
			{Count: 4, Target: dbStock, Script: times(4, unavailable)},
			{Count: 10, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 8, Target: inventoryStock, Script: times(2, unavailable)},
			{Count: 6, Target: inventoryStock, Script: times(3, unavailable)},
			{Count: 2, Target: inventoryStock, Script: times(4, unavailable)},
		},
	}
}

// cenkaltiDefaults has inventory retry db with cenkalti/backoff/v5's
// ExponentialBackOff at its default multiplier and randomization factor
// (×1.5, ±50%: the defaults Traefik's and the OpenTelemetry exporters'
// retries inherit), from an InitialInterval of 40ms instead of the
// default 500ms to keep the run short: before retry n a wait drawn
// uniformly from 40ms·1.5^(n-1)·[0.5, 1.5], so neighbouring steps'
// ranges overlap (20-60ms, 30-90ms, 45-135ms, 67.5-202.5ms), 5 attempts,
// MaxInterval 1s (never reached). Enough calls fail four times for
// every step to have 30 waits or more.
func cenkaltiDefaults() Scenario {
	return Scenario{
		Name: "cenkalti-defaults",
		Description: "inventory retries db with cenkalti/backoff/v5's ExponentialBackOff at its default Multiplier 1.5 and " +
			"RandomizationFactor 0.5 (InitialInterval 40ms, MaxInterval 1s, never reached): 5 attempts, before retry n " +
			"40ms·1.5^(n-1)·U[0.5, 1.5), waits whose ranges overlap from one step to the next.",
		Seed: 37,
		// Kept in graph/testdata (its OTLP JSON and truth), not samples/.
		OnlyByName: true,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, single()},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, backoffExponential(5, 40*ms, 1.5, time.Second, 0.5)},
		},
		Cases: []Case{
			{Count: 12},
			{Count: 6, Target: dbStock, Script: times(1, unavailable)},
			{Count: 6, Target: dbStock, Script: times(2, unavailable)},
			{Count: 6, Target: dbStock, Script: times(3, unavailable)},
			{Count: 24, Target: dbStock, Script: times(4, unavailable)},
			{Count: 4, Target: dbStock, Script: times(5, unavailable)},
		},
	}
}

// goResiliency has inventory retry db with eapache/go-resiliency's
// retrier: retrier.ExponentialBackoff(3, 20ms) with SetJitter(0.25), so
// 4 attempts and before retry n a wait of 20ms·2^(n-1) moved by
// (2·U[0,1) − 1)·0.25 of itself (proportional jitter, ±25%, no cap),
// each attempt bounded by a 100ms http.Client timeout. db also answers
// some requests 429 with Retry-After, which the retrier knows nothing of:
// it backs off as from any failure.
func goResiliency() Scenario {
	return Scenario{
		Name: "go-resiliency",
		Description: "inventory retries db with go-resiliency's retrier (retrier.ExponentialBackoff(3, 20ms), SetJitter(0.25)): " +
			"4 attempts, before retry n 20ms·2^(n-1) + (2·U[0,1) − 1)·0.25·20ms·2^(n-1), no cap, 100ms per-try timeout; " +
			"429s with Retry-After: 1 are retried on the retrier's own schedule (it reads no header).",
		Seed: 13,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, single()},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, resiliencyExponential(4, 20*ms, 0.25).withPerTryTimeout(100 * ms)},
		},
		Cases: []Case{
			{Count: 20},
			{Count: 10, Target: dbStock, Script: times(1, unavailable)},
			{Count: 8, Target: dbStock, Script: times(2, unavailable)},
			{Count: 6, Target: dbStock, Script: times(3, unavailable)},
			{Count: 2, Target: dbStock, Script: times(4, unavailable)},
			{Count: 3, Target: dbStock, Script: times(1, slow)},
			{Count: 2, Target: dbStock, Script: times(1, throttled)},
			{Count: 2, Target: dbStock, Script: times(1, badRequest)},
		},
	}
}

// awsStandardQuota has api retry inventory with the AWS SDK for Go v2
// standard retryer and its defaults (3 attempts, full jitter from a 50ms
// base, a retry quota of 500 tokens at 14 a retry). The requests come in
// order through an outage of inventory deep enough to drain the quota:
// after 14 calls that failed all 3 attempts (28 tokens each, on top of
// the 14 each call that succeeded on its third attempt kept), the 15th
// is refused its second retry and the next 5 their first; a refused call
// fails with attempts left, and nothing in its spans says why.
func awsStandardQuota() Scenario {
	return Scenario{
		Name: "aws-standard",
		Description: "api retries inventory with the AWS SDK for Go v2 standard retryer (retry.NewStandard defaults: 3 attempts, " +
			"before retry n U[0,1)·min(50ms·2^(n-1), 20s), full jitter; a retry quota of 500 tokens, 14 a retry, a successful retry " +
			"refunded, +1 for a first-attempt success). Requests come in order through an inventory outage that drains the quota: " +
			"6 calls are refused a retry and fail with attempts left.",
		Ordered: true,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, awsStandard(3, 50*ms, 20*time.Second)},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, single()},
		},
		Cases: []Case{
			{Count: 15},
			{Count: 8, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 6, Target: inventoryStock, Script: times(2, unavailable)},
			{Count: 20, Target: inventoryStock, Script: times(3, unavailable)},
			{Count: 10},
			{Count: 4, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 2, Target: inventoryStock, Script: times(1, badRequest)},
			{Count: 5},
		},
	}
}

// additiveJitter has api retry inventory with avast/retry-go's default
// delay, exponential plus additive jitter (issue 11 item 2: a jitter that
// adds U[0,a) to every wait, whatever its size, rather than scaling it).
func additiveJitter() Scenario {
	return Scenario{
		Name: "additive-jitter",
		Description: "api retries inventory with retry-go's default delay, CombineDelay(BackOffDelay, RandomDelay): 20ms ×2 " +
			"plus U[0, 30ms) before each retry (4 attempts, MaxDelay 1s, never reached): additive jitter, the same width at every retry.",
		Seed: 12,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, retryGoBackoffJitter(4, 20*ms, 30*ms, time.Second)},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, single()},
		},
		Cases: []Case{
			{Count: 20},
			{Count: 10, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 8, Target: inventoryStock, Script: times(2, unavailable)},
			{Count: 6, Target: inventoryStock, Script: times(3, unavailable)},
			{Count: 2, Target: inventoryStock, Script: times(4, unavailable)},
		},
	}
}

// retryBelowOtelhttp has inventory retry db through go-retryablehttp used
// as the transport under otelhttp: one CLIENT span per call covers all its
// attempts, each a db SERVER span under it. Above, api retries inventory
// with retry-go, and inventory sometimes answers 503 after a fixed 30ms:
// errors that take time, which are no per-try timeout.
func retryBelowOtelhttp() Scenario {
	return Scenario{
		Name: "retry-below-otelhttp",
		Description: "inventory retries db with go-retryablehttp as the RoundTripper under otelhttp (4 attempts, " +
			"10ms ×2 up to 80ms, no jitter): one CLIENT span per call, a db SERVER span per attempt under it; " +
			"api retries inventory with retry-go (3 attempts, 20ms apart), which sometimes answers 503 after a fixed 30ms: no per-try timeout.",
		Seed: 9,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, retryGoFixed(3, 20*ms)},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, retryableHTTP(4, 10*ms, 80*ms).withRetriesBelowInstrumentation()},
		},
		Cases: []Case{
			{Count: 20},
			{Count: 10, Target: dbStock, Script: times(1, unavailable)},
			{Count: 6, Target: dbStock, Script: times(2, unavailable)},
			{Count: 5, Target: dbStock, Script: times(3, unavailable)},
			{Count: 2, Target: dbStock, Script: times(4, unavailable)},
			{Count: 8, Target: inventoryStock, Script: times(1, slowUnavailable)},
			{Count: 5, Target: inventoryStock, Script: times(2, slowUnavailable)},
			{Count: 2, Target: inventoryStock, Script: times(3, slowUnavailable)},
		},
	}
}

// replicas has inventory retry db with go-resty across three db replicas
// (another port each): a retry to another replica is the same call.
func replicas() Scenario {
	return Scenario{
		Name: "replicas",
		Description: "inventory retries db with go-resty (4 attempts, 10ms base, cap 80ms, equal jitter after the " +
			"first wait), each attempt to the next of three db replicas on their own ports: one logical call, several hosts.",
		Seed: 8,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, single()},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, restyAcrossReplicas(4, 10*ms, 80*ms, 3)},
		},
		Cases: []Case{
			{Count: 20},
			{Count: 10, Target: dbStock, Script: times(1, unavailable)},
			{Count: 8, Target: dbStock, Script: times(2, unavailable)},
			{Count: 6, Target: dbStock, Script: times(3, unavailable)},
			{Count: 2, Target: dbStock, Script: times(4, unavailable)},
		},
	}
}

// otherServiceName has api look every order up in a cache through CLIENT
// spans it makes by hand under the service name redis-manual, with no
// peer attributes and no server span (HotROD's redis): the lookups are
// calls from api to redis-manual. Below it, inventory retries db with
// retry-go, 3 attempts 15ms apart.
func otherServiceName() Scenario {
	return Scenario{
		Name: "other-service-name",
		Description: "api's hand-made cache CLIENT spans carry the service name redis-manual and no peer: " +
			"api → redis-manual, never unknown; inventory retries db with retry-go (3 attempts, 15ms apart).",
		Seed:        7,
		ManualCache: true,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, single()},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, retryGoFixed(3, 15*ms)},
		},
		Cases: []Case{
			{Count: 15},
			{Count: 8, Target: dbStock, Script: times(1, unavailable)},
			{Count: 6, Target: dbStock, Script: times(2, unavailable)},
			{Count: 2, Target: dbStock, Script: times(3, unavailable)},
		},
	}
}

// hedging has api hedge its POST /charges to payments with failsafe-go
// (a hedge 20ms after the first request, at most 2 hedges) below edge's
// three retry-go attempts: one payment can become 9 charge requests, and
// hedging a write without a key may charge twice.
func hedging() Scenario {
	return Scenario{
		Name: "hedging",
		Description: "edge retries payments 3 times (retry-go, 15ms apart); api hedges each charge to payments " +
			"with failsafe-go after 20ms, up to 2 hedges: 3 × 3 = 9 charge requests at worst, for a non-idempotent POST.",
		Seed: 6,
		Edges: []Edge{
			{"edge", "api", routePayment, retryGoFixed(3, 15*ms)},
			{"api", "inventory", routeReserve, single()},
			{"api", "payments", routeCharge, hedged(20*ms, 2)},
		},
		Cases: []Case{
			{Count: 15, Pay: true},
			{Count: 8, Pay: true, Target: paymentsCharge, Script: times(1, slow)},
			{Count: 5, Pay: true, Target: paymentsCharge, Script: times(2, slow)},
			{Count: 6, Pay: true, Target: inventoryReserve, Script: times(1, unavailable)},
			{Count: 4, Pay: true, Target: inventoryReserve, Script: times(2, unavailable)},
			{Count: 3, Pay: true, Target: inventoryReserve, Script: times(3, unavailable)},
		},
	}
}

// retryAfterUncaptured throttles db with 429 Retry-After: 1 among 503s
// that go-retryablehttp backs off from exponentially; no span records the
// header, so only the timing shows which waits the server directed.
func retryAfterUncaptured() Scenario {
	return Scenario{
		Name: "retry-after-uncaptured",
		Description: "inventory retries db with go-retryablehttp (10ms ×2 up to 80ms, no jitter), honouring " +
			"Retry-After: 1 on 429s that no span records: the 1s waits are the server's, not the backoff.",
		Seed: 4,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, single()},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, retryableHTTP(4, 10*ms, 80*ms).withHiddenRetryAfter()},
		},
		Cases: []Case{
			{Count: 20},
			{Count: 8, Target: dbStock, Script: times(1, unavailable)},
			{Count: 6, Target: dbStock, Script: times(2, unavailable)},
			{Count: 5, Target: dbStock, Script: times(3, unavailable)},
			{Count: 2, Target: dbStock, Script: times(4, unavailable)},
			{Count: 3, Target: dbStock, Script: times(1, throttled)},
			{Count: 2, Target: dbStock, Script: []Fault{unavailable, throttled}},
		},
	}
}

// breakerOverRetries puts a sony/gobreaker circuit breaker around api's
// retrying calls to inventory: after 3 failed calls in a row it fails calls
// at once for 15ms, then lets one probe through. Failing requests come in
// runs, so the breaker opens, and stays open until a probe succeeds.
func breakerOverRetries() Scenario {
	failing := Case{Count: 12, Target: inventoryStock, Script: times(3, unavailable)}
	return Scenario{
		Name: "breaker",
		Description: "api calls inventory through retry-go (3 attempts, 5ms apart) inside a gobreaker circuit " +
			"breaker that opens after 3 failed calls in a row for 15ms: calls it fails fast make no attempt.",
		Seed:    5,
		Ordered: true,
		Pace:    5 * ms,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, retryGoFixed(3, 5*ms).withBreaker(3, 15*ms)},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, single()},
		},
		Cases: []Case{
			{Count: 15},
			{Count: 8, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 4, Target: inventoryStock, Script: times(2, unavailable)},
			failing,
			{Count: 15},
			{Count: 8, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 4, Target: inventoryStock, Script: times(2, unavailable)},
			failing,
			{Count: 15},
			{Count: 8, Target: inventoryStock, Script: times(1, unavailable)},
		},
	}
}

// retryAroundBreaker is the reverse of breaker: api's retry loop wraps
// the circuit breaker (failsafe-go's failsafe.With(retryPolicy,
// circuitBreaker) through failsafehttp, each request its own otelhttp
// CLIENT span). The breaker counts attempts: 3 failed in a row open it
// for 25ms ± 10ms (its jitter), then 2 probes in a row must succeed to
// close it. The retry
// policy (3 attempts, 10ms apart) retries the breaker's refusals like
// any failure, so while it is open a call sends fewer requests than it
// makes tries (none at all when every try is refused), and a gap between
// two of its requests can hold several of the policy's waits. Root
// requests go one at a time, 4ms apart, through inventory outages in
// time (503 after 2ms to every request), some failing once or twice on
// their own in between. An open period longer than a call's 20ms of
// waits fails whole calls fast; a probe that fails reopens it, and one
// shorter than the two waits after it lets the call's last try through
// after a refused one, a gap of two waits.
func retryAroundBreaker() Scenario {
	down := Fault{Status: http.StatusServiceUnavailable, Delay: 2 * ms}
	return Scenario{
		Name: "retry-around-breaker",
		Description: "api calls inventory through failsafe-go: a retry policy (3 attempts, 10ms apart) around a circuit breaker " +
			"that opens after 3 failed attempts in a row for 25ms ± 10ms and closes after 2 probes in a row succeed; the retry policy " +
			"retries the open breaker's refusals, which send nothing; root requests go one at a time, 4ms apart, and inventory " +
			"answers 503 after 2ms to every request for stretches of 150ms, 100ms, 60ms, 120ms and 40ms; some requests fail once or twice on their own.",
		Seed: 31,
		Pace: 4 * ms,
		// Kept in graph/testdata (its OTLP JSON and truth), not samples/.
		OnlyByName: true,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, failsafeRetryAroundBreaker(3, 10*ms, 3, 25*ms, 10*ms, 2)},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, single()},
		},
		Cases: []Case{
			{Count: 110},
			{Count: 20, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 12, Target: inventoryStock, Script: times(2, unavailable)},
		},
		Outages: []Outage{
			{Target: inventoryStock, From: 150 * ms, For: 150 * ms, Fault: down},
			{Target: inventoryStock, From: 420 * ms, For: 100 * ms, Fault: down},
			{Target: inventoryStock, From: 650 * ms, For: 60 * ms, Fault: down},
			{Target: inventoryStock, From: 850 * ms, For: 120 * ms, Fault: down},
			{Target: inventoryStock, From: 1100 * ms, For: 40 * ms, Fault: down},
		},
	}
}

// hystrixBreaker runs api's calls to inventory as afex/hystrix-go
// commands, one request each, with small settings so that a run is
// short: the circuit opens when at least 5 commands ran since it last
// closed (its ten-second rolling window outlasts the run, and closing
// empties it) and at least 50% of them were errors, stays open 200ms
// (SleepWindow), then lets one probe through, and a command fails after
// 100ms (Timeout) while its request goes on until api's handler has
// answered. Root requests leave every 10ms whatever is in flight;
// inventory goes down (503 after 2ms) twice and is slow once (250ms, so
// every command times out): the slow patch trips the circuit by
// timeouts alone, the callee serving each request to the end.
func hystrixBreaker() Scenario {
	down := Fault{Status: http.StatusServiceUnavailable, Delay: 2 * ms}
	slowPatch := Fault{Delay: 250 * ms}
	return Scenario{
		Name: "hystrix",
		Description: "api calls inventory once per order as an afex/hystrix-go command (RequestVolumeThreshold 5, ErrorPercentThreshold 50, " +
			"SleepWindow 200ms, Timeout 100ms, MaxConcurrentRequests 40; its 10s rolling window, emptied when the circuit closes, outlasts the run); " +
			"root requests leave every 10ms; inventory answers 503 after 2ms from 80ms to 400ms and from 1150ms to 1500ms, and answers after " +
			"250ms from 650ms to 1000ms (every command times out at 100ms while its request goes on until api has answered 502).",
		Seed:     13,
		Pace:     10 * ms,
		OpenLoop: true,
		// Kept in graph/testdata (its OTLP JSON and truth), not samples/.
		OnlyByName: true,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, hystrixCommand(HystrixPolicy{ErrorPercent: 50, RequestVolume: 5, MaxConcurrent: 40,
				SleepWindow: 200 * ms, Timeout: 100 * ms})},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, single()},
		},
		Cases: []Case{{Count: 175}},
		Outages: []Outage{
			{Target: inventoryStock, From: 80 * ms, For: 320 * ms, Fault: down},
			{Target: inventoryStock, From: 650 * ms, For: 350 * ms, Fault: slowPatch},
			{Target: inventoryStock, From: 1150 * ms, For: 350 * ms, Fault: down},
		},
	}
}

// heimdallHystrix has api call inventory through gojek/heimdall v7's
// hystrix client: its retry loop (3 tries, exponential backoff from 10ms,
// ×2, capped at 80ms, plus 0–4ms drawn per wait, and a wait after the
// last failed try too) runs each try as a hystrix-go command, so the
// circuit (5 commands, 50% errors, SleepWindow 100ms) counts and refuses
// tries, which the loop retries like any failure. Root requests go one
// at a time, 4ms apart, through inventory outages (503 after 2ms).
func heimdallHystrix() Scenario {
	down := Fault{Status: http.StatusServiceUnavailable, Delay: 2 * ms}
	return Scenario{
		Name: "heimdall-hystrix",
		Description: "api calls inventory through gojek/heimdall v7's hystrix client: a retry loop (3 tries; NewExponentialBackoff 10ms ×2 " +
			"capped at 80ms plus 0–4ms per wait; it also waits after the last failed try) whose every try is an afex/hystrix-go command " +
			"(RequestVolumeThreshold 5, ErrorPercentThreshold 50, SleepWindow 100ms, Timeout 100ms): the circuit counts and refuses tries, " +
			"and the loop retries its refusals, which send nothing; root requests go one at a time, 4ms apart, and inventory answers 503 " +
			"after 2ms from 30ms to 530ms, then for 350ms from 650ms, 1100ms and 1550ms; some requests fail once or twice on their own.",
		Seed: 17,
		Pace: 4 * ms,
		// Run only by name, like retry-around-breaker: not under samples/.
		OnlyByName: true,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, heimdallExponential(3, 10*ms, 80*ms, 4*ms, HystrixPolicy{ErrorPercent: 50, RequestVolume: 5,
				MaxConcurrent: 10, SleepWindow: 100 * ms, Timeout: 100 * ms})},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, single()},
		},
		Cases: []Case{
			{Count: 130},
			{Count: 14, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 8, Target: inventoryStock, Script: times(2, unavailable)},
		},
		Outages: []Outage{
			{Target: inventoryStock, From: 30 * ms, For: 500 * ms, Fault: down},
			{Target: inventoryStock, From: 650 * ms, For: 350 * ms, Fault: down},
			{Target: inventoryStock, From: 1100 * ms, For: 350 * ms, Fault: down},
			{Target: inventoryStock, From: 1550 * ms, For: 350 * ms, Fault: down},
		},
	}
}

// breakerConcurrent is breaker's gobreaker under traffic that overlaps
// (issue 11 item 8): a root request leaves every 3ms whatever is in
// flight, and inventory goes down for stretches of time (an outage
// answers every request in its window, slowly) instead of failing
// scripted requests. A failed call (3 attempts 5ms apart) takes about
// 25ms, so several are in flight when the breaker opens; their results
// come in while it is open, and the requests that start then fail fast.
func breakerConcurrent() Scenario {
	down := Fault{Status: http.StatusServiceUnavailable, Delay: 4 * ms}
	return Scenario{
		Name: "breaker-concurrent",
		Description: "api calls inventory through retry-go (3 attempts, 5ms apart) inside a gobreaker circuit " +
			"breaker that opens after 3 failed calls in a row for 40ms; root requests leave every 3ms whatever is in flight " +
			"(several overlap), and inventory answers 503 after 4ms to every request for 250ms, 120ms and 60ms stretches.",
		Seed:     23,
		Pace:     3 * ms,
		OpenLoop: true,
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, retryGoFixed(3, 5*ms).withBreaker(3, 40*ms)},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, single()},
		},
		Cases: []Case{{Count: 400}},
		Outages: []Outage{
			{Target: inventoryStock, From: 200 * ms, For: 250 * ms, Fault: down},
			{Target: inventoryStock, From: 650 * ms, For: 120 * ms, Fault: down},
			{Target: inventoryStock, From: 950 * ms, For: 60 * ms, Fault: down},
		},
	}
}

// breakerInstances is breaker-concurrent's api run as three instances
// (issue #11 item 5), each a process of its own with its own
// service.instance.id and its own gobreaker around its retrying calls to
// inventory; edge spreads its calls over them in turn, as a round-robin
// load balancer does, so their calls interleave on one edge: one
// instance's breaker is open, failing its requests fast, while the
// others' calls still go out.
func breakerInstances() Scenario {
	down := Fault{Status: http.StatusServiceUnavailable, Delay: 4 * ms}
	return Scenario{
		Name: "breaker-instances",
		Description: "api runs as three instances (service.instance.id api-1, api-2, api-3), each calling inventory through retry-go " +
			"(3 attempts, 5ms apart) inside a gobreaker circuit breaker of its own that opens after 3 failed calls in a row for 40ms; " +
			"edge sends each order to the next instance in turn, a root request every 2ms whatever is in flight (each instance " +
			"gets one every 6ms), and inventory answers 503 after 4ms to every request for 200ms, 120ms and 60ms stretches.",
		Seed:      29,
		Pace:      2 * ms,
		OpenLoop:  true,
		Instances: map[string]int{"api": 3},
		Edges: []Edge{
			{"edge", "api", routeOrder, single()},
			{"api", "inventory", routeStock, retryGoFixed(3, 5*ms).withBreaker(3, 40*ms)},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, single()},
		},
		Cases: []Case{{Count: 450}},
		Outages: []Outage{
			{Target: inventoryStock, From: 150 * ms, For: 200 * ms, Fault: down},
			{Target: inventoryStock, From: 500 * ms, For: 120 * ms, Fault: down},
			{Target: inventoryStock, From: 750 * ms, For: 60 * ms, Fault: down},
		},
	}
}

func retryEverywhere() Scenario {
	return Scenario{
		Name: "retry-everywhere",
		Description: "edge, api and inventory each make up to 3 attempts, so one db outage " +
			"multiplies into 27 db calls for a single checkout.",
		Seed: 1,
		Edges: []Edge{
			{"edge", "api", routeOrder, backoffExponential(3, 20*ms, 2, 200*ms, 0.5)},
			{"api", "inventory", routeStock, retryGoFixed(3, 20*ms)},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, retryableHTTP(3, 10*ms, 80*ms)},
		},
		// Each wait edge → api makes takes 3 failed inventory calls (api's
		// whole budget) or 9 failed db calls; the inventory cases fail
		// inventory itself so that edge retries often without 27 db calls
		// per request.
		Cases: []Case{
			{Count: 40},
			{Count: 10, Target: dbStock, Script: times(1, unavailable)},
			{Count: 6, Target: dbStock, Script: times(2, unavailable)},
			{Count: 2, Target: dbStock, Script: times(1, throttled)},
			{Count: 3, Target: dbStock, Script: times(1, badRequest)},
			{Count: 4, Target: dbStock, Script: times(3, unavailable)},
			{Count: 2, Target: dbStock, Script: times(9, unavailable)},
			{Count: 1, Target: dbStock, Script: times(27, unavailable)},
			{Count: 2, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 1, Target: inventoryStock, Script: times(2, unavailable)},
			{Count: 6, Target: inventoryStock, Script: times(3, unavailable)},
			{Count: 5, Target: inventoryStock, Script: times(6, unavailable)},
		},
	}
}

func edgeOnly() Scenario {
	return Scenario{
		Name:        "edge-only",
		Description: "only edge retries (3 attempts, jittered exponential); every db failure re-runs the whole chain below it.",
		Seed:        2,
		Edges: []Edge{
			{"edge", "api", routeOrder, backoffExponential(3, 20*ms, 2, 200*ms, 0.5)},
			{"api", "inventory", routeStock, single()},
			{"api", "pricing", routePrice, single()},
			{"inventory", "db", routeDBStock, single()},
		},
		Cases: []Case{
			{Count: 40},
			{Count: 12, Target: dbStock, Script: times(1, unavailable)},
			{Count: 6, Target: dbStock, Script: times(2, unavailable)},
			{Count: 3, Target: dbStock, Script: times(1, badRequest)},
			{Count: 3, Target: dbStock, Script: times(3, unavailable)},
			{Count: 4, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 2, Target: inventoryStock, Script: times(2, unavailable)},
		},
	}
}

func mixed() Scenario {
	return Scenario{
		Name: "mixed",
		Description: "constant-delay retries at edge, jittered exponential at api, go-retryablehttp with " +
			"per-try timeouts and Retry-After at inventory, and two retried POSTs, one with an Idempotency-Key.",
		Seed: 3,
		Edges: []Edge{
			{"edge", "api", routeOrder, retryGoFixed(3, 25*ms)},
			{"edge", "api", routePayment, single()},
			{"api", "inventory", routeStock, backoffExponential(4, 20*ms, 2, 160*ms, 0.5)},
			{"api", "pricing", routePrice, single()},
			{"api", "inventory", routeReserve, retryGoFixed(3, 30*ms)},
			{"api", "payments", routeCharge, retryableHTTP(4, 20*ms, 160*ms).withIdempotencyKey()},
			{"inventory", "db", routeDBStock, retryableHTTP(3, 10*ms, 80*ms).withPerTryTimeout(100 * ms)},
		},
		// edge → api GET waits once per 4 failed inventory calls (api's
		// whole budget) or 12 failed db calls.
		Cases: []Case{
			{Count: 40},
			{Count: 8, Target: dbStock, Script: times(1, unavailable)},
			{Count: 3, Target: dbStock, Script: times(2, unavailable)},
			{Count: 4, Target: dbStock, Script: times(1, slow)},
			{Count: 2, Target: dbStock, Script: times(1, throttled)},
			{Count: 2, Target: dbStock, Script: times(1, badRequest)},
			{Count: 2, Target: dbStock, Script: times(3, slow)},
			{Count: 1, Target: dbStock, Script: times(12, unavailable)},
			{Count: 3, Target: inventoryStock, Script: times(1, unavailable)},
			{Count: 2, Target: inventoryStock, Script: times(2, unavailable)},
			{Count: 2, Target: inventoryStock, Script: times(3, unavailable)},
			{Count: 6, Target: inventoryStock, Script: times(4, unavailable)},
			{Count: 5, Target: inventoryStock, Script: times(8, unavailable)},
			{Count: 1, Target: inventoryStock, Script: times(12, unavailable)},

			{Count: 10, Pay: true},
			{Count: 4, Pay: true, Target: inventoryReserve, Script: times(1, unavailable)},
			{Count: 3, Pay: true, Target: inventoryReserve, Script: times(2, unavailable)},
			{Count: 3, Pay: true, Target: inventoryReserve, Script: times(3, unavailable)},
			{Count: 1, Pay: true, Target: inventoryReserve, Script: times(1, badRequest)},
			{Count: 4, Pay: true, Target: paymentsCharge, Script: times(1, unavailable)},
			{Count: 3, Pay: true, Target: paymentsCharge, Script: times(2, unavailable)},
			{Count: 2, Pay: true, Target: paymentsCharge, Script: times(3, unavailable)},
			{Count: 2, Pay: true, Target: paymentsCharge, Script: times(4, unavailable)},
			{Count: 1, Pay: true, Target: paymentsCharge, Script: times(1, throttled)},
			{Count: 1, Pay: true, Target: paymentsCharge, Script: times(1, badRequest)},
		},
	}
}
