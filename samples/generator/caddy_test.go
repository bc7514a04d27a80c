package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestCaddySample checks the committed caddy-replicas files without
// running Caddy: truth.json holds exactly the fields caddyTruthFile
// knows, the three trace files hold the same spans, one root SERVER span
// per root request, Caddy emits one SERVER span per request and no CLIENT
// span, every replica SERVER span hangs directly under a Caddy SERVER
// span, their number is the attempts the replicas answered, and they come
// from as many service.instance.id as the truth counts replicas.
func TestCaddySample(t *testing.T) {
	var tr caddyTruthFile
	jsonl := readProgramSample(t, filepath.Join("..", caddyName), &tr)
	if len(tr.Edges) != 2 {
		t.Fatalf("%d edges in truth.json, want shop → %s and %s → catalog", len(tr.Edges), tr.Proxy.Service, tr.Proxy.Service)
	}
	front, proxied := tr.Edges[0], tr.Edges[1]
	type spanOf struct {
		service, instance string
		kind              ptrace.SpanKind
		parent            string
	}
	spans := map[string]spanOf{}
	roots := 0
	for _, td := range jsonl {
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get("service.name")
			inst, _ := rs.Resource().Attributes().Get("service.instance.id")
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					spans[sp.SpanID().String()] = spanOf{svc.Str(), inst.Str(), sp.Kind(), sp.ParentSpanID().String()}
					if sp.ParentSpanID().IsEmpty() {
						roots++
					}
				}
			}
		}
	}
	proxyServers, replicaServers := 0, 0
	instances := map[string]bool{}
	for id, sp := range spans {
		switch {
		case sp.service == tr.Proxy.Service && sp.kind != ptrace.SpanKindServer:
			t.Errorf("span %s: Caddy emitted a %v span", id, sp.kind)
		case sp.service == tr.Proxy.Service:
			proxyServers++
		case sp.service == proxied.Callee:
			replicaServers++
			instances[sp.instance] = true
			if p, ok := spans[sp.parent]; !ok || p.service != tr.Proxy.Service || p.kind != ptrace.SpanKindServer {
				t.Errorf("replica span %s: parent %+v, want a SERVER span of %s", id, p, tr.Proxy.Service)
			}
		}
	}
	answered := 0
	for _, n := range tr.RootAnswers {
		answered += n
	}
	if roots != tr.RootRequests || answered != tr.RootRequests || front.Calls != tr.RootRequests || proxyServers != front.Attempts {
		t.Errorf("%d roots, %d answers, %d Caddy spans; truth has %d root requests, shop made %d calls and %d attempts",
			roots, answered, proxyServers, tr.RootRequests, front.Calls, front.Attempts)
	}
	if replicaServers != proxied.Attempts || len(instances) != proxied.Replicas || proxied.Layer != "proxy" {
		t.Errorf("%d replica spans from %d instances; truth has %d attempts on %d replicas (layer %q)",
			replicaServers, len(instances), proxied.Attempts, proxied.Replicas, proxied.Layer)
	}
}

// TestCaddyTruth builds the truth from hand-written reports: tries are
// read from Caddy's log and must agree with what the replicas received;
// refused dials are tries no replica saw; a call is exhausted when it
// made retries+1 tries and the last one failed.
func TestCaddyTruth(t *testing.T) {
	const head = `{"caddy_version":"v2.11.9","config":{"service":"caddy","lb_policy":"round_robin","retries":2,"try_interval_ms":10,
		"retry_status":[502,503,504],"caddy_json":{}},"replicas":[{"instance":"c-1","address":"a:1"},{"instance":"c-2","address":"a:2"},{"instance":"c-3","address":"a:3"}],"roots":[`
	for _, tc := range []struct {
		name, roots string
		err         string
		check       func(t *testing.T, tr caddyTruthFile)
	}{
		{
			name: "exhausted calls, refused dials, a 400 passed on",
			roots: `{"item":"1","answer":503,"tries":[{"upstream":"a:1","status":503},{"upstream":"a:2","status":503},{"upstream":"a:3","status":503}],
				"received":[{"instance":"c-1","status":503},{"instance":"c-2","status":503},{"instance":"c-3","status":503}]},
				{"item":"2","answer":200,"tries":[{"upstream":"a:3","error":"dial tcp a:3: connect: connection refused"},{"upstream":"a:1","status":200}],
				"received":[{"instance":"c-1","status":200}]},
				{"item":"3","answer":400,"tries":[{"upstream":"a:2","status":400}],"received":[{"instance":"c-2","status":400}]},
				{"item":"4","answer":502,"tries":[{"upstream":"a:1","status":503},{"upstream":"a:2","status":503},{"upstream":"a:3","error":"dial tcp a:3: connect: connection refused"}],
				"received":[{"instance":"c-1","status":503},{"instance":"c-2","status":503}]}`,
			check: func(t *testing.T, tr caddyTruthFile) {
				e := tr.Edges[1]
				if e.Calls != 4 || e.Attempts != 7 || e.RefusedDials != 2 || e.CallsWithRefusedDial != 2 || !e.ExhaustedInTraces || e.ExhaustedCalls != 2 || e.ExhaustedWithRefusedDial != 1 ||
					e.MaxAttempts != 3 || e.Replicas != 3 || e.Layer != "proxy" || !e.BelowInstrumentation {
					t.Errorf("caddy → catalog %+v", e)
				}
				if got := jsonOf(t, e.RetriedStatus) + " " + jsonOf(t, e.NotRetriedStatus); got != "[503] [400]" {
					t.Errorf("retried, not retried: %s", got)
				}
				if f := tr.Edges[0]; f.Retries || f.Calls != 4 || f.Attempts != 4 || jsonOf(t, f.NotRetriedStatus) != "[400,502,503]" {
					t.Errorf("shop → caddy %+v", f)
				}
				if tr.RootAnswers["200"] != 1 || tr.Paths[0].WorstCaseAmplification != 3 {
					t.Errorf("answers %v, paths %+v", tr.RootAnswers, tr.Paths)
				}
			},
		},
		{
			name: "two tries that gave up early: not exhausted",
			roots: `{"item":"1","answer":200,"tries":[{"upstream":"a:1","status":502},{"upstream":"a:2","status":200}],
				"received":[{"instance":"c-1","status":502},{"instance":"c-2","status":200}]}`,
			check: func(t *testing.T, tr caddyTruthFile) {
				if e := tr.Edges[1]; e.ExhaustedInTraces || e.Attempts != 2 || e.Replicas != 2 || jsonOf(t, e.NotRetriedStatus) != "[]" {
					t.Errorf("caddy → catalog %+v", e)
				}
			},
		},
		{
			name:  "a try the replica recorded on another instance",
			roots: `{"item":"1","answer":200,"tries":[{"upstream":"a:1","status":200}],"received":[{"instance":"c-2","status":200}]}`,
			err:   "the replica recorded c-2",
		},
		{
			name:  "a request no try explains",
			roots: `{"item":"1","answer":200,"tries":[{"upstream":"a:1","status":200}],"received":[{"instance":"c-1","status":200},{"instance":"c-1","status":200}]}`,
			err:   "the replicas received 2 requests",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rep caddyReport
			if err := json.Unmarshal([]byte(head+tc.roots+"]}"), &rep); err != nil {
				t.Fatal(err)
			}
			tr, err := caddyTruth(rep)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one saying %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				tc.check(t, tr)
			}
		})
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
