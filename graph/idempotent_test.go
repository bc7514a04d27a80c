package graph

import "testing"

// TestIdempotentMethod: HTTP methods by RFC 9110's semantics; a call with
// no HTTP method (an RPC, a database statement) is neither known safe nor
// known to be a write: unknown, which is not idempotent. Method tokens are
// case-sensitive, and ingest records HTTP's in upper case: "Get" or
// "Delete" is an RPC's rpc.method (a gRPC Stock/Get), not HTTP's.
func TestIdempotentMethod(t *testing.T) {
	for _, tc := range []struct {
		method            string
		idempotent, write bool
	}{
		{"GET", true, false}, {"HEAD", true, false}, {"OPTIONS", true, false}, {"TRACE", true, false},
		{"PUT", true, false}, {"DELETE", true, false},
		{"POST", false, true}, {"PATCH", false, true}, {"CONNECT", false, true},
		{"", false, false}, {"payments.Payments/Charge", false, false}, {"QUERY", false, false},
		{"Get", false, false}, {"Delete", false, false}, {"Post", false, false}, {"head", false, false},
	} {
		if got := IdempotentMethod(tc.method); got != tc.idempotent {
			t.Errorf("IdempotentMethod(%q) = %v, want %v", tc.method, got, tc.idempotent)
		}
		if got := WriteMethod(tc.method); got != tc.write {
			t.Errorf("WriteMethod(%q) = %v, want %v", tc.method, got, tc.write)
		}
	}
}
