package replay

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// PolicyFile is a parsed policy file: how clients retry, per edge or as a
// default, written in the vocabulary of the systems people run (gRPC service
// config, Envoy route and cluster config, Finagle's RetryBudget), so that an
// SRE can paste from their own config. A file overrides a model's policies;
// it does not replace them. Nil pointers and empty strings are keys the file
// does not give.
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
//	                                retry_on is checked but not simulated.
//	         retry_budget           Budget = NewEnvoyBudget(budget_percent.value,
//	                                min_retry_concurrency), defaults 20 and 3.
//	Finagle  finagle                Budget = NewFinagleBudget(ttl, minRetriesPerSec,
//	                                percentCanRetry), defaults 10s, 10, 0.2.
//	retryaudit (each key sets one field and keeps the rest)
//	         maxAttempts            MaxAttempts (first attempt included).
//	         backoff                Backoff.Kind, Base, Multiplier, Cap from its keys
//	                                kind, base, multiplier, cap.
//	         jitter, jitterFraction Backoff.Jitter, Backoff.Fraction (proportional
//	                                only), applied after the backoff of the entry.
//	         perTryTimeout, deadline, propagateDeadline, honorRetryAfter,
//	         hedgeAfter             the Policy fields of the same names.
//	         breaker                Breaker, key by key over the edge's breaker
//	                                (consecutiveFailures, failureRate, window,
//	                                minRequests, openFor, jitter, halfOpenProbes);
//	                                disabled: true removes it.
//	         budget                 kind token-bucket (max, ratio; defaults 10,
//	                                0.1) → NewTokenBucket; ratio (ratio, window;
//	                                defaults 0.1, 10s) → NewRatioBudget; aws →
//	                                NewAWSQuota; none removes the budget.
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

	src *pfSource // the parsed source, for error positions; nil if built in code
}

// EdgePolicy is the policy of the edges from service Caller to service
// Callee (and, if Operation is set, into that callee operation only).
type EdgePolicy struct {
	Caller     string `yaml:"caller"`
	Callee     string `yaml:"callee"`
	Operation  string `yaml:"operation,omitempty"`
	PolicySpec `yaml:",inline"`
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
	MaxAttempts       *int         `yaml:"maxAttempts,omitempty"`
	Backoff           *BackoffSpec `yaml:"backoff,omitempty"`
	Jitter            string       `yaml:"jitter,omitempty"`
	JitterFraction    *float64     `yaml:"jitterFraction,omitempty"`
	PerTryTimeout     *Duration    `yaml:"perTryTimeout,omitempty"`
	Deadline          *Duration    `yaml:"deadline,omitempty"`
	PropagateDeadline *bool        `yaml:"propagateDeadline,omitempty"`
	HonorRetryAfter   *bool        `yaml:"honorRetryAfter,omitempty"`
	HedgeAfter        *Duration    `yaml:"hedgeAfter,omitempty"`
	Breaker           *BreakerSpec `yaml:"breaker,omitempty"`
	Budget            *BudgetSpec  `yaml:"budget,omitempty"`
	// Idempotent declares the calls safe to repeat, or not: a gRPC
	// method's idempotency_level (IDEMPOTENT, NO_SIDE_EFFECTS), which
	// traces do not carry. Policies that add retries or hedges read it
	// (see DeclareIdempotency).
	Idempotent *bool `yaml:"idempotent,omitempty"`
}

// GRPCRetryPolicy is a gRPC service config method retryPolicy (gRFC A6).
type GRPCRetryPolicy struct {
	MaxAttempts           *int      `yaml:"maxAttempts,omitempty"`
	InitialBackoff        *Duration `yaml:"initialBackoff,omitempty"`
	MaxBackoff            *Duration `yaml:"maxBackoff,omitempty"`
	BackoffMultiplier     *float64  `yaml:"backoffMultiplier,omitempty"`
	RetryableStatusCodes  []string  `yaml:"retryableStatusCodes,omitempty"`
	PerAttemptRecvTimeout *Duration `yaml:"perAttemptRecvTimeout,omitempty"`
}

// GRPCRetryThrottling is the gRPC service config retryThrottling.
type GRPCRetryThrottling struct {
	MaxTokens  *float64 `yaml:"maxTokens,omitempty"`
	TokenRatio *float64 `yaml:"tokenRatio,omitempty"`
}

// EnvoyRetryPolicy is Envoy's config.route.v3.RetryPolicy (the keys the
// simulator can use).
type EnvoyRetryPolicy struct {
	RetryOn       string             `yaml:"retry_on,omitempty"`
	NumRetries    *int               `yaml:"num_retries,omitempty"`
	PerTryTimeout *Duration          `yaml:"per_try_timeout,omitempty"`
	RetryBackOff  *EnvoyRetryBackOff `yaml:"retry_back_off,omitempty"`
}

// EnvoyRetryBackOff is Envoy's RetryPolicy.RetryBackOff.
type EnvoyRetryBackOff struct {
	BaseInterval *Duration `yaml:"base_interval,omitempty"`
	MaxInterval  *Duration `yaml:"max_interval,omitempty"`
}

// EnvoyRetryBudget is Envoy's cluster circuit_breakers.thresholds.retry_budget.
type EnvoyRetryBudget struct {
	BudgetPercent       *EnvoyPercent `yaml:"budget_percent,omitempty"`
	MinRetryConcurrency *int          `yaml:"min_retry_concurrency,omitempty"`
}

// EnvoyPercent is Envoy's type.v3.Percent.
type EnvoyPercent struct {
	Value float64 `yaml:"value"`
}

// FinagleRetryBudget is Finagle's RetryBudget(ttl, minRetriesPerSec,
// percentCanRetry).
type FinagleRetryBudget struct {
	TTL              *Duration `yaml:"ttl,omitempty"`
	MinRetriesPerSec *int      `yaml:"minRetriesPerSec,omitempty"`
	PercentCanRetry  *float64  `yaml:"percentCanRetry,omitempty"`
}

// BackoffSpec overrides Backoff fields key by key.
type BackoffSpec struct {
	Kind       string    `yaml:"kind,omitempty"` // immediate, constant, exponential
	Base       *Duration `yaml:"base,omitempty"`
	Multiplier *float64  `yaml:"multiplier,omitempty"`
	Cap        *Duration `yaml:"cap,omitempty"`
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
}

// Budget kinds of BudgetSpec.
const (
	BudgetKindTokenBucket = "token-bucket"
	BudgetKindRatio       = "ratio"
	BudgetKindAWS         = "aws"
	BudgetKindNone        = "none"
)

// BudgetSpec is one of the seeds' budgets (or none), and whether the budget
// is shared by every edge into the callee.
type BudgetSpec struct {
	Kind   string    `yaml:"kind,omitempty"`
	Max    *float64  `yaml:"max,omitempty"`    // token-bucket
	Ratio  *float64  `yaml:"ratio,omitempty"`  // token-bucket, ratio
	Window *Duration `yaml:"window,omitempty"` // ratio
	Shared *bool     `yaml:"shared,omitempty"`
}

// Duration is a time span in a policy file: a Go duration ("250ms",
// "1m30s") or a protobuf JSON duration ("0.1s"); 0 needs no unit.
type Duration time.Duration

// Seconds returns the duration in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

// String formats the duration as Go does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes the duration as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a duration scalar.
func (d *Duration) UnmarshalYAML(n ast.Node) error {
	v, err := pfParseDuration(n)
	if err != nil {
		return &yaml.SyntaxError{Message: err.Error(), Token: n.GetToken()}
	}
	*d = v
	return nil
}

// pfParseDuration reads a duration from a string scalar (or an integer 0).
func pfParseDuration(n ast.Node) (Duration, error) {
	var s string
	switch v := n.(type) {
	case *ast.StringNode:
		s = v.Value
	case *ast.IntegerNode:
		s = v.GetToken().Value
	case *ast.FloatNode:
		return 0, fmt.Errorf("%s is not a duration: give a unit, e.g. %ss or %sms", v.GetToken().Value, v.GetToken().Value, v.GetToken().Value)
	default:
		return 0, fmt.Errorf("want a duration such as 250ms or 0.1s, got %s", pfDescribe(n))
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: want a Go or protobuf JSON duration such as 250ms, 1m30s or 0.1s", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s is negative: want a duration ≥ 0", s)
	}
	return Duration(d), nil
}

// PolicyFileError is an error in a policy file: a YAML error from
// goccy/go-yaml, or a semantic one about one key.
type PolicyFileError struct {
	File string
	// Path is the key the error is about, e.g. edges[1].retryPolicy.maxAttempts
	// ("" for YAML syntax errors).
	Path string
	// Line and Column (1-based) locate it in the parsed source; 0 when the
	// file was not parsed from source or the key cannot be located.
	Line, Column int
	Msg          string

	formatted string // goccy/go-yaml's "[line:col] message" and source excerpt with a caret
	err       error  // the goccy/go-yaml error, if any
}

// Error returns the file name, the position, the message and, when the
// position is known, the source lines with a caret under the error.
func (e *PolicyFileError) Error() string {
	name := e.File
	if name == "" {
		name = "policy file"
	}
	if e.formatted != "" {
		return name + ": " + e.formatted
	}
	if e.Path != "" {
		return name + ": " + e.Path + ": " + e.Msg
	}
	return name + ": " + e.Msg
}

// Unwrap returns the goccy/go-yaml error, if any.
func (e *PolicyFileError) Unwrap() error { return e.err }

// pfSource is the parsed source of a policy file.
type pfSource struct {
	name    string
	root    ast.Node
	anchors map[string]ast.Node
	visits  int // nodes checked, bounded against alias bombs
}

// pfMaxVisits bounds how many nodes the type check visits (aliases expand).
const pfMaxVisits = 100_000

// pfPath is a key path: string keys and int sequence indices.
type pfPath []any

func (p pfPath) with(ks ...any) pfPath { return append(slices.Clip(p), ks...) }

func (p pfPath) String() string {
	var b strings.Builder
	for _, k := range p {
		switch k := k.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, k)
		}
	}
	return b.String()
}

// ParsePolicyFile parses a policy file. name prefixes error messages. Errors
// are *PolicyFileError values (several joined with errors.Join) carrying the
// line, column and a source excerpt with a caret where the key is known.
func ParsePolicyFile(name string, data []byte) (*PolicyFile, error) {
	src := &pfSource{name: name}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, src.yamlError(err)
	}
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if src.root != nil {
			return nil, src.errorAt(doc.Body.GetToken(), nil, "a policy file is one YAML document; this is a second one")
		}
		src.root = doc.Body
	}
	f := &PolicyFile{src: src}
	if src.root != nil {
		src.anchors = map[string]ast.Node{}
		for _, n := range ast.Filter(ast.AnchorType, src.root) {
			if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
				src.anchors[a.Name.GetToken().Value] = a.Value
			}
		}
		e := &pfErrs{f: f}
		src.check(reflect.TypeFor[PolicyFile](), src.root, nil, e, 0)
		if err := e.err(); err != nil {
			return nil, err
		}
		if err := yaml.NodeToValue(src.root, f, yaml.DisallowUnknownField()); err != nil {
			return nil, src.yamlError(err)
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

// yamlError wraps a goccy/go-yaml error.
func (s *pfSource) yamlError(err error) error {
	e := &PolicyFileError{File: s.name, Msg: err.Error(), formatted: yaml.FormatError(err, false, true), err: err}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e.Msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Column = tk.Position.Line, tk.Position.Column
		}
	}
	return e
}

// errorAt builds an error about path located at tk.
func (s *pfSource) errorAt(tk *token.Token, path pfPath, msg string) *PolicyFileError {
	e := &PolicyFileError{File: s.name, Path: path.String(), Msg: msg}
	text := msg
	if e.Path != "" {
		text = e.Path + ": " + msg
	}
	if tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
		e.formatted = yaml.FormatErrorWithToken(text, tk, false, true)
	}
	return e
}

// resolve follows anchors, aliases and tags to the node they stand for.
func (s *pfSource) resolve(n ast.Node) ast.Node {
	for range 64 {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return nil
			}
			n = s.anchors[v.Value.GetToken().Value]
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
	return nil
}

// pairs returns a mapping's key-value pairs, merge keys included.
func (s *pfSource) pairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch v := s.resolve(n).(type) {
	case *ast.MappingNode:
		return v.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}, true
	}
	return nil, false
}

func pfKey(k ast.MapKeyNode) string {
	if k == nil {
		return ""
	}
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	if tk := k.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

// locate returns the token to point at for path: the value of a scalar key,
// the key of a mapping or sequence, or the nearest ancestor found.
func (s *pfSource) locate(path pfPath) *token.Token {
	if s == nil || s.root == nil {
		return nil
	}
	n := s.root
	tk := n.GetToken()
	for _, k := range path {
		var next ast.Node
		var keyTok *token.Token
		switch k := k.(type) {
		case string:
			mv := s.find(n, k, 0)
			if mv != nil {
				next, keyTok = mv.Value, mv.Key.GetToken()
			}
		case int:
			if seq, ok := s.resolve(n).(*ast.SequenceNode); ok && k >= 0 && k < len(seq.Values) {
				next = seq.Values[k]
			}
		}
		if next == nil {
			return tk
		}
		n = next
		switch r := s.resolve(next).(type) {
		case *ast.MappingNode, *ast.MappingValueNode, *ast.SequenceNode, nil:
			if keyTok != nil {
				tk = keyTok
			} else if r != nil {
				tk = r.GetToken()
			}
		default:
			tk = next.GetToken()
		}
	}
	return tk
}

// find returns the pair with key k in mapping n, looking into merge keys.
func (s *pfSource) find(n ast.Node, k string, depth int) *ast.MappingValueNode {
	if depth > 8 {
		return nil
	}
	ps, _ := s.pairs(n)
	for _, mv := range ps {
		if mv.Key != nil && !mv.Key.IsMergeKey() && pfKey(mv.Key) == k {
			return mv
		}
	}
	for _, mv := range ps {
		if mv.Key == nil || !mv.Key.IsMergeKey() {
			continue
		}
		srcs := []ast.Node{mv.Value}
		if seq, ok := s.resolve(mv.Value).(*ast.SequenceNode); ok {
			srcs = seq.Values
		}
		for _, m := range srcs {
			if found := s.find(m, k, depth+1); found != nil {
				return found
			}
		}
	}
	return nil
}

var pfDurationType = reflect.TypeFor[Duration]()

// check verifies that node n can be read into type t without the
// conversions goccy/go-yaml allows (3.5 or "3" into an int, 3 into a
// string), reading durations as it goes, and without unknown keys (which
// goccy/go-yaml's DisallowUnknownField misses when they are not strings).
func (s *pfSource) check(t reflect.Type, n ast.Node, path pfPath, e *pfErrs, depth int) {
	s.visits++
	if s.visits > pfMaxVisits || depth > 64 {
		if s.visits == pfMaxVisits+1 || depth == 65 {
			e.add(path, "too deeply nested or too many aliases")
		}
		return
	}
	if n == nil {
		return
	}
	r := s.resolve(n)
	if r == nil {
		return
	}
	if _, ok := r.(*ast.NullNode); ok {
		return
	}
	if t == pfDurationType {
		if _, err := pfParseDuration(r); err != nil {
			e.addAt(r.GetToken(), path, err.Error())
		}
		return
	}
	bad := func(want string) { e.addAt(r.GetToken(), path, fmt.Sprintf("want %s, got %s", want, pfDescribe(r))) }
	switch t.Kind() {
	case reflect.Pointer:
		s.check(t.Elem(), n, path, e, depth+1)
	case reflect.Struct:
		ps, ok := s.pairs(r)
		if !ok {
			bad("a mapping")
			return
		}
		fields := pfFields(t)
		for _, mv := range ps {
			if mv.Key != nil && mv.Key.IsMergeKey() {
				srcs := []ast.Node{mv.Value}
				if seq, ok := s.resolve(mv.Value).(*ast.SequenceNode); ok {
					srcs = seq.Values
				}
				for _, m := range srcs {
					s.check(t, m, path, e, depth+1)
				}
				continue
			}
			k := pfKey(mv.Key)
			ft, ok := fields[k]
			if !ok {
				var tk *token.Token
				if mv.Key != nil {
					tk = mv.Key.GetToken()
				}
				hint := ""
				if near := pfNearest(k, fields); near != "" {
					hint = fmt.Sprintf(" (%s?)", near)
				}
				e.addAt(tk, path, fmt.Sprintf("unknown field %q%s: want %s", k, hint, pfFieldList(fields)))
				continue
			}
			s.check(ft, mv.Value, path.with(k), e, depth+1)
		}
	case reflect.Slice:
		seq, ok := r.(*ast.SequenceNode)
		if !ok {
			bad("a list")
			return
		}
		for i, v := range seq.Values {
			s.check(t.Elem(), v, path.with(i), e, depth+1)
		}
	case reflect.String:
		switch r.(type) {
		case *ast.StringNode, *ast.LiteralNode:
		default:
			bad("a string (quote it)")
		}
	case reflect.Int:
		if _, ok := r.(*ast.IntegerNode); !ok {
			bad("a whole number")
		}
	case reflect.Float64:
		switch r.(type) {
		case *ast.IntegerNode, *ast.FloatNode:
		default:
			bad("a finite number")
		}
	case reflect.Bool:
		if _, ok := r.(*ast.BoolNode); !ok {
			bad("true or false")
		}
	}
}

// pfFields maps a struct's YAML keys to field types, inline fields included.
func pfFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") {
			for k, v := range pfFields(sf.Type) {
				m[k] = v
			}
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		m[name] = sf.Type
	}
	return m
}

// pfFieldList lists a block's keys for error messages.
func pfFieldList(fields map[string]reflect.Type) string {
	keys := slices.Sorted(maps.Keys(fields))
	return strings.Join(keys, ", ")
}

// pfNearest returns the key closest to k if it is a likely typo of it.
func pfNearest(k string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if d := pfEditDistance(strings.ToLower(k), strings.ToLower(f)); d < bestD {
			best, bestD = f, d
		}
	}
	return best
}

// pfEditDistance is the Levenshtein distance between a and b (in bytes;
// keys are ASCII).
func pfEditDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// pfDescribe names a node's kind and value for error messages.
func pfDescribe(n ast.Node) string {
	switch v := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode:
		return strconv.Quote(v.Value)
	case *ast.LiteralNode:
		return "a block string"
	case *ast.NanNode, *ast.InfinityNode:
		return v.GetToken().Value
	case nil:
		return "nothing"
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return n.Type().String()
}

// pfErrs collects errors, locating them in the source when there is one.
type pfErrs struct {
	f    *PolicyFile
	list []error
	seen map[string]bool
}

const pfMaxErrors = 20

func (e *pfErrs) add(path pfPath, format string, args ...any) {
	var tk *token.Token
	if e.f.src != nil {
		tk = e.f.src.locate(path)
	}
	e.addAt(tk, path, fmt.Sprintf(format, args...))
}

func (e *pfErrs) addAt(tk *token.Token, path pfPath, msg string) {
	key := path.String() + "\x00" + msg
	if e.seen[key] || len(e.list) >= pfMaxErrors {
		return
	}
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	e.seen[key] = true
	name := ""
	if e.f.src != nil {
		name = e.f.src.name
	}
	src := &pfSource{name: name}
	e.list = append(e.list, src.errorAt(tk, path, msg))
}

func (e *pfErrs) err() error {
	switch len(e.list) {
	case 0:
		return nil
	case 1:
		return e.list[0]
	}
	return errors.Join(e.list...)
}

// ---------------------------------------------------------------------------
// Validation

// gRPC status code names (grpc/status codes, as the service config names them).
var pfGRPCCodes = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// Envoy retry_on conditions (x-envoy-retry-on and x-envoy-retry-grpc-on).
var pfEnvoyRetryOn = []string{"5xx", "gateway-error", "reset", "reset-before-request", "connect-failure",
	"envoy-ratelimited", "retriable-4xx", "refused-stream", "retriable-status-codes", "retriable-headers",
	"http3-post-connect-failure", "cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"}

var pfJitters = []string{JitterNone, JitterFull, JitterEqual, JitterDecorrelated, JitterProportional}

// Envoy's defaults (config.route.v3.RetryPolicy).
const (
	envoyDefaultNumRetries   = 1
	envoyDefaultBaseInterval = 25 * time.Millisecond
	envoyMaxIntervalFactor   = 10
	grpcMaxAttemptsLimit     = 5 // gRFC A6: larger maxAttempts are treated as 5
)

func (f *PolicyFile) validate() error {
	e := &pfErrs{f: f}
	if f.Default != nil {
		f.Default.validate(pfPath{"default"}, e)
	}
	type key struct{ caller, callee, op string }
	seen := map[key]int{}
	for i := range f.Edges {
		ep := &f.Edges[i]
		p := pfPath{"edges", i}
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
		case "", BudgetKindTokenBucket, BudgetKindRatio, BudgetKindAWS, BudgetKindNone:
		default:
			e.add(q.with("kind"), "%q: want %s, %s, %s or %s", b.Kind, BudgetKindTokenBucket, BudgetKindRatio, BudgetKindAWS, BudgetKindNone)
		}
		allowed := map[string][]string{BudgetKindTokenBucket: {"max", "ratio"}, BudgetKindRatio: {"ratio", "window"}}[b.Kind]
		for _, k := range []struct {
			key string
			set bool
		}{{"max", b.Max != nil}, {"ratio", b.Ratio != nil}, {"window", b.Window != nil}} {
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
		if _, _, err := s.budgetFactory(); err != nil {
			e.add(p.with(keys[0]), "%v", err)
		}
	}

	if s.MaxAttempts != nil && *s.MaxAttempts < 1 {
		e.add(p.with("maxAttempts"), "%d: want 1 or more (the first attempt counts)", *s.MaxAttempts)
	}
	if b := s.Backoff; b != nil {
		q := p.with("backoff")
		switch b.Kind {
		case "", BackoffImmediate, BackoffConstant, BackoffExponential:
		default:
			e.add(q.with("kind"), "%q: want %s, %s or %s", b.Kind, BackoffImmediate, BackoffConstant, BackoffExponential)
		}
		dur(q.with("base"), b.Base, false)
		dur(q.with("cap"), b.Cap, false)
		if x := b.Multiplier; x != nil && !(*x > 0 && pfFinite(*x)) {
			e.add(q.with("multiplier"), "%v: want a number > 0", *x)
		}
	}
	if s.Jitter != "" && !slices.Contains(pfJitters, s.Jitter) {
		e.add(p.with("jitter"), "%q: want %s", s.Jitter, strings.Join(pfJitters, ", "))
	}
	if x := s.JitterFraction; x != nil && !(*x >= 0 && *x <= 1) {
		e.add(p.with("jitterFraction"), "%v: want 0 to 1", *x)
	}
	if s.JitterFraction != nil && s.Jitter != "" && s.Jitter != JitterProportional {
		e.add(p.with("jitterFraction"), "applies to proportional jitter only, and this entry's jitter is %s", s.Jitter)
	}
	dur(p.with("perTryTimeout"), s.PerTryTimeout, false)
	dur(p.with("deadline"), s.Deadline, false)
	dur(p.with("hedgeAfter"), s.HedgeAfter, false)
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
		dur(q.with("window"), b.Window, true)
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

// budgetFactory returns the budget the entry sets: set is false when it
// sets none, and factory is nil for kind none. The parameters are checked
// here, once; the factory then builds fresh instances.
func (s *PolicySpec) budgetFactory() (factory func() Budget, set bool, err error) {
	fl := func(p *float64, def float64) float64 {
		if p == nil {
			return def
		}
		return *p
	}
	in := func(p *int, def int) int {
		if p == nil {
			return def
		}
		return *p
	}
	du := func(p *Duration, def float64) float64 {
		if p == nil {
			return def
		}
		return p.Seconds()
	}
	switch {
	case s.RetryThrottling != nil:
		t := s.RetryThrottling
		if t.MaxTokens == nil || t.TokenRatio == nil {
			return nil, true, fmt.Errorf("gRPC requires both maxTokens and tokenRatio")
		}
		mx, r := *t.MaxTokens, *t.TokenRatio
		if _, err := NewGRPCThrottle(mx, r); err != nil {
			return nil, true, err
		}
		return func() Budget { b, _ := NewGRPCThrottle(mx, r); return b }, true, nil
	case s.EnvoyRetryBudget != nil:
		pct := EnvoyDefaultBudgetPercent
		if s.EnvoyRetryBudget.BudgetPercent != nil {
			pct = s.EnvoyRetryBudget.BudgetPercent.Value
		}
		mn := in(s.EnvoyRetryBudget.MinRetryConcurrency, EnvoyDefaultMinRetryConcurrency)
		if _, err := NewEnvoyBudget(pct, mn); err != nil {
			return nil, true, err
		}
		return func() Budget { b, _ := NewEnvoyBudget(pct, mn); return b }, true, nil
	case s.Finagle != nil:
		ttl := du(s.Finagle.TTL, FinagleDefaultTTL)
		mn := in(s.Finagle.MinRetriesPerSec, FinagleDefaultMinRetriesPerSec)
		pct := fl(s.Finagle.PercentCanRetry, FinagleDefaultPercentCanRetry)
		if _, err := NewFinagleBudget(ttl, mn, pct); err != nil {
			return nil, true, err
		}
		return func() Budget { b, _ := NewFinagleBudget(ttl, mn, pct); return b }, true, nil
	case s.Budget != nil && s.Budget.Kind != "":
		b := s.Budget
		switch b.Kind {
		case BudgetKindTokenBucket:
			mx, r := fl(b.Max, TokenBucketDefaultMax), fl(b.Ratio, TokenBucketDefaultRatio)
			if _, err := NewTokenBucket(mx, r); err != nil {
				return nil, true, err
			}
			return func() Budget { b, _ := NewTokenBucket(mx, r); return b }, true, nil
		case BudgetKindRatio:
			r, w := fl(b.Ratio, 0.1), du(b.Window, RatioBudgetDefaultWindow)
			if _, err := NewRatioBudget(r, w); err != nil {
				return nil, true, err
			}
			return func() Budget { b, _ := NewRatioBudget(r, w); return b }, true, nil
		case BudgetKindAWS:
			return func() Budget { return NewAWSQuota() }, true, nil
		case BudgetKindNone:
			return nil, true, nil
		}
		return nil, true, fmt.Errorf("unknown budget kind %q", b.Kind)
	}
	return nil, false, nil
}

// ---------------------------------------------------------------------------
// Apply

// Apply returns a copy of m whose edge policies are overridden by the file:
// each edge's policy is the model's, then Default's keys, then the keys of
// the entries matching it (without operation, then with operation). An entry
// whose caller, callee or operation is not in the model is an error, as is
// an entry that matches no edge, and a resulting backoff or breaker that is
// inconsistent.
func (f *PolicyFile) Apply(m *Model) (*Model, error) {
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
	e := &pfErrs{f: f}
	for pass := range 2 {
		for j := range f.Edges {
			ep := &f.Edges[j]
			if (ep.Operation != "") != (pass == 1) {
				continue
			}
			for _, i := range f.match(out, j, e) {
				layers[i] = append(layers[i], layer{&ep.PolicySpec, pfPath{"edges", j}})
			}
		}
	}
	if err := e.err(); err != nil {
		return nil, err
	}
	factories := map[*PolicySpec]func() Budget{}
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
			fac, ok := factories[s]
			if !ok {
				var set bool
				var err error
				fac, set, err = s.budgetFactory()
				if err != nil {
					return nil, err // validate caught it already
				}
				if !set {
					fac = nil
				}
				factories[s] = fac
			}
			if keys := s.budgetKeys(); len(keys) > 0 {
				p.Budget = fac
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
		if breakerBy != nil && p.Breaker != nil {
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
func (f *PolicyFile) DeclareIdempotency(m *Model) (*Model, error) {
	only := &PolicyFile{src: f.src}
	if f.Default != nil {
		only.Default = &PolicySpec{Idempotent: f.Default.Idempotent}
	}
	for _, ep := range f.Edges {
		only.Edges = append(only.Edges, EdgePolicy{Caller: ep.Caller, Callee: ep.Callee, Operation: ep.Operation,
			PolicySpec: PolicySpec{Idempotent: ep.Idempotent}})
	}
	return only.Apply(m)
}

// applyTo overrides p with the entry's keys (all but the budget), returning
// a problem that needs the edge's policy to be seen.
func (s *PolicySpec) applyTo(p *Policy) string {
	if rp := s.RetryPolicy; rp != nil {
		p.MaxAttempts = min(*rp.MaxAttempts, grpcMaxAttemptsLimit)
		p.Backoff = Backoff{Kind: BackoffExponential, Base: rp.InitialBackoff.Seconds(),
			Multiplier: *rp.BackoffMultiplier, Cap: rp.MaxBackoff.Seconds(), Jitter: JitterFull}
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
		p.Backoff = Backoff{Kind: BackoffExponential, Base: base.Seconds(), Multiplier: 2, Cap: maxi.Seconds(), Jitter: JitterFull}
		if ep.PerTryTimeout != nil {
			p.PerTryTimeout = ep.PerTryTimeout.Seconds()
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
		if b.Cap != nil {
			p.Backoff.Cap = b.Cap.Seconds()
		}
		if (p.Backoff.Kind == "" || p.Backoff.Kind == BackoffImmediate) && (b.Base != nil || b.Multiplier != nil || b.Cap != nil) {
			problem = "backoff: its backoff is immediate, which has no base, multiplier or cap; give backoff.kind"
		}
	}
	if s.Jitter != "" {
		p.Backoff.Jitter = s.Jitter
	}
	if s.JitterFraction != nil {
		p.Backoff.Fraction = *s.JitterFraction
		if p.Backoff.Jitter != JitterProportional {
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
	if b := s.Breaker; b != nil {
		if b.Disabled {
			p.Breaker = nil
		} else {
			var c BreakerConfig
			if p.Breaker != nil {
				c = *p.Breaker
			}
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
			p.Breaker = &c
		}
	}
	return problem
}

// match returns the edges entry j matches, reporting names not in the model.
func (f *PolicyFile) match(m *Model, j int, e *pfErrs) []int {
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
		return slices.ContainsFunc(m.Services, func(s Service) bool { return s.Name == name })
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

func pfIn(m *Model, svc int) bool { return svc >= 0 && svc < len(m.Services) }

func pfEdgeName(m *Model, ed *Edge) string {
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
// operations, edges, policies and breakers leaves m alone.
func pfCloneModel(m *Model) *Model {
	c := *m
	c.Services = slices.Clone(m.Services)
	for i := range c.Services {
		c.Services[i].Ops = slices.Clone(c.Services[i].Ops)
		for j := range c.Services[i].Ops {
			c.Services[i].Ops[j].Calls = slices.Clone(c.Services[i].Ops[j].Calls)
		}
	}
	c.Edges = slices.Clone(m.Edges)
	for i := range c.Edges {
		if b := c.Edges[i].Policy.Breaker; b != nil {
			cp := *b
			c.Edges[i].Policy.Breaker = &cp
		}
	}
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

// pfMarshalString writes a string plain when YAML reads it back as the same
// string, and double-quoted otherwise: goccy/go-yaml v1.19.2 writes some
// strings plain that then read back as something else (".inf", ".nan",
// "? a").
func pfMarshalString(s string) ([]byte, error) {
	if pfPlainSafe(s) {
		return []byte(s), nil
	}
	// Go's quoting of valid UTF-8 uses only escapes YAML's double-quoted
	// style shares (\n, \t, \", \\, \xNN, \uNNNN, \UNNNNNNNN).
	return []byte(strconv.Quote(s)), nil
}

// pfPlainSafe reports whether s reads back as s when written plain as a
// mapping value.
func pfPlainSafe(s string) bool {
	if s == "" || !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return false
	}
	file, err := parser.ParseBytes([]byte("k: "+s+"\n"), 0)
	if err != nil || len(file.Docs) != 1 || file.Docs[0] == nil {
		return false
	}
	m, ok := file.Docs[0].Body.(*ast.MappingNode)
	if !ok || len(m.Values) != 1 {
		return false
	}
	v, ok := m.Values[0].Value.(*ast.StringNode)
	return ok && v.Value == s && v.Token != nil && v.Token.Type == token.StringType
}
