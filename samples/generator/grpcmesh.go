package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// What the gRPC scenarios (grpc-deadlines, grpc-pushback) share: an HTTP
// gateway at the root serving GET /order/{id}, gRPC services behind it,
// each with its own TracerProvider and otelgrpc's stats handlers, the
// scripted fault table, and the gRPC edges' own account of every attempt.
const routeOrderGW = "GET /order/{id}"

// rpcEdge is one gRPC caller → callee method and what happened on it.
type rpcEdge struct {
	caller, callee, method string
	policy                 Policy
	retried                []codes.Code // codes the policy retries

	mu        sync.Mutex
	calls     int
	attempts  int
	exhausted int
	waits     []int // waits before attempt index i that the backoff chose, as edgeStats.waits
	lateMS    float64
	codes     map[codes.Code]bool // failure codes received
	// deadlineCut counts attempts that ended DEADLINE_EXCEEDED or
	// CANCELLED under a deadline the caller received rather than set.
	deadlineCut int
	// pushbackWaits counts the waits a server's grpc-retry-pushback-ms
	// set (the policy honours it: grpc-go's retryPolicy does).
	pushbackWaits int
}

// rpcAttempts logs the attempts of one call (attemptRecorder adds them).
type rpcAttempts struct {
	mu         sync.Mutex
	codes      []codes.Code
	start, end []time.Time
	inherited  []bool // the attempt's deadline was the one the caller received
	pushback   []bool // the answer carried a grpc-retry-pushback-ms of 0 or more
}

type rpcAttemptsKey struct{}

// incomingDeadlineKey holds the deadline a server handler received.
type incomingDeadlineKey struct{}

// attemptRecorder is a client stats handler beside otelgrpc's. grpc-go
// tags and ends every attempt with its stats handlers, whether an
// interceptor or the channel's own retryPolicy made it, so this sees each
// attempt otelgrpc makes a CLIENT span for, and logs its code, times,
// deadline and pushback into the call's rpcAttempts.
type attemptRecorder struct{}

type attemptStartKey struct{}

// attemptStart is what TagRPC and Begin learn of an attempt before it ends.
type attemptStart struct {
	at        time.Time
	inherited bool
}

func (attemptRecorder) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, attemptStartKey{}, &attemptStart{})
}

func (attemptRecorder) HandleRPC(ctx context.Context, s stats.RPCStats) {
	log, ok := ctx.Value(rpcAttemptsKey{}).(*rpcAttempts)
	a, _ := ctx.Value(attemptStartKey{}).(*attemptStart)
	if !ok || a == nil {
		return
	}
	switch s := s.(type) {
	case *stats.Begin:
		a.at = s.BeginTime
		if in, ok := ctx.Value(incomingDeadlineKey{}).(time.Time); ok {
			d, _ := ctx.Deadline()
			a.inherited = d.Equal(in)
		}
	case *stats.End:
		// grpc-go waits for a pushback of 0 or more and gives up on a
		// negative or malformed one (stream.go shouldRetry).
		pb := s.Trailer.Get("grpc-retry-pushback-ms")
		ms, err := 0, errors.New("none")
		if len(pb) == 1 {
			ms, err = strconv.Atoi(pb[0])
		}
		log.mu.Lock()
		log.codes = append(log.codes, status.Code(s.Error))
		log.start, log.end = append(log.start, a.at), append(log.end, s.EndTime)
		log.inherited = append(log.inherited, a.inherited)
		log.pushback = append(log.pushback, err == nil && ms >= 0)
		log.mu.Unlock()
	}
}

func (attemptRecorder) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (attemptRecorder) HandleConn(context.Context, stats.ConnStats) {}

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
		if e.policy.HonoursRetryAfter && log.pushback[i-1] {
			e.pushbackWaits++
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
	// A call gave up on a failure its policy retries (a single attempt:
	// on a transient one) after all its attempts.
	if n == e.policy.MaxAttempts && ctx.Err() == nil && n > 0 {
		if last := log.codes[n-1]; slices.Contains(e.retried, last) || !e.policy.retries() && transientCode(last) {
			e.exhausted++
		}
	}
}

// truth writes the edge as truth.json does: the policy's configuration
// and what the calls met. otelgrpc records no trailer, so no span
// captures a pushback.
func (e *rpcEdge) truth() truthEdge {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.policy
	te := truthEdge{Caller: e.caller, Callee: e.callee, Operation: e.method[1:], ExhaustedInTraces: e.exhausted > 0,
		RetriedStatus: []int{}, NotRetriedStatus: []int{}, RetryAfterCaptured: !p.HonoursRetryAfter, RetryAfterWaits: e.pushbackWaits,
		Attempts: e.attempts, DeadlineCutAttempts: e.deadlineCut, RetriedCodes: []string{}, NotRetriedCodes: []string{}}
	te.configure(p)
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

// summary is the edge's line in the generator's summary.
func (e *rpcEdge) summary() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := fmt.Sprintf("  %-9s → %-9s %-26s calls %3d, attempts %d, cut by a propagated deadline %d", e.caller, e.callee, e.method, e.calls, e.attempts, e.deadlineCut)
	if e.policy.retries() {
		s += fmt.Sprintf(", gave up after %d attempts: %d, %s", e.policy.MaxAttempts, e.exhausted,
			describeWaits(&edgeStats{waits: e.waits, retryAfterWaits: e.pushbackWaits}))
	}
	return s + "\n"
}

// shortfalls lists what the edge's calls lack for inference: the waits
// checkInferable asks for, and an exhausted call.
func (e *rpcEdge) shortfalls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	short := waitShortfalls(e.policy, e.waits)
	if e.policy.retries() && e.exhausted == 0 {
		short = append(short, "no call exhausted its attempts")
	}
	for i, s := range short {
		short[i] = e.caller + " → " + e.callee + ": " + s
	}
	return short
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

// transientCode reports whether a failure is one gRPC clients commonly
// retry: UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED.
func transientCode(c codes.Code) bool {
	return c == codes.Unavailable || c == codes.DeadlineExceeded || c == codes.ResourceExhausted
}

// rpcCode is the gRPC code a gRPC endpoint answers for a fault's HTTP
// status: 429 is RESOURCE_EXHAUSTED, any other UNAVAILABLE.
func rpcCode(httpStatus int) codes.Code {
	if httpStatus == http.StatusTooManyRequests {
		return codes.ResourceExhausted
	}
	return codes.Unavailable
}

// gatewayStatus is how the HTTP gateway answers a gRPC outcome, as a
// gateway would: a timeout is 504, UNAVAILABLE 503, RESOURCE_EXHAUSTED
// 429, anything else 502.
func gatewayStatus(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	}
	return http.StatusBadGateway
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

// grpcMesh is a running gRPC scenario's plumbing.
type grpcMesh struct {
	ctx      context.Context
	otlpURL  string
	faults   *faultTable
	tps      []*sdktrace.TracerProvider
	httpSrv  *http.Server
	grpcSrvs []*grpc.Server
	conns    []*grpc.ClientConn
	gateway  string
}

func newGRPCMesh(ctx context.Context, otlpURL string) *grpcMesh {
	return &grpcMesh{ctx: ctx, otlpURL: otlpURL, faults: newFaultTable()}
}

var traceContext = propagation.TraceContext{}

func (m *grpcMesh) provider(name string) (*sdktrace.TracerProvider, error) {
	tp, err := newProvider(m.ctx, name, m.otlpURL, "")
	if err == nil {
		m.tps = append(m.tps, tp)
	}
	return tp, err
}

// dial connects to addr as tp's service, traced by otelgrpc, every attempt
// logged by attemptRecorder.
func (m *grpcMesh) dial(tp *sdktrace.TracerProvider, addr string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(traceContext))),
		grpc.WithStatsHandler(attemptRecorder{})}, opts...)...)
	if err == nil {
		m.conns = append(m.conns, conn)
	}
	return conn, err
}

// serveGRPC serves desc by impl on a new port as tp's service; it returns
// the address.
func (m *grpcMesh) serveGRPC(tp *sdktrace.TracerProvider, desc *grpc.ServiceDesc, impl any) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(traceContext))))
	srv.RegisterService(desc, impl)
	m.grpcSrvs = append(m.grpcSrvs, srv)
	go srv.Serve(ln)
	return ln.Addr().String(), nil
}

// serveGateway serves the root route as tp's service: it looks the order
// up through lookup and answers its count, or the gateway status of its
// failure.
func (m *grpcMesh) serveGateway(tp *sdktrace.TracerProvider, lookup func(ctx context.Context, id string) (int64, error)) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(routeOrderGW, otelhttp.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := lookup(r.Context(), r.PathValue("id"))
		if code := gatewayStatus(status.Code(err)); code != http.StatusOK {
			http.Error(w, "orders: "+status.Code(err).String(), code)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"order": r.PathValue("id"), "count": n})
	}), routeOrderGW, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(traceContext)))
	m.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go m.httpSrv.Serve(ln)
	m.gateway = "http://" + ln.Addr().String()
	return nil
}

func (m *grpcMesh) stop(ctx context.Context) error {
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

// drive sends the root requests one at a time, in the scenario's order, after
// planning each one's faults; it returns the answers, e.g. "200×40 503×2".
func (m *grpcMesh) drive(sc Scenario) (string, error) {
	cases := sc.order()
	client := &http.Client{Timeout: 30 * time.Second} // not instrumented: gateway's span is the root
	answers := map[int]int{}
	for i, c := range cases {
		id := fmt.Sprint(7001 + i)
		if c.Script != nil {
			m.faults.plan(c.Target, id, c.Script)
		}
		code, err := rootRequest(client, http.MethodGet, m.gateway+"/order/"+id)
		if err != nil {
			return "", err
		}
		answers[code]++
	}
	return answersOf(answers), nil
}

// runGRPC brings a gRPC mesh up, has build add the scenario's services to
// it, sends sc's root requests, stops the mesh and returns the export
// requests with the summary's first lines.
func runGRPC(ctx context.Context, sc Scenario, build func(m *grpcMesh) error) ([]ptrace.Traces, string, error) {
	return capture(ctx, sc.rootRequests(), func(otlpURL string) (func() (string, error), func(context.Context) error, error) {
		m := newGRPCMesh(ctx, otlpURL)
		if err := build(m); err != nil {
			return nil, nil, err
		}
		return func() (string, error) { return m.drive(sc) }, m.stop, nil
	})
}
