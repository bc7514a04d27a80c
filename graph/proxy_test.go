package graph

import (
	"strconv"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

func sidecar() opt { return func(_ *ingest.Set, sp *ingest.Record) { sp.Flags |= ingest.FlagProxy } }
func retryLimit() opt {
	return func(_ *ingest.Set, sp *ingest.Record) { sp.Flags |= ingest.FlagProxy | ingest.FlagRetryLimit }
}

// TestSidecarRetries: Envoy/Istio sidecar spans are a layer of their
// application, not a service; their retries are the proxy's; the
// application's own retries through the sidecar stay the application's.
func TestSidecarRetries(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "an app client span over three sidecar tries: proxy retries, exhausted at URX",
			build: func(b *builder) {
				sequential(b, 3, "productpage", func(root, i int) {
					app := b.client(root, "reviews:9080", 1, 60, httpStatus(503))
					for k := 0; k < 3; k++ {
						opts := []opt{httpStatus(503), sidecar()}
						if k == 2 && i == 0 {
							opts = []opt{httpStatus(503), retryLimit()}
						}
						tr := b.add(app, ingest.KindClient, "productpage.default", "reviews.default.svc.cluster.local:9080/*",
							float64(2+20*k), 10, append(opts, peer("reviews.default.svc.cluster.local")))
						b.server(tr, "reviews", "GET /reviews", float64(2+20*k)+0.5, 9, httpStatus(503))
					}
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "productpage", "reviews")
				wantShape(t, e, shape{Calls: 3, Attempts: 9, Hist: []int{0, 0, 3}, Retries: true, Max: 3, Exact: true,
					Evidence: "proxy", Retried: s503, NotRetry: none})
				wantEq(t, "retries by", e.RetriesBy, "proxy")
				for _, s := range tp.Services {
					if s.Name == "productpage.default" {
						t.Errorf("the sidecar drawn as a service: %+v", tp.Services)
					}
				}
			},
		},
		{
			name: "a sidecar span alone with x-envoy-attempt-count 3",
			build: func(b *builder) {
				root := b.server(-1, "productpage.default", "GET /", 0, 100, sidecar())
				b.add(root, ingest.KindClient, "productpage.default", "reviews:9080/*", 1, 50,
					[]opt{httpStatus(200), sidecar(), retryCount(2), peer("reviews.default.svc.cluster.local")})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "productpage", "reviews")
				wantEq(t, "attempts", e.Attempts, 3)
				wantEq(t, "retries by", e.RetriesBy, "proxy")
			},
		},
		{
			name: "application retries, one sidecar try each: the application's",
			build: func(b *builder) {
				root := b.server(-1, "productpage", "GET /", 0, 100)
				for k := 0; k < 2; k++ {
					status := []int{503, 200}[k]
					app := b.client(root, "reviews:9080", float64(1+30*k), 12, httpStatus(status))
					tr := b.add(app, ingest.KindClient, "productpage.default", "reviews:9080/*", float64(1.2+30*float64(k)), 11,
						[]opt{httpStatus(status), sidecar()})
					b.server(tr, "reviews", "GET /reviews", float64(1.5+30*float64(k)), 10, httpStatus(status))
				}
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "productpage", "reviews")
				wantShape(t, e, shape{Calls: 1, Attempts: 2, Hist: []int{0, 1}, Retries: true, Max: 2, Evidence: "timing",
					Retried: s503, NotRetry: none})
				wantEq(t, "retries by", e.RetriesBy, "application")
				wantEq(t, "operation", e.Operation, "GET /reviews")
			},
		},
	})
}

// TestOneClientSpanManyAttempts: grpc-js with a service-config retry
// policy (a library below the instrumentation) shows one CLIENT span over
// several callee SERVER spans: each is an attempt, and the gaps between
// them are waits of the backoff.
func TestOneClientSpanManyAttempts(t *testing.T) {
	b := newBuilder()
	sequential(b, 6, "web", func(root, i int) {
		c := b.client(root, "stock", 1, 200, grpcCode(0), method("Get"))
		at := 2.0
		for k := 0; k < 3; k++ {
			code := 14 // UNAVAILABLE
			if k == 2 {
				code = 0
			}
			b.server(c, "stock", "stock.Stock/Get", at, 5, grpcCode(code))
			at += 5 + 10*float64(int(1)<<k) // 10ms, then 20ms
		}
	})
	e := edge(t, b.infer(), "web", "stock")
	wantShape(t, e, shape{Calls: 6, Attempts: 18, Hist: []int{0, 0, 6}, Retries: true, Max: 3, Evidence: "below-instrumentation",
		Retried: []string{"grpc UNAVAILABLE"}, NotRetry: none})
	wantEq(t, "backoff", e.Backoff.Kind, "exponential")
	wantEq(t, "base", e.Backoff.BaseMS, 10.0)
	// Six waits at each step, within a noise of 1.5ms: ×1.6 to ×2.6 fit
	// them, so the multiplier is unknown and its fit and range say why.
	wantNil(t, "multiplier", e.Backoff.Multiplier)
	wantPtr(t, "multiplier fit", e.Backoff.MultiplierFit, 2)
	if r := e.Backoff.MultiplierRange; r == nil || r[0] > 2 || r[1] < 2 || r[1] < 4.0/3*r[0] {
		t.Errorf("multiplier range %v: want a range wider than a third that holds ×2", r)
	}
	wantEq(t, "waits", e.Backoff.Samples, 12)
}

// TestProxyWithoutClientSpans: a reverse proxy that traces only the
// requests it serves (one SERVER span, no CLIENT span per try) and passes
// its span's context upstream shows each try as a SERVER span of the
// callee directly under its own. Tries of one request, each after the
// previous one failed, are one call whatever replica answered; they are
// the proxy's retries when the request is the one the proxy received
// (same method and target).
func TestProxyWithoutClientSpans(t *testing.T) {
	// gateway builds n traces: a root SERVER span of shop calling the
	// gateway, whose SERVER span (path /items/i) sends the statuses of
	// tries(i) to replicas of catalog in turn, each 2ms, 10ms apart.
	gateway := func(b *builder, n int, tries func(i int) []int, path func(i int) string) {
		sequential(b, n, "shop", func(root, i int) {
			c := b.client(root, "gateway:80", 1, 100)
			gw := b.server(c, "gateway", "handler", 1.5, 99, method("GET"), target("/items/"+strconv.Itoa(i)))
			at := 2.0
			for k, status := range tries(i) {
				b.server(gw, "catalog", "GET /items/{id}", at, 2, httpStatus(status), method("GET"), target(path(i)),
					func(s *ingest.Set, sp *ingest.Record) { sp.Peer = s.Intern("catalog-" + strconv.Itoa(k%3+1)) })
				at += 2 + 10
			}
		})
	}
	same := func(i int) string { return "/items/" + strconv.Itoa(i) }
	runCases(t, []inferCase{
		{
			name: "tries across replicas after failures: one call each, the proxy's retries",
			build: func(b *builder) {
				gateway(b, 6, func(i int) []int {
					return [][]int{{503, 503, 503}, {503, 200}, {503, 503, 200}, {200}, {502, 200}, {503, 200}}[i]
				}, same)
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "gateway", "catalog")
				wantShape(t, e, shape{Calls: 6, Attempts: 13, Hist: []int{1, 3, 2}, Retries: true, Max: 3, Exact: true,
					Evidence: "below-instrumentation", Retried: []string{"502", "503"}, NotRetry: none})
				wantEq(t, "retries by", e.RetriesBy, "proxy")
				wantEq(t, "proxy most tries", e.ProxyMostTries, 3)
				if g := edge(t, tp, "shop", "gateway"); g.Retries || g.Calls != 6 {
					t.Errorf("shop → gateway: %d calls, retries %v; want 6 calls, none retried", g.Calls, g.Retries)
				}
				if len(tp.Paths) != 1 || strings.Join(tp.Paths[0].Services, " → ") != "shop → gateway → catalog" || tp.Paths[0].WorstCaseAmplification != 3 {
					t.Errorf("paths %+v: want shop → gateway → catalog, 3x", tp.Paths)
				}
			},
		},
		{
			name: "tries under an INTERNAL span of the proxy's: still the proxy's, read against its SERVER span",
			build: func(b *builder) {
				sequential(b, 4, "shop", func(root, i int) {
					c := b.client(root, "gateway:80", 1, 100)
					path := "/items/" + strconv.Itoa(i)
					gw := b.server(c, "gateway", "handler", 1.5, 99, method("GET"), target(path))
					lb := b.add(gw, ingest.KindInternal, "gateway", "reverse_proxy", 1.8, 98, nil)
					b.server(lb, "catalog", "GET /items/{id}", 2, 2, httpStatus(503), method("GET"), target(path))
					b.server(lb, "catalog", "GET /items/{id}", 14, 2, httpStatus(200), method("GET"), target(path))
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "gateway", "catalog")
				wantShape(t, e, shape{Calls: 4, Attempts: 8, Hist: []int{0, 4}, Retries: true, Max: 2,
					Evidence: "below-instrumentation", Retried: s503, NotRetry: none})
				wantEq(t, "retries by", e.RetriesBy, "proxy")
			},
		},
		{
			name: "a service retrying a request of its own without client spans: the application's",
			build: func(b *builder) {
				gateway(b, 4, func(i int) []int { return []int{503, 200} }, func(i int) string { return "/stock/" + strconv.Itoa(i) })
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "gateway", "catalog")
				wantShape(t, e, shape{Calls: 4, Attempts: 8, Hist: []int{0, 4}, Retries: true, Max: 2,
					Evidence: "below-instrumentation", Retried: s503, NotRetry: none})
				wantEq(t, "retries by", e.RetriesBy, "application")
			},
		},
		{
			name: "a loop over items without client spans: a success, or a failure then another item, is not a retry",
			build: func(b *builder) {
				sequential(b, 3, "orders", func(root, i int) {
					for k, status := range []int{200, 503, 200} {
						b.server(root, "catalog", "GET /items/{id}", float64(1+10*k), 2, httpStatus(status), method("GET"),
							target("/items/"+strconv.Itoa(10*i+k)))
					}
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "orders", "catalog")
				wantShape(t, e, shape{Calls: 9, Attempts: 9, Hist: []int{9}, Max: 1, Exact: true,
					Retried: none, NotRetry: s503})
			},
		},
		{
			name: "a SERVER span of the same service under another: no call",
			build: func(b *builder) {
				root := b.server(-1, "shop", "GET /", 0, 50)
				b.server(root, "shop", "GET /inner", 1, 10, httpStatus(503))
				b.server(root, "shop", "GET /inner", 15, 10)
			},
			check: func(t *testing.T, tp *Topology) {
				for _, e := range tp.Edges {
					if e.Caller == "shop" {
						t.Errorf("edge %s → %s from spans of one service", e.Caller, e.Callee)
					}
				}
			},
		},
	})
}

// route sets the span's route (http.route, or its path templated).
func route(r string) opt { return func(s *ingest.Set, sp *ingest.Record) { sp.Route = s.Intern(r) } }

// TestProxyClientSpans: a reverse proxy that makes a client span per try
// (Traefik's "ReverseProxy" spans). Its tries are one call however deep
// the per-try spans it wraps them in; they are the proxy's retries when
// the client spans forward the request its SERVER span serves (same
// method and route), the application's otherwise.
func TestProxyClientSpans(t *testing.T) {
	// try is one try: the replica (its port) and the status; 0 for a
	// refused dial (502, an error, no replica span).
	type try struct {
		port   int
		status int
	}
	// proxy builds one trace per call: shop's root calls the proxy, whose
	// SERVER span serves GET path(i); under it (or, detailed, under a
	// "Router" span and per try a "Retry" span, resend count from the
	// second, with a "Service" span inside) a CLIENT span per try to
	// catalog at 127.0.0.1:port, 2ms each, 10ms apart.
	proxy := func(b *builder, detailed bool, served, sent func(i int) string, calls [][]try) {
		sequential(b, len(calls), "shop", func(root, i int) {
			c := b.client(root, "proxy:80", 1, 200)
			srv := b.server(c, "proxy", "GET", 1.5, 199, method("GET"), route(templated(served(i))), target(served(i)))
			under := srv
			if detailed {
				under = b.add(srv, ingest.KindInternal, "proxy", "Router", 1.6, 198, nil)
			}
			at := 2.0
			for k, tr := range calls[i] {
				parent := under
				if detailed {
					var opts []opt
					if k > 0 {
						opts = append(opts, resend(k))
					}
					parent = b.add(under, ingest.KindInternal, "proxy", "Retry", at-0.2, 12, opts)
					parent = b.add(parent, ingest.KindInternal, "proxy", "Service", at-0.1, 2.2, nil)
				}
				url := "http://127.0.0.1:" + strconv.Itoa(tr.port) + sent(i)
				opts := []opt{method("GET"), route(templated(sent(i))), target(url), func(s *ingest.Set, sp *ingest.Record) {
					sp.Peer = s.Intern("127.0.0.1:" + strconv.Itoa(tr.port))
				}}
				if tr.status == 0 {
					b.client(parent, "", at, 2, append(opts, httpStatus(502), failed("dial tcp: connection refused"))...)
				} else {
					cl := b.client(parent, "", at, 2, append(opts, httpStatus(tr.status))...)
					b.server(cl, "catalog", "GET "+templated(sent(i)), at+0.5, 1, httpStatus(tr.status), method("GET"), route(templated(sent(i))))
				}
				at += 12
			}
		})
	}
	items := func(i int) string { return "/items/" + strconv.Itoa(1000+i) }
	calls := [][]try{{{1, 503}, {2, 503}, {3, 503}}, {{1, 503}, {2, 200}}, {{3, 0}, {1, 200}}, {{2, 200}}, {{3, 0}, {1, 503}, {2, 200}}, {{1, 500}}}
	// The refused dials' 502 is the proxy's own: port 3 answered other
	// tries with a callee span, so those got no answer (transport error).
	proxied := shape{Calls: 6, Attempts: 12, Hist: []int{2, 2, 2}, Retries: true, Max: 3, Exact: true, Retried: []string{"503", "transport error"}, NotRetry: []string{"500"}}
	withEvidence := func(s shape, ev string) shape { s.Evidence = ev; return s }
	runCases(t, []inferCase{
		{
			name:  "a CLIENT span per try under the SERVER span, forwarding its request: one call each, the proxy's retries",
			build: func(b *builder) { proxy(b, false, items, items, calls) },
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "proxy", "catalog")
				wantShape(t, e, withEvidence(proxied, "timing"))
				wantEq(t, "retries by", e.RetriesBy, "proxy")
				wantEq(t, "proxy most tries", e.ProxyMostTries, 3)
			},
		},
		{
			name:  "each try under its own per-try spans (Retry, Service), resend count on the Retry span: one call, read from the markers",
			build: func(b *builder) { proxy(b, true, items, items, calls) },
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "proxy", "catalog")
				wantShape(t, e, withEvidence(proxied, "markers"))
				wantEq(t, "retries by", e.RetriesBy, "proxy")
				if g := edge(t, tp, "shop", "proxy"); g.Retries || g.Calls != 6 {
					t.Errorf("shop → proxy: %d calls, retries %v; want 6 calls, none retried", g.Calls, g.Retries)
				}
			},
		},
		{
			name: "a service that retries a request of its own (another path than it serves): the application's",
			build: func(b *builder) {
				proxy(b, true, func(i int) string { return "/orders/" + strconv.Itoa(i) }, items, calls)
			},
			check: func(t *testing.T, tp *Topology) {
				// Not a proxy's: its 502 with no callee span under it is
				// not read as the proxy's own answer.
				app := withEvidence(proxied, "markers")
				app.Retried = []string{"502", "503"}
				e := edge(t, tp, "proxy", "catalog")
				wantShape(t, e, app)
				wantEq(t, "retries by", e.RetriesBy, "application")
			},
		},
		{
			name: "a 502 from a peer no callee span ever answered for stays a 502 (the callee may be uninstrumented)",
			build: func(b *builder) {
				proxy(b, false, items, items, [][]try{{{4, 0}, {1, 200}}, {{4, 0}, {2, 200}}, {{1, 200}}})
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "proxy", "catalog"), shape{Calls: 3, Attempts: 5, Hist: []int{1, 2}, Retries: true, Max: 2,
					Evidence: "timing", Retried: []string{"502"}, NotRetry: none})
			},
		},
		{
			name: "a 502 with the callee's span under it (the request arrived, the answer was lost) stays a 502",
			build: func(b *builder) {
				proxy(b, false, items, items, [][]try{{{1, 502}}, {{2, 502}}, {{3, 200}}})
			},
			check: func(t *testing.T, tp *Topology) {
				wantShape(t, edge(t, tp, "proxy", "catalog"), shape{Calls: 3, Attempts: 3, Hist: []int{3}, Max: 1, Exact: true,
					Retried: none, NotRetry: []string{"502"}})
			},
		},
		{
			name: "a loop that wraps each item's call in a span of its own: another item after a failure is not a retry",
			build: func(b *builder) {
				sequential(b, 3, "orders", func(root, i int) {
					for k, status := range []int{200, 503, 200} {
						w := b.add(root, ingest.KindInternal, "orders", "load item", float64(1+10*k), 3, nil)
						path := "/items/" + strconv.Itoa(10*i+k)
						c := b.client(w, "catalog", float64(1+10*k), 2, httpStatus(status), method("GET"), target("http://catalog"+path))
						b.server(c, "catalog", "GET /items/{id}", float64(1+10*k)+0.5, 1, httpStatus(status))
					}
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "orders", "catalog")
				wantShape(t, e, shape{Calls: 9, Attempts: 9, Hist: []int{9}, Max: 1, Exact: true, Retried: none, NotRetry: s503})
			},
		},
		{
			name: "a span that wraps two calls is not looked through: its tries are still one call under it",
			build: func(b *builder) {
				sequential(b, 3, "orders", func(root, i int) {
					w := b.add(root, ingest.KindInternal, "orders", "load", 1, 40, nil)
					url := "http://catalog/items/" + strconv.Itoa(i)
					for k, status := range []int{503, 200} {
						c := b.client(w, "catalog", float64(2+12*k), 2, httpStatus(status), method("GET"), target(url))
						b.server(c, "catalog", "GET /items/{id}", float64(2+12*k)+0.5, 1, httpStatus(status))
					}
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "orders", "catalog")
				wantShape(t, e, shape{Calls: 3, Attempts: 6, Hist: []int{0, 3}, Retries: true, Max: 2, Evidence: "timing", Retried: s503, NotRetry: none})
				wantEq(t, "retries by", e.RetriesBy, "application")
			},
		},
	})
}

// templated is path with its numeric segments as {id}, as ingest
// templates a route from a path.
func templated(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if _, err := strconv.Atoi(p); err == nil && p != "" {
			parts[i] = "{id}"
		}
	}
	return strings.Join(parts, "/")
}
