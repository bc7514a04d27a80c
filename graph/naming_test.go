package graph

import (
	"reflect"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// TestCalleeNaming: callees are named the way the traces name them, never
// "unknown" or a host:port when the traces say more.
func TestCalleeNaming(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "HotROD: a CLIENT span under another service name with no peer is a call to that service",
			build: func(b *builder) {
				root := b.server(-1, "driver", "/driver.DriverService/FindNearest", 0, 100)
				for k := 0; k < 3; k++ {
					b.add(root, ingest.KindClient, "redis-manual", "GetDriver", float64(10+20*k), 10, []opt{statusOK()})
				}
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "driver", "redis-manual")
				wantEq(t, "calls", e.Calls, 3)
				wantEq(t, "operation", e.Operation, "GetDriver")
				for _, e := range tp.Edges {
					if e.Callee == "unknown" {
						t.Errorf("edge to unknown: %s", edgeList(tp))
					}
				}
				// redis-manual has spans, but none of its own serving: it is
				// timed by the attempts its caller waited for, as any
				// uninstrumented callee (replay reads its service time here).
				for _, s := range tp.Services {
					if s.Name != "redis-manual" {
						continue
					}
					if !s.Virtual || len(s.Operations) != 1 || s.Operations[0].Count != 3 || s.Operations[0].P50MS != 10 {
						t.Errorf("redis-manual: %+v, want virtual with GetDriver timed by its 3 attempts of 10ms", s)
					}
					return
				}
				t.Errorf("no service redis-manual in %+v", tp.Services)
			},
		},
		{
			name: "host:port with no server span: the service that answered that host on another port, else the host",
			build: func(b *builder) {
				root := b.server(-1, "api", "GET /", 0, 100)
				_, srv := b.call(root, "db:5432", "SELECT", 1, 5)
				b.set.Spans[srv].Service = b.set.Intern("orders-db") // db:5432 is answered by orders-db
				b.client(root, "db:42619", 10, 3, failed("connection refused"))
				b.client(root, "cache:6379", 20, 3, failed("connection refused"))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "orders-db")
				wantEq(t, "calls to orders-db, one through each port", e.Calls, 2)
				edge(t, tp, "api", "cache")
			},
		},
		{
			name: "Kubernetes service names are the service",
			build: func(b *builder) {
				root := b.server(-1, "productpage", "GET /", 0, 100)
				b.server(-1, "reviews", "GET /health", 0, 1) // reviews is in the traces
				b.client(root, "reviews.default.svc.cluster.local:9080", 1, 3, failed("connection refused"))
				b.client(root, "ratings.prod.svc:9080", 10, 3, failed("connection refused"))
				b.client(root, "reviews.default", 20, 3, failed("connection refused"), name("POST"))
				b.client(root, "api.example", 30, 3, failed("connection refused"))
			},
			check: func(t *testing.T, tp *Topology) {
				got := map[string]int{}
				for _, e := range tp.Edges {
					if e.Caller == "productpage" {
						got[e.Callee] += e.Calls
					}
				}
				want := map[string]int{"reviews": 2, "ratings": 1, "api.example": 1}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("callees %v, want %v", got, want)
				}
			},
		},
	})
}

// TestReplicas: a retry sent to another replica (another port, so another
// URL) is the same logical call, and a 429 retried there after its
// Retry-After is retried and honoured.
func TestReplicas(t *testing.T) {
	b := newBuilder()
	route := func(s *ingest.Set, sp *ingest.Record) { sp.Route = s.Intern("/orders/{id}") }
	for i := 0; i < 4; i++ {
		if i > 0 {
			b.newTrace()
		}
		root := b.server(-1, "gateway", "GET /", 0, 3000)
		c1 := b.client(root, "orders:8081", 1, 5, httpStatus(503), target("http://orders:8081/orders/7"), route)
		b.server(c1, "orders", "GET /orders/{id}", 1.5, 4, httpStatus(503))
		c2 := b.client(root, "orders:8082", 16, 5, httpStatus(429), retryAfter(1000), target("http://orders:8082/orders/7"), route)
		b.server(c2, "orders", "GET /orders/{id}", 16.5, 4, httpStatus(429))
		c3 := b.client(root, "orders:8083", 1022, 5, httpStatus(200), target("http://orders:8083/orders/7"), route)
		b.server(c3, "orders", "GET /orders/{id}", 1022.5, 4, httpStatus(200))
		// The next order: a new request to the first replica, a new call.
		c4 := b.client(root, "orders:8081", 1100, 5, httpStatus(200), target("http://orders:8081/orders/8"), route)
		b.server(c4, "orders", "GET /orders/{id}", 1100.5, 4, httpStatus(200))
	}
	e := edge(t, b.infer(), "gateway", "orders")
	wantShape(t, e, shape{Calls: 8, Attempts: 16, Hist: []int{4, 0, 4}, Retries: true, Max: 3, Evidence: "timing",
		Retried: []string{"429", "503"}, NotRetry: none})
	wantEq(t, "retry-after honoured", e.RetryAfterHonored, 4)
}
