package replay

import (
	"fmt"
	"slices"
	"strings"

	"github.com/retryaudit/retryaudit/graph"
)

// Named policies. A policy expression is a base followed by modifiers
// joined with '+': "edge-only+budget+retry-after". A modifier alone applies
// to observed.
var (
	basePolicies = map[string]func(m *Model){
		"observed":        func(*Model) {},
		"none":            func(m *Model) { forEdges(m, func(_ *Edge, p *Policy) { p.MaxAttempts = 1 }) },
		"everywhere":      func(m *Model) { forEdges(m, func(_ *Edge, p *Policy) { retryLike(p) }) },
		"edge-only":       edgeOnly,
		"idempotent-only": idempotentOnly,
		"hedge-p95":       hedgeP95,
	}
	modifiers = map[string]func(m *Model){
		"budget": func(m *Model) {
			forEdges(m, func(_ *Edge, p *Policy) { p.Budget, p.SharedBudget = sharedRatioBudget, true })
		},
		"retry-after": func(m *Model) { forEdges(m, func(_ *Edge, p *Policy) { p.HonorRetryAfter = true }) },
		"breaker":     func(m *Model) { forEdges(m, func(_ *Edge, p *Policy) { p.Breaker = DefaultBreaker }) },
		"deadline": func(m *Model) {
			m.RootPropagate = true
			forEdges(m, func(_ *Edge, p *Policy) { p.Propagate = true })
		},
		"shed": func(m *Model) {
			for i := range m.Services {
				m.Services[i].ShedRetriesAt = 2 * m.Services[i].Workers
			}
		},
	}
)

// DefaultRetries is how many attempts policies that add retries allow.
const DefaultRetries = 3

// DefaultBackoff is the backoff given to edges that had none when a policy
// adds retries: exponential from 50 ms, doubling, capped at 1 s, full jitter.
var DefaultBackoff = Backoff{Kind: BackoffExponential, Base: 0.05, Multiplier: 2, Cap: 1, Jitter: JitterFull}

// DefaultBreaker opens after 5 consecutive failures for 5 s (±20%), then
// lets one probe through.
var DefaultBreaker = BreakerConfig{ConsecutiveFailures: 5, OpenFor: 5, Jitter: 0.2, HalfOpenProbes: 1}

// sharedRatioBudget is policy budget's budget: retries under 10% of calls
// over 10 s, shared by every caller of a callee (seed 004's ratio budget,
// seed 002's "shared budget").
var sharedRatioBudget = BudgetSpec{Kind: BudgetRatio, Ratio: 0.1, Window: 10}

// PolicyNames lists the base policies and modifiers.
func PolicyNames() (bases, mods []string) {
	for k := range basePolicies {
		bases = append(bases, k)
	}
	for k := range modifiers {
		mods = append(mods, k)
	}
	slices.Sort(bases)
	slices.Sort(mods)
	return bases, mods
}

// ApplyPolicy returns a copy of the model (built with observed policies)
// under a policy expression.
func ApplyPolicy(m *Model, expr string) (*Model, error) {
	parts := strings.Split(expr, "+")
	c := m.clone()
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if f, ok := basePolicies[p]; ok {
			if i > 0 {
				return nil, fmt.Errorf("policy %q: %s is a base policy and must come first", expr, p)
			}
			f(c)
			continue
		}
		if f, ok := modifiers[p]; ok {
			f(c)
			continue
		}
		bases, mods := PolicyNames()
		return nil, fmt.Errorf("policy %q: unknown %q; want a base (%s) followed by modifiers joined with + (%s), e.g. edge-only+budget",
			expr, p, strings.Join(bases, ", "), strings.Join(mods, ", "))
	}
	return c, nil
}

// clone copies the parts of a model policies change.
func (m *Model) clone() *Model {
	c := *m
	c.Edges = slices.Clone(m.Edges)
	c.Services = slices.Clone(m.Services)
	return &c
}

func forEdges(m *Model, f func(*Edge, *Policy)) {
	for i := range m.Edges {
		f(&m.Edges[i], &m.Edges[i].Policy)
	}
}

// retryLike makes an edge retry: its observed retries, or DefaultRetries
// attempts with DefaultBackoff where it did not retry.
func retryLike(p *Policy) {
	if p.MaxAttempts > 1 {
		return
	}
	p.MaxAttempts = DefaultRetries
	if p.Backoff.Kind == "" || p.Backoff.Kind == BackoffImmediate {
		p.Backoff = DefaultBackoff
	}
}

// edgeOnly retries only at the entry services' outgoing edges.
func edgeOnly(m *Model) {
	entry := map[int]bool{}
	for _, e := range m.Entry {
		entry[e.Service] = true
	}
	forEdges(m, func(e *Edge, p *Policy) {
		if entry[e.Caller] {
			retryLike(p)
		} else {
			p.MaxAttempts = 1
		}
	})
}

// idempotentOnly retries only calls that are idempotent or carry keys.
func idempotentOnly(m *Model) {
	forEdges(m, func(e *Edge, p *Policy) {
		if e.Idempotent {
			retryLike(p)
		} else {
			p.MaxAttempts = 1
		}
	})
}

// MinHedgeDelay is the shortest hedge delay policy hedge-p95 uses: below
// a millisecond a hedge is a duplicate sent at once, not a hedge.
const MinHedgeDelay = 0.001

// hedgeP95 replaces retries with one hedge after the callee's p95 (at
// least MinHedgeDelay), on idempotent edges; other edges do not retry.
func hedgeP95(m *Model) {
	forEdges(m, func(e *Edge, p *Policy) {
		p.MaxAttempts = 1
		if e.CalleeP95 > 0 && e.Idempotent {
			p.MaxAttempts, p.HedgeAfter = 2, max(e.CalleeP95, MinHedgeDelay)
		}
	})
}

// idempotentEdge reports whether policies may repeat an edge's calls (add
// retries, hedge): its HTTP method is idempotent by HTTP semantics
// (graph.IdempotentMethod), or its retried calls were seen, and every one
// carried an idempotency key. Anything else is not known to be safe and is
// not repeated: POST, PATCH, an RPC or a database statement, which carry
// no HTTP method, unless a policy file declares them idempotent.
func idempotentEdge(e graph.Edge) bool {
	if graph.IdempotentMethod(e.Method) {
		return true
	}
	return e.Idempotency != nil && e.Idempotency.RetriedCalls > 0 && e.Idempotency.WithKey == e.Idempotency.RetriedCalls
}
