package audit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/retryaudit/retryaudit/replay"
)

// Actions of a Change.
const (
	ActionStopRetrying       = "stop-retrying"
	ActionAddRetries         = "add-retries"
	ActionHedge              = "hedge"
	ActionAddJitter          = "add-jitter"
	ActionAddBudget          = "add-budget"
	ActionHonourRetryAfter   = "honour-retry-after"
	ActionAddBreaker         = "add-breaker"
	ActionKeepBreaker        = "keep-breaker"
	ActionPropagateDeadline  = "propagate-deadline"
	ActionSendIdempotencyKey = "send-idempotency-key"
	ActionSetPerTryTimeout   = "set-per-try-timeout"
	ActionShedRetries        = "shed-retries"
)

// Change is one concrete change on one edge (or one service, for Callee
// "" and Operation ""): what to do, from what to what, and why.
type Change struct {
	Caller    string `json:"caller"`
	Callee    string `json:"callee"`
	Operation string `json:"operation"`
	Action    string `json:"action"`
	From      string `json:"from"`
	To        string `json:"to"`
	Why       string `json:"why"`
}

// changes lists how the recommended variant differs from observed, edge
// by edge; edges where nothing changes are not listed. The variant's
// safety adjustments give the why where a rule made the change.
func changes(observed *replay.Model, v variant, facts []edgeFacts) []Change {
	out := []Change{}
	rec, adj := v.model, v.adjusted
	for i := range rec.Edges {
		e := rec.Edges[i]
		o, n := observed.Edges[i].Policy, e.Policy
		keyed := slices.Contains(v.keyed, i)
		if samePolicy(o, n) && !keyed {
			continue
		}
		caller, callee := rec.Services[e.Caller].Name, rec.Services[e.Callee].Name
		op := rec.Services[e.Callee].Ops[e.CalleeOp].Name
		ruled := func(rule string) string {
			for _, a := range adj {
				if a.Rule == rule && a.Caller == caller && a.Callee == callee && a.Operation == op {
					return a.Why
				}
			}
			return ""
		}
		add := func(action, from, to, why string) {
			out = append(out, Change{Caller: caller, Callee: callee, Operation: op, Action: action, From: from, To: to, Why: why})
		}
		if keyed {
			f := facts[i]
			add(ActionSendIdempotencyKey, keyWords(f), "a key on every call, deduplicated by "+callee+"; retries kept ("+attempts(n)+")",
				fmt.Sprintf("%s, retried without a key, may repeat a write; with a key the callee answers a repeat from its record, and the retries today's failures need stay", f.write))
		}
		retries, hedges := n.MaxAttempts > 1 && n.HedgeAfter == 0, n.HedgeAfter > 0
		switch {
		case o.MaxAttempts > 1 && n.MaxAttempts == 1:
			why := ruled(RuleNonIdempotent)
			if why == "" {
				why = "the recommended policy does not retry here: one layer's retries are enough"
			}
			add(ActionStopRetrying, attempts(o), "1 attempt", why)
			if f := facts[i]; f.write != "" && !f.keyed {
				add(ActionSendIdempotencyKey, keyWords(f), "a key on every call, deduplicated by "+callee,
					"with a key the retries can come back: the callee then answers a repeated write from its record")
			}
		case hedges && o.HedgeAfter == 0:
			how := fmt.Sprintf("one hedge after %s (at least the callee's p95 of %s)", ms(n.HedgeAfter), ms(e.CalleeP95))
			if o.MaxAttempts > 1 {
				add(ActionHedge, attempts(o), how, "instead of retrying: a hedge asks again while the first attempt is still slow, not after it failed")
			} else {
				add(ActionHedge, "1 attempt", how, "an addition: this edge did not retry; the hedge cuts the tail of a slow callee")
			}
		case o.MaxAttempts == 1 && retries:
			add(ActionAddRetries, "1 attempt", attempts(n), "transient failures of "+callee+" are retried once the budget allows")
		case o.MaxAttempts > 1 && retries && o.Backoff.Jitter == "none" && n.Backoff.Jitter != "none" && n.Backoff.Jitter != "":
			add(ActionAddJitter, "no jitter", string(n.Backoff.Jitter)+" jitter", "clients that fail together would otherwise retry together")
		}
		if n.MaxAttempts > 1 && n.Budget.Kind != replay.BudgetNone && o.Budget.Kind == replay.BudgetNone {
			to, why := budgetText(n.Budget), "a budget caps what retries add to a struggling callee"
			if n.Budget.Kind == replay.BudgetRatio {
				why += fmt.Sprintf(": at most %s of its calls", percent(n.Budget.Ratio))
			}
			if n.SharedBudget {
				to += ", shared by every caller of " + callee
			}
			from := "no retry budget"
			if f := facts[i]; f.givenUp > 0 {
				// Something already stops some retries: the traces cannot
				// tell a budget from any other reason.
				from = fmt.Sprintf("no retry budget seen (%d of %d failures given up with attempts left, for a reason no span shows: a budget would look so)",
					f.givenUp, f.failures)
			}
			add(ActionAddBudget, from, to, why)
		}
		if n.MaxAttempts > 1 && n.HonorRetryAfter && !o.HonorRetryAfter {
			add(ActionHonourRetryAfter, "Retry-After ignored", "wait at least Retry-After", "the callee says when it can take work again")
		}
		if n.Breaker.Enabled() && !o.Breaker.Enabled() {
			add(ActionAddBreaker, "no breaker", fmt.Sprintf("open after %d consecutive failures for %.0f s, jittered half-open", n.Breaker.ConsecutiveFailures, n.Breaker.OpenFor),
				"a breaker stops sending to a callee that is down")
		}
		if why := ruled(RuleKeepBreaker); why != "" {
			add(ActionKeepBreaker, "breaker", "breaker", why)
		}
		if n.Propagate && !o.Propagate {
			add(ActionPropagateDeadline, "deadline not propagated", "deadline propagated", "the callee drops work whose caller gave up")
		}
		if n.PerTryTimeout != o.PerTryTimeout {
			add(ActionSetPerTryTimeout, timeoutText(o.PerTryTimeout), timeoutText(n.PerTryTimeout), "a slow attempt is abandoned and asked for again after this long")
		}
	}
	for i := range rec.Services {
		if i < len(observed.Services) && rec.Services[i].ShedRetriesAt > 0 && observed.Services[i].ShedRetriesAt == 0 {
			out = append(out, Change{Caller: rec.Services[i].Name, Action: ActionShedRetries, From: "retries queued like first attempts",
				To:  fmt.Sprintf("retries shed first once %d requests are queued", rec.Services[i].ShedRetriesAt),
				Why: "room is kept for first attempts when the service is overloaded"})
		}
	}
	return out
}

func attempts(p replay.Policy) string {
	if p.MaxAttempts == 1 {
		return "1 attempt"
	}
	s := fmt.Sprintf("up to %d attempts", p.MaxAttempts)
	switch st := p.Backoff.Steps; {
	case st != nil && len(st.ByRetry) > 0:
		var w []string
		for _, x := range st.ByRetry {
			w = append(w, ms(x))
		}
		s += ", backoff of the steps as read: " + strings.Join(w, ", ")
	default:
		s += kindText(p.Backoff)
	}
	if p.Backoff.Jitter != "" && p.Backoff.Jitter != "none" {
		s += ", " + string(p.Backoff.Jitter) + " jitter"
	}
	return s
}

// kindText is a backoff formula in words, from ", " on.
func kindText(b replay.Backoff) string {
	var s string
	switch b.Kind {
	case "exponential":
		s += fmt.Sprintf(", exponential backoff from %s ×%g", ms(b.Base), b.Multiplier)
		if b.Cap > 0 {
			s += " capped at " + ms(b.Cap)
		}
	case "linear", "fibonacci":
		s += fmt.Sprintf(", %s backoff from %s +%s", b.Kind, ms(b.Base), ms(b.Increment))
		if b.Cap > 0 {
			s += " capped at " + ms(b.Cap)
		}
	case "constant":
		s += ", constant " + ms(b.Base) + " backoff"
	default:
		s += ", no backoff"
	}
	return s
}

func timeoutText(s float64) string {
	if s == 0 {
		return "no per-try timeout"
	}
	return ms(s) + " per try"
}

// budgetText is a budget in words: "retries under 10% of calls over 10 s".
func budgetText(b replay.BudgetSpec) string {
	if b.Kind == replay.BudgetRatio {
		s := "retries under " + percent(b.Ratio) + " of calls"
		if b.Window > 0 {
			s += fmt.Sprintf(" over %g s", b.Window)
		}
		return s
	}
	return string(b.Kind) + " retry budget"
}

// percent is a ratio as a percentage: 0.1 is "10%", 0.125 "12.5%".
func percent(r float64) string { return fmt.Sprintf("%.3g%%", 100*r) }
