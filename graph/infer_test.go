package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

var (
	none  = []string{}
	s503  = []string{"503"}
	boolF = false
)

type inferCase struct {
	name  string
	build func(b *builder)
	check func(t *testing.T, tp *Topology)
}

// sequential repeats build in n traces of its own, each under a root SERVER
// span of svc: calls in different traces never join into one logical call.
func sequential(b *builder, n int, svc string, build func(root int, i int)) {
	for i := 0; i < n; i++ {
		if i > 0 {
			b.newTrace()
		}
		build(b.server(-1, svc, "GET /", 0, 5000), i)
	}
}

func runCases(t *testing.T, cases []inferCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			tc.build(b)
			tc.check(t, b.infer())
		})
	}
}

// TestPairingAndNaming covers how attempts find their callee.
func TestPairingAndNaming(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "root SERVER span gets a user caller",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /home", 0, 100)
				b.call(root, "backend", "GET /api", 10, 20, httpStatus(200))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "frontend", "backend")
				wantShape(t, e, shape{Calls: 1, Attempts: 1, Hist: []int{1}, Max: 1, Retried: none, NotRetry: none})
				wantEq(t, "operation", e.Operation, "GET /api")
				wantEq(t, "caller operation", e.CallerOperation, "GET /home")
				wantEq(t, "callee p50", e.CalleeP50MS, 19.0)
				u := edge(t, tp, "user", "frontend")
				wantShape(t, u, shape{Calls: 1, Attempts: 1, Hist: []int{1}, Max: 1, Retried: none, NotRetry: none})
				wantEq(t, "user edge operation", u.Operation, "GET /home")
				if len(tp.Edges) != 2 {
					t.Errorf("edges: %s", edgeList(tp))
				}
				if len(tp.Paths) != 1 || !reflect.DeepEqual(tp.Paths[0].Services, []string{"frontend", "backend"}) ||
					tp.Paths[0].WorstCaseAmplification != 1 || tp.Paths[0].ObservedMaxAmplification != 1 {
					t.Errorf("paths: %+v", tp.Paths)
				}
				if len(tp.Services) != 2 || tp.Services[0].Name != "backend" || tp.Services[0].Virtual || tp.Services[1].Name != "frontend" {
					t.Errorf("services: %+v", tp.Services)
				}
				wantFindings(t, tp)
				wantEq(t, "root calls", tp.Source.RootCalls, 1)
			},
		},
		{
			name: "trace rooted at a CLIENT span (a load generator) still has its edges and path",
			build: func(b *builder) {
				root := b.add(-1, ingest.KindClient, "loadgen", "GET", 0, 100, []opt{httpStatus(200),
					func(s *ingest.Set, sp *ingest.Record) { sp.Peer = s.Intern("frontend") }})
				fe := b.server(root, "frontend", "GET /home", 1, 98)
				b.chain(fe, "backend", 10, []float64{10}, 5, httpStatus(200))
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "loadgen", "frontend"), shape{Calls: 1, Attempts: 1, Hist: []int{1}, Max: 1, Retried: none, NotRetry: none})
				wantShape(t, edge(t, tp, "frontend", "backend"), shape{Calls: 1, Attempts: 2, Hist: []int{0, 1}, Retries: true, Max: 2,
					Evidence: "timing", Retried: s503, NotRetry: none})
				if len(tp.Paths) != 1 || !reflect.DeepEqual(tp.Paths[0].Services, []string{"loadgen", "frontend", "backend"}) ||
					tp.Paths[0].WorstCaseAmplification != 2 || tp.Paths[0].ObservedMaxAmplification != 2 {
					t.Errorf("paths: %+v", tp.Paths)
				}
				wantEq(t, "root calls", tp.Source.RootCalls, 1)
			},
		},
		{
			name: "uninstrumented DB peer is a virtual node and its retry is seen",
			build: func(b *builder) {
				root := b.server(-1, "api", "GET /orders", 0, 100)
				b.client(root, "postgres", 10, 5, name("SELECT orders"), failed("connection reset by peer"))
				b.client(root, "postgres", 20, 5, name("SELECT orders"), statusOK())
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "postgres")
				wantShape(t, e, shape{Calls: 1, Attempts: 2, Hist: []int{0, 1}, Retries: true, Max: 2, Evidence: "timing",
					Retried: []string{"transport error"}, NotRetry: none})
				wantEq(t, "operation", e.Operation, "SELECT orders")
				var pg *Service
				for i := range tp.Services {
					if tp.Services[i].Name == "postgres" {
						pg = &tp.Services[i]
					}
				}
				if pg == nil || !pg.Virtual || len(pg.Operations) != 1 || pg.Operations[0].Count != 2 {
					t.Errorf("virtual service: %+v", pg)
				}
				if len(tp.Paths) != 1 || tp.Paths[0].WorstCaseAmplification != 2 || tp.Paths[0].WorstCaseExact {
					t.Errorf("paths: %+v", tp.Paths)
				}
				wantFindings(t, tp)
			},
		},
		{
			name: "attempt that never reached the callee is named by its peer",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 100)
				b.client(root, "backend", 10, 1, failed("dial tcp: connection refused"))
				b.call(root, "backend", "GET /api", 20, 10, httpStatus(200))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "frontend", "backend")
				wantShape(t, e, shape{Calls: 1, Attempts: 2, Hist: []int{0, 1}, Retries: true, Max: 2, Evidence: "timing",
					Retried: []string{"transport error"}, NotRetry: none})
				wantEq(t, "operation", e.Operation, "GET /api")
			},
		},
	})
}

// TestExplicitMarkers covers resend counts, grpc-go attempt spans, Envoy's
// retry.count and retries below the instrumentation.
func TestExplicitMarkers(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "resend_count 0,1,3 is one call with a missing attempt",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 200)
				b.call(root, "backend", "GET /api", 10, 5, httpStatus(503), resend(0))
				b.call(root, "backend", "GET /api", 20, 5, httpStatus(503), resend(1))
				b.call(root, "backend", "GET /api", 60, 5, httpStatus(200), resend(3))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "frontend", "backend")
				wantShape(t, e, shape{Calls: 1, Attempts: 3, Hist: []int{0, 0, 0, 1}, Retries: true, Max: 4, Evidence: "markers",
					Retried: s503, NotRetry: none, Missing: 1})
				// Only the wait between resends 0 and 1 is a wait between
				// consecutive attempts; 1→3 straddles the missing one.
				wantEq(t, "backoff samples", e.Backoff.Samples, 1)
				if !strings.Contains(strings.Join(tp.Warnings, "\n"), "1 attempts that retry markers count are missing") {
					t.Errorf("no missing-attempt warning: %q", tp.Warnings)
				}
			},
		},
		{
			name: "resend_count after a success starts a new call",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 200)
				b.call(root, "backend", "GET /api", 10, 5, httpStatus(200), resend(0))
				// Its first attempt (resend 0) was never exported.
				b.call(root, "backend", "GET /api", 20, 5, httpStatus(200), resend(1))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "frontend", "backend")
				wantShape(t, e, shape{Calls: 2, Attempts: 2, Hist: []int{1, 1}, Retries: true, Max: 2, Evidence: "markers",
					Retried: none, NotRetry: none, Missing: 1})
				wantEq(t, "backoff samples", e.Backoff.Samples, 0)
			},
		},
		{
			name: "grpc-go Attempt spans under one call span",
			build: func(b *builder) {
				root := b.server(-1, "checkout", "POST /checkout", 0, 200)
				sent := b.client(root, "", 10, 100, name("Sent.inventory.Stock.Reserve"), statusOK())
				attempt := func(n int, start, dur float64, o opt) int {
					return b.add(sent, ingest.KindInternal, "checkout", "Attempt.inventory.Stock.Reserve", start, dur, []opt{prevAttempts(n), o})
				}
				attempt(0, 11, 2, failed("connection error: connection refused")) // never reached the server
				a1 := attempt(1, 20, 30, failed("unavailable"))
				b.server(a1, "inventory", "Recv.inventory.Stock.Reserve", 21, 28)
				a2 := attempt(2, 60, 40, statusOK())
				b.server(a2, "inventory", "Recv.inventory.Stock.Reserve", 61, 38)
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "checkout", "inventory")
				wantShape(t, e, shape{Calls: 1, Attempts: 3, Hist: []int{0, 0, 1}, Retries: true, Max: 3, Evidence: "markers",
					Retried: []string{"transport error"}, NotRetry: none})
				wantEq(t, "operation", e.Operation, "Recv.inventory.Stock.Reserve")
				if len(tp.Edges) != 2 {
					t.Errorf("edges: %s", edgeList(tp))
				}
			},
		},
		{
			name: "CLIENT-kind attempt spans with previous-rpc-attempts count once, gap counted missing",
			build: func(b *builder) {
				root := b.server(-1, "checkout", "POST /checkout", 0, 200)
				sent := b.client(root, "inventory", 10, 100, name("Sent.inventory.Stock.Reserve"), statusOK())
				a0 := b.client(sent, "inventory", 11, 20, name("Attempt.inventory.Stock.Reserve"), prevAttempts(0), grpcCode(14))
				b.server(a0, "inventory", "Recv.inventory.Stock.Reserve", 12, 18, grpcCode(14))
				a2 := b.client(sent, "inventory", 60, 40, name("Attempt.inventory.Stock.Reserve"), prevAttempts(2), grpcCode(0))
				b.server(a2, "inventory", "Recv.inventory.Stock.Reserve", 61, 38)
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "checkout", "inventory")
				wantShape(t, e, shape{Calls: 1, Attempts: 2, Hist: []int{0, 0, 1}, Retries: true, Max: 3, Evidence: "markers",
					Retried: []string{"grpc UNAVAILABLE"}, NotRetry: none, Missing: 1})
			},
		},
		{
			name: "two SERVER spans under one CLIENT span are retries below the instrumentation",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 100)
				c := b.client(root, "backend", 10, 50, httpStatus(200))
				b.server(c, "backend", "GET /api", 11, 10, httpStatus(503))
				b.server(c, "backend", "GET /api", 30, 10, httpStatus(200))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "frontend", "backend")
				wantShape(t, e, shape{Calls: 1, Attempts: 2, Hist: []int{0, 1}, Retries: true, Max: 2, Evidence: "below-instrumentation",
					Retried: s503, NotRetry: none})
				wantEq(t, "operation", e.Operation, "GET /api")
			},
		},
		{
			name: "Envoy retry.count=2 is three attempts whose waits are unknown",
			build: func(b *builder) {
				sequential(b, 4, "frontend", func(root, _ int) {
					b.client(root, "backend", 10, 60, retryCount(2), httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "frontend", "backend")
				wantShape(t, e, shape{Calls: 4, Attempts: 12, Hist: []int{0, 0, 4}, Retries: true, Max: 3, Evidence: "markers",
					Retried: []string{"error"}, NotRetry: none})
				// One span cannot show the waits between the attempts it hides.
				want := Backoff{Kind: "unknown", Jitter: "unknown"}
				if !reflect.DeepEqual(withoutBaseRange(t, e.Backoff), want) {
					t.Errorf("backoff: got %+v, want %+v", e.Backoff, want)
				}
				wantNil(t, "per-try timeout", e.PerTryTimeoutMS)
				wantFindings(t, tp)
			},
		},
	})
}

// TestNotRetries covers patterns that look like retries and are not.
func TestNotRetries(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "N+1 loop of successful queries to one DB",
			build: func(b *builder) {
				root := b.server(-1, "api", "GET /users", 0, 100)
				for i := 0; i < 5; i++ {
					b.client(root, "postgres", 10+float64(i)*6, 5, name("SELECT users"),
						target("SELECT * FROM users WHERE id = $1"), statusOK())
				}
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "postgres")
				wantShape(t, e, shape{Calls: 5, Attempts: 5, Hist: []int{5}, Max: 1, Retried: none, NotRetry: none})
				if e.Hedging != nil {
					t.Errorf("hedging: %+v", e.Hedging)
				}
				if tp.Paths[0].ObservedMaxAmplification != 1 {
					t.Errorf("observed amplification %v, want 1", tp.Paths[0].ObservedMaxAmplification)
				}
			},
		},
		{
			name: "parallel worker pool of overlapping successful calls",
			build: func(b *builder) {
				root := b.server(-1, "indexer", "POST /reindex", 0, 200)
				for i := 0; i < 8; i++ {
					// four workers; the statement is parametrised, so every
					// query has the same request identity
					start := 10 + float64(i%4) + float64(i/4)*25
					b.client(root, "postgres", start, 20, name("SELECT item"),
						target("SELECT * FROM items WHERE id = $1"), statusOK())
				}
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "indexer", "postgres")
				wantShape(t, e, shape{Calls: 8, Attempts: 8, Hist: []int{8}, Max: 1, Retried: none, NotRetry: none})
				if e.Hedging != nil {
					t.Errorf("hedging: %+v", e.Hedging)
				}
			},
		},
		{
			name: "302 redirect followed by a new request",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 100)
				b.call(root, "backend", "GET /items", 10, 5, httpStatus(302), target("http://backend/items"))
				b.call(root, "backend", "GET /items", 16, 5, httpStatus(200), target("http://backend/items/"))
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "frontend", "backend"),
					shape{Calls: 2, Attempts: 2, Hist: []int{2}, Max: 1, Retried: none, NotRetry: none})
			},
		},
		{
			name: "401 challenge then the request with credentials",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 100)
				b.call(root, "backend", "GET /me", 10, 5, httpStatus(401), target("http://backend/me"))
				b.call(root, "backend", "GET /me", 16, 5, httpStatus(200), target("http://backend/me"))
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "frontend", "backend"),
					shape{Calls: 2, Attempts: 2, Hist: []int{2}, Max: 1, Retried: none, NotRetry: none})
			},
		},
		{
			name: "400 followed by a different request",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 100)
				b.call(root, "backend", "GET /items", 10, 5, httpStatus(400), target("http://backend/items?id=x"))
				b.call(root, "backend", "GET /items", 16, 5, httpStatus(200), target("http://backend/items?id=7"))
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "frontend", "backend"),
					shape{Calls: 2, Attempts: 2, Hist: []int{2}, Max: 1, Retried: none, NotRetry: []string{"400"}})
				wantFindings(t, tp)
			},
		},
		{
			name: "503 followed by a different request: a loop moving on, not a retry",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 100)
				b.call(root, "backend", "GET /items", 10, 5, httpStatus(503), target("http://backend/items?id=3"))
				b.call(root, "backend", "GET /items", 16, 5, httpStatus(200), target("http://backend/items?id=4"))
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "frontend", "backend"),
					shape{Calls: 2, Attempts: 2, Hist: []int{2}, Max: 1, Exact: true, Retried: none, NotRetry: s503})
			},
		},
		{
			name: "overlapping attempts for the same request are a hedge",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 100)
				// GET: idempotent, so no hedged-idempotency-unknown count.
				b.call(root, "backend", "GET /quote", 10, 45, failed("context canceled"), target("http://backend/quote?id=7"), method("GET"))
				b.call(root, "backend", "GET /quote", 40, 15, httpStatus(200), target("http://backend/quote?id=7"), method("GET"))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "frontend", "backend")
				wantShape(t, e, shape{Calls: 1, Attempts: 2, Hist: []int{}, Max: 1, Retried: none, NotRetry: none})
				// The first attempt is cancelled once the hedge answered: no
				// failure while another attempt was out.
				if e.Hedging == nil || *e.Hedging != (Hedging{Calls: 1, DelayMS: 30, MaxRequests: 2, OnFailure: HedgeFailUnknown}) {
					t.Errorf("hedging: got %+v, want {Calls:1 DelayMS:30 MaxRequests:2 OnFailure:unknown}", e.Hedging)
				}
			},
		},
	})
}

// TestStatuses covers which outcomes count as failures that get retried.
func TestStatuses(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "503 retried, 404 not retried, a status seen only at exhaustion is neither",
			build: func(b *builder) {
				sequential(b, 3, "frontend", func(root, i int) {
					switch i {
					case 0:
						b.chain(root, "backend", 10, []float64{10}, 5, httpStatus(200))
					case 1:
						b.client(root, "backend", 10, 5, httpStatus(404))
					case 2:
						b.chain(root, "backend", 10, []float64{10, 20}, 5, httpStatus(500))
					}
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "frontend", "backend"), shape{Calls: 3, Attempts: 6, Hist: []int{1, 1, 1}, Retries: true,
					Max: 3, Evidence: "timing", Retried: s503, NotRetry: []string{"404"}})
			},
		},
		{
			name: "gRPC UNAVAILABLE retried, INVALID_ARGUMENT not",
			build: func(b *builder) {
				sequential(b, 2, "frontend", func(root, i int) {
					if i == 0 {
						b.client(root, "backend", 10, 5, name("backend.Svc/Get"), grpcCode(14))
						b.client(root, "backend", 20, 5, name("backend.Svc/Get"), grpcCode(0))
					} else {
						b.client(root, "backend", 10, 5, name("backend.Svc/Get"), grpcCode(3))
					}
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "frontend", "backend"), shape{Calls: 2, Attempts: 3, Hist: []int{1, 1}, Retries: true,
					Max: 2, Evidence: "timing", Retried: []string{"grpc UNAVAILABLE"}, NotRetry: []string{"grpc INVALID_ARGUMENT"}})
			},
		},
		{
			name: "single failed attempts on an edge that never retries: exactly one attempt",
			build: func(b *builder) {
				sequential(b, 2, "frontend", func(root, i int) {
					b.client(root, "backend", 10, 5, httpStatus([]int{503, 200}[i]))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "frontend", "backend"), shape{Calls: 2, Attempts: 2, Hist: []int{2}, Max: 1, Exact: true,
					Retried: none, NotRetry: s503})
			},
		},
	})
}

// TestBackoff covers the backoff kind and jitter read from waits.
func TestBackoff(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "exponential 10/20/40/80 capped at 80, no jitter",
			build: func(b *builder) {
				sequential(b, 5, "api", func(root, _ int) {
					b.chain(root, "backend", 10, []float64{10, 20, 40, 80, 80}, 5)
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantShape(t, e, shape{Calls: 5, Attempts: 30, Hist: []int{0, 0, 0, 0, 0, 5}, Retries: true, Max: 6, Exact: true,
					Evidence: "timing", Retried: s503, NotRetry: none})
				// Five waits a step, each within the 1.5ms noise: the
				// multiplier is known to within 8%.
				want := Backoff{Kind: "exponential", BaseMS: 10, Multiplier: ptr(2), MultiplierFit: ptr(2), MultiplierRange: &[2]float64{1.88, 2.15},
					CapMS: ptr(80), Jitter: "none", JitterPresent: &boolF, Samples: 25, NoiseMS: 1.5}
				if !reflect.DeepEqual(withoutBaseRange(t, e.Backoff), want) {
					t.Errorf("backoff:\n got %s\nwant %s", fmtBackoff(e.Backoff), fmtBackoff(want))
				}
				wantFindings(t, tp, FindingDependencyDown, FindingNoJitter)
				wantEq(t, "no-jitter message", finding(t, tp, FindingNoJitter).Message,
					"retries after exponential waits from 10.0ms with no jitter (25 waits): clients that fail together retry together")
			},
		},
		{
			name: "constant 25ms, no jitter",
			build: func(b *builder) {
				sequential(b, 5, "api", func(root, _ int) {
					b.chain(root, "backend", 10, []float64{25, 25, 25}, 5, httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantShape(t, e, shape{Calls: 5, Attempts: 20, Hist: []int{0, 0, 0, 5}, Retries: true, Max: 4,
					Evidence: "timing", Retried: s503, NotRetry: none})
				want := Backoff{Kind: "constant", BaseMS: 25, Jitter: "none", JitterPresent: &boolF, Samples: 15, NoiseMS: 1.5}
				if !reflect.DeepEqual(withoutBaseRange(t, e.Backoff), want) {
					t.Errorf("backoff:\n got %s\nwant %s", fmtBackoff(e.Backoff), fmtBackoff(want))
				}
				wantFindings(t, tp, FindingNoJitter)
			},
		},
		{
			name: "one immediate retry: no backoff, too few waits to judge jitter",
			build: func(b *builder) {
				root := b.server(-1, "api", "GET /", 0, 100)
				b.chain(root, "backend", 10, []float64{0.2}, 5, httpStatus(200))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				want := Backoff{Kind: BackoffImmediate, Jitter: JitterUnknown, Samples: 1, NoiseMS: 1.5}
				if !reflect.DeepEqual(withoutBaseRange(t, e.Backoff), want) {
					t.Errorf("backoff:\n got %s\nwant %s", fmtBackoff(e.Backoff), fmtBackoff(want))
				}
				wantFindings(t, tp)
			},
		},
		{
			name: "immediate retries with one late wait (a busy host's): still immediate",
			build: func(b *builder) {
				sequential(b, 20, "api", func(root, k int) {
					w := 0.2
					if k == 19 {
						w = 4.1 // HotROD's driver at 4 dispatches at a time: 99 waits under 0.35 ms, one of 4.1
					}
					b.chain(root, "backend", 10, []float64{w}, 5, httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				if e.Backoff.Kind != BackoffImmediate || e.Backoff.Jitter != JitterNone {
					t.Errorf("backoff %s, want immediate with no jitter", fmtBackoff(e.Backoff))
				}
			},
		},
		{
			name: "waits spread from 0 to 6 ms are no immediate retry",
			build: func(b *builder) {
				sequential(b, 20, "api", func(root, k int) {
					b.chain(root, "backend", 10, []float64{0.3 * float64(k)}, 5, httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				if e := edge(t, tp, "api", "backend"); e.Backoff.Kind == BackoffImmediate {
					t.Errorf("backoff %s, want anything but immediate", fmtBackoff(e.Backoff))
				}
			},
		},
		{
			name: "immediate retries across enough calls: no backoff, no jitter",
			build: func(b *builder) {
				sequential(b, 5, "api", func(root, _ int) {
					b.chain(root, "backend", 10, []float64{0.2}, 5, httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				want := Backoff{Kind: BackoffImmediate, Jitter: JitterNone, JitterPresent: &boolF, Samples: 5, NoiseMS: 1.5}
				if !reflect.DeepEqual(withoutBaseRange(t, e.Backoff), want) {
					t.Errorf("backoff:\n got %s\nwant %s", fmtBackoff(e.Backoff), fmtBackoff(want))
				}
				wantFindings(t, tp, FindingNoJitter)
				wantEq(t, "message", finding(t, tp, FindingNoJitter).Message,
					"retries immediately with no jitter (5 waits): clients that fail together retry together")
			},
		},
		{
			name: "immediate first retry, then backoff: no kind fits, and the output still encodes",
			build: func(b *builder) {
				sequential(b, 5, "api", func(root, _ int) {
					b.chain(root, "backend", 10, []float64{0, 10, 20}, 5, httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				want := Backoff{Kind: "unknown", Jitter: "none", JitterPresent: &boolF, Samples: 15, NoiseMS: 1.5}
				if !reflect.DeepEqual(withoutBaseRange(t, e.Backoff), want) {
					t.Errorf("backoff:\n got %s\nwant %s", fmtBackoff(e.Backoff), fmtBackoff(want))
				}
				if _, err := json.Marshal(tp); err != nil {
					t.Errorf("topology does not encode: %v", err)
				}
			},
		},
		{
			name: "proportional jitter ±20% on exponential 100ms x2",
			build: func(b *builder) {
				rng := rand.New(rand.NewPCG(1, 2))
				sequential(b, 40, "api", func(root, _ int) {
					waits := make([]float64, 3)
					for k := range waits {
						waits[k] = 100 * math.Pow(2, float64(k)) * (1 + 0.4*(rng.Float64()-0.5))
					}
					b.chain(root, "backend", 10, waits, 5, httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				bo := edge(t, tp, "api", "backend").Backoff
				wantEq(t, "kind", bo.Kind, "exponential")
				wantEq(t, "jitter", bo.Jitter, "proportional")
				wantPtr(t, "jitter fraction", bo.JitterFraction, 0.2)
				wantPtr(t, "multiplier", bo.Multiplier, 2)
				wantNil(t, "cap", bo.CapMS)
				if bo.JitterPresent == nil || !*bo.JitterPresent {
					t.Errorf("jitter present: %v", bo.JitterPresent)
				}
				if math.Abs(bo.BaseMS-100) > 5 {
					t.Errorf("base %v, want 100±5", bo.BaseMS)
				}
				wantEq(t, "samples", bo.Samples, 120)
				wantFindings(t, tp)
			},
		},
	})
}

func fmtBackoff(b Backoff) string {
	f := func(p *float64) any {
		if p == nil {
			return "nil"
		}
		return *p
	}
	var jp any = "nil"
	if b.JitterPresent != nil {
		jp = *b.JitterPresent
	}
	var mr any = "nil"
	if b.MultiplierRange != nil {
		mr = *b.MultiplierRange
	}
	var ir any = "nil"
	if b.IncrementRangeMS != nil {
		ir = *b.IncrementRangeMS
	}
	var steps []string
	for _, s := range b.Schedule {
		steps = append(steps, fmt.Sprintf("%v%v", s.MS, s.RangeMS))
	}
	return fmt.Sprintf("kind=%s %v base=%v mult=%v (%v) inc=%v (%v) cap=%v jitter=%s frac=%v present=%v samples=%d steps=%v",
		b.Kind, b.KindCandidates, b.BaseMS, f(b.Multiplier), mr, f(b.IncrementMS), ir, f(b.CapMS), b.Jitter, f(b.JitterFraction), jp, b.Samples, steps)
}

// jitterWaits generates the waits of n calls of three retries each.
func jitterWaits(seed uint64, n int, wait func(rng *rand.Rand, k int, prev float64) float64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([][]float64, n)
	for i := range out {
		prev := 0.0
		for k := 0; k < 3; k++ {
			prev = wait(rng, k, prev)
			out[i] = append(out[i], prev)
		}
	}
	return out
}

// jitterSeeds is how many seeds TestJitterFormulas draws waits from. Over
// 200 seeds every formula but equal jitter is named every time; equal
// jitter (uniform on [b/2, b], i.e. ±1/3 around 0.75b) is read as
// proportional ±0.3–0.4 about one time in forty, an ambiguity of the
// formulas rather than of the inference.
const jitterSeeds = 20

// TestJitterFormulas checks each jitter formula is named over many seeds:
// the rule must hold for the formula, not for one lucky draw.
func TestJitterFormulas(t *testing.T) {
	const base = 100.0
	formulas := []struct {
		name string
		want JitterKind
		wait func(rng *rand.Rand, k int, prev float64) float64
	}{
		{"full", "full", func(rng *rand.Rand, k int, _ float64) float64 {
			return rng.Float64() * base * math.Pow(2, float64(k))
		}},
		{"equal", "equal", func(rng *rand.Rand, k int, _ float64) float64 {
			b := base * math.Pow(2, float64(k))
			return b/2 + rng.Float64()*b/2
		}},
		{"decorrelated", "decorrelated", func(rng *rand.Rand, k int, prev float64) float64 {
			if prev == 0 {
				prev = base
			}
			return min(10000, base+rng.Float64()*(3*prev-base))
		}},
		{"proportional", "proportional", func(rng *rand.Rand, k int, _ float64) float64 {
			return base * math.Pow(2, float64(k)) * (0.8 + 0.4*rng.Float64())
		}},
	}
	for _, f := range formulas {
		t.Run(f.name, func(t *testing.T) {
			for seed := uint64(1); seed <= jitterSeeds; seed++ {
				b := newBuilder()
				sequential(b, 40, "api", func(root, i int) {
					b.chain(root, "backend", 10, jitterWaits(seed, 40, f.wait)[i], 5, httpStatus(200))
				})
				bo := edge(t, b.infer(), "api", "backend").Backoff
				if bo.Jitter != f.want {
					t.Errorf("seed %d: jitter %s, want %s (%s)", seed, bo.Jitter, f.want, fmtBackoff(bo))
				}
				if f.name == "full" && math.Abs(bo.BaseMS-base) > 0.35*base {
					t.Errorf("seed %d: full jitter base %v, want about %v", seed, bo.BaseMS, base)
				}
			}
		})
	}
}

// TestTimeouts covers Retry-After, per-try timeouts and deadlines.
func TestTimeouts(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "Retry-After honoured",
			build: func(b *builder) {
				root := b.server(-1, "api", "GET /", 0, 300)
				b.call(root, "backend", "GET /api", 10, 5, httpStatus(429), retryAfter(100))
				b.call(root, "backend", "GET /api", 115, 5, httpStatus(200))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantEq(t, "honoured", e.RetryAfterHonored, 1)
				wantEq(t, "ignored", e.RetryAfterIgnored, 0)
				// The only wait was the server's: nothing is left to read a backoff from.
				wantEq(t, "backoff samples", e.Backoff.Samples, 0)
				wantEq(t, "backoff kind", e.Backoff.Kind, "unknown")
				if !reflect.DeepEqual(e.RetriedStatus, []string{"429"}) {
					t.Errorf("retried %q", e.RetriedStatus)
				}
				wantFindings(t, tp)
			},
		},
		{
			name: "Retry-After ignored",
			build: func(b *builder) {
				root := b.server(-1, "api", "GET /", 0, 300)
				b.call(root, "backend", "GET /api", 10, 5, httpStatus(503), retryAfter(100))
				b.call(root, "backend", "GET /api", 25, 5, httpStatus(200))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantEq(t, "honoured", e.RetryAfterHonored, 0)
				wantEq(t, "ignored", e.RetryAfterIgnored, 1)
				wantEq(t, "backoff samples", e.Backoff.Samples, 1)
				wantFindings(t, tp, FindingRetryAfter)
			},
		},
		{
			name: "per-try timeout 100ms from clustered timed-out attempts, below the callee p99",
			build: func(b *builder) {
				sequential(b, 4, "api", func(root, _ int) {
					c := b.client(root, "backend", 10, 100, failed("context deadline exceeded"))
					b.server(c, "backend", "GET /slow", 10.5, 250) // the callee went on working
					b.call(root, "backend", "GET /slow", 120, 30, httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantShape(t, e, shape{Calls: 4, Attempts: 8, Hist: []int{0, 4}, Retries: true, Max: 2, Evidence: "timing",
					Retried: []string{"timeout"}, NotRetry: none})
				wantPtr(t, "per-try timeout", e.PerTryTimeoutMS, 100)
				wantEq(t, "callee p99", e.CalleeP99MS, 250.0)
				wantFindings(t, tp, FindingTimeoutBelowP99, FindingNoJitter)
			},
		},
		{
			name: "per-try timeout is not confused by fast connection refusals",
			build: func(b *builder) {
				sequential(b, 5, "api", func(root, i int) {
					if i < 3 {
						b.client(root, "backend", 10, 1, failed("dial tcp: connection refused"))
					} else {
						b.client(root, "backend", 10, 100, failed("context deadline exceeded"))
					}
					b.call(root, "backend", "GET /api", 120, 30, httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantPtr(t, "per-try timeout", edge(t, tp, "api", "backend").PerTryTimeoutMS, 100)
			},
		},
		{
			name: "no per-try timeout when a success outlasts the failures",
			build: func(b *builder) {
				sequential(b, 3, "api", func(root, i int) {
					b.client(root, "backend", 10, 100, failed("context deadline exceeded"))
					b.call(root, "backend", "GET /api", 120, []float64{30, 30, 150}[i], httpStatus(200))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantNil(t, "per-try timeout", edge(t, tp, "api", "backend").PerTryTimeoutMS)
			},
		},
		{
			name: "inner retry starts after the upstream client gave up",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 400)
				c := b.client(root, "backend", 10, 100, failed("context deadline exceeded"))
				s := b.server(c, "backend", "GET /api", 10.5, 300)
				b.client(s, "postgres", 20, 100, name("SELECT orders"), failed("timeout"))
				b.client(s, "postgres", 150, 10, name("SELECT orders"), statusOK())
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "backend", "postgres")
				wantEq(t, "outlived caller", e.OutlivedCaller, 1)
				wantEq(t, "frontend → backend outlived", edge(t, tp, "frontend", "backend").OutlivedCaller, 0)
				wantFindings(t, tp, FindingOutlivedCaller)
				wantEq(t, "location", tp.Findings[0].Location, "backend → postgres SELECT orders")
			},
		},
	})
}

// TestFindings covers idempotency, 4xx retries, layering and amplification.
func TestFindings(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "POST retried without idempotency key",
			build: func(b *builder) {
				root := b.server(-1, "checkout", "POST /order", 0, 100)
				b.call(root, "payments", "POST /charge", 10, 5, method("POST"), httpStatus(503), target("http://payments/charge"))
				b.call(root, "payments", "POST /charge", 20, 5, method("POST"), httpStatus(200), target("http://payments/charge"))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "checkout", "payments")
				if e.Idempotency == nil || *e.Idempotency != (Idempotency{RetriedCalls: 1}) {
					t.Errorf("idempotency: %+v", e.Idempotency)
				}
				wantFindings(t, tp, FindingNoIdempotency)
				wantEq(t, "message", tp.Findings[0].Message,
					"1 of 1 retried POST calls carry no idempotency key: a retry after a lost response repeats the write")
			},
		},
		{
			name: "POST retried with an idempotency key",
			build: func(b *builder) {
				root := b.server(-1, "checkout", "POST /order", 0, 100)
				b.call(root, "payments", "POST /charge", 10, 5, method("POST"), httpStatus(503), idemKey())
				b.call(root, "payments", "POST /charge", 20, 5, method("POST"), httpStatus(200), idemKey())
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "checkout", "payments")
				if e.Idempotency == nil || *e.Idempotency != (Idempotency{RetriedCalls: 1, WithKey: 1}) {
					t.Errorf("idempotency: %+v", e.Idempotency)
				}
				wantFindings(t, tp)
			},
		},
		{
			name: "4xx retried",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 100)
				for i, st := range []int{400, 400, 200} {
					b.call(root, "backend", "GET /items", 10+float64(i)*10, 5, httpStatus(st), target("http://backend/items?id=x"))
				}
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "frontend", "backend"), shape{Calls: 1, Attempts: 3, Hist: []int{0, 0, 1}, Retries: true,
					Max: 3, Evidence: "timing", Retried: []string{"400"}, NotRetry: none})
				wantFindings(t, tp, FindingRetry4xx)
			},
		},
		{
			name: "three retrying layers: multi-layer, worst case 27",
			build: func(b *builder) {
				svcs := []string{"frontend", "a", "b", "c"}
				// layer adds a SERVER span of svcs[0] at start whose calls to
				// svcs[1] fail three times; it returns the span's end.
				var layer func(parent int, svcs []string, start float64) float64
				layer = func(parent int, svcs []string, start float64) float64 {
					s := b.server(parent, svcs[0], "op", start, 0, httpStatus(503))
					t := start + 1
					for k := 0; len(svcs) > 1 && k < 3; k++ {
						c := b.client(s, svcs[1], t, 0, httpStatus(503))
						end := layer(c, svcs[1:], t+0.5) + 0.5
						b.end(c, end)
						t = end + 2
					}
					b.end(s, t)
					return t
				}
				layer(-1, svcs, 0)
			},
			check: func(t *testing.T, tp *Topology) {
				for _, hop := range [][2]string{{"frontend", "a"}, {"a", "b"}, {"b", "c"}} {
					e := edge(t, tp, hop[0], hop[1])
					wantEq(t, hop[0]+"→"+hop[1]+" max", e.MaxAttempts, 3)
					wantEq(t, hop[0]+"→"+hop[1]+" exact", e.MaxAttemptsExact, true)
				}
				wantEq(t, "b→c calls", edge(t, tp, "b", "c").Calls, 9)
				if len(tp.Paths) != 1 {
					t.Fatalf("paths: %+v", tp.Paths)
				}
				p := tp.Paths[0]
				want := Path{Services: []string{"frontend", "a", "b", "c"}, Operations: []string{"op", "op", "op", "op"},
					RetryingLayers: []string{"frontend", "a", "b"}, WorstCaseAmplification: 27, WorstCaseExact: true, ObservedMaxAmplification: 27,
					// The deepest retrying layer's call: b's three attempts at c.
					Examples: []Example{{TraceID: "00000000000000000000000000000001", SpanIDs: []string{"0000000000000006", "0000000000000008", "000000000000000a"}}}}
				if !reflect.DeepEqual(p, want) {
					t.Errorf("path:\n got %+v\nwant %+v", p, want)
				}
				wantFindings(t, tp, FindingMultiLayer, FindingDependencyDown, FindingNoJitter)
				wantEq(t, "message", tp.Findings[0].Message, "3 layers retry (frontend, a, b): one request can become 27x attempts at c")
			},
		},
		{
			name: "observed amplification excludes fan-out",
			build: func(b *builder) {
				root := b.server(-1, "frontend", "GET /", 0, 300)
				for i := 0; i < 3; i++ {
					start := 10 + float64(i)*40
					_, s := b.call(root, "backend", "GET /item", start, 35, httpStatus(200), target("http://backend/item?id="+string(rune('a'+i))))
					b.client(s, "postgres", start+2, 5, name("SELECT item"), failed("connection reset"))
					b.client(s, "postgres", start+10, 5, name("SELECT item"), statusOK())
				}
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "frontend", "backend"), shape{Calls: 3, Attempts: 3, Hist: []int{3}, Max: 1,
					Retried: none, NotRetry: none})
				if len(tp.Paths) != 1 {
					t.Fatalf("paths: %+v", tp.Paths)
				}
				p := tp.Paths[0]
				wantEq(t, "worst case", p.WorstCaseAmplification, 2)
				wantEq(t, "observed", p.ObservedMaxAmplification, 2.0)
				if !reflect.DeepEqual(p.RetryingLayers, []string{"backend"}) {
					t.Errorf("retrying layers %q", p.RetryingLayers)
				}
			},
		},
		{
			name: "retries against a dependency failing for every caller",
			build: func(b *builder) {
				for _, caller := range []string{"api", "worker"} {
					sequential(b, 3, caller, func(root, _ int) {
						b.chain(root, "backend", 10, []float64{10}, 5)
					})
					b.newTrace()
				}
			},
			check: func(t *testing.T, tp *Topology) {
				wantFindings(t, tp, FindingDependencyDown, FindingDependencyDown)
				wantEq(t, "first location", tp.Findings[0].Location, "api → backend GET")
				wantEq(t, "message", tp.Findings[0].Message, "backend fails 100% of 12 attempts from every caller: retries only add load")
			},
		},
	})
}

// TestInferNeverPanics runs Infer on random but structurally valid sets:
// random parents (cycles, self-parents, missing parents, duplicates), kinds,
// statuses and markers. The result must also encode as JSON.
func TestInferNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for iter := 0; iter < 400; iter++ {
		set := ingest.NewSet()
		n := 1 + rng.IntN(60)
		ntraces := 1 + rng.IntN(3)
		for i := 0; i < n; i++ {
			var sp ingest.Record
			sp.TraceID[15] = byte(rng.IntN(ntraces))
			sp.SpanID[7] = byte(1 + rng.IntN(n+2)) // duplicates happen
			switch r := rng.IntN(10); {
			case r < 2: // root
			case r < 9:
				sp.ParentID[7] = byte(1 + rng.IntN(n+2)) // any span: cycles, self-parents
			default:
				sp.ParentID[6] = 0xff // missing parent
			}
			start := rng.Int64N(2e9)
			sp.Start, sp.End = start, start+rng.Int64N(3e8)
			sp.Kind = ingest.Kind(rng.IntN(6))
			sp.Status = ingest.Status(rng.IntN(3))
			sp.Service = set.Intern(pick("a", "b", "c", "d"))
			sp.Name = set.Intern(pick("GET", "op", "Attempt.x", "", "SELECT"))
			sp.Peer = set.Intern(pick("", "", "b", "c", "db"))
			sp.Method = set.Intern(pick("", "GET", "POST"))
			sp.Route = set.Intern(pick("", "/x", "/y"))
			sp.StatusMessage = set.Intern(pick("", "timeout", "refused"))
			sp.Target = uint64(rng.IntN(3))
			sp.HTTPStatus = uint16([]int{0, 0, 200, 302, 400, 401, 404, 408, 429, 500, 503}[rng.IntN(11)])
			sp.GRPCStatus = int8(rng.IntN(18) - 1)
			sp.ResendCount = int16(rng.IntN(5) - 1)
			sp.PrevAttempts = int16(rng.IntN(5) - 1)
			sp.RetryCount = int16(rng.IntN(5) - 1)
			sp.RetryAfterMS = int32(rng.IntN(300) - 1)
			sp.Flags = uint8(rng.IntN(8))
			set.Append(sp)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("iteration %d: Infer panicked: %v", iter, r)
				}
			}()
			tp, err := Infer(context.Background(), set)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := json.Marshal(tp); err != nil {
				t.Fatalf("iteration %d: topology does not encode: %v", iter, err)
			}
		}()
	}
}

// TestInferInvariantsOnRandomChains builds random but well-formed retry
// chains (random waits including immediate and overlapping ones, random
// statuses and markers, random nesting) and checks what every topology
// must satisfy.
func TestInferInvariantsOnRandomChains(t *testing.T) {
	rng := rand.New(rand.NewPCG(2024, 11))
	statuses := []opt{httpStatus(200), httpStatus(503), httpStatus(429), httpStatus(404), httpStatus(302),
		grpcCode(0), grpcCode(14), grpcCode(3), failed("context deadline exceeded"), failed("connection refused"), statusOK()}
	svcs := []string{"a", "b", "c", "db"}
	for iter := 0; iter < 300; iter++ {
		b := newBuilder()
		var grow func(parent int, depth int, start float64) float64
		grow = func(parent int, depth int, start float64) float64 {
			t := start + rng.Float64()*3
			for n := rng.IntN(4); n > 0; n-- {
				peer := svcs[rng.IntN(len(svcs))]
				tgt := target([]string{"x", "y", ""}[rng.IntN(3)])
				for k := rng.IntN(5); k >= 0; k-- {
					opts := []opt{statuses[rng.IntN(len(statuses))], tgt}
					switch rng.IntN(8) {
					case 0:
						opts = append(opts, resend(rng.IntN(4)))
					case 1:
						opts = append(opts, retryCount(rng.IntN(3)))
					case 2:
						opts = append(opts, retryAfter(rng.IntN(200)))
					case 3:
						opts = append(opts, method("POST"))
					}
					dur := []float64{0, 1, 5, 100, rng.Float64() * 50}[rng.IntN(5)]
					c := b.client(parent, peer, t, dur, opts...)
					end := t + dur
					if peer != "db" && depth < 3 && rng.IntN(3) > 0 {
						s := b.server(c, peer, "op"+peer, t+0.1, 0)
						end = max(end, grow(s, depth+1, t+0.1)+0.1)
						b.end(s, end-0.1)
						b.end(c, end)
					}
					wait := []float64{0, -0.01, -5, 10, 25, rng.Float64() * 100}[rng.IntN(6)]
					t = end + wait
				}
			}
			return t
		}
		for r := rng.IntN(4) + 1; r > 0; r-- {
			b.newTrace()
			root := b.server(-1, "a", "GET /", 0, 0)
			b.end(root, grow(root, 0, 0)+1)
		}
		tp := b.infer()
		if _, err := json.Marshal(tp); err != nil {
			t.Fatalf("iteration %d: topology does not encode: %v", iter, err)
		}
		for _, e := range tp.Edges {
			hedged := 0
			if e.Hedging != nil {
				hedged = e.Hedging.Calls
			}
			sum := 0
			for _, h := range e.AttemptsHistogram {
				sum += h
			}
			switch {
			case e.Calls < 1 || e.Attempts < 1:
				t.Errorf("iteration %d: %s: %d calls, %d attempts", iter, edgeLocation(e), e.Calls, e.Attempts)
			case sum+hedged != e.Calls:
				t.Errorf("iteration %d: %s: histogram %v + %d hedged != %d calls", iter, edgeLocation(e), e.AttemptsHistogram, hedged, e.Calls)
			case e.Retries != (e.MaxAttempts > 1):
				t.Errorf("iteration %d: %s: retries %v with max attempts %d", iter, edgeLocation(e), e.Retries, e.MaxAttempts)
			case sum > 0 && len(e.AttemptsHistogram) != e.MaxAttempts:
				t.Errorf("iteration %d: %s: histogram %v, max attempts %d", iter, edgeLocation(e), e.AttemptsHistogram, e.MaxAttempts)
			case e.Attempts+e.MissingAttempts < e.Calls:
				t.Errorf("iteration %d: %s: %d attempts for %d calls", iter, edgeLocation(e), e.Attempts, e.Calls)
			}
		}
		rank := map[Severity]int{SeverityHigh: 0, SeverityMedium: 1, SeverityLow: 2}
		for i := 1; i < len(tp.Findings); i++ {
			if rank[tp.Findings[i-1].Severity] > rank[tp.Findings[i].Severity] {
				t.Errorf("iteration %d: findings not sorted by severity: %+v", iter, tp.Findings)
			}
		}
		for _, p := range tp.Paths {
			if p.WorstCaseAmplification < 1 || p.ObservedMaxAmplification > float64(p.WorstCaseAmplification)+1e-9 && p.WorstCaseExact {
				t.Errorf("iteration %d: path %v: worst case %d (exact %v), observed %v", iter, p.Services, p.WorstCaseAmplification, p.WorstCaseExact, p.ObservedMaxAmplification)
			}
		}
	}
}

// TestClassify covers which answers a retry policy sees as failures.
func TestClassify(t *testing.T) {
	cases := []struct {
		name   string
		client []opt
		server []opt // nil: no server span
		want   outcome
		label  string
	}{
		{"200", []opt{httpStatus(200)}, nil, outcomeOK, "200"},
		{"302 redirect", []opt{httpStatus(302)}, nil, outcomeChallenge, "302"},
		{"401 challenge", []opt{httpStatus(401)}, nil, outcomeChallenge, "401"},
		{"407 proxy challenge", []opt{httpStatus(407)}, nil, outcomeChallenge, "407"},
		{"400", []opt{httpStatus(400)}, nil, outcomeClientError, "400"},
		{"404", []opt{httpStatus(404)}, nil, outcomeClientError, "404"},
		{"408", []opt{httpStatus(408)}, nil, outcomeRetryable, "408"},
		{"429", []opt{httpStatus(429)}, nil, outcomeRetryable, "429"},
		{"500", []opt{httpStatus(500)}, nil, outcomeRetryable, "500"},
		{"503", []opt{httpStatus(503)}, nil, outcomeRetryable, "503"},
		{"grpc OK", []opt{grpcCode(0)}, nil, outcomeOK, "grpc OK"},
		{"grpc DEADLINE_EXCEEDED", []opt{grpcCode(4)}, nil, outcomeRetryable, "grpc DEADLINE_EXCEEDED"},
		{"grpc RESOURCE_EXHAUSTED", []opt{grpcCode(8)}, nil, outcomeRetryable, "grpc RESOURCE_EXHAUSTED"},
		{"grpc UNAVAILABLE", []opt{grpcCode(14)}, nil, outcomeRetryable, "grpc UNAVAILABLE"},
		{"grpc INVALID_ARGUMENT", []opt{grpcCode(3)}, nil, outcomeClientError, "grpc INVALID_ARGUMENT"},
		{"grpc NOT_FOUND", []opt{grpcCode(5)}, nil, outcomeClientError, "grpc NOT_FOUND"},
		{"timeout", []opt{failed("context deadline exceeded")}, nil, outcomeRetryable, "timeout"},
		{"read timed out", []opt{failed("Read timed out")}, nil, outcomeRetryable, "timeout"},
		{"transport error", []opt{failed("connection reset by peer")}, nil, outcomeRetryable, "transport error"},
		{"no status", nil, nil, outcomeOK, "ok"},
		{"client silent, server 503", nil, []opt{httpStatus(503)}, outcomeRetryable, "503"},
		{"client error wins over server 200", []opt{failed("context deadline exceeded")}, []opt{httpStatus(200)}, outcomeRetryable, "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			root := b.server(-1, "frontend", "GET /", 0, 100)
			c := b.client(root, "backend", 10, 5, tc.client...)
			s := -1
			if tc.server != nil {
				s = b.server(c, "backend", "GET /api", 10.5, 4, tc.server...)
			}
			ix, err := newIndex(context.Background(), b.set)
			if err != nil {
				t.Fatal(err)
			}
			o, label := classify(ix, int32(c), int32(s))
			if o != tc.want || label.String() != tc.label {
				t.Errorf("got %d %q, want %d %q", o, label, tc.want, tc.label)
			}
		})
	}
}

// TestExamples: every edge and finding names up to three traces, the calls
// with the most attempts first, one per trace, whatever the input order.
func TestExamples(t *testing.T) {
	b := newBuilder()
	for i := 0; i < 9; i++ {
		b.newTrace()
		root := b.server(-1, "frontend", "GET /", 0, 100)
		waits := []float64{}
		for k := 0; k < i%3; k++ {
			waits = append(waits, 10)
		}
		b.chain(root, "api", 1, waits, 5, httpStatus(200))
	}
	tp := b.infer()
	e := edge(t, tp, "frontend", "api")
	if len(e.Examples) != 3 {
		t.Fatalf("examples: %+v", e.Examples)
	}
	// Traces 4, 7 and 10 made three attempts; ids break the tie.
	want := []string{"00000000000000000000000000000004", "00000000000000000000000000000007", "0000000000000000000000000000000a"}
	for i, ex := range e.Examples {
		wantEq(t, "trace", ex.TraceID, want[i])
	}
	wantEq(t, "spans of the first example", len(e.Examples[0].SpanIDs), 3)
	// The user edge's examples are root requests, by trace id (none failed).
	u := edge(t, tp, "user", "frontend")
	if len(u.Examples) != 3 || u.Examples[0].TraceID != "00000000000000000000000000000002" || len(u.Examples[0].SpanIDs) != 1 {
		t.Errorf("user edge examples %+v", u.Examples)
	}
	for _, f := range tp.Findings {
		if len(f.Examples) == 0 || len(f.Examples) > 3 {
			t.Errorf("finding %s: %d examples", f.ID, len(f.Examples))
		}
	}
	if len(tp.Findings) == 0 {
		t.Fatal("want a no-jitter finding to carry examples")
	}
	// Reversed input order, same examples.
	slices.Reverse(b.set.Spans)
	if got := b.infer(); !reflect.DeepEqual(edge(t, got, "frontend", "api").Examples, e.Examples) {
		t.Errorf("examples depend on input order:\n%+v\n%+v", edge(t, got, "frontend", "api").Examples, e.Examples)
	}
}

// TestInferCanceled: a cancelled context stops inference with its error.
func TestInferCanceled(t *testing.T) {
	b := newBuilder()
	root := b.server(-1, "frontend", "GET /", 0, 100)
	b.call(root, "api", "GET /x", 1, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tp, err := Infer(ctx, b.set)
	if !errors.Is(err, context.Canceled) || tp != nil {
		t.Fatalf("got %v, %v; want context.Canceled and no topology", tp, err)
	}
	if _, _, err := InferWithArrivals(ctx, b.set); !errors.Is(err, context.Canceled) {
		t.Fatalf("InferWithArrivals: got %v, want context.Canceled", err)
	}
}

// TestFindingExamples: a finding's examples are the calls that show it,
// not any call of its edge.
func TestFindingExamples(t *testing.T) {
	b := newBuilder()
	for i := 0; i < 4; i++ {
		b.newTrace()
		root := b.server(-1, "frontend", "GET /", 0, 400)
		c := b.client(root, "backend", 10, 100, failed("context deadline exceeded"))
		s := b.server(c, "backend", "GET /api", 10.5, 300)
		b.client(s, "postgres", 20, 50, name("SELECT orders"), failed("timeout"))
		retryAt := 80.0
		if i == 2 {
			retryAt = 150 // after frontend gave up at 110
		}
		b.client(s, "postgres", retryAt, 10, name("SELECT orders"), statusOK())
	}
	f := finding(t, b.infer(), FindingOutlivedCaller)
	if len(f.Examples) != 1 || f.Examples[0].TraceID != "00000000000000000000000000000004" {
		t.Errorf("examples %+v, want only trace 4's call", f.Examples)
	}
}

// withoutBaseRange returns b without its base range and per-retry
// schedule, after checking that each range holds the wait it was read
// around and that the schedule starts at the base (the figures of the
// ranges are checked against the configured policies in TestTruth).
func withoutBaseRange(t *testing.T, b Backoff) Backoff {
	t.Helper()
	if r := b.BaseRangeMS; r != nil && (r[0] > b.BaseMS || r[1] < b.BaseMS) {
		t.Errorf("base range %v excludes the base %v", *r, b.BaseMS)
	}
	for i, s := range b.Schedule {
		if s.Retry != i+1 || s.RangeMS[0] > s.MS || s.RangeMS[1] < s.MS || i == 0 && s.MS != b.BaseMS {
			t.Errorf("schedule step %d: %+v (base %v)", i, s, b.BaseMS)
		}
	}
	b.BaseRangeMS, b.Schedule = nil, nil
	return b
}
