package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The traefik-replicas scenario puts a reverse proxy that behaves and
// traces as Traefik v3.7.13 does in front of three replicas of one
// service. Traefik itself cannot be built here: the Go module proxy
// refuses eight of the modules cmd/traefik needs (seven DNS-provider SDKs
// of go-acme/lego, pulled in by pkg/config/static, which nearly every
// Traefik package imports, and the containous fork of go-http-auth), so no
// Traefik package on the request path compiles. The proxy below is
// written from Traefik's source at v3.7.13 instead, piece by piece:
//
//   - the entrypoint's tracing (pkg/middlewares/observability): a SERVER
//     span named by the request's method, with entry_point, url.path,
//     server.address (the Host header) and the answer's status;
//   - at detailed verbosity only, an INTERNAL "Router" span (http.route
//     is the router's rule), an INTERNAL "Retry" span per attempt made by
//     the retry middleware (http.request.resend_count from the second
//     on; each ends when the next attempt starts, so it holds the wait)
//     and an INTERNAL "Service" span per attempt;
//   - the retry middleware (pkg/middlewares/retry): attempts tries in
//     all; a try is retried when the request never reached the backend
//     (the dial failed: no byte of the request was written) or, for an
//     idempotent method, when the answer's status is in the configured
//     list; a failure after the request was written (the connection reset
//     mid-answer) is not retried, and the last attempt's answer goes to
//     the client whatever it is. Between tries it waits an exponential
//     backoff (cenkalti/backoff's ExponentialBackOff: initialInterval,
//     randomization ±50%, multiplier 2^(1/(attempts-1)) so that the waits
//     never pass twice the initial interval);
//   - the weighted round robin over the service's servers (equal weights:
//     each try, retries included, goes to the next server in turn; with no
//     health check a server that refuses its dials stays in the turn);
//   - the reverse proxy's round tripper (pkg/proxy/httputil): a CLIENT
//     span "ReverseProxy" per try, refused dials included, with url.full,
//     server.address and server.port of the replica dialled, and the
//     answer's status, or the status Traefik computes from the error (502,
//     504 for a timeout); the Host header is passed on (passHostHeader).
//
// Spans leave under service.name traefik, scope github.com/traefik/traefik,
// as Traefik's own do. The truth is what the proxy's round tripper
// recorded per try (as Traefik's access log would count it) held to what
// each replica received.
const traefikName = "traefik-replicas"

// traefikScope is the instrumentation scope of Traefik's spans.
const traefikScope = "github.com/traefik/traefik"

// traefikRoute is one router of the dynamic configuration: requests whose
// path starts with Prefix go through the retry middleware to the catalog
// service; Detailed is its traceVerbosity.
type traefikRoute struct {
	Router   string `json:"router"`
	Rule     string `json:"rule"`
	Prefix   string `json:"-"`
	Detailed bool   `json:"-"`
	// Operation is the replicas' http.route for it.
	Operation string `json:"-"`
}

// traefikConfig is the proxy's configuration, written into the truth as
// the dynamic configuration Traefik's file provider would read.
type traefikConfig struct {
	Service         string
	Attempts        int
	InitialInterval time.Duration
	RetryStatus     []int
	Routes          []traefikRoute
}

// traefikSettings is the scenario's configuration: one retry middleware
// on two routers, the first traced at detailed verbosity, the second at
// Traefik's default (minimal).
var traefikSettings = traefikConfig{
	Service:         "traefik",
	Attempts:        3,
	InitialInterval: 100 * time.Millisecond,
	RetryStatus:     []int{503},
	Routes: []traefikRoute{
		{Router: "items", Rule: "PathPrefix(`/items/`)", Prefix: "/items/", Detailed: true, Operation: "/items/{id}"},
		{Router: "stock", Rule: "PathPrefix(`/stock/`)", Prefix: "/stock/", Operation: "/stock/{id}"},
	},
}

// multiplier is the retry middleware's backoff multiplier.
func (c traefikConfig) multiplier() float64 { return math.Pow(2, 1/float64(c.Attempts-1)) }

// dynamic is c as Traefik's dynamic configuration (file provider), the
// replicas' addresses as the catalog service's servers.
func (c traefikConfig) dynamic(servers []string) map[string]any {
	var status []string
	for _, s := range c.RetryStatus {
		status = append(status, strconv.Itoa(s))
	}
	routers := map[string]any{}
	for _, r := range c.Routes {
		verbosity := "minimal"
		if r.Detailed {
			verbosity = "detailed"
		}
		routers[r.Router] = map[string]any{"rule": r.Rule, "service": "catalog", "middlewares": []string{"retry-catalog"},
			"entryPoints": []string{"web"}, "observability": map[string]any{"tracing": true, "traceVerbosity": verbosity}}
	}
	var urls []map[string]string
	for _, s := range servers {
		urls = append(urls, map[string]string{"url": "http://" + s})
	}
	return map[string]any{"http": map[string]any{
		"routers": routers,
		"middlewares": map[string]any{"retry-catalog": map[string]any{"retry": map[string]any{
			"attempts": c.Attempts, "initialInterval": c.InitialInterval.String(), "status": status}}},
		"services": map[string]any{"catalog": map[string]any{"loadBalancer": map[string]any{
			"servers": urls, "passHostHeader": true}}},
	}}
}

// traefikFault is what a replica does with one request of an item's
// script: answer Status after Delay, or, Reset, read the request and
// close the connection without an answer.
type traefikFault struct {
	Status int
	Reset  bool
	Delay  time.Duration
}

var (
	fault503  = traefikFault{Status: http.StatusServiceUnavailable}
	fault500  = traefikFault{Status: http.StatusInternalServerError}
	faultRst  = traefikFault{Reset: true}
	faultSlow = traefikFault{Status: http.StatusOK, Delay: 120 * time.Millisecond}
)

// traefikCase is a kind of root request: how many, each item's script,
// and whether catalog-3 is down (its dials refused) while they are sent.
type traefikCase struct {
	n      int
	script []traefikFault
	down   bool
}

// traefikCases are the root requests in the order they are sent. Each
// root with a fault script is followed by plain ones (per-item faults
// among healthy traffic, not blocks of failing requests; the replica's
// outage is the one stretch of correlated failures), and the routes take
// turns, the scripted roots and the plain ones each on their own turn, so
// that both routes meet every fault.
var traefikCases = []traefikCase{
	{n: 4},
	{n: 6, script: []traefikFault{fault503}},
	{n: 8, script: []traefikFault{fault503, fault503}},
	{n: 8, script: []traefikFault{fault503, fault503, fault503}},
	{n: 2, script: []traefikFault{fault500}},
	{n: 2, script: []traefikFault{faultRst}},
	{n: 2, script: []traefikFault{faultSlow}},
	{n: 8, down: true},
	{n: 6, script: []traefikFault{fault503}, down: true},
	{n: 6, script: []traefikFault{fault503, fault503}, down: true},
	{n: 4},
}

// plainAfterScripted is how many plain roots follow each scripted one.
const plainAfterScripted = 2

// traefikTry is one try the proxy's round tripper made: the server it
// dialled, whether the request was written to it, and the status (the
// answer's, or the one computed from the error).
type traefikTry struct {
	Upstream string
	Sent     bool
	Status   int
	Error    string
	// Wait is the backoff the middleware drew before this try (0 for a
	// call's first); Start and End are when its CLIENT span started and
	// ended.
	Wait       time.Duration
	Start, End time.Time
}

// traefikReceipt is one request a replica received: its instance and the
// status it answered, or Reset.
type traefikReceipt struct {
	Instance string `json:"instance"`
	Status   int    `json:"status,omitempty"`
	Reset    bool   `json:"reset,omitempty"`
}

// traefikRoot is one root request: its item, its route, the answer the
// driver got, the proxy's tries and what the replicas received.
type traefikRoot struct {
	Item     string
	Route    int
	Answer   int
	Tries    []traefikTry
	Received []traefikReceipt
}

// traefikRun is what a run produced, the input of traefikTruth.
type traefikRun struct {
	Config   traefikConfig
	Replicas []replicaAddr
	Roots    []traefikRoot
}

type replicaAddr struct{ Instance, Address string }

// runTraefik runs the scenario against a receiver and writes
// out/traefik-replicas/.
func runTraefik(ctx context.Context, out string) (string, error) {
	rc, err := startReceiver()
	if err != nil {
		return "", err
	}
	run, runErr := traefikMesh(ctx, rc.url, traefikSettings)
	requests := rc.stop()
	if runErr != nil {
		return "", runErr
	}
	t, err := traefikTruth(run)
	if err != nil {
		return "", err
	}
	if spanCount(requests) == 0 {
		return "", fmt.Errorf("%s: no spans received", traefikName)
	}
	if err := writeSample(filepath.Join(out, traefikName), requests, t); err != nil {
		return "", err
	}
	sum := exportSummary(t.RootRequests, t.RootAnswers, requests)
	for _, e := range t.Edges {
		sum += fmt.Sprintf("  %-7s → %-7s %-12s calls %3d, attempts %3d, refused dials %d, resets %d, exhausted %v\n",
			e.Caller, e.Callee, e.Operation, e.Calls, e.Attempts, e.RefusedDials, e.Resets, e.ExhaustedInTraces)
	}
	return sum, nil
}

// traefikMesh brings up the replicas, the proxy and shop, drives the root
// requests, and shuts everything down (which flushes every exporter).
func traefikMesh(ctx context.Context, otlp string, cfg traefikConfig) (traefikRun, error) {
	run := traefikRun{Config: cfg}
	scripts := &traefikScripts{left: map[string][]traefikFault{}, received: map[string][]traefikReceipt{}}
	var reps []*traefikReplica
	var stops []func(context.Context) error
	stopAll := func() error {
		var first error
		for i := len(stops) - 1; i >= 0; i-- {
			if err := stops[i](ctx); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for i := range 3 {
		r, err := startTraefikReplica(ctx, otlp, fmt.Sprintf("catalog-%d", i+1), cfg, scripts)
		if err != nil {
			stopAll()
			return run, err
		}
		reps = append(reps, r)
		stops = append(stops, r.stop)
		run.Replicas = append(run.Replicas, replicaAddr{Instance: r.instance, Address: r.addr})
	}
	px, err := startTraefikProxy(ctx, otlp, cfg, reps)
	if err != nil {
		stopAll()
		return run, err
	}
	stops = append(stops, px.stop)
	shop, err := startTraefikShop(ctx, otlp, px.url, cfg)
	if err != nil {
		stopAll()
		return run, err
	}
	stops = append(stops, shop.stop)
	roots, driveErr := driveTraefik(shop.url, cfg, reps[len(reps)-1], scripts)
	stopErr := stopAll()
	if driveErr != nil {
		return run, driveErr
	}
	if stopErr != nil {
		return run, stopErr
	}
	for _, r := range roots {
		r.Tries = px.tries(r.Item)
		r.Received = scripts.receivedBy(r.Item)
		if len(r.Tries) == 0 {
			return run, fmt.Errorf("item %s: the proxy recorded no try", r.Item)
		}
		run.Roots = append(run.Roots, r)
	}
	return run, nil
}

// traefikScripts holds each item's fault script, consumed one received
// request at a time whichever replica receives it, and what each replica
// received.
type traefikScripts struct {
	mu       sync.Mutex
	left     map[string][]traefikFault
	received map[string][]traefikReceipt
}

func (s *traefikScripts) plan(item string, script []traefikFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left[item] = slices.Clone(script)
}

// next is what the replica does with item's next request: its script's
// next entry, a plain 200 past the end.
func (s *traefikScripts) next(item, instance string) traefikFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := traefikFault{Status: http.StatusOK}
	if l := s.left[item]; len(l) > 0 {
		f, s.left[item] = l[0], l[1:]
	}
	s.received[item] = append(s.received[item], traefikReceipt{Instance: instance, Status: f.Status, Reset: f.Reset})
	return f
}

func (s *traefikScripts) receivedBy(item string) []traefikReceipt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received[item]
}

// traefikReplica is one catalog instance, net/http + otelhttp, that can
// go down (its dials refused) and come back on the same address.
type traefikReplica struct {
	instance, addr string
	tp             *sdktrace.TracerProvider
	handler        http.Handler

	mu  sync.Mutex
	srv *http.Server
}

func startTraefikReplica(ctx context.Context, otlp, instance string, cfg traefikConfig, scripts *traefikScripts) (*traefikReplica, error) {
	tp, err := newProvider(ctx, "catalog", otlp, instance)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	for _, rt := range cfg.Routes {
		mux.HandleFunc("GET "+rt.Operation, func(w http.ResponseWriter, r *http.Request) {
			f := scripts.next(r.PathValue("id"), instance)
			time.Sleep(2*time.Millisecond + f.Delay) // a little work, or a slow reply
			if f.Reset {
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close()
				}
				return
			}
			w.WriteHeader(f.Status)
		})
	}
	r := &traefikReplica{instance: instance, tp: tp,
		handler: otelhttp.NewHandler(mux, "catalog", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(propagation.TraceContext{}))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tp.Shutdown(ctx)
		return nil, err
	}
	r.addr = ln.Addr().String()
	r.serve(ln)
	return r, nil
}

func (r *traefikReplica) serve(ln net.Listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srv = &http.Server{Handler: r.handler, ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
}

// down closes the replica's listener and connections: its dials are
// refused until up.
func (r *traefikReplica) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srv.Close()
}

func (r *traefikReplica) up() error {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		return fmt.Errorf("%s back on %s: %w", r.instance, r.addr, err)
	}
	r.serve(ln)
	return nil
}

func (r *traefikReplica) stop(ctx context.Context) error {
	r.down()
	return r.tp.Shutdown(ctx)
}

// traefikProxy is the proxy: entrypoint, routers, retry middleware,
// weighted round robin and reverse proxy, as the package doc describes.
type traefikProxy struct {
	url    string
	cfg    traefikConfig
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	srv    *http.Server
	rp     *httputil.ReverseProxy

	mu      sync.Mutex
	servers []*url.URL
	turn    int
	log     map[string][]traefikTry
}

// traefikTryState is what the proxy layer tells the retry middleware
// about one try: whether the request reached the proxy layer and whether
// it was written to the backend.
type traefikTryState struct {
	reached, wrote bool
}

func startTraefikProxy(ctx context.Context, otlp string, cfg traefikConfig, reps []*traefikReplica) (*traefikProxy, error) {
	tp, err := newProvider(ctx, cfg.Service, otlp, "")
	if err != nil {
		return nil, err
	}
	p := &traefikProxy{cfg: cfg, tp: tp, tracer: tp.Tracer(traefikScope), log: map[string][]traefikTry{}}
	for _, r := range reps {
		p.servers = append(p.servers, &url.URL{Scheme: "http", Host: r.addr})
	}
	// No keep-alive: on a reused connection that closes before answering,
	// net/http's transport silently sends a GET again (on a new
	// connection, below every span); with a connection per try the reset
	// a replica scripts reaches the retry middleware as Traefik's would
	// on a fresh connection.
	transport := &http.Transport{DisableKeepAlives: true}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(pr.In.Context().Value(traefikServerKey{}).(*url.URL))
			pr.Out.Host = pr.In.Host // passHostHeader
		},
		Transport: traefikRoundTripper{p: p, next: transport},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			status := traefikStatusOf(err)
			w.WriteHeader(status)
			w.Write([]byte(http.StatusText(status)))
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tp.Shutdown(ctx)
		return nil, err
	}
	p.url = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(p.entrypoint), ReadHeaderTimeout: 5 * time.Second}
	go p.srv.Serve(ln)
	return p, nil
}

func (p *traefikProxy) stop(ctx context.Context) error {
	p.srv.Close()
	return p.tp.Shutdown(ctx)
}

// tries is what the round tripper recorded for item, in order.
func (p *traefikProxy) tries(item string) []traefikTry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log[item]
}

// traefikStatusOf is the status Traefik's proxy computes from a round
// trip's error: 499 when the client went away, 504 for a timeout, 502
// for another network error or an early EOF, 500 otherwise.
func traefikStatusOf(err error) int {
	var netErr net.Error
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, io.EOF):
		return http.StatusBadGateway
	case errors.Is(err, context.Canceled):
		return 499
	case errors.As(err, &netErr) && netErr.Timeout():
		return http.StatusGatewayTimeout
	case errors.As(err, &netErr):
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// entrypoint is the entrypoint "web" with its tracing: the SERVER span,
// then the router that matches.
func (p *traefikProxy) entrypoint(w http.ResponseWriter, r *http.Request) {
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := p.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
	span.SetAttributes(attribute.String("entry_point", "web"),
		attribute.String("http.request.method", r.Method), attribute.String("network.protocol.version", "1.1"),
		attribute.Int("http.request.body.size", int(r.ContentLength)), attribute.String("url.path", r.URL.Path),
		attribute.String("url.query", r.URL.RawQuery), attribute.String("url.scheme", r.Header.Get("X-Forwarded-Proto")),
		attribute.String("user_agent.original", r.UserAgent()), attribute.String("server.address", r.Host))
	if host, port, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		n, _ := strconv.Atoi(port)
		span.SetAttributes(attribute.String("network.peer.address", host), attribute.String("client.address", host),
			attribute.Int("client.port", n), attribute.Int("network.peer.port", n))
	}
	rec := &traefikStatusRecorder{ResponseWriter: w, status: http.StatusOK}
	r = r.WithContext(ctx)
	routed := false
	for _, rt := range p.cfg.Routes {
		if strings.HasPrefix(r.URL.Path, rt.Prefix) {
			p.route(rec, r, rt)
			routed = true
			break
		}
	}
	if !routed {
		http.NotFound(rec, r)
	}
	traefikSetStatus(span, rec.status, trace.SpanKindServer)
	span.End()
}

// traefikSetStatus records status on span: an error status for 5xx, for
// a CLIENT span also for 4xx.
func traefikSetStatus(span trace.Span, status int, kind trace.SpanKind) {
	if status >= 500 || (kind == trace.SpanKindClient && status >= 400) {
		span.SetStatus(codes.Error, "")
	}
	if status > 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
}

// route runs a router: its span at detailed verbosity, then the retry
// middleware.
func (p *traefikProxy) route(w http.ResponseWriter, r *http.Request, rt traefikRoute) {
	if rt.Detailed {
		ctx, span := p.tracer.Start(r.Context(), "Router", trace.WithSpanKind(trace.SpanKindInternal))
		defer span.End()
		span.SetAttributes(attribute.String("traefik.service.name", "catalog@file"),
			attribute.String("traefik.router.name", rt.Router+"@file"), attribute.String("http.route", rt.Rule))
		r = r.WithContext(ctx)
	}
	p.retry(w, r, rt)
}

// retry is the retry middleware "retry-catalog".
func (p *traefikProxy) retry(w http.ResponseWriter, r *http.Request, rt traefikRoute) {
	retried := p.cfg.RetryStatus
	if r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == "LOCK" {
		retried = nil // a non-idempotent request is retried only when it never left
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = p.cfg.InitialInterval
	b.Multiplier = p.cfg.multiplier()
	b.Reset()
	var span trace.Span
	var wait time.Duration
	for attempt := 1; ; attempt++ {
		ctx := context.WithValue(r.Context(), traefikWaitKey{}, wait)
		if rt.Detailed {
			if span != nil {
				span.End()
			}
			ctx, span = p.tracer.Start(ctx, "Retry", trace.WithSpanKind(trace.SpanKindInternal))
			span.SetAttributes(attribute.String("traefik.middleware.name", "retry-catalog@file"))
			if attempt > 1 {
				span.SetAttributes(attribute.Int("http.request.resend_count", attempt-1))
			}
		}
		if attempt == p.cfg.Attempts {
			p.service(w, r.WithContext(ctx), rt, nil)
			break
		}
		tw := &traefikTryWriter{out: w, header: http.Header{}, retried: retried, state: &traefikTryState{}}
		p.service(tw, r.WithContext(ctx), rt, tw.state)
		if tw.written {
			break
		}
		wait = b.NextBackOff()
		time.Sleep(wait)
	}
	if span != nil {
		span.End()
	}
}

// traefikServerKey carries the server the balancer chose to the reverse
// proxy's Rewrite; traefikWaitKey the backoff drawn before the try.
type (
	traefikServerKey struct{}
	traefikWaitKey   struct{}
)

// service is the catalog service: its span at detailed verbosity, the
// balancer's choice, the reverse proxy.
func (p *traefikProxy) service(w http.ResponseWriter, r *http.Request, rt traefikRoute, state *traefikTryState) {
	ctx := r.Context()
	if rt.Detailed {
		var span trace.Span
		ctx, span = p.tracer.Start(ctx, "Service", trace.WithSpanKind(trace.SpanKindInternal))
		defer span.End()
		span.SetAttributes(attribute.String("traefik.service.name", "catalog@file"))
	}
	p.mu.Lock()
	server := p.servers[p.turn%len(p.servers)]
	p.turn++
	p.mu.Unlock()
	if state != nil {
		state.reached = true
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			WroteHeaders: func() { state.wrote = true },
			WroteRequest: func(httptrace.WroteRequestInfo) { state.wrote = true },
		})
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(ctx, traefikServerKey{}, server)))
}

// traefikRoundTripper is the reverse proxy's observability round
// tripper: a CLIENT span per try, refused dials included, and the try
// recorded for the truth.
type traefikRoundTripper struct {
	p    *traefikProxy
	next http.RoundTripper
}

func (t traefikRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	ctx, span := t.p.tracer.Start(req.Context(), "ReverseProxy", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start))
	req = req.WithContext(ctx)
	host, port, _ := net.SplitHostPort(req.URL.Host)
	n, _ := strconv.Atoi(port)
	span.SetAttributes(attribute.String("http.request.method", req.Method), attribute.String("network.protocol.version", "1.1"),
		attribute.String("url.full", req.URL.String()), attribute.String("url.scheme", req.URL.Scheme),
		attribute.String("user_agent.original", req.UserAgent()),
		attribute.String("network.peer.address", host), attribute.Int("network.peer.port", n),
		attribute.String("server.address", host), attribute.Int("server.port", n))
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	wrote := false
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { wrote = true },
	}))
	resp, err := t.next.RoundTrip(req)
	status := traefikStatusOf(err)
	wait, _ := req.Context().Value(traefikWaitKey{}).(time.Duration)
	try := traefikTry{Upstream: req.URL.Host, Sent: wrote, Status: status, Wait: wait, Start: start}
	if err != nil {
		try.Error = err.Error() // Traefik's span keeps only the status it computes from the error
	} else {
		status, try.Status = resp.StatusCode, resp.StatusCode
	}
	traefikSetStatus(span, status, trace.SpanKindClient)
	try.End = time.Now()
	span.End(trace.WithTimestamp(try.End))
	item := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]
	t.p.mu.Lock()
	t.p.log[item] = append(t.p.log[item], try)
	t.p.mu.Unlock()
	return resp, err
}

// traefikTryWriter is the retry middleware's response writer for a try
// that may be retried: it holds the answer back when the try failed
// before the request left (a dial error) or answered a retried status,
// and passes anything else on.
type traefikTryWriter struct {
	out     http.ResponseWriter
	header  http.Header
	retried []int
	state   *traefikTryState
	written bool
	hold    bool
}

func (tw *traefikTryWriter) Header() http.Header {
	if tw.written && !tw.hold {
		return tw.out.Header()
	}
	return tw.header
}

func (tw *traefikTryWriter) WriteHeader(status int) {
	if tw.hold || tw.written {
		return
	}
	if tw.state.reached && !tw.state.wrote || slices.Contains(tw.retried, status) {
		tw.hold = true
		return
	}
	for k, v := range tw.header {
		tw.out.Header()[k] = v
	}
	tw.out.WriteHeader(status)
	tw.written = true
}

func (tw *traefikTryWriter) Write(b []byte) (int, error) {
	if !tw.written && !tw.hold {
		tw.WriteHeader(http.StatusOK)
	}
	if tw.hold {
		return len(b), nil
	}
	return tw.out.Write(b)
}

// traefikStatusRecorder records the status the entrypoint answered.
type traefikStatusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *traefikStatusRecorder) WriteHeader(status int) {
	s.status = status
	s.ResponseWriter.WriteHeader(status)
}

// traefikShop is shop: GET /shop/items/{id} calls the proxy's
// /items/{id} once (never retrying) and answers with its status; so for
// each route (shopPath).
type traefikShop struct {
	url string
	srv *http.Server
	tp  *sdktrace.TracerProvider
}

func startTraefikShop(ctx context.Context, otlp, proxy string, cfg traefikConfig) (*traefikShop, error) {
	tp, err := newProvider(ctx, "shop", otlp, "")
	if err != nil {
		return nil, err
	}
	prop := propagation.TraceContext{}
	client := &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop)),
		Timeout: 5 * time.Second}
	mux := http.NewServeMux()
	for _, rt := range cfg.Routes {
		mux.HandleFunc("GET "+rt.shopPath(), func(w http.ResponseWriter, r *http.Request) {
			req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, proxy+rt.Prefix+r.PathValue("id"), nil)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			w.WriteHeader(drain(resp))
		})
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tp.Shutdown(ctx)
		return nil, err
	}
	s := &traefikShop{url: "http://" + ln.Addr().String(), tp: tp,
		srv: &http.Server{Handler: otelhttp.NewHandler(mux, "shop", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop)),
			ReadHeaderTimeout: 5 * time.Second}}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *traefikShop) stop(ctx context.Context) error {
	s.srv.Close()
	return s.tp.Shutdown(ctx)
}

// shopPath is shop's route that calls rt: /shop/items/{id} for
// /items/{id}.
func (rt traefikRoute) shopPath() string { return "/shop" + rt.Operation }

// driveTraefik sends the root requests one at a time, item ids 1001 up,
// with the last replica down for the cases that say so.
func driveTraefik(shop string, cfg traefikConfig, last *traefikReplica, scripts *traefikScripts) ([]traefikRoot, error) {
	client := &http.Client{Timeout: 10 * time.Second} // not instrumented: shop's span is the root
	var roots []traefikRoot
	isDown := false
	item := 1001
	turn := map[bool]int{} // by whether the root has a fault script
	send := func(script []traefikFault) error {
		time.Sleep(15 * time.Millisecond)
		scripted := len(script) > 0
		id, route := strconv.Itoa(item), turn[scripted]%len(cfg.Routes)
		item++
		turn[scripted]++
		scripts.plan(id, script)
		resp, err := client.Get(shop + "/shop" + cfg.Routes[route].Prefix + id)
		if err != nil {
			return err
		}
		roots = append(roots, traefikRoot{Item: id, Route: route, Answer: drain(resp)})
		return nil
	}
	for _, c := range traefikCases {
		if c.down != isDown {
			if c.down {
				last.down()
			} else if err := last.up(); err != nil {
				return nil, err
			}
			isDown = c.down
			time.Sleep(50 * time.Millisecond)
		}
		for range c.n {
			if err := send(c.script); err != nil {
				return nil, err
			}
			for k := 0; len(c.script) > 0 && k < plainAfterScripted; k++ {
				if err := send(nil); err != nil {
					return nil, err
				}
			}
		}
	}
	if isDown {
		if err := last.up(); err != nil {
			return nil, err
		}
	}
	return roots, nil
}

// traefikTruthFile is traefik-replicas' truth.json: the Node scenarios'
// edge fields plus what a proxy adds (traefikEdge), and the proxy.
type traefikTruthFile struct {
	Scenario     string         `json:"scenario"`
	Description  string         `json:"description"`
	RootRequests int            `json:"root_requests"`
	RootAnswers  map[string]int `json:"root_answers"`
	Proxy        traefikProxyOf `json:"proxy"`
	Edges        []traefikEdge  `json:"edges"`
	Paths        []truthPath    `json:"paths"`
}

// traefikProxyOf is the proxy's configuration and what its spans look
// like.
type traefikProxyOf struct {
	Library string `json:"library"`
	Service string `json:"service"`
	// Dynamic is the configuration as Traefik's file provider would read
	// it (the servers are the run's replica addresses).
	Dynamic map[string]any `json:"dynamic_config"`
	Spans   string         `json:"spans"`
}

// traefikEdge is an edge of traefik-replicas. Layer is "proxy" where the
// caller is the proxy, else "application"; Replicas counts the callee
// instances its requests reached. Attempts counts the proxy's tries, each
// a CLIENT span, refused dials included. RefusedDials are tries whose dial
// was refused (no request left, no replica span; retried); Resets tries
// whose request was written and the connection closed with no answer
// (502 to the client, not retried). RetriedStatus and NotRetriedStatus
// are the error statuses replicas answered, split by the retry
// middleware's status list.
type traefikEdge struct {
	nodeEdge
	Layer                string `json:"layer"`
	Replicas             int    `json:"replicas"`
	RefusedDials         int    `json:"refused_dials"`
	CallsWithRefusedDial int    `json:"calls_with_refused_dial"`
	Resets               int    `json:"resets"`
	// ExhaustedCalls made every try they were allowed, the last one
	// failing in a way the middleware retries.
	ExhaustedCalls int `json:"exhausted_calls"`
}

// traefikTruth builds the truth from a run, holding every try the proxy
// recorded to what the replicas received and to the retry policy: a try
// that was sent is the next request its replica received, with the same
// status (or reset); a call stops at its first try the middleware does
// not retry, or at its last allowed try; the driver got the last try's
// status.
func traefikTruth(run traefikRun) (traefikTruthFile, error) {
	cfg := run.Config
	if len(run.Roots) == 0 || len(run.Replicas) == 0 {
		return traefikTruthFile{}, fmt.Errorf("%s: no root requests or no replicas", traefikName)
	}
	instanceOf := map[string]string{}
	var servers []string
	for _, r := range run.Replicas {
		instanceOf[r.Address] = r.Instance
		servers = append(servers, r.Address)
	}
	type routeStats struct {
		calls, tries, refused, withRefused, resets, exhausted, waits int
		retried, notRetried, shopStatus                              []int
		reached                                                      map[string]bool
		// late is how much later than the drawn backoff each retry's
		// CLIENT span started after the try before it ended.
		late []float64
	}
	stats := make([]routeStats, len(cfg.Routes))
	answers := map[string]int{}
	retries := func(tr traefikTry) bool {
		return !tr.Sent || tr.Error == "" && slices.Contains(cfg.RetryStatus, tr.Status)
	}
	for _, root := range run.Roots {
		if root.Route < 0 || root.Route >= len(cfg.Routes) {
			return traefikTruthFile{}, fmt.Errorf("item %s: route %d unknown", root.Item, root.Route)
		}
		st := &stats[root.Route]
		if st.reached == nil {
			st.reached = map[string]bool{}
		}
		st.calls++
		answers[strconv.Itoa(root.Answer)]++
		if root.Answer >= 400 && !slices.Contains(st.shopStatus, root.Answer) {
			st.shopStatus = append(st.shopStatus, root.Answer)
		}
		received, refusedHere := 0, 0
		for i, tr := range root.Tries {
			last := i == len(root.Tries)-1
			if !last && (i+1 == cfg.Attempts || !retries(tr)) {
				return traefikTruthFile{}, fmt.Errorf("item %s: try %d (%+v) was followed by another, which the retry policy does not do", root.Item, i+1, tr)
			}
			if last && i+1 < cfg.Attempts && retries(tr) {
				return traefikTruthFile{}, fmt.Errorf("item %s: the last try %d (%+v) has tries left and should have been retried", root.Item, i+1, tr)
			}
			if i > 0 && !tr.Start.IsZero() && !root.Tries[i-1].End.IsZero() {
				st.late = append(st.late, float64(tr.Start.Sub(root.Tries[i-1].End)-tr.Wait)/1e6)
			}
			if !tr.Sent {
				refusedHere++
				continue
			}
			if received >= len(root.Received) {
				return traefikTruthFile{}, fmt.Errorf("item %s: the proxy sent more requests than the replicas received", root.Item)
			}
			got := root.Received[received]
			received++
			if got.Instance != instanceOf[tr.Upstream] || got.Reset != (tr.Error != "") || !got.Reset && got.Status != tr.Status {
				return traefikTruthFile{}, fmt.Errorf("item %s: try %d went to %s (%s) and got %d %q; the replica recorded %s answering %d (reset %v)",
					root.Item, i+1, tr.Upstream, instanceOf[tr.Upstream], tr.Status, tr.Error, got.Instance, got.Status, got.Reset)
			}
			st.reached[got.Instance] = true
			switch {
			case got.Reset:
				st.resets++
			case tr.Status < 400:
			case slices.Contains(cfg.RetryStatus, tr.Status):
				if !slices.Contains(st.retried, tr.Status) {
					st.retried = append(st.retried, tr.Status)
				}
			case !slices.Contains(st.notRetried, tr.Status):
				st.notRetried = append(st.notRetried, tr.Status)
			}
		}
		if received != len(root.Received) {
			return traefikTruthFile{}, fmt.Errorf("item %s: the replicas received %d requests, the proxy sent %d", root.Item, len(root.Received), received)
		}
		last := root.Tries[len(root.Tries)-1]
		if root.Answer != last.Status {
			return traefikTruthFile{}, fmt.Errorf("item %s: answered %d, the last try got %d", root.Item, root.Answer, last.Status)
		}
		st.tries += len(root.Tries)
		st.waits += len(root.Tries) - 1
		st.refused += refusedHere
		if refusedHere > 0 {
			st.withRefused++
		}
		if len(root.Tries) == cfg.Attempts && retries(last) {
			st.exhausted++
		}
	}
	library := "Traefik v3.7.13 retry middleware and weighted round robin, reproduced from its source (Traefik cannot be built here)"
	base := cfg.InitialInterval.Milliseconds()
	mult, fraction := cfg.multiplier(), 0.5
	var edges []traefikEdge
	var paths []truthPath
	var waits, refused, resets int
	for i, rt := range cfg.Routes {
		st := stats[i]
		if st.calls == 0 {
			continue
		}
		waits, refused, resets = waits+st.waits, refused+st.refused, resets+st.resets
		slices.Sort(st.shopStatus)
		slices.Sort(st.retried)
		slices.Sort(st.notRetried)
		shop := traefikEdge{nodeEdge: nodeEdge{truthEdge: truthEdge{Caller: "shop", Callee: cfg.Service, Operation: rt.Operation, Method: "GET",
			MaxAttempts: 1, Backoff: truthBackoff{Kind: "none", Jitter: "none"}, RetriedStatus: []int{}, NotRetriedStatus: orEmpty(st.shopStatus),
			ExhaustedInTraces: len(st.shopStatus) > 0, RetryAfterCaptured: true, Attempts: st.calls}, Calls: st.calls},
			Layer: "application", Replicas: 1}
		proxied := traefikEdge{nodeEdge: nodeEdge{truthEdge: truthEdge{Caller: cfg.Service, Callee: "catalog", Operation: rt.Operation, Method: "GET",
			Library: &library, Retries: true, MaxAttempts: cfg.Attempts, ExhaustedInTraces: st.exhausted > 0,
			Backoff:       truthBackoff{Kind: "exponential", BaseMS: &base, Multiplier: &mult, Jitter: "proportional", JitterFraction: &fraction},
			RetriedStatus: orEmpty(st.retried), NotRetriedStatus: orEmpty(st.notRetried), RetryAfterCaptured: true,
			Attempts: st.tries}, Calls: st.calls, WaitLateMedianMS: medianMS(st.late)},
			Layer: "proxy", Replicas: len(st.reached), RefusedDials: st.refused, CallsWithRefusedDial: st.withRefused,
			Resets: st.resets, ExhaustedCalls: st.exhausted}
		edges = append(edges, shop, proxied)
		paths = append(paths, truthPath{Services: []string{"shop", cfg.Service, "catalog"},
			Operations: []string{rt.shopPath(), rt.Operation, rt.Operation}, WorstCaseAmplification: cfg.Attempts})
	}
	return traefikTruthFile{
		Scenario: traefikName,
		Description: fmt.Sprintf("A reverse proxy that retries, balances and traces as Traefik v3.7.13 does (written from Traefik's source: "+
			"Traefik itself cannot be built here), in front of %d catalog replicas: retry middleware attempts %d, initialInterval %s "+
			"(exponential, multiplier 2^(1/%d) = %.4f, ±50%% randomization), status %v; router items traced at detailed verbosity, router stock at minimal. "+
			"shop calls the proxy once per root request, never retrying. The proxy retried on the next replica after %d waits; "+
			"catalog-3 was down for a stretch, so %d tries were refused dials (retried, a CLIENT span each, no replica span); "+
			"%d tries met a connection closed after the request was written (502, not retried); 500 is not retried; some replies are 120ms slow.",
			len(run.Replicas), cfg.Attempts, cfg.InitialInterval, cfg.Attempts-1, mult, cfg.RetryStatus, waits, refused, resets),
		RootRequests: len(run.Roots),
		RootAnswers:  answers,
		Proxy: traefikProxyOf{Library: library, Service: cfg.Service, Dynamic: cfg.dynamic(servers),
			Spans: "Per request the entrypoint's SERVER span (service traefik, named by the method: \"GET\"; url.path, server.address the Host header, no http.route) " +
				"and, per try, a CLIENT span \"ReverseProxy\" whose server.address and server.port are the replica dialled (a refused dial too: status 502, error), " +
				"parent of the replica's SERVER span. At detailed verbosity (router items) an INTERNAL \"Router\" span (http.route the rule) sits under the SERVER span, " +
				"and per try an INTERNAL \"Retry\" span (http.request.resend_count 1, 2 from the second try; it ends when the next try starts, so it holds the wait) " +
				"with an INTERNAL \"Service\" span under it, the CLIENT span under that. At minimal verbosity (router stock) the CLIENT spans are the SERVER span's children."},
		Edges: edges,
		Paths: paths,
	}, nil
}

// medianMS is the median of ms rounded to 0.1, nil for none.
func medianMS(ms []float64) *float64 {
	if len(ms) == 0 {
		return nil
	}
	s := slices.Sorted(slices.Values(ms))
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	m = math.Round(m*10) / 10
	return &m
}

// orEmpty is s, or an empty list (JSON []) where s is nil.
func orEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}
