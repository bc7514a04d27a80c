package replay

import (
	"math"
	"time"
)

// EmitPolicyFile writes the difference between observed and m as a policy
// file that, applied to observed (replay --policy-file), gives m's client
// policies. Attempts and backoff use gRPC's retryPolicy where the backoff
// is gRPC's own (exponential, full jitter), retryaudit's keys otherwise.
func EmitPolicyFile(observed, m *Model) *PolicyFile {
	f := &PolicyFile{}
	seen := map[[3]string]bool{}
	for i := range m.Edges {
		if i >= len(observed.Edges) {
			break
		}
		o, n := observed.Edges[i].Policy, m.Edges[i].Policy
		var s PolicySpec
		changed := false
		if n.MaxAttempts != o.MaxAttempts || n.Backoff != o.Backoff {
			changed = true
			if n.Backoff.Kind == "exponential" && n.Backoff.Jitter == "full" && n.MaxAttempts >= 2 && n.MaxAttempts <= 5 && n.Backoff.Cap > 0 {
				mult := n.Backoff.Multiplier
				if mult == 0 {
					mult = 2
				}
				s.RetryPolicy = &GRPCRetryPolicy{MaxAttempts: ptrTo(n.MaxAttempts), InitialBackoff: durPtr(n.Backoff.Base),
					MaxBackoff: durPtr(n.Backoff.Cap), BackoffMultiplier: &mult, RetryableStatusCodes: []string{"UNAVAILABLE"}}
			} else {
				s.MaxAttempts = ptrTo(n.MaxAttempts)
				b := &BackoffSpec{Kind: n.Backoff.Kind}
				if n.Backoff.Kind != "immediate" {
					b.Base = durPtr(n.Backoff.Base)
				}
				if n.Backoff.Kind == "exponential" {
					b.Multiplier, b.Cap = ptrTo(n.Backoff.Multiplier), durPtr(n.Backoff.Cap)
				}
				s.Backoff = b
				if n.Backoff.Jitter != "" {
					s.Jitter = n.Backoff.Jitter
				}
				if n.Backoff.Jitter == "proportional" {
					s.JitterFraction = ptrTo(n.Backoff.Fraction)
				}
			}
		}
		if n.Budget != nil && o.Budget == nil {
			changed = true
			s.Budget = &BudgetSpec{Kind: BudgetKindRatio, Ratio: ptrTo(0.1), Window: durPtr(10), Shared: ptrTo(n.SharedBudget)}
		}
		if n.HonorRetryAfter != o.HonorRetryAfter {
			changed = true
			s.HonorRetryAfter = ptrTo(n.HonorRetryAfter)
		}
		if n.Propagate != o.Propagate {
			changed = true
			s.PropagateDeadline = ptrTo(n.Propagate)
		}
		if n.HedgeAfter != o.HedgeAfter {
			changed = true
			s.HedgeAfter = durPtr(n.HedgeAfter)
		}
		if n.Breaker != nil && o.Breaker == nil {
			changed = true
			b := n.Breaker
			s.Breaker = &BreakerSpec{ConsecutiveFailures: ptrTo(b.ConsecutiveFailures), OpenFor: durPtr(b.OpenFor), Jitter: ptrTo(b.Jitter), HalfOpenProbes: ptrTo(b.HalfOpenProbes)}
		}
		e := m.Edges[i]
		key := [3]string{m.Services[e.Caller].Name, m.Services[e.Callee].Name, m.Services[e.Callee].Ops[e.CalleeOp].Name}
		if !changed || seen[key] {
			continue // one entry per caller, callee and operation
		}
		seen[key] = true
		f.Edges = append(f.Edges, EdgePolicy{Caller: key[0], Callee: key[1], Operation: key[2], PolicySpec: s})
	}
	return f
}

func ptrTo[T any](v T) *T { return &v }

func durPtr(seconds float64) *Duration {
	d := Duration(time.Duration(math.Round(seconds * 1e9)))
	return &d
}
