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
	if set.Str(sp.Peer) != "reviews.default.svc.cluster.local" || set.Extra(sp).RetryCount != 2 || !sp.Has(FlagProxy) || !sp.Has(FlagRetryLimit) {
		t.Errorf("sidecar span: peer %q, retry count %d, proxy %v, retry limit %v",
			set.Str(sp.Peer), set.Extra(sp).RetryCount, sp.Has(FlagProxy), sp.Has(FlagRetryLimit))
	}
	if p := &set.Spans[1]; p.Has(FlagProxy) || p.Has(FlagRetryLimit) || set.Extra(p).RetryCount != Absent {
		t.Errorf("plain client span marked as a proxy's: %+v", *p)
	}
}

// TestEnvoyResponseFlags: response_flags, a comma-separated list of
// Envoy's short codes, set the flags a retry policy reads (URX is not UR);
// Envoy's status code 0 is no response, not a bad value; x-request-id
// joins the URL as a sidecar request's identity.
func TestEnvoyResponseFlags(t *testing.T) {
	for _, tc := range []struct {
		flags string
		want  uint8
	}{
		{"-", 0},
		{"URX", FlagRetryLimit},
		{"UF,URX", FlagConnectFailed | FlagRetryLimit},
		{"UT", FlagProxyTimeout},
		{"UO", FlagOverflow},
		{"UH", FlagConnectFailed},
		{"DI,DC", 0},
	} {
		s := span("3", strings.Join([]string{str("component", "proxy"), str("response_flags", tc.flags),
			str("http.status_code", "0"), str("guid:x-request-id", "48c7189e-1e39-9984-9556-20a8f2e8be45"),
			str("http.url", "http://reviews:9080/reviews/0")}, ","))
		set := mustDecode(t, "envoy", []byte(request(s)))
		sp := &set.Spans[0]
		mask := FlagRetryLimit | FlagConnectFailed | FlagProxyTimeout | FlagOverflow
		if got := sp.Flags & mask; got != tc.want {
			t.Errorf("response_flags %q: flags %08b, want %08b", tc.flags, got, tc.want)
		}
		if sp.HTTPStatus != 0 || len(set.Inputs[0].Warnings) > 0 {
			t.Errorf("status code 0: status %d, warnings %v", sp.HTTPStatus, set.Inputs[0].Warnings)
		}
		if sp.Target == fnv64("http://reviews:9080/reviews/0") || sp.Target == 0 {
			t.Errorf("x-request-id is not part of the sidecar request's identity")
		}
	}
}
