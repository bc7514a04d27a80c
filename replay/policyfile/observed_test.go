package policyfile

import (
	"reflect"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
)

// TestCompare: configured policy against what the traces show, edge by
// edge, in the words of the three examples, and nothing for edges
// where they agree or the file says nothing of attempts.
func TestCompare(t *testing.T) {
	const file = `
name: r
virtual_hosts:
  - name: inventory
    domains: [inventory]
    routes:
      - match: {prefix: /inventory/}
        route:
          cluster: inventory
          retry_policy: {retry_on: 5xx, num_retries: 2, per_try_timeout: 0.3s}
      - match: {prefix: /reservations}
        route:
          cluster: inventory
          retry_policy: {retry_on: "5xx,retriable-status-codes", retriable_status_codes: [429], num_retries: 2}
  - name: payments
    domains: [payments]
    routes:
      - match: {prefix: /}
        route:
          cluster: payments
          retry_policy: {retry_on: "gateway-error,reset", num_retries: 1}
---
# A budget alone says nothing of attempts: stock is not compared.
name: stock
circuit_breakers: {thresholds: [{retry_budget: {budget_percent: {value: 20}}}]}
`
	f, err := Read("envoy.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	ms := 1000.0
	top := &graph.Topology{Edges: []graph.Edge{
		{Caller: "frontend", Callee: "inventory", Operation: "GET /inventory/{sku}", Calls: 100, Retries: true, MaxAttempts: 5, RetriedStatus: []string{"503"}},
		{Caller: "frontend", Callee: "inventory", Operation: "POST /reservations", Calls: 50, Retries: true, MaxAttempts: 3, RetriedStatus: []string{"429", "503"}},
		{Caller: "frontend", Callee: "payments", Operation: "POST /charges", Calls: 20, Retries: true, MaxAttempts: 2, RetriedStatus: []string{"429", "503"}, PerTryTimeoutMS: &ms},
		{Caller: "frontend", Callee: "stock", Operation: "shop.Stock/Reserve", Calls: 20, Retries: true, MaxAttempts: 4},
	}}
	got := Compare(f, readModel(), top)
	want := []struct{ id, loc, msg string }{
		{FindingConfigAttempts, "frontend → inventory GET /inventory/{sku}", "config allows 3 attempts; traces show up to 5 → another layer retries too"},
		{FindingConfigRetryOn, "frontend → payments POST /charges", "config retries on gateway-error,reset; traces show 429 retried"},
		{FindingConfigNoPerTry, "frontend → payments POST /charges", "no per-try timeout configured; attempts are abandoned at 1 s"},
	}
	var lines []string
	for _, g := range got {
		lines = append(lines, g.ID+" "+g.Location+": "+g.Message)
	}
	all := strings.Join(lines, "\n")
	for _, w := range want {
		if !strings.Contains(all, w.id+" "+w.loc+": "+w.msg) {
			t.Errorf("missing %s %s: %s\ngot:\n%s", w.id, w.loc, w.msg, all)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d findings, want %d:\n%s", len(got), len(want), all)
	}
}

// TestRetryCovers: each kind of status graph labels, against Envoy's and
// gRPC's conditions.
func TestRetryCovers(t *testing.T) {
	tests := []struct {
		retryOn string
		codes   []int
		status  string
		want    bool
	}{
		{"5xx", nil, "503", true},
		{"5xx", nil, "429", false},
		{"retriable-status-codes", []int{429}, "429", true},
		{"gateway-error", nil, "500", false},
		{"gateway-error", nil, "504", true},
		{"reset,connect-failure", nil, "transport error", true},
		{"connect-failure", nil, "timeout", false},
		{"5xx", nil, "timeout", true},
		{"UNAVAILABLE,RESOURCE_EXHAUSTED", nil, "grpc RESOURCE_EXHAUSTED", true},
		{"unavailable", nil, "grpc UNAVAILABLE", true},
		{"UNAVAILABLE", nil, "grpc DEADLINE_EXCEEDED", false},
		{"cancelled,deadline-exceeded", nil, "grpc DEADLINE_EXCEEDED", true},
		{"5xx,429", nil, "429", true},
		{"500-504", nil, "503", true},
		{"500-504", nil, "429", false},
	}
	for _, tt := range tests {
		if got := retryCovers(tt.retryOn, tt.codes, tt.status); got != tt.want {
			t.Errorf("retryCovers(%q, %v, %q) = %v, want %v", tt.retryOn, tt.codes, tt.status, got, tt.want)
		}
	}
}

// TestCompareLinkerd: Linkerd's annotations are compared like Envoy's
// retry_policy: their retry limit and their conditions.
func TestCompareLinkerd(t *testing.T) {
	const file = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: inventory
  annotations: {retry.linkerd.io/http: "5xx", retry.linkerd.io/limit: "1"}
spec:
  parentRefs: [{name: inventory, kind: Service, group: core}]
  rules:
    - matches: [{path: {type: PathPrefix, value: /inventory/}}]
`
	f, err := Read("route.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	top := &graph.Topology{Edges: []graph.Edge{
		{Caller: "frontend", Callee: "inventory", Operation: "GET /inventory/{sku}", Calls: 10, Retries: true, MaxAttempts: 4, RetriedStatus: []string{"429", "503"}},
	}}
	var got []string
	for _, g := range Compare(f, readModel(), top) {
		got = append(got, g.ID+": "+g.Message)
	}
	want := []string{
		FindingConfigAttempts + ": config allows 2 attempts; traces show up to 4 → another layer retries too",
		FindingConfigRetryOn + ": config retries on 5xx; traces show 429 retried",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings\n got %q\nwant %q", got, want)
	}
}
