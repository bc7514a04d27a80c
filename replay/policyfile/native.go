package policyfile

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/retryaudit/retryaudit/replay"
)

// PolicyFile is a parsed policy file: how clients retry, per edge or as a
// default. Read fills it from any vocabulary (see the package comment);
// ParsePolicyFile reads retryaudit's own format, described here, whose
// entries may hold blocks pasted from the systems people run (gRPC
// retryPolicy and retryThrottling, Envoy retry_policy and retry_budget,
// Finagle's RetryBudget) next to retryaudit's own keys. A file overrides a
// model's policies; it does not replace them. Nil pointers and empty
// strings are keys the file does not give.
//
//	# retryaudit policy file
//	default:                  # every edge
//	  retryPolicy:            # gRPC service config, gRFC A6
//	    maxAttempts: 3
//	    initialBackoff: 0.1s
//	    maxBackoff: 1s
//	    backoffMultiplier: 2
//	    retryableStatusCodes: [UNAVAILABLE]
//	  retryThrottling: {maxTokens: 10, tokenRatio: 0.1}
//	edges:
//	  - caller: api           # Service.Name
//	    callee: inventory
//	    operation: reserve    # optional: only edges into this callee operation
//	    retry_policy:         # Envoy route retry_policy
//	      num_retries: 2
//	      per_try_timeout: 0.1s
//	      retry_back_off: {base_interval: 25ms, max_interval: 250ms}
//	      retry_on: "5xx,reset,connect-failure"
//	    retry_budget: {budget_percent: {value: 20.0}, min_retry_concurrency: 3}
//
// An edge's policy is the model's, then default's keys, then the keys of the
// entries that match it: entries without operation first, then entries with
// one (two entries may not name the same caller, callee and operation).
//
// Keys by vocabulary, and the Policy fields they set:
//
//	gRPC     retryPolicy            MaxAttempts = min(maxAttempts, 5) (gRPC clamps
//	                                to 5); Backoff = exponential, Base
//	                                initialBackoff, Multiplier backoffMultiplier,
//	                                Cap maxBackoff, full jitter ("random between 0
//	                                and the current backoff"). All five gRPC keys
//	                                are required, as gRPC requires them;
//	                                retryableStatusCodes are checked but not
//	                                simulated (the simulator's failures are all
//	                                retryable). perAttemptRecvTimeout (optional)
//	                                sets PerTryTimeout.
//	         retryThrottling        Budget = NewGRPCThrottle(maxTokens, tokenRatio);
//	                                both keys required.
//	Envoy    retry_policy           MaxAttempts = num_retries + 1 (num_retries
//	                                defaults to 1); Backoff = exponential, Base
//	                                base_interval, Multiplier 2, Cap max_interval,
//	                                full jitter; without retry_back_off, Envoy's
//	                                default 25 ms base and 250 ms cap, and
//	                                max_interval defaults to 10 × base_interval.
//	                                per_try_timeout (optional) sets PerTryTimeout;
//	                                rate_limited_retry_back_off sets
//	                                HonorRetryAfter; retry_on and
//	                                retriable_status_codes are checked and compared
//	                                with the traces (Compare) but not simulated;
//	                                retry_host_predicate and
//	                                host_selection_retry_max_attempts are kept.
//	         retry_budget           Budget = NewEnvoyBudget(budget_percent.value,
//	                                min_retry_concurrency), defaults 20 and 3.
//	         cluster circuit_breakers, DEFAULT priority: max_requests sets
//	                                MaxRequests; max_retries, without a
//	                                retry_budget (which overrides it, as in
//	                                Envoy), Budget = NewEnvoyBudget(0,
//	                                max_retries): the same cap on retries out.
//	Finagle  finagle                Budget = NewFinagleBudget(ttl, minRetriesPerSec,
//	                                percentCanRetry), defaults 10s, 10, 0.2.
//	retryaudit (each key sets one field and keeps the rest)
//	         maxAttempts            MaxAttempts (first attempt included).
//	         backoff                Backoff.Kind, Base, Multiplier, Increment, Cap
//	                                from its keys kind (immediate, constant,
//	                                exponential, linear, fibonacci), base,
//	                                multiplier, increment (linear: what each wait
//	                                adds; fibonacci: what the second adds to the
//	                                first), cap (> 0); noCap: true removes the cap
//	                                (so that no cap is never written "cap: 0s",
//	                                which reads as a zero cap); steps: the waits
//	                                before retry 1, 2, … in place of the kind's
//	                                formula (the last for later retries).
//	         jitter, jitterFraction Backoff.Jitter, Backoff.Fraction (proportional
//	                                only), applied after the backoff of the entry.
//	         perTryTimeout, deadline, propagateDeadline, honorRetryAfter,
//	         hedgeAfter, maxRequests
//	                                the Policy fields of the same names
//	                                (maxRequests: requests out on the edge at
//	                                most, one more failing at once with UO).
//	         breaker                Breaker, key by key over the edge's breaker
//	                                (consecutiveFailures, failureRate, window,
//	                                minRequests, openFor, jitter, halfOpenProbes,
//	                                keepWindow, countRejected);
//	                                disabled: true removes it.
//	         budget                 kind token-bucket (max, ratio; defaults 10,
//	                                0.1) → NewTokenBucket; ratio (ratio, window;
//	                                defaults 0.1, 10s) → NewRatioBudget; aws →
//	                                NewAWSQuota; retry-breaker (ratio, window, min;
//	                                defaults 0.1, 1s, 10) → NewRetryBreaker; none
//	                                removes the budget.
//	                                shared sets SharedBudget, whichever key set
//	                                the budget.
//	         idempotent             Edge.Idempotent: the calls are declared safe to
//	                                repeat (gRPC idempotency_level) or not.
//
// Envoy's backoff is approximated: Envoy draws retry n's wait from
// [0, (2ⁿ − 1)·base) and then caps the draw at max_interval, where Backoff
// draws from [0, min(cap, base·2ⁿ⁻¹)); the first retry's range is the same,
// later ones are ½ to ⅔ as wide as Envoy's until the cap.
//
// Within one entry, one key at most may set each Policy field: maxAttempts,
// retryPolicy and retry_policy all set the attempts; backoff, retryPolicy and
// retry_policy the backoff; perTryTimeout, retryPolicy.perAttemptRecvTimeout
// and retry_policy.per_try_timeout the per-try timeout; retryThrottling,
// retry_budget, finagle and budget.kind the budget. Durations are Go
// durations or protobuf JSON durations ("250ms", "1m30s", "0.1s"); 0 may be
// written without a unit.
type PolicyFile struct {
	// Default applies to every edge of the model.
	Default *PolicySpec `yaml:"default,omitempty"`
	// Edges apply to the edges they match, after Default.
	Edges []EdgePolicy `yaml:"edges,omitempty"`

	src   *pfSource // the parsed source, for error positions; nil if built in code
	notes []string  // what a project's file holds that is not simulated
}

// EdgePolicy is the policy of the edges from service Caller to service
// Callee (and, if Operation is set, into that callee operation only).
type EdgePolicy struct {
	Caller     string `yaml:"caller"`
	Callee     string `yaml:"callee"`
	Operation  string `yaml:"operation,omitempty"`
	PolicySpec `yaml:",inline"`

	// to is set for entries read from a project's own file: which callees
	// and operations they name, in that project's terms (nil: Caller,
	// Callee and Operation above).
	to *target
}

// PolicySpec is one entry's keys; see the file format above.
type PolicySpec struct {
	// gRPC service config.
	RetryPolicy     *GRPCRetryPolicy     `yaml:"retryPolicy,omitempty"`
	RetryThrottling *GRPCRetryThrottling `yaml:"retryThrottling,omitempty"`
	// Envoy route retry_policy and cluster retry_budget.
	EnvoyRetryPolicy *EnvoyRetryPolicy `yaml:"retry_policy,omitempty"`
	EnvoyRetryBudget *EnvoyRetryBudget `yaml:"retry_budget,omitempty"`
	// Finagle RetryBudget.
	Finagle *FinagleRetryBudget `yaml:"finagle,omitempty"`
	// retryaudit's own keys, one Policy field each.
	MaxAttempts       *int              `yaml:"maxAttempts,omitempty"`
	Backoff           *BackoffSpec      `yaml:"backoff,omitempty"`
	Jitter            replay.JitterKind `yaml:"jitter,omitempty"`
	JitterFraction    *float64          `yaml:"jitterFraction,omitempty"`
	PerTryTimeout     *Duration         `yaml:"perTryTimeout,omitempty"`
	Deadline          *Duration         `yaml:"deadline,omitempty"`
	PropagateDeadline *bool             `yaml:"propagateDeadline,omitempty"`
	HonorRetryAfter   *bool             `yaml:"honorRetryAfter,omitempty"`
	HedgeAfter        *Duration         `yaml:"hedgeAfter,omitempty"`
	MaxRequests       *int              `yaml:"maxRequests,omitempty"`
	Breaker           *BreakerSpec      `yaml:"breaker,omitempty"`
	Budget            *NativeBudget     `yaml:"budget,omitempty"`
	// Idempotent declares the calls safe to repeat, or not: a gRPC
	// method's idempotency_level (IDEMPOTENT, NO_SIDE_EFFECTS), which
	// traces do not carry. Policies that add retries or hedges read it
	// (see DeclareIdempotency).
	Idempotent *bool `yaml:"idempotent,omitempty"`
}

// BackoffSpec overrides Backoff fields key by key.
type BackoffSpec struct {
	Kind       replay.BackoffKind `yaml:"kind,omitempty"` // immediate, constant, exponential, linear, fibonacci
	Base       *Duration          `yaml:"base,omitempty"`
	Multiplier *float64           `yaml:"multiplier,omitempty"`
	// Increment is linear backoff's step, or what Fibonacci's second
	// wait adds to the first.
	Increment *Duration `yaml:"increment,omitempty"`
	// Steps are the waits before retry 1, 2, … in place of the kind's
	// formula, the last for later retries: a schedule read step by step
	// from traces that no one kind fits.
	Steps []Duration `yaml:"steps,omitempty"`
	Cap   *Duration  `yaml:"cap,omitempty"`
	// NoCap removes the cap: a cap is a duration > 0, so that "cap: 0s"
	// cannot be read as a zero cap.
	NoCap bool `yaml:"noCap,omitempty"`
}

// BreakerSpec overrides BreakerConfig fields key by key; Disabled removes
// the breaker.
type BreakerSpec struct {
	Disabled            bool      `yaml:"disabled,omitempty"`
	ConsecutiveFailures *int      `yaml:"consecutiveFailures,omitempty"`
	FailureRate         *float64  `yaml:"failureRate,omitempty"`
	Window              *Duration `yaml:"window,omitempty"`
	MinRequests         *int      `yaml:"minRequests,omitempty"`
	OpenFor             *Duration `yaml:"openFor,omitempty"`
	Jitter              *float64  `yaml:"jitter,omitempty"`
	HalfOpenProbes      *int      `yaml:"halfOpenProbes,omitempty"`
	KeepWindow          *bool     `yaml:"keepWindow,omitempty"`
	CountRejected       *bool     `yaml:"countRejected,omitempty"`
}

// Budget kinds of NativeBudget.
const (
	BudgetKindTokenBucket = "token-bucket"
	BudgetKindRatio       = "ratio"
	BudgetKindAWS         = "aws"
	BudgetKindBreaker     = "retry-breaker"
	BudgetKindNone        = "none"
)

// NativeBudget is one of the seeds' budgets (or none), and whether the budget
// is shared by every edge into the callee.
type NativeBudget struct {
	Kind   string    `yaml:"kind,omitempty"`
	Max    *float64  `yaml:"max,omitempty"`    // token-bucket
	Ratio  *float64  `yaml:"ratio,omitempty"`  // token-bucket, ratio, retry-breaker (failure threshold)
	Window *Duration `yaml:"window,omitempty"` // ratio, retry-breaker
	Min    *int      `yaml:"min,omitempty"`    // retry-breaker: results needed in the window
	Shared *bool     `yaml:"shared,omitempty"`
}

// ParsePolicyFile parses a policy file. name prefixes error messages. Errors
// are *PolicyFileError values (several joined with errors.Join) carrying the
// line, column and a source excerpt with a caret where the key is known.
func ParsePolicyFile(name string, data []byte) (*PolicyFile, error) {
	src, docs, err := pfParse(name, data)
	if err != nil {
		return nil, err
	}
	return parseNative(src, docs)
}

// parseNative reads a parsed file in retryaudit's own vocabulary.
func parseNative(src *pfSource, docs []ast.Node) (*PolicyFile, error) {
	f := &PolicyFile{src: src}
	if len(docs) > 1 {
		return nil, src.errorAt(docs[1].GetToken(), nil, "a policy file is one YAML document; this is a second one")
	}
	if len(docs) == 1 {
		if err := src.decode(docs[0], f); err != nil {
			return nil, err
		}
	}
	if len(f.Edges) == 0 {
		f.Edges = nil
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// ---------------------------------------------------------------------------
// Validation

var pfJitters = []replay.JitterKind{replay.JitterNone, replay.JitterFull, replay.JitterEqual, replay.JitterDecorrelated, replay.JitterProportional}

// pfJoin joins kinds for messages.
func pfJoin[T ~string](xs []T, sep string) string {
	ss := make([]string, len(xs))
	for i, x := range xs {
		ss[i] = string(x)
	}
	return strings.Join(ss, sep)
}

func (f *PolicyFile) validate() error {
	e := &pfErrs{src: f.src}
	if f.Default != nil {
		f.Default.validate(pfPath{"default"}, e)
	}
	type key struct{ caller, callee, op string }
	seen := map[key]int{}
	for i := range f.Edges {
		ep := &f.Edges[i]
		p := pfPath{"edges", i}
		if ep.to != nil {
			ep.PolicySpec.validate(p, e)
			continue
		}
		for _, k := range []struct {
			key, v string
			need   bool
		}{{"caller", ep.Caller, true}, {"callee", ep.Callee, true}, {"operation", ep.Operation, false}} {
			if k.v == "" {
				if k.need {
					e.add(p.with(k.key), "missing: want a service name")
				}
				continue
			}
			if !utf8.ValidString(k.v) || strings.ContainsFunc(k.v, unicode.IsControl) {
				e.add(p.with(k.key), "%q: want a name without control characters", k.v)
			}
		}
		kk := key{ep.Caller, ep.Callee, ep.Operation}
		if j, dup := seen[kk]; dup {
			e.add(p, "edges[%d] already gives %s", j, pfEntryName(ep))
		} else {
			seen[kk] = i
		}
		ep.PolicySpec.validate(p, e)
	}
	return e.err()
}

func pfEntryName(ep *EdgePolicy) string {
	s := ep.Caller + " → " + ep.Callee
	if ep.Operation != "" {
		s += " operation " + ep.Operation
	}
	return s
}

func pfFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// validate reports every problem of one entry that does not need the model.
func (s *PolicySpec) validate(p pfPath, e *pfErrs) {
	dur := func(path pfPath, d *Duration, positive bool) {
		switch {
		case d == nil:
		case *d < 0:
			e.add(path, "%s is negative: want a duration ≥ 0", *d)
		case positive && *d == 0:
			e.add(path, "0s: want a duration > 0")
		}
	}
	num := func(path pfPath, x *float64) bool {
		if x != nil && !pfFinite(*x) {
			e.add(path, "%v: want a finite number", *x)
			return false
		}
		return true
	}

	// Conflicts: one key per Policy field.
	conflict := func(what string, keys ...string) {
		if len(keys) > 1 {
			e.add(p.with(keys[1]), "%s and %s both set the %s; keep one", keys[0], keys[1], what)
		}
	}
	var attempts, backoff, perTry []string
	if s.RetryPolicy != nil {
		attempts = append(attempts, "retryPolicy")
		backoff = append(backoff, "retryPolicy")
		if s.RetryPolicy.PerAttemptRecvTimeout != nil {
			perTry = append(perTry, "retryPolicy.perAttemptRecvTimeout")
		}
	}
	if s.EnvoyRetryPolicy != nil {
		attempts = append(attempts, "retry_policy")
		backoff = append(backoff, "retry_policy")
		if s.EnvoyRetryPolicy.PerTryTimeout != nil {
			perTry = append(perTry, "retry_policy.per_try_timeout")
		}
	}
	if s.MaxAttempts != nil {
		attempts = append(attempts, "maxAttempts")
	}
	if s.Backoff != nil {
		backoff = append(backoff, "backoff")
	}
	if s.PerTryTimeout != nil {
		perTry = append(perTry, "perTryTimeout")
	}
	conflict("attempt count", attempts...)
	conflict("backoff", backoff...)
	conflict("per-try timeout", perTry...)
	conflict("retry budget", s.budgetKeys()...)

	if rp := s.RetryPolicy; rp != nil {
		q := p.with("retryPolicy")
		var missing []string
		for _, k := range []struct {
			key string
			nil bool
		}{{"maxAttempts", rp.MaxAttempts == nil}, {"initialBackoff", rp.InitialBackoff == nil},
			{"maxBackoff", rp.MaxBackoff == nil}, {"backoffMultiplier", rp.BackoffMultiplier == nil},
			{"retryableStatusCodes", rp.RetryableStatusCodes == nil}} {
			if k.nil {
				missing = append(missing, k.key)
			}
		}
		if len(missing) > 0 {
			e.add(q, "missing %s: gRPC requires maxAttempts, initialBackoff, maxBackoff, backoffMultiplier and retryableStatusCodes (to change only the attempts, use maxAttempts outside retryPolicy)", strings.Join(missing, ", "))
		}
		if rp.MaxAttempts != nil && *rp.MaxAttempts < 1 {
			e.add(q.with("maxAttempts"), "%d: want 1 or more (the first attempt counts)", *rp.MaxAttempts)
		}
		dur(q.with("initialBackoff"), rp.InitialBackoff, true)
		dur(q.with("maxBackoff"), rp.MaxBackoff, true)
		if x := rp.BackoffMultiplier; x != nil && !(*x > 0 && pfFinite(*x)) {
			e.add(q.with("backoffMultiplier"), "%v: want a number > 0", *x)
		}
		if rp.RetryableStatusCodes != nil && len(rp.RetryableStatusCodes) == 0 {
			e.add(q.with("retryableStatusCodes"), "empty: gRPC requires at least one status code")
		}
		for i, c := range rp.RetryableStatusCodes {
			if !slices.Contains(pfGRPCCodes, c) {
				hint := ""
				if slices.Contains(pfGRPCCodes, strings.ToUpper(c)) {
					hint = fmt.Sprintf(" (%s?)", strings.ToUpper(c))
				}
				e.add(q.with("retryableStatusCodes").with(i), "%q is not a gRPC status code%s: want one of %s", c, hint, strings.Join(pfGRPCCodes, ", "))
			}
		}
		dur(q.with("perAttemptRecvTimeout"), rp.PerAttemptRecvTimeout, false)
	}
	if ep := s.EnvoyRetryPolicy; ep != nil {
		q := p.with("retry_policy")
		if n := ep.NumRetries; n != nil && (*n < 0 || *n > math.MaxUint32) {
			e.add(q.with("num_retries"), "%d: want 0 or more (retries after the first attempt)", *n)
		}
		if ep.RetryOn != "" {
			for c := range strings.SplitSeq(ep.RetryOn, ",") {
				c = strings.TrimSpace(c)
				if !slices.Contains(pfEnvoyRetryOn, c) {
					e.add(q.with("retry_on"), "%q is not an Envoy retry condition: want a comma-separated list of %s", c, strings.Join(pfEnvoyRetryOn, ", "))
				}
			}
		}
		dur(q.with("per_try_timeout"), ep.PerTryTimeout, false)
		switch v := ep.HostSelectionRetryMaxAttempts.(type) {
		case nil, uint64, int64:
		case string:
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				e.add(q.with("host_selection_retry_max_attempts"), "%q: want a whole number", v)
			}
		default:
			e.add(q.with("host_selection_retry_max_attempts"), "want a whole number")
		}
		for i, c := range ep.RetriableStatusCodes {
			if c < 100 || c > 599 {
				e.add(q.with("retriable_status_codes", i), "%d: want an HTTP status code", c)
			}
		}
		if rl := ep.RateLimitedRetryBackOff; rl != nil {
			r := q.with("rate_limited_retry_back_off")
			if len(rl.ResetHeaders) == 0 {
				e.add(r, "missing reset_headers: Envoy requires at least one")
			}
			for i, h := range rl.ResetHeaders {
				if h.Name == "" {
					e.add(r.with("reset_headers", i, "name"), "missing: want a header name such as Retry-After")
				}
				if h.Format != "" && h.Format != "SECONDS" && h.Format != "UNIX_TIMESTAMP" {
					e.add(r.with("reset_headers", i, "format"), "%q: want SECONDS or UNIX_TIMESTAMP", h.Format)
				}
			}
			dur(r.with("max_interval"), rl.MaxInterval, true)
		}
		if bo := ep.RetryBackOff; bo != nil {
			r := q.with("retry_back_off")
			if bo.BaseInterval == nil {
				e.add(r, "missing base_interval: Envoy requires it")
			}
			dur(r.with("base_interval"), bo.BaseInterval, true)
			dur(r.with("max_interval"), bo.MaxInterval, true)
			if bo.BaseInterval != nil && bo.MaxInterval != nil && *bo.MaxInterval < *bo.BaseInterval {
				e.add(r.with("max_interval"), "%s is less than base_interval %s: Envoy requires max_interval ≥ base_interval", *bo.MaxInterval, *bo.BaseInterval)
			}
		}
	}
	if eb := s.EnvoyRetryBudget; eb != nil {
		if n := eb.MinRetryConcurrency; n != nil && *n > math.MaxUint32 {
			e.add(p.with("retry_budget", "min_retry_concurrency"), "%d: too large", *n)
		}
	}
	if f := s.Finagle; f != nil {
		dur(p.with("finagle", "ttl"), f.TTL, false)
		num(p.with("finagle", "percentCanRetry"), f.PercentCanRetry)
	}
	if b := s.Budget; b != nil {
		q := p.with("budget")
		switch b.Kind {
		case "", BudgetKindTokenBucket, BudgetKindRatio, BudgetKindAWS, BudgetKindBreaker, BudgetKindNone:
		default:
			e.add(q.with("kind"), "%q: want %s, %s, %s, %s or %s", b.Kind, BudgetKindTokenBucket, BudgetKindRatio, BudgetKindAWS, BudgetKindBreaker, BudgetKindNone)
		}
		allowed := map[string][]string{BudgetKindTokenBucket: {"max", "ratio"}, BudgetKindRatio: {"ratio", "window"},
			BudgetKindBreaker: {"ratio", "window", "min"}}[b.Kind]
		for _, k := range []struct {
			key string
			set bool
		}{{"max", b.Max != nil}, {"ratio", b.Ratio != nil}, {"window", b.Window != nil}, {"min", b.Min != nil}} {
			if k.set && !slices.Contains(allowed, k.key) {
				if b.Kind == "" {
					e.add(q.with(k.key), "needs a kind (%s or %s)", BudgetKindTokenBucket, BudgetKindRatio)
				} else {
					e.add(q.with(k.key), "a %s budget has no %s", b.Kind, k.key)
				}
			}
		}
		num(q.with("max"), b.Max)
		num(q.with("ratio"), b.Ratio)
		dur(q.with("window"), b.Window, false)
	}
	// Each budget's own checks, through its constructor.
	if keys := s.budgetKeys(); len(keys) == 1 {
		if _, _, err := s.budgetSpec(); err != nil {
			e.add(p.with(keys[0]), "%v", err)
		}
	}

	if s.MaxAttempts != nil && *s.MaxAttempts < 1 {
		e.add(p.with("maxAttempts"), "%d: want 1 or more (the first attempt counts)", *s.MaxAttempts)
	}
	if b := s.Backoff; b != nil {
		q := p.with("backoff")
		switch b.Kind {
		case "", replay.BackoffImmediate, replay.BackoffConstant, replay.BackoffExponential, replay.BackoffLinear, replay.BackoffFibonacci:
		default:
			e.add(q.with("kind"), "%q: want %s, %s, %s, %s or %s", b.Kind, replay.BackoffImmediate, replay.BackoffConstant, replay.BackoffExponential,
				replay.BackoffLinear, replay.BackoffFibonacci)
		}
		dur(q.with("base"), b.Base, false)
		dur(q.with("increment"), b.Increment, false)
		for i := range b.Steps {
			dur(q.with("steps").with(strconv.Itoa(i)), &b.Steps[i], false)
		}
		if b.Cap != nil && *b.Cap == 0 {
			e.add(q.with("cap"), "0s would read as a zero cap: for no cap write noCap: true")
		} else {
			dur(q.with("cap"), b.Cap, false)
		}
		if b.NoCap && b.Cap != nil {
			e.add(q.with("noCap"), "cap and noCap both set; keep one")
		}
		if x := b.Multiplier; x != nil && !(*x > 0 && pfFinite(*x)) {
			e.add(q.with("multiplier"), "%v: want a number > 0", *x)
		}
	}
	if s.Jitter != "" && !slices.Contains(pfJitters, s.Jitter) {
		e.add(p.with("jitter"), "%q: want %s", s.Jitter, pfJoin(pfJitters, ", "))
	}
	if x := s.JitterFraction; x != nil && !(*x >= 0 && *x <= 1) {
		e.add(p.with("jitterFraction"), "%v: want 0 to 1", *x)
	}
	if s.JitterFraction != nil && s.Jitter != "" && s.Jitter != replay.JitterProportional {
		e.add(p.with("jitterFraction"), "applies to proportional jitter only, and this entry's jitter is %s", s.Jitter)
	}
	dur(p.with("perTryTimeout"), s.PerTryTimeout, false)
	dur(p.with("deadline"), s.Deadline, false)
	dur(p.with("hedgeAfter"), s.HedgeAfter, false)
	if n := s.MaxRequests; n != nil && (*n < 0 || *n > math.MaxInt32) {
		e.add(p.with("maxRequests"), "%d: want 0 (no limit) to %d requests out", *n, math.MaxInt32)
	}
	if b := s.Breaker; b != nil {
		q := p.with("breaker")
		if b.Disabled && *b != (BreakerSpec{Disabled: true}) {
			e.add(q.with("disabled"), "a disabled breaker takes no other keys")
		}
		if n := b.ConsecutiveFailures; n != nil && *n < 0 {
			e.add(q.with("consecutiveFailures"), "%d: want 0 or more", *n)
		}
		if x := b.FailureRate; x != nil && !(*x >= 0 && *x <= 1) {
			e.add(q.with("failureRate"), "%v: want 0 to 1", *x)
		}
		dur(q.with("window"), b.Window, false) // 0: no failure-rate window; BreakerConfig.Validate needs one with a rate
		if n := b.MinRequests; n != nil && *n < 0 {
			e.add(q.with("minRequests"), "%d: want 0 or more", *n)
		}
		dur(q.with("openFor"), b.OpenFor, true)
		if x := b.Jitter; x != nil && !(*x >= 0 && *x < 1) {
			e.add(q.with("jitter"), "%v: want 0 to 1 (exclusive)", *x)
		}
		if n := b.HalfOpenProbes; n != nil && *n < 0 {
			e.add(q.with("halfOpenProbes"), "%d: want 0 or more (0 means 1)", *n)
		}
	}
}

// budgetKeys lists the keys of the entry that set the budget.
func (s *PolicySpec) budgetKeys() []string {
	var keys []string
	if s.RetryThrottling != nil {
		keys = append(keys, "retryThrottling")
	}
	if s.EnvoyRetryBudget != nil {
		keys = append(keys, "retry_budget")
	}
	if s.Finagle != nil {
		keys = append(keys, "finagle")
	}
	if s.Budget != nil && s.Budget.Kind != "" {
		keys = append(keys, "budget")
	}
	return keys
}

// budgetSpec returns the budget the entry sets: set is false when it sets
// none, and the spec is the zero one for kind none. Each budget's own
// checks run here, through its constructor.
func (s *PolicySpec) budgetSpec() (spec replay.BudgetSpec, set bool, err error) {
	switch {
	case s.RetryThrottling != nil:
		spec, err = s.RetryThrottling.spec()
	case s.EnvoyRetryBudget != nil:
		spec = s.EnvoyRetryBudget.spec()
	case s.Finagle != nil:
		spec = s.Finagle.spec()
	case s.Budget != nil && s.Budget.Kind != "":
		spec, err = s.Budget.spec()
	default:
		return replay.BudgetSpec{}, false, nil
	}
	if err == nil {
		err = spec.Validate()
	}
	return spec, true, err
}

// spec is the budget of the file's own budget key.
func (b *NativeBudget) spec() (replay.BudgetSpec, error) {
	switch b.Kind {
	case BudgetKindTokenBucket:
		return replay.BudgetSpec{Kind: replay.BudgetTokenBucket, Max: pfOr(b.Max, replay.TokenBucketDefaultMax), Ratio: pfOr(b.Ratio, replay.TokenBucketDefaultRatio)}, nil
	case BudgetKindRatio:
		return replay.BudgetSpec{Kind: replay.BudgetRatio, Ratio: pfOr(b.Ratio, 0.1), Window: pfSeconds(b.Window, replay.RatioBudgetDefaultWindow)}, nil
	case BudgetKindAWS:
		return replay.BudgetSpec{Kind: replay.BudgetAWS}, nil
	case BudgetKindBreaker:
		return replay.BudgetSpec{Kind: replay.BudgetBreaker, Ratio: pfOr(b.Ratio, 0.1), Window: pfSeconds(b.Window, 1), Min: pfOr(b.Min, 10)}, nil
	case BudgetKindNone:
		return replay.BudgetSpec{}, nil
	}
	return replay.BudgetSpec{}, fmt.Errorf("unknown budget kind %q", b.Kind)
}

// pfOr is *p, or def when p is nil.
func pfOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// pfSeconds is d in seconds, or def when d is nil.
func pfSeconds(d *Duration, def float64) float64 {
	if d == nil {
		return def
	}
	return d.Seconds()
}

// ---------------------------------------------------------------------------
// Apply

// Apply returns a copy of m whose edge policies are overridden by the file:
// each edge's policy is the model's, then Default's keys, then the keys of
// the entries matching it (without operation, then with operation). An entry
// whose caller, callee or operation is not in the model is an error, as is
// an entry that matches no edge, and a resulting backoff or breaker that is
// inconsistent.
func (f *PolicyFile) Apply(m *replay.Model) (*replay.Model, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	out := pfCloneModel(m)
	type layer struct {
		s    *PolicySpec
		path pfPath
	}
	layers := make([][]layer, len(out.Edges))
	if f.Default != nil {
		for i := range layers {
			layers[i] = append(layers[i], layer{f.Default, pfPath{"default"}})
		}
	}
	e := &pfErrs{src: f.src}
	for _, a := range f.matches(out, e) {
		for _, i := range a.edges {
			layers[i] = append(layers[i], layer{&f.Edges[a.entry].PolicySpec, pfPath{"edges", a.entry}})
		}
	}
	if err := e.err(); err != nil {
		return nil, err
	}
	for i := range out.Edges {
		ed := &out.Edges[i]
		p := &ed.Policy
		var backoffBy, breakerBy pfPath
		for _, l := range layers[i] {
			s := l.s
			if s.RetryPolicy != nil || s.EnvoyRetryPolicy != nil || s.Backoff != nil || s.Jitter != "" || s.JitterFraction != nil {
				backoffBy = l.path
			}
			if s.Breaker != nil && !s.Breaker.Disabled {
				breakerBy = l.path.with("breaker")
			}
			if msg := s.applyTo(p); msg != "" {
				e.add(l.path, "edge %s: %s", pfEdgeName(out, ed), msg)
			}
			if spec, set, _ := s.budgetSpec(); set { // validate caught errors already
				p.Budget = spec
			}
			if s.Budget != nil && s.Budget.Shared != nil {
				p.SharedBudget = *s.Budget.Shared
			}
			if s.Idempotent != nil {
				ed.Idempotent = *s.Idempotent
			}
		}
		if backoffBy != nil {
			if err := p.Backoff.Validate(); err != nil {
				e.add(backoffBy, "edge %s: %v", pfEdgeName(out, ed), err)
			}
		}
		if breakerBy != nil && p.Breaker.Enabled() {
			if err := p.Breaker.Validate(); err != nil {
				e.add(breakerBy, "edge %s: %v", pfEdgeName(out, ed), err)
			}
		}
	}
	if err := e.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// DeclareIdempotency returns a copy of m with only the file's idempotent
// keys applied: what the policies that add retries or hedges
// (idempotent-only, hedge-p95) must know before they pick their edges.
func (f *PolicyFile) DeclareIdempotency(m *replay.Model) (*replay.Model, error) {
	only := &PolicyFile{src: f.src}
	if f.Default != nil {
		only.Default = &PolicySpec{Idempotent: f.Default.Idempotent}
	}
	for _, ep := range f.Edges {
		only.Edges = append(only.Edges, EdgePolicy{Caller: ep.Caller, Callee: ep.Callee, Operation: ep.Operation,
			PolicySpec: PolicySpec{Idempotent: ep.Idempotent}, to: ep.to})
	}
	return only.Apply(m)
}

// applyTo overrides p with the entry's keys (all but the budget), returning
// a problem that needs the edge's policy to be seen.
func (s *PolicySpec) applyTo(p *replay.Policy) string {
	if rp := s.RetryPolicy; rp != nil {
		p.MaxAttempts = min(*rp.MaxAttempts, grpcMaxAttemptsLimit)
		p.Backoff = replay.Backoff{Kind: replay.BackoffExponential, Base: rp.InitialBackoff.Seconds(),
			Multiplier: *rp.BackoffMultiplier, Cap: rp.MaxBackoff.Seconds(), Jitter: replay.JitterFull}
		if rp.PerAttemptRecvTimeout != nil {
			p.PerTryTimeout = rp.PerAttemptRecvTimeout.Seconds()
		}
	}
	if ep := s.EnvoyRetryPolicy; ep != nil {
		n := envoyDefaultNumRetries
		if ep.NumRetries != nil {
			n = *ep.NumRetries
		}
		p.MaxAttempts = n + 1
		base := Duration(envoyDefaultBaseInterval)
		var maxi Duration
		if ep.RetryBackOff != nil {
			base = *ep.RetryBackOff.BaseInterval
			if ep.RetryBackOff.MaxInterval != nil {
				maxi = *ep.RetryBackOff.MaxInterval
			}
		}
		if maxi == 0 {
			maxi = envoyMaxIntervalFactor * base
		}
		p.Backoff = replay.Backoff{Kind: replay.BackoffExponential, Base: base.Seconds(), Multiplier: 2, Cap: maxi.Seconds(), Jitter: replay.JitterFull}
		if ep.PerTryTimeout != nil {
			p.PerTryTimeout = ep.PerTryTimeout.Seconds()
		}
		if ep.RateLimitedRetryBackOff != nil {
			p.HonorRetryAfter = true
		}
	}
	if s.MaxAttempts != nil {
		p.MaxAttempts = *s.MaxAttempts
	}
	var problem string
	if b := s.Backoff; b != nil {
		if b.Kind != "" {
			p.Backoff.Kind = b.Kind
		}
		if b.Base != nil {
			p.Backoff.Base = b.Base.Seconds()
		}
		if b.Multiplier != nil {
			p.Backoff.Multiplier = *b.Multiplier
		}
		if b.Increment != nil {
			p.Backoff.Increment = b.Increment.Seconds()
		}
		if len(b.Steps) > 0 {
			st := &replay.Steps{}
			for _, d := range b.Steps {
				st.ByRetry = append(st.ByRetry, d.Seconds())
			}
			p.Backoff.Steps = st
		}
		if b.Cap != nil {
			p.Backoff.Cap = b.Cap.Seconds()
		}
		if b.NoCap {
			p.Backoff.Cap = 0
		}
		if (p.Backoff.Kind == "" || p.Backoff.Kind == replay.BackoffImmediate) && (b.Base != nil || b.Multiplier != nil || b.Increment != nil || len(b.Steps) > 0 || b.Cap != nil || b.NoCap) {
			problem = "backoff: its backoff is immediate, which has no base, multiplier, increment, steps or cap; give backoff.kind"
		}
	}
	if s.Jitter != "" {
		p.Backoff.Jitter = s.Jitter
	}
	if s.JitterFraction != nil {
		p.Backoff.Fraction = *s.JitterFraction
		if p.Backoff.Jitter != replay.JitterProportional {
			problem = fmt.Sprintf("jitterFraction applies to proportional jitter only, and the jitter is %q", p.Backoff.Jitter)
		}
	}
	if s.PerTryTimeout != nil {
		p.PerTryTimeout = s.PerTryTimeout.Seconds()
	}
	if s.Deadline != nil {
		p.Deadline = s.Deadline.Seconds()
	}
	if s.PropagateDeadline != nil {
		p.Propagate = *s.PropagateDeadline
	}
	if s.HonorRetryAfter != nil {
		p.HonorRetryAfter = *s.HonorRetryAfter
	}
	if s.HedgeAfter != nil {
		p.HedgeAfter = s.HedgeAfter.Seconds()
	}
	if s.MaxRequests != nil {
		p.MaxRequests = *s.MaxRequests
	}
	if b := s.Breaker; b != nil {
		if b.Disabled {
			p.Breaker = replay.BreakerConfig{}
		} else {
			c := p.Breaker
			if b.ConsecutiveFailures != nil {
				c.ConsecutiveFailures = *b.ConsecutiveFailures
			}
			if b.FailureRate != nil {
				c.FailureRate = *b.FailureRate
			}
			if b.Window != nil {
				c.Window = b.Window.Seconds()
			}
			if b.MinRequests != nil {
				c.MinRequests = *b.MinRequests
			}
			if b.OpenFor != nil {
				c.OpenFor = b.OpenFor.Seconds()
			}
			if b.Jitter != nil {
				c.Jitter = *b.Jitter
			}
			if b.HalfOpenProbes != nil {
				c.HalfOpenProbes = *b.HalfOpenProbes
			}
			if b.KeepWindow != nil {
				c.KeepWindow = *b.KeepWindow
			}
			if b.CountRejected != nil {
				c.CountRejected = *b.CountRejected
			}
			p.Breaker = c
		}
	}
	return problem
}

// match returns the edges entry j matches, reporting names not in the model.
func (f *PolicyFile) match(m *replay.Model, j int, e *pfErrs) []int {
	ep := &f.Edges[j]
	p := pfPath{"edges", j}
	names := func() string {
		var ns []string
		for _, s := range m.Services {
			ns = append(ns, s.Name)
		}
		slices.Sort(ns)
		ns = slices.Compact(ns)
		if len(ns) > 12 {
			ns = append(ns[:12], "…")
		}
		return strings.Join(ns, ", ")
	}
	has := func(name string) bool {
		return slices.ContainsFunc(m.Services, func(s replay.Service) bool { return s.Name == name })
	}
	ok := true
	if !has(ep.Caller) {
		e.add(p.with("caller"), "no service %q in the model (services: %s)", ep.Caller, names())
		ok = false
	}
	if !has(ep.Callee) {
		e.add(p.with("callee"), "no service %q in the model (services: %s)", ep.Callee, names())
		ok = false
	}
	if ok && ep.Operation != "" {
		var ops []string
		for _, s := range m.Services {
			if s.Name == ep.Callee {
				for _, op := range s.Ops {
					ops = append(ops, op.Name)
				}
			}
		}
		if !slices.Contains(ops, ep.Operation) {
			slices.Sort(ops)
			e.add(p.with("operation"), "service %q has no operation %q (operations: %s)", ep.Callee, ep.Operation, strings.Join(slices.Compact(ops), ", "))
			ok = false
		}
	}
	if !ok {
		return nil
	}
	var idx []int
	for i, ed := range m.Edges {
		if !pfIn(m, ed.Caller) || !pfIn(m, ed.Callee) {
			continue
		}
		if m.Services[ed.Caller].Name != ep.Caller || m.Services[ed.Callee].Name != ep.Callee {
			continue
		}
		if ep.Operation != "" {
			ops := m.Services[ed.Callee].Ops
			if ed.CalleeOp < 0 || ed.CalleeOp >= len(ops) || ops[ed.CalleeOp].Name != ep.Operation {
				continue
			}
		}
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		e.add(p, "the model has no edge %s", pfEntryName(ep))
	}
	return idx
}

func pfIn(m *replay.Model, svc int) bool { return svc >= 0 && svc < len(m.Services) }

func pfEdgeName(m *replay.Model, ed *replay.Edge) string {
	name := func(i int) string {
		if pfIn(m, i) {
			return m.Services[i].Name
		}
		return "#" + strconv.Itoa(i)
	}
	s := name(ed.Caller) + " → " + name(ed.Callee)
	if pfIn(m, ed.Callee) && ed.CalleeOp >= 0 && ed.CalleeOp < len(m.Services[ed.Callee].Ops) {
		s += "." + m.Services[ed.Callee].Ops[ed.CalleeOp].Name
	}
	return s
}

// pfCloneModel copies m deeply enough that changing the copy's services,
// operations, edges and policies leaves m alone.
func pfCloneModel(m *replay.Model) *replay.Model {
	c := *m
	c.Services = slices.Clone(m.Services)
	for i := range c.Services {
		c.Services[i].Ops = slices.Clone(c.Services[i].Ops)
		for j := range c.Services[i].Ops {
			c.Services[i].Ops[j].Calls = slices.Clone(c.Services[i].Ops[j].Calls)
		}
	}
	c.Edges = slices.Clone(m.Edges)
	c.Entry = slices.Clone(m.Entry)
	c.Assumed = slices.Clone(m.Assumed)
	return &c
}

// ---------------------------------------------------------------------------
// Marshal

// Marshal writes the file as YAML that ParsePolicyFile reads back to the
// same PolicyFile. It refuses a file that ParsePolicyFile would refuse.
func (f *PolicyFile) Marshal() ([]byte, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	body, err := yaml.MarshalWithOptions(f, yaml.Indent(2), yaml.IndentSequence(true),
		yaml.CustomMarshaler(pfMarshalString))
	if err != nil {
		return nil, err
	}
	return append([]byte("# retryaudit policy file\n"), body...), nil
}
