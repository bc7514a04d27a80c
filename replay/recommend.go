package replay

import (
	"fmt"
	"strings"
)

// Recommendation is the policy an audit recommends and what adopting it
// changes, edge by edge.
type Recommendation struct {
	// Policy is the recommended policy expression; empty when every
	// candidate went metastable under some degradation.
	Policy string `json:"policy"`
	// Reason says in one sentence why it was chosen.
	Reason string `json:"reason"`
	// Changes are the concrete differences from the observed policies.
	Changes []Change `json:"changes"`
	// Rejected lists candidates ruled out, with why.
	Rejected []Rejection `json:"rejected"`
}

// Change is one concrete change on one edge (or one service, for Callee ""
// and Operation "").
type Change struct {
	Caller    string `json:"caller"`
	Callee    string `json:"callee"`
	Operation string `json:"operation"`
	Change    string `json:"change"`
}

// Rejection is a candidate policy that was ruled out.
type Rejection struct {
	Policy string `json:"policy"`
	Why    string `json:"why"`
}

// yieldCap stands in for an unbounded yield (availability gained for no
// extra work) when averaging.
const yieldCap = 100.0

// Recommend picks, among the policies run (not none, the reference), the
// one with the best mean yield across degradations that never went
// metastable, breaking ties by mean availability, then by name. models
// holds each policy's model and observed the observed one, to list the
// concrete changes edge by edge.
func Recommend(results []Result, models map[string]*Model, observed *Model) *Recommendation {
	type score struct {
		yield, avail float64
		runs         int
		metastable   []string
	}
	scores := map[string]*score{}
	var order []string
	for _, r := range results {
		if r.Policy == "none" {
			continue
		}
		s := scores[r.Policy]
		if s == nil {
			s = &score{}
			scores[r.Policy] = s
			order = append(order, r.Policy)
		}
		s.runs++
		s.avail += r.Availability
		switch {
		case r.Yield != nil:
			s.yield += min(*r.Yield, yieldCap)
		case r.Availability > 0 && r.WorkAmplification > 0:
			// Undefined: no extra work. A gain for free scores the cap; no
			// gain scores 0.
			if none := findRun(results, "none", r.Degradation); none != nil && r.Availability > none.Availability {
				s.yield += yieldCap
			}
		}
		if r.Metastable {
			s.metastable = append(s.metastable, r.Degradation)
		}
	}
	rec := &Recommendation{Changes: []Change{}, Rejected: []Rejection{}}
	best := ""
	for _, p := range order {
		s := scores[p]
		if len(s.metastable) > 0 {
			rec.Rejected = append(rec.Rejected, Rejection{Policy: p, Why: "stays collapsed after " + joinLimit(s.metastable, 3)})
			continue
		}
		if best == "" {
			best = p
			continue
		}
		b := scores[best]
		y, by := s.yield/float64(s.runs), b.yield/float64(b.runs)
		if y > by+1e-9 || y > by-1e-9 && s.avail > b.avail+1e-9 {
			best = p
		}
	}
	if best == "" {
		rec.Reason = "every policy run stays collapsed under some degradation: add capacity, shed load, or try budget, breaker and deadline together"
		return rec
	}
	s := scores[best]
	rec.Policy = best
	rec.Reason = fmtReason(best, s.yield/float64(s.runs), s.avail/float64(s.runs), len(rec.Rejected))
	if m := models[best]; m != nil && observed != nil {
		rec.Changes = changes(observed, m)
	}
	return rec
}

func findRun(results []Result, policy, degradation string) *Result {
	for i := range results {
		if results[i].Policy == policy && results[i].Degradation == degradation {
			return &results[i]
		}
	}
	return nil
}

func joinLimit(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, "; ")
	}
	return strings.Join(xs[:n], "; ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

func fmtReason(policy string, yield, avail float64, rejected int) string {
	y := fmt.Sprintf("%.2f", yield)
	if yield >= yieldCap-1e-9 {
		y = "unbounded (availability gained for no extra work)"
	}
	why := fmt.Sprintf("%s has the best mean yield, %s, with mean availability %.3f, and never stays collapsed after a trigger", policy, y, avail)
	if rejected > 0 {
		why += fmt.Sprintf(" (%d of the policies run did)", rejected)
	}
	return why
}

// changes lists how model m differs from observed, edge by edge, in the
// words an SRE would act on.
func changes(observed, m *Model) []Change {
	var out []Change
	for i := range m.Edges {
		if i >= len(observed.Edges) {
			break
		}
		o, n := observed.Edges[i].Policy, m.Edges[i].Policy
		e := m.Edges[i]
		add := func(format string, args ...any) {
			out = append(out, Change{Caller: m.Services[e.Caller].Name, Callee: m.Services[e.Callee].Name,
				Operation: m.Services[e.Callee].Ops[e.CalleeOp].Name, Change: fmt.Sprintf(format, args...)})
		}
		switch {
		case o.MaxAttempts > 1 && n.MaxAttempts == 1 && n.HedgeAfter == 0:
			add("stop retrying here (%d attempts → 1)", o.MaxAttempts)
		case n.HedgeAfter > 0 && o.HedgeAfter == 0:
			add("hedge once after %.0fms (the callee's p95) instead of retrying", 1000*n.HedgeAfter)
		case o.MaxAttempts == 1 && n.MaxAttempts > 1:
			add("retry here: up to %d attempts, %s", n.MaxAttempts, describeBackoff(n.Backoff))
		case o.MaxAttempts > 1 && n.MaxAttempts > 1 && o.Backoff.Jitter == JitterNone && n.Backoff.Jitter != JitterNone:
			add("add %s jitter to the backoff", n.Backoff.Jitter)
		}
		if n.MaxAttempts > 1 && !e.Idempotent {
			add("send an idempotency key with every retried %s", m.Services[e.Callee].Ops[e.CalleeOp].Name)
		}
		if n.Budget.Kind != BudgetNone && o.Budget.Kind == BudgetNone && n.MaxAttempts > 1 {
			add("add a retry budget: retries under 10%% of calls over 10 s, shared by every caller of %s", m.Services[e.Callee].Name)
		}
		if n.HonorRetryAfter && !o.HonorRetryAfter && n.MaxAttempts > 1 {
			add("honour Retry-After")
		}
		if n.Breaker.Enabled() && !o.Breaker.Enabled() {
			add("add a circuit breaker (open after %d consecutive failures for %.0f s, jittered half-open)", n.Breaker.ConsecutiveFailures, n.Breaker.OpenFor)
		}
		if n.Propagate && !o.Propagate {
			add("propagate the deadline: the callee drops work whose caller gave up")
		}
	}
	for i := range m.Services {
		if i < len(observed.Services) && m.Services[i].ShedRetriesAt > 0 && observed.Services[i].ShedRetriesAt == 0 {
			out = append(out, Change{Caller: m.Services[i].Name, Change: fmt.Sprintf("shed retries first once %d requests are queued", m.Services[i].ShedRetriesAt)})
		}
	}
	if out == nil {
		out = []Change{}
	}
	return out
}

func describeBackoff(b Backoff) string {
	switch b.Kind {
	case BackoffExponential:
		return fmt.Sprintf("exponential backoff from %.0fms ×%g capped at %.0fms, %s jitter", 1000*b.Base, b.Multiplier, 1000*b.Cap, b.Jitter)
	case BackoffConstant:
		return fmt.Sprintf("constant %.0fms backoff, %s jitter", 1000*b.Base, b.Jitter)
	}
	return "no backoff"
}
