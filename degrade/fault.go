package degrade

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind names a fault model.
type Kind string

// The fault models. Each is written in a spec as KIND:KEY=VALUE,...; see
// [Kind.Form] for the keys of each.
const (
	// SlowShard makes one shard of a service's keyspace x times slower. A
	// request's key decides its shard, so every attempt and hedge of it
	// lands on the same shard.
	SlowShard Kind = "slow-shard"
	// SlowReplica makes one of a service's replicas (instances behind a
	// load balancer) x times slower. Every attempt picks a replica at
	// random, so a retry or a hedge may land on a healthy one.
	SlowReplica Kind = "slow-replica"
	// HotPartition skews the keys of a service onto shard 0 (Zipf).
	HotPartition Kind = "hot-partition"
	// PacketLoss loses attempts (or their responses) into a service, or on
	// one edge, with probability p.
	PacketLoss Kind = "packet-loss"
	// DBPool caps a dependency's concurrency at k (a saturated pool).
	DBPool Kind = "db-pool"
	// Outage takes a service down: it refuses connections (fails fast,
	// the default), hangs (never answers), or does its work and then
	// answers 5xx.
	Outage Kind = "outage"
	// ErrorRate makes a fraction p of the attempts to a service fail, fast
	// or (mode=error-after-work) after doing their work.
	ErrorRate Kind = "error-rate"
	// Latency adds a fixed delay to, or multiplies, a service's service time.
	Latency Kind = "latency"
)

// Defaults and limits of the spec values.
const (
	// DefaultShards is the shard count of slow-shard and hot-partition.
	DefaultShards = 8
	// DefaultReplicas is the replica count of slow-replica.
	DefaultReplicas = 4
	// MaxShards bounds shards=N: the simulator keeps a queue per shard.
	MaxShards = 1024
	// DefaultFactor is how many times slower a slow shard is.
	DefaultFactor = 10.0
	// MaxFactor bounds x=K.
	MaxFactor = 1e6
	// DefaultSkew is the Zipf exponent of a hot partition.
	DefaultSkew = 1.2
	// MaxDuration bounds every duration (at=, for=, add=): one year of
	// simulated time, well inside the range where a duration survives the
	// trip through float64 seconds to the nanosecond.
	MaxDuration = 365 * 24 * time.Hour
	// ModeError is the outage mode that fails attempts fast, before they
	// queue (connection refused, or a 503 from a load balancer with no
	// healthy upstream; spelled fast-fail too). It is the default: it is
	// what a crashed process or a drained backend gives, and it tests
	// retries without hiding their cost behind timeouts.
	ModeError = "error"
	// ModeTimeout is the outage mode that never answers (spelled hang
	// too): every packet to the service is lost, the caller's TCP
	// retransmits and resets the connection after a few tries.
	ModeTimeout = "timeout"
	// ModeAfterWork is the mode that lets attempts queue and be served,
	// then answers 5xx: errors cost capacity. Whether a response fails is
	// decided when its work ends.
	ModeAfterWork = "error-after-work"
)

// Fault is one parsed degradation. Parse fills the defaults of the optional
// keys; fields a kind does not use are zero.
type Fault struct {
	Kind Kind
	// Service is the degraded service (svc=NAME). For packet-loss it is the
	// callee, given either by svc=NAME (every edge into it) or by
	// edge=CALLER->CALLEE (one edge).
	Service string
	// Caller restricts a packet-loss to the edge from Caller to Service
	// (edge=CALLER->CALLEE); empty with svc=, and for every other kind.
	Caller string
	// At is when the fault starts and For how long it lasts, in simulated
	// seconds (at=10s, for=3s). For == 0 means until the end of the run.
	At, For float64
	// Shards is the number of shards of a slow-shard or hot-partition
	// (shards=N, default 8), or of replicas of a slow-replica (replicas=N,
	// default 4).
	Shards int
	// Shard is the slow shard of a slow-shard (shard=I, default 0), or the
	// slow replica of a slow-replica (replica=I, default 0).
	Shard int
	// Factor multiplies the service time: of the slow shard or replica
	// (x=K, default 10), of the service for latency (x=K, optional; 0 when
	// absent).
	Factor float64
	// Skew is the Zipf exponent of a hot-partition (zipf=S, default 1.2):
	// shard 0 is the hottest.
	Skew float64
	// Loss is the probability a packet-loss loses an attempt (p=).
	Loss float64
	// Limit is the concurrency a db-pool caps the service at (k=).
	Limit int
	// Rate is the fraction of attempts an error-rate fails fast (p=).
	Rate float64
	// Add is the service time a latency adds, in seconds (add=200ms).
	Add float64
	// Mode is how an outage fails: "error" (fail fast, the default),
	// "timeout" (no answer) or "error-after-work" (serve, then answer 5xx);
	// and how an error-rate fails: "error" (the default) or
	// "error-after-work". Parse accepts fast-fail for error and hang for
	// timeout.
	Mode string
}

// kindInfo describes the spec of one kind.
type kindInfo struct {
	form    string   // expected form, after "KIND:"
	example string   // a valid spec, after "KIND:"
	keys    []string // keys besides svc=, at=, for=, in canonical order
}

// kindOrder lists the kinds in the order errors and help list them.
var kindOrder = []Kind{SlowShard, SlowReplica, HotPartition, PacketLoss, DBPool, Outage, ErrorRate, Latency}

var kindInfos = map[Kind]kindInfo{
	SlowShard: {
		form:    "svc=NAME,at=DURATION,for=DURATION[,shards=N][,shard=I][,x=K]",
		example: "svc=db,at=10s,for=30s,shard=3,x=10",
		keys:    []string{"shards", "shard", "x"},
	},
	SlowReplica: {
		form:    "svc=NAME,at=DURATION,for=DURATION[,replicas=N][,replica=I][,x=K]",
		example: "svc=api,at=10s,for=30s,replicas=4,x=10",
		keys:    []string{"replicas", "replica", "x"},
	},
	HotPartition: {
		form:    "svc=NAME,at=DURATION,for=DURATION[,shards=N][,zipf=S]",
		example: "svc=cache,at=10s,for=30s,zipf=1.5",
		keys:    []string{"shards", "zipf"},
	},
	PacketLoss: {
		form:    "svc=NAME|edge=CALLER->CALLEE,at=DURATION,for=DURATION,p=PROB",
		example: "edge=api->db,at=10s,for=30s,p=0.2",
		keys:    []string{"edge", "p"},
	},
	DBPool: {
		form:    "svc=NAME,at=DURATION,for=DURATION,k=N",
		example: "svc=db,at=10s,for=30s,k=2",
		keys:    []string{"k"},
	},
	Outage: {
		form:    "svc=NAME,at=DURATION,for=DURATION[,mode=error|timeout|error-after-work]",
		example: "svc=db,at=10s,for=3s,mode=timeout",
		keys:    []string{"mode"},
	},
	ErrorRate: {
		form:    "svc=NAME,at=DURATION,for=DURATION,p=PROB[,mode=error|error-after-work]",
		example: "svc=payments,at=10s,for=30s,p=0.3",
		keys:    []string{"p", "mode"},
	},
	Latency: {
		form:    "svc=NAME,at=DURATION,for=DURATION[,add=DURATION][,x=K] (add= or x= required)",
		example: "svc=db,at=10s,for=30s,add=200ms",
		keys:    []string{"add", "x"},
	},
}

// Kinds returns every fault kind, in a fixed order.
func Kinds() []Kind {
	return append([]Kind(nil), kindOrder...)
}

// Form returns the expected spec of kind k, e.g.
// "outage:svc=NAME,at=DURATION,for=DURATION[,mode=error|timeout|error-after-work]", or ""
// for an unknown kind.
func (k Kind) Form() string {
	info, ok := kindInfos[k]
	if !ok {
		return ""
	}
	return string(k) + ":" + info.form
}

// Example returns a valid spec of kind k, or "" for an unknown kind.
func (k Kind) Example() string {
	info, ok := kindInfos[k]
	if !ok {
		return ""
	}
	return string(k) + ":" + info.example
}

// SpecError is the error Parse, ParseAll and Validate return for a bad spec.
// Its message names the spec, the problem and the expected form of the kind
// (or, for an unknown kind, every kind with an example).
type SpecError struct {
	Spec    string // the spec as given (for Validate, the fault's String)
	Kind    Kind   // the kind, or "" when it is not one of Kinds
	Problem string // what is wrong, e.g. "missing for="
}

// Error formats the error as
// `degrade "SPEC": PROBLEM; want FORM`.
func (e *SpecError) Error() string {
	if form := e.Kind.Form(); form != "" {
		return fmt.Sprintf("degrade %q: %s; want %s", e.Spec, e.Problem, form)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "degrade %q: %s; want KIND:KEY=VALUE,... with KIND one of ", e.Spec, e.Problem)
	for i, k := range kindOrder {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (e.g. %s)", k, k.Example())
	}
	return b.String()
}

// Parse reads one fault spec, KIND:KEY=VALUE,..., e.g.
// "outage:svc=db,at=10s,for=3s". Keys may come in any order; durations are
// Go durations ("10s", "250ms", "1.5s"), probabilities lie in [0,1] and
// counts are > 0. The error of a bad spec is a *SpecError that shows the
// expected form.
func Parse(spec string) (Fault, error) {
	kindText, rest, _ := strings.Cut(spec, ":")
	kind := Kind(strings.ToLower(strings.TrimSpace(kindText)))
	if kind == Observed {
		return parseObserved(spec, strings.TrimSpace(rest))
	}
	info, ok := kindInfos[kind]
	if !ok {
		problem := fmt.Sprintf("unknown kind %q", strings.TrimSpace(kindText))
		if strings.TrimSpace(kindText) == "" {
			problem = "missing kind"
		}
		return Fault{}, &SpecError{Spec: spec, Problem: problem}
	}
	fail := func(format string, args ...any) (Fault, error) {
		return Fault{}, &SpecError{Spec: spec, Kind: kind, Problem: fmt.Sprintf(format, args...)}
	}

	f := Fault{Kind: kind}
	switch kind {
	case SlowShard:
		f.Shards, f.Factor = DefaultShards, DefaultFactor
	case SlowReplica:
		f.Shards, f.Factor = DefaultReplicas, DefaultFactor
	case HotPartition:
		f.Shards, f.Skew = DefaultShards, DefaultSkew
	case Outage, ErrorRate:
		f.Mode = ModeError
	}

	seen := make(map[string]bool)
	if strings.TrimSpace(rest) != "" {
		for pair := range strings.SplitSeq(rest, ",") {
			rawKey, value, hasEq := strings.Cut(pair, "=")
			key := strings.ToLower(strings.TrimSpace(rawKey))
			value = strings.TrimSpace(value)
			if !hasEq || key == "" {
				return fail("%q is not KEY=VALUE", strings.TrimSpace(pair))
			}
			if !allowed(info, key) {
				return fail("unknown key %s= for %s", key, kind)
			}
			if seen[key] {
				return fail("duplicate key %s=", key)
			}
			seen[key] = true
			if value == "" {
				return fail("empty %s=", key)
			}
			if problem := f.set(key, value); problem != "" {
				return fail("%s", problem)
			}
		}
	}

	var missing []string
	switch {
	case seen["svc"] && seen["edge"]:
		return fail("svc= and edge= exclude each other")
	case !seen["svc"] && !seen["edge"]:
		if kind == PacketLoss {
			missing = append(missing, "svc= or edge=")
		} else {
			missing = append(missing, "svc=")
		}
	}
	for _, key := range []string{"at", "for"} {
		if !seen[key] {
			missing = append(missing, key+"=")
		}
	}
	switch kind {
	case PacketLoss, ErrorRate:
		if !seen["p"] {
			missing = append(missing, "p=")
		}
	case DBPool:
		if !seen["k"] {
			missing = append(missing, "k=")
		}
	case Latency:
		if !seen["add"] && !seen["x"] {
			missing = append(missing, "add= or x=")
		}
	}
	if len(missing) > 0 {
		return fail("missing %s", strings.Join(missing, ", "))
	}
	if problem := f.check(); problem != "" {
		return fail("%s", problem)
	}
	return f, nil
}

// allowed reports whether key belongs in a spec of the kind described by info.
func allowed(info kindInfo, key string) bool {
	switch key {
	case "svc", "at", "for":
		return true
	}
	return slices.Contains(info.keys, key)
}

// set parses one key's value into f and returns the problem, or "".
// Ranges that depend on other keys are left to check.
func (f *Fault) set(key, value string) string {
	var problem string
	switch key {
	case "svc":
		f.Service, problem = value, nameProblem(value)
	case "edge":
		caller, callee, ok := strings.Cut(value, "->")
		caller, callee = strings.TrimSpace(caller), strings.TrimSpace(callee)
		if !ok || caller == "" || callee == "" {
			return fmt.Sprintf("edge=%s: want CALLER->CALLEE", value)
		}
		if problem = nameProblem(caller); problem == "" {
			problem = nameProblem(callee)
		}
		f.Caller, f.Service = caller, callee
	case "at":
		f.At, problem = parseDuration(value)
	case "for":
		f.For, problem = parseDuration(value)
	case "add":
		f.Add, problem = parseDuration(value)
		if problem == "" && f.Add == 0 {
			problem = "want a duration > 0"
		}
	case "shards", "replicas":
		f.Shards, problem = parseInt(value)
	case "shard", "replica":
		f.Shard, problem = parseInt(value)
	case "k":
		f.Limit, problem = parseInt(value)
	case "x":
		if f.Factor, problem = parseFloat(value); problem == "" && factorProblem(f.Factor) != "" {
			return factorProblem(f.Factor)
		}
	case "zipf":
		f.Skew, problem = parseFloat(value)
	case "p":
		var p float64
		p, problem = parseFloat(value)
		if f.Kind == PacketLoss {
			f.Loss = p
		} else {
			f.Rate = p
		}
	case "mode":
		f.Mode = strings.ToLower(value)
		switch f.Mode {
		case "fast-fail":
			f.Mode = ModeError
		case "hang":
			f.Mode = ModeTimeout
		}
		if p := f.modeProblem(); p != "" {
			return p
		}
	}
	if problem != "" {
		return key + "=" + value + ": " + problem
	}
	return ""
}

// nameProblem says what is wrong with a service name, or "".
func nameProblem(name string) string {
	switch {
	case name == "":
		return "empty name"
	case !utf8.ValidString(name):
		return "name is not valid UTF-8"
	case strings.Contains(name, "="), strings.Contains(name, "->"):
		return `a name cannot contain "=" or "->"`
	case strings.TrimSpace(name) != name:
		return "name has surrounding space"
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "name has control characters"
	}
	return ""
}

func parseDuration(s string) (float64, string) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, "not a duration (want e.g. 10s, 250ms, 1.5s)"
	}
	if d < 0 || d > MaxDuration {
		return 0, fmt.Sprintf("out of range [0s,%v]", MaxDuration)
	}
	return d.Seconds(), ""
}

func parseInt(s string) (int, string) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, "not an integer"
	}
	return n, ""
}

func parseFloat(s string) (float64, string) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, "not a finite number"
	}
	return x, ""
}

// Validate reports whether f is a fault Parse could have returned: a known
// kind, a valid service name, values in range and no field set that its
// kind does not use. For a valid fault, Parse(f.String()) returns f.
func (f Fault) Validate() error {
	if f.Kind == Observed && f == (Fault{Kind: Observed}) {
		return nil
	}
	if _, ok := kindInfos[f.Kind]; !ok {
		return &SpecError{Spec: f.String(), Problem: fmt.Sprintf("unknown kind %q", string(f.Kind))}
	}
	problem := nameProblem(f.Service)
	if problem != "" {
		problem = "svc=" + f.Service + ": " + problem
	} else if f.Caller != "" {
		if p := nameProblem(f.Caller); p != "" {
			problem = "edge=" + f.Caller + "->" + f.Service + ": " + p
		}
	}
	if problem == "" {
		problem = f.check()
	}
	if problem == "" {
		problem = f.unused()
	}
	if problem != "" {
		return &SpecError{Spec: f.String(), Kind: f.Kind, Problem: problem}
	}
	return nil
}

// check returns the first out-of-range value of f, or "".
func (f Fault) check() string {
	if p := durationProblem("at", f.At, false); p != "" {
		return p
	}
	if p := durationProblem("for", f.For, false); p != "" {
		return p
	}
	unit := "shard"
	if f.Kind == SlowReplica {
		unit = "replica"
	}
	switch f.Kind {
	case SlowShard, SlowReplica, HotPartition:
		if f.Shards < 1 || f.Shards > MaxShards {
			return fmt.Sprintf("%ss=%d: out of range [1,%d]", unit, f.Shards, MaxShards)
		}
	}
	switch f.Kind {
	case SlowShard, SlowReplica:
		if f.Shard < 0 || f.Shard >= f.Shards {
			return fmt.Sprintf("%s=%d: out of range [0,%d) for %ss=%d", unit, f.Shard, f.Shards, unit, f.Shards)
		}
		return factorProblem(f.Factor)
	case HotPartition:
		if !(f.Skew > 0) || math.IsInf(f.Skew, 0) {
			return fmt.Sprintf("zipf=%s: want a finite exponent > 0", formatFloat(f.Skew))
		}
	case PacketLoss:
		return probProblem(f.Loss)
	case ErrorRate:
		if p := f.modeProblem(); p != "" {
			return p
		}
		return probProblem(f.Rate)
	case DBPool:
		if f.Limit < 1 {
			return fmt.Sprintf("k=%d: want an integer > 0", f.Limit)
		}
	case Outage:
		return f.modeProblem()
	case Latency:
		if f.Add == 0 && f.Factor == 0 {
			return "missing add= or x="
		}
		if f.Add != 0 {
			if p := durationProblem("add", f.Add, true); p != "" {
				return p
			}
		}
		if f.Factor != 0 {
			return factorProblem(f.Factor)
		}
	}
	return ""
}

// modeProblem says what is wrong with f's mode for its kind, or "".
func (f Fault) modeProblem() string {
	switch {
	case f.Mode == ModeError, f.Mode == ModeAfterWork:
		return ""
	case f.Mode == ModeTimeout && f.Kind == Outage:
		return ""
	case f.Kind == Outage:
		return fmt.Sprintf("mode=%s: want error (fast-fail), timeout (hang) or error-after-work", f.Mode)
	}
	return fmt.Sprintf("mode=%s: want error or error-after-work", f.Mode)
}

// unused returns the first field f sets that its kind does not use, or "".
func (f Fault) unused() string {
	fields := []struct {
		name  string
		set   bool
		kinds []Kind // the kinds that use the field
	}{
		{"Caller", f.Caller != "", []Kind{PacketLoss}},
		{"Shards", f.Shards != 0, []Kind{SlowShard, SlowReplica, HotPartition}},
		{"Shard", f.Shard != 0, []Kind{SlowShard, SlowReplica}},
		{"Factor", f.Factor != 0, []Kind{SlowShard, SlowReplica, Latency}},
		{"Skew", f.Skew != 0, []Kind{HotPartition}},
		{"Loss", f.Loss != 0, []Kind{PacketLoss}},
		{"Limit", f.Limit != 0, []Kind{DBPool}},
		{"Rate", f.Rate != 0, []Kind{ErrorRate}},
		{"Add", f.Add != 0, []Kind{Latency}},
		{"Mode", f.Mode != "", []Kind{Outage, ErrorRate}},
	}
	for _, fl := range fields {
		if fl.set && !slices.Contains(fl.kinds, f.Kind) {
			return fmt.Sprintf("field %s is not used by %s", fl.name, f.Kind)
		}
	}
	return ""
}

func durationProblem(key string, secs float64, positive bool) string {
	if _, ok := secondsToDuration(secs); !ok {
		return fmt.Sprintf("%s=%s: out of range [0s,%v]", key, formatDuration(secs), MaxDuration)
	}
	if positive && secs == 0 {
		return fmt.Sprintf("%s=0s: want a duration > 0", key)
	}
	return ""
}

func factorProblem(x float64) string {
	if !(x >= 1 && x <= MaxFactor) {
		return fmt.Sprintf("x=%s: out of range [1,%s]", formatFloat(x), formatFloat(MaxFactor))
	}
	return ""
}

func probProblem(p float64) string {
	if !(p >= 0 && p <= 1) {
		return fmt.Sprintf("p=%s: out of range [0,1]", formatFloat(p))
	}
	return ""
}

// secondsToDuration finds the duration whose Seconds() is exactly secs, so
// that formatting it and parsing it back gives secs again.
func secondsToDuration(secs float64) (time.Duration, bool) {
	if !(secs >= 0 && secs <= MaxDuration.Seconds()) {
		return 0, false
	}
	d := time.Duration(math.Round(secs * 1e9))
	for delta := time.Duration(0); delta <= 64; delta++ {
		if c := d + delta; c <= MaxDuration && c.Seconds() == secs {
			return c, true
		}
		if c := d - delta; c >= 0 && c.Seconds() == secs {
			return c, true
		}
	}
	return 0, false
}

// formatDuration writes seconds as a Go duration ("10s", "250ms", "1m30s").
func formatDuration(secs float64) string {
	if d, ok := secondsToDuration(secs); ok {
		return d.String()
	}
	return strconv.FormatFloat(secs, 'f', -1, 64) + "s"
}

func formatFloat(x float64) string {
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// String returns the canonical spec of f: the kind, svc= (or edge=), at=,
// for=, then the kind's own keys in a fixed order, defaults included (but
// an error-rate's default mode), e.g.
// "slow-shard:svc=db,at=10s,for=30s,shards=8,shard=0,x=10". Parse reads it
// back to f.
func (f Fault) String() string {
	if f.Kind == Observed {
		return string(Observed)
	}
	var b strings.Builder
	b.WriteString(string(f.Kind))
	b.WriteByte(':')
	if f.Caller != "" {
		fmt.Fprintf(&b, "edge=%s->%s", f.Caller, f.Service)
	} else {
		fmt.Fprintf(&b, "svc=%s", f.Service)
	}
	fmt.Fprintf(&b, ",at=%s,for=%s", formatDuration(f.At), formatDuration(f.For))
	switch f.Kind {
	case SlowShard:
		fmt.Fprintf(&b, ",shards=%d,shard=%d,x=%s", f.Shards, f.Shard, formatFloat(f.Factor))
	case SlowReplica:
		fmt.Fprintf(&b, ",replicas=%d,replica=%d,x=%s", f.Shards, f.Shard, formatFloat(f.Factor))
	case HotPartition:
		fmt.Fprintf(&b, ",shards=%d,zipf=%s", f.Shards, formatFloat(f.Skew))
	case PacketLoss:
		fmt.Fprintf(&b, ",p=%s", formatFloat(f.Loss))
	case DBPool:
		fmt.Fprintf(&b, ",k=%d", f.Limit)
	case Outage:
		fmt.Fprintf(&b, ",mode=%s", f.Mode)
	case ErrorRate:
		fmt.Fprintf(&b, ",p=%s", formatFloat(f.Rate))
		if f.Mode != ModeError {
			// The default mode is left out, so the names of existing
			// error-rate degradations do not change.
			fmt.Fprintf(&b, ",mode=%s", f.Mode)
		}
	case Latency:
		if f.Add != 0 {
			fmt.Fprintf(&b, ",add=%s", formatDuration(f.Add))
		}
		if f.Factor != 0 {
			fmt.Fprintf(&b, ",x=%s", formatFloat(f.Factor))
		}
	}
	return b.String()
}

// Active reports whether the fault is in force at simulated time t:
// At ≤ t < At+For, or t ≥ At when For == 0.
func (f Fault) Active(t float64) bool {
	if t < f.At {
		return false
	}
	return f.For == 0 || t < f.At+f.For
}

// End is when the fault stops, At+For, or +Inf when For == 0.
func (f Fault) End() float64 {
	if f.For == 0 {
		return math.Inf(1)
	}
	return f.At + f.For
}
