package graph

import (
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// TestPerTryTimeouts: a per-try timeout is read only from attempts that
// were abandoned, and only when it is this edge's own.
func TestPerTryTimeouts(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "gRPC attempts ending DEADLINE_EXCEEDED at 150ms",
			build: func(b *builder) {
				sequential(b, 4, "api", func(root, i int) {
					c := b.client(root, "backend", 10, 150+0.3*float64(i), grpcCode(4), method("GetStock"))
					b.server(c, "backend", "stock.Stock/Get", 10.5, 300, grpcCode(0))
					b.call(root, "backend", "stock.Stock/Get", 170, 20, grpcCode(0), method("GetStock"))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantPtr(t, "per-try timeout", edge(t, tp, "api", "backend").PerTryTimeoutMS, 150)
			},
		},
		{
			name: "HTTP client timeouts with status Unset and no status code (fetch, undici) at 150ms",
			build: func(b *builder) {
				sequential(b, 4, "api", func(root, i int) {
					b.client(root, "backend", 10, 150+0.2*float64(i), method("GET"))
					b.call(root, "backend", "GET /x", 170, 20, httpStatus(200), method("GET"))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantPtr(t, "per-try timeout", e.PerTryTimeoutMS, 150)
				wantEq(t, "retried", len(e.RetriedStatus), 1)
				wantEq(t, "retried status", e.RetriedStatus[0], "no response")
			},
		},
		{
			name: "an inner edge cut by the outer caller's 150ms per-try timeout has no timeout of its own",
			build: func(b *builder) {
				sequential(b, 4, "edge", func(root, i int) {
					c := b.client(root, "api", 10, 150, failed("context deadline exceeded"))
					s := b.server(c, "api", "GET /a", 10.5, 149.5)
					// api's call to db is cancelled when edge gives up.
					b.client(s, "db", 11, 149.3+0.1*float64(i), name("SELECT"), failed("context canceled"))
					c2 := b.client(root, "api", 170, 30, httpStatus(200))
					s2 := b.server(c2, "api", "GET /a", 170.5, 29)
					b.client(s2, "db", 171, 5, name("SELECT"), statusOK())
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantPtr(t, "edge → api per-try timeout", edge(t, tp, "edge", "api").PerTryTimeoutMS, 150)
				db := edge(t, tp, "api", "db")
				wantNil(t, "api → db per-try timeout", db.PerTryTimeoutMS)
				wantEq(t, "api → db attempts cut by the caller", db.DeadlineFromCaller, 4)
			},
		},
		{
			name: "errors returned after a fixed delay are not a timeout (HotROD's redis)",
			build: func(b *builder) {
				sequential(b, 6, "driver", func(root, i int) {
					b.add(root, ingest.KindClient, "redis", "GetDriver", 10, 28.8, []opt{failed("")})
					b.add(root, ingest.KindClient, "redis", "GetDriver", 40, 12, []opt{statusOK()})
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantNil(t, "per-try timeout", edge(t, tp, "driver", "redis").PerTryTimeoutMS)
			},
		},
		{
			name: "an error after a fixed delay whose callee outlived the client span is a timeout",
			build: func(b *builder) {
				sequential(b, 3, "api", func(root, i int) {
					c := b.client(root, "backend", 10, 80, failed("EOF"))
					b.server(c, "backend", "GET /x", 10.5, 200)
					b.call(root, "backend", "GET /x", 100, 20, httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantPtr(t, "per-try timeout", edge(t, tp, "api", "backend").PerTryTimeoutMS, 80)
			},
		},
	})
}
