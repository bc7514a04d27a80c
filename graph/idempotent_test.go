package graph

import "testing"

// TestIdempotentMethod: HTTP methods by RFC 9110's semantics; a call with
// no HTTP method (an RPC, a database statement) is neither known safe nor
// known to be a write: unknown, which is not idempotent.
func TestIdempotentMethod(t *testing.T) {
	for _, tc := range []struct {
		method            string
		idempotent, write bool
	}{
		{"GET", true, false}, {"head", true, false}, {"OPTIONS", true, false}, {"TRACE", true, false},
		{"PUT", true, false}, {"delete", true, false},
		{"POST", false, true}, {"patch", false, true}, {"CONNECT", false, true},
		{"", false, false}, {"payments.Payments/Charge", false, false}, {"QUERY", false, false},
	} {
		if got := IdempotentMethod(tc.method); got != tc.idempotent {
			t.Errorf("IdempotentMethod(%q) = %v, want %v", tc.method, got, tc.idempotent)
		}
		if got := WriteMethod(tc.method); got != tc.write {
			t.Errorf("WriteMethod(%q) = %v, want %v", tc.method, got, tc.write)
		}
	}
}
