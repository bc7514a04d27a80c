package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
)

func TestCheckTraceURL(t *testing.T) {
	for tmpl, ok := range map[string]bool{
		"http://jaeger:16686/trace/{trace_id}":                                    true,
		"https://grafana/explore?left={\"queries\":[{\"query\":\"{trace_id}\"}]}": true,
		"http://jaeger:16686/trace/":                                              false,
		"ftp://x/{trace_id}":                                                      false,
		"/trace/{trace_id}":                                                       false,
	} {
		if err := CheckTraceURL(tmpl); (err == nil) != ok {
			t.Errorf("%s: %v", tmpl, err)
		}
	}
}

// TestTraceLinks: with a template the Markdown findings and edges and the
// HTML findings link their example traces; without one nothing changes.
func TestTraceLinks(t *testing.T) {
	ex := []graph.Example{{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanIDs: []string{"00f067aa0ba902b7"}}}
	top := &graph.Topology{Schema: graph.Schema,
		Edges:    []graph.Edge{{Caller: "api", Callee: "db", Operation: "GET /x", Calls: 1, Attempts: 2, Retries: true, MaxAttempts: 2, Examples: ex}},
		Findings: []graph.Finding{{ID: graph.FindingNoJitter, Severity: graph.SeverityMedium, Location: "api → db GET /x", Message: "m", Examples: ex}},
	}
	const tmpl = "http://jaeger:16686/trace/{trace_id}?uiFind={span_id}&x=(y)"
	const link = "http://jaeger:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736?uiFind=00f067aa0ba902b7&x=%28y%29"
	var plain, linked bytes.Buffer
	if err := TopologyMarkdown(&plain, top); err != nil {
		t.Fatal(err)
	}
	if err := TopologyMarkdown(With(&linked, Options{TraceURL: tmpl}), top); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "traces:") {
		t.Error("links without a template")
	}
	for _, want := range []string{
		"- api → db GET /x (traces: [4bf92f35](" + link + "))",
		"— api → db GET /x: m (traces: [4bf92f35](" + link + "))",
	} {
		if !strings.Contains(linked.String(), want) {
			t.Errorf("no %q in\n%s", want, linked.String())
		}
	}
	var html bytes.Buffer
	if err := AuditHTML(With(&html, Options{TraceURL: tmpl}), &AuditReport{Topology: top}); err != nil {
		t.Fatal(err)
	}
	if want := `<a href="http://jaeger:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736?uiFind=00f067aa0ba902b7&amp;x=%28y%29">4bf92f35</a>`; !strings.Contains(html.String(), want) {
		t.Errorf("no %s in the HTML findings", want)
	}
	// The HTML edges table links each edge's example traces in a column of
	// its own, only with a template.
	if want := `<th>example traces</th>`; !strings.Contains(html.String(), want) {
		t.Errorf("no %s in the HTML edges table", want)
	}
	edges := html.String()[strings.Index(html.String(), `<section id="topology">`):]
	if want := `<td><a href="http://jaeger:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736?uiFind=00f067aa0ba902b7&amp;x=%28y%29">4bf92f35</a></td></tr>`; !strings.Contains(edges, want) {
		t.Errorf("no %s in the HTML edges table", want)
	}
	html.Reset()
	if err := AuditHTML(&html, &AuditReport{Topology: top}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html.String(), "example traces") || strings.Contains(html.String(), "<a href=\"http") {
		t.Error("HTML links without a template")
	}
}
