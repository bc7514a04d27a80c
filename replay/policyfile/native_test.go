package policyfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retryaudit/retryaudit/replay"
)

// pfTestModel is three services, edge.request → api.get → inventory.get and
// api.get → inventory.reserve, each edge with its own policy so that tests
// can see which fields a policy file keeps.
func pfTestModel() *replay.Model {
	return &replay.Model{
		Services: []replay.Service{
			{Name: "edge", Workers: 1 << 20, Ops: []replay.Op{{Name: "request", Time: replay.Constant(0), Calls: []int{0}}}},
			{Name: "api", Workers: 8, Ops: []replay.Op{{Name: "get", Time: replay.Exponential{MeanS: 0.01}, Calls: []int{1, 2}}}},
			{Name: "inventory", Workers: 4, Ops: []replay.Op{
				{Name: "get", Time: replay.Exponential{MeanS: 0.02}},
				{Name: "reserve", Time: replay.Exponential{MeanS: 0.05}},
			}},
		},
		Edges: []replay.Edge{
			{Caller: 0, CallerOp: 0, Callee: 1, CalleeOp: 0, Prob: 1, Repeat: 1,
				Policy: replay.Policy{MaxAttempts: 2, PerTryTimeout: 1}},
			{Caller: 1, CallerOp: 0, Callee: 2, CalleeOp: 0, Prob: 1, Repeat: 1, Idempotent: true,
				Policy: replay.Policy{MaxAttempts: 1, PerTryTimeout: 0.3, Deadline: 0.9}},
			{Caller: 1, CallerOp: 0, Callee: 2, CalleeOp: 1, Prob: 0.2, Repeat: 1,
				Policy: replay.Policy{MaxAttempts: 1, PerTryTimeout: 0.4, HedgeAfter: 0.2,
					Breaker: replay.BreakerConfig{ConsecutiveFailures: 9, OpenFor: 1}}},
		},
		Entry: []replay.Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:  50,
	}
}

// TestPolicyFileExample applies testdata/example.yaml to
// pfTestModel and checks every field of every edge's policy.
func TestPolicyFileExample(t *testing.T) {
	data, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParsePolicyFile("example.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	m := pfTestModel()
	got, err := f.Apply(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("applied model: %v", err)
	}
	if !reflect.DeepEqual(m, pfTestModel()) {
		t.Fatal("Apply changed the model it was given")
	}

	envoyBackoff := replay.Backoff{Kind: replay.BackoffExponential, Base: 0.025, Multiplier: 2, Cap: 0.25, Jitter: replay.JitterFull}
	tests := []struct {
		name   string
		policy replay.Policy
		budget replay.BudgetSpec
	}{
		{
			name: "edge → api: gRPC default, then Finagle budget and the native keys",
			policy: replay.Policy{
				MaxAttempts:   3,
				PerTryTimeout: 0.5,
				Deadline:      2,
				Propagate:     true,
				Backoff: replay.Backoff{Kind: replay.BackoffExponential, Base: 0.1, Multiplier: 2, Cap: 1,
					Jitter: replay.JitterProportional, Fraction: 0.2},
				HonorRetryAfter: true,
				Breaker:         replay.BreakerConfig{ConsecutiveFailures: 5, OpenFor: 5, Jitter: 0.2, HalfOpenProbes: 1},
				HedgeAfter:      0.05,
			},
			budget: replay.BudgetSpec{Kind: replay.BudgetFinagle, Window: 10, Min: 10, Ratio: 0.2},
		},
		{
			name: "api → inventory.get: gRPC default, then Envoy",
			policy: replay.Policy{
				MaxAttempts:   3, // num_retries 2
				PerTryTimeout: 0.1,
				Deadline:      0.9, // the model's
				Backoff:       envoyBackoff,
			},
			budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 20, Min: 3},
		},
		{
			name: "api → inventory.reserve: gRPC default, Envoy, then the operation's entry",
			policy: replay.Policy{
				MaxAttempts:   2,
				PerTryTimeout: 0.1,
				HedgeAfter:    0.2, // the model's
				Backoff:       replay.Backoff{Kind: replay.BackoffExponential, Base: 0.025, Multiplier: 2, Cap: 0.25, Jitter: replay.JitterEqual},
				SharedBudget:  true,
				// The model's breaker, overridden key by key.
				Breaker: replay.BreakerConfig{ConsecutiveFailures: 9, FailureRate: 0.5, Window: 10, MinRequests: 20, OpenFor: 2},
			},
			budget: replay.BudgetSpec{Kind: replay.BudgetTokenBucket, Max: 10, Ratio: 0.1},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := got.Edges[i].Policy
			tt.policy.Budget = tt.budget
			if g, w := p, tt.policy; !reflect.DeepEqual(g, w) {
				t.Errorf("policy\n got %+v\nwant %+v", g, w)
			}
		})
	}
}

// TestPolicyFileApply checks the semantics of each vocabulary and of the
// layering on pfTestModel, one small file at a time.
func TestPolicyFileApply(t *testing.T) {
	base := pfTestModel()
	tests := []struct {
		name string
		yaml string
		edge int // the edge to check
		// want changes the model's policy of the edge into the expected one.
		want   func(p *replay.Policy)
		budget replay.BudgetSpec // the zero spec: no budget
	}{
		{
			name: "empty file changes nothing",
			yaml: "# nothing\n",
			want: func(p *replay.Policy) {},
		},
		{
			name: "gRPC retryPolicy: maxAttempts counts the first attempt, exponential backoff with full jitter",
			yaml: `default:
  retryPolicy: {maxAttempts: 4, initialBackoff: 0.2s, maxBackoff: 3s, backoffMultiplier: 1.5, retryableStatusCodes: [UNAVAILABLE, RESOURCE_EXHAUSTED]}
`,
			edge: 1,
			want: func(p *replay.Policy) {
				p.MaxAttempts = 4
				p.Backoff = replay.Backoff{Kind: replay.BackoffExponential, Base: 0.2, Multiplier: 1.5, Cap: 3, Jitter: replay.JitterFull}
			},
		},
		{
			name: "gRPC maxAttempts above 5 is treated as 5; perAttemptRecvTimeout sets the per-try timeout",
			yaml: `default:
  retryPolicy: {maxAttempts: 8, initialBackoff: 1s, maxBackoff: 1s, backoffMultiplier: 1, retryableStatusCodes: [UNAVAILABLE], perAttemptRecvTimeout: 250ms}
`,
			edge: 0,
			want: func(p *replay.Policy) {
				p.MaxAttempts = 5
				p.PerTryTimeout = 0.25
				p.Backoff = replay.Backoff{Kind: replay.BackoffExponential, Base: 1, Multiplier: 1, Cap: 1, Jitter: replay.JitterFull}
			},
		},
		{
			name:   "gRPC retryThrottling",
			yaml:   "default: {retryThrottling: {maxTokens: 100, tokenRatio: 0.25}}\n",
			want:   func(p *replay.Policy) {},
			budget: replay.BudgetSpec{Kind: replay.BudgetGRPC, Max: 100, Ratio: 0.25},
		},
		{
			name: "Envoy defaults: num_retries 1, backoff 25ms to 250ms",
			yaml: "default: {retry_policy: {retry_on: 5xx}}\n",
			edge: 1,
			want: func(p *replay.Policy) {
				p.MaxAttempts = 2
				p.Backoff = replay.Backoff{Kind: replay.BackoffExponential, Base: 0.025, Multiplier: 2, Cap: 0.25, Jitter: replay.JitterFull}
			},
		},
		{
			name: "Envoy max_interval defaults to 10 × base_interval; num_retries 0 is one attempt",
			yaml: "default: {retry_policy: {num_retries: 0, retry_back_off: {base_interval: 0.1s}}}\n",
			edge: 1,
			want: func(p *replay.Policy) {
				p.MaxAttempts = 1
				p.Backoff = replay.Backoff{Kind: replay.BackoffExponential, Base: 0.1, Multiplier: 2, Cap: 1, Jitter: replay.JitterFull}
			},
		},
		{
			name: "maxRequests: the edge's limit on requests out",
			yaml: "default: {maxRequests: 8}\n",
			want: func(p *replay.Policy) { p.MaxRequests = 8 },
		},
		{
			name:   "Envoy retry_budget defaults 20% and 3",
			yaml:   "default: {retry_budget: {}}\n",
			want:   func(p *replay.Policy) {},
			budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 20, Min: 3},
		},
		{
			name:   "Envoy budget_percent given",
			yaml:   "default: {retry_budget: {budget_percent: {value: 35}}}\n",
			want:   func(p *replay.Policy) {},
			budget: replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: 35, Min: 3},
		},
		{
			name:   "Finagle defaults 10s, 10, 0.2",
			yaml:   "default: {finagle: {}}\n",
			want:   func(p *replay.Policy) {},
			budget: replay.BudgetSpec{Kind: replay.BudgetFinagle, Window: 10, Min: 10, Ratio: 0.2},
		},
		{
			name:   "seed budgets: ratio with a window, shared",
			yaml:   "default: {budget: {kind: ratio, ratio: 0.25, window: 0s, shared: true}}\n",
			want:   func(p *replay.Policy) { p.SharedBudget = true },
			budget: replay.BudgetSpec{Kind: replay.BudgetRatio, Ratio: 0.25},
		},
		{
			name:   "seed budgets: ratio defaults",
			yaml:   "default: {budget: {kind: ratio}}\n",
			want:   func(p *replay.Policy) {},
			budget: replay.BudgetSpec{Kind: replay.BudgetRatio, Ratio: 0.1, Window: 10},
		},
		{
			name:   "seed budgets: token-bucket defaults",
			yaml:   "default: {budget: {kind: token-bucket}}\n",
			want:   func(p *replay.Policy) {},
			budget: replay.BudgetSpec{Kind: replay.BudgetTokenBucket, Max: 10, Ratio: 0.1},
		},
		{
			name:   "seed budgets: aws",
			yaml:   "default: {budget: {kind: aws}}\n",
			want:   func(p *replay.Policy) {},
			budget: replay.BudgetSpec{Kind: replay.BudgetAWS},
		},
		{
			name: "budget none removes an earlier layer's budget; shared alone keeps it",
			yaml: `default: {finagle: {}}
edges:
  - {caller: edge, callee: api, budget: {kind: none}}
  - {caller: api, callee: inventory, budget: {shared: true}}
`,
			edge: 0,
			want: func(p *replay.Policy) {},
		},
		{
			name: "shared alone keeps the budget",
			yaml: `default: {finagle: {}}
edges:
  - {caller: api, callee: inventory, budget: {shared: true}}
`,
			edge:   2,
			want:   func(p *replay.Policy) { p.SharedBudget = true },
			budget: replay.BudgetSpec{Kind: replay.BudgetFinagle, Window: 10, Min: 10, Ratio: 0.2},
		},
		{
			name: "linear backoff: base and increment",
			yaml: "default:\n  backoff: {kind: linear, base: 20ms, increment: 20ms}\n  jitter: proportional\n  jitterFraction: 0.2\n",
			edge: 1,
			want: func(p *replay.Policy) {
				p.Backoff = replay.Backoff{Kind: replay.BackoffLinear, Base: 0.02, Increment: 0.02, Cap: p.Backoff.Cap, Multiplier: p.Backoff.Multiplier,
					Jitter: replay.JitterProportional, Fraction: 0.2}
			},
		},
		{
			name: "fibonacci backoff and a schedule's steps",
			yaml: "default:\n  backoff: {kind: fibonacci, base: 10ms, increment: 10ms, steps: [10ms, 40ms, 20ms], noCap: true}\n",
			edge: 1,
			want: func(p *replay.Policy) {
				p.Backoff = replay.Backoff{Kind: replay.BackoffFibonacci, Base: 0.01, Increment: 0.01, Multiplier: p.Backoff.Multiplier,
					Steps: &replay.Steps{ByRetry: []float64{0.01, 0.04, 0.02}}, Jitter: p.Backoff.Jitter, Fraction: p.Backoff.Fraction}
			},
		},
		{
			name: "native keys override one field each and keep the rest",
			yaml: `edges:
  - caller: api
    callee: inventory
    operation: get
    maxAttempts: 7
    backoff: {kind: constant, base: 30ms}
    jitter: decorrelated
    hedgeAfter: 0s
    propagateDeadline: false
`,
			edge: 1,
			want: func(p *replay.Policy) {
				p.MaxAttempts = 7
				p.Backoff = replay.Backoff{Kind: replay.BackoffConstant, Base: 0.03, Jitter: replay.JitterDecorrelated}
			},
		},
		{
			name: "a later layer overrides part of the backoff of an earlier one",
			yaml: `default:
  retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}
edges:
  - {caller: edge, callee: api, backoff: {cap: 5s, multiplier: 3}, jitter: none}
`,
			edge: 0,
			want: func(p *replay.Policy) {
				p.MaxAttempts = 3
				p.Backoff = replay.Backoff{Kind: replay.BackoffExponential, Base: 0.1, Multiplier: 3, Cap: 5, Jitter: replay.JitterNone}
			},
		},
		{
			name: "an operation's entry comes after the callee's entry whatever the file order",
			yaml: `edges:
  - {caller: api, callee: inventory, operation: reserve, maxAttempts: 4}
  - {caller: api, callee: inventory, maxAttempts: 2, perTryTimeout: 1s}
`,
			edge: 2,
			want: func(p *replay.Policy) { p.MaxAttempts = 4; p.PerTryTimeout = 1 },
		},
		{
			name: "an entry without operation matches every edge into the callee",
			yaml: "edges:\n  - {caller: api, callee: inventory, deadline: 3s}\n",
			edge: 1,
			want: func(p *replay.Policy) { p.Deadline = 3 },
		},
		{
			name: "document markers, anchors and merge keys",
			yaml: "---\ndefault: &common {perTryTimeout: 2s}\nedges:\n  - {caller: api, callee: inventory, <<: *common, maxAttempts: 3}\n...\n",
			edge: 1,
			want: func(p *replay.Policy) { p.PerTryTimeout = 2; p.MaxAttempts = 3 },
		},
		{
			name: "breaker disabled",
			yaml: "edges:\n  - {caller: api, callee: inventory, operation: reserve, breaker: {disabled: true}}\n",
			edge: 2,
			want: func(p *replay.Policy) { p.Breaker = replay.BreakerConfig{} },
		},
		{
			name: "breaker created from nothing",
			yaml: "edges:\n  - {caller: edge, callee: api, breaker: {consecutiveFailures: 3, openFor: 1s}}\n",
			edge: 0,
			want: func(p *replay.Policy) { p.Breaker = replay.BreakerConfig{ConsecutiveFailures: 3, OpenFor: 1} },
		},
		{
			name: "an opossum breaker: a rolling window counting refused requests",
			yaml: "edges:\n  - {caller: edge, callee: api, breaker: {failureRate: 0.5, window: 400ms, minRequests: 6, openFor: 60ms, keepWindow: true, countRejected: true}}\n",
			edge: 0,
			want: func(p *replay.Policy) {
				p.Breaker = replay.BreakerConfig{FailureRate: 0.5, Window: 0.4, MinRequests: 6, OpenFor: 0.06, KeepWindow: true, CountRejected: true}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParsePolicyFile("t.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			m, err := f.Apply(base)
			if err != nil {
				t.Fatal(err)
			}
			want := base.Edges[tt.edge].Policy
			tt.want(&want)
			want.Budget = tt.budget
			got := m.Edges[tt.edge].Policy
			if !reflect.DeepEqual(got, want) {
				t.Errorf("policy\n got %+v\nwant %+v", got, want)
			}
		})
	}
	if !reflect.DeepEqual(base, pfTestModel()) {
		t.Fatal("Apply changed the model it was given")
	}
}

// TestPolicyFileErrors checks every kind of error: the message names the
// file, the key and the problem, and carries the line and column (with a
// caret) where the key is in the source.
func TestPolicyFileErrors(t *testing.T) {
	const grpcOK = "initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]"
	tests := []struct {
		name      string
		yaml      string
		apply     bool // the error comes from Apply to pfTestModel
		line, col int  // 0: not checked
		want      []string
	}{
		{name: "syntax error", yaml: "default:\n  maxAttempts: [3\n",
			want: []string{"t.yaml: [", "^"}},
		{name: "cap 0s is not a zero cap", yaml: "default:\n  backoff: {kind: exponential, base: 10ms, cap: 0s}\n", line: 2, col: 49,
			want: []string{"default.backoff.cap: 0s would read as a zero cap: for no cap write noCap: true"}},
		{name: "cap and noCap", yaml: "default:\n  backoff: {kind: exponential, base: 10ms, cap: 1s, noCap: true}\n",
			want: []string{"default.backoff.noCap: cap and noCap both set; keep one"}},
		{name: "syntax error: bad indentation", yaml: "edges:\n  - caller: a\n   callee: b\n",
			want: []string{"t.yaml: ["}},
		{name: "unknown field", yaml: "default:\n  maxAttemps: 3\n", line: 2, col: 3,
			want: []string{`t.yaml: [2:3] default: unknown field "maxAttemps" (maxAttempts?): want backoff, breaker,`, ">  2 |   maxAttemps: 3", "^"}},
		{name: "unknown field in a vocabulary block", yaml: "edges:\n  - caller: a\n    callee: b\n    retry_policy: {num_retry: 2}\n", line: 4,
			want: []string{`unknown field "num_retry"`}},
		{name: "unknown field that is not a string", yaml: "0: A\n", line: 1, col: 1,
			want: []string{`unknown field "0": want default, edges`}},
		{name: "unknown field in Envoy's block is not a gRPC one", yaml: "default:\n  retry_policy: {maxAttempts: 3}\n", line: 2,
			want: []string{`default.retry_policy: unknown field "maxAttempts": want host_selection_retry_max_attempts, num_retries, per_try_timeout, rate_limited_retry_back_off, retriable_status_codes, retry_back_off, retry_host_predicate, retry_on`}},
		{name: "wrong type: string for an integer", yaml: "default:\n  maxAttempts: three\n", line: 2, col: 16,
			want: []string{`[2:16] default.maxAttempts: want a whole number, got "three"`, "^"}},
		{name: "wrong type: fraction for an integer", yaml: "default:\n  maxAttempts: 3.5\n", line: 2, col: 16,
			want: []string{"default.maxAttempts: want a whole number, got 3.5"}},
		{name: "wrong type: quoted number", yaml: "default: {retryThrottling: {maxTokens: \"10\", tokenRatio: 0.1}}\n", line: 1,
			want: []string{`default.retryThrottling.maxTokens: want a finite number, got "10"`}},
		{name: "wrong type: string for a bool", yaml: "default:\n  propagateDeadline: \"yes\"\n", line: 2,
			want: []string{`default.propagateDeadline: want true or false, got "yes"`}},
		{name: "wrong type: mapping for a string", yaml: "default:\n  jitter: {kind: full}\n", line: 2,
			want: []string{"default.jitter: want a string (quote it), got a mapping"}},
		{name: "wrong type: number for a name", yaml: "edges:\n  - {caller: 404, callee: api}\n", line: 2,
			want: []string{"edges[0].caller: want a string (quote it), got 404"}},
		{name: "wrong type: scalar for a block", yaml: "default:\n  breaker: 5\n", line: 2,
			want: []string{"default.breaker: want a mapping, got 5"}},
		{name: "not a mapping", yaml: "- a\n- b\n", line: 1,
			want: []string{"want a mapping, got a list"}},
		{name: "NaN", yaml: "default: {jitterFraction: .nan}\n", line: 1,
			want: []string{"default.jitterFraction: want a finite number, got .nan"}},
		{name: "maxAttempts 0", yaml: "default:\n  maxAttempts: 0\n", line: 2, col: 16,
			want: []string{"default.maxAttempts: 0: want 1 or more"}},
		{name: "gRPC maxAttempts 0", yaml: "edges:\n  - caller: a\n    callee: b\n    retryPolicy: {maxAttempts: 0, " + grpcOK + "}\n", line: 4, col: 32,
			want: []string{"edges[0].retryPolicy.maxAttempts: 0: want 1 or more"}},
		{name: "Envoy num_retries negative", yaml: "default: {retry_policy: {num_retries: -1}}\n",
			want: []string{"default.retry_policy.num_retries: -1: want 0 or more"}},
		{name: "gRPC missing keys", yaml: "default:\n  retryPolicy: {maxAttempts: 3}\n", line: 2,
			want: []string{"default.retryPolicy: missing initialBackoff, maxBackoff, backoffMultiplier, retryableStatusCodes: gRPC requires"}},
		{name: "gRPC unknown status code", yaml: "default:\n  retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [unavailable]}\n", line: 2,
			want: []string{`default.retryPolicy.retryableStatusCodes[0]: "unavailable" is not a gRPC status code (UNAVAILABLE?)`}},
		{name: "gRPC empty status codes", yaml: "default:\n  retryPolicy: {maxAttempts: 3, initialBackoff: 0.1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: []}\n",
			want: []string{"retryableStatusCodes: empty"}},
		{name: "gRPC initialBackoff 0", yaml: "default:\n  retryPolicy: {maxAttempts: 3, initialBackoff: 0s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}\n",
			want: []string{"default.retryPolicy.initialBackoff: 0s: want a duration > 0"}},
		{name: "bad duration: no unit", yaml: "default:\n  perTryTimeout: 5\n", line: 2, col: 18,
			want: []string{`default.perTryTimeout: "5" is not a duration`}},
		{name: "bad duration: not a duration", yaml: "default:\n  deadline: soon\n", line: 2, col: 13,
			want: []string{`default.deadline: "soon" is not a duration`}},
		{name: "bad duration: a number", yaml: "default:\n  hedgeAfter: 0.05\n", line: 2,
			want: []string{"default.hedgeAfter: 0.05 is not a duration: give a unit, e.g. 0.05s"}},
		{name: "negative duration", yaml: "edges:\n  - caller: a\n    callee: b\n    retry_policy: {per_try_timeout: -100ms}\n", line: 4, col: 37,
			want: []string{"edges[0].retry_policy.per_try_timeout: -100ms is negative"}},
		{name: "unknown jitter", yaml: "default:\n  jitter: fulll\n", line: 2, col: 11,
			want: []string{`default.jitter: "fulll": want none, full, equal, decorrelated, proportional`}},
		{name: "unknown backoff kind", yaml: "default:\n  backoff: {kind: polynomial}\n",
			want: []string{`default.backoff.kind: "polynomial"`}},
		{name: "negative increment", yaml: "default:\n  backoff: {kind: linear, base: 10ms, increment: -5ms}\n",
			want: []string{`default.backoff.increment`}},
		{name: "negative step", yaml: "default:\n  backoff: {kind: constant, steps: [10ms, -5ms]}\n",
			want: []string{`default.backoff.steps`}},
		{name: "unknown budget kind", yaml: "default:\n  budget: {kind: leaky}\n",
			want: []string{`default.budget.kind: "leaky"`}},
		{name: "budget parameter of another kind", yaml: "default:\n  budget: {kind: aws, max: 3}\n", line: 2,
			want: []string{"default.budget.max: a aws budget has no max"}},
		{name: "budget parameters out of range", yaml: "default:\n  retryThrottling: {maxTokens: 0, tokenRatio: 0.1}\n", line: 2,
			want: []string{"default.retryThrottling: grpc retry throttling: maxTokens 0"}},
		{name: "gRPC throttling needs both keys", yaml: "default:\n  retryThrottling: {maxTokens: 10}\n",
			want: []string{"default.retryThrottling: gRPC requires both maxTokens and tokenRatio"}},
		{name: "Finagle ttl under a second", yaml: "default:\n  finagle: {ttl: 500ms}\n",
			want: []string{"default.finagle: finagle retry budget: ttl 0.5 s"}},
		{name: "negative maxRequests", yaml: "default:\n  maxRequests: -1\n", line: 2,
			want: []string{"default.maxRequests: -1: want 0 (no limit)"}},
		{name: "Envoy budget percent above 100", yaml: "default:\n  retry_budget: {budget_percent: {value: 120}}\n",
			want: []string{"default.retry_budget: envoy retry budget: budget_percent 120"}},
		{name: "Envoy max_interval below base_interval", yaml: "default:\n  retry_policy: {retry_back_off: {base_interval: 1s, max_interval: 100ms}}\n",
			want: []string{"max_interval: 100ms is less than base_interval 1s"}},
		{name: "Envoy retry_back_off without base_interval", yaml: "default:\n  retry_policy: {retry_back_off: {max_interval: 1s}}\n",
			want: []string{"default.retry_policy.retry_back_off: missing base_interval"}},
		{name: "Envoy unknown retry_on", yaml: "default:\n  retry_policy: {retry_on: \"5xx,timeout\"}\n",
			want: []string{`"timeout" is not an Envoy retry condition`}},
		{name: "jitterFraction with full jitter", yaml: "default:\n  jitter: full\n  jitterFraction: 0.2\n", line: 3,
			want: []string{"default.jitterFraction: applies to proportional jitter only"}},
		{name: "two keys set the attempts", yaml: "default:\n  maxAttempts: 2\n  retry_policy: {num_retries: 3}\n", line: 2,
			want: []string{"retry_policy and maxAttempts both set the attempt count"}},
		{name: "two budgets (the brief's example edge: finagle and budget)", yaml: `edges:
  - caller: edge
    callee: api
    finagle: {ttl: 10s, minRetriesPerSec: 10, percentCanRetry: 0.2}
    budget: {kind: token-bucket, max: 10, ratio: 0.1, shared: true}
`, line: 5,
			want: []string{"edges[0].budget: finagle and budget both set the retry budget; keep one"}},
		{name: "breaker disabled with keys", yaml: "default:\n  breaker: {disabled: true, openFor: 1s}\n",
			want: []string{"default.breaker.disabled: a disabled breaker takes no other keys"}},
		{name: "breaker jitter out of range", yaml: "default:\n  breaker: {jitter: 1}\n",
			want: []string{"default.breaker.jitter: 1: want 0 to 1 (exclusive)"}},
		{name: "missing callee", yaml: "edges:\n  - caller: api\n    maxAttempts: 2\n", line: 2,
			want: []string{"edges[0].callee: missing: want a service name"}},
		{name: "duplicate entries", yaml: "edges:\n  - {caller: a, callee: b}\n  - {caller: a, callee: b, maxAttempts: 2}\n", line: 3,
			want: []string{"edges[1]: edges[0] already gives a → b"}},
		{name: "duplicate key", yaml: "default:\n  maxAttempts: 2\n  maxAttempts: 3\n", line: 3,
			want: []string{`mapping key "maxAttempts" already defined`}},
		{name: "two documents", yaml: "default: {maxAttempts: 2}\n---\ndefault: {maxAttempts: 3}\n", line: 3,
			want: []string{"a policy file is one YAML document"}},
		{name: "anchor under an unknown key", yaml: "x: &bad -1s\n", line: 1,
			want: []string{`unknown field "x"`}},

		{name: "unknown caller", apply: true, yaml: "edges:\n  - caller: nope\n    callee: api\n    maxAttempts: 2\n", line: 2, col: 13,
			want: []string{`t.yaml: [2:13] edges[0].caller: no service "nope" in the model (services: api, edge, inventory)`, "^"}},
		{name: "unknown callee", apply: true, yaml: "edges:\n  - {caller: api, callee: invntory, maxAttempts: 2}\n", line: 2,
			want: []string{`edges[0].callee: no service "invntory" in the model`}},
		{name: "unknown operation", apply: true, yaml: "edges:\n  - caller: api\n    callee: inventory\n    operation: delete\n    maxAttempts: 2\n", line: 4, col: 16,
			want: []string{`edges[0].operation: service "inventory" has no operation "delete" (operations: get, reserve)`}},
		{name: "no such edge", apply: true, yaml: "edges:\n  - caller: inventory\n    callee: edge\n    maxAttempts: 2\n", line: 2,
			want: []string{"edges[0]: the model has no edge inventory → edge"}},
		{name: "breaker that cannot open", apply: true, yaml: "edges:\n  - caller: edge\n    callee: api\n    breaker: {openFor: 5s}\n", line: 4,
			want: []string{"edges[0].breaker: edge edge → api.get", "it would never open"}},
		{name: "backoff keys on an immediate backoff", apply: true, yaml: "edges:\n  - caller: edge\n    callee: api\n    backoff: {base: 10ms}\n", line: 2,
			want: []string{"edges[0]: edge edge → api.get: backoff: its backoff is immediate"}},
		{name: "decorrelated jitter without a base", apply: true, yaml: "default:\n  backoff: {kind: exponential}\n  jitter: decorrelated\n",
			want: []string{"default: edge edge → api.get: decorrelated jitter needs a base > 0"}},
		{name: "jitterFraction on a model's full jitter", apply: true, yaml: "default:\n  retryPolicy: {maxAttempts: 3, " + grpcOK + "}\nedges:\n  - {caller: edge, callee: api, jitterFraction: 0.1}\n", line: 4,
			want: []string{`edges[0]: edge edge → api.get: jitterFraction applies to proportional jitter only, and the jitter is "full"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParsePolicyFile("t.yaml", []byte(tt.yaml))
			if tt.apply {
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				_, err = f.Apply(pfTestModel())
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "t.yaml: ") {
				t.Errorf("error does not start with the file name:\n%s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			var pe *PolicyFileError
			if !errors.As(err, &pe) {
				t.Fatalf("error is %T, not a *PolicyFileError", err)
			}
			if pe.Line == 0 || pe.Column == 0 {
				t.Errorf("no position: line %d column %d\n%s", pe.Line, pe.Column, msg)
			}
			if tt.line != 0 && pe.Line != tt.line || tt.col != 0 && pe.Column != tt.col {
				t.Errorf("position %d:%d, want %d:%d\n%s", pe.Line, pe.Column, tt.line, tt.col, msg)
			}
			if !strings.Contains(msg, fmt.Sprintf("[%d:%d]", pe.Line, pe.Column)) {
				t.Errorf("message lacks [%d:%d]:\n%s", pe.Line, pe.Column, msg)
			}
		})
	}
}

// TestPolicyFileErrorsWithoutSource checks errors of files built in code:
// they name the key but have no position.
func TestPolicyFileErrorsWithoutSource(t *testing.T) {
	zero := 0
	f := &PolicyFile{Edges: []EdgePolicy{{Caller: "edge", Callee: "api", PolicySpec: PolicySpec{MaxAttempts: &zero}}}}
	_, err := f.Marshal()
	if err == nil || err.Error() != "policy file: edges[0].maxAttempts: 0: want 1 or more (the first attempt counts)" {
		t.Errorf("Marshal: %v", err)
	}
	f.Edges[0].MaxAttempts = nil
	f.Edges[0].Caller = "nobody"
	_, err = f.Apply(pfTestModel())
	if err == nil || !strings.HasPrefix(err.Error(), `policy file: edges[0].caller: no service "nobody"`) {
		t.Errorf("Apply: %v", err)
	}
}

// pfSameFile compares the exported contents of two policy files.
func pfSameFile(a, b *PolicyFile) bool {
	return reflect.DeepEqual(a.Default, b.Default) && reflect.DeepEqual(a.Edges, b.Edges)
}

// pfEveryKey is a policy file that sets every key, with names that YAML
// must quote.
func pfEveryKey() *PolicyFile {
	d := func(s string) *Duration { return pfPtr(Duration(pfMust(time.ParseDuration(s)))) }
	return &PolicyFile{
		Default: &PolicySpec{
			RetryPolicy: &GRPCRetryPolicy{MaxAttempts: pfPtr(4), InitialBackoff: d("150ms"), MaxBackoff: d("2s"),
				BackoffMultiplier: pfPtr(1.6), RetryableStatusCodes: []string{"UNAVAILABLE", "ABORTED"}, PerAttemptRecvTimeout: d("1.5s")},
			RetryThrottling: &GRPCRetryThrottling{MaxTokens: pfPtr(10.0), TokenRatio: pfPtr(0.1)},
		},
		Edges: []EdgePolicy{
			{Caller: "api", Callee: "inventory", PolicySpec: PolicySpec{
				EnvoyRetryPolicy: &EnvoyRetryPolicy{RetryOn: "5xx, reset", NumRetries: pfPtr(0), PerTryTimeout: d("0s"),
					RetryBackOff: &EnvoyRetryBackOff{BaseInterval: d("10ms")}},
				EnvoyRetryBudget: &EnvoyRetryBudget{BudgetPercent: &EnvoyPercent{}},
			}},
			{Caller: "api", Callee: "inventory", Operation: "reserve", PolicySpec: PolicySpec{
				MaxAttempts: pfPtr(1), Backoff: &BackoffSpec{Kind: replay.BackoffConstant, Base: d("1ms"), Multiplier: pfPtr(1.0), Increment: d("2ms"),
					Steps: []Duration{*d("1ms"), *d("3ms")}, Cap: d("1h")},
				Jitter: replay.JitterProportional, JitterFraction: pfPtr(0.0),
				PerTryTimeout: d("0s"), Deadline: d("1m30s"), PropagateDeadline: pfPtr(false), HonorRetryAfter: pfPtr(false), HedgeAfter: d("1ns"),
				Breaker: &BreakerSpec{ConsecutiveFailures: pfPtr(0), FailureRate: pfPtr(0.5), Window: d("10s"), MinRequests: pfPtr(0),
					OpenFor: d("1s"), Jitter: pfPtr(0.0), HalfOpenProbes: pfPtr(0), KeepWindow: pfPtr(true), CountRejected: pfPtr(true)},
				Budget: &NativeBudget{Kind: BudgetKindTokenBucket, Max: pfPtr(1.0), Ratio: pfPtr(0.0), Shared: pfPtr(false)},
			}},
			{Caller: "weird: name #1", Callee: "null", Operation: "- yes", PolicySpec: PolicySpec{
				Finagle: &FinagleRetryBudget{}, Breaker: &BreakerSpec{Disabled: true}, Budget: &NativeBudget{Shared: pfPtr(true)},
			}},
			{Caller: "é \"q\" 'q'", Callee: "0x10", PolicySpec: PolicySpec{Budget: &NativeBudget{Kind: BudgetKindNone}}},
			{Caller: ".inf", Callee: "? a", Operation: "a\u2028b", PolicySpec: PolicySpec{HedgeAfter: d("0s")}},
			{Caller: ".nan", Callee: " padded ", Operation: "{x}: [y]", PolicySpec: PolicySpec{HedgeAfter: d("0s")}},
		},
	}
}

// TestPolicyFileRoundTrip checks that Marshal writes files that parse back
// to the same PolicyFile, and apply the same way.
func TestPolicyFileRoundTrip(t *testing.T) {
	example, err := os.ReadFile("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		file func() (*PolicyFile, error)
	}{
		{"example.yaml", func() (*PolicyFile, error) { return ParsePolicyFile("example.yaml", example) }},
		{"every key, built in code", func() (*PolicyFile, error) { return pfEveryKey(), nil }},
		{"empty", func() (*PolicyFile, error) { return &PolicyFile{}, nil }},
		{"empty blocks", func() (*PolicyFile, error) {
			return ParsePolicyFile("t.yaml", []byte("default: {retry_budget: {}, finagle: null, breaker: {disabled: false}}\nedges: []\n"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := tt.file()
			if err != nil {
				t.Fatal(err)
			}
			out, err := f.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			g, err := ParsePolicyFile("out.yaml", out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !pfSameFile(f, g) {
				t.Errorf("round trip differs:\n%s", out)
			}
			out2, err := g.Marshal()
			if err != nil || !bytes.Equal(out, out2) {
				t.Errorf("second Marshal differs (%v):\n%s\n---\n%s", err, out, out2)
			}
			if !bytes.HasPrefix(out, []byte("# retryaudit policy file\n")) {
				t.Errorf("no header:\n%s", out)
			}
		})
	}
	// The example applies the same way after the round trip.
	f := pfMust(ParsePolicyFile("example.yaml", example))
	g := pfMust(ParsePolicyFile("out.yaml", pfMust(f.Marshal())))
	m1, m2 := pfMust(f.Apply(pfTestModel())), pfMust(g.Apply(pfTestModel()))
	for i := range m1.Edges {
		p1, p2 := m1.Edges[i].Policy, m2.Edges[i].Policy
		if !reflect.DeepEqual(p1, p2) {
			t.Errorf("edge %d: %+v after the round trip, %+v before", i, p2, p1)
		}
	}
}

// FuzzParsePolicyFile checks that parsing never panics, that every accepted
// file marshals and parses back to the same PolicyFile, and that applying it
// never panics.
func FuzzParsePolicyFile(f *testing.F) {
	if data, err := os.ReadFile("testdata/example.yaml"); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"default: {maxAttempts: 2}\n",
		"edges:\n  - {caller: api, callee: inventory, operation: get, jitter: decorrelated, backoff: {kind: exponential, base: 1ms}}\n",
		"default: &d {maxAttempts: 2, budget: {kind: ratio, window: 0}}\nedges:\n  - {caller: a, callee: b, <<: *d}\n",
		"default: {retry_policy: {num_retries: 3, retry_back_off: {base_interval: 0.25s}}, retry_budget: {}}\n",
		"default: {retryPolicy: {maxAttempts: 9, initialBackoff: 1s, maxBackoff: 1s, backoffMultiplier: 2, retryableStatusCodes: [UNAVAILABLE]}}\n",
		"edges:\n  - {caller: \"a\\tb\", callee: 'c''d'}\n",
		"default: {breaker: {consecutiveFailures: 2, openFor: 1s}, hedgeAfter: 5ms, deadline: 0}\n",
	} {
		f.Add([]byte(s))
	}
	if data, err := pfEveryKey().Marshal(); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ParsePolicyFile("fuzz.yaml", data)
		if err != nil {
			var pe *PolicyFileError
			if !errors.As(err, &pe) {
				t.Fatalf("error is %T, not a *PolicyFileError: %v", err, err)
			}
			return
		}
		out, err := pf.Marshal()
		if err != nil {
			t.Fatalf("Marshal of an accepted file: %v", err)
		}
		g, err := ParsePolicyFile("fuzz.yaml", out)
		if err != nil {
			t.Fatalf("marshalled file does not parse: %v\n%s", err, out)
		}
		if !pfSameFile(pf, g) {
			t.Fatalf("round trip differs:\n%q\n%s", data, out)
		}
		if out2, err := g.Marshal(); err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("second Marshal differs (%v):\n%s\n---\n%s", err, out, out2)
		}
		if m, err := pf.Apply(pfTestModel()); err == nil {
			if err := m.Validate(); err != nil {
				t.Fatalf("applied model is invalid: %v\n%s", err, data)
			}
		}
	})
}

func pfMust[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestPolicyFileIdempotency: a file declares a gRPC method idempotent, and
// only then do the policies that add retries or hedges touch it.
func TestPolicyFileIdempotency(t *testing.T) {
	m := modelOf([]Edge{{Caller: "client", Callee: "payments", Operation: "POST /charges", Policy: replay.Policy{MaxAttempts: 1}}})
	m.Edges[0].CalleeP95 = 0.02
	pf, err := ParsePolicyFile("p.yaml", []byte("edges:\n  - caller: client\n    callee: payments\n    idempotent: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, declared := range []bool{false, true} {
		base := m
		if declared {
			if base, err = pf.DeclareIdempotency(m); err != nil {
				t.Fatal(err)
			}
			if base.Edges[0].Policy.MaxAttempts != 1 || m.Edges[0].Idempotent {
				t.Fatalf("DeclareIdempotency changed more than the declaration: %+v, original %+v", base.Edges[0], m.Edges[0])
			}
		}
		for _, expr := range []string{"idempotent-only", "hedge-p95"} {
			pm, err := replay.ApplyPolicy(base, expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := pm.Edges[0].Policy.MaxAttempts > 1; got != declared {
				t.Errorf("%s, declared %v: %d attempts", expr, declared, pm.Edges[0].Policy.MaxAttempts)
			}
		}
	}
}
