package replay

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/retryaudit/retryaudit/degrade"
)

// Shadow policies. Candidate policies often differ from today's only in a
// limit that never binds on the day replayed: a retry budget that never
// runs dry, a cap on attempts no call reaches. Whether it binds is known
// only as the run goes, so a run of the model can carry the other
// candidates' limits beside its own, as shadows fed everything the
// candidate's would be fed, and report for each whether it ever decided
// otherwise than the model's own policies did.
//
// The simulator reads an edge's MaxAttempts in three places (whether a
// failed call may try again, whether a hedge may go out, whether a hedge
// timer is set) and its budget at every attempt sent, settled, retried
// or given up; nothing else of the run depends on either, and neither
// draws from a random stream. The chance of giving up, Retry-After and
// the backoff are read only once a failed call may try again, which on
// an edge of one attempt it never may. Up to the first decision a shadow would
// make otherwise, a run with the shadow's policies takes the same steps
// with the same draws: when no decision differs at all, its Result is
// this run's, bit for bit. Hedge timers depend on MaxAttempts before any
// decision is made, so a shadow may change MaxAttempts only on edges
// that do not hedge.

// ShadowOf reports whether alt is m with other client policies that a
// run of m can shadow: equal to m in everything but its edges'
// MaxAttempts, Budget and SharedBudget (MaxAttempts only where the edge
// does not hedge), and, on an edge where either makes one attempt, what
// only a call allowed another reads (see shadowable). Models are compared in full (reflect.DeepEqual),
// as RunShadowed's promise needs: a NaN anywhere makes them unequal.
func ShadowOf(m, alt *Model) bool {
	if m == nil || alt == nil || len(m.Edges) != len(alt.Edges) {
		return false
	}
	for i := range m.Edges {
		if !shadowable(m.Edges[i].Policy, alt.Edges[i].Policy) {
			return false
		}
	}
	// The rest must be equal: alt with m's policies is m.
	c := *alt
	c.Edges = slices.Clone(alt.Edges)
	for i := range c.Edges {
		c.Edges[i].Policy = m.Edges[i].Policy
	}
	return reflect.DeepEqual(m, &c)
}

// shadowable says policy b differs from a only where a shadow can follow
// it: in MaxAttempts (on an edge that does not hedge) and the budget; and
// where either makes one attempt, also in what only a call that may try
// again reads (the chance of giving up, Retry-After, the backoff): a
// call both would let try again is then the first decision that differs.
func shadowable(a, b Policy) bool {
	if a.MaxAttempts != b.MaxAttempts && (a.HedgeAfter > 0 || b.HedgeAfter > 0) {
		return false
	}
	if min(a.MaxAttempts, b.MaxAttempts) == 1 && a.HedgeAfter == 0 && b.HedgeAfter == 0 {
		b.GiveUp, b.HonorRetryAfter, b.Backoff = a.GiveUp, a.HonorRetryAfter, a.Backoff
	}
	b.MaxAttempts, b.Budget, b.SharedBudget = a.MaxAttempts, a.Budget, a.SharedBudget
	return a == b
}

// RunShadowed is RunContext with shadows: alts are other policies for
// m's edges (each list one policy per edge, differing from m's as
// ShadowOf allows), and same[k] reports that m with policies alts[k]
// would have made this very run: the Result returned, bit for bit. When
// same[k] is false, that run differs from some point on (a budget refused
// a retry the other did not, a call stopped at a cap the other would have
// passed), and only running it tells how.
func RunShadowed(ctx context.Context, m *Model, faults degrade.Schedule, cfg RunConfig, alts [][]Policy) (r Result, same []bool, err error) {
	for k, pol := range alts {
		if len(pol) != len(m.Edges) {
			return Result{}, nil, fmt.Errorf("shadow %d: %d policies for %d edges", k, len(pol), len(m.Edges))
		}
		for i := range pol {
			if !shadowable(m.Edges[i].Policy, pol[i]) {
				return Result{}, nil, fmt.Errorf("shadow %d: edge %d: the policy differs in more than max attempts and budget, or hedges with other max attempts", k, i)
			}
			if err := pol[i].Budget.Validate(); err != nil {
				return Result{}, nil, fmt.Errorf("shadow %d: edge %d: %w", k, i, err)
			}
		}
	}
	return runWith(ctx, m, faults, cfg, alts)
}

// shadow is one set of other policies followed through a run: their
// budgets, fed what the model's own are, and whether any decision of
// theirs has differed yet (acted), after which they are no longer fed.
type shadow struct {
	pol     []Policy
	budgets []Budget
	acted   bool
}

// newShadows makes the shadows of alts on m's edges, their budgets built
// as the run's own are (budgetsOf).
func newShadows(m *Model, alts [][]Policy) []shadow {
	if len(alts) == 0 {
		return nil
	}
	sh := make([]shadow, len(alts))
	for k, pol := range alts {
		sh[k] = shadow{pol: pol, budgets: budgetsOf(len(pol), func(i int) (Policy, int) { return pol[i], m.Edges[i].Callee })}
	}
	return sh
}

// budgetsOf builds the budget of each of n edges, edge i's policy and
// callee given by edge(i): nil for none, one instance shared by every
// edge into a callee whose policy shares its budget (SharedBudget), a
// fresh one for each other.
func budgetsOf(n int, edge func(i int) (Policy, int)) []Budget {
	shared := map[int]Budget{}
	out := make([]Budget, n)
	for i := range n {
		p, callee := edge(i)
		switch {
		case p.Budget.Kind == BudgetNone:
		case p.SharedBudget:
			if shared[callee] == nil {
				shared[callee] = p.Budget.New()
			}
			out[i] = shared[callee]
		default:
			out[i] = p.Budget.New()
		}
	}
	return out
}

// The hooks below run where the model's own policies decide or are told
// something; each is called only when the run has shadows.

// shadowRequest: an original request is sent on edge e.
func (s *sim) shadowRequest(e int32) {
	for k := range s.shadows {
		if sh := &s.shadows[k]; !sh.acted {
			if b := sh.budgets[e]; b != nil {
				b.Request(s.now)
			}
		}
	}
}

// shadowSettle: an attempt on edge e ended (ok, or failed; timeout says
// whether by its timeout; retry whether it was a retry).
func (s *sim) shadowSettle(e int32, ok, timeout, retry bool) {
	for k := range s.shadows {
		if sh := &s.shadows[k]; !sh.acted {
			if b := sh.budgets[e]; b != nil {
				b.Result(s.now, ok, timeout)
				b.Done(s.now, retry)
			}
		}
	}
}

// shadowDone: an attempt (retry: a retry) on edge e is over without an
// answer, or a granted retry will never be sent.
func (s *sim) shadowDone(e int32, retry bool) {
	for k := range s.shadows {
		if sh := &s.shadows[k]; !sh.acted {
			if b := sh.budgets[e]; b != nil {
				b.Done(s.now, retry)
			}
		}
	}
}

// shadowRetry: the run's budget on edge e granted a retry or hedge (ok)
// or refused it; a shadow whose budget answers otherwise has acted.
func (s *sim) shadowRetry(e int32, ok bool) {
	for k := range s.shadows {
		if sh := &s.shadows[k]; !sh.acted {
			b := sh.budgets[e]
			sh.acted = (b == nil || b.Retry(s.now)) != ok
		}
	}
}

// shadowCap: a failed call on edge e that has made attempts attempts
// may try again (capped false) or has reached its cap; a shadow whose
// cap says otherwise has acted.
func (s *sim) shadowCap(e int32, attempts int16, capped bool) {
	for k := range s.shadows {
		if sh := &s.shadows[k]; !sh.acted && (int(attempts) >= sh.pol[e].MaxAttempts) != capped {
			sh.acted = true
		}
	}
}
