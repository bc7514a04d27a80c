package ingest

import (
	"strings"
	"testing"
)

// TestEnvoySidecarSpans: an Envoy/Istio sidecar's span is marked as the
// proxy's, names its callee by upstream_cluster, and counts its attempts
// from x-envoy-attempt-count; URX says it ran out of retries.
func TestEnvoySidecarSpans(t *testing.T) {
	s := span("3", strings.Join([]string{str("component", "proxy"),
		str("upstream_cluster", "outbound|9080||reviews.default.svc.cluster.local"), str("peer.address", "10.1.2.3:9080"),
		str("response_flags", "URX"), str("http.request.header.x-envoy-attempt-count", "3"), num("http.status_code", 503)}, ","))
	plain := strings.Replace(span("3", str("server.address", "reviews")), "e127af99e3b3e074", "e127af99e3b3e075", 1)
	set := mustDecode(t, "envoy", []byte(request(s, plain)))
	sp := &set.Spans[0]
	if set.Str(sp.Peer) != "reviews.default.svc.cluster.local" || sp.RetryCount != 2 || !sp.Has(FlagProxy) || !sp.Has(FlagRetryLimit) {
		t.Errorf("sidecar span: peer %q, retry count %d, proxy %v, retry limit %v",
			set.Str(sp.Peer), sp.RetryCount, sp.Has(FlagProxy), sp.Has(FlagRetryLimit))
	}
	if p := &set.Spans[1]; p.Has(FlagProxy) || p.Has(FlagRetryLimit) || p.RetryCount != Absent {
		t.Errorf("plain client span marked as a proxy's: %+v", *p)
	}
}
