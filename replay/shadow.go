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
// an edge of one attempt it never may. Up to the first decision a shadow
// would make otherwise, a run with the shadow's policies takes the same
// steps with the same draws: when no decision differs at all, its Result
// is this run's, bit for bit. Hedge timers depend on MaxAttempts before
// any decision is made, so a shadow may change MaxAttempts only on edges
// that do not hedge. The shadows' budgets are fed through a wrapper
// around each edge's own (shadowedBudget), and the cap is compared where
// the simulator reads it (shadowCap): a run without shadows pays one
// test per failed attempt.

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
				return Result{}, nil, fmt.Errorf("shadow %d: edge %d: the policy differs from the run's in more than a shadow may (max attempts where the edge does not hedge, the budget, and where either makes one attempt what only a retry reads)", k, i)
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

// shadowRun makes s a run with the shadows of alts: each edge's budget
// becomes a shadowedBudget around the run's own (nil included), so that
// every call the simulator makes on an edge's budget reaches the
// shadows' too, while a run without shadows keeps its budgets, and its
// hot paths, as they are.
func (s *sim) shadowRun(alts [][]Policy) {
	if len(alts) == 0 {
		return
	}
	s.shadows = make([]shadow, len(alts))
	for k, pol := range alts {
		s.shadows[k] = shadow{pol: pol, budgets: budgetsOf(len(pol), func(i int) (Policy, int) { return pol[i], s.m.Edges[i].Callee })}
	}
	for e := range s.budgets {
		s.budgets[e] = &shadowedBudget{own: s.budgets[e], e: e, shadows: s.shadows}
	}
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

// shadowedBudget is edge e's budget in a run with shadows: the run's own
// (nil: every retry allowed), whose answers it gives, and each shadow's
// budget on the edge, fed the same calls. A shadow whose budget answers a
// retry otherwise than the run's has acted.
type shadowedBudget struct {
	own     Budget
	e       int
	shadows []shadow
}

// Request records an original request in every budget.
func (b *shadowedBudget) Request(t float64) {
	if b.own != nil {
		b.own.Request(t)
	}
	for k := range b.shadows {
		if sh := &b.shadows[k]; !sh.acted && sh.budgets[b.e] != nil {
			sh.budgets[b.e].Request(t)
		}
	}
}

// Retry asks every budget, and answers as the run's own.
func (b *shadowedBudget) Retry(t float64) bool {
	ok := b.own == nil || b.own.Retry(t)
	for k := range b.shadows {
		if sh := &b.shadows[k]; !sh.acted {
			sb := sh.budgets[b.e]
			sh.acted = (sb == nil || sb.Retry(t)) != ok
		}
	}
	return ok
}

// Result records an outcome in every budget.
func (b *shadowedBudget) Result(t float64, ok, timeout bool) {
	if b.own != nil {
		b.own.Result(t, ok, timeout)
	}
	for k := range b.shadows {
		if sh := &b.shadows[k]; !sh.acted && sh.budgets[b.e] != nil {
			sh.budgets[b.e].Result(t, ok, timeout)
		}
	}
}

// Done records a finished attempt in every budget.
func (b *shadowedBudget) Done(t float64, retry bool) {
	if b.own != nil {
		b.own.Done(t, retry)
	}
	for k := range b.shadows {
		if sh := &b.shadows[k]; !sh.acted && sh.budgets[b.e] != nil {
			sh.budgets[b.e].Done(t, retry)
		}
	}
}

// shadowCap: call c, whose policy is p, failed an attempt; where it may
// try again under one of the caps, its own or a shadow's, and not under
// the other, the shadow has acted. (The cap decides only for a call of an
// edge without a client error and before its deadline.)
//
//go:noinline
func (s *sim) shadowCap(c *call, p *Policy) {
	if c.edge < 0 || c.clientErr || s.now >= c.deadline {
		return
	}
	capped := int(c.attempts) >= p.MaxAttempts
	for k := range s.shadows {
		if sh := &s.shadows[k]; !sh.acted && (int(c.attempts) >= sh.pol[c.edge].MaxAttempts) != capped {
			sh.acted = true
		}
	}
}
