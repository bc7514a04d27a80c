package policyfile

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/retryaudit/retryaudit/replay"
)

// EnvoyRetryPolicy is Envoy's config.route.v3.RetryPolicy: the keys the
// simulator uses (retry_on, num_retries, per_try_timeout, retry_back_off,
// rate_limited_retry_back_off as honouring Retry-After) and those it reads
// to compare with traces (retriable_status_codes) or keeps without effect
// (retry_host_predicate, host_selection_retry_max_attempts).
type EnvoyRetryPolicy struct {
	RetryOn                 string                   `yaml:"retry_on,omitempty"`
	NumRetries              *int                     `yaml:"num_retries,omitempty"`
	PerTryTimeout           *Duration                `yaml:"per_try_timeout,omitempty"`
	RetryBackOff            *EnvoyRetryBackOff       `yaml:"retry_back_off,omitempty"`
	RateLimitedRetryBackOff *EnvoyRateLimitedBackOff `yaml:"rate_limited_retry_back_off,omitempty"`
	RetriableStatusCodes    []int                    `yaml:"retriable_status_codes,omitempty"`
	RetryHostPredicate      []EnvoyExtension         `yaml:"retry_host_predicate,omitempty"`
	// HostSelectionRetryMaxAttempts is an int64: protobuf JSON writes it
	// as a string ("5"), YAML by hand as a number.
	HostSelectionRetryMaxAttempts any `yaml:"host_selection_retry_max_attempts,omitempty"`
}

// EnvoyRateLimitedBackOff is RetryPolicy.RateLimitedRetryBackOff: waits
// read from response headers such as Retry-After.
type EnvoyRateLimitedBackOff struct {
	ResetHeaders []EnvoyResetHeader `yaml:"reset_headers,omitempty"`
	MaxInterval  *Duration          `yaml:"max_interval,omitempty"`
}

// EnvoyResetHeader is RetryPolicy.ResetHeader.
type EnvoyResetHeader struct {
	Name   string `yaml:"name"`
	Format string `yaml:"format,omitempty"` // SECONDS or UNIX_TIMESTAMP
}

// EnvoyExtension is an Envoy TypedExtensionConfig (name and typed_config),
// kept as written.
type EnvoyExtension struct {
	Name        string         `yaml:"name"`
	TypedConfig map[string]any `yaml:"typed_config,omitempty"`
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

// Envoy retry_on conditions (x-envoy-retry-on and x-envoy-retry-grpc-on).
var pfEnvoyRetryOn = []string{"5xx", "gateway-error", "reset", "reset-before-request", "connect-failure",
	"envoy-ratelimited", "retriable-4xx", "refused-stream", "retriable-status-codes", "retriable-headers",
	"http3-post-connect-failure", "cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"}

// Envoy's defaults (config.route.v3.RetryPolicy).
const (
	envoyDefaultNumRetries   = 1
	envoyDefaultBaseInterval = 25 * time.Millisecond
	envoyMaxIntervalFactor   = 10
	grpcMaxAttemptsLimit     = 5 // gRFC A6: larger maxAttempts are treated as 5
)

// spec is Envoy's retry budget, with Envoy's defaults for absent keys.
func (b *EnvoyRetryBudget) spec() replay.BudgetSpec {
	pct := replay.EnvoyDefaultBudgetPercent
	if b.BudgetPercent != nil {
		pct = b.BudgetPercent.Value
	}
	return replay.BudgetSpec{Kind: replay.BudgetEnvoy, Percent: pct, Min: pfOr(b.MinRetryConcurrency, replay.EnvoyDefaultMinRetryConcurrency)}
}

// Envoy's RouteConfiguration and Cluster, as far as retries go; other keys
// are kept out of the simulation and listed as ignored.
type envoyRouteConfig struct {
	Name         string             `yaml:"name,omitempty"`
	VirtualHosts []envoyVirtualHost `yaml:"virtual_hosts"` // written when empty: the key tells an Envoy file
}

type envoyVirtualHost struct {
	Name        string            `yaml:"name"`
	Domains     []string          `yaml:"domains"`
	Routes      []envoyRoute      `yaml:"routes,omitempty"`
	RetryPolicy *EnvoyRetryPolicy `yaml:"retry_policy,omitempty"`
	HedgePolicy *envoyHedgePolicy `yaml:"hedge_policy,omitempty"`
}

type envoyRoute struct {
	Name  string            `yaml:"name,omitempty"`
	Match envoyRouteMatch   `yaml:"match"`
	Route *envoyRouteAction `yaml:"route,omitempty"`
}

type envoyRouteMatch struct {
	Prefix    string             `yaml:"prefix,omitempty"`
	Path      string             `yaml:"path,omitempty"`
	SafeRegex *envoyRegex        `yaml:"safe_regex,omitempty"`
	Headers   []envoyRouteHeader `yaml:"headers,omitempty"`
}

type envoyRegex struct {
	Regex string `yaml:"regex"`
}

type envoyRouteHeader struct {
	Name        string            `yaml:"name"`
	StringMatch *envoyStringMatch `yaml:"string_match,omitempty"`
}

type envoyStringMatch struct {
	Exact string `yaml:"exact,omitempty"`
}

type envoyRouteAction struct {
	Cluster          string `yaml:"cluster,omitempty"`
	WeightedClusters *struct {
		Clusters []struct {
			Name string `yaml:"name"`
		} `yaml:"clusters"`
	} `yaml:"weighted_clusters,omitempty"`
	Timeout     *Duration         `yaml:"timeout,omitempty"`
	RetryPolicy *EnvoyRetryPolicy `yaml:"retry_policy,omitempty"`
	HedgePolicy *envoyHedgePolicy `yaml:"hedge_policy,omitempty"`
}

// clusters are the clusters a route sends to.
func (a *envoyRouteAction) clusters() []string {
	if a.Cluster != "" {
		return []string{a.Cluster}
	}
	var out []string
	if a.WeightedClusters != nil {
		for _, c := range a.WeightedClusters.Clusters {
			out = append(out, c.Name)
		}
	}
	return out
}

type envoyHedgePolicy struct {
	HedgeOnPerTryTimeout bool `yaml:"hedge_on_per_try_timeout,omitempty"`
}

type envoyCluster struct {
	Name             string                 `yaml:"name"`
	CircuitBreakers  *envoyCircuitBreakers  `yaml:"circuit_breakers,omitempty"`
	OutlierDetection *envoyOutlierDetection `yaml:"outlier_detection,omitempty"`
}

// envoyOutlierDetection is Cluster.outlier_detection as far as
// consecutive failures go: Envoy ejects a host after consecutive_5xx
// failures for base_ejection_time (longer each time it is ejected again).
type envoyOutlierDetection struct {
	Consecutive5xx     *int      `yaml:"consecutive_5xx,omitempty"`
	Interval           *Duration `yaml:"interval,omitempty"`
	BaseEjectionTime   *Duration `yaml:"base_ejection_time,omitempty"`
	MaxEjectionPercent *int      `yaml:"max_ejection_percent,omitempty"`
}

type envoyCircuitBreakers struct {
	Thresholds []envoyThresholds `yaml:"thresholds,omitempty"`
}

type envoyThresholds struct {
	Priority           string            `yaml:"priority,omitempty"`
	RetryBudget        *EnvoyRetryBudget `yaml:"retry_budget,omitempty"`
	MaxRetries         *int              `yaml:"max_retries,omitempty"`
	MaxRequests        *int              `yaml:"max_requests,omitempty"`
	MaxPendingRequests *int              `yaml:"max_pending_requests,omitempty"`
	MaxConnections     *int              `yaml:"max_connections,omitempty"`
}

type envoyBootstrap struct {
	StaticResources struct {
		Clusters []envoyCluster `yaml:"clusters,omitempty"`
	} `yaml:"static_resources"`
}

// readEnvoy reads Envoy YAML or JSON: RouteConfiguration and Cluster
// documents, or a bootstrap's static clusters and inline route
// configurations.
func readEnvoy(src *pfSource, docs []ast.Node) (*PolicyFile, error) {
	src.lenient = true
	f := &PolicyFile{src: src}
	for d, doc := range docs {
		switch {
		case src.find(doc, "virtual_hosts", 0) != nil:
			var rc envoyRouteConfig
			if err := src.decode(doc, &rc); err != nil {
				return nil, err
			}
			if err := f.readRouteConfig(src, rc, nil, fmt.Sprintf("document %d", d+1)); err != nil {
				return nil, err
			}
		case src.find(doc, "static_resources", 0) != nil:
			var b envoyBootstrap
			if err := src.decode(doc, &b); err != nil {
				return nil, err
			}
			for _, c := range b.StaticResources.Clusters {
				f.addCluster(c, fmt.Sprintf("document %d static_resources cluster %s", d+1, c.Name))
			}
			// Route configurations inline in the listeners' HTTP connection
			// managers.
			i := 0
			for _, n := range ast.Filter(ast.MappingValueType, doc) {
				mv, ok := n.(*ast.MappingValueNode)
				if !ok || pfKey(mv.Key) != "route_config" {
					continue
				}
				i++
				var rc envoyRouteConfig
				if err := src.decode(mv.Value, &rc); err != nil {
					return nil, err
				}
				if err := f.readRouteConfig(src, rc, mv.Value, fmt.Sprintf("document %d route_config %d", d+1, i)); err != nil {
					return nil, err
				}
				src.root = doc
			}
		default:
			var c envoyCluster
			if err := src.decode(doc, &c); err != nil {
				return nil, err
			}
			f.addCluster(c, fmt.Sprintf("document %d cluster %s", d+1, c.Name))
		}
	}
	for _, ep := range f.Edges {
		if rp := ep.EnvoyRetryPolicy; rp != nil {
			if len(rp.RetryHostPredicate) > 0 || rp.HostSelectionRetryMaxAttempts != nil {
				f.note("%s: retry_host_predicate and host_selection_retry_max_attempts pick other hosts for retries; the simulator has one pool per service", ep.to.origin)
			}
			if len(rp.RetriableStatusCodes) > 0 {
				f.note("%s: retriable_status_codes %v are compared with the traces; the simulator retries every failure it makes", ep.to.origin, rp.RetriableStatusCodes)
			}
		}
	}
	return f, f.finish()
}

// envoyDefaultRouteTimeout is a route's timeout when it gives none
// (config.route.v3.RouteAction.timeout); 0s disables it.
const envoyDefaultRouteTimeout = Duration(15 * time.Second)

// readRouteConfig reads a route configuration: each route's policy (its
// retry_policy, or the virtual host's) applies to the operations it
// matches on the callees its clusters name, the first matching route of a
// virtual host winning as in Envoy. where names the configuration in notes; node is where it is in
// the document (nil: the document itself), for error positions.
func (f *PolicyFile) readRouteConfig(src *pfSource, rc envoyRouteConfig, node ast.Node, where string) error {
	defaultTimeout := false
	for v, vh := range rc.VirtualHosts {
		vwhere := fmt.Sprintf("%s virtual_hosts[%d] %s", where, v, vh.Name)
		for k, r := range vh.Routes {
			if r.Route == nil {
				continue // a redirect or a direct response: no upstream call
			}
			// The callee is the route's cluster (or clusters); the virtual
			// host's domains when the cluster comes from a header.
			to := &target{hosts: vh.Domains, group: vwhere, origin: fmt.Sprintf("%s routes[%d]", vwhere, k)}
			if c := r.Route.clusters(); len(c) > 0 {
				to.hosts = c
			}
			to.prefix, to.exact = r.Match.Prefix, r.Match.Path
			if r.Match.SafeRegex != nil {
				re, err := regexp.Compile("^(?:" + r.Match.SafeRegex.Regex + ")$")
				if err != nil {
					if node != nil {
						src.root = node
					}
					path := pfPath{"virtual_hosts", v, "routes", k, "match", "safe_regex", "regex"}
					return src.errorAt(src.locate(path), path, err.Error())
				}
				to.regex = re
			}
			for _, h := range r.Match.Headers {
				if h.Name == ":method" && h.StringMatch != nil {
					to.method = h.StringMatch.Exact
				}
			}
			spec := PolicySpec{EnvoyRetryPolicy: r.Route.RetryPolicy, Deadline: r.Route.Timeout}
			if spec.EnvoyRetryPolicy == nil {
				spec.EnvoyRetryPolicy = vh.RetryPolicy
			}
			switch {
			case spec.Deadline == nil:
				d := envoyDefaultRouteTimeout
				spec.Deadline = &d
				defaultTimeout = true
			case *spec.Deadline == 0:
				spec.Deadline = nil
			}
			hp := r.Route.HedgePolicy
			if hp == nil {
				hp = vh.HedgePolicy
			}
			if hp != nil && hp.HedgeOnPerTryTimeout && spec.EnvoyRetryPolicy != nil && spec.EnvoyRetryPolicy.PerTryTimeout != nil {
				spec.HedgeAfter = spec.EnvoyRetryPolicy.PerTryTimeout
			}
			// Added even without a policy of its own: the route still takes
			// the operations it matches from the routes after it.
			f.add(to, spec)
		}
	}
	if defaultTimeout {
		f.note("%s: routes without timeout get Envoy's default 15s deadline", where)
	}
	return nil
}

// addCluster reads a cluster's circuit breakers (the DEFAULT
// priority's): its retry budget, or else max_retries as the same kind of
// cap on retries out, and max_requests as the edge's limit on requests out.
func (f *PolicyFile) addCluster(c envoyCluster, where string) {
	if c.OutlierDetection != nil {
		f.note("%s: outlier_detection ejects hosts; not simulated (the simulator has one pool per service)", where)
	}
	if c.CircuitBreakers == nil {
		return
	}
	limit := func(n *int) bool { return n != nil && *n != math.MaxUint32 } // MaxUint32: no limit, as Istio writes it
	for _, t := range c.CircuitBreakers.Thresholds {
		if t.Priority != "" && t.Priority != "DEFAULT" {
			continue
		}
		var spec PolicySpec
		switch {
		case t.RetryBudget != nil:
			spec.EnvoyRetryBudget = t.RetryBudget
			if limit(t.MaxRetries) {
				f.note("%s: max_retries %d bounds concurrent retries only without a retry_budget, which this threshold has: Envoy uses the budget", where, *t.MaxRetries)
			}
		case limit(t.MaxRetries):
			// Envoy's retry budget limits retries out to max(percent of
			// requests out, min_retry_concurrency): at 0% that is
			// max_retries' fixed cap, counted the same way.
			n := *t.MaxRetries
			spec.EnvoyRetryBudget = &EnvoyRetryBudget{BudgetPercent: &EnvoyPercent{}, MinRetryConcurrency: &n}
		}
		if limit(t.MaxRequests) {
			n := *t.MaxRequests
			spec.MaxRequests = &n
		}
		if limit(t.MaxPendingRequests) || limit(t.MaxConnections) {
			f.note("%s: max_connections and max_pending_requests bound a connection pool, which is not simulated (max_requests bounds the requests out)", where)
		}
		if spec != (PolicySpec{}) {
			f.add(&target{hosts: []string{c.Name}, origin: where}, spec)
		}
	}
}

// add appends an entry read from a project's file.
func (f *PolicyFile) add(to *target, spec PolicySpec) {
	f.Edges = append(f.Edges, EdgePolicy{PolicySpec: spec, to: to})
}

func (f *PolicyFile) note(format string, args ...any) {
	f.notes = append(f.notes, fmt.Sprintf(format, args...))
}

// finish lists the ignored keys that bear on retries and validates.
func (f *PolicyFile) finish() error {
	for _, k := range f.src.ignored {
		lk := strings.ToLower(k[strings.LastIndexByte(k, '.')+1:])
		if strings.Contains(lk, "retr") || strings.Contains(lk, "hedg") || strings.Contains(lk, "budget") ||
			strings.Contains(lk, "timeout") && !strings.Contains(lk, "connect") && !strings.Contains(lk, "idle") {
			f.note("%s: read but not simulated", k)
		}
	}
	return f.validate()
}

// Envoy writing: the same types, with durations as protobuf JSON writes
// them (yamlDocs).

// envoyMinBase is the base interval written for immediate retries:
// Envoy requires a base_interval > 0.
const envoyMinBase = 0.001

// envoyPreviousHosts is the retry host predicate Istio adds to every route:
// retries go to other hosts than the ones tried.
var envoyPreviousHosts = EnvoyExtension{Name: "envoy.retry_host_predicates.previous_hosts",
	TypedConfig: map[string]any{"@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"}}

// envoyRetry is a policy as Envoy's retry_policy; nil when it does not
// retry (or hedges instead). grpc selects the gRPC retry conditions.
func envoyRetry(e Edge, grpc bool, n *notes) *EnvoyRetryPolicy {
	p := e.Policy
	if p.MaxAttempts < 2 || p.HedgeAfter > 0 {
		return nil
	}
	rp := &EnvoyRetryPolicy{RetryOn: "5xx,reset,connect-failure,refused-stream", NumRetries: pfPtr(p.MaxAttempts - 1),
		RetryHostPredicate: []EnvoyExtension{envoyPreviousHosts}, HostSelectionRetryMaxAttempts: 3}
	if grpc {
		rp.RetryOn = "reset,connect-failure,refused-stream,unavailable"
	}
	if p.PerTryTimeout > 0 {
		rp.PerTryTimeout = durPtr(p.PerTryTimeout)
	}
	b := p.Backoff
	base, capS := b.Base, b.Cap
	switch {
	case b.Kind == "" || b.Kind == replay.BackoffImmediate || base <= 0:
		base = envoyMinBase
		n.add(e, "immediate retries cannot be expressed: Envoy waits at least base_interval, written as %s", protoDuration(base))
	case b.Steps != nil || b.Kind == replay.BackoffLinear || b.Kind == replay.BackoffFibonacci:
		n.add(e, "backoff (%s) cannot be expressed: Envoy doubles from base_interval, written from %s", backoffWords(b), protoDuration(base))
	case b.Kind == replay.BackoffConstant:
		capS = base
		n.add(e, "constant backoff is written as max_interval = base_interval; Envoy still draws each wait from [0, base·(2ⁿ−1)) capped there")
	}
	if b.Kind == replay.BackoffExponential && b.Multiplier != 0 && b.Multiplier != 2 {
		n.add(e, "backoff multiplier %g cannot be expressed: Envoy doubles", b.Multiplier)
	}
	if capS <= 0 {
		capS = envoyMaxIntervalFactor * base
		n.add(e, "no backoff cap cannot be expressed: Envoy caps at max_interval, written as 10 × base_interval (Envoy's default)")
	}
	rp.RetryBackOff = &EnvoyRetryBackOff{BaseInterval: durPtr(base), MaxInterval: durPtr(max(capS, base))}
	jitterNote(n, e, replay.JitterFull)
	if p.HonorRetryAfter {
		rp.RetryOn += ",retriable-status-codes"
		rp.RetriableStatusCodes = []int{429}
		rp.RateLimitedRetryBackOff = &EnvoyRateLimitedBackOff{ResetHeaders: []EnvoyResetHeader{{Name: "Retry-After", Format: "SECONDS"}}, MaxInterval: durPtr(max(capS, 1))}
	}
	return rp
}

// emitEnvoy writes a RouteConfiguration (a virtual host per callee, a route
// per operation) and a Cluster per callee with its retry budget.
func emitEnvoy(edges []Edge) (*Emitted, error) {
	n := &notes{format: "Envoy"}
	rc := envoyRouteConfig{Name: "retryaudit"}
	var clusters []envoyCluster
	for _, group := range byCallee(edges, false) {
		callee := group[0].Callee
		vh := envoyVirtualHost{Name: callee, Domains: []string{callee}}
		var budget *replay.BudgetSpec
		var breaker *Edge // the first edge with a breaker
		for _, e := range byOperation(group, n) {
			method, path, grpc := splitOp(e.Operation)
			r := envoyRoute{Name: e.Operation, Route: &envoyRouteAction{Cluster: callee}}
			switch {
			case grpc:
				r.Match.Path = "/" + e.Operation
			case path != "":
				r.Match.SafeRegex = &envoyRegex{Regex: routeRegex(path)}
				r.Match.Headers = []envoyRouteHeader{{Name: ":method", StringMatch: &envoyStringMatch{Exact: method}}}
			default:
				r.Match.Prefix = "/"
				n.add(e, "operation %q is neither an HTTP route nor a gRPC method; written as a route for every path", e.Operation)
			}
			// Written even when 0s: without it Envoy gives the route 15s.
			r.Route.Timeout = durPtr(e.Policy.Deadline)
			r.Route.RetryPolicy = envoyRetry(e, grpc, n)
			if h := e.Policy.HedgeAfter; h > 0 {
				// gateway-error makes a per-try timeout retriable, which with
				// hedge_on_per_try_timeout sends the hedge without
				// cancelling the first try.
				r.Route.RetryPolicy = &EnvoyRetryPolicy{RetryOn: "gateway-error,reset,connect-failure", NumRetries: pfPtr(1), PerTryTimeout: durPtr(h)}
				r.Route.HedgePolicy = &envoyHedgePolicy{HedgeOnPerTryTimeout: true}
				n.add(e, "hedging after %s is written as hedge_on_per_try_timeout with per_try_timeout %s and retry_on gateway-error, which also retries one 502, 503 or 504", protoDuration(h), protoDuration(h))
			}
			if e.Policy.Propagate {
				n.add(e, "deadline propagation is the application's (grpc-timeout or a deadline header); Envoy does not drop late work")
			}
			if e.Policy.Breaker.Enabled() && breaker == nil {
				breaker = &e
			}
			if bs := e.Policy.Budget; bs.Kind != replay.BudgetNone && budget == nil {
				budget = &bs
			}
			vh.Routes = append(vh.Routes, r)
		}
		rc.VirtualHosts = append(rc.VirtualHosts, vh)
		c := envoyCluster{Name: callee}
		if budget != nil {
			c.CircuitBreakers = &envoyCircuitBreakers{
				Thresholds: []envoyThresholds{{Priority: "DEFAULT", RetryBudget: envoyBudgetOf(*budget, group[0], n)}}}
		}
		if breaker != nil {
			c.OutlierDetection = outlierOf(*breaker, n)
		}
		if c.CircuitBreakers != nil || c.OutlierDetection != nil {
			clusters = append(clusters, c)
		}
	}
	docs := []any{rc}
	heads := [][]byte{nil}
	for _, c := range clusters {
		docs = append(docs, c)
		heads = append(heads, []byte("# Envoy v3 Cluster: the callee's retry budget and outlier detection\n"))
	}
	return emitYAML("Envoy v3 RouteConfiguration written by retryaudit", docs, heads, n)
}

// envoyBudgetOf writes a budget as Envoy's retry_budget: exact for an
// Envoy budget, approximated (and noted) for the others.
func envoyBudgetOf(b replay.BudgetSpec, e Edge, n *notes) *EnvoyRetryBudget {
	out := func(pct float64, mn int) *EnvoyRetryBudget {
		return &EnvoyRetryBudget{BudgetPercent: &EnvoyPercent{Value: pct}, MinRetryConcurrency: &mn}
	}
	switch b.Kind {
	case replay.BudgetEnvoy:
		return out(b.Percent, b.Min)
	case replay.BudgetRatio, replay.BudgetFinagle:
		n.add(e, "the %s budget (retries ≤ %g of requests) is written as an Envoy retry_budget of %g%%: Envoy bounds concurrent retries, not a rate", b.Kind, b.Ratio, 100*b.Ratio)
		return out(100*b.Ratio, replay.EnvoyDefaultMinRetryConcurrency)
	}
	n.add(e, "the %s budget cannot be expressed; written as Envoy's default retry_budget (20%%, 3)", b.Kind)
	return out(replay.EnvoyDefaultBudgetPercent, replay.EnvoyDefaultMinRetryConcurrency)
}

// outlierOf writes an edge's breaker as outlier detection, the nearest
// thing Envoy and Istio have: hosts, not the edge, are ejected after
// consecutive failures, and the ejection time grows with each ejection.
// Every host may be ejected (max_ejection_percent 100), as every request
// is refused by an open breaker. A failure-rate breaker has no
// equivalent.
func outlierOf(e Edge, n *notes) *envoyOutlierDetection {
	b := e.Policy.Breaker
	if b.ConsecutiveFailures == 0 {
		n.add(e, "the failure-rate circuit breaker (%g over %gs) cannot be expressed: %s's outlier detection counts consecutive failures per host", b.FailureRate, b.Window, n.format)
		return nil
	}
	n.add(e, "the circuit breaker is written as outlier detection: %s ejects hosts after %d consecutive 5xx for %s (growing with each ejection), not the whole edge; half-open probes are not expressed", n.format, b.ConsecutiveFailures, protoDuration(b.OpenFor))
	return &envoyOutlierDetection{Consecutive5xx: pfPtr(b.ConsecutiveFailures), Interval: durPtr(max(b.OpenFor, 1)),
		BaseEjectionTime: durPtr(b.OpenFor), MaxEjectionPercent: pfPtr(100)}
}
