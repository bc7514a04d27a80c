package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestTraefikSample checks the committed traefik-replicas files without
// running the scenario: truth.json holds exactly the fields
// traefikTruthFile knows and the three trace files the same spans; the
// proxy's spans are its entrypoint's SERVER spans (one per call shop
// made), INTERNAL spans and a CLIENT span "ReverseProxy" per try, naming
// the replica dialled in server.address and server.port; each route has
// as many CLIENT spans as the truth has attempts, and as many of them
// without a replica span under them as refused dials; every replica span
// hangs under a CLIENT span of the proxy; the detailed route has one
// "Retry" span per try, a resend count on every one but each call's
// first.
func TestTraefikSample(t *testing.T) {
	var tr traefikTruthFile
	jsonl := readProgramSample(t, filepath.Join("..", "..", "graph", "testdata", traefikName), &tr)
	type spanOf struct {
		service, instance, name, path string
		kind                          ptrace.SpanKind
		parent                        string
		resend, hasAddr               bool
	}
	spans := map[string]spanOf{}
	for _, td := range jsonl {
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get("service.name")
			inst, _ := rs.Resource().Attributes().Get("service.instance.id")
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					s := spanOf{service: svc.Str(), instance: inst.Str(), name: sp.Name(), kind: sp.Kind(), parent: sp.ParentSpanID().String()}
					attrs := sp.Attributes()
					if u, ok := attrs.Get("url.full"); ok {
						s.path = u.Str()
					} else if p, ok := attrs.Get("url.path"); ok {
						s.path = p.Str()
					}
					_, s.resend = attrs.Get("http.request.resend_count")
					_, addr := attrs.Get("server.address")
					_, port := attrs.Get("server.port")
					s.hasAddr = addr && port
					spans[sp.SpanID().String()] = s
				}
			}
		}
	}
	if len(tr.Edges) != 2*len(traefikSettings.Routes) {
		t.Fatalf("%d edges in truth.json, want shop → %s and %s → catalog per route", len(tr.Edges), tr.Proxy.Service, tr.Proxy.Service)
	}
	served := map[string]bool{}
	for _, sp := range spans {
		if sp.service == "catalog" {
			served[sp.parent] = true
		}
	}
	for i, rt := range traefikSettings.Routes {
		front, proxied := tr.Edges[2*i], tr.Edges[2*i+1]
		var servers, clients, refused, retries, resends, replicas int
		instances := map[string]bool{}
		for id, sp := range spans {
			if !strings.Contains(sp.path, rt.Prefix) {
				continue
			}
			switch {
			case sp.service == tr.Proxy.Service && sp.kind == ptrace.SpanKindServer:
				servers++
			case sp.service == tr.Proxy.Service && sp.kind == ptrace.SpanKindClient:
				clients++
				if !sp.hasAddr || sp.name != "ReverseProxy" {
					t.Errorf("client span %s: %q, server.address and port %v", id, sp.name, sp.hasAddr)
				}
				if !served[id] {
					refused++
				}
				// The Retry span is the CLIENT span's grandparent.
				if svc, ok := spans[sp.parent]; ok {
					if r, ok := spans[svc.parent]; ok && r.name == "Retry" {
						retries++
						if r.resend {
							resends++
						}
					}
				}
			case sp.service == "catalog":
				replicas++
				instances[sp.instance] = true
				if p := spans[sp.parent]; p.service != tr.Proxy.Service || p.kind != ptrace.SpanKindClient {
					t.Errorf("replica span %s: parent %+v, want a CLIENT span of %s", id, p, tr.Proxy.Service)
				}
			}
		}
		if servers != front.Attempts || front.Calls != front.Attempts || clients != proxied.Attempts || refused != proxied.RefusedDials ||
			replicas != proxied.Attempts-proxied.RefusedDials || len(instances) != proxied.Replicas || proxied.Layer != "proxy" {
			t.Errorf("route %s: %d proxy SERVER spans, %d CLIENT spans (%d without a replica span), %d replica spans from %d instances; truth %+v / %+v",
				rt.Router, servers, clients, refused, replicas, len(instances), front, proxied)
		}
		wantRetries, wantResends := 0, 0
		if rt.Detailed {
			wantRetries, wantResends = proxied.Attempts, proxied.Attempts-proxied.Calls
		}
		if retries != wantRetries || resends != wantResends {
			t.Errorf("route %s: %d Retry spans, %d with a resend count; want %d and %d", rt.Router, retries, resends, wantRetries, wantResends)
		}
	}
}

// TestTraefikTruth builds the truth from hand-written runs: the proxy's
// tries must agree with what the replicas received and with the retry
// policy (attempts 3, status 503, any try whose request never left).
func TestTraefikTruth(t *testing.T) {
	cfg := traefikSettings
	cfg.Routes = cfg.Routes[:1]
	cfg.InitialInterval = 20 * time.Millisecond
	refused := traefikTry{Upstream: "a:3", Status: 502, Error: "dial tcp a:3: connect: connection refused"}
	sent := func(up string, status int) traefikTry { return traefikTry{Upstream: up, Sent: true, Status: status} }
	got := func(inst string, status int) traefikReceipt { return traefikReceipt{Instance: inst, Status: status} }
	for _, tc := range []struct {
		name  string
		roots []traefikRoot
		err   string
		check func(t *testing.T, tr traefikTruthFile)
	}{
		{
			name: "exhausted, refused then answered, reset, 500 passed on",
			roots: []traefikRoot{
				{Item: "1", Route: 0, Answer: 503, Tries: []traefikTry{sent("a:1", 503), sent("a:2", 503), sent("a:3", 503)},
					Received: []traefikReceipt{got("c-1", 503), got("c-2", 503), got("c-3", 503)}},
				{Item: "2", Route: 0, Answer: 200, Tries: []traefikTry{refused, sent("a:1", 200)}, Received: []traefikReceipt{got("c-1", 200)}},
				{Item: "3", Route: 0, Answer: 502, Tries: []traefikTry{{Upstream: "a:2", Sent: true, Status: 502, Error: "EOF"}},
					Received: []traefikReceipt{{Instance: "c-2", Reset: true}}},
				{Item: "4", Route: 0, Answer: 500, Tries: []traefikTry{sent("a:1", 500)}, Received: []traefikReceipt{got("c-1", 500)}},
				{Item: "5", Route: 0, Answer: 502, Tries: []traefikTry{sent("a:1", 503), sent("a:2", 503), refused},
					Received: []traefikReceipt{got("c-1", 503), got("c-2", 503)}},
			},
			check: func(t *testing.T, tr traefikTruthFile) {
				if len(tr.Edges) != 2 {
					t.Fatalf("%d edges, want the one route's two", len(tr.Edges))
				}
				e := tr.Edges[1]
				if e.Calls != 5 || e.Attempts != 10 || e.RefusedDials != 2 || e.CallsWithRefusedDial != 2 || e.Resets != 1 || e.ExhaustedCalls != 2 ||
					!e.ExhaustedInTraces || e.MaxAttempts != 3 || e.Replicas != 3 || e.Layer != "proxy" || e.BelowInstrumentation {
					t.Errorf("traefik → catalog %+v", e)
				}
				if got := jsonOf(t, e.RetriedStatus) + " " + jsonOf(t, e.NotRetriedStatus) + " " + jsonOf(t, e.Backoff); got !=
					`[503] [500] {"kind":"exponential","base_ms":20,"multiplier":1.4142135623730951,"cap_ms":null,"jitter":"proportional","jitter_fraction":0.5}` {
					t.Errorf("retried, not retried, backoff: %s", got)
				}
				if f := tr.Edges[0]; f.Retries || f.Calls != 5 || f.Attempts != 5 || jsonOf(t, f.NotRetriedStatus) != "[500,502,503]" {
					t.Errorf("shop → traefik %+v", f)
				}
				if len(tr.Paths) != 1 || tr.Paths[0].WorstCaseAmplification != 3 || tr.RootAnswers["502"] != 2 {
					t.Errorf("paths %+v, answers %v", tr.Paths, tr.RootAnswers)
				}
			},
		},
		{
			name: "lateness: the median of how much later than its drawn wait each retry was sent",
			roots: func() []traefikRoot {
				t0 := time.Unix(1_700_000_000, 0)
				ms := func(x float64) time.Time { return t0.Add(time.Duration(x * 1e6)) }
				timed := func(tr traefikTry, start, end float64, wait time.Duration) traefikTry {
					tr.Start, tr.End, tr.Wait = ms(start), ms(end), wait
					return tr
				}
				return []traefikRoot{
					// waits of 20ms and 25ms sent 1ms and 3ms late
					{Item: "1", Answer: 200, Tries: []traefikTry{timed(sent("a:1", 503), 0, 2, 0), timed(sent("a:2", 503), 23, 25, 20*time.Millisecond),
						timed(sent("a:3", 200), 53, 55, 25*time.Millisecond)},
						Received: []traefikReceipt{got("c-1", 503), got("c-2", 503), got("c-3", 200)}},
					// a refused dial, then a wait of 12ms sent 2ms late
					{Item: "2", Answer: 200, Tries: []traefikTry{timed(refused, 100, 100.5, 0), timed(sent("a:1", 200), 114.5, 117, 12*time.Millisecond)},
						Received: []traefikReceipt{got("c-1", 200)}},
				}
			}(),
			check: func(t *testing.T, tr traefikTruthFile) {
				if got := tr.Edges[1].WaitLateMedianMS; got == nil || *got != 2 {
					t.Errorf("wait late median %v, want 2ms (of 1, 2 and 3)", got)
				}
			},
		},
		{
			name:  "a 503 with tries left that was not retried",
			roots: []traefikRoot{{Item: "1", Answer: 503, Tries: []traefikTry{sent("a:1", 503)}, Received: []traefikReceipt{got("c-1", 503)}}},
			err:   "should have been retried",
		},
		{
			name: "a 500 that was retried",
			roots: []traefikRoot{{Item: "1", Answer: 200, Tries: []traefikTry{sent("a:1", 500), sent("a:2", 200)},
				Received: []traefikReceipt{got("c-1", 500), got("c-2", 200)}}},
			err: "followed by another",
		},
		{
			name:  "a try the replica recorded on another instance",
			roots: []traefikRoot{{Item: "1", Answer: 200, Tries: []traefikTry{sent("a:1", 200)}, Received: []traefikReceipt{got("c-2", 200)}}},
			err:   "the replica recorded c-2",
		},
		{
			name:  "a request no try explains",
			roots: []traefikRoot{{Item: "1", Answer: 200, Tries: []traefikTry{refused, sent("a:1", 200)}, Received: []traefikReceipt{got("c-3", 200), got("c-1", 200)}}},
			err:   "the replica recorded c-3",
		},
		{
			name:  "an answer that is not the last try's",
			roots: []traefikRoot{{Item: "1", Answer: 200, Tries: []traefikTry{sent("a:1", 500)}, Received: []traefikReceipt{got("c-1", 500)}}},
			err:   "the last try got 500",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := traefikRun{Config: cfg, Replicas: []replicaAddr{{"c-1", "a:1"}, {"c-2", "a:2"}, {"c-3", "a:3"}}, Roots: tc.roots}
			tr, err := traefikTruth(run)
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
