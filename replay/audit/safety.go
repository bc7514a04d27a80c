package audit

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// Safety rules, by the names the report gives them.
const (
	RuleNonIdempotent = "non-idempotent" // no hedge, no retry added or kept on a write without keys
	RuleHedgeDelay    = "hedge-delay"    // a hedge delay in [callee p95, per-try timeout)
	RuleKeepBreaker   = "keep-breaker"   // a breaker seen in the traces is kept
	// RuleRetriesUnknown: an edge whose retries the traces cannot show
	// (graph.Edge.RetriesUnknown) is left as replayed, one attempt a call.
	RuleRetriesUnknown = "retries-unknown"
)

// Declarations are what the user knows about operations that traces
// cannot show. Each entry names an operation or a method (exactly).
type Declarations struct {
	// Idempotent operations may be retried though their method does not
	// say so (gRPC methods, SQL statements).
	Idempotent []string
	// InflightDedup operations deduplicate concurrent duplicates on the
	// server (by idempotency key), so keyed calls may be hedged.
	InflightDedup []string
}

func (d Declarations) matches(list []string, e *graph.Edge, op string) bool {
	return slices.Contains(list, op) || e != nil && e.Method != "" && slices.Contains(list, e.Method)
}

// check refuses a declaration that names no operation or method of a
// model edge: a misspelt name would otherwise change nothing, silently.
func (d Declarations) check(m *replay.Model, top *graph.Topology) error {
	known := map[string]bool{}
	for _, me := range m.Edges {
		known[m.Services[me.Callee].Ops[me.CalleeOp].Name] = true
	}
	if top != nil {
		for _, e := range top.Edges {
			if e.Method != "" {
				known[e.Method] = true
			}
		}
	}
	for _, l := range []struct {
		flag  string
		names []string
	}{{"idempotent", d.Idempotent}, {"in-flight dedup", d.InflightDedup}} {
		for _, n := range l.names {
			if known[n] {
				continue
			}
			have := slices.Sorted(maps.Keys(known))
			if len(have) > 20 {
				have = append(have[:20], "…")
			}
			return fmt.Errorf("declared %s %q: no call in the model is to an operation or method of that name (have %s)", l.flag, n, strings.Join(have, ", "))
		}
	}
	return nil
}

// edgeFacts is what the safety rules know about one model edge.
type edgeFacts struct {
	write string // why the operation is not idempotent; "" if it is
	// declare is the name to declare idempotent (--idempotent) when the
	// operation is a write only because nothing shows that it is not (an
	// RPC method not declared, an operation nothing identifies); "" for
	// a known write or a read.
	declare string
	keyed   bool // the traces show a key on every retried call
	dedup   bool // declared in-flight deduplication
	retried int  // retried calls seen, for the wording
	withKey int
	// givenUp of failures were calls the caller gave up with attempts
	// left, for no reason a span shows (graph.GiveUpShare): a retry
	// budget the caller already has would show so, so the traces cannot
	// say it has none.
	givenUp, failures int
	// unknown: whether the caller retries is unknown (its calls start
	// their own traces: graph.Edge.RetriesUnknown); no policy is advised
	// for the edge.
	unknown bool
}

var (
	httpReads  = []string{"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"}
	httpWrites = []string{"POST", "PATCH", "CONNECT"}
	sqlReads   = []string{"SELECT", "SHOW", "EXPLAIN", "DESCRIBE"}
	sqlWrites  = []string{"INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "REPLACE", "CREATE", "ALTER", "DROP", "TRUNCATE", "CALL", "EXEC", "EXECUTE", "COPY"}
)

// classify says why an operation is not idempotent, or "": HTTP POST,
// PATCH and CONNECT; every RPC method not declared idempotent; SQL
// statements that write; and an operation nothing identifies (no HTTP
// method, RPC method or verb its name starts with), since unknown is not
// idempotent. Reads by HTTP semantics and SQL reads are idempotent.
// unknown says the operation is a write only because nothing shows it is
// not: the traces cannot decide, and a declaration can.
func classify(method, op string, declared bool) (why string, unknown bool) {
	if declared {
		return "", false
	}
	m := strings.ToUpper(method)
	words := strings.Fields(strings.ToUpper(op) + " x")
	first := words[0]
	if first == "SQL" && len(words) > 2 {
		// "SQL SELECT": a database client naming its span by the language
		// and then the statement's verb (Jaeger's HotROD does).
		first = words[1]
	}
	switch {
	case slices.Contains(httpWrites, m):
		return "HTTP " + m, false
	case slices.Contains(httpReads, m):
		return "", false
	case method != "":
		return fmt.Sprintf("RPC method %s, not declared idempotent (--idempotent %s)", method, method), true
	case slices.Contains(httpWrites, first):
		return "HTTP " + first, false
	case slices.Contains(sqlWrites, first):
		return "SQL " + first, false
	case slices.Contains(httpReads, first), slices.Contains(sqlReads, first):
		return "", false
	}
	return fmt.Sprintf("an operation of unknown idempotency, with no HTTP method, RPC method or SQL verb (--idempotent %q)", op), true
}

// factsOf finds each model edge's topology edge and classifies it.
func factsOf(m *replay.Model, top *graph.Topology, decl Declarations) []edgeFacts {
	byKey := map[[4]string]*graph.Edge{}
	if top != nil {
		for i := range top.Edges {
			e := &top.Edges[i]
			byKey[[4]string{e.Caller, e.CallerOperation, e.Callee, e.Operation}] = e
		}
	}
	out := make([]edgeFacts, len(m.Edges))
	for i, me := range m.Edges {
		caller, callee := m.Services[me.Caller], m.Services[me.Callee]
		op := callee.Ops[me.CalleeOp].Name
		ge := byKey[[4]string{caller.Name, caller.Ops[me.CallerOp].Name, callee.Name, op}]
		f := &out[i]
		method := ""
		if ge != nil {
			method = ge.Method
			f.unknown = ge.RetriesUnknown
			if o := ge.Outcomes; o != nil {
				_, f.givenUp, f.failures = graph.GiveUpShare(unexplained(o.GivenUp), "server_error", "throttled", "retry_after", "timeout", "transport")
			}
			if id := ge.Idempotency; id != nil {
				f.retried, f.withKey = id.RetriedCalls, id.WithKey
				f.keyed = id.RetriedCalls > 0 && id.WithKey == id.RetriedCalls
			}
		}
		switch declared := decl.matches(decl.Idempotent, ge, op); {
		case ge != nil || declared:
			var unknown bool
			f.write, unknown = classify(method, op, declared)
			if unknown {
				f.declare = cmp.Or(method, op)
			}
		case !me.Idempotent:
			// No topology edge: the model's own flag (a model built from
			// traces sets it from the method; a hand-built or preset model
			// declares it).
			f.write = "not idempotent in the model"
		}
		f.dedup = decl.matches(decl.InflightDedup, ge, op)
	}
	return out
}

// unexplained is rs without the calls the callee asked not to retry
// (a negative grpc-retry-pushback-ms): those gave up for a reason the
// traces show.
func unexplained(rs []graph.StatusRetries) []graph.StatusRetries {
	out := make([]graph.StatusRetries, len(rs))
	for i, r := range rs {
		r.GivenUp -= r.StopAsked
		out[i] = r
	}
	return out
}

// Adjustment is one safety rule changing one candidate on one edge.
type Adjustment struct {
	Policy    string `json:"policy"`
	Caller    string `json:"caller"`
	Callee    string `json:"callee"`
	Operation string `json:"operation"`
	Rule      string `json:"rule"`
	Why       string `json:"why"`
	// declare is the edge's edgeFacts.declare where the rule treated an
	// operation of unknown idempotency as a write.
	declare string
}

// applySafety returns candidate c made safe against the observed model:
// the rules of the audit applied edge by edge, with what each changed.
// Model edges' Idempotent flags are set from the facts.
func applySafety(policy string, observed, c *replay.Model, facts []edgeFacts) (*replay.Model, []Adjustment) {
	out := *c
	out.Edges = slices.Clone(c.Edges)
	var adj []Adjustment
	for i := range out.Edges {
		e := &out.Edges[i]
		o, n := observed.Edges[i].Policy, &e.Policy
		f := facts[i]
		e.Idempotent = f.write == "" || f.keyed
		note := func(rule, format string, args ...any) {
			a := Adjustment{Policy: policy, Caller: out.Services[e.Caller].Name, Callee: out.Services[e.Callee].Name,
				Operation: out.Services[e.Callee].Ops[e.CalleeOp].Name, Rule: rule, Why: fmt.Sprintf(format, args...)}
			if rule == RuleNonIdempotent {
				a.declare = f.declare
			}
			adj = append(adj, a)
		}
		if f.unknown {
			if !samePolicy(o, *n) {
				*n = o
				note(RuleRetriesUnknown, "left as replayed (%s): whether %s retries is unknown (its calls start their own traces), so no policy is advised here",
					attempts(o), out.Services[e.Caller].Name)
			}
			continue
		}
		if f.write != "" && n.HedgeAfter > 0 && !(f.keyed && f.dedup) {
			n.HedgeAfter, n.MaxAttempts = 0, 1
			why := "no idempotency key on every retried call"
			if f.keyed {
				why = "keyed, but no in-flight deduplication declared (--inflight-dedup)"
			}
			note(RuleNonIdempotent, "not hedged: %s is not idempotent (%s) and a hedge sends a concurrent duplicate", f.write, why)
		}
		if f.write != "" && n.MaxAttempts > 1 && n.HedgeAfter == 0 && !f.keyed {
			verb := "not retried"
			if o.MaxAttempts > 1 {
				verb = "retries stopped"
			}
			n.MaxAttempts = 1
			note(RuleNonIdempotent, "%s: %s is not idempotent and %s: a retry after a lost response repeats the write", verb, f.write, keyWords(f))
		}
		if n.HedgeAfter > 0 && n.HedgeAfter != o.HedgeAfter {
			switch {
			case n.HedgeAfter < e.CalleeP95:
				note(RuleHedgeDelay, "no hedge: %s is below the callee's p95 of %s", ms(n.HedgeAfter), ms(e.CalleeP95))
				n.HedgeAfter, n.MaxAttempts = 0, 1
			case n.PerTryTimeout > 0 && n.HedgeAfter >= n.PerTryTimeout:
				note(RuleHedgeDelay, "no hedge: after %s it could never fire behind the %s per-try timeout", ms(n.HedgeAfter), ms(n.PerTryTimeout))
				n.HedgeAfter, n.MaxAttempts = 0, 1
			}
		}
		if o.Breaker.Enabled() && !n.Breaker.Enabled() {
			n.Breaker = o.Breaker
			note(RuleKeepBreaker, "the circuit breaker seen in the traces is kept")
		}
	}
	return &out, adj
}

// notAdvised says, for each edge of m whose retries are unknown, that the
// audit gives no advice on its retry policy; nil when there is none.
func notAdvised(m *replay.Model, facts []edgeFacts) []string {
	var out []string
	for i, f := range facts {
		if !f.unknown {
			continue
		}
		e := m.Edges[i]
		caller, callee := m.Services[e.Caller].Name, m.Services[e.Callee].Name
		out = append(out, fmt.Sprintf("%s → %s %s: no advice on its retry policy: whether %s retries is unknown (its calls start their own traces and nothing links a retry to the call it repeats); "+
			"every candidate leaves it as replayed (%s), so what depends on its retries (the load on %s, amplification) is a lower bound",
			caller, callee, m.Services[e.Callee].Ops[e.CalleeOp].Name, caller, attempts(e.Policy), callee))
	}
	return out
}

func keyWords(f edgeFacts) string {
	if f.retried == 0 {
		return "no retried call shows an idempotency key"
	}
	return fmt.Sprintf("%d of %d retried calls carry no idempotency key", f.retried-f.withKey, f.retried)
}

func ms(s float64) string {
	v := 1000 * s
	if v < 10 {
		return fmt.Sprintf("%.2gms", v)
	}
	return fmt.Sprintf("%.0fms", v)
}

// samePolicies reports whether two models (of the same graph) give every
// edge and service the same client policy.
func samePolicies(a, b *replay.Model) bool { return policiesAlike(a, b, nil) }

// replaysAlike reports whether two models (of the same graph) replay the
// same under faults, event for event: their policies are the same
// (samePolicies) but for HonorRetryAfter on edges where no answer can
// carry a Retry-After under these faults in either model
// (replay.Model.RetryAfterReaches), where it never acts.
func replaysAlike(a, b *replay.Model, faults degrade.Schedule) bool {
	return policiesAlike(a, b, func(e int) bool {
		return !a.RetryAfterReaches(e, faults) && !b.RetryAfterReaches(e, faults)
	})
}

// policiesAlike is samePolicies with HonorRetryAfter ignored on the edges
// deaf says no Retry-After reaches (nil: none).
func policiesAlike(a, b *replay.Model, deaf func(e int) bool) bool {
	if a.RootPropagate != b.RootPropagate || len(a.Edges) != len(b.Edges) {
		return false
	}
	for i := range a.Edges {
		pa, pb := a.Edges[i].Policy, b.Edges[i].Policy
		if pa.HonorRetryAfter != pb.HonorRetryAfter && deaf != nil && deaf(i) {
			pa.HonorRetryAfter, pb.HonorRetryAfter = false, false
		}
		if !samePolicy(pa, pb) {
			return false
		}
	}
	for i := range a.Services {
		if a.Services[i].ShedRetriesAt != b.Services[i].ShedRetriesAt {
			return false
		}
	}
	return true
}

func samePolicy(a, b replay.Policy) bool {
	if a.MaxAttempts == 1 && b.MaxAttempts == 1 && a.HedgeAfter == 0 && b.HedgeAfter == 0 {
		// One attempt: backoff, budget, Retry-After and giving up never act.
		a.Backoff, b.Backoff = replay.Backoff{}, replay.Backoff{}
		a.Budget, b.Budget, a.SharedBudget, b.SharedBudget = replay.BudgetSpec{}, replay.BudgetSpec{}, false, false
		a.HonorRetryAfter, b.HonorRetryAfter = false, false
		a.GiveUp, b.GiveUp = [len(a.GiveUp)]float64{}, [len(b.GiveUp)]float64{}
	}
	// Every other field acts on the replay: two variants are the same, and
	// replayed once (runMatrix, the search), only when all agree.
	return a.MaxAttempts == b.MaxAttempts && a.PerTryTimeout == b.PerTryTimeout && a.Deadline == b.Deadline &&
		a.Propagate == b.Propagate && a.Backoff == b.Backoff && a.HonorRetryAfter == b.HonorRetryAfter &&
		a.Budget == b.Budget && a.SharedBudget == b.SharedBudget && a.Breaker == b.Breaker &&
		a.MaxRequests == b.MaxRequests && a.HedgeAfter == b.HedgeAfter && a.GiveUp == b.GiveUp &&
		a.OnFailureOut == b.OnFailureOut
}
