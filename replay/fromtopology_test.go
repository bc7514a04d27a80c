package replay

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/ingest"
)

func sampleTopology(t testing.TB, scenario string) *graph.Topology {
	t.Helper()
	return topologyAt(t, filepath.Join("..", "samples", scenario))
}

// topologyAt is the topology inferred from the OTLP traces of the
// scenario in dir.
func topologyAt(t testing.TB, dir string) *graph.Topology {
	t.Helper()
	set, err := ingest.ReadFiles(context.Background(), []string{filepath.Join(dir, "traces.otlp.jsonl.gz")}, nil, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	top, err := graph.Infer(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// TestFromTopology builds a model from the retry-everywhere sample and
// checks it carries the inferred structure and policies.
func TestFromTopology(t *testing.T) {
	top := sampleTopology(t, "retry-everywhere")
	m, err := FromTopology(top, BuildOptions{Load: 10, Capacity: map[string]Capacity{"db": {Workers: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Edge{}
	for _, e := range m.Edges {
		byName[m.Services[e.Caller].Name+"→"+m.Services[e.Callee].Name] = e
	}
	if e := byName["inventory→db"]; e.Policy.MaxAttempts != 3 || e.Policy.Backoff.Kind != "exponential" {
		t.Errorf("inventory→db policy %+v", e.Policy)
	}
	// The N+1 loop makes 3 calls whenever stock is found: api returns on
	// a failed stock call, so the calls are made every time they can be.
	if e := byName["api→pricing"]; e.Repeat != 3 || e.Prob < 0.99 || e.Policy.MaxAttempts != 1 {
		t.Errorf("api→pricing: repeat %d with probability %.2f, attempts %d", e.Repeat, e.Prob, e.Policy.MaxAttempts)
	}
	if op := m.Services[byName["api→pricing"].Caller].Ops[byName["api→pricing"].CallerOp]; op.StopOnFailure < 0.99 || m.Edges[op.Calls[0]].Callee != byName["api→inventory"].Callee {
		t.Errorf("api GET /orders: stops after a failure with probability %.2f, first call to %s; want 1, inventory first", op.StopOnFailure, m.Services[m.Edges[op.Calls[0]].Callee].Name)
	}
	for _, s := range m.Services {
		if s.Name == "db" && s.Workers != 3 {
			t.Errorf("db workers %d, want the --capacity 3", s.Workers)
		}
	}
	if len(m.Assumed) == 0 || !strings.Contains(strings.Join(m.Assumed, "\n"), "headroom") {
		t.Errorf("assumed capacities not listed: %v", m.Assumed)
	}
	// The model runs, and an outage at db makes the retrying layers work.
	faults, _ := degrade.ParseAll([]string{"outage:svc=db,at=5s,for=3s"})
	r, err := Run(m, faults, RunConfig{Seed: 1, Duration: 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.RootRequests == 0 || r.RetryShare == 0 {
		t.Errorf("run: %v", r)
	}
}

func TestApplyPolicy(t *testing.T) {
	m, err := FromTopology(sampleTopology(t, "mixed"), BuildOptions{Load: 5})
	if err != nil {
		t.Fatal(err)
	}
	count := func(m *Model) (retrying int) {
		for _, e := range m.Edges {
			if e.Policy.MaxAttempts > 1 {
				retrying++
			}
		}
		return
	}
	for _, tc := range []struct {
		expr    string
		check   func(*Model) bool
		wantErr string
	}{
		{expr: "none", check: func(m *Model) bool { return count(m) == 0 }},
		{expr: "observed", check: func(m *Model) bool { return count(m) == 5 }},
		{expr: "everywhere", check: func(m *Model) bool { return count(m) == len(m.Edges) }},
		{expr: "edge-only", check: func(m *Model) bool {
			for _, e := range m.Edges {
				if (m.Services[e.Caller].Name == "edge") != (e.Policy.MaxAttempts > 1) {
					return false
				}
			}
			return true
		}},
		{expr: "idempotent-only", check: func(m *Model) bool {
			for _, e := range m.Edges {
				if e.Idempotent != (e.Policy.MaxAttempts > 1) {
					return false
				}
			}
			return true
		}},
		{expr: "hedge-p95", check: func(m *Model) bool {
			for _, e := range m.Edges {
				if e.Policy.MaxAttempts > 1 && e.Policy.HedgeAfter == 0 {
					return false
				}
			}
			return true
		}},
		{expr: "budget+retry-after+breaker+deadline+shed", check: func(m *Model) bool {
			e := m.Edges[0].Policy
			return e.Budget.Kind != BudgetNone && e.SharedBudget && e.HonorRetryAfter && e.Breaker.Enabled() && e.Propagate && m.RootPropagate && m.Services[0].ShedRetriesAt > 0
		}},
		{expr: "budget+none", wantErr: "base policy and must come first"},
		{expr: "sometimes", wantErr: `unknown "sometimes"`},
	} {
		got, err := ApplyPolicy(m, tc.expr)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.expr, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.expr, err)
		case !tc.check(got):
			t.Errorf("%s: policy not applied", tc.expr)
		}
	}
	if count(m) != 5 {
		t.Error("ApplyPolicy changed the model it was given")
	}
}

func TestParseCapacity(t *testing.T) {
	for spec, want := range map[string]string{
		"db=8": "", "db=120rps": "", "db": "want SERVICE=WORKERS", "db=0": "worker count", "db=-3rps": "positive rate", "=4": "want SERVICE",
	} {
		_, _, err := ParseCapacity(spec)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCapacity(%q) = %v, want %q", spec, err, want)
		}
	}
}

func TestParseInstances(t *testing.T) {
	for _, tc := range []struct {
		spec, name string
		n          int
		err        string
	}{
		{"api=3", "api", 3, ""},
		{"a=b=2", "a=b", 2, ""},
		{"api", "", 0, "want SERVICE=COUNT"},
		{"=3", "", 0, "want SERVICE=COUNT"},
		{"api=0", "", 0, "instance count from 1"},
		{"api=70000", "", 0, "instance count from 1"},
		{"api=x", "", 0, "instance count from 1"},
	} {
		name, n, err := ParseInstances(tc.spec)
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) || name != tc.name || n != tc.n {
			t.Errorf("ParseInstances(%q) = %q, %d, %v; want %q, %d, %q", tc.spec, name, n, err, tc.name, tc.n, tc.err)
		}
	}
}

// TestTraceArrivals: --arrivals trace sends the traces' own root requests,
// repeated to fill the run, time compressed by the load.
func TestTraceArrivals(t *testing.T) {
	set, err := ingest.ReadFiles(context.Background(), []string{filepath.Join("..", "samples", "mixed", "traces.otlp.jsonl.gz")}, nil, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	top, arr, err := graph.InferWithArrivals(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	if len(arr) != top.Source.RootCalls {
		t.Fatalf("%d arrivals, want the topology's %d root calls", len(arr), top.Source.RootCalls)
	}
	m, err := FromTopology(top, BuildOptions{Load: 4, Arrivals: arr})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(m, nil, RunConfig{Seed: 1, Duration: 3 * m.Period})
	if err != nil {
		t.Fatal(err)
	}
	// Three periods hold three copies of the traces' requests (the last
	// may end a hair past the duration).
	if r.RootRequests < 3*len(arr)-1 || r.RootRequests > 3*len(arr) {
		t.Errorf("%d root requests in 3 periods, want %d", r.RootRequests, 3*len(arr))
	}
}

// TestParallelStructure: an operation whose calls overlapped in the traces
// makes them in parallel in the model.
func TestParallelStructure(t *testing.T) {
	q := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	top := &graph.Topology{Schema: graph.Schema, Source: graph.Source{RootRatePerS: 10, WindowS: 10},
		Services: []graph.Service{
			{Name: "api", Operations: []graph.Operation{{Name: "GET /page", Count: 100, P95MS: 50, SelfQuantilesMS: q}}},
			{Name: "profile", Operations: []graph.Operation{{Name: "GET /p", Count: 100, P95MS: 20, SelfQuantilesMS: q}}},
			{Name: "cart", Operations: []graph.Operation{{Name: "GET /c", Count: 100, P95MS: 20, SelfQuantilesMS: q}}},
		},
		Edges: []graph.Edge{
			{Caller: "user", Callee: "api", Operation: "GET /page", Calls: 100, MaxAttempts: 1},
			{Caller: "api", CallerOperation: "GET /page", Callee: "profile", Operation: "GET /p", Calls: 100, MaxAttempts: 1, ConcurrentShare: 1},
			{Caller: "api", CallerOperation: "GET /page", Callee: "cart", Operation: "GET /c", Calls: 100, MaxAttempts: 1, ConcurrentShare: 0.9},
		}}
	m, err := FromTopology(top, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Services[0].Ops[0].Parallel {
		t.Error("api's calls overlapped in the traces but the model makes them one after another")
	}
	// Calls that overlapped only each other, through a pool of 3 (as
	// infer measures them now): in order, the pool's up to 3 at a time.
	top.Edges[1].ConcurrentShare, top.Edges[1].ConcurrentOtherShare, top.Edges[1].FanOutWidth = 0, 0, 1
	top.Edges[2].Calls, top.Edges[2].ConcurrentShare, top.Edges[2].ConcurrentOtherShare, top.Edges[2].FanOutWidth = 1000, 0.9, 0, 3
	if m, err = FromTopology(top, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if op := m.Services[0].Ops[0]; op.Parallel || m.Edges[op.Calls[1]].Width != 3 || m.Edges[op.Calls[1]].Repeat != 10 {
		t.Errorf("api's calls: parallel %v, cart's %d calls %d at a time; want in order, 10 calls 3 at a time", op.Parallel, m.Edges[op.Calls[1]].Repeat, m.Edges[op.Calls[1]].Width)
	}
}

// TestPropagatedDeadlineFromTopology: where a service's calls were cut
// when the attempt that caused its work ended (deadline_from_caller:
// grpc-deadlines' orders passes gateway's 60 ms per-try deadline on to
// warehouse as grpc-timeout), the observed policy of the edges into it
// propagates each attempt's deadline, and the cut tries are replayed as
// slow tries that deadline ends, with no per-try timeout of their own;
// without such cuts nothing propagates and slow tries without a per-try
// timeout are drawn from the callee's times.
func TestPropagatedDeadlineFromTopology(t *testing.T) {
	for _, tc := range []struct {
		name, sample string
		noCuts       bool     // clear deadline_from_caller on every edge
		propagate    []string // caller→callee edges that propagate
		slowCut      string   // an edge whose slow tries the propagated deadline ends
	}{
		{"grpc-timeout", "grpc-deadlines", false, []string{"gateway→orders"}, "orders→warehouse"},
		{"no cut seen", "grpc-deadlines", true, nil, ""},
		{"no deadlines", "mixed", false, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := sampleTopology(t, tc.sample)
			if tc.noCuts {
				for i := range top.Edges {
					top.Edges[i].DeadlineFromCaller = 0
				}
			}
			m, err := FromTopology(top, BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range m.Edges {
				name := m.Services[e.Caller].Name + "→" + m.Services[e.Callee].Name
				if e.Policy.Propagate {
					got = append(got, name)
				}
				var sl *SlowTries
				if e.Fail != nil {
					sl = e.Fail.Slow
				}
				if cut := sl != nil && sl.Timeout == 0; cut != (name == tc.slowCut) || cut && sl.SlowTime == nil {
					t.Errorf("%s: slow tries %+v; want them ended by the propagated deadline, drawn from the slow tries' work: %v", name, sl, name == tc.slowCut)
				}
			}
			if !slices.Equal(got, tc.propagate) {
				t.Errorf("edges propagating their deadline %v, want %v", got, tc.propagate)
			}
			notes, want := strings.Join(m.Assumed, "\n"), len(tc.propagate) > 0
			if said := strings.Contains(notes, "propagates each attempt's deadline"); said != want {
				t.Errorf("notes say the deadline propagates: %v, want %v:\n%s", said, want, notes)
			}
		})
	}
}

// TestInstancesNote: where the caller's instances each showed a breaker
// of their own, the model says it replays one for the edge, with the
// pooled setting; where no instance is named, or only one showed it, it
// says nothing of instances.
func TestInstancesNote(t *testing.T) {
	for _, tc := range []struct {
		scenario  string
		instances map[string]int // --instances
		want      []string       // what the notes say; nil: no note on instances
		api       int            // api's instances in the model
	}{
		{"breaker-instances", nil, []string{
			"api → inventory GET /inventory/{sku}: the replay runs one breaker per api instance (3 instances, seen in the traces), requests spread over them round robin by arrival; each open after 3 failures in a row, for 39.1ms; 3 of the 3 instances that called showed a breaker of their own",
			"api: 3 instances (seen in the traces), the requests it serves spread over them round robin by arrival",
		}, 3},
		{"breaker-instances", map[string]int{"api": 1}, []string{
			"3 of the caller's 3 instances showed a circuit breaker of their own; the replay runs one breaker for the edge with their pooled setting (open after 3 failures in a row",
		}, 1},
		{"breaker-instances", map[string]int{"api": 5}, []string{
			"one breaker per api instance (5 instances, set by --instances api=5)",
			"api: 5 instances (set by --instances api=5)",
		}, 5},
		{"breaker-concurrent", nil, nil, 0},
		{"breaker-concurrent", map[string]int{"api": 2}, []string{"one breaker per api instance (2 instances, set by --instances api=2), requests spread over them round robin by arrival; each open after"}, 2},
	} {
		m, err := FromTopology(sampleTopology(t, tc.scenario), BuildOptions{Instances: tc.instances})
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(m.Assumed, "\n")
		if got := strings.Contains(notes, "instance"); got != (tc.want != nil) {
			t.Errorf("%s %v: notes\n%s\nsay nothing of instances: %v, want %v", tc.scenario, tc.instances, notes, !got, tc.want == nil)
		}
		for _, w := range tc.want {
			if !strings.Contains(notes, w) {
				t.Errorf("%s %v: notes\n%s\nwant one saying %q", tc.scenario, tc.instances, notes, w)
			}
		}
		if n := m.Services[serviceIndex(t, m, "api")].Instances; n != tc.api {
			t.Errorf("%s %v: api runs as %d instances, want %d", tc.scenario, tc.instances, n, tc.api)
		}
	}
	if _, err := FromTopology(sampleTopology(t, "breaker-instances"), BuildOptions{Instances: map[string]int{"apii": 2}}); err == nil || !strings.Contains(err.Error(), "--instances apii: no such service") {
		t.Errorf("an unknown service's instances: %v, want an error naming it", err)
	}
}

// serviceIndex is the index of model m's service named name.
func serviceIndex(t *testing.T, m *Model, name string) int {
	t.Helper()
	for i, s := range m.Services {
		if s.Name == name {
			return i
		}
	}
	t.Fatalf("no service %s", name)
	return -1
}
