package policyfile

import (
	"reflect"
	"slices"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
)

// modelOf builds a model with the edges' callers, callees and operations,
// every edge without retries.
func modelOf(edges []Edge) *replay.Model {
	m := &replay.Model{Rate: 1}
	svc := func(name string) int {
		if i := slices.IndexFunc(m.Services, func(s replay.Service) bool { return s.Name == name }); i >= 0 {
			return i
		}
		m.Services = append(m.Services, replay.Service{Name: name, Workers: 1, Ops: []replay.Op{{Name: "serve", Time: replay.Constant(0.001)}}})
		return len(m.Services) - 1
	}
	for _, e := range edges {
		caller, callee := svc(e.Caller), svc(e.Callee)
		op := slices.IndexFunc(m.Services[callee].Ops, func(o replay.Op) bool { return o.Name == e.Operation })
		if op < 0 {
			m.Services[callee].Ops = append(m.Services[callee].Ops, replay.Op{Name: e.Operation, Time: replay.Constant(0.001)})
			op = len(m.Services[callee].Ops) - 1
		}
		m.Edges = append(m.Edges, replay.Edge{Caller: caller, Callee: callee, CalleeOp: op, Prob: 1, Repeat: 1, Policy: replay.Policy{MaxAttempts: 1}})
		m.Services[caller].Ops[0].Calls = append(m.Services[caller].Ops[0].Calls, len(m.Edges)-1)
	}
	m.Entry = []replay.Entry{{Service: 0}}
	return m
}

// readBack applies every file of an emission to m.
func readBack(t *testing.T, out *Emitted, m *replay.Model) *replay.Model {
	t.Helper()
	for _, f := range out.Files {
		pf, err := Read("emitted", f.Data)
		if err != nil {
			t.Fatalf("%v\n%s", err, f.Data)
		}
		if um := pf.Unmatched(m); len(um) > 0 {
			t.Errorf("emitted entries match nothing: %v", um)
		}
		if m, err = pf.Apply(m); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestEmitNativeRoundTrip: the native file, read back and applied, gives
// every edge exactly its policy (policies are values: ==).
func TestEmitNativeRoundTrip(t *testing.T) {
	edges := testEdges()
	out, err := Emit(FormatNative, edges)
	if err != nil {
		t.Fatal(err)
	}
	got := readBack(t, out, modelOf(edges))
	for i, e := range edges {
		// The zero backoff kind, jitter and multiplier are written as what
		// replay reads them as: immediate, no jitter, 2.
		want := e.Policy
		if want.Backoff.Kind == "" {
			want.Backoff.Kind = replay.BackoffImmediate
		}
		if want.Backoff.Jitter == "" {
			want.Backoff.Jitter = replay.JitterNone
		}
		if want.Backoff.Kind == replay.BackoffExponential && want.Backoff.Multiplier == 0 {
			want.Backoff.Multiplier = 2
		}
		if g := got.Edges[i].Policy; g != want {
			t.Errorf("%s → %s %s:\n got %+v\nwant %+v\n%s", e.Caller, e.Callee, e.Operation, g, want, out.Files[0].Data)
		}
	}
}

// TestEmitProjectRoundTrip: each project's file, read back by the same
// package, gives the attempts, timeouts and hedges it was written from
// (retries counted as the vocabulary counts them).
func TestEmitProjectRoundTrip(t *testing.T) {
	edges := testEdges()
	for _, format := range []Format{FormatEnvoy, FormatIstio, FormatLinkerd, FormatGRPC} {
		t.Run(string(format), func(t *testing.T) {
			out, err := Emit(format, edges)
			if err != nil {
				t.Fatal(err)
			}
			got := readBack(t, out, modelOf(edges))
			for i, e := range edges {
				if e.Caller == "edge" { // the other caller of inventory's read: one route per operation
					continue
				}
				_, _, grpc := splitOp(e.Operation)
				if format == FormatGRPC && !grpc {
					continue // gRPC names methods, not HTTP routes
				}
				want := e.Policy
				g := got.Edges[i].Policy
				attempts := want.MaxAttempts
				if format == FormatGRPC {
					attempts = min(attempts, grpcMaxAttemptsLimit)
				}
				hedges := want.HedgeAfter > 0 && (format == FormatEnvoy || format == FormatGRPC)
				switch {
				case hedges:
					if g.HedgeAfter != want.HedgeAfter || g.MaxAttempts != 2 {
						t.Errorf("%s: hedge %v after %d attempts, want %v", e.Operation, g.HedgeAfter, g.MaxAttempts, want.HedgeAfter)
					}
				case want.HedgeAfter > 0:
					if g.MaxAttempts != 1 {
						t.Errorf("%s: %d attempts where a hedge cannot be written, want 1", e.Operation, g.MaxAttempts)
					}
				case g.MaxAttempts != attempts:
					t.Errorf("%s: %d attempts, want %d", e.Operation, g.MaxAttempts, attempts)
				}
				if want.MaxAttempts > 1 && !hedges && format != FormatGRPC && g.PerTryTimeout != want.PerTryTimeout {
					t.Errorf("%s: per-try timeout %v, want %v", e.Operation, g.PerTryTimeout, want.PerTryTimeout)
				}
				if g.Deadline != want.Deadline {
					t.Errorf("%s: deadline %v, want %v", e.Operation, g.Deadline, want.Deadline)
				}
				if format == FormatEnvoy && want.Budget.Kind == replay.BudgetEnvoy && g.Budget != want.Budget {
					t.Errorf("%s: budget %+v, want %+v", e.Operation, g.Budget, want.Budget)
				}
			}
		})
	}
}

// testEdges are recommended policies of every kind the writers handle:
// HTTP and gRPC operations and one that is neither; exponential, constant
// and immediate backoff, with and without a cap; each jitter; hedging;
// every budget kind; a breaker, deadlines, per-try timeouts, Retry-After,
// propagation; more attempts than gRPC allows; callers that differ on one
// operation; edges needing no configuration.
func testEdges() []Edge {
	exp := replay.Backoff{Kind: replay.BackoffExponential, Base: 0.05, Multiplier: 2, Cap: 1, Jitter: replay.JitterFull}
	return []Edge{
		{Caller: "api", Callee: "inventory", Operation: "GET /inventory/{sku}", Policy: replay.Policy{MaxAttempts: 3, PerTryTimeout: 0.2, Backoff: exp,
			Budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 25, Min: 4}, HonorRetryAfter: true}},
		{Caller: "edge", Callee: "inventory", Operation: "GET /inventory/{sku}", Policy: replay.Policy{MaxAttempts: 2, Backoff: exp}},
		{Caller: "api", Callee: "inventory", Operation: "POST /reservations", Policy: replay.Policy{MaxAttempts: 1, Deadline: 2}},
		{Caller: "api", Callee: "payments", Operation: "POST /charges", Policy: replay.Policy{MaxAttempts: 2, PerTryTimeout: 0.5,
			Backoff: replay.Backoff{Kind: replay.BackoffConstant, Base: 0.1, Jitter: replay.JitterEqual}, Breaker: replay.DefaultBreaker,
			Budget: replay.BudgetSpec{Kind: replay.BudgetRatio, Ratio: 0.1, Window: 10}, SharedBudget: true, Propagate: true}},
		{Caller: "api", Callee: "shop.Pricing", Operation: "shop.Pricing/Quote", Policy: replay.Policy{MaxAttempts: 2, HedgeAfter: 0.03}},
		{Caller: "api", Callee: "shop.Stock", Operation: "shop.Stock/Reserve", Policy: replay.Policy{MaxAttempts: 7, Deadline: 1,
			Backoff: replay.Backoff{Kind: replay.BackoffExponential, Base: 0.01, Multiplier: 1.5, Jitter: replay.JitterProportional, Fraction: 0.2},
			Budget:  replay.BudgetSpec{Kind: replay.BudgetGRPC, Max: 10, Ratio: 0.1}}},
		{Caller: "inventory", Callee: "db", Operation: "GET /db/stock/{sku}", Policy: replay.Policy{MaxAttempts: 4,
			Backoff: replay.Backoff{Kind: replay.BackoffImmediate}, Budget: replay.BudgetSpec{Kind: replay.BudgetFinagle, Window: 10, Min: 10, Ratio: 0.2}}},
		{Caller: "inventory", Callee: "cache", Operation: "get", Policy: replay.Policy{MaxAttempts: 2,
			Backoff: replay.Backoff{Kind: replay.BackoffExponential, Base: 0.02, Jitter: replay.JitterDecorrelated},
			Budget:  replay.BudgetSpec{Kind: replay.BudgetTokenBucket, Max: 10, Ratio: 0.1}}},
		{Caller: "api", Callee: "search", Operation: "GET /search", Policy: replay.Policy{MaxAttempts: 4,
			Backoff: replay.Backoff{Kind: replay.BackoffExponential, Base: 0.1, Multiplier: 2, Cap: 1, Jitter: replay.JitterFull},
			Budget:  replay.BudgetSpec{Kind: replay.BudgetBreaker, Ratio: 0.1, Window: 1, Min: 10}}},
		{Caller: "api", Callee: "pricing", Operation: "GET /prices/{item}", Policy: replay.Policy{MaxAttempts: 1}},
	}
}

// TestEmitNothingToConfigure: with no edge that retries, the project files
// say so in a comment (gRPC in a note) and read back as no policy.
func TestEmitNothingToConfigure(t *testing.T) {
	edges := []Edge{{Caller: "a", Callee: "b", Operation: "GET /x", Policy: replay.Policy{MaxAttempts: 1}}}
	for _, f := range Formats() {
		out, err := Emit(f, edges)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if f == FormatGRPC {
			if len(out.Files) != 0 || len(out.Notes) != 1 {
				t.Errorf("grpc: %d files, notes %q", len(out.Files), out.Notes)
			}
			continue
		}
		m := readBack(t, out, modelOf(edges))
		if p := m.Edges[0].Policy; p.MaxAttempts != 1 {
			t.Errorf("%s: %+v", f, p)
		}
	}
}

// TestEmitDeterministic: the same edges, in any order, give byte-identical
// files and notes.
func TestEmitDeterministic(t *testing.T) {
	edges := testEdges()
	for _, f := range Formats() {
		first, err := Emit(f, edges)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			shuffled := slices.Clone(edges)
			slices.Reverse(shuffled)
			if i%2 == 0 {
				shuffled = append(shuffled[len(shuffled)/2:], shuffled[:len(shuffled)/2]...)
			}
			again, err := Emit(f, shuffled)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(first, again) {
				t.Fatalf("%s: run %d differs", f, i)
			}
		}
	}
}
