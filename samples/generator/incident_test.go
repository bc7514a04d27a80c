package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestIncidentScenario runs a short incident scenario end to end (3 s at
// 20 requests/s, the ledger down from 1 s to 2 s) and checks that the
// three files parse and agree, that the truth names the incident window
// and the gRPC edge, and that the incident shows in the traces: ledger
// attempts answered 503 inside the window and retried over gRPC by quotes.
func TestIncidentScenario(t *testing.T) {
	out := t.TempDir()
	shape := incidentShape{Rate: 20, Roots: 60, At: time.Second, For: time.Second}
	if _, err := runIncident(context.Background(), out, shape); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, incidentName)
	jsonl := readJSONL(t, filepath.Join(dir, fileOTLPJSON))
	binpb := readBinpb(t, filepath.Join(dir, fileOTLPProto))
	if n := spanCount(jsonl); n == 0 || n != spanCount(binpb) || n != readJaeger(t, filepath.Join(dir, fileJaeger)) {
		t.Fatalf("span counts differ between the three files")
	}
	var tr incidentTruth
	readJSON(t, filepath.Join(dir, fileTruth), &tr)
	if tr.RootRequests != 60 || tr.Incident.Service != "ledger" || tr.Incident.AtMS != 1000 || tr.Incident.ForMS != 1000 {
		t.Fatalf("truth %+v", tr)
	}
	grpcEdge := false
	for _, e := range tr.Edges {
		grpcEdge = grpcEdge || e.Caller == "quotes" && e.Callee == "stock" && e.MaxAttempts == 4 && e.Library != nil && *e.Library == libGRPC
	}
	if !grpcEdge {
		t.Errorf("truth has no gRPC edge quotes → stock: %+v", tr.Edges)
	}
	// The ledger answered 503 only inside the window, and some of it.
	unavailable := 0
	for _, td := range jsonl {
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get("service.name")
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					code, ok := sp.Attributes().Get("http.response.status_code")
					if svc.Str() == "ledger" && sp.Kind() == ptrace.SpanKindServer && ok && code.Int() == 503 {
						unavailable++
					}
				}
			}
		}
	}
	if unavailable == 0 {
		t.Error("no ledger answer was a 503: the incident is not in the traces")
	}
}
