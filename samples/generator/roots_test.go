package main

import (
	"context"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestRootClientsScenario runs root-clients with fewer requests end to
// end and holds its traces to its truth: every one of loadgen's and
// batch's attempts is a CLIENT span with no parent, as many as the truth
// counts, batch's each naming its call's Idempotency-Key; each of
// front's calls has one CLIENT span under its SERVER span, and each of its
// retries is a CLIENT span with no parent that starts after the attempt
// before it failed and ends before front's SERVER span does (front waited
// for it), from the same service instance.
func TestRootClientsScenario(t *testing.T) {
	sc := rootClients{loadgen: []rootCase{{3, 0}, {2, 1}, {1, 4}}, batch: []rootCase{{2, 1}, {1, 4}}, front: []rootCase{{2, 0}, {2, 1}, {1, 3}},
		loadgenWorkers: 2, batchWorkers: 3, items: 2}
	out := t.TempDir()
	tr, _, err := runRootClients(context.Background(), sc, out, true)
	if err != nil {
		t.Fatal(err)
	}
	requests := readJSONL(t, filepath.Join(out, rootClientsName, fileOTLPJSON))
	if len(tr.Edges) != 3 {
		t.Fatalf("truth edges %+v", tr.Edges)
	}
	lg, bt, fr := tr.Edges[0], tr.Edges[1], tr.Edges[2]
	// loadgen: 3 + 2·2 + 4 attempts; batch: 2·2 + 4; front: 2 + 2·2 + 3,
	// 1·1 + 2 of them retries.
	if lg.Calls != 6 || lg.Attempts != 11 || lg.RootAttempts != 11 || lg.FailedRootAttempts != 6 || !lg.ExhaustedInTraces {
		t.Errorf("loadgen truth %+v", lg)
	}
	if bt.Calls != 3 || bt.Attempts != 8 || bt.RootAttempts != 8 || bt.FailedRootAttempts != 6 || !bt.ExhaustedInTraces || bt.TracedAsRoots != "keyed" {
		t.Errorf("batch truth %+v", bt)
	}
	if fr.Calls != 5 || fr.Attempts != 9 || fr.RootAttempts != 4 || fr.FailedRootAttempts != 2 || !fr.ExhaustedInTraces {
		t.Errorf("front truth %+v", fr)
	}
	type span struct {
		svc, inst string
		kind      ptrace.SpanKind
		parent    pcommon.SpanID
		start     uint64
		end       uint64
		code      int64
		key       string
	}
	var spans []span
	for _, td := range requests {
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get("service.name")
			inst, _ := rs.Resource().Attributes().Get("service.instance.id")
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					c, _ := sp.Attributes().Get("http.response.status_code")
					key := ""
					if k, ok := sp.Attributes().Get("http.request.header.idempotency-key"); ok && k.Slice().Len() == 1 {
						key = k.Slice().At(0).Str()
					}
					spans = append(spans, span{svc.Str(), inst.Str(), sp.Kind(), sp.ParentSpanID(), uint64(sp.StartTimestamp()), uint64(sp.EndTimestamp()), c.Int(), key})
				}
			}
		}
	}
	count := func(svc string, kind ptrace.SpanKind, root bool) (n int) {
		for _, s := range spans {
			if s.svc == svc && s.kind == kind && s.parent.IsEmpty() == root {
				n++
			}
		}
		return n
	}
	if n, under := count("loadgen", ptrace.SpanKindClient, true), count("loadgen", ptrace.SpanKindClient, false); n != lg.RootAttempts || under != 0 {
		t.Errorf("loadgen: %d root CLIENT spans, %d under a parent; want %d and none", n, under, lg.RootAttempts)
	}
	if n, under := count("batch", ptrace.SpanKindClient, true), count("batch", ptrace.SpanKindClient, false); n != bt.RootAttempts || under != 0 {
		t.Errorf("batch: %d root CLIENT spans, %d under a parent; want %d and none", n, under, bt.RootAttempts)
	}
	keys := map[string]int{}
	for _, s := range spans {
		if s.svc == "batch" && s.kind == ptrace.SpanKindClient {
			keys[s.key]++
		}
	}
	if len(keys) != bt.Calls || keys[""] > 0 {
		t.Errorf("batch's attempts name the Idempotency-Keys %v, want one per call (%d), on every attempt", keys, bt.Calls)
	}
	if n, under := count("front", ptrace.SpanKindClient, true), count("front", ptrace.SpanKindClient, false); n != fr.RootAttempts || under != fr.Calls {
		t.Errorf("front: %d root CLIENT spans, %d under its SERVER spans; want %d and %d", n, under, fr.RootAttempts, fr.Calls)
	}
	// Each front retry started while a SERVER span of front's was still
	// open, after one of front's attempts had failed, same instance.
	for _, r := range spans {
		if r.svc != "front" || r.kind != ptrace.SpanKindClient || !r.parent.IsEmpty() {
			continue
		}
		waited, afterFailure := false, false
		for _, s := range spans {
			switch {
			case s.svc == "front" && s.kind == ptrace.SpanKindServer && s.start < r.start && s.end >= r.end && s.inst == r.inst:
				waited = true
			case s.svc == "front" && s.kind == ptrace.SpanKindClient && s.code == 503 && s.end <= r.start && s.inst == r.inst:
				afterFailure = true
			}
		}
		if !waited || !afterFailure {
			t.Errorf("a front retry at %d: within a front request %v, after a failed attempt %v", r.start, waited, afterFailure)
		}
	}
}
