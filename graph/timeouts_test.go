package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
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
			// Node's fetch aborted by its timeout against an instrumented
			// callee: the callee's SERVER span says 200 (the answer it sent
			// after the client had gone, or the status Node's http server
			// span ends with when the client hangs up), the client span
			// has no status code: no answer reached the client.
			name: "HTTP client timeouts with status Unset against a callee whose span says 200",
			build: func(b *builder) {
				sequential(b, 4, "front", func(root, i int) {
					c := b.client(root, "pricing", 10, 150+0.2*float64(i), method("GET"), target("http://pricing/p/1"))
					b.server(c, "pricing", "GET /p/:sku", 10.5, 150.5+float64(100*(i%2)), httpStatus(200))
					b.call(root, "pricing", "GET /p/:sku", 190, 20, httpStatus(200), method("GET"), target("http://pricing/p/1"))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "front", "pricing")
				wantShape(t, e, shape{Calls: 4, Attempts: 8, Hist: []int{0, 4}, Retries: true, Max: 2, Retried: []string{"no response"}, NotRetry: none, Evidence: "timing"})
				wantPtr(t, "per-try timeout", e.PerTryTimeoutMS, 150)
				wantEq(t, "leaks", tp.Source.ContextLeaks, 0)
			},
		},
		{
			// A busy callee host ends its SERVER span after its answer
			// reached the client: the 503s were answered, not abandoned,
			// and say nothing of a timeout.
			name: "answered 503s whose callee span ends after the client's beside timeouts at 150ms",
			build: func(b *builder) {
				sequential(b, 6, "front", func(root, i int) {
					if i%3 == 0 {
						c := b.client(root, "pricing", 1, 4+float64(i), httpStatus(503), method("GET"))
						b.server(c, "pricing", "GET /p/:sku", 1.5, 6+float64(i), httpStatus(503))
					}
					b.client(root, "pricing", 20, 150+0.2*float64(i), method("GET"))
					b.call(root, "pricing", "GET /p/:sku", 200, 20, httpStatus(200), method("GET"))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantPtr(t, "per-try timeout", edge(t, tp, "front", "pricing").PerTryTimeoutMS, 150)
			},
		},
		{
			// A timer never fires early; on a busy host it fires late.
			name: "HTTP client timeouts at 150ms with a thin tail of late ones",
			build: func(b *builder) {
				late := []float64{0, 0.4, 0.8, 1.2, 0.3, 0.6, 1.5, 1.1, 0.2, 14, 31, 52, 118}
				sequential(b, len(late), "front", func(root, i int) {
					b.client(root, "pricing", 10, 150+late[i], method("GET"))
					b.call(root, "pricing", "GET /p/:sku", 300, 20, httpStatus(200), method("GET"))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantPtr(t, "per-try timeout", edge(t, tp, "front", "pricing").PerTryTimeoutMS, 150)
			},
		},
		{
			name: "HTTP clients giving up at no particular time have no timeout",
			build: func(b *builder) {
				sequential(b, 12, "front", func(root, i int) {
					b.client(root, "pricing", 10, 100+float64(37*i), method("GET"))
					b.call(root, "pricing", "GET /p/:sku", 600, 20, httpStatus(200), method("GET"))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantNil(t, "per-try timeout", edge(t, tp, "front", "pricing").PerTryTimeoutMS)
			},
		},
		{
			name: "two per-try timeouts, 150ms and 190ms, are no one timeout",
			build: func(b *builder) {
				sequential(b, 12, "front", func(root, i int) {
					b.client(root, "pricing", 10, 150+float64(40*(i%3/2))+0.1*float64(i), method("GET"))
					b.call(root, "pricing", "GET /p/:sku", 600, 20, httpStatus(200), method("GET"))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantNil(t, "per-try timeout", edge(t, tp, "front", "pricing").PerTryTimeoutMS)
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
			// A timer never fires early, and a loaded host fires some
			// late: go-grpc-middleware's 60ms per-retry timeout on a busy
			// machine ended attempts at 60-61ms and a few at 67-102ms.
			name:  "gRPC DEADLINE_EXCEEDED at 60ms with a sparse tail of late timers",
			build: lateTimeouts(25, 0.04, 67.2, 76.7, 77.4, 85.1, 102),
			check: func(t *testing.T, tp *Topology) {
				wantPtr(t, "per-try timeout", edge(t, tp, "gateway", "orders").PerTryTimeoutMS, 60.1)
			},
		},
		{
			name:  "gRPC DEADLINE_EXCEEDED at 60ms with a late tail thinning out from the cluster",
			build: lateTimeouts(31, 0.1, 63.3, 64.0, 66.2, 67.9, 73.7, 90.0),
			check: func(t *testing.T, tp *Topology) {
				wantPtr(t, "per-try timeout", edge(t, tp, "gateway", "orders").PerTryTimeoutMS, 60.1)
			},
		},
		{
			name: "two clusters of DEADLINE_EXCEEDED, at 60ms and at 100ms, are no one per-try timeout",
			build: func(b *builder) {
				sequential(b, 20, "gateway", func(root, i int) {
					d := 60.1 + 0.04*float64(i)
					if i%4 == 0 { // 5 at 100ms against 15 at 60ms
						d = 100.2 + 0.05*float64(i)
					}
					c := b.client(root, "orders", 10, d, grpcCode(4), method("Get"))
					b.server(c, "orders", "retryaudit.Orders/Get", 10.2, d-0.3, grpcCode(1))
					b.call(root, "orders", "retryaudit.Orders/Get", 20+d, 2, grpcCode(0), method("Get"))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "gateway", "orders")
				wantNil(t, "per-try timeout", e.PerTryTimeoutMS)
				wantEq(t, "timed-out attempts leaving the timeout unknown", e.PerTryTimeoutUnknown, 20)
				if !slices.ContainsFunc(tp.Warnings, func(w string) bool {
					return strings.Contains(w, "20 attempts timed out, but at no one duration: the per-try timeout is unknown")
				}) {
					t.Errorf("no warning that the timeout is unknown: %q", tp.Warnings)
				}
			},
		},
		{
			// The inner call starts at a different offset in each request,
			// so the propagated deadline cuts it at different durations:
			// no cluster, yet every cut attempt ended with its caller's.
			name: "an inner call cut by the propagated deadline at varying durations",
			build: func(b *builder) {
				sequential(b, 6, "gateway", func(root, i int) {
					c := b.client(root, "orders", 10, 60, grpcCode(4), method("Get"))
					s := b.server(c, "orders", "retryaudit.Orders/Get", 10.2, 59.8, grpcCode(1))
					at := 11 + 7*float64(i)
					b.client(s, "warehouse", at, 70-at, grpcCode(4), method("Count"))
					c2 := b.client(root, "orders", 100, 5, grpcCode(0), method("Get"))
					s2 := b.server(c2, "orders", "retryaudit.Orders/Get", 100.2, 4.6, grpcCode(0))
					b.call(s2, "warehouse", "retryaudit.Warehouse/Count", 101, 2, grpcCode(0), method("Count"))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				w := edge(t, tp, "orders", "warehouse")
				wantNil(t, "orders → warehouse per-try timeout", w.PerTryTimeoutMS)
				wantEq(t, "orders → warehouse attempts cut by the caller", w.DeadlineFromCaller, 6)
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

// TestTimeoutsOnABusyHost: cockatiel's aggressive 80ms timeout on a busy
// Node host: 8 aborted tries end at 80.5-84.4ms and 5 more up to 50ms late,
// three of them within 5ms of each other (a blocked event loop fires its
// timers together), as late as the edge's legs show timings come there.
// They are the one timeout fired late, not a second one or none.
func TestTimeoutsOnABusyHost(t *testing.T) {
	b := newBuilder()
	aborted := []float64{80.5, 80.6, 80.7, 80.8, 81.1, 81.8, 82.7, 84.4, 93.9, 97.0, 99.9, 101.8, 130.3}
	lag := lagger(rand.New(rand.NewPCG(3, 3)), 2, 30, 60)
	sequential(b, len(aborted), "front", func(root, i int) {
		c := b.client(root, "stock", 10, aborted[i], failed("The operation was aborted"), method("GET"))
		b.server(c, "stock", "GET /stock/:sku", 10.2, aborted[i]-0.3, httpStatus(200))
		// Two answered tries whose client spans outlive their callee's
		// by what the busy host adds, most by 1-3ms, a fifth by 30-60ms:
		// the edge's noise.
		at := 30 + aborted[i]
		for k := 0; k < 2; k++ {
			leg := lag()
			c := b.client(root, "stock", at, 2+leg, httpStatus(200), method("GET"))
			b.server(c, "stock", "GET /stock/:sku", at+leg/2, 2, httpStatus(200))
			at += 10 + leg
		}
	})
	e := edge(t, b.infer(), "front", "stock")
	if e.PerTryTimeoutMS == nil || math.Abs(*e.PerTryTimeoutMS-80.5) > 0.5 {
		t.Errorf("per-try timeout %v (unknown %d), want 80.5ms", e.PerTryTimeoutMS, e.PerTryTimeoutUnknown)
	}
}

// lateTimeouts builds n gateway requests whose first call to orders ends
// DEADLINE_EXCEEDED at a 60ms per-try timeout, the first ones at the late
// durations given (timers a loaded host fired late), the others from 60.1ms
// up by step each, and whose retry then succeeds.
func lateTimeouts(n int, step float64, late ...float64) func(*builder) {
	return func(b *builder) {
		sequential(b, n, "gateway", func(root, i int) {
			d := 60.1 + step*float64(i-len(late))
			if i < len(late) {
				d = late[i]
			}
			c := b.client(root, "orders", 10, d, grpcCode(4), method("Get"))
			b.server(c, "orders", "retryaudit.Orders/Get", 10.2, d-0.3, grpcCode(1))
			b.call(root, "orders", "retryaudit.Orders/Get", 20+d, 2, grpcCode(0), method("Get"))
		})
	}
}
