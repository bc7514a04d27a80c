package policyfile

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/goccy/go-yaml/ast"
	"github.com/retryaudit/retryaudit/replay"
)

// GRPCRetryPolicy is a gRPC service config method retryPolicy (gRFC A6).
type GRPCRetryPolicy struct {
	MaxAttempts           *int      `yaml:"maxAttempts,omitempty" json:"maxAttempts,omitempty"`
	InitialBackoff        *Duration `yaml:"initialBackoff,omitempty" json:"initialBackoff,omitempty"`
	MaxBackoff            *Duration `yaml:"maxBackoff,omitempty" json:"maxBackoff,omitempty"`
	BackoffMultiplier     *float64  `yaml:"backoffMultiplier,omitempty" json:"backoffMultiplier,omitempty"`
	RetryableStatusCodes  []string  `yaml:"retryableStatusCodes,omitempty" json:"retryableStatusCodes,omitempty"`
	PerAttemptRecvTimeout *Duration `yaml:"perAttemptRecvTimeout,omitempty" json:"perAttemptRecvTimeout,omitempty"`
}

// GRPCRetryThrottling is the gRPC service config retryThrottling.
type GRPCRetryThrottling struct {
	MaxTokens  *float64 `yaml:"maxTokens,omitempty" json:"maxTokens,omitempty"`
	TokenRatio *float64 `yaml:"tokenRatio,omitempty" json:"tokenRatio,omitempty"`
}

// gRPC status code names (grpc/status codes, as the service config names them).
var pfGRPCCodes = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// spec is gRPC retry throttling as a budget; gRPC requires both keys.
func (t *GRPCRetryThrottling) spec() (replay.BudgetSpec, error) {
	if t.MaxTokens == nil || t.TokenRatio == nil {
		return replay.BudgetSpec{}, fmt.Errorf("gRPC requires both maxTokens and tokenRatio")
	}
	return replay.BudgetSpec{Kind: replay.BudgetGRPC, Max: *t.MaxTokens, Ratio: *t.TokenRatio}, nil
}

// A gRPC service config (gRFC A2, A6), as far as retries go; read as
// YAML, written as JSON (durations as protobuf JSON has them).
type grpcServiceConfig struct {
	MethodConfig    []grpcMethodConfig   `yaml:"methodConfig,omitempty" json:"methodConfig"`
	RetryThrottling *GRPCRetryThrottling `yaml:"retryThrottling,omitempty" json:"retryThrottling,omitempty"`
}

type grpcMethodConfig struct {
	Name          []grpcName         `yaml:"name" json:"name"`
	Timeout       *Duration          `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	RetryPolicy   *GRPCRetryPolicy   `yaml:"retryPolicy,omitempty" json:"retryPolicy,omitempty"`
	HedgingPolicy *grpcHedgingPolicy `yaml:"hedgingPolicy,omitempty" json:"hedgingPolicy,omitempty"`
}

type grpcName struct {
	Service string `yaml:"service,omitempty" json:"service,omitempty"`
	Method  string `yaml:"method,omitempty" json:"method,omitempty"`
}

type grpcHedgingPolicy struct {
	MaxAttempts         *int      `yaml:"maxAttempts,omitempty" json:"maxAttempts,omitempty"`
	HedgingDelay        *Duration `yaml:"hedgingDelay,omitempty" json:"hedgingDelay,omitempty"`
	NonFatalStatusCodes []string  `yaml:"nonFatalStatusCodes,omitempty" json:"nonFatalStatusCodes,omitempty"`
}

// readGRPC reads a service config: each methodConfig name is an entry for
// the callee serving that gRPC service (or every callee, for an empty
// name); retryThrottling is the channel's, so it applies to every callee
// the config names.
func readGRPC(src *pfSource, docs []ast.Node) (*PolicyFile, error) {
	src.lenient = true
	f := &PolicyFile{src: src}
	if len(docs) != 1 {
		return nil, &PolicyFileError{File: src.name, Msg: "a gRPC service config is one JSON object"}
	}
	var sc grpcServiceConfig
	if err := src.decode(docs[0], &sc); err != nil {
		return nil, err
	}
	var services []string
	for i, mc := range sc.MethodConfig {
		spec := PolicySpec{RetryPolicy: mc.RetryPolicy, Deadline: mc.Timeout}
		if h := mc.HedgingPolicy; h != nil {
			if mc.RetryPolicy != nil {
				return nil, src.errorAt(src.locate(pfPath{"methodConfig", i, "hedgingPolicy"}), nil, "methodConfig holds both retryPolicy and hedgingPolicy: gRPC allows one")
			}
			spec.MaxAttempts = h.MaxAttempts
			spec.HedgeAfter = h.HedgingDelay
			if spec.HedgeAfter == nil {
				spec.HedgeAfter = new(Duration)
			}
			f.note("methodConfig[%d]: hedgingPolicy is simulated as gRFC A6 has it, a hedge every hedgingDelay up to maxAttempts requests; grpc-go does not implement hedging", i)
		}
		for j, n := range mc.Name {
			to := &target{grpcService: n.Service, grpcMethod: n.Method, origin: fmt.Sprintf("methodConfig[%d].name[%d]", i, j)}
			f.add(to, spec)
			if n.Service != "" && !slices.Contains(services, n.Service) {
				services = append(services, n.Service)
			}
		}
	}
	if sc.RetryThrottling != nil {
		if len(services) == 0 {
			services = []string{""}
		}
		for _, s := range services {
			f.add(&target{grpcService: s, origin: "retryThrottling"}, PolicySpec{RetryThrottling: sc.RetryThrottling})
		}
	}
	return f, f.finish()
}

// emitGRPC writes one service config per callee: a methodConfig per
// operation with its retryPolicy (or hedgingPolicy) and timeout, and
// retryThrottling for a budget.
func emitGRPC(edges []Edge) (*Emitted, error) {
	n := &notes{format: "gRPC"}
	out := &Emitted{}
	for _, group := range byCallee(edges, false) {
		callee := group[0].Callee
		var sc grpcServiceConfig
		whole := "" // the operation whose policy stands for the whole service
		for _, e := range byOperation(group, n) {
			svc, method, grpc := splitOp(e.Operation)
			if !grpc {
				if whole != "" {
					n.add(e, "%q is not a gRPC method, and gRPC names a service once: %s's policy is written for service %q", e.Operation, whole, callee)
					continue
				}
				whole, svc, method = e.Operation, callee, ""
				n.add(e, "%q is not a gRPC method; the methodConfig names service %q, the trace's service name: replace it with the gRPC service", e.Operation, callee)
			}
			mc := grpcMethodConfig{Name: []grpcName{{Service: svc, Method: method}}}
			p := e.Policy
			if p.Deadline > 0 {
				mc.Timeout = durPtr(p.Deadline)
			}
			switch {
			case p.HedgeAfter > 0:
				mc.HedgingPolicy = &grpcHedgingPolicy{MaxAttempts: pfPtr(min(max(p.MaxAttempts, 2), grpcMaxAttemptsLimit)),
					HedgingDelay: durPtr(p.HedgeAfter), NonFatalStatusCodes: []string{"UNAVAILABLE"}}
				n.add(e, "hedgingPolicy is written as gRFC A6 has it; grpc-go does not implement hedging")
			case p.MaxAttempts > 1:
				mc.RetryPolicy = grpcRetryOf(e, n)
			}
			if p.PerTryTimeout > 0 {
				n.add(e, "a per-try timeout of %s cannot be expressed: gRPC's retryPolicy has none (perAttemptRecvTimeout is not in grpc-go)", protoDuration(p.PerTryTimeout))
			}
			if p.Breaker.Enabled() {
				n.add(e, "the circuit breaker cannot be expressed in a gRPC service config")
			}
			if p.Propagate {
				n.add(e, "deadline propagation is gRPC's own (grpc-timeout); nothing to configure")
			}
			switch b := p.Budget; {
			case b.Kind == replay.BudgetGRPC && sc.RetryThrottling == nil:
				sc.RetryThrottling = &GRPCRetryThrottling{MaxTokens: &b.Max, TokenRatio: &b.Ratio}
			case b.Kind == replay.BudgetTokenBucket && sc.RetryThrottling == nil:
				sc.RetryThrottling = &GRPCRetryThrottling{MaxTokens: pfPtr(min(b.Max, 1000)), TokenRatio: &b.Ratio}
				n.add(e, "the token-bucket budget is written as retryThrottling with the same tokens and ratio; gRPC stops retrying at half the tokens, not at zero")
			case b.Kind != replay.BudgetNone && b.Kind != replay.BudgetGRPC && b.Kind != replay.BudgetTokenBucket:
				budgetNote(n, e)
			}
			sc.MethodConfig = append(sc.MethodConfig, mc)
		}
		data, err := json.MarshalIndent(sc, "", "  ")
		if err != nil {
			return nil, err
		}
		out.Files = append(out.Files, Output{Callee: callee, Data: append(data, '\n')})
	}
	out.Notes = n.list
	if len(out.Files) == 0 {
		out.Notes = append(out.Notes, "no callee needs configuration: no service config written")
	}
	return out, nil
}

// grpcRetryOf writes a retrying policy as gRPC's retryPolicy.
func grpcRetryOf(e Edge, n *notes) *GRPCRetryPolicy {
	p := e.Policy
	attempts := p.MaxAttempts
	if attempts > grpcMaxAttemptsLimit {
		n.add(e, "%d attempts cannot be expressed: gRPC allows at most 5 (the first included); written as 5", attempts)
		attempts = grpcMaxAttemptsLimit
	}
	b := p.Backoff
	base, mult, capS := b.Base, b.Multiplier, b.Cap
	if mult == 0 {
		mult = 2
	}
	switch {
	case b.Kind == "" || b.Kind == replay.BackoffImmediate || base <= 0:
		base, mult, capS = envoyMinBase, 1, envoyMinBase
		n.add(e, "immediate retries cannot be expressed: gRPC requires initialBackoff > 0, written as %s", protoDuration(base))
	case b.Steps != nil || b.Kind == replay.BackoffLinear || b.Kind == replay.BackoffFibonacci:
		mult = 2
		n.add(e, "backoff (%s) cannot be expressed: gRPC grows by backoffMultiplier, written as ×2 from %s", backoffWords(b), protoDuration(base))
	case b.Kind == replay.BackoffConstant:
		mult, capS = 1, base
	}
	if capS <= 0 {
		capS = base * math.Pow(mult, float64(attempts-2))
		n.add(e, "no backoff cap cannot be expressed: gRPC requires maxBackoff, written as the last retry's wait %s", protoDuration(capS))
	}
	jitterNote(n, e, replay.JitterFull)
	codes := []string{"UNAVAILABLE"}
	if p.HonorRetryAfter {
		codes = append(codes, "RESOURCE_EXHAUSTED")
		n.add(e, "Retry-After is gRPC's server pushback (grpc-retry-pushback-ms), which gRPC clients honour")
	}
	return &GRPCRetryPolicy{MaxAttempts: &attempts, InitialBackoff: durPtr(base), MaxBackoff: durPtr(max(capS, base)),
		BackoffMultiplier: &mult, RetryableStatusCodes: codes}
}
