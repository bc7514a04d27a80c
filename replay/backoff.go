package replay

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/retryaudit/retryaudit/graph"
)

// BackoffKind and JitterKind are graph's: inference and simulation use
// the same words.
type (
	BackoffKind = graph.BackoffKind
	JitterKind  = graph.JitterKind
)

// Backoff kinds.
const (
	BackoffImmediate   = graph.BackoffImmediate
	BackoffConstant    = graph.BackoffConstant
	BackoffExponential = graph.BackoffExponential
	BackoffLinear      = graph.BackoffLinear
	BackoffFibonacci   = graph.BackoffFibonacci
)

// Jitter kinds.
const (
	JitterNone         = graph.JitterNone
	JitterFull         = graph.JitterFull
	JitterEqual        = graph.JitterEqual
	JitterDecorrelated = graph.JitterDecorrelated
	JitterProportional = graph.JitterProportional
)

// Backoff is a client's wait before retry n (n = 1 for the first retry).
//
// The formulas are Marc Brooker's ("Exponential Backoff And Jitter", AWS
// Architecture Blog, 2015), the ones the AWS SDKs implement, plus the
// proportional jitter of grpc-go's connection backoff. With
// d = min(Cap, Base·Multiplier^(n−1)) for "exponential", d = min(Cap, Base +
// (n−1)·Increment) for "linear", d = min(Cap, Fₙ) for "fibonacci" (F₁ = Base,
// F₂ = Base + Increment, Fₙ = Fₙ₋₁ + Fₙ₋₂: sethvargo/go-retry's NewFibonacci
// has Increment = Base), d = min(Cap, Steps[n−1]) where Steps is set (the
// last step for later retries: a schedule read step by step whose kind is
// unknown) and d = min(Cap, Base) for "constant":
//
//	none:         d
//	full:         U(0, d)
//	equal:        d/2 + U(0, d/2)
//	decorrelated: min(Cap, U(Base, 3·prev)), prev = Base before the first retry
//	proportional: d·(1 + U(−Fraction, +Fraction))
//
// Decorrelated jitter ignores n and Multiplier (it grows from the previous
// wait, not from the attempt number), so it reads the same for "constant" and
// "exponential". Proportional jitter is applied after the cap, as in grpc-go,
// so a wait may exceed Cap by up to Fraction·Cap. "immediate" always waits 0
// and ignores Jitter. The zero Kind is "immediate" and the zero Jitter is
// "none", so the zero Backoff retries at once.
//
// Each jittered Delay draws exactly one Float64 from rng; un-jittered and
// immediate delays draw nothing, so a run's random stream does not depend on
// how often an un-jittered client retries.
type Backoff struct {
	Kind BackoffKind // immediate, constant, exponential, linear, fibonacci

	Base       float64 // seconds
	Multiplier float64 // exponential only; 0 means 2
	// Increment is, for linear backoff, what each wait adds to the one
	// before, and for Fibonacci, what the second wait adds to the first
	// (seconds).
	Increment float64
	// Steps, when set, are the waits before retry 1, 2, … in place of
	// the kind's formula: a schedule read from traces step by step that
	// no one kind fits. Jitter still applies to each.
	Steps    *Steps
	Cap      float64    // seconds; 0 means no cap
	Jitter   JitterKind // none, full, equal, decorrelated, proportional
	Fraction float64    // proportional: ±Fraction (grpc-go uses 0.2)
	// Observed, when set, replaces the formula with the waits the traces
	// show before each retry (the observed policy as it really waited);
	// any policy that sets its own backoff drops it.
	Observed *ObservedWaits
}

// Steps are a schedule's waits before retry 1, 2, … in seconds; retries
// past the last wait the last.
type Steps struct{ ByRetry []float64 }

// ObservedWaits are the traces' waits before retry 1, 2, …; retries past
// the last use the last.
type ObservedWaits struct{ ByRetry []Dist }

// Delay returns the wait in seconds before retry n. prev is the previous wait
// (for decorrelated jitter; 0 before the first retry). rng may be nil when
// the backoff is not jittered. n < 1 is treated as 1.
func (b Backoff) Delay(n int, prev float64, rng *rand.Rand) float64 {
	if ob := b.Observed; ob != nil && len(ob.ByRetry) > 0 && rng != nil {
		return ob.ByRetry[min(max(n, 1), len(ob.ByRetry))-1].Sample(rng)
	}
	if b.Kind == "" || b.Kind == BackoffImmediate {
		return 0
	}
	if b.Jitter == JitterDecorrelated {
		if prev <= 0 {
			prev = b.Base
		}
		hi := max(b.Base, 3*prev)
		return b.capped(b.Base + rng.Float64()*(hi-b.Base))
	}
	d := b.ceiling(n)
	switch b.Jitter {
	case JitterFull:
		return rng.Float64() * d
	case JitterEqual:
		return d/2 + rng.Float64()*d/2
	case JitterProportional:
		return d * (1 + b.Fraction*(2*rng.Float64()-1))
	}
	return d
}

// ceiling is the un-jittered wait before retry n.
func (b Backoff) ceiling(n int) float64 {
	d := b.Base
	switch {
	case b.Steps != nil && len(b.Steps.ByRetry) > 0:
		st := b.Steps.ByRetry
		d = st[min(max(n, 1), len(st))-1]
	case n <= 1:
	case b.Kind == BackoffExponential:
		m := b.Multiplier
		if m == 0 {
			m = 2
		}
		d = b.Base * math.Pow(m, float64(n-1))
	case b.Kind == BackoffLinear:
		d = b.Base + float64(n-1)*b.Increment
	case b.Kind == BackoffFibonacci:
		prev := b.Increment // what comes before the base
		for i := 1; i < n && !math.IsInf(d, 1); i++ {
			prev, d = d, prev+d
		}
	}
	d = b.capped(d)
	if math.IsInf(d, 1) || math.IsNaN(d) {
		d = math.MaxFloat64 // no cap and a huge n: keep U(0, d) finite
	}
	return d
}

func (b Backoff) capped(d float64) float64 {
	if b.Cap > 0 && d > b.Cap {
		return b.Cap
	}
	return d
}

// Validate reports the first inconsistency in the backoff.
func (b Backoff) Validate() error {
	switch b.Kind {
	case "", BackoffImmediate, BackoffConstant, BackoffExponential, BackoffLinear, BackoffFibonacci:
	default:
		return fmt.Errorf("backoff %q: want immediate, constant, exponential, linear or fibonacci", b.Kind)
	}
	switch b.Jitter {
	case "", JitterNone, JitterFull, JitterEqual, JitterDecorrelated, JitterProportional:
	default:
		return fmt.Errorf("jitter %q: want none, full, equal, decorrelated or proportional", b.Jitter)
	}
	if b.Kind == "" || b.Kind == BackoffImmediate {
		return nil
	}
	if !(b.Base >= 0) || math.IsInf(b.Base, 0) {
		return fmt.Errorf("backoff base %v s: want a finite value ≥ 0", b.Base)
	}
	if !(b.Multiplier >= 0) || math.IsInf(b.Multiplier, 0) {
		return fmt.Errorf("backoff multiplier %v: want a finite value > 0 (0 means 2)", b.Multiplier)
	}
	if !(b.Increment >= 0) || math.IsInf(b.Increment, 0) {
		return fmt.Errorf("backoff increment %v s: want a finite value ≥ 0", b.Increment)
	}
	for i, w := range b.Steps.list() {
		if !(w >= 0) || math.IsInf(w, 0) {
			return fmt.Errorf("backoff step %d: %v s: want a finite value ≥ 0", i+1, w)
		}
	}
	if !(b.Cap >= 0) || math.IsInf(b.Cap, 0) {
		return fmt.Errorf("backoff cap %v s: want a finite value ≥ 0 (0 means no cap)", b.Cap)
	}
	if b.Jitter == JitterDecorrelated && b.Base <= 0 {
		return fmt.Errorf("decorrelated jitter needs a base > 0 (it grows from the base)")
	}
	if b.Jitter == JitterProportional && !(b.Fraction >= 0 && b.Fraction <= 1) {
		return fmt.Errorf("proportional jitter fraction %v: want 0 to 1", b.Fraction)
	}
	return nil
}

// list is the steps' waits, none for nil.
func (s *Steps) list() []float64 {
	if s == nil {
		return nil
	}
	return s.ByRetry
}
