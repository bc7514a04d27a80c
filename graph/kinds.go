package graph

// BackoffKind is how the wait before each retry grows. graph infers it
// from traces and replay simulates it, with the same words.
type BackoffKind string

// Backoff kinds. BackoffUnknown is inference only: too few retries to
// tell, or no one kind fits every step of the schedule. Linear waits
// base + (n−1)·increment before retry n (go-retryablehttp's
// LinearJitterBackoff, Polly's and tenacity's linear waits); Fibonacci
// waits base, base + increment, then the sum of the two waits before
// (sethvargo/go-retry's NewFibonacci: increment = base).
const (
	BackoffUnknown     BackoffKind = "unknown"
	BackoffImmediate   BackoffKind = "immediate"
	BackoffConstant    BackoffKind = "constant"
	BackoffExponential BackoffKind = "exponential"
	BackoffLinear      BackoffKind = "linear"
	BackoffFibonacci   BackoffKind = "fibonacci"
)

// JitterKind is how the wait before a retry is randomised (Marc Brooker's
// formulas, plus grpc-go's proportional jitter).
type JitterKind string

// Jitter kinds. JitterUnknown is inference only: too few waits to name it.
const (
	JitterUnknown      JitterKind = "unknown"
	JitterNone         JitterKind = "none"
	JitterFull         JitterKind = "full"
	JitterEqual        JitterKind = "equal"
	JitterDecorrelated JitterKind = "decorrelated"
	JitterProportional JitterKind = "proportional"
	// JitterAdditive adds U[0, a] to the wait (got's +0–100 ms).
	JitterAdditive JitterKind = "additive"
)

// DecorrelatedForm is which way a decorrelated jitter's waits depend on
// each other (Backoff.DecorrelatedForm).
type DecorrelatedForm string

// The forms of decorrelated jitter.
const (
	// DecorrelatedFromPrevious: each wait drawn from a range the previous
	// one sets (Brooker's min(cap, U[base, 3·previous])).
	DecorrelatedFromPrevious DecorrelatedForm = "from-previous"
	// DecorrelatedTimeline: the waits are the steps of one jittered
	// timeline (Polly's decorrelated jitter "V2").
	DecorrelatedTimeline DecorrelatedForm = "timeline"
)
