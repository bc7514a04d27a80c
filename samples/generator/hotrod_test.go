package main

import (
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestHotRODSample checks the committed hotrod files without running
// HotROD: truth.json holds exactly the fields hotrodTruthFile knows, the
// three trace files hold the same spans, one root SERVER span per dispatch,
// and on each edge as many spans as the log counted attempts: the callee's
// SERVER spans, or, for mysql and redis-manual (CLIENT spans under their
// own names, no server side), theirs.
func TestHotRODSample(t *testing.T) {
	var tr hotrodTruthFile
	jsonl := readProgramSample(t, filepath.Join("..", hotrodName), &tr)
	roots, servers := spansOfKind(jsonl, ptrace.SpanKindServer)
	_, clients := spansOfKind(jsonl, ptrace.SpanKindClient)
	if roots != tr.RootRequests || tr.RootAnswers["200"] != tr.RootRequests {
		t.Errorf("%d root spans, answers %v; truth has %d root requests", roots, tr.RootAnswers, tr.RootRequests)
	}
	for _, e := range tr.Edges {
		got := servers[e.Callee+" "+e.Operation]
		if e.Callee == "mysql" || e.Callee == "redis-manual" {
			got = clients[e.Callee+" "+e.Operation]
		}
		if got != e.Attempts || e.Attempts < e.Calls {
			t.Errorf("%s → %s %s: %d spans, truth has %d attempts in %d calls", e.Caller, e.Callee, e.Operation, got, e.Attempts, e.Calls)
		}
	}
}
