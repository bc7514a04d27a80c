package graph

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEnvoySpanShapes infers the hand-made Istio/Envoy traces in
// testdata/envoy (testdata/envoy/README.md says where each span shape
// comes from): the sidecar is a layer of its application, never a
// service; its tries are the proxy's retries, numbered by Envoy's
// retry.count; its response flags name what its status code hides; and an
// application retrying through a retrying sidecar is two layers that
// multiply.
func TestEnvoySpanShapes(t *testing.T) {
	for _, tc := range []struct {
		file  string
		check func(t *testing.T, tp *Topology)
	}{
		{"istio-proxy-retries.jaeger.json", func(t *testing.T, tp *Topology) {
			// Istio's default: one egress span per request, each try a
			// reviews inbound span under it; URX on the exhausted ones.
			e := edge(t, tp, "productpage", "reviews")
			wantShape(t, e, shape{Calls: 8, Attempts: 16, Hist: []int{3, 2, 3}, Retries: true, Max: 3, Exact: true,
				Evidence: "below-instrumentation", Retried: s503, NotRetry: none})
			wantEq(t, "retries by", e.RetriesBy, "proxy")
			wantEq(t, "operation", e.Operation, "GET /reviews/{id}")
		}},
		{"envoy-router-spans.jaeger.json", func(t *testing.T, tp *Topology) {
			// start_child_span: a router span per try, under the sidecar's
			// egress span; UT tries cut at the per-try timeout, UF tries
			// with no answer at all.
			e := edge(t, tp, "productpage", "reviews")
			wantShape(t, e, shape{Calls: 6, Attempts: 14, Hist: []int{1, 2, 3}, Retries: true, Max: 3, Exact: true,
				Evidence: "proxy", Retried: []string{"timeout", "transport error"}, NotRetry: none})
			wantEq(t, "retries by", e.RetriesBy, "proxy")
			wantEq(t, "proxy most tries", e.ProxyMostTries, 3)
			if e.PerTryTimeoutMS == nil || math.Abs(*e.PerTryTimeoutMS-100) > 1 {
				t.Errorf("per-try timeout %v, want Envoy's 100ms", e.PerTryTimeoutMS)
			}
			wantEq(t, "transport", e.Outcomes.First.Transport+e.Outcomes.Retry.Transport, 2)
		}},
		{"app-and-proxy-retries.jaeger.json", func(t *testing.T, tp *Topology) {
			// The application retries (its own client spans) and each of
			// its attempts goes through a sidecar that tries twice.
			e := edge(t, tp, "productpage", "reviews")
			wantEq(t, "calls", e.Calls, 6)
			wantEq(t, "attempts", e.Attempts, 17)
			wantEq(t, "max attempts", e.MaxAttempts, 4)
			wantEq(t, "retries by", e.RetriesBy, "proxy and application")
			wantEq(t, "proxy most tries", e.ProxyMostTries, 2)
			f := finding(t, tp, FindingMultiLayer)
			if !strings.Contains(f.Message, "productpage (sidecar)") {
				t.Errorf("multi-layer finding names no sidecar layer: %s", f.Message)
			}
		}},
		{"overflow-and-no-answer.jaeger.json", func(t *testing.T, tp *Topology) {
			// UO: the sidecar's circuit breaker shed the request; DC with
			// status code 0: no answer. peer.address is the sidecar's own
			// pod, never the callee.
			d := edge(t, tp, "productpage", "details")
			if !slices.Equal(d.NotRetriedStatus, []string{"overflow"}) {
				t.Errorf("details not retried %v, want [overflow]", d.NotRetriedStatus)
			}
			// Envoy's circuit breaker is a concurrency limit: reported as
			// the attempts it shed, not as a breaker opening on failures.
			if b := d.Breaker; b == nil || b.ProxyShed != 3 || b.Detected {
				t.Errorf("details breaker %+v, want 3 shed by the proxy's limit, none detected", b)
			}
			r := edge(t, tp, "productpage", "ratings")
			wantEq(t, "ratings transport failures", r.Outcomes.First.Transport, 5)
			if len(tp.Warnings) > 0 {
				t.Errorf("warnings on Envoy's status code 0: %q", tp.Warnings)
			}
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tp := inferFile(t, filepath.Join("testdata", "envoy", tc.file))
			for _, s := range tp.Services {
				if strings.Contains(s.Name, ".") || strings.HasPrefix(s.Name, "10.") {
					t.Errorf("sidecar or address drawn as a service: %q", s.Name)
				}
			}
			for _, e := range tp.Edges {
				if strings.Contains(e.Caller, ".") || strings.Contains(e.Callee, ".") {
					t.Errorf("edge through a sidecar's name: %s", edgeLocation(e))
				}
			}
			tc.check(t, tp)
		})
	}
}
