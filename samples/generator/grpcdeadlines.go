package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// deadlineMesh is the running scenario's gRPC edges.
type deadlineMesh struct {
	toOrders    *rpcEdge
	toWarehouse *rpcEdge
}

// build adds the scenario's services to m: warehouse, orders calling it
// once with the deadline it received, and gateway retrying orders through
// the interceptor.
func (d *deadlineMesh) build(m *grpcMesh) error {
	d.toOrders = &rpcEdge{caller: "gateway", callee: "orders", method: ordersMethod, policy: gatewayRetry,
		retried: gatewayRetryCodes, codes: map[codes.Code]bool{}}
	d.toWarehouse = &rpcEdge{caller: "orders", callee: "warehouse", method: warehouseMethod, policy: single(),
		codes: map[codes.Code]bool{}}

	// warehouse: answers a count; a slow answer ignores cancellation.
	warehouseTP, err := m.provider("warehouse")
	if err != nil {
		return err
	}
	warehouseAddr, err := m.serveGRPC(warehouseTP, unaryDesc(warehouseService, "Count"), rpcHandler(func(ctx context.Context, id string) (int64, error) {
		switch f := m.faults.next(warehouseCount.service, warehouseCount.route, id); {
		case f.Status != 0:
			return 0, status.Error(rpcCode(f.Status), "warehouse shard unavailable")
		case f.Delay > 0:
			time.Sleep(f.Delay) // a blocking query: it runs on after the caller gave up
		}
		return int64(hash(id) % 100), nil
	}))
	if err != nil {
		return err
	}

	// orders: calls warehouse once, with the deadline it received.
	ordersTP, err := m.provider("orders")
	if err != nil {
		return err
	}
	toWarehouse, err := m.dial(ordersTP, warehouseAddr)
	if err != nil {
		return err
	}
	ordersAddr, err := m.serveGRPC(ordersTP, unaryDesc(ordersService, "Get"), rpcHandler(func(ctx context.Context, id string) (int64, error) {
		if d, ok := ctx.Deadline(); ok {
			ctx = context.WithValue(ctx, incomingDeadlineKey{}, d)
		}
		n, err := d.toWarehouse.call(ctx, toWarehouse, id)
		if err != nil {
			return 0, status.Error(status.Code(err), "warehouse: "+status.Convert(err).Message())
		}
		return n, nil
	}))
	if err != nil {
		return err
	}

	// gateway: HTTP, the root; retries orders through the interceptor.
	gatewayTP, err := m.provider("gateway")
	if err != nil {
		return err
	}
	toOrders, err := m.dial(gatewayTP, ordersAddr, grpc.WithUnaryInterceptor(ordersRetry()))
	if err != nil {
		return err
	}
	return m.serveGateway(gatewayTP, func(ctx context.Context, id string) (int64, error) { return d.toOrders.call(ctx, toOrders, id) })
}

// runGRPCDeadlines runs sc through the mesh and writes its files into
// out/<sc.Name>/. With requireInferable, a run whose retrying edge has too
// few waits or no exhausted call, or whose inner edge no deadline cut,
// fails before it writes anything.
func runGRPCDeadlines(ctx context.Context, sc Scenario, out string, requireInferable bool) (*deadlineMesh, string, error) {
	d := &deadlineMesh{}
	requests, sum, err := runGRPC(ctx, sc, d.build)
	if err != nil {
		return nil, sum, err
	}
	sum += d.toOrders.summary() + d.toWarehouse.summary()
	if requireInferable {
		short := d.toOrders.shortfalls()
		if d.toWarehouse.deadlineCut < 2 {
			short = append(short, "fewer than 2 warehouse calls cut by the propagated deadline")
		}
		if len(short) > 0 {
			return nil, sum, fmt.Errorf("too few retries for inference, nothing written: %s", strings.Join(short, "; "))
		}
	}
	t := truth{Scenario: sc.Name, Description: sc.Description, RootRequests: sc.rootRequests(),
		Edges: []truthEdge{d.toOrders.truth(), d.toWarehouse.truth()},
		Paths: []truthPath{{Services: []string{"gateway", "orders", "warehouse"},
			Operations:             []string{httpRoute(routeOrderGW), ordersMethod[1:], warehouseMethod[1:]},
			WorstCaseAmplification: gatewayRetry.MaxAttempts}}}
	return d, sum, writeSample(filepath.Join(out, sc.Name), requests, t)
}
