package policyfile

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
)

// readModel is a frontend calling inventory (an HTTP read and a write),
// payments, and stock and ledger over gRPC, every edge without retries.
func readModel() *replay.Model {
	m := &replay.Model{
		Services: []replay.Service{
			{Name: "frontend", Workers: 8, Ops: []replay.Op{{Name: "GET /", Time: replay.Constant(0.001), Calls: []int{0, 1, 2, 3, 4}}}},
			{Name: "inventory", Workers: 4, Ops: []replay.Op{{Name: "GET /inventory/{sku}", Time: replay.Constant(0.01)}, {Name: "POST /reservations", Time: replay.Constant(0.01)}}},
			{Name: "payments", Workers: 4, Ops: []replay.Op{{Name: "POST /charges", Time: replay.Constant(0.01)}}},
			{Name: "stock", Workers: 4, Ops: []replay.Op{{Name: "shop.Stock/Reserve", Time: replay.Constant(0.01)}}},
			{Name: "ledger", Workers: 4, Ops: []replay.Op{{Name: "shop.Ledger/Append", Time: replay.Constant(0.01)}}},
		},
		Entry: []replay.Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:  10,
	}
	for i, to := range [][2]int{{1, 0}, {1, 1}, {2, 0}, {3, 0}, {4, 0}} {
		_ = i
		m.Edges = append(m.Edges, replay.Edge{Caller: 0, Callee: to[0], CalleeOp: to[1], Prob: 1, Repeat: 1, Policy: replay.Policy{MaxAttempts: 1}})
	}
	return m
}

// Edges of readModel.
const (
	eInvRead = iota
	eInvWrite
	ePayments
	eStock
	eLedger
)

// TestReadProjectFiles reads real-shaped files of each project (written
// from the projects' documented examples) and checks every edge's
// resulting policy, what matched nothing, and what is noted as not
// simulated.
func TestReadProjectFiles(t *testing.T) {
	none := replay.Policy{MaxAttempts: 1}
	envoyBackoff := func(base, cp float64) replay.Backoff {
		return replay.Backoff{Kind: replay.BackoffExponential, Base: base, Multiplier: 2, Cap: cp, Jitter: replay.JitterFull}
	}
	tests := []struct {
		file      string
		want      map[int]replay.Policy // edges not listed keep none
		unmatched []string
		notes     []string
	}{
		{
			file: "grpc-service-config.json",
			want: map[int]replay.Policy{
				eStock: {MaxAttempts: 4, Deadline: 1.5, Backoff: envoyBackoff(0.1, 1), Budget: replay.BudgetSpec{Kind: replay.BudgetGRPC, Max: 10, Ratio: 0.1}},
				eLedger: {MaxAttempts: 2, Backoff: replay.Backoff{Kind: replay.BackoffExponential, Base: 0.05, Multiplier: 1.5, Cap: 0.2, Jitter: replay.JitterFull},
					Budget: replay.BudgetSpec{Kind: replay.BudgetGRPC, Max: 10, Ratio: 0.1}},
			},
		},
		{
			file: "envoy-route.yaml",
			want: map[int]replay.Policy{
				eInvRead: {MaxAttempts: 4, PerTryTimeout: 0.25, Backoff: envoyBackoff(0.025, 0.4), HonorRetryAfter: true,
					Budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 25, Min: 5}},
				eInvWrite: {MaxAttempts: 2, Deadline: 2, Backoff: envoyBackoff(0.025, 0.25), Budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 25, Min: 5}},
			},
			unmatched: []string{"virtual_hosts[1] reviews"},
			notes:     []string{"retry_host_predicate", "retriable_status_codes [503]"},
		},
		{
			// The virtual host's retry_policy for routes without one; the
			// first matching route wins; Envoy's default 15s timeout.
			file: "envoy-bootstrap.yaml",
			want: map[int]replay.Policy{
				eInvRead: {MaxAttempts: 5, PerTryTimeout: 0.2, Deadline: 15, Backoff: envoyBackoff(0.025, 0.25),
					Budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 30, Min: 2}},
				eInvWrite: {MaxAttempts: 3, Deadline: 1, Backoff: envoyBackoff(0.025, 0.25),
					Budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 30, Min: 2}},
				ePayments: {MaxAttempts: 3, Deadline: 15, Backoff: envoyBackoff(0.025, 0.25)},
			},
			notes: []string{"Envoy's default 15s deadline", "route_config 1", "max_retries 50 bounds concurrent retries"},
		},
		{
			file: "istio.yaml",
			want: map[int]replay.Policy{
				eInvRead:  {MaxAttempts: 4, PerTryTimeout: 0.5, Deadline: 3, Backoff: envoyBackoff(0.025, 0.25), Budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 20, Min: 3}},
				eInvWrite: {MaxAttempts: 1, Backoff: envoyBackoff(0.025, 0.25), Budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 20, Min: 3}},
				ePayments: {MaxAttempts: 3, Backoff: envoyBackoff(0.025, 0.25)},
			},
			unmatched: []string{"DestinationRule ratings"},
			notes:     []string{"Istio's default applies", "outlierDetection ejects hosts"},
		},
		{
			file: "linkerd.yaml",
			want: map[int]replay.Policy{
				eInvRead:  {MaxAttempts: 3, PerTryTimeout: 0.3, Deadline: 2, Backoff: replay.Backoff{Kind: replay.BackoffImmediate}},
				eStock:    {MaxAttempts: 4, Backoff: replay.Backoff{Kind: replay.BackoffImmediate}},
				ePayments: {MaxAttempts: 1, Deadline: 0.8, Budget: replay.BudgetSpec{Kind: replay.BudgetFinagle, Window: 10, Min: 10, Ratio: 0.2}},
			},
			notes: []string{"Linkerd retries without backoff"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile("testdata/real/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Read(tt.file, data)
			if err != nil {
				t.Fatal(err)
			}
			m := readModel()
			got, err := f.Apply(m)
			if err != nil {
				t.Fatal(err)
			}
			for i := range m.Edges {
				want, ok := tt.want[i]
				if !ok {
					want = none
				}
				if g := got.Edges[i].Policy; !reflect.DeepEqual(g, want) {
					t.Errorf("edge %d (%s):\n got %+v\nwant %+v", i, m.Services[m.Edges[i].Callee].Ops[m.Edges[i].CalleeOp].Name, g, want)
				}
			}
			um := strings.Join(f.Unmatched(m), "\n")
			for _, s := range tt.unmatched {
				if !strings.Contains(um, s) {
					t.Errorf("unmatched lacks %q:\n%s", s, um)
				}
			}
			if tt.unmatched == nil && um != "" {
				t.Errorf("unexpected unmatched:\n%s", um)
			}
			notes := strings.Join(f.Notes(), "\n")
			for _, s := range tt.notes {
				if !strings.Contains(notes, s) {
					t.Errorf("notes lack %q:\n%s", s, notes)
				}
			}
		})
	}
}

// TestReadKubectlList: kubectl get -o yaml writes a List; its items read as
// the documents would.
func TestReadKubectlList(t *testing.T) {
	const list = `apiVersion: v1
kind: List
items:
  - apiVersion: networking.istio.io/v1
    kind: VirtualService
    metadata: {name: payments}
    spec:
      hosts: [payments.shop.svc.cluster.local]
      http:
        - route: [{destination: {host: payments.shop.svc.cluster.local}}]
          retries: {attempts: 4, perTryTimeout: 1s}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: unrelated}
`
	f, err := Read("list.yaml", []byte(list))
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.Apply(readModel())
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Edges[ePayments].Policy; p.MaxAttempts != 5 || p.PerTryTimeout != 1 {
		t.Errorf("payments: %+v", p)
	}
	if notes := strings.Join(f.Notes(), "\n"); !strings.Contains(notes, "items[1] ConfigMap unrelated: v1 is not a policy resource") {
		t.Errorf("notes:\n%s", notes)
	}
}

// TestEnvoyCircuitBreakers: a cluster's DEFAULT-priority circuit breakers
// set the edge's limit on requests out (max_requests) and, without a
// retry_budget, max_retries' cap on retries out, as a retry budget of 0%
// with that floor; a retry_budget overrides max_retries, as in Envoy;
// MaxUint32 is no limit; other priorities are not read.
func TestEnvoyCircuitBreakers(t *testing.T) {
	file := `name: inventory
circuit_breakers:
  thresholds:
    - {max_requests: 100, max_retries: 3, max_pending_requests: 50}
    - {priority: HIGH, max_requests: 5}
---
name: payments
circuit_breakers:
  thresholds:
    - {max_retries: 10, retry_budget: {budget_percent: {value: 30}, min_retry_concurrency: 2}}
---
name: stock
circuit_breakers:
  thresholds:
    - {max_requests: 4294967295, max_retries: 4294967295}
`
	f, err := Read("clusters.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Apply(readModel())
	if err != nil {
		t.Fatal(err)
	}
	capped := replay.Policy{MaxAttempts: 1, MaxRequests: 100, Budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 0, Min: 3}}
	for e, want := range map[int]replay.Policy{
		eInvRead: capped, eInvWrite: capped,
		ePayments: {MaxAttempts: 1, Budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 30, Min: 2}},
		eStock:    {MaxAttempts: 1},
	} {
		if g := got.Edges[e].Policy; !reflect.DeepEqual(g, want) {
			t.Errorf("edge %d:\n got %+v\nwant %+v", e, g, want)
		}
	}
	notes := strings.Join(f.Notes(), "\n")
	for _, s := range []string{"max_retries 10 bounds concurrent retries only without a retry_budget", "max_pending_requests bound a connection pool, which is not simulated"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes lack %q:\n%s", s, notes)
		}
	}
}
