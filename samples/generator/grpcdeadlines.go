package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
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

// The grpc-deadlines scenario is a third mesh, for what a per-try timeout
// looks like over gRPC (issue 11 item 6): gateway calls orders through
// go-grpc-middleware's retry interceptor with a per-retry timeout, so an
// attempt orders does not answer in time ends DEADLINE_EXCEEDED at that
// timeout; orders calls warehouse once, with the deadline it received
// (gRPC sends it as grpc-timeout), so a slow warehouse makes orders slower
// than the timeout and cuts orders' call at gateway's per-try timeout,
// which is no timeout of orders' own.
//
//	gateway  --gRPC, go-grpc-middleware retry: 4 attempts, 60ms each, 20ms ×2 between-->  orders
//	orders   --gRPC, one attempt, the propagated deadline-->  warehouse (sometimes UNAVAILABLE or slow)
const (
	grpcDeadlinesName = "grpc-deadlines"

	routeOrderGW     = "GET /order/{id}"
	ordersService    = "retryaudit.Orders"
	ordersMethod     = "/" + ordersService + "/Get"
	warehouseService = "retryaudit.Warehouse"
	warehouseMethod  = "/" + warehouseService + "/Count"
	libGRPCRetry     = "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
)

// gatewayRetry is gateway's policy for orders, in the vocabulary of
// truth.json; the interceptor is configured from it (ordersRetry).
var gatewayRetry = Policy{Library: libGRPCRetry, MaxAttempts: 4, PerTryTimeout: 60 * ms,
	Backoff: Backoff{Kind: "exponential", Base: 20 * ms, Multiplier: 2, Jitter: "none"}}

// gatewayRetryCodes are the codes gateway retries.
var gatewayRetryCodes = []codes.Code{codes.Unavailable, codes.DeadlineExceeded}

// ordersRetry is go-grpc-middleware's retry interceptor as gatewayRetry
// says: WithMax counts attempts (the first included), BackoffExponential
// waits base·2^(n-1) before retry n, WithPerRetryTimeout bounds each attempt.
func ordersRetry() grpc.UnaryClientInterceptor {
	p := gatewayRetry
	return retry.UnaryClientInterceptor(
		retry.WithMax(uint(p.MaxAttempts)),
		retry.WithPerRetryTimeout(p.PerTryTimeout),
		retry.WithBackoff(retry.BackoffExponential(p.Backoff.Base)),
		retry.WithCodes(gatewayRetryCodes...))
}

// The endpoint that injects faults: a 503 Fault is UNAVAILABLE, a Delay
// a slow answer (a blocking query that runs on after its caller gave up).
// orders passes warehouse's code on, so gateway sees UNAVAILABLE, or
// DEADLINE_EXCEEDED when its per-retry timeout passes first.
var (
	warehouseCount = target{"warehouse", warehouseMethod, orderOf}
	slowRPC        = Fault{Delay: 150 * ms}
	unavailableRPC = Fault{Status: http.StatusServiceUnavailable}
)

// grpcDeadlines is the committed scenario's traffic: scripted faults per
// root request, as in the HTTP mesh.
func grpcDeadlines() Scenario {
	return Scenario{
		Name: grpcDeadlinesName,
		Description: "gateway retries orders over gRPC with go-grpc-middleware's retry interceptor (4 attempts, 60ms per-retry " +
			"timeout, 20ms ×2 between, on UNAVAILABLE and DEADLINE_EXCEEDED); orders calls warehouse once with the deadline it " +
			"received and passes its UNAVAILABLE on: a slow warehouse (150ms) makes gateway's attempts end DEADLINE_EXCEEDED at " +
			"60ms and has orders' call cut there too, a propagated deadline, not a timeout of orders' own.",
		Seed: 10,
		Cases: []Case{
			{Count: 20},
			{Count: 8, Target: warehouseCount, Script: times(1, unavailableRPC)},
			{Count: 5, Target: warehouseCount, Script: times(2, unavailableRPC)},
			{Count: 2, Target: warehouseCount, Script: times(4, unavailableRPC)},
			{Count: 8, Target: warehouseCount, Script: times(1, slowRPC)},
			{Count: 5, Target: warehouseCount, Script: times(2, slowRPC)},
			{Count: 2, Target: warehouseCount, Script: times(4, slowRPC)},
		},
	}
}

// rpcEdge is one gRPC caller → callee method and what happened on it.
type rpcEdge struct {
	caller, callee, method string
	policy                 Policy
	retried                []codes.Code // codes the policy retries

	mu        sync.Mutex
	calls     int
	attempts  int
	exhausted int
	waits     []int // waits before attempt index i, as edgeStats.waits
	lateMS    float64
	codes     map[codes.Code]bool // failure codes received
	// deadlineCut counts attempts that ended DEADLINE_EXCEEDED or
	// CANCELLED under a deadline the caller received rather than set.
	deadlineCut int
}

// rpcAttempts logs the attempts of one call (recordAttempt adds them).
type rpcAttempts struct {
	mu         sync.Mutex
	codes      []codes.Code
	start, end []time.Time
	inherited  []bool // the attempt's deadline was the one the caller received
}

type rpcAttemptsKey struct{}

// recordAttempt is the innermost client interceptor: it sees every
// attempt the retry interceptor makes, and logs its code and times.
func recordAttempt(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	end := time.Now()
	if log, ok := ctx.Value(rpcAttemptsKey{}).(*rpcAttempts); ok {
		inherited := false
		if in, ok := ctx.Value(incomingDeadlineKey{}).(time.Time); ok {
			d, _ := ctx.Deadline()
			inherited = d.Equal(in)
		}
		log.mu.Lock()
		log.codes = append(log.codes, status.Code(err))
		log.start, log.end = append(log.start, start), append(log.end, end)
		log.inherited = append(log.inherited, inherited)
		log.mu.Unlock()
	}
	return err
}

// incomingDeadlineKey holds the deadline a server handler received.
type incomingDeadlineKey struct{}

// call invokes the edge's method with id, logging its attempts.
func (e *rpcEdge) call(ctx context.Context, conn *grpc.ClientConn, id string) (int64, error) {
	log := &rpcAttempts{}
	out := new(wrapperspb.Int64Value)
	err := conn.Invoke(context.WithValue(ctx, rpcAttemptsKey{}, log), e.method, wrapperspb.String(id), out)
	e.record(ctx, log)
	return out.GetValue(), err
}

func (e *rpcEdge) record(ctx context.Context, log *rpcAttempts) {
	log.mu.Lock()
	defer log.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	n := len(log.codes)
	e.attempts += n
	for i, c := range log.codes {
		if c != codes.OK {
			e.codes[c] = true
		}
		if (c == codes.DeadlineExceeded || c == codes.Canceled) && log.inherited[i] {
			// The caller's deadline passed, or the caller cancelled when
			// it passed (whichever reached this service first).
			e.deadlineCut++
		}
		if i == 0 {
			continue
		}
		for len(e.waits) <= i {
			e.waits = append(e.waits, 0)
		}
		e.waits[i]++
		if want, ok := e.policy.intendedWait(i); ok {
			e.lateMS = max(e.lateMS, float64(log.start[i].Sub(log.end[i-1])-want)/float64(time.Millisecond))
		}
	}
	if n == e.policy.MaxAttempts && ctx.Err() == nil && n > 0 {
		if last := log.codes[n-1]; last == codes.Unavailable || last == codes.DeadlineExceeded {
			e.exhausted++
		}
	}
}

// truth writes the edge as truth.json does: the policy's configuration
// and what the calls met.
func (e *rpcEdge) truth() truthEdge {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.policy
	te := truthEdge{Caller: e.caller, Callee: e.callee, Operation: e.method[1:], Retries: p.retries(), MaxAttempts: p.MaxAttempts,
		ExhaustedInTraces: e.exhausted > 0, Backoff: truthBackoff{Kind: p.Backoff.Kind, Jitter: p.Backoff.Jitter},
		RetriedStatus: []int{}, NotRetriedStatus: []int{}, RetryAfterCaptured: true,
		Attempts: e.attempts, DeadlineCutAttempts: e.deadlineCut, RetriedCodes: []string{}, NotRetriedCodes: []string{}}
	if p.Library != "" {
		te.Library = &p.Library
	}
	if p.PerTryTimeout > 0 {
		te.PerTryTimeoutMS = millis(p.PerTryTimeout)
	}
	if p.Backoff.Kind != "none" {
		te.Backoff.BaseMS = millis(p.Backoff.Base)
	}
	if p.Backoff.Kind == "exponential" {
		te.Backoff.Multiplier = &p.Backoff.Multiplier
	}
	if _, ok := p.intendedWait(1); ok && p.retries() {
		late := math.Round(e.lateMS*10) / 10
		te.WaitLateMS = &late
	}
	for _, c := range slices.Sorted(maps.Keys(e.codes)) {
		name := grpcCodeName(c)
		if p.retries() && slices.Contains(e.retried, c) {
			te.RetriedCodes = append(te.RetriedCodes, name)
		} else {
			te.NotRetriedCodes = append(te.NotRetriedCodes, name)
		}
	}
	return te
}

// grpcCodeName is a code's name as the gRPC spec writes it
// (DEADLINE_EXCEEDED), from grpc-go's CamelCase String.
func grpcCodeName(c codes.Code) string {
	if c == codes.Canceled {
		return "CANCELLED" // grpc-go spells it Canceled
	}
	var b strings.Builder
	prev := ' '
	for _, r := range c.String() {
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
		prev = r
	}
	return b.String()
}

// deadlineMesh is the running scenario.
type deadlineMesh struct {
	faults      *faultTable
	tps         []*sdktrace.TracerProvider
	httpSrv     *http.Server
	grpcSrvs    []*grpc.Server
	conns       []*grpc.ClientConn
	gateway     string
	toOrders    *rpcEdge
	toWarehouse *rpcEdge
}

func startDeadlineMesh(ctx context.Context, otlpURL string) (*deadlineMesh, error) {
	m := &deadlineMesh{faults: newFaultTable()}
	m.toOrders = &rpcEdge{caller: "gateway", callee: "orders", method: ordersMethod, policy: gatewayRetry,
		retried: gatewayRetryCodes, codes: map[codes.Code]bool{}}
	m.toWarehouse = &rpcEdge{caller: "orders", callee: "warehouse", method: warehouseMethod, policy: single(),
		codes: map[codes.Code]bool{}}
	prop := propagation.TraceContext{}
	provider := func(name string) (*sdktrace.TracerProvider, error) {
		tp, err := newProvider(ctx, name, otlpURL)
		if err == nil {
			m.tps = append(m.tps, tp)
		}
		return tp, err
	}
	listen := func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
	dial := func(tp *sdktrace.TracerProvider, addr string, interceptors ...grpc.UnaryClientInterceptor) (*grpc.ClientConn, error) {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(prop))),
			grpc.WithChainUnaryInterceptor(append(interceptors, recordAttempt)...))
		if err == nil {
			m.conns = append(m.conns, conn)
		}
		return conn, err
	}
	serveGRPC := func(tp *sdktrace.TracerProvider, desc *grpc.ServiceDesc, impl any) (string, error) {
		ln, err := listen()
		if err != nil {
			return "", err
		}
		srv := grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(prop))))
		srv.RegisterService(desc, impl)
		m.grpcSrvs = append(m.grpcSrvs, srv)
		go srv.Serve(ln)
		return ln.Addr().String(), nil
	}

	// warehouse: answers a count; a slow answer ignores cancellation.
	warehouseTP, err := provider("warehouse")
	if err != nil {
		return nil, err
	}
	warehouseAddr, err := serveGRPC(warehouseTP, unaryDesc(warehouseService, "Count"), rpcHandler(func(ctx context.Context, id string) (int64, error) {
		switch f := m.faults.next(warehouseCount.service, warehouseCount.route, id); {
		case f.Status != 0:
			return 0, status.Error(codes.Unavailable, "warehouse shard unavailable")
		case f.Delay > 0:
			time.Sleep(f.Delay) // a blocking query: it runs on after the caller gave up
		}
		return int64(hash(id) % 100), nil
	}))
	if err != nil {
		return nil, err
	}

	// orders: calls warehouse once, with the deadline it received.
	ordersTP, err := provider("orders")
	if err != nil {
		return nil, err
	}
	toWarehouse, err := dial(ordersTP, warehouseAddr)
	if err != nil {
		return nil, err
	}
	ordersAddr, err := serveGRPC(ordersTP, unaryDesc(ordersService, "Get"), rpcHandler(func(ctx context.Context, id string) (int64, error) {
		if d, ok := ctx.Deadline(); ok {
			ctx = context.WithValue(ctx, incomingDeadlineKey{}, d)
		}
		n, err := m.toWarehouse.call(ctx, toWarehouse, id)
		if err != nil {
			return 0, status.Error(status.Code(err), "warehouse: "+status.Convert(err).Message())
		}
		return n, nil
	}))
	if err != nil {
		return nil, err
	}

	// gateway: HTTP, the root; retries orders through the interceptor.
	gatewayTP, err := provider("gateway")
	if err != nil {
		return nil, err
	}
	toOrders, err := dial(gatewayTP, ordersAddr, ordersRetry())
	if err != nil {
		return nil, err
	}
	gatewayLn, err := listen()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(routeOrderGW, otelhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := m.toOrders.call(r.Context(), toOrders, r.PathValue("id"))
		switch status.Code(err) {
		case codes.OK:
			writeJSON(w, http.StatusOK, map[string]any{"order": r.PathValue("id"), "count": n})
		case codes.DeadlineExceeded:
			http.Error(w, "orders timed out", http.StatusGatewayTimeout)
		case codes.Unavailable:
			http.Error(w, "orders unavailable", http.StatusServiceUnavailable)
		default:
			http.Error(w, "orders failed", http.StatusBadGateway)
		}
	}), routeOrderGW, otelhttp.WithTracerProvider(gatewayTP), otelhttp.WithPropagators(prop)))
	m.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go m.httpSrv.Serve(gatewayLn)
	m.gateway = "http://" + gatewayLn.Addr().String()
	return m, nil
}

// rpcHandler serves a unary method from a string id to a count.
type rpcHandler func(ctx context.Context, id string) (int64, error)

type rpcServer interface {
	serve(ctx context.Context, id string) (int64, error)
}

func (h rpcHandler) serve(ctx context.Context, id string) (int64, error) { return h(ctx, id) }

// unaryDesc describes a service with one unary method taking a
// StringValue and answering an Int64Value.
func unaryDesc(service, method string) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: service,
		HandlerType: (*rpcServer)(nil),
		Methods: []grpc.MethodDesc{{MethodName: method, Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			n, err := srv.(rpcServer).serve(ctx, in.GetValue())
			if err != nil {
				return nil, err
			}
			return wrapperspb.Int64(n), nil
		}}},
	}
}

func (m *deadlineMesh) stop(ctx context.Context) error {
	errs := []error{m.httpSrv.Shutdown(ctx)}
	for _, s := range m.grpcSrvs {
		s.GracefulStop()
	}
	for _, c := range m.conns {
		errs = append(errs, c.Close())
	}
	for _, tp := range m.tps {
		errs = append(errs, tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// drive sends the root requests one at a time, shuffled by the seed, after
// planning each one's faults; it returns the answers, e.g. "200×40 503×2".
func (m *deadlineMesh) drive(sc Scenario) (string, error) {
	var cases []Case
	for _, c := range sc.Cases {
		for range c.Count {
			cases = append(cases, c)
		}
	}
	rand.New(rand.NewPCG(sc.Seed, sc.Seed)).Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
	client := &http.Client{Timeout: 30 * time.Second} // not instrumented: gateway's span is the root
	answers := map[int]int{}
	for i, c := range cases {
		id := fmt.Sprint(7001 + i)
		if c.Script != nil {
			m.faults.plan(c.Target, id, c.Script)
		}
		resp, err := client.Get(m.gateway + "/order/" + id)
		if err != nil {
			return "", err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		answers[resp.StatusCode]++
	}
	return answersOf(answers), nil
}

// runGRPCDeadlines runs sc through the mesh and writes its files into
// out/<sc.Name>/. With requireInferable, a run whose retrying edge has too
// few waits or no exhausted call, or whose inner edge no deadline cut,
// fails before it writes anything.
func runGRPCDeadlines(ctx context.Context, sc Scenario, out string, requireInferable bool) (*deadlineMesh, string, error) {
	rc, err := startReceiver()
	if err != nil {
		return nil, "", err
	}
	m, err := startDeadlineMesh(ctx, rc.url)
	if err != nil {
		return nil, "", err
	}
	answers, err := m.drive(sc)
	if err != nil {
		return nil, "", err
	}
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := m.stop(stopCtx); err != nil {
		return nil, "", err
	}
	requests := rc.stop()
	var b strings.Builder
	b.WriteString(exportSummary(sc.rootRequests(), answers, requests))
	for _, e := range []*rpcEdge{m.toOrders, m.toWarehouse} {
		e.mu.Lock()
		fmt.Fprintf(&b, "  %-9s → %-9s %-26s calls %3d, attempts %d, cut by a propagated deadline %d", e.caller, e.callee, e.method, e.calls, e.attempts, e.deadlineCut)
		if e.policy.retries() {
			fmt.Fprintf(&b, ", gave up after %d attempts: %d, %s", e.policy.MaxAttempts, e.exhausted, describeWaits(&edgeStats{waits: e.waits}))
		}
		b.WriteString("\n")
		e.mu.Unlock()
	}
	if requireInferable {
		e := m.toOrders
		short := waitShortfalls(e.policy, e.waits)
		if e.exhausted == 0 {
			short = append(short, "no call exhausted its attempts")
		}
		if m.toWarehouse.deadlineCut < 2 {
			short = append(short, "fewer than 2 warehouse calls cut by the propagated deadline")
		}
		if len(short) > 0 {
			return nil, b.String(), fmt.Errorf("too few retries for inference, nothing written: %s", strings.Join(short, "; "))
		}
	}
	t := truth{Scenario: sc.Name, Description: sc.Description, RootRequests: sc.rootRequests(),
		Edges: []truthEdge{m.toOrders.truth(), m.toWarehouse.truth()},
		Paths: []truthPath{{Services: []string{"gateway", "orders", "warehouse"},
			Operations:             []string{httpRoute(routeOrderGW), ordersMethod[1:], warehouseMethod[1:]},
			WorstCaseAmplification: gatewayRetry.MaxAttempts}}}
	return m, b.String(), writeSample(filepath.Join(out, sc.Name), requests, t)
}
