package audit

import (
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// fanOut is a hand-built model: one caller "api" making one call per edge
// to "svc", each edge an operation of its own, with the observed policies
// given, and its topology (methods and idempotency keys).
func fanOut(edges []graph.Edge, observed []replay.Policy) (*replay.Model, *graph.Topology) {
	m := &replay.Model{
		Services: []replay.Service{{Name: "api", Workers: 8, Ops: []replay.Op{{Name: "handle", Time: replay.Constant(0.001)}}}, {Name: "svc", Workers: 8}},
		Entry:    []replay.Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:     10,
	}
	top := &graph.Topology{}
	for i, e := range edges {
		e.Caller, e.CallerOperation, e.Callee = "api", "handle", "svc"
		top.Edges = append(top.Edges, e)
		m.Services[1].Ops = append(m.Services[1].Ops, replay.Op{Name: e.Operation, Time: replay.Constant(0.01)})
		m.Edges = append(m.Edges, replay.Edge{Caller: 0, CallerOp: 0, Callee: 1, CalleeOp: i, Prob: 1, Repeat: 1,
			Idempotent: graph.IdempotentMethod(e.Method), CalleeP95: 0.05, Policy: observed[i]})
		m.Services[0].Ops[0].Calls = append(m.Services[0].Ops[0].Calls, i)
	}
	return m, top
}

// TestSafetyRules pins every safety rule on hand-built edges.
func TestSafetyRules(t *testing.T) {
	one := replay.Policy{MaxAttempts: 1}
	three := replay.Policy{MaxAttempts: 3, Backoff: replay.DefaultBackoff}
	hedge := func(after, perTry float64) replay.Policy {
		return replay.Policy{MaxAttempts: 2, HedgeAfter: after, PerTryTimeout: perTry}
	}
	keys := &graph.Idempotency{RetriedCalls: 10, WithKey: 10}
	breaker := replay.DefaultBreaker
	withBreaker := replay.Policy{MaxAttempts: 3, Breaker: breaker}
	decl := Declarations{Idempotent: []string{"GetStock"}, InflightDedup: []string{"POST /deduped"}}
	for _, c := range []struct {
		name               string
		edge               graph.Edge
		observed, proposed replay.Policy
		wantAttempts       int
		wantHedge          float64
		wantRule           string // "" for no adjustment
		wantBreaker        bool
	}{
		{"a GET may retry", graph.Edge{Operation: "GET /a", Method: "GET"}, one, three, 3, 0, "", false},
		{"a POST without keys is not given retries", graph.Edge{Operation: "POST /b", Method: "POST"}, one, three, 1, 0, RuleNonIdempotent, false},
		{"a POST without keys does not keep its retries", graph.Edge{Operation: "POST /c", Method: "POST", Idempotency: &graph.Idempotency{RetriedCalls: 10, WithKey: 9}}, three, three, 1, 0, RuleNonIdempotent, false},
		{"a PATCH with keys on every retried call may retry", graph.Edge{Operation: "PATCH /d", Method: "PATCH", Idempotency: keys}, three, three, 3, 0, "", false},
		{"a keyed POST is not hedged without in-flight dedup", graph.Edge{Operation: "POST /e", Method: "POST", Idempotency: keys}, three, hedge(0.06, 0), 1, 0, RuleNonIdempotent, false},
		{"a keyed POST with declared in-flight dedup may be hedged", graph.Edge{Operation: "POST /deduped", Method: "POST", Idempotency: keys}, three, hedge(0.06, 0), 2, 0.06, "", false},
		{"an undeclared gRPC method is not retried", graph.Edge{Operation: "inventory.Inventory/Reserve", Method: "Reserve"}, one, three, 1, 0, RuleNonIdempotent, false},
		{"a declared gRPC method may retry", graph.Edge{Operation: "inventory.Inventory/GetStock", Method: "GetStock"}, one, three, 3, 0, "", false},
		{"a SQL write is not retried", graph.Edge{Operation: "INSERT orders"}, one, three, 1, 0, RuleNonIdempotent, false},
		{"a SQL read may retry", graph.Edge{Operation: "SELECT stock"}, one, three, 3, 0, "", false},
		{"a hedge below the callee's p95 is not proposed", graph.Edge{Operation: "GET /f", Method: "GET"}, one, hedge(0.01, 0), 1, 0, RuleHedgeDelay, false},
		{"a hedge at or after the per-try timeout is not proposed", graph.Edge{Operation: "GET /g", Method: "GET"}, one, hedge(0.25, 0.1), 1, 0, RuleHedgeDelay, false},
		{"a hedge between p95 and the per-try timeout is", graph.Edge{Operation: "GET /h", Method: "GET"}, one, hedge(0.06, 0.1), 2, 0.06, "", false},
		{"a breaker seen is kept", graph.Edge{Operation: "GET /i", Method: "GET"}, withBreaker, three, 3, 0, RuleKeepBreaker, true},
		// Whether the caller retries is unknown (its calls start their own
		// traces): no candidate advises on the edge, read or write.
		{"retries unknown: none added", graph.Edge{Operation: "GET /j", Method: "GET", RetriesUnknown: true}, one, three, 1, 0, RuleRetriesUnknown, false},
		{"retries unknown: no hedge", graph.Edge{Operation: "GET /k", Method: "GET", RetriesUnknown: true}, one, hedge(0.06, 0.1), 1, 0, RuleRetriesUnknown, false},
		{"retries unknown: a write without keys", graph.Edge{Operation: "POST /l", Method: "POST", RetriesUnknown: true}, one, three, 1, 0, RuleRetriesUnknown, false},
		{"retries unknown: left alone", graph.Edge{Operation: "GET /m", Method: "GET", RetriesUnknown: true}, one, one, 1, 0, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			observed, top := fanOut([]graph.Edge{c.edge}, []replay.Policy{c.observed})
			proposed, _ := fanOut([]graph.Edge{c.edge}, []replay.Policy{c.proposed})
			got, adj := applySafety("p", observed, proposed, factsOf(observed, top, decl))
			p := got.Edges[0].Policy
			if p.MaxAttempts != c.wantAttempts || p.HedgeAfter != c.wantHedge || p.Breaker.Enabled() != c.wantBreaker {
				t.Errorf("policy %+v: want %d attempts, hedge after %g, breaker %v", p, c.wantAttempts, c.wantHedge, c.wantBreaker)
			}
			switch {
			case c.wantRule == "" && len(adj) > 0:
				t.Errorf("adjusted %+v, want no rule to act", adj)
			case c.wantRule != "" && (len(adj) != 1 || adj[0].Rule != c.wantRule || adj[0].Why == "" || adj[0].Operation != c.edge.Operation):
				t.Errorf("adjusted %+v, want rule %s stated once", adj, c.wantRule)
			}
		})
	}
}

// TestNotAdvised: the recommendation names each edge whose retries are
// unknown as one it gives no advice on, and only those.
func TestNotAdvised(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edges []graph.Edge
		want  []string
	}{
		{"none unknown", []graph.Edge{{Operation: "GET /a", Method: "GET"}}, nil},
		{"one unknown", []graph.Edge{{Operation: "GET /a", Method: "GET"}, {Operation: "GET /b", Method: "GET", RetriesUnknown: true}},
			[]string{"api → svc GET /b: no advice on its retry policy: whether api retries is unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := make([]replay.Policy, len(tc.edges))
			for i := range pol {
				pol[i] = replay.Policy{MaxAttempts: 1}
			}
			m, top := fanOut(tc.edges, pol)
			got := notAdvised(m, factsOf(m, top, Declarations{}))
			if len(got) != len(tc.want) {
				t.Fatalf("not advised %q, want %d lines", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) || !strings.Contains(got[i], "lower bound") {
					t.Errorf("line %q, want it to start %q and say what is a lower bound", got[i], w)
				}
			}
		})
	}
}

// TestChangesWords: a change is listed only where something changes; a
// hedge replaces retries only on an edge that retried, and is an addition
// on one that did not; stopping keyless retries says why and how to bring
// them back.
func TestChangesWords(t *testing.T) {
	edges := []graph.Edge{
		{Operation: "GET /same", Method: "GET"},
		{Operation: "GET /retried", Method: "GET"},
		{Operation: "GET /single", Method: "GET"},
		{Operation: "POST /write", Method: "POST", Idempotency: &graph.Idempotency{RetriedCalls: 4}},
	}
	three := replay.Policy{MaxAttempts: 3, Backoff: replay.Backoff{Kind: "constant", Base: 0.02, Jitter: "none"}}
	observed, top := fanOut(edges, []replay.Policy{three, three, {MaxAttempts: 1}, three})
	proposed, _ := fanOut(edges, []replay.Policy{three, {MaxAttempts: 2, HedgeAfter: 0.06}, {MaxAttempts: 2, HedgeAfter: 0.06}, three})
	facts := factsOf(observed, top, Declarations{})
	safe, adj := applySafety("p", observed, proposed, facts)
	got := changes(observed, variant{model: safe, adjusted: adj}, facts)
	byOp := map[string][]Change{}
	for _, c := range got {
		byOp[c.Operation] = append(byOp[c.Operation], c)
	}
	if len(byOp["GET /same"]) != 0 {
		t.Errorf("an edge where nothing changes is listed: %+v", byOp["GET /same"])
	}
	if c := byOp["GET /retried"]; len(c) != 1 || c[0].Action != ActionHedge || !strings.Contains(c[0].Why, "instead of retrying") {
		t.Errorf("hedge on a retrying edge: %+v", c)
	}
	if c := byOp["GET /single"]; len(c) != 1 || c[0].Action != ActionHedge || strings.Contains(c[0].Why, "instead") || !strings.Contains(c[0].Why, "addition") {
		t.Errorf("hedge on a non-retrying edge: %+v", c)
	}
	if c := byOp["POST /write"]; len(c) != 2 || c[0].Action != ActionStopRetrying || !strings.Contains(c[0].Why, "not idempotent") ||
		c[1].Action != ActionSendIdempotencyKey || c[0].From != "up to 3 attempts, constant 20ms backoff" || c[0].To != "1 attempt" {
		t.Errorf("keyless POST retries: %+v", c)
	}
}

// TestSafeVariants: when the observed policies break a rule, observed is
// ruled out saying which, and observed+safe becomes a candidate; a
// candidate the rules make equal to another is ruled out as the same;
// none is never adjusted into retrying.
func TestSafeVariants(t *testing.T) {
	edges := []graph.Edge{{Operation: "GET /a", Method: "GET"}, {Operation: "POST /b", Method: "POST"}}
	three := replay.Policy{MaxAttempts: 3, Backoff: replay.DefaultBackoff}
	observed, top := fanOut(edges, []replay.Policy{three, three})
	none, _ := fanOut(edges, []replay.Policy{{MaxAttempts: 1}, {MaxAttempts: 1}})
	getOnly, _ := fanOut(edges, []replay.Policy{three, {MaxAttempts: 1}})
	everywhere, _ := fanOut(edges, []replay.Policy{three, three})
	vs, ruled, adj := safeVariants([]replay.Variant{
		{Policy: "observed", Model: observed}, {Policy: "none", Model: none},
		{Policy: "get-only", Model: getOnly}, {Policy: "everywhere", Model: everywhere},
	}, observed, factsOf(observed, top, Declarations{}))
	var names []string
	for _, v := range vs {
		names = append(names, v.policy)
	}
	if strings.Join(names, " ") != "observed observed+safe observed+keys none get-only everywhere" {
		t.Fatalf("variants %v", names)
	}
	if vs[0].model.Edges[1].Policy.MaxAttempts != 3 {
		t.Error("the observed baseline was changed: it must run as it is")
	}
	if k := vs[2]; k.model.Edges[1].Policy.MaxAttempts != 3 || !slices.Equal(k.keyed, []int{1}) || len(k.adjusted) != 0 || !samePolicies(k.model, vs[0].model) {
		t.Errorf("observed+keys: %d attempts on POST /b, keyed %v, adjusted %+v: want the retries kept with a key on that edge alone, replayed as observed",
			k.model.Edges[1].Policy.MaxAttempts, k.keyed, k.adjusted)
	}
	if vs[1].model.Edges[1].Policy.MaxAttempts != 1 || samePolicies(vs[1].model, vs[0].model) {
		t.Error("observed+safe kept the keyless retries")
	}
	if vs[3].model.Edges[0].Policy.MaxAttempts != 1 {
		t.Error("none was given retries")
	}
	want := map[string]string{
		"observed":   "breaks a safety rule as it is: api → svc POST /b",
		"get-only":   "the same as observed+safe",
		"everywhere": "the same as observed+safe",
	}
	if len(ruled) != len(want) {
		t.Errorf("ruled out %+v", ruled)
	}
	for _, r := range ruled {
		if !strings.Contains(r.Why, want[r.Policy]) {
			t.Errorf("%s ruled out: %q, want %q", r.Policy, r.Why, want[r.Policy])
		}
	}
	for _, a := range adj {
		if a.Policy == "observed" {
			t.Errorf("an adjustment names the baseline: %+v", a)
		}
	}
}

// TestClassify pins which operations count as writes: HTTP and SQL by
// their verbs, RPC methods unless declared, and an operation nothing
// identifies, since unknown is not idempotent.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, op string
		declared   bool
		write      bool
		unknown    bool // a write only because nothing shows otherwise
	}{
		{"GET", "GET /inventory/{sku}", false, false, false},
		{"PUT", "PUT /items/{id}", false, false, false},
		{"POST", "POST /charges", false, true, false},
		{"POST", "POST /charges", true, false, false},
		{"", "PATCH /orders/{id}", false, true, false},
		{"payments.Payments/Charge", "payments.Payments/Charge", false, true, true},
		{"payments.Payments/Charge", "payments.Payments/Charge", true, false, false},
		{"", "INSERT orders", false, true, false},
		{"", "DELETE FROM orders", false, true, false},
		{"", "SELECT stock", false, false, false},
		{"", "GET order", false, false, false},
		{"", "HGETALL cart", false, true, true},
		{"", "SQL SELECT", false, false, false},
		{"", "sql update orders", false, true, false},
		{"", "SQL", false, true, true},
		{"", "process", false, true, true},
		{"", "", false, true, true},
	} {
		got, unknown := classify(tc.method, tc.op, tc.declared)
		if (got != "") != tc.write || unknown != tc.unknown {
			t.Errorf("classify(%q, %q, %v) = %q, %v; want a write: %v, unknown: %v", tc.method, tc.op, tc.declared, got, unknown, tc.write, tc.unknown)
		}
	}
}

// TestFactsWithoutTopology: without a topology edge the safety rules
// follow the model's own Idempotent flag (a hand-built or preset model
// declares it; one built from traces sets it from the method), whatever
// the operation is named; a declaration still makes an edge idempotent,
// and an edge the topology has is classified by its method and name.
func TestFactsWithoutTopology(t *testing.T) {
	observed, top := fanOut([]graph.Edge{{Operation: "serve", Method: ""}, {Operation: "POST /x", Method: "POST"}, {Operation: "process"}}, []replay.Policy{{MaxAttempts: 3}, {MaxAttempts: 3}, {MaxAttempts: 3}})
	observed.Edges[0].Idempotent = true // declared by the model
	observed.Edges[1].Idempotent = true // declared by the model, a POST
	for _, c := range []struct {
		name  string
		top   *graph.Topology
		decl  Declarations
		write []bool
	}{
		{"no topology: the model's flags", nil, Declarations{}, []bool{false, false, true}},
		{"no topology, declared", nil, Declarations{Idempotent: []string{"process"}}, []bool{false, false, false}},
		{"with the topology: method and name", top, Declarations{}, []bool{true, true, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i, f := range factsOf(observed, c.top, c.decl) {
				if (f.write != "") != c.write[i] {
					t.Errorf("edge %d (%s): write %q, want a write: %v", i, observed.Services[1].Ops[i].Name, f.write, c.write[i])
				}
			}
		})
	}
}

// TestDeclarationsCheck: a declaration names an operation or a method of
// some call in the model, or the audit refuses it with what the model
// has; a misspelt name would otherwise change nothing, silently.
func TestDeclarationsCheck(t *testing.T) {
	observed, top := fanOut([]graph.Edge{{Operation: "shop.Stock/Get", Method: "Get"}, {Operation: "POST /x", Method: "POST"}}, []replay.Policy{{MaxAttempts: 3}, {MaxAttempts: 3}})
	for _, c := range []struct {
		decl Declarations
		err  string
	}{
		{Declarations{Idempotent: []string{"shop.Stock/Get"}, InflightDedup: []string{"POST"}}, ""},
		{Declarations{Idempotent: []string{"Get"}}, ""},
		{Declarations{Idempotent: []string{"shop.Stock/Gte"}}, `declared idempotent "shop.Stock/Gte": no call in the model is to an operation or method of that name (have Get, POST, POST /x, shop.Stock/Get)`},
		{Declarations{InflightDedup: []string{"PUT"}}, `declared in-flight dedup "PUT"`},
	} {
		err := c.decl.check(observed, top)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.HasPrefix(err.Error(), c.err)) {
			t.Errorf("%+v: error %v, want %q", c.decl, err, c.err)
		}
	}
}

// TestBudgetFromWords: adding a budget says "no retry budget" only where
// the traces show none stopping retries; where calls were given up with
// attempts left for a reason no span shows, a budget the caller already
// has would look so, and the change says what the traces show instead.
// Calls the callee asked not to retry gave up for a reason they show.
func TestBudgetFromWords(t *testing.T) {
	three := replay.Policy{MaxAttempts: 3, Backoff: replay.DefaultBackoff}
	budgeted := three
	budgeted.Budget = replay.BudgetSpec{Kind: replay.BudgetRatio, Ratio: 0.2, Window: 10}
	givenUp := func(rs ...graph.StatusRetries) *graph.Outcomes { return &graph.Outcomes{GivenUp: rs} }
	for _, tc := range []struct {
		name     string
		outcomes *graph.Outcomes
		want     string
	}{
		{"no outcomes", nil, "no retry budget"},
		{"every failure retried", givenUp(), "no retry budget"},
		{"given up, no span says why", givenUp(graph.StatusRetries{Status: "503", Class: "server_error", Retried: 53, GivenUp: 6}),
			"no retry budget seen (6 of 59 failures given up with attempts left"},
		{"only client errors given up", givenUp(graph.StatusRetries{Status: "400", Class: "client_error", GivenUp: 2}), "no retry budget"},
		{"the callee asked not to retry", givenUp(graph.StatusRetries{Status: "RESOURCE_EXHAUSTED", Class: "throttled", Retried: 10, GivenUp: 3, StopAsked: 3}),
			"no retry budget"},
		{"some asked not to retry", givenUp(graph.StatusRetries{Status: "RESOURCE_EXHAUSTED", Class: "throttled", Retried: 10, GivenUp: 3, StopAsked: 1}),
			"no retry budget seen (2 of 12 failures"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edges := []graph.Edge{{Operation: "GET /a", Method: "GET", Outcomes: tc.outcomes}}
			observed, top := fanOut(edges, []replay.Policy{three})
			proposed, _ := fanOut(edges, []replay.Policy{budgeted})
			facts := factsOf(observed, top, Declarations{})
			safe, adj := applySafety("p", observed, proposed, facts)
			var from []string
			for _, c := range changes(observed, variant{model: safe, adjusted: adj}, facts) {
				if c.Action == ActionAddBudget {
					from = append(from, c.From)
				}
			}
			if len(from) != 1 || !strings.HasPrefix(from[0], tc.want) || tc.want == "no retry budget" && from[0] != tc.want {
				t.Errorf("add-budget from %q, want %q", from, tc.want)
			}
		})
	}
}
