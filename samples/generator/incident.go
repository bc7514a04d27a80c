package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The incident scenario is a second mesh, open-loop under steady load, for
// what the first one cannot show: a dependency fully down for two seconds
// and then back (an incident window in the traces' own timeline), a gRPC
// edge retried by grpc-go's service-config retryPolicy, a 429 with
// Retry-After: 1 that the caller honours, and a gateway that sleeps 600 ms
// between its retries.
//
//	gateway  --HTTP, retry-go fixed 600ms x3-->  quotes
//	quotes   --gRPC, service-config retryPolicy x4-->  stock
//	stock    --HTTP, go-retryablehttp x3, honours Retry-After-->  ledger
const (
	incidentName = "incident"

	routeQuote  = "GET /quote/{id}"
	routeQuotes = "GET /quotes/{id}"
	routeLedger = "GET /ledger/{sku}"
	// stockMethod is the gRPC method stock serves; stockService its service.
	stockService = "retryaudit.Stock"
	stockMethod  = "/" + stockService + "/Get"
	libGRPC      = "google.golang.org/grpc (service config retryPolicy)"
)

// stockRetryPolicy is quotes' service config for stock: up to 4 attempts on
// UNAVAILABLE, waits drawn uniformly from [0, min(20ms×2^n, 100ms)).
var stockRetryPolicy = `{"methodConfig": [{"name": [{"service": "` + stockService + `"}],
  "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.02s", "maxBackoff": "0.1s",
    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`

// incidentShape is the traffic and the incident window: Rate root
// requests per second, Roots of them; the ledger answers 503 to
// everything in [At, At+For).
type incidentShape struct {
	Rate, Roots int
	At, For     time.Duration
}

// incidentCommitted is the committed scenario's shape.
var incidentCommitted = incidentShape{Rate: 20, Roots: 200, At: 3 * time.Second, For: 2 * time.Second}

// incidentPlan is which root requests meet which fault besides the incident:
// per root request index, how many of stock's first answers are UNAVAILABLE
// and whether the ledger first throttles it with 429 Retry-After: 1.
type incidentPlan struct {
	stockFails map[string]int
	throttled  map[string]bool
}

func newIncidentPlan(roots int) incidentPlan {
	rng := rand.New(rand.NewPCG(8, 8))
	p := incidentPlan{stockFails: map[string]int{}, throttled: map[string]bool{}}
	for i := range roots {
		id := incidentID(i)
		switch u := rng.Float64(); {
		case u < 0.06:
			p.stockFails[id] = 1
		case u < 0.09:
			p.stockFails[id] = 2
		case u < 0.11:
			p.stockFails[id] = 4 // more than quotes' 4 attempts can see through
		case u < 0.16:
			p.throttled[id] = true
		}
	}
	return p
}

func incidentID(i int) string { return fmt.Sprint(5001 + i) }

// incidentMesh is the running scenario.
type incidentMesh struct {
	shape    incidentShape
	start    time.Time
	plan     incidentPlan
	mu       sync.Mutex
	used     map[string]int // faults consumed per key
	tps      []*sdktrace.TracerProvider
	servers  []*http.Server
	grpcSrv  *grpc.Server
	conn     *grpc.ClientConn
	gateway  string
	toQuotes *caller
	toLedger *caller
	stock    *grpcStats
}

// grpcStats counts what happened on quotes → stock, for truth.json.
type grpcStats struct {
	mu        sync.Mutex
	calls     int
	failed    int
	exhausted int
}

// consume reports whether the n-th fault of key applies, counting it.
func (m *incidentMesh) consume(key string, limit int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used[key] >= limit {
		return false
	}
	m.used[key]++
	return true
}

func (m *incidentMesh) inIncident() bool {
	t := time.Since(m.start)
	return t >= m.shape.At && t < m.shape.At+m.shape.For
}

func startIncidentMesh(ctx context.Context, otlpURL string, shape incidentShape) (*incidentMesh, error) {
	m := &incidentMesh{shape: shape, plan: newIncidentPlan(shape.Roots), used: map[string]int{}, stock: &grpcStats{}}
	prop := propagation.TraceContext{}
	provider := func(name string) (*sdktrace.TracerProvider, error) {
		tp, err := newProvider(ctx, name, otlpURL, "")
		if err == nil {
			m.tps = append(m.tps, tp)
		}
		return tp, err
	}
	listen := func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
	serve := func(tp *sdktrace.TracerProvider, ln net.Listener, routes map[string]http.HandlerFunc) {
		mux := http.NewServeMux()
		for route, h := range routes {
			mux.Handle(route, otelhttp.NewHandler(h, route, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop)))
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		m.servers = append(m.servers, srv)
		go srv.Serve(ln)
	}
	transport := func(tp *sdktrace.TracerProvider) http.RoundTripper {
		return otelhttp.NewTransport(captureTransport{base: &http.Transport{MaxIdleConnsPerHost: 64}},
			otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop))
	}

	// ledger: down during the incident, throttles planned requests once.
	ledgerTP, err := provider("ledger")
	if err != nil {
		return nil, err
	}
	ledgerLn, err := listen()
	if err != nil {
		return nil, err
	}
	serve(ledgerTP, ledgerLn, map[string]http.HandlerFunc{routeLedger: func(w http.ResponseWriter, r *http.Request) {
		sku := r.PathValue("sku")
		id := strings.TrimPrefix(sku, "sku-")
		switch {
		case m.inIncident():
			unavailable.apply(w)
		case m.plan.throttled[id] && m.consume("ledger "+id, 1):
			throttled.apply(w)
		default:
			time.Sleep(time.Duration(1+hash(sku)%3) * time.Millisecond)
			writeJSON(w, http.StatusOK, map[string]any{"sku": sku, "balance": hash(sku) % 1000})
		}
	}})

	// stock: a gRPC server calling the ledger over HTTP.
	stockTP, err := provider("stock")
	if err != nil {
		return nil, err
	}
	m.toLedger = newCaller(Edge{"stock", "ledger", routeLedger, retryableHTTP(3, 10*ms, 80*ms)},
		[]string{"http://" + ledgerLn.Addr().String()}, transport(stockTP))
	stockLn, err := listen()
	if err != nil {
		return nil, err
	}
	m.grpcSrv = grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(stockTP), otelgrpc.WithPropagators(prop))))
	m.grpcSrv.RegisterService(&stockDesc, stockServer{m})
	go m.grpcSrv.Serve(stockLn)

	// quotes: HTTP, calling stock over gRPC with a service-config retry policy.
	quotesTP, err := provider("quotes")
	if err != nil {
		return nil, err
	}
	m.conn, err = grpc.NewClient(stockLn.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(quotesTP), otelgrpc.WithPropagators(prop))),
		grpc.WithDefaultServiceConfig(stockRetryPolicy))
	if err != nil {
		return nil, err
	}
	quotesLn, err := listen()
	if err != nil {
		return nil, err
	}
	serve(quotesTP, quotesLn, map[string]http.HandlerFunc{routeQuotes: func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		out := new(wrapperspb.Int64Value)
		err := m.conn.Invoke(r.Context(), stockMethod, wrapperspb.String(id), out)
		m.stock.record(err)
		if err != nil {
			http.Error(w, "stock: "+status.Code(err).String(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"quote": id, "stock": out.GetValue()})
	}})

	// gateway: the root, sleeping 600 ms between its retries of quotes.
	gatewayTP, err := provider("gateway")
	if err != nil {
		return nil, err
	}
	m.toQuotes = newCaller(Edge{"gateway", "quotes", routeQuotes, retryGoFixed(3, 600*ms)},
		[]string{"http://" + quotesLn.Addr().String()}, transport(gatewayTP))
	gatewayLn, err := listen()
	if err != nil {
		return nil, err
	}
	serve(gatewayTP, gatewayLn, map[string]http.HandlerFunc{routeQuote: func(w http.ResponseWriter, r *http.Request) {
		m.toQuotes.stats.calledFrom(r.Pattern)
		res, err := m.toQuotes.call(r.Context(), "/quotes/"+r.PathValue("id"), nil)
		relay(w, res, err)
	}})
	m.gateway = "http://" + gatewayLn.Addr().String()
	return m, nil
}

func (g *grpcStats) record(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	if err != nil {
		g.failed++
		g.exhausted++ // quotes gives up only when the retry policy does
	}
}

// stockServer answers stock lookups: UNAVAILABLE while the plan says so or
// the ledger call fails, else the ledger's balance.
type stockServer struct{ m *incidentMesh }

type stockHandler interface {
	get(ctx context.Context, id *wrapperspb.StringValue) (*wrapperspb.Int64Value, error)
}

func (s stockServer) get(ctx context.Context, in *wrapperspb.StringValue) (*wrapperspb.Int64Value, error) {
	id := in.GetValue()
	if n := s.m.plan.stockFails[id]; n > 0 && s.m.consume("stock "+id, n) {
		return nil, status.Error(codes.Unavailable, "stock shard unavailable")
	}
	s.m.toLedger.stats.calledFrom(stockMethod)
	res, err := s.m.toLedger.call(ctx, "/ledger/sku-"+id, nil)
	if failed(res, err) {
		return nil, status.Error(codes.Unavailable, "ledger unavailable")
	}
	var b struct {
		Balance int64 `json:"balance"`
	}
	if err := json.Unmarshal(res.body, &b); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return wrapperspb.Int64(b.Balance), nil
}

var stockDesc = grpc.ServiceDesc{
	ServiceName: stockService,
	HandlerType: (*stockHandler)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Get", Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		return srv.(stockHandler).get(ctx, in)
	}}},
}

func (m *incidentMesh) stop(ctx context.Context) error {
	var errs []error
	for _, s := range m.servers {
		errs = append(errs, s.Shutdown(ctx))
	}
	m.grpcSrv.GracefulStop()
	errs = append(errs, m.conn.Close())
	for _, tp := range m.tps {
		errs = append(errs, tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// drive sends the root requests open-loop at the shape's rate, each in its own
// goroutine, so that a request stuck in retries does not hold the others.
func (m *incidentMesh) drive() (string, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	n := m.shape.Roots
	answers := make([]int, n)
	errs := make([]error, n)
	m.start = time.Now()
	openLoop(m.start, n, time.Second/time.Duration(m.shape.Rate), func(i int) {
		answers[i], errs[i] = rootRequest(client, http.MethodGet, m.gateway+"/quote/"+incidentID(i))
	})
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	counts := map[int]int{}
	for _, a := range answers {
		counts[a]++
	}
	return fmt.Sprintf("200×%d 503×%d", counts[200], counts[503]), nil
}

// incidentTruth is truth.json of the incident scenario: the edges as in
// every scenario, and the incident window.
type incidentTruth struct {
	truth
	Incident struct {
		Service string `json:"service"`
		AtMS    int64  `json:"at_ms"`
		ForMS   int64  `json:"for_ms"`
		Status  int    `json:"status"`
	} `json:"incident"`
	RatePerS int `json:"rate_per_s"`
}

func runIncident(ctx context.Context, out string, shape incidentShape) (string, error) {
	var m *incidentMesh
	requests, sum, err := capture(ctx, shape.Roots, func(otlpURL string) (func() (string, error), func(context.Context) error, error) {
		var err error
		if m, err = startIncidentMesh(ctx, otlpURL, shape); err != nil {
			return nil, nil, err
		}
		return m.drive, m.stop, nil
	})
	if err != nil {
		return "", err
	}
	t := incidentTruth{RatePerS: shape.Rate}
	t.Scenario, t.RootRequests = incidentName, shape.Roots
	t.Description = fmt.Sprintf("open-loop at %d/s: the ledger is down for %g s; gateway retries quotes after 600 ms sleeps (retry-go), "+
		"quotes retries stock over gRPC by its service-config retryPolicy, stock retries the ledger with go-retryablehttp honouring 429 Retry-After: 1.",
		shape.Rate, shape.For.Seconds())
	t.Incident.Service, t.Incident.AtMS, t.Incident.ForMS, t.Incident.Status = "ledger", shape.At.Milliseconds(), shape.For.Milliseconds(), http.StatusServiceUnavailable
	for _, c := range []*caller{m.toQuotes, m.toLedger} {
		te, err := truthOf(c)
		if err != nil {
			return "", err
		}
		t.Edges = append(t.Edges, te)
	}
	lib := libGRPC
	m.stock.mu.Lock()
	t.Edges = append(t.Edges, truthEdge{Caller: "quotes", Callee: "stock", Operation: stockMethod[1:], Method: "",
		Library: &lib, Retries: true, MaxAttempts: 4, ExhaustedInTraces: m.stock.exhausted > 0,
		// grpc-go (v1.85, stream.go shouldRetry) multiplies each wait,
		// min(initialBackoff·multiplier^n, maxBackoff), by 0.8 + 0.4·U[0,1):
		// ±20% about the schedule, not gRFC A6's full jitter.
		Backoff: truthBackoff{Kind: "exponential", BaseMS: millis(20 * ms), Multiplier: ptrTo(2.0), CapMS: millis(100 * ms),
			Jitter: "proportional", JitterFraction: ptrTo(0.2)},
		RetriedStatus: []int{}, NotRetriedStatus: []int{}})
	m.stock.mu.Unlock()
	t.Paths = []truthPath{{Services: []string{"gateway", "quotes", "stock", "ledger"},
		Operations:             []string{"/quote/{id}", "/quotes/{id}", stockMethod[1:], "/ledger/{sku}"},
		WorstCaseAmplification: 3 * 4 * 3}}
	return sum, writeSample(filepath.Join(out, incidentName), requests, t)
}

func ptrTo[T any](v T) *T { return &v }
