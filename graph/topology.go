package graph

// Schema versions the JSON form of Topology. Fields named in DESIGN.md's
// contract are never renamed or removed without bumping it.
const Schema = "retryaudit.topology/v1"

// Topology is what inference finds in the traces: the service graph, each
// edge's retry policy, the paths from every root with their amplification,
// and findings. Its JSON form round-trips: replay reads it back, and users
// may edit it.
type Topology struct {
	Schema   string    `json:"schema"`
	Source   Source    `json:"source"`
	Services []Service `json:"services"`
	Edges    []Edge    `json:"edges"`
	Paths    []Path    `json:"paths"`
	Findings []Finding `json:"findings"`
	Warnings []string  `json:"warnings"`
	// Calibration holds what replay needs to reproduce the traces (see
	// Calibration); absent in topologies written before it existed.
	Calibration *Calibration `json:"calibration,omitempty"`
}

// Source describes the traces the topology was inferred from.
type Source struct {
	Traces       int     `json:"traces"`
	Spans        int     `json:"spans"`
	RootCalls    int     `json:"root_calls"`
	WindowS      float64 `json:"window_s"`
	RootRatePerS float64 `json:"root_rate_per_s"`
	// ContextLeaks counts client spans that ran in another request's
	// context (started after their parent had ended, or repeated a request
	// their parent had already had answered), left out of inference with
	// everything below them.
	ContextLeaks int `json:"context_leaks,omitempty"`
	// ContextLeakShapes splits ContextLeaks by how each showed, and counts
	// the spans left out with them; absent when there are none.
	ContextLeakShapes *LeakShapes `json:"context_leak_shapes,omitempty"`
	// LostContextRetries counts client spans that started their own trace
	// while a caller of the same instance still waited on the same request,
	// which had just failed: retries that lost their context, counted on
	// the failed calls' edges (Edge.LostContextRetries), not as calls or
	// root requests.
	LostContextRetries int `json:"lost_context_retries,omitempty"`
}

// LeakShapes are the two shapes of client spans that ran in another
// request's context: Late ones started after their parent span had ended,
// Repeated ones repeated a request their parent had already had answered.
// Spans counts every span of their subtrees.
type LeakShapes struct {
	Late     int `json:"late"`
	Repeated int `json:"repeated"`
	Spans    int `json:"spans"`
}

// Service is a node of the graph. Virtual services are uninstrumented peers
// (databases, caches, external APIs) known only from their callers' spans.
type Service struct {
	Name    string `json:"name"`
	Virtual bool   `json:"virtual"`
	// Instances is how many process instances served the service's
	// requests, where its spans name one (service.instance.id, a Jaeger
	// client-uuid, a pod, host or address with its process id; spans
	// that name none beside ones that do count as one more): each keeps
	// its own client state, such as a circuit breaker, and replay runs
	// one per instance. 0 (absent) where no span names an instance: the
	// traces do not say, and replay runs one.
	Instances int `json:"instances,omitempty"`
	// Operations the service serves, with their observed latency.
	Operations []Operation `json:"operations"`
}

// Operation is one route or method a service serves.
type Operation struct {
	Name  string  `json:"name"`
	Count int     `json:"count"`
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
	P99MS float64 `json:"p99_ms"`
	// SelfP50MS etc. are the service's own time (span duration minus the
	// time covered by its outgoing calls), which replay draws service times from.
	SelfQuantilesMS []float64 `json:"self_quantiles_ms"`
	ErrorRate       float64   `json:"error_rate"`
	// OwnFailures counts executions that failed although every call they
	// made succeeded (the operation's own failures); FailedWithoutCalls
	// how many of them made no call at all (they failed before calling).
	OwnFailures int `json:"own_failures,omitempty"`
	// WorkQuantilesMS and FailedWorkQuantilesMS are the self time, at
	// WorkLevels, of executions that did not fail on their own and of
	// those that did (errors are often answered fast), without the waits
	// between attempts of their calls; replay draws service times from them.
	// An execution whose caller gave up on it while it worked (a slow
	// try, see SlowTries, such as one cut by a propagated deadline that
	// then reports DEADLINE_EXCEEDED itself) counts with the first: its
	// time is not that of a failure of its own.
	WorkQuantilesMS []float64 `json:"work_quantiles_ms,omitempty"`
	// StoppedAfterFailure counts executions whose last call failed
	// (handlers that return on the first error); ContinuedAfterFailure
	// calls made after an earlier call of the same execution had failed.
	StoppedAfterFailure   int       `json:"stopped_after_failure,omitempty"`
	ContinuedAfterFailure int       `json:"continued_after_failure,omitempty"`
	FailedWorkQuantilesMS []float64 `json:"failed_work_quantiles_ms,omitempty"`
	// SlowWorkQuantilesMS is the work, at WorkLevels, of the executions
	// whose caller gave up on them while they worked (Outcomes.SlowTries;
	// at least what their spans show, which a callee that ends its span
	// when the client hangs up cuts short), AnsweredWorkQuantilesMS that
	// of the other executions that did not fail on their own; both only
	// for an operation with such executions.
	SlowWorkQuantilesMS     []float64 `json:"slow_work_quantiles_ms,omitempty"`
	AnsweredWorkQuantilesMS []float64 `json:"answered_work_quantiles_ms,omitempty"`
	FailedWithoutCalls      int       `json:"failed_without_calls,omitempty"`
	// BreakerFastFails counts executions a circuit breaker on one of the
	// operation's calls failed fast (no call made); replay's breaker makes
	// those itself, so they count neither as own failures nor as
	// executions that chose not to call.
	BreakerFastFails int `json:"breaker_fast_fails,omitempty"`
	// Summarized names the time lists of this operation that held more
	// than MaxExactValues values, read from a sketch: durations (the
	// p50–p99), self_times, work, failed_work, slow_work and
	// answered_work. Absent when every quantile is exact.
	Summarized map[string]Summary `json:"summarized,omitempty"`
}

// EvidenceBelow is Edge.Evidence where a library sent the attempts below
// the instrumentation: the callee's spans under one client span (or under
// a caller span with no client span, a proxy's), which the replay reads
// too (the call's transit is drawn once, for its first attempt).
const EvidenceBelow = "below-instrumentation"

// Edge is one caller → callee operation with the retry policy inferred for it.
type Edge struct {
	Caller    string `json:"caller"`
	Callee    string `json:"callee"`
	Operation string `json:"operation"`
	Method    string `json:"method,omitempty"`
	// CallerOperation is the operation of the caller's span the calls are made from.
	CallerOperation string `json:"caller_operation"`

	Calls    int `json:"calls"`
	Attempts int `json:"attempts"`
	// AttemptsHistogram[i] counts calls that made i+1 attempts.
	AttemptsHistogram []int `json:"attempts_histogram"`
	Retries           bool  `json:"retries"`
	// RetriesUnknown is set where the edge's calls start their own traces
	// (RootCalls) and some failed, and nothing else shows the edge
	// retrying: no span links a retry to the call it repeats, so Retries
	// false means not seen, not "not retried", and no attempt count,
	// status, schedule or per-try timeout is claimed.
	RetriesUnknown bool `json:"retries_unknown,omitempty"`
	// RootCalls is the evidence of the calls whose client span starts its
	// own trace; absent where there are none.
	RootCalls *RootCalls `json:"root_calls,omitempty"`
	// LostContextRetries counts client spans that started their own trace
	// right after one of this edge's calls failed, while its caller still
	// waited: its retries, whose context was lost (Source.LostContextRetries).
	// Those that could be only one call's retry are read as its attempts
	// (in Attempts, their waits in the backoff); LostContextLeftOut counts
	// the others, counted here only.
	LostContextRetries int  `json:"lost_context_retries,omitempty"`
	LostContextLeftOut int  `json:"lost_context_left_out,omitempty"`
	MaxAttempts        int  `json:"max_attempts"`
	MaxAttemptsExact   bool `json:"max_attempts_exact"`
	// Evidence says how retries were recognised: "markers" (resend count,
	// grpc-go attempt spans, Envoy retry.count or x-envoy-attempt-count),
	// "below-instrumentation" (several server spans under one client span,
	// or under a span of a caller that made no client span: a proxy),
	// "proxy" (several sidecar spans under one client span), "timing"
	// (sibling attempts that follow failures), "lost-context" (retries
	// that started their own trace while the failed call's caller waited)
	// or "request-key" (client spans that start their own traces and name
	// one request key: a captured Idempotency-Key or X-Request-Id).
	Evidence string `json:"evidence,omitempty"`
	// RetriesBy says which layer made the retries: "application" (the
	// caller's own code or library), "proxy" (its service-mesh sidecar,
	// Envoy or Istio; or the caller itself, a reverse proxy retrying the
	// request it received, with no client span: Caddy), or "proxy and
	// application".
	RetriesBy string `json:"retries_by,omitempty"`
	// ProxyMostTries is the most tries the sidecar made for one request of
	// the application's where the proxy retried (0 where it did not): with
	// RetriesBy "proxy and application", MaxAttempts counts the tries of
	// every application attempt, so the two layers multiply.
	ProxyMostTries int `json:"proxy_most_tries,omitempty"`
	// proxyShed counts the attempts the sidecar's circuit breaker refused
	// (UO); infer moves it into Breaker.ProxyShed.
	proxyShed int
	// noiseTail is the edge's timing noise where its legs have a late
	// tail (a busy host), 0 elsewhere: how much later than a fast answer
	// the host may end a request that made no call; infer hands it to
	// the breakers and clears it.
	noiseTail float64

	Backoff         Backoff  `json:"backoff"`
	PerTryTimeoutMS *float64 `json:"per_try_timeout_ms"`
	// DeadlineFromCaller counts failed attempts cut when the caller's own
	// attempt ended: its deadline propagated. They set no per-try timeout
	// of this edge. Past MaxExactValues abandoned attempts, an estimate
	// scaled from their sample (Summary.Kept).
	DeadlineFromCaller int `json:"deadline_from_caller,omitempty"`
	// PerTryTimeoutUnknown counts failed attempts that said they timed
	// out (DEADLINE_EXCEEDED, a timeout or cancel error) but at no one
	// duration a per-try timeout can be read from (two clusters, or too
	// many later ones): per_try_timeout_ms is null for want of evidence,
	// not because there is none. 0 otherwise. Past MaxExactValues
	// abandoned attempts, an estimate scaled from their sample.
	PerTryTimeoutUnknown int      `json:"per_try_timeout_unknown,omitempty"`
	RetriedStatus        []string `json:"retried_status"`
	NotRetriedStatus     []string `json:"not_retried_status"`
	RetryAfterHonored    int      `json:"retry_after_honored"`
	RetryAfterIgnored    int      `json:"retry_after_ignored"`
	// RetryAfterUncaptured counts the waits in RetryAfterHonored that no
	// span recorded a Retry-After or pushback for, well beyond the backoff
	// schedule at the same attempt, which the backoff fit leaves out:
	// whole-second waits after a 429 or 503 (or RESOURCE_EXHAUSTED or
	// UNAVAILABLE), and waits after those gRPC codes that agree with
	// others where the backoff's would differ (grpc-retry-pushback-ms
	// counts in milliseconds; no instrumentation records it). Past
	// MaxExactValues waits, an estimate scaled from their sample.
	RetryAfterUncaptured int `json:"retry_after_uncaptured,omitempty"`

	Hedging *Hedging `json:"hedging"`

	// ResultRetries, where the caller sent requests again after answers
	// that succeeded (its retry condition read the result: a body that
	// says "pending", a poll until ready), counts them; their statuses
	// are in RetriedStatus too. Absent when no call did, and none may
	// have (ResultRetries.Unknown).
	ResultRetries *ResultRetries `json:"result_retries,omitempty"`

	// Breaker is the circuit breaker the traces show on this edge; null
	// when they cannot tell (a breaker neither seen nor ruled out by 5
	// failed calls in a row, all sent).
	Breaker *Breaker `json:"breaker,omitempty"`

	// Idempotency covers retried calls of non-idempotent methods.
	Idempotency *Idempotency `json:"idempotency"`

	// OutlivedCaller counts attempts on this edge that started after the
	// caller's own caller had already given up on the request that caused
	// them: the deadline did not propagate.
	OutlivedCaller int `json:"outlived_caller"`

	// ConcurrentShare is the share of this edge's calls that overlapped
	// another call made while serving the same request: near 1 for
	// parallel fan-out, 0 for calls made one after another.
	ConcurrentShare float64 `json:"concurrent_share"`
	// ConcurrentOtherShare is the share that overlapped a call of another
	// edge (the caller runs different calls at once), FanOutWidth the
	// median, over the requests that made several calls of this edge, of
	// the most of them in flight at once (1: one after another, as a loop
	// that waits for each; N: a pool of N workers, or N at once); 0 where
	// no request made more than one. Replay makes an operation's calls at
	// once where most overlapped another edge's, and otherwise in order,
	// each edge's up to FanOutWidth at a time.
	ConcurrentOtherShare float64 `json:"concurrent_other_share"`
	FanOutWidth          int     `json:"fan_out_width"`

	CalleeP50MS float64 `json:"callee_p50_ms"`
	CalleeP95MS float64 `json:"callee_p95_ms"`
	CalleeP99MS float64 `json:"callee_p99_ms"`
	FailureRate float64 `json:"failure_rate"`
	// MissingAttempts counts attempts that markers say were made but whose
	// spans are not in the input.
	MissingAttempts int `json:"missing_attempts"`
	// LeakedAttempts counts this edge's attempts that ran in another
	// request's context (Source.ContextLeaks) and are left out of Attempts:
	// the calls they belong to show fewer attempts than they made.
	LeakedAttempts int `json:"leaked_attempts,omitempty"`
	// Outcomes is the edge's failure model as the traces show it.
	Outcomes *Outcomes `json:"outcomes,omitempty"`
	// TransitQuantilesMS is the time an attempt spends outside the
	// callee's span (network, connection set-up, serialisation), at
	// WorkLevels; empty when no attempt reached an instrumented callee.
	// Attempts read from the callee's spans under one client span (a
	// library retrying or hedging below the instrumentation) have none of
	// their own: each such call gives one, from its client span's start to
	// its first attempt's plus from the end of the attempt that answered
	// it to its client span's end.
	TransitQuantilesMS []float64 `json:"transit_quantiles_ms,omitempty"`
	// RetryTransit compares the transit times of the attempts after the
	// first (retries and hedges) with the first attempts'; nil unless
	// attempts of both kinds, each with a client span of its own, reached
	// an instrumented callee.
	RetryTransit *LaterAttempts `json:"retry_transit,omitempty"`
	// FirstTransitQuantilesMS and RetryTransitQuantilesMS are the transit
	// times of first attempts and of the later ones apart, at WorkLevels,
	// set when they differ beyond chance (RetryTransit.Split): replay then
	// draws each attempt's transit from its kind's.
	FirstTransitQuantilesMS []float64 `json:"first_transit_quantiles_ms,omitempty"`
	RetryTransitQuantilesMS []float64 `json:"retry_transit_quantiles_ms,omitempty"`
	// RetryWork compares the callee's work (its own time, of the
	// executions that did not fail on their own) of the attempts after the
	// first (retries and hedges) with the first attempts'; nil when the
	// edge has no measured execution of either kind.
	RetryWork *LaterAttempts `json:"retry_work,omitempty"`
	// FirstWorkQuantilesMS and RetryWorkQuantilesMS are those work times
	// of first attempts and of the later ones apart, at WorkLevels, set
	// when they differ beyond chance (RetryWork.Split): replay then draws
	// the callee's work for each attempt of the edge from its kind's, in
	// place of the callee operation's WorkQuantilesMS.
	FirstWorkQuantilesMS []float64 `json:"first_work_quantiles_ms,omitempty"`
	RetryWorkQuantilesMS []float64 `json:"retry_work_quantiles_ms,omitempty"`
	// WorkCorrelation says whether the callee's work on a call's later
	// attempts follows its work on the earlier ones (slowness of the
	// request) or not (of the attempt); nil when no attempt after the
	// first reached an instrumented callee after one that did.
	WorkCorrelation *WorkCorrelation `json:"work_correlation,omitempty"`
	// NotReached counts executions of the caller's operation that did not
	// make this call after an earlier call had failed; CallOffsetMS is the
	// median time from the execution's start to the call: the order of
	// an operation's calls.
	NotReached   int     `json:"not_reached,omitempty"`
	CallOffsetMS float64 `json:"call_offset_ms,omitempty"`
	// WaitQuantilesMS[i] are the waits before retry i+1 (attempt i+2)
	// as the traces show them, at WorkLevels: the policy's backoff as it
	// really came out (a busy host wakes a sleeping client late); waits
	// for a Retry-After are left out.
	WaitQuantilesMS [][]float64 `json:"wait_quantiles_ms,omitempty"`

	// Examples are up to three traces showing the edge's calls, those
	// with the most attempts first.
	Examples []Example `json:"examples,omitempty"`

	// Summarized names the value lists of this edge that held more than
	// MaxExactValues values, so that a fit read a bounded summary of them
	// rather than every value: waits, network_legs (the noise the jitter
	// is judged against), abandoned_attempts (per-try timeouts) and
	// hedge_delays are samples; callee_durations, transit and
	// waits_by_retry_N (WaitQuantilesMS[N-1]) sketches. Absent when every fit
	// read every value.
	Summarized map[string]Summary `json:"summarized,omitempty"`
}

// Summary is how a fit read a list of more values than MaxExactValues.
type Summary struct {
	// Seen is how many values the traces gave.
	Seen int `json:"seen"`
	// Kept is, for a sample, how many of them the fit read: those of
	// lowest hash of their trace and span id, a uniform sample. The
	// counts of values a fit picks out of a sample of waits or of
	// abandoned attempts (retry_after_uncaptured and its share of
	// retry_after_honored, per_try_timeout_unknown, deadline_from_caller)
	// are scaled to the population: n·seen/kept, rounded, the uniform
	// sample's estimate (standard error about √n·seen/kept; exact when
	// the fit picks every kept value). backoff.samples and the schedule's
	// waits count the sample: the waits the fit read, of Seen.
	Kept int `json:"kept,omitempty"`
	// RelativeAccuracy is, for a sketch, how close its quantiles are
	// to the population's: within this fraction of a value at that rank.
	RelativeAccuracy float64 `json:"relative_accuracy,omitempty"`
}

// KindEvidence compares the two backoff kinds that fit a schedule's
// steps best, where several fit them jointly (each within chance of the
// steps, by weighted least squares).
type KindEvidence struct {
	// Best is the kind that fits the steps best, Over the next.
	Best BackoffKind `json:"best"`
	Over BackoffKind `json:"over"`
	// Ratio is the likelihood ratio by which Best fits the steps better
	// than Over: exp(Δ/2), Δ the difference of their sums of squared
	// deviations in standard errors plus 2 per parameter each fitted
	// (Akaike's criterion). Best is claimed as the kind where Ratio is
	// 30 or more and Best fits every step within its range; rounded to a
	// tenth, at most 1e6.
	Ratio float64 `json:"ratio"`
}

// Backoff is the inferred wait between attempts.
type Backoff struct {
	// Kind is immediate, constant, exponential, linear, fibonacci, or
	// unknown: too few retries to tell, or no one kind fits every step
	// of Schedule within its range (see KindCandidates), or the waits
	// lie inside the attempts' spans (WaitsInSpans).
	Kind BackoffKind `json:"kind"`
	// WaitsInSpans counts the failed attempts before a retry whose client
	// span stayed open long after the callee's ended, where the edge's
	// successes' spans did not: the caller held each failed answer
	// through its wait (gojek/heimdall closes a failed try's response
	// body, which ends otelhttp's span, only when the next try goes out,
	// after its backoff sleep), so the gaps between the spans are no
	// waits. Kind and Jitter are unknown then; 0 otherwise.
	WaitsInSpans int `json:"waits_in_spans,omitempty"`
	// KindCandidates, where Kind is unknown, lists the kinds the steps
	// allow (sorted): those that fit every step within its range, and
	// those that fit the steps jointly (weighted least squares within
	// chance); the steps cannot tell them apart (10, 20, 30ms is
	// linear's and Fibonacci's; three jittered steps of a ×2 schedule
	// often allow linear growth too). Absent where no kind fits, or too
	// few retries were seen.
	KindCandidates []BackoffKind `json:"kind_candidates,omitempty"`
	// KindEvidence, where several kinds fit the steps jointly, says which
	// fits them best and by what likelihood ratio over the next: the
	// kind claimed (30:1 or more), or why it is unknown (less). Absent
	// where at most one kind fits jointly.
	KindEvidence *KindEvidence `json:"kind_evidence,omitempty"`
	BaseMS       float64       `json:"base_ms"`
	// IncrementMS, for linear and Fibonacci backoff, is what each wait
	// adds to the one before (linear: base_ms + (n−1)·increment_ms before
	// retry n), or, for Fibonacci, what the second wait adds to the first
	// (base_ms, base_ms + increment_ms, then each the sum of the two
	// before); IncrementRangeMS the increments that fit every step.
	IncrementMS      *float64    `json:"increment_ms,omitempty"`
	IncrementRangeMS *[2]float64 `json:"increment_range_ms,omitempty"`
	Multiplier       *float64    `json:"multiplier"`
	// MultiplierRange is the range of multipliers the waits allow (low,
	// high; 99% at each of the first and last attempt index it is read
	// from): a few jittered waits per attempt leave it wide, and a
	// multiplier read from them is no better than this range.
	MultiplierRange *[2]float64 `json:"multiplier_range,omitempty"`
	// BaseRangeMS is the 99% range of the first wait's schedule (low,
	// high), read with the same estimator as BaseMS; it includes waits
	// set aside as late.
	BaseRangeMS *[2]float64 `json:"base_range_ms,omitempty"`
	// MultiplierFit is the multiplier the fit reads, also when its range is
	// wider than a third (high over low) and Multiplier is null (unknown):
	// the figure a replay needs, not one to stand by.
	MultiplierFit *float64 `json:"multiplier_fit,omitempty"`
	// OverheadMS is the time every wait spent outside the policy's sleep
	// (the client's or the network's between attempts), read from a floor
	// the waits share at every attempt while they grow, and taken off
	// before the fit; absent when none was seen.
	OverheadMS *float64 `json:"overhead_ms,omitempty"`
	// OffsetMS, for an exponential schedule whose waits grow by the
	// multiplier only once a fixed time is added to or taken off every
	// one (offsetGrowth), is that time: retry n waits offset_ms +
	// (base_ms − offset_ms)·multiplierⁿ⁻¹ (retry-axios's
	// ((2ⁿ − 1)/2)·d is d·2ⁿ⁻¹ − d/2: base d/2, ×2, offset −d/2). The
	// steps stand as read, and the replay waits them. Absent where the
	// schedule is base_ms·multiplierⁿ⁻¹ itself.
	OffsetMS *float64 `json:"offset_ms,omitempty"`
	// CapMS is the cap the waits stop growing at: claimed where a step
	// falls short of the growth before it (a ratio below 1.15, or below
	// 0.7 of the growth's) and one cap fits every step from there on.
	// Null where no step shows one: CapAboveMS then says how high a cap
	// would have to be.
	CapMS *float64 `json:"cap_ms"`
	// CapAboveMS, for a growing schedule (exponential, linear,
	// Fibonacci) where no cap was seen, is the level any cap is at or
	// above: the highest low end of the steps' 99% ranges (a capped step
	// never waits past the cap). Absent where a cap was seen, or the
	// schedule does not grow.
	CapAboveMS *float64 `json:"cap_above_ms,omitempty"`
	// Jitter is none, full, equal, decorrelated, proportional (±x of the
	// wait, in JitterFraction), additive (+U[0, JitterAdditiveMS] on the
	// wait), or unknown.
	Jitter JitterKind `json:"jitter"`
	// JitterCandidates, where Jitter is unknown but the waits narrow it to
	// a few kinds, lists them (sorted). ["decorrelated", "full"]: the
	// waits spread from zero at every attempt index, as full jitter's do
	// and as decorrelated jitter's do in its timeline form (Polly's "V2"),
	// and too few calls waited twice (WaitDependence) for one call's
	// consecutive waits to tell the two apart. The schedule is then read
	// as the ceiling of the waits at each index (full jitter's
	// base·multiplierⁿ, whose growth the timeline form shares); each
	// range also holds the timeline form's own reading, the time waited
	// in all up to the retry at its median, whose base lies lower (its
	// first waits' median). Where the ceilings fit no single growth the
	// two do not share a schedule, and the kind is unknown.
	// ["additive", "proportional"]: the waits sit about a centre at every
	// attempt index, and their widths, read so that late timers do not
	// widen them, fit one that stays put and one that grows with the
	// wait alike; the schedule is read at the waits' medians (the centre
	// of either), each range holding either kind's reading.
	JitterCandidates []JitterKind `json:"jitter_candidates,omitempty"`
	// JitterFraction is x, for ±x of the wait (rounded to 0.05), stated
	// only where it lies inside JitterFractionRange and that range is
	// no wider than 0.5; else null (unknown), the range said.
	JitterFraction *float64 `json:"jitter_fraction"`
	// JitterFractionRange, for proportional jitter, is the 99% range of
	// its fraction (low, high; rounded outwards to 0.01), read from the
	// widths at every attempt index as JitterAdditiveRangeMS is (up to
	// their upper quartile or median where late timers may stretch
	// their range), the low end less the noise late timers widen each by.
	JitterFractionRange *[2]float64 `json:"jitter_fraction_range,omitempty"`
	// JitterAdditiveMS is a, for +U[0, a] on every wait; absent where
	// late timers leave a tail as wide as it (the longest wait at some
	// index reaches past its floor by more than a again), which the
	// traces cannot tell from the jitter: then only its range is said.
	JitterAdditiveMS *float64 `json:"jitter_additive_ms,omitempty"`
	// JitterAdditiveRangeMS is the 99% range of the additive width
	// (low, high), read from the widths at every attempt index (up to
	// their upper quartile or median where late timers stretch their
	// range), the low end less the noise late timers widen each by.
	JitterAdditiveRangeMS *[2]float64 `json:"jitter_additive_range_ms,omitempty"`
	// NoiseMS is the spread below which waits are taken to agree: the
	// edge's own timing noise (how much the network legs of its attempts
	// vary: their central 80%, or where those have a late tail, from
	// their 10th percentile to their median), times noiseFactor, and at
	// least 1.5ms.
	NoiseMS float64 `json:"noise_ms,omitempty"`
	// NoiseTailMS, where the legs have a late tail (a busy host: their
	// slower half spreads more than twice as wide as the faster), is
	// their central 80% times noiseFactor: where it reaches the waits at
	// every attempt index, jitter is unknown; the schedule's ranges allow
	// it. There, none needs waits piled at their shortest, and jitter a
	// bare floor.
	NoiseTailMS *float64 `json:"noise_tail_ms,omitempty"`
	// JitterPresent says whether waits at the same attempt vary beyond
	// scheduling noise; null with fewer than three waits. Jitter can be
	// unknown while this is true: present, but too few samples to name.
	JitterPresent *bool `json:"jitter_present"`
	// DecorrelatedForm, where Jitter is decorrelated, says which way one
	// call's waits depend on each other: from-previous (each drawn from a
	// range the previous one sets, min(cap, U[base, 3·previous]): a long
	// wait is followed by a long one; the schedule is the floor, the base,
	// and the kind constant) or timeline (the steps of one jittered
	// timeline, Polly's "V2": a long wait is followed by a short one; the
	// schedule is the time waited in all up to each retry, at its median).
	DecorrelatedForm DecorrelatedForm `json:"decorrelated_form,omitempty"`
	// WaitDependence is the evidence for or against decorrelated jitter:
	// how one call's consecutive waits depend on each other. Absent where
	// too few calls waited twice.
	WaitDependence *WaitDependence `json:"wait_dependence,omitempty"`
	// Samples is how many gaps between attempts the inference used: of a
	// sample, when the edge's waits are summarized (Summary.Kept of Seen).
	Samples int `json:"samples"`
	// AfterServerWait says what the schedule does after a wait the
	// server directed (an uncaptured Retry-After or gRPC pushback):
	// restarts (the next wait is the first wait's again: grpc-go, which
	// counts its retries from the last pushback), continues (the next
	// wait is the one its attempt index sets: got and most HTTP clients),
	// or unknown (the waits after one fit both alike, or no schedule
	// reaches their indices), with the evidence in AfterServerWaitEvidence.
	// The schedule is read from the waits indexed as the reading says;
	// where it is unknown, the waits after a server's wait are left out
	// of it. Absent where no call waited again after a server's wait.
	AfterServerWait AfterServerWait `json:"after_server_wait,omitempty"`
	// AfterServerWaitEvidence is what AfterServerWait rests on.
	AfterServerWaitEvidence *ServerWaitEvidence `json:"after_server_wait_evidence,omitempty"`
	// Schedule is the fit per retry: the wait the schedule sets before
	// each retry, read with the same estimator as BaseMS, with its 99%
	// range, for every attempt index the fit read (the first is BaseMS and
	// BaseRangeMS). Absent where no schedule was read (immediate retries,
	// or none seen).
	Schedule []WaitStep `json:"schedule,omitempty"`
}

// WaitDependence is how one call's consecutive waits depend on each
// other: Spearman's rank correlation between the waits before retries k
// and k+1 of the calls that waited both, pooled over the attempt indices
// with enough pairs, and how many standard errors it lies from zero (Z;
// waits drawn on their own lie within 3 of it but one time in 370).
type WaitDependence struct {
	Pairs           int     `json:"pairs"`
	RankCorrelation float64 `json:"rank_correlation"`
	Z               float64 `json:"z"`
}

// AfterServerWait is what a retry schedule does after a wait the server
// directed.
type AfterServerWait string

// What a schedule does after a server's wait.
const (
	ScheduleRestarts  AfterServerWait = "restarts"
	ScheduleContinues AfterServerWait = "continues"
	ScheduleUnknown   AfterServerWait = "unknown"
)

// ServerWaitEvidence weighs the waits that followed a server's wait under
// a restarted schedule (indexed from the server's wait) against a
// continued one (indexed by their attempt): each wait's likelihood under
// the waits the other calls show at that index.
type ServerWaitEvidence struct {
	// Waits is how many waits came after a server's wait; Judged how many
	// of them both readings had an index of enough waits to weigh.
	Waits  int `json:"waits"`
	Judged int `json:"judged"`
	// Restart and Continue count the judged waits each reading fits
	// better.
	Restart  int `json:"restart"`
	Continue int `json:"continue"`
	// Ratio is the likelihood ratio of the likelier reading over the
	// other over all judged waits (1 where none was judged), capped at
	// 1e6; a reading is claimed from kindEvidenceRatio (30:1).
	Ratio float64 `json:"ratio"`
}

// WaitStep is the schedule's wait before one retry as the fit reads it.
type WaitStep struct {
	// Retry numbers the wait: 1 before the second attempt, 2 before the
	// third, and so on.
	Retry int `json:"retry"`
	// Waits is how many waits the traces show there (waits the server
	// directed left out).
	Waits int `json:"waits"`
	// MS is the schedule's wait there; RangeMS the range (low, high) the
	// schedule may lie in, 99%, allowing for an overhead every wait
	// shares as BaseRangeMS does. A few jittered waits leave it wide.
	MS      float64    `json:"ms"`
	RangeMS [2]float64 `json:"range_ms"`
}

// Hedging describes overlapping attempts to the same request.
type Hedging struct {
	// Calls counts the hedged calls: those with an attempt sent while an
	// earlier one still ran, and, below the instrumentation, those with an
	// attempt that reached the callee after another had answered OK (sent
	// before the client read that answer, since nothing is sent again
	// after a success).
	Calls int `json:"calls"`
	// DelayMS is the median delay from the start of the attempt before a
	// call's first hedge to the hedge, over the calls that show it (all
	// but DelayUnknown).
	DelayMS float64 `json:"delay_ms"`
	// MaxRequests is the most requests one hedged call sent (the original
	// and its hedges): what hedging multiplies load by at worst, as far as
	// the traces show.
	MaxRequests int `json:"max_requests"`
	// NonIdempotent counts hedged calls of a non-idempotent method.
	NonIdempotent int `json:"non_idempotent,omitempty"`
	// IdempotencyUnknown counts hedged calls whose method is not an HTTP
	// method (an RPC, a statement): nothing in a span says whether
	// sending it twice is safe.
	IdempotencyUnknown int `json:"idempotency_unknown,omitempty"`
	// BelowInstrumentation counts the hedged calls read from the callee's
	// spans under one client span (a library hedging below the
	// instrumentation); AnsweredByEarlier those of them answered by an
	// attempt that one started after it outlasted, which only hedging
	// does: a per-try timeout that leaves the callee at work overlaps the
	// callee's spans too, but its call ends on the latest attempt.
	BelowInstrumentation int `json:"below_instrumentation,omitempty"`
	AnsweredByEarlier    int `json:"answered_by_earlier,omitempty"`
	// DelayUnknown counts the hedged calls that show no hedge delay: read
	// below the instrumentation, an attempt of theirs reached the callee
	// after another had answered OK, so the order their attempts arrived
	// in is not the order they were sent in. DelayMS is read from the
	// others; where every hedged call is such a call it is 0, unknown.
	DelayUnknown int `json:"delay_unknown,omitempty"`
	// OnFailure is what the client does when an attempt answers with a
	// failure while another is still out, read from the hedged calls that
	// show it (FailedWhileOut): HedgeFailEnds, HedgeFailSendsNext,
	// HedgeFailEndsOrSendsNext (both seen: which one, by the failure's
	// class, is the edge's give-up shares), HedgeFailWaits, or
	// HedgeFailUnknown where no call shows it.
	OnFailure string `json:"on_failure"`
	// FailedWhileOut counts those calls by what followed the failure.
	FailedWhileOut FailedWhileOut `json:"failed_while_out"`
}

// What a hedging client does when an attempt fails while another is out
// (Hedging.OnFailure).
const (
	// HedgeFailEnds: the call ends on the failure, the attempts out are
	// abandoned (cristalhq/hedgedhttp on an HTTP answer, failsafe-go's
	// hedge policy by default, grpc-js on a fatal status).
	HedgeFailEnds = "ends"
	// HedgeFailSendsNext: the next attempt goes out at once, the attempts
	// out are kept (hedgedhttp after a request got no answer, grpc-js on a
	// non-fatal status).
	HedgeFailSendsNext = "sends_next"
	// HedgeFailEndsOrSendsNext: calls of both kinds.
	HedgeFailEndsOrSendsNext = "ends_or_sends_next"
	// HedgeFailWaits: the client waits for the attempts out (and its hedge
	// timer) before it acts (failsafe-go with CancelIf on other results).
	HedgeFailWaits = "waits"
	// HedgeFailUnknown: no hedged call shows a failure while another
	// attempt was out.
	HedgeFailUnknown = "unknown"
)

// FailedWhileOut counts the hedged calls in which an attempt answered with
// a failure, before any success, while another attempt of the call was
// still out, by what the client did next: Ended (it stopped waiting for
// the attempts out, sending nothing more, before any of them answered),
// SentNext (it sent another attempt before any of them answered and
// before its hedge timer was due), Waited (it sent nothing until one of
// them answered or its hedge timer fired).
type FailedWhileOut struct {
	Ended    int `json:"ended"`
	SentNext int `json:"sent_next"`
	Waited   int `json:"waited"`
}

// onFailure is the behaviour the counts show: the one the calls show, the
// waits where more calls waited than acted at once, unknown for none.
func (f FailedWhileOut) onFailure() string {
	switch acted := f.Ended + f.SentNext; {
	case acted+f.Waited == 0:
		return HedgeFailUnknown
	case f.Waited >= acted:
		return HedgeFailWaits
	case f.Ended > 0 && f.SentNext > 0:
		return HedgeFailEndsOrSendsNext
	case f.Ended > 0:
		return HedgeFailEnds
	}
	return HedgeFailSendsNext
}

// Idempotency is the key coverage of retried non-idempotent calls.
type Idempotency struct {
	RetriedCalls int `json:"retried_calls"`
	WithKey      int `json:"with_key"`
}

// Path is a chain of calls from a root operation to an operation that calls
// nothing further.
type Path struct {
	Services   []string `json:"services"`
	Operations []string `json:"operations"`
	// RetryingLayers are the callers on the path whose calls retry.
	RetryingLayers         []string `json:"retrying_layers"`
	WorstCaseAmplification int      `json:"worst_case_amplification"`
	// WorstCaseExact is false when any factor is a lower bound.
	WorstCaseExact           bool    `json:"worst_case_exact"`
	ObservedMaxAmplification float64 `json:"observed_max_amplification"`
	// Examples are up to three traces through the path's retrying layers,
	// deepest layer first.
	Examples []Example `json:"examples,omitempty"`
}

// Severity orders findings.
type Severity string

// Severities, most severe first.
const (
	SeverityHigh   Severity = "high"
	SeverityMedium Severity = "medium"
	SeverityLow    Severity = "low"
)

// Finding is one problem with a stable id, where it is, and one line of
// evidence.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Location string   `json:"location"`
	Message  string   `json:"message"`
	// Examples are up to three traces that show the problem.
	Examples []Example `json:"examples,omitempty"`
}
