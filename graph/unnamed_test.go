package graph

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// TestEnvoyZipkinNamesNoService: Envoy's Zipkin tracer without
// --service-cluster names no service on its spans; the ingress span is the
// service the request was addressed to (its name's host), and its
// outbound span runs in that same sidecar.
func TestEnvoyZipkinNamesNoService(t *testing.T) {
	tp := inferFile(t, filepath.Join("..", "ingest", "testdata", "zipkin", "envoy-sidecar.json"))
	for _, s := range tp.Services {
		if unnamedService(s.Name) {
			t.Errorf("service %q left in the topology", s.Name)
		}
	}
	wantEq(t, "checkout → inventory calls", edge(t, tp, "checkout", "inventory").Calls, 1)
	wantEq(t, "user → checkout calls", edge(t, tp, "user", "checkout").Calls, 1)
}

// TestUnnamedServices: a server span that names no service is the service
// its caller addressed; a client span that names none runs in its
// parent's; an IP address names nothing, and a span nothing names stays
// unknown, counted in a warning.
func TestUnnamedServices(t *testing.T) {
	b := newBuilder()
	root := b.server(-1, "productpage", "GET /", 0, 100)
	c := b.client(root, "reviews.default.svc.cluster.local:9080", 1, 50, httpStatus(200))
	s := b.server(c, "unknown_service", "GET /reviews", 2, 48, httpStatus(200))
	out := b.add(s, ingest.KindClient, "unknown_service:java", "GET", 3, 20,
		[]opt{func(set *ingest.Set, sp *ingest.Record) { sp.Peer = set.Intern("ratings:9080") }, httpStatus(200)})
	b.server(out, "ratings", "GET /ratings", 4, 18, httpStatus(200))
	b.newTrace()
	ip := b.client(b.server(-1, "productpage", "GET /", 0, 100), "10.0.0.7:9080", 1, 50, httpStatus(200))
	b.server(ip, "unknown_service", "GET /details", 2, 48, httpStatus(200))
	tp := b.infer()
	wantEq(t, "productpage → reviews", edge(t, tp, "productpage", "reviews").Calls, 1)
	wantEq(t, "reviews → ratings", edge(t, tp, "reviews", "ratings").Calls, 1)
	wantEq(t, "productpage → unknown_service", edge(t, tp, "productpage", "unknown_service").Calls, 1)
	var warned []string
	for _, w := range tp.Warnings {
		if strings.Contains(w, "no service") {
			warned = append(warned, w)
		}
	}
	if len(warned) != 2 || !strings.HasPrefix(warned[0], "2 spans named no service") || !strings.HasPrefix(warned[1], "1 spans name no service") {
		t.Errorf("warnings %q", warned)
	}
}
