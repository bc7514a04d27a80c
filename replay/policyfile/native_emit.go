package policyfile

import (
	"math"

	"github.com/retryaudit/retryaudit/replay"
)

// emitNative writes every edge's whole policy in retryaudit's own keys:
// applied to any model with these edges (replay --policy-file), it gives
// exactly these policies.
func emitNative(edges []Edge) (*Emitted, error) {
	f := &PolicyFile{}
	for _, e := range edges {
		f.Edges = append(f.Edges, EdgePolicy{Caller: e.Caller, Callee: e.Callee, Operation: e.Operation, PolicySpec: nativeSpec(e.Policy)})
	}
	data, err := f.Marshal()
	if err != nil {
		return nil, err
	}
	return &Emitted{Files: []Output{{Data: data}}}, nil
}

// nativeSpec is a whole policy as the keys that set each of its fields.
// The zero backoff kind, jitter and multiplier are written as what replay
// reads them as: immediate, none and 2.
func nativeSpec(p replay.Policy) PolicySpec {
	s := PolicySpec{MaxAttempts: &p.MaxAttempts, PropagateDeadline: &p.Propagate, HonorRetryAfter: &p.HonorRetryAfter,
		PerTryTimeout: durPtr(p.PerTryTimeout), Deadline: durPtr(p.Deadline), HedgeAfter: durPtr(p.HedgeAfter)}
	if p.MaxRequests > 0 {
		s.MaxRequests = &p.MaxRequests // written only when set, so files without a limit read as before
	}
	b := p.Backoff
	kind := b.Kind
	if kind == "" {
		kind = replay.BackoffImmediate
	}
	s.Backoff = &BackoffSpec{Kind: kind}
	if kind != replay.BackoffImmediate {
		s.Backoff.Base = durPtr(b.Base)
		if kind == replay.BackoffExponential {
			m := b.Multiplier
			if m == 0 {
				m = 2 // what replay reads 0 as
			}
			s.Backoff.Multiplier = &m
		}
		if kind == replay.BackoffLinear || kind == replay.BackoffFibonacci {
			s.Backoff.Increment = durPtr(b.Increment)
		}
		if st := b.Steps; st != nil {
			for _, w := range st.ByRetry {
				s.Backoff.Steps = append(s.Backoff.Steps, *durPtr(w))
			}
		}
		if b.Cap > 0 {
			s.Backoff.Cap = durPtr(b.Cap)
		} else {
			s.Backoff.NoCap = true
		}
	}
	s.Jitter = b.Jitter
	if s.Jitter == "" {
		s.Jitter = replay.JitterNone
	}
	if b.Jitter == replay.JitterProportional {
		s.JitterFraction = &b.Fraction
	}
	if c := p.Breaker; c.Enabled() {
		s.Breaker = &BreakerSpec{ConsecutiveFailures: &c.ConsecutiveFailures, FailureRate: &c.FailureRate, Window: durPtr(c.Window),
			MinRequests: &c.MinRequests, OpenFor: durPtr(c.OpenFor), Jitter: &c.Jitter, HalfOpenProbes: &c.HalfOpenProbes}
		// A rolling window (opossum's) only where the breaker has one: a
		// policy without it emits as before.
		if c.KeepWindow {
			s.Breaker.KeepWindow = &c.KeepWindow
		}
		if c.CountRejected {
			s.Breaker.CountRejected = &c.CountRejected
		}
	} else {
		s.Breaker = &BreakerSpec{Disabled: true}
	}
	bs := p.Budget
	switch bs.Kind {
	case replay.BudgetGRPC:
		s.RetryThrottling = &GRPCRetryThrottling{MaxTokens: &bs.Max, TokenRatio: &bs.Ratio}
	case replay.BudgetEnvoy:
		s.EnvoyRetryBudget = &EnvoyRetryBudget{BudgetPercent: &EnvoyPercent{Value: bs.Percent}, MinRetryConcurrency: &bs.Min}
	case replay.BudgetFinagle:
		s.Finagle = &FinagleRetryBudget{TTL: durPtr(bs.Window), MinRetriesPerSec: &bs.Min, PercentCanRetry: &bs.Ratio}
	case replay.BudgetTokenBucket:
		s.Budget = &NativeBudget{Kind: BudgetKindTokenBucket, Max: &bs.Max, Ratio: &bs.Ratio}
	case replay.BudgetRatio:
		s.Budget = &NativeBudget{Kind: BudgetKindRatio, Ratio: &bs.Ratio, Window: durPtr(bs.Window)}
	case replay.BudgetAWS:
		s.Budget = &NativeBudget{Kind: BudgetKindAWS}
	case replay.BudgetBreaker:
		s.Budget = &NativeBudget{Kind: BudgetKindBreaker, Ratio: &bs.Ratio, Window: durPtr(bs.Window), Min: &bs.Min}
	default:
		s.Budget = &NativeBudget{Kind: BudgetKindNone}
	}
	if s.Budget == nil {
		s.Budget = &NativeBudget{}
	}
	s.Budget.Shared = &p.SharedBudget
	return s
}

// durPtr is seconds as a Duration, rounded to the nanosecond.
func durPtr(seconds float64) *Duration {
	d := Duration(math.Round(seconds * 1e9))
	return &d
}
