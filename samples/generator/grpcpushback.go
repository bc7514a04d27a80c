package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The grpc-pushback scenario is gRPC's own retry machinery, grpc-go's
// service-config retryPolicy, meeting server pushback (issue 11 item 1):
// catalog answers some lookups RESOURCE_EXHAUSTED with a
// grpc-retry-pushback-ms trailer, which grpc-go waits for exactly instead
// of its backoff (and after which it starts its backoff over), or which,
// negative, tells it not to retry at all; other lookups fail UNAVAILABLE
// and are retried on the jittered schedule. otelgrpc records no trailer,
// so only the timing shows the pushback.
//
//	gateway  --gRPC, service-config retryPolicy: 5 attempts, 25ms ×2 up to 200ms ±20%, on UNAVAILABLE and RESOURCE_EXHAUSTED-->  catalog
const (
	grpcPushbackName = "grpc-pushback"
	catalogService   = "retryaudit.Catalog"
	catalogMethod    = "/" + catalogService + "/Lookup"
)

// catalogRetry is gateway's retryPolicy for catalog in the vocabulary of
// truth.json; the service config is written from it (serviceConfig).
// grpc-go (v1.85, stream.go shouldRetry) draws each wait as
// min(initialBackoff·multiplier^n, maxBackoff)·(0.8 + 0.4·U[0,1)), n
// counting the retries since the last pushback: ±20%, which no setting
// changes. A pushback of 0 or more is waited for as it is, unjittered.
var catalogRetry = Policy{Library: libGRPC, MaxAttempts: 5, HonoursRetryAfter: true,
	Backoff: Backoff{Kind: "exponential", Base: 25 * ms, Multiplier: 2, Cap: 200 * ms, Jitter: "proportional", JitterFraction: 0.2}}

// catalogRetryCodes are the codes the policy retries.
var catalogRetryCodes = []codes.Code{codes.Unavailable, codes.ResourceExhausted}

// serviceConfig is grpc-go's service config giving every method of
// service p's retryPolicy on the retried codes.
func serviceConfig(service string, p Policy, retried []codes.Code) (string, error) {
	names := make([]string, len(retried))
	for i, c := range retried {
		names[i] = grpcCodeName(c)
	}
	seconds := func(d time.Duration) string { return fmt.Sprintf("%gs", d.Seconds()) }
	b, err := json.Marshal(map[string]any{"methodConfig": []any{map[string]any{
		"name": []any{map[string]string{"service": service}},
		"retryPolicy": map[string]any{"maxAttempts": p.MaxAttempts, "initialBackoff": seconds(p.Backoff.Base),
			"maxBackoff": seconds(p.Backoff.Cap), "backoffMultiplier": p.Backoff.Multiplier, "retryableStatusCodes": names},
	}}})
	return string(b), err
}

// The endpoint and its faults: UNAVAILABLE, RESOURCE_EXHAUSTED with a
// 400ms pushback, and RESOURCE_EXHAUSTED with a pushback that refuses
// any retry.
var (
	catalogLookup = target{"catalog", catalogMethod, orderOf}
	pushedBack    = Fault{Status: http.StatusTooManyRequests, Pushback: "400"}
	refused       = Fault{Status: http.StatusTooManyRequests, Pushback: "-1"}
)

// grpcPushback is the committed scenario's traffic.
func grpcPushback() Scenario {
	return Scenario{
		Name: grpcPushbackName,
		Description: "gateway calls catalog over gRPC with grpc-go's service-config retryPolicy (5 attempts, 25ms ×2 up to 200ms, " +
			"grpc-go's ±20% jitter, on UNAVAILABLE and RESOURCE_EXHAUSTED); catalog sometimes answers RESOURCE_EXHAUSTED with a " +
			"grpc-retry-pushback-ms trailer: 400 (grpc-go waits 400ms, unjittered, and starts its backoff over) or -1 (grpc-go does " +
			"not retry). No span records the trailer.",
		Seed: 11,
		Cases: []Case{
			{Count: 20},
			{Count: 10, Target: catalogLookup, Script: times(1, unavailableRPC)},
			{Count: 7, Target: catalogLookup, Script: times(2, unavailableRPC)},
			{Count: 5, Target: catalogLookup, Script: times(3, unavailableRPC)},
			{Count: 3, Target: catalogLookup, Script: times(5, unavailableRPC)},
			{Count: 6, Target: catalogLookup, Script: times(1, pushedBack)},
			{Count: 4, Target: catalogLookup, Script: []Fault{unavailableRPC, pushedBack, unavailableRPC}},
			{Count: 3, Target: catalogLookup, Script: times(1, refused)},
		},
	}
}

// pushbackMesh is the running scenario's gRPC edge.
type pushbackMesh struct {
	toCatalog *rpcEdge
}

// build adds catalog and gateway, which calls it through a channel whose
// default service config holds catalogRetry.
func (p *pushbackMesh) build(m *grpcMesh) error {
	p.toCatalog = &rpcEdge{caller: "gateway", callee: "catalog", method: catalogMethod, policy: catalogRetry,
		retried: catalogRetryCodes, codes: map[codes.Code]bool{}}
	catalogTP, err := m.provider("catalog")
	if err != nil {
		return err
	}
	addr, err := m.serveGRPC(catalogTP, unaryDesc(catalogService, "Lookup"), rpcHandler(func(ctx context.Context, id string) (int64, error) {
		f := m.faults.next(catalogLookup.service, catalogLookup.route, id)
		if f.Status == 0 {
			time.Sleep(time.Duration(1+hash(id)%3) * time.Millisecond)
			return int64(hash(id) % 100), nil
		}
		if f.Pushback != "" {
			if err := grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", f.Pushback)); err != nil {
				return 0, err
			}
		}
		return 0, status.Error(rpcCode(f.Status), "catalog shard busy")
	}))
	if err != nil {
		return err
	}
	gatewayTP, err := m.provider("gateway")
	if err != nil {
		return err
	}
	cfg, err := serviceConfig(catalogService, catalogRetry, catalogRetryCodes)
	if err != nil {
		return err
	}
	conn, err := m.dial(gatewayTP, addr, grpc.WithDefaultServiceConfig(cfg))
	if err != nil {
		return err
	}
	return m.serveGateway(gatewayTP, func(ctx context.Context, id string) (int64, error) { return p.toCatalog.call(ctx, conn, id) })
}

// runGRPCPushback runs sc through the mesh and writes its files into
// out/<sc.Name>/. With requireInferable, a run whose edge has too few
// backoff waits, no exhausted call or no pushback wait fails before it
// writes anything.
func runGRPCPushback(ctx context.Context, sc Scenario, out string, requireInferable bool) (*pushbackMesh, string, error) {
	p := &pushbackMesh{}
	requests, sum, err := runGRPC(ctx, sc, p.build)
	if err != nil {
		return nil, sum, err
	}
	e := p.toCatalog
	sum += e.summary()
	if requireInferable {
		short := e.shortfalls()
		if e.pushbackWaits == 0 {
			short = append(short, "no wait for a pushback")
		}
		if len(short) > 0 {
			return nil, sum, fmt.Errorf("too few retries for inference, nothing written: %s", strings.Join(short, "; "))
		}
	}
	t := truth{Scenario: sc.Name, Description: sc.Description, RootRequests: sc.rootRequests(),
		Edges: []truthEdge{e.truth()},
		Paths: []truthPath{{Services: []string{"gateway", "catalog"}, Operations: []string{httpRoute(routeOrderGW), catalogMethod[1:]},
			WorstCaseAmplification: catalogRetry.MaxAttempts}}}
	return p, sum, writeSample(filepath.Join(out, sc.Name), requests, t)
}
