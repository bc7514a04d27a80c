package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestShortHedgedHTTP runs hedgedhttp and hedgedhttp-below with one root
// request per case and holds their truth to the fault scripts and to the
// spans: a call is hedged exactly when its first request takes longer than
// the hedge delay; no call sends more than upto requests to db (two aborts
// in a row make three, whoever sends them again); db's SERVER spans are
// the requests truth counts; above the instrumentation each request
// hedgedhttp sent is a CLIENT span of its own (net/http's resends on a new
// connection are not), below it each call is one CLIENT span.
func TestShortHedgedHTTP(t *testing.T) {
	for _, sc := range []Scenario{hedgedHTTPAbove(), hedgedHTTPBelow()} {
		t.Run(sc.Name, func(t *testing.T) {
			below := sc.Edges[len(sc.Edges)-1].Policy.BelowInstrumentation
			sc.Name = "short"
			wantHedged, calls := 0, 0
			var hedge *HedgePolicy
			for _, e := range sc.Edges {
				if e.Policy.Hedge != nil {
					hedge = e.Policy.Hedge
				}
			}
			for i := range sc.Cases {
				sc.Cases[i].Count = 1
				calls++
				if s := sc.Cases[i].Script; len(s) > 0 && s[0].Delay > hedge.Delay {
					wantHedged++
				}
			}
			out := t.TempDir()
			if _, _, err := runScenario(context.Background(), sc, out, true); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(out, sc.Name)
			var tr truth
			readJSON(t, filepath.Join(dir, fileTruth), &tr)
			i := slices.IndexFunc(tr.Edges, func(e truthEdge) bool { return e.Hedge != nil })
			if i < 0 {
				t.Fatal("no hedged edge in the truth")
			}
			e := tr.Edges[i]
			h := e.Hedge
			if h.Library != libHedgedhttp || h.DelayMS != hedge.Delay.Milliseconds() || h.MaxHedges != hedge.MaxHedges ||
				e.MaxAttempts != hedge.MaxHedges+1 || !e.Retries || e.BelowInstrumentation != below {
				t.Errorf("truth %+v, hedge %+v: not the policy that ran (%+v, below the instrumentation %v)", e, *h, *hedge, below)
			}
			if h.HedgedCalls != wantHedged || h.MostRequests != hedge.MaxHedges+1 {
				t.Errorf("%d hedged calls, up to %d requests; the scripts make %d hedged, up to %d", h.HedgedCalls, h.MostRequests, wantHedged, hedge.MaxHedges+1)
			}
			if !slices.Equal(e.NotRetriedStatus, []int{503}) || len(e.RetriedStatus) != 0 {
				t.Errorf("retried %v, not retried %v: hedgedhttp takes any answer, a 503 too", e.RetriedStatus, e.NotRetriedStatus)
			}
			if won := sumInts(h.WonByAttempt); won != calls {
				t.Errorf("%d calls answered by one of their requests, want every one of the %d", won, calls)
			}
			clients, servers := 0, 0
			for _, td := range readJSONL(t, filepath.Join(dir, fileOTLPJSON)) {
				for _, rs := range td.ResourceSpans().All() {
					svc, _ := rs.Resource().Attributes().Get("service.name")
					for _, ss := range rs.ScopeSpans().All() {
						for _, sp := range ss.Spans().All() {
							switch {
							case svc.Str() == "db" && sp.Kind() == ptrace.SpanKindServer:
								servers++
							case svc.Str() == "inventory" && sp.Kind() == ptrace.SpanKindClient:
								clients++
							}
						}
					}
				}
			}
			wantClients := e.Attempts - h.TransportResends
			if below {
				wantClients = calls
			}
			if servers != e.Attempts || clients != wantClients {
				t.Errorf("traces hold %d db SERVER spans and %d inventory CLIENT spans; truth %d requests (%d resent by net/http), want %d client spans",
					servers, clients, e.Attempts, h.TransportResends, wantClients)
			}
		})
	}
}
