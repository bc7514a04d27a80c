package main

import (
	"math"
	"time"

	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
)

// Module paths of the retry libraries the callers use. They double as the
// "library" values written to truth.json.
const (
	libBackoff       = "github.com/cenkalti/backoff/v5"
	libRetryGo       = "github.com/avast/retry-go/v4"
	libRetryablehttp = "github.com/hashicorp/go-retryablehttp"
	libGobreaker     = "github.com/sony/gobreaker/v2"
	libFailsafe      = "github.com/failsafe-go/failsafe-go"
	libResty         = "github.com/go-resty/resty/v2"
	libResiliency    = "github.com/eapache/go-resiliency/retrier"
	libAWSRetry      = "github.com/aws/aws-sdk-go-v2/aws/retry"
	libGoRetry       = "github.com/sethvargo/go-retry"
	libHedgedhttp    = "github.com/cristalhq/hedgedhttp"
)

// Backoff describes the wait between attempts in the vocabulary of
// truth.json: Kind is none, constant, exponential, linear (Base +
// (n−1)·Increment before retry n) or fibonacci (Base, Base + Increment,
// then the sum of the two waits before); Jitter is none,
// proportional (±JitterFraction of the computed wait), additive
// (+U[0, Additive) on top of it), equal (U[d/2, d)) or full (U[0, d)).
type Backoff struct {
	Kind           string
	Base           time.Duration
	Multiplier     float64
	Increment      time.Duration
	Cap            time.Duration
	Jitter         string
	JitterFraction float64
	Additive       time.Duration
}

// Policy is how a caller retries calls along one edge. The retry adapters in
// caller.go configure their library from these fields and truth.go writes the
// same fields out, so the ground truth cannot drift from what ran.
type Policy struct {
	// Library is the module path of the retry library, "" for a single attempt.
	Library     string
	MaxAttempts int
	Backoff     Backoff
	// PerTryTimeout bounds each attempt (http.Client.Timeout); 0 means none.
	PerTryTimeout time.Duration
	// HonoursRetryAfter is true where the library waits for a 429/503
	// response's Retry-After instead of its own backoff.
	HonoursRetryAfter bool
	// IdempotencyKey makes the caller send one Idempotency-Key per logical
	// call, repeated on every attempt.
	IdempotencyKey bool
	// HideRetryAfter leaves the Retry-After response header out of the
	// attempt spans, as instrumentations that capture no headers do.
	HideRetryAfter bool
	// Breaker, when set, wraps every logical call in a sony/gobreaker
	// circuit breaker: once open, calls fail at once without an attempt.
	Breaker *BreakerPolicy
	// Hedge, when set, sends up to MaxHedges more requests for a call
	// while none has answered, Delay apart (failsafe-go's hedge policy,
	// cristalhq/hedgedhttp's round tripper); the first answer wins and
	// the others are cancelled.
	Hedge *HedgePolicy
	// Replicas > 1 runs that many instances of the callee, each on its own
	// port; the caller sends attempt k to replica k mod Replicas.
	Replicas int
	// BelowInstrumentation puts the retrying or hedging client under
	// otelhttp (a go-retryablehttp or hedgedhttp RoundTripper as the
	// transport otelhttp wraps): one CLIENT span per call, one callee
	// SERVER span per attempt under it.
	BelowInstrumentation bool
	// Quota, when set, is a retry budget shared by all the edge's calls:
	// a token bucket every retry draws from (the AWS SDK's retry quota).
	Quota *QuotaPolicy
	// RetryOnResult adds a result predicate to the retry condition: a
	// 200 OK whose body says the result is not ready yet (pendingBody) is
	// retried like a failure, after the same backoff (polling until
	// ready).
	RetryOnResult bool
}

// withResultPredicate returns p also retrying a 200 whose body says
// "pending" (go-retryablehttp's CheckRetry reading the body).
func (p Policy) withResultPredicate() Policy {
	p.RetryOnResult = true
	return p
}

// failsafeResultRetry retries with failsafe-go's retry policy (generic,
// not failsafehttp's) whose one HandleIf predicate reads the result as
// well as the error: a retryable failure (the shared predicate) or a 200
// whose body says "pending"; at most attempts, delay apart (WithDelay:
// constant, no jitter), the last answer returned when they run out
// (ReturnLastFailure).
func failsafeResultRetry(attempts int, delay time.Duration) Policy {
	return Policy{Library: libFailsafe, MaxAttempts: attempts, RetryOnResult: true,
		Backoff: Backoff{Kind: "constant", Base: delay, Jitter: "none"}}
}

// QuotaPolicy is the AWS SDK for Go v2 standard retryer's retry quota
// (aws/ratelimit.TokenRateLimit): a bucket of Capacity tokens; a retry
// takes RetryCost of them (ThrottlingRetryCost after a throttling
// error), and is refused, ending its call, when fewer are left; a retry
// that succeeds gives its cost back, and a call whose first attempt
// succeeds adds NoRetryIncrement, never above Capacity.
type QuotaPolicy struct {
	Capacity, RetryCost, ThrottlingRetryCost, NoRetryIncrement uint
}

// withRetriesBelowInstrumentation returns p retrying below otelhttp.
func (p Policy) withRetriesBelowInstrumentation() Policy {
	p.BelowInstrumentation = true
	return p
}

// restyAcrossReplicas retries with go-resty's default backoff across the
// callee's replicas: the wait before retry k (k = 0, 1, …) is drawn from
// [c/2, c) with c = min(cap, base·2^k), and never below base (so the
// first wait is always base), which is equal jitter after the first.
func restyAcrossReplicas(attempts int, base, cap time.Duration, replicas int) Policy {
	return Policy{Library: libResty, MaxAttempts: attempts, Replicas: replicas,
		Backoff: Backoff{Kind: "exponential", Base: base, Multiplier: 2, Cap: cap, Jitter: "equal"}}
}

// HedgePolicy configures a hedge policy: failsafe-go's, or
// cristalhq/hedgedhttp's (whose upto, the requests of a call in all, is
// MaxHedges+1).
type HedgePolicy struct {
	Delay     time.Duration
	MaxHedges int
}

// hedged is a caller that never retries a failure but hedges slow calls
// with failsafe-go.
func hedged(delay time.Duration, maxHedges int) Policy {
	return Policy{Library: libFailsafe, MaxAttempts: 1, Backoff: Backoff{Kind: "none", Jitter: "none"},
		Hedge: &HedgePolicy{Delay: delay, MaxHedges: maxHedges}}
}

// hedgedHTTP is a caller that hedges with cristalhq/hedgedhttp's round
// tripper, upto requests per call in all: each one delay after the one
// before was sent while none has answered, or at once after one failed
// in transport (no answer at all), which makes it retry those at once
// within the same upto. The first response, whatever its status, is the
// call's answer: an HTTP error is never sent again.
func hedgedHTTP(delay time.Duration, upto int) Policy {
	return Policy{Library: libHedgedhttp, MaxAttempts: upto, Backoff: Backoff{Kind: "none", Jitter: "none"},
		Hedge: &HedgePolicy{Delay: delay, MaxHedges: upto - 1}}
}

// retriesStatus reports whether the policy sends a call again after an
// attempt answered with HTTP status code: never for hedgedhttp, which
// takes any answer as the call's.
func (p Policy) retriesStatus(code int) bool {
	return p.retries() && p.Library != libHedgedhttp && retryableStatus(code)
}

// requests is the most requests one call can send: its attempts, or the
// original and its hedges.
func (p Policy) requests() int {
	if p.Hedge != nil {
		return max(p.MaxAttempts, p.Hedge.MaxHedges+1)
	}
	return p.MaxAttempts
}

// BreakerPolicy configures a circuit breaker: gobreaker's around the
// retrying call, failsafe-go's inside the retry loop (InsideRetries), or
// a hystrix-go circuit around each call (Hystrix).
type BreakerPolicy struct {
	// ConsecutiveFailures failed calls in a row open it (failed attempts,
	// where it is InsideRetries).
	ConsecutiveFailures int
	// OpenFor is how long it stays open before it lets a probe through;
	// OpenJitter moves each open period by up to ± that much (failsafe-go's
	// WithJitter: U[−j, j) added to OpenFor), 0 for none.
	OpenFor, OpenJitter time.Duration
	// InsideRetries puts the breaker inside the retry loop, as
	// failsafe-go's failsafe.With(retryPolicy, circuitBreaker) composes
	// them: it counts and refuses attempts, not calls, and the retry
	// policy retries its refusals after its own backoff, so while it is
	// open a call sends fewer requests than it makes attempts.
	InsideRetries bool
	// SuccessThreshold is how many probes in a row must succeed while it
	// is half-open to close it (failsafe-go's WithSuccessThreshold; it
	// lets that many through at once); 0 for gobreaker's one probe.
	SuccessThreshold int
	// Hystrix, when set, makes the breaker a hystrix-go circuit around
	// each call (hystrix.go): it trips on an error percentage over a
	// rolling window, not on failures in a row, and OpenFor is its
	// SleepWindow.
	Hystrix *HystrixPolicy
}

// failsafeRetryAroundBreaker retries with failsafe-go's HTTP retry policy
// (failsafehttp.NewRetryPolicyBuilder: transport errors, 429 and 5xx
// other than 501; a 429's or 503's Retry-After waited instead of the
// delay), at most attempts, delay apart (WithDelay: constant, no
// jitter), around a failsafe-go circuit breaker that opens after
// failures failed attempts in a row, stays open for openFor ± openJitter
// and closes after successes probes in a row succeeded.
func failsafeRetryAroundBreaker(attempts int, delay time.Duration, failures int, openFor, openJitter time.Duration, successes int) Policy {
	return Policy{
		Library:           libFailsafe,
		MaxAttempts:       attempts,
		Backoff:           Backoff{Kind: "constant", Base: delay, Jitter: "none"},
		HonoursRetryAfter: true,
		Breaker: &BreakerPolicy{ConsecutiveFailures: failures, OpenFor: openFor, OpenJitter: openJitter, InsideRetries: true,
			SuccessThreshold: successes},
	}
}

// breakerInside reports whether p's breaker sits inside its retry loop.
func (p Policy) breakerInside() bool { return p.Breaker != nil && p.Breaker.InsideRetries }

// withHiddenRetryAfter returns p with Retry-After left out of its spans.
func (p Policy) withHiddenRetryAfter() Policy {
	p.HideRetryAfter = true
	return p
}

// withBreaker returns p with calls behind a gobreaker circuit breaker.
func (p Policy) withBreaker(failures int, openFor time.Duration) Policy {
	p.Breaker = &BreakerPolicy{ConsecutiveFailures: failures, OpenFor: openFor}
	return p
}

// retries reports whether the policy may send more than one attempt.
func (p Policy) retries() bool { return p.MaxAttempts > 1 }

// withPerTryTimeout returns p with every attempt bounded by d.
func (p Policy) withPerTryTimeout(d time.Duration) Policy {
	p.PerTryTimeout = d
	return p
}

// withIdempotencyKey returns p sending an Idempotency-Key header.
func (p Policy) withIdempotencyKey() Policy {
	p.IdempotencyKey = true
	return p
}

// single is a caller that never retries.
func single() Policy {
	return Policy{MaxAttempts: 1, Backoff: Backoff{Kind: "none", Jitter: "none"}}
}

// backoffExponential retries with cenkalti/backoff's ExponentialBackOff: the
// n-th wait is base*multiplier^(n-1), capped, then randomised by ±fraction.
func backoffExponential(attempts int, base time.Duration, multiplier float64, cap time.Duration, fraction float64) Policy {
	return Policy{
		Library:     libBackoff,
		MaxAttempts: attempts,
		Backoff: Backoff{Kind: "exponential", Base: base, Multiplier: multiplier, Cap: cap,
			Jitter: "proportional", JitterFraction: fraction},
	}
}

// retryGoFixed retries with avast/retry-go's FixedDelay: the same wait every
// time, no jitter.
func retryGoFixed(attempts int, delay time.Duration) Policy {
	return Policy{
		Library:     libRetryGo,
		MaxAttempts: attempts,
		Backoff:     Backoff{Kind: "constant", Base: delay, Jitter: "none"},
	}
}

// retryGoBackoffJitter retries with avast/retry-go's default delay,
// CombineDelay(BackOffDelay, RandomDelay): base·2^(n-1) before retry n
// plus U[0, maxJitter) (additive jitter), the sum capped at maxDelay.
func retryGoBackoffJitter(attempts int, base, maxJitter, maxDelay time.Duration) Policy {
	return Policy{
		Library:     libRetryGo,
		MaxAttempts: attempts,
		Backoff:     Backoff{Kind: "exponential", Base: base, Multiplier: 2, Cap: maxDelay, Jitter: "additive", Additive: maxJitter},
	}
}

// retryGoFullJitter retries with avast/retry-go's FullJitterBackoffDelay:
// U[0, min(maxDelay, base·2ⁿ⁻¹)) before retry n, base being twice the
// Delay the library is given (its ceiling is Delay·2ⁿ): full jitter.
func retryGoFullJitter(attempts int, base, maxDelay time.Duration) Policy {
	return Policy{
		Library:     libRetryGo,
		MaxAttempts: attempts,
		Backoff:     Backoff{Kind: "exponential", Base: base, Multiplier: 2, Cap: maxDelay, Jitter: "full"},
	}
}

// resiliencyExponential retries with eapache/go-resiliency's retrier:
// retrier.ExponentialBackoff(attempts-1, base) waits base·2^(n-1) before
// retry n, without a cap, and SetJitter(fraction) moves each wait by
// (2·U[0,1) − 1)·fraction of it: proportional jitter, ±fraction.
func resiliencyExponential(attempts int, base time.Duration, fraction float64) Policy {
	return Policy{
		Library:     libResiliency,
		MaxAttempts: attempts,
		Backoff: Backoff{Kind: "exponential", Base: base, Multiplier: 2,
			Jitter: "proportional", JitterFraction: fraction},
	}
}

// awsStandard retries with the AWS SDK for Go v2 standard retryer
// (retry.NewStandard) and its defaults: 3 attempts, and before retry n a
// wait of U[0,1)·min(base·2^(n-1), maxBackoff) (ExponentialJitterBackoff,
// full jitter; base 50ms, maxBackoff 20s; throttling errors, which the
// scenarios here never send, use a 1s base), retries drawn from a quota
// of 500 tokens, 14 a retry (5 after a throttling error), a successful
// retry refunded and a first-attempt success adding 1. The quota figures
// are the SDK's defaults (its exported constants; the 14 is the
// unexported defaultRetryCost), set explicitly on the retryer so that
// truth.json says what ran.
func awsStandard(attempts int, base, maxBackoff time.Duration) Policy {
	return Policy{
		Library:     libAWSRetry,
		MaxAttempts: attempts,
		Backoff:     Backoff{Kind: "exponential", Base: base, Multiplier: 2, Cap: maxBackoff, Jitter: "full"},
		Quota: &QuotaPolicy{Capacity: awsretry.DefaultRetryRateTokens, RetryCost: 14,
			ThrottlingRetryCost: awsretry.DefaultThrottlingRetryCost, NoRetryIncrement: awsretry.DefaultNoRetryIncrement},
	}
}

// retryableHTTP retries with hashicorp/go-retryablehttp's DefaultBackoff:
// min*2^n capped at max without jitter, or the Retry-After of a 429/503.
func retryableHTTP(attempts int, minWait, maxWait time.Duration) Policy {
	return Policy{
		Library:           libRetryablehttp,
		MaxAttempts:       attempts,
		Backoff:           Backoff{Kind: "exponential", Base: minWait, Multiplier: 2, Cap: maxWait, Jitter: "none"},
		HonoursRetryAfter: true,
	}
}

// retryableHTTPLinear retries with hashicorp/go-retryablehttp's
// LinearJitterBackoff: before retry n, n times a value drawn uniformly
// from [minWait, maxWait), so (n·c)(1 ± f) with c the midpoint and f
// (maxWait−minWait)/(maxWait+minWait): linear from c by c, proportional
// jitter ±f. It reads no Retry-After.
func retryableHTTPLinear(attempts int, minWait, maxWait time.Duration) Policy {
	c := (minWait + maxWait) / 2
	return Policy{
		Library:     libRetryablehttp,
		MaxAttempts: attempts,
		Backoff: Backoff{Kind: "linear", Base: c, Increment: c, Jitter: "proportional",
			JitterFraction: float64(maxWait-minWait) / float64(maxWait+minWait)},
	}
}

// goRetryFibonacci retries with sethvargo/go-retry's NewFibonacci(base)
// under WithMaxRetries(attempts−1): base, 2·base, 3·base, 5·base, …
// before retries 1, 2, 3, 4 (its state starts at 0, base and each wait
// is the sum of the two before), no jitter, no cap.
func goRetryFibonacci(attempts int, base time.Duration) Policy {
	return Policy{
		Library:     libGoRetry,
		MaxAttempts: attempts,
		Backoff:     Backoff{Kind: "fibonacci", Base: base, Increment: base, Jitter: "none"},
	}
}

// intendedWait is the wait before attempt index i (1-based retries) that
// an unjittered policy asks for; false for jittered or no backoff.
func (p Policy) intendedWait(i int) (time.Duration, bool) {
	b := p.Backoff
	if b.Jitter != "none" {
		return 0, false
	}
	switch b.Kind {
	case "constant":
		return b.Base, true
	case "exponential":
		w := time.Duration(float64(b.Base) * math.Pow(b.Multiplier, float64(i-1)))
		if b.Cap > 0 && w > b.Cap {
			w = b.Cap
		}
		return w, true
	case "linear":
		return b.Base + time.Duration(i-1)*b.Increment, true
	case "fibonacci":
		prev, w := b.Increment, b.Base // the wait before retry 0 would be Increment
		for range i - 1 {
			prev, w = w, prev+w
		}
		return w, true
	}
	return 0, false
}
