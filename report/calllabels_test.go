package report

import (
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
)

// TestCallGraphOperationLabels: a link carrying a retried GET and a POST
// that is not retried labels each, not only the worst.
func TestCallGraphOperationLabels(t *testing.T) {
	top := &graph.Topology{Schema: graph.Schema, Edges: []graph.Edge{
		{Caller: "api", Callee: "inventory", Operation: "GET /items/{id}", Calls: 10, Attempts: 14, Retries: true, MaxAttempts: 3,
			Backoff: graph.Backoff{Kind: "exponential", BaseMS: 20}},
		{Caller: "api", Callee: "inventory", Operation: "POST /reservations", Calls: 5, Attempts: 5},
		{Caller: "edge", Callee: "api", Operation: "GET /orders/{id}", Calls: 10, Attempts: 10},
	}}
	sg := layoutCallGraph(newCallGraph(top))
	var got []string
	for _, l := range sg.Links {
		var texts []string
		for _, x := range l.Labels {
			texts = append(texts, x.Text)
		}
		got = append(got, l.From+">"+l.To+": "+strings.Join(texts, " | "))
	}
	want := []string{
		"api>inventory: GET /items/{id} ×≥3 (exp 20ms) | POST /reservations: no retry",
		"edge>api: 10 calls",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("labels:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
