package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestNodeSamples checks the committed files of every Node scenario without
// running Node (CI has none): the program and its pinned lock file are
// there, truth.json holds exactly the fields nodeTruth knows, the three
// trace files hold the same spans, and the traces hold what the truth says
// was sent: one root SERVER span per root request, and on each edge as
// many callee SERVER spans as the caller made attempts, whatever trace
// they landed in.
func TestNodeSamples(t *testing.T) {
	for _, sc := range nodeScenarios {
		name := sc.Name
		t.Run(name, func(t *testing.T) {
			for _, f := range []string{filepath.Join(sc.Dir, "main.js"), filepath.Join(sc.Dir, "service.js"), "package.json", "package-lock.json"} {
				if _, err := os.Stat(filepath.Join("node", f)); err != nil {
					t.Error(err)
				}
			}
			var tr nodeTruth
			jsonl := readProgramSample(t, filepath.Join("..", name), &tr)
			answered := 0
			for _, c := range tr.RootAnswers {
				answered += c
			}
			roots, servers := spansOfKind(jsonl, ptrace.SpanKindServer)
			if roots != tr.RootRequests || answered != tr.RootRequests {
				t.Errorf("%d root SERVER spans, %d answers; truth has %d root requests", roots, answered, tr.RootRequests)
			}
			for _, e := range tr.Edges {
				if got := servers[e.Callee+" "+e.Operation]; got != e.Attempts {
					t.Errorf("%s → %s %s: %d callee SERVER spans, truth has %d attempts", e.Caller, e.Callee, e.Operation, got, e.Attempts)
				}
				if o := e.AttemptsInOwnTrace; o != nil && (*o > e.Attempts || *o < e.Calls) {
					t.Errorf("%s → %s: %d attempts in their own traces of %d, for %d calls", e.Caller, e.Callee, *o, e.Attempts, e.Calls)
				}
				checkBreakerTruth(t, e)
				checkHedgeTruth(t, e)
			}
			if l := tr.ContextLeaks; l != nil && l.Late+l.Repeated == 0 {
				t.Error("context_leaks written with none")
			}
		})
	}
}

// checkBreakerTruth holds a breaker's truth to itself: around a call that
// does not retry, the calls it failed fast are the calls that sent no
// request; and a breaker that trips on a failure rate must have shown it,
// letting a call through after as many failures in a row as the fewest it
// opened after (else a consecutive-failure rule explains the run).
func checkBreakerTruth(t *testing.T, e nodeEdge) {
	t.Helper()
	b := e.Breaker
	if b == nil {
		return
	}
	if !e.Retries && e.Calls-e.Attempts != b.FastFailedCalls {
		t.Errorf("%s → %s: %d calls, %d attempts, yet %d failed fast", e.Caller, e.Callee, e.Calls, e.Attempts, b.FastFailedCalls)
	}
	if b.ErrorThresholdPercentage > 0 && (b.OpenPeriods == 0 || b.FewestFailuresInARow == 0 || b.MostLetThrough < b.FewestFailuresInARow) {
		t.Errorf("%s → %s: a failure-rate breaker opened %d times, after %d failures in a row at fewest, let a call through after %d: the run does not tell its rule",
			e.Caller, e.Callee, b.OpenPeriods, b.FewestFailuresInARow, b.MostLetThrough)
	}
}

// checkHedgeTruth holds a hedge's truth to itself: a hedged call sent at
// most max_hedges+1 requests and at least two, no more calls were hedged
// or answered by an attempt than were made, and every call kept at least
// one attempt its caller did not cancel.
func checkHedgeTruth(t *testing.T, e nodeEdge) {
	t.Helper()
	h := e.Hedge
	if h == nil {
		return
	}
	won := 0
	for _, n := range h.WonByAttempt {
		won += n
	}
	if h.MostRequests > h.MaxHedges+1 || h.MostRequests < 2 || h.HedgedCalls > e.Calls || won > e.Calls ||
		len(h.WonByAttempt) > h.MaxHedges+1 || h.CancelledAttempts > e.Attempts-e.Calls {
		t.Errorf("%s → %s: hedge %+v for %d calls and %d attempts: it contradicts itself", e.Caller, e.Callee, *h, e.Calls, e.Attempts)
	}
}

// readProgramSample reads a committed scenario whose truth a program wrote:
// its truth.json into tr, holding exactly the fields tr knows, and its
// OTLP JSON lines, after checking that the three trace files hold the same
// spans.
func readProgramSample(t *testing.T, dir string, tr any) []ptrace.Traces {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fileTruth))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(tr); err != nil {
		t.Fatalf("truth.json: %v", err)
	}
	jsonl := readJSONL(t, filepath.Join(dir, fileOTLPJSON))
	n, nProto, nJaeger := spanCount(jsonl), spanCount(readBinpb(t, filepath.Join(dir, fileOTLPProto))), readJaeger(t, filepath.Join(dir, fileJaeger))
	if n == 0 || n != nProto || n != nJaeger {
		t.Fatalf("span counts differ: jsonl %d, binpb %d, jaeger %d", n, nProto, nJaeger)
	}
	return jsonl
}

// spansOfKind counts the root spans and the spans of kind per "service
// operation", the operation being http.route or, for RPCs,
// rpc.service/rpc.method (else the span name).
func spansOfKind(requests []ptrace.Traces, kind ptrace.SpanKind) (roots int, byOp map[string]int) {
	byOp = map[string]int{}
	for _, td := range requests {
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get("service.name")
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					if sp.ParentSpanID().IsEmpty() {
						roots++
					}
					if sp.Kind() != kind {
						continue
					}
					op := sp.Name()
					attrs := sp.Attributes()
					if r, ok := attrs.Get("http.route"); ok {
						op = r.Str()
					} else if svc, ok := attrs.Get("rpc.service"); ok {
						if m, ok := attrs.Get("rpc.method"); ok {
							op = svc.Str() + "/" + m.Str()
						}
					}
					byOp[svc.Str()+" "+op]++
				}
			}
		}
	}
	return roots, byOp
}
