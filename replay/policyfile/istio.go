package policyfile

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/retryaudit/retryaudit/replay"
)

// A Kubernetes object's envelope.
type kubeObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace,omitempty"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	} `yaml:"metadata"`
}

// Istio's VirtualService and DestinationRule, as far as retries go: read,
// and written.
type istioVirtualServiceSpec struct {
	Hosts []string         `yaml:"hosts"`
	HTTP  []istioHTTPRoute `yaml:"http"`
}

type istioHTTPRoute struct {
	Name    string              `yaml:"name,omitempty"`
	Match   []istioHTTPMatch    `yaml:"match,omitempty"`
	Route   []istioDestinations `yaml:"route,omitempty"`
	Retries *istioRetries       `yaml:"retries,omitempty"`
	Timeout *Duration           `yaml:"timeout,omitempty"`
}

type istioHTTPMatch struct {
	URI    *istioStringMatch `yaml:"uri,omitempty"`
	Method *istioStringMatch `yaml:"method,omitempty"`
}

type istioDestinations struct {
	Destination struct {
		Host string `yaml:"host"`
	} `yaml:"destination"`
}

type istioRetries struct {
	Attempts      *int      `yaml:"attempts,omitempty"` // retries, not attempts
	PerTryTimeout *Duration `yaml:"perTryTimeout,omitempty"`
	RetryOn       string    `yaml:"retryOn,omitempty"`
	Backoff       *Duration `yaml:"backoff,omitempty"`
}

type istioStringMatch struct {
	Exact  string `yaml:"exact,omitempty"`
	Prefix string `yaml:"prefix,omitempty"`
	Regex  string `yaml:"regex,omitempty"`
}

type istioDestinationRuleSpec struct {
	Host          string              `yaml:"host"`
	TrafficPolicy *istioTrafficPolicy `yaml:"trafficPolicy,omitempty"`
}

type istioTrafficPolicy struct {
	ConnectionPool   *istioConnectionPool   `yaml:"connectionPool,omitempty"`
	OutlierDetection *istioOutlierDetection `yaml:"outlierDetection,omitempty"`
	RetryBudget      *istioRetryBudget      `yaml:"retryBudget,omitempty"`
}

// istioConnectionPool is Envoy's circuit-breaking thresholds in Istio's
// words, as far as request concurrency goes: http2MaxRequests caps the
// requests a client proxy has active at the destination (HTTP/1.1 and
// HTTP/2 alike).
type istioConnectionPool struct {
	HTTP *istioHTTPPool `yaml:"http,omitempty"`
}

type istioHTTPPool struct {
	HTTP2MaxRequests *int `yaml:"http2MaxRequests,omitempty"`
}

// istioOutlierDetection is Envoy's outlier detection in Istio's words.
type istioOutlierDetection struct {
	Consecutive5xxErrors *int      `yaml:"consecutive5xxErrors,omitempty"`
	Interval             *Duration `yaml:"interval,omitempty"`
	BaseEjectionTime     *Duration `yaml:"baseEjectionTime,omitempty"`
	MaxEjectionPercent   *int      `yaml:"maxEjectionPercent,omitempty"`
}

type istioRetryBudget struct {
	Percent             *float64 `yaml:"percent,omitempty"`
	MinRetryConcurrency *int     `yaml:"minRetryConcurrency,omitempty"`
}

// Istio's retry defaults: the mesh's default HTTP retry policy when a route
// gives none (2 attempts after the first, on connection failures and 503
// from unavailable hosts), and Envoy's 25 ms base interval.
const (
	istioDefaultAttempts = 2
	istioDefaultRetryOn  = "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
)

// readKube reads Kubernetes resources: Istio VirtualService and
// DestinationRule, Gateway API HTTPRoute and GRPCRoute with Linkerd's
// annotations, Services with them, and Linkerd ServiceProfiles. Other
// kinds are noted and skipped.
func readKube(src *pfSource, docs []ast.Node) (*PolicyFile, error) {
	src.lenient = true
	f := &PolicyFile{src: src}
	for d, doc := range docs {
		if err := f.readKubeObject(src, doc, fmt.Sprintf("document %d", d+1)); err != nil {
			return nil, err
		}
	}
	return f, f.finish()
}

// readKubeObject reads one resource, or each item of a List (what
// kubectl get -o yaml writes).
func (f *PolicyFile) readKubeObject(src *pfSource, doc ast.Node, where string) error {
	var obj kubeObject
	if err := src.decode(doc, &obj); err != nil {
		return err
	}
	if strings.HasSuffix(obj.Kind, "List") { // List, VirtualServiceList, …
		mv := src.find(doc, "items", 0)
		if mv == nil {
			return nil
		}
		seq, ok := src.resolve(mv.Value).(*ast.SequenceNode)
		if !ok {
			return src.errorAt(mv.Key.GetToken(), pfPath{"items"}, "want a list of resources")
		}
		for i, item := range seq.Values {
			if err := f.readKubeObject(src, item, fmt.Sprintf("%s items[%d]", where, i)); err != nil {
				return err
			}
			src.root = doc
		}
		return nil
	}
	where = fmt.Sprintf("%s %s %s", where, obj.Kind, obj.Metadata.Name)
	group, _, _ := strings.Cut(obj.APIVersion, "/")
	switch {
	case group == "networking.istio.io" && obj.Kind == "VirtualService":
		return f.readVirtualService(src, doc, where)
	case group == "networking.istio.io" && obj.Kind == "DestinationRule":
		return f.readDestinationRule(src, doc, where)
	case obj.Kind == "HTTPRoute" || obj.Kind == "GRPCRoute":
		return f.readRoute(src, doc, obj, where)
	case obj.Kind == "Service" && group == "v1":
		f.readLinkerdAnnotations(obj, &target{hosts: []string{obj.Metadata.Name}, origin: where})
	case group == "linkerd.io" && obj.Kind == "ServiceProfile":
		return f.readServiceProfile(src, doc, obj, where)
	default:
		f.note("%s: %s is not a policy resource retryaudit reads; skipped", where, obj.APIVersion)
	}
	return nil
}

func (f *PolicyFile) readVirtualService(src *pfSource, doc ast.Node, where string) error {
	var vs struct {
		Spec istioVirtualServiceSpec `yaml:"spec"`
	}
	if err := src.decode(doc, &vs); err != nil {
		return err
	}
	for i, r := range vs.Spec.HTTP {
		hosts := vs.Spec.Hosts
		if len(r.Route) > 0 {
			hosts = nil
			for _, d := range r.Route {
				hosts = append(hosts, d.Destination.Host)
			}
		}
		ep := &EnvoyRetryPolicy{RetryOn: istioDefaultRetryOn, NumRetries: new(int)}
		*ep.NumRetries = istioDefaultAttempts
		rwhere := fmt.Sprintf("%s http[%d]", where, i)
		if rt := r.Retries; rt != nil {
			if rt.Attempts != nil {
				*ep.NumRetries = *rt.Attempts
			}
			ep.PerTryTimeout = rt.PerTryTimeout
			if rt.RetryOn != "" {
				ep.RetryOn, ep.RetriableStatusCodes = istioRetryOn(rt.RetryOn)
			}
			if rt.Backoff != nil && *rt.Backoff > 0 {
				ep.RetryBackOff = &EnvoyRetryBackOff{BaseInterval: rt.Backoff}
			}
		} else {
			f.note("%s: no retries given: Istio's default applies (2 retries on %s), unless the mesh config changes it", rwhere, istioDefaultRetryOn)
		}
		spec := PolicySpec{EnvoyRetryPolicy: ep, Deadline: r.Timeout}
		if len(r.Match) == 0 { // every request: first match wins, as for the others
			f.add(&target{hosts: hosts, prefix: "/", group: where, origin: rwhere}, spec)
		}
		for k, m := range r.Match {
			to := &target{hosts: hosts, group: where, origin: fmt.Sprintf("%s.match[%d]", rwhere, k)}
			if u := m.URI; u != nil {
				to.exact, to.prefix = u.Exact, u.Prefix
				if u.Regex != "" {
					re, err := regexp.Compile("^(?:" + u.Regex + ")$")
					if err != nil {
						path := pfPath{"spec", "http", i, "match", k, "uri", "regex"}
						return src.errorAt(src.locate(path), path, err.Error())
					}
					to.regex = re
				}
			}
			if m.Method != nil {
				to.method = m.Method.Exact
			}
			f.add(to, spec)
		}
	}
	return nil
}

// istioRetryOn splits Istio's retryOn into Envoy conditions and the HTTP
// status codes Istio turns into retriable_status_codes.
func istioRetryOn(s string) (string, []int) {
	var conds []string
	var codes []int
	for c := range strings.SplitSeq(s, ",") {
		c = strings.TrimSpace(c)
		var n int
		if _, err := fmt.Sscanf(c, "%d", &n); err == nil && fmt.Sprint(n) == c {
			codes = append(codes, n)
			continue
		}
		conds = append(conds, c)
	}
	if len(codes) > 0 && !strings.Contains(s, "retriable-status-codes") {
		conds = append(conds, "retriable-status-codes")
	}
	return strings.Join(conds, ","), codes
}

func (f *PolicyFile) readDestinationRule(src *pfSource, doc ast.Node, where string) error {
	var dr struct {
		Spec istioDestinationRuleSpec `yaml:"spec"`
	}
	if err := src.decode(doc, &dr); err != nil {
		return err
	}
	if tp := dr.Spec.TrafficPolicy; tp != nil && tp.ConnectionPool != nil {
		f.note("%s: trafficPolicy.connectionPool caps requests at the client proxy; not simulated (--capacity SVC=N sets the callee's own pool)", where)
	}
	if tp := dr.Spec.TrafficPolicy; tp != nil && tp.OutlierDetection != nil {
		f.note("%s: trafficPolicy.outlierDetection ejects hosts; not simulated (the simulator has one pool per service)", where)
	}
	if tp := dr.Spec.TrafficPolicy; tp != nil && tp.RetryBudget != nil {
		b := &EnvoyRetryBudget{MinRetryConcurrency: tp.RetryBudget.MinRetryConcurrency}
		if tp.RetryBudget.Percent != nil {
			b.BudgetPercent = &EnvoyPercent{Value: *tp.RetryBudget.Percent}
		}
		f.add(&target{hosts: []string{dr.Spec.Host}, origin: where + " trafficPolicy.retryBudget"}, PolicySpec{EnvoyRetryBudget: b})
	}
	return nil
}

// emitIstio writes a VirtualService per callee (an http route per
// operation, with its retries and timeout; every callee, since a route
// without retries gets Istio's default two) and, for a budget, a breaker
// or a pool whose size the user gave, a DestinationRule.
func emitIstio(edges []Edge) (*Emitted, error) {
	n := &notes{format: "Istio"}
	var docs []any
	var estimated []string // callees whose pool the model estimated
	for _, group := range byCallee(edges, true) {
		callee := group[0].Callee
		var routes []istioHTTPRoute
		var budget *replay.BudgetSpec
		var tp istioTrafficPolicy
		for _, e := range byOperation(group, n) {
			routes = append(routes, istioRoute(e, callee, n))
			if bs := e.Policy.Budget; bs.Kind != replay.BudgetNone && budget == nil {
				budget = &bs
			}
			if e.Policy.Breaker.Enabled() && tp.OutlierDetection == nil {
				if od := outlierOf(e, n); od != nil {
					tp.OutlierDetection = &istioOutlierDetection{Consecutive5xxErrors: od.Consecutive5xx, Interval: od.Interval,
						BaseEjectionTime: od.BaseEjectionTime, MaxEjectionPercent: od.MaxEjectionPercent}
				}
			}
		}
		docs = append(docs, kubeDoc("networking.istio.io/v1", "VirtualService", callee, nil, istioVirtualServiceSpec{Hosts: []string{callee}, HTTP: routes}))
		switch pool := group[0].Pool; {
		case pool.Given && pool.Workers > 0:
			tp.ConnectionPool = &istioConnectionPool{HTTP: &istioHTTPPool{HTTP2MaxRequests: pfPtr(pool.Workers)}}
			n.add(Edge{Callee: callee}, "connectionPool.http.http2MaxRequests %d is the %d request slots given with --capacity: each client proxy applies it on its own (callers with several replicas may together send more), and a request past it fails fast with 503 at the caller instead of queueing at %s, which the replay does not simulate", pool.Workers, pool.Workers, callee)
		case pool.Workers > 0:
			estimated = append(estimated, fmt.Sprintf("%s (%d estimated)", callee, pool.Workers))
		}
		if budget != nil {
			switch budget.Kind {
			case replay.BudgetEnvoy:
				tp.RetryBudget = &istioRetryBudget{Percent: &budget.Percent, MinRetryConcurrency: &budget.Min}
			case replay.BudgetRatio, replay.BudgetFinagle:
				tp.RetryBudget = &istioRetryBudget{Percent: pfPtr(100 * budget.Ratio), MinRetryConcurrency: pfPtr(replay.EnvoyDefaultMinRetryConcurrency)}
				n.add(group[0], "the %s budget is written as retryBudget percent %g: Istio's budget bounds concurrent retries, not a rate", budget.Kind, 100*budget.Ratio)
			default:
				budgetNote(n, group[0])
			}
		}
		if tp != (istioTrafficPolicy{}) {
			docs = append(docs, kubeDoc("networking.istio.io/v1", "DestinationRule", callee, nil, istioDestinationRuleSpec{Host: callee, TrafficPolicy: &tp}))
		}
	}
	if len(estimated) > 0 {
		n.line("connectionPool not written for " + strings.Join(estimated, ", ") + ": traces show how many requests were in flight, not a pool's limit, so the worker counts are estimates (Little's law × headroom); --capacity SVC=N states a pool and writes its connectionPool.http.http2MaxRequests")
	}
	return emitYAML("Istio networking.istio.io/v1 written by retryaudit", docs, make([][]byte, len(docs)), n)
}

// istioRoute is one operation's http route: its match, retries and
// timeout. attempts: 0 is written, not left out: a route without retries
// gets the mesh's default (2 retries).
func istioRoute(e Edge, callee string, n *notes) istioHTTPRoute {
	p := e.Policy
	method, path, grpc := splitOp(e.Operation)
	r := istioHTTPRoute{Name: pfKubeName(e.Operation), Route: make([]istioDestinations, 1), Retries: &istioRetries{Attempts: pfPtr(0)}}
	r.Route[0].Destination.Host = callee
	switch {
	case grpc:
		r.Match = []istioHTTPMatch{{URI: &istioStringMatch{Exact: "/" + e.Operation}}}
	case path != "":
		r.Match = []istioHTTPMatch{{URI: &istioStringMatch{Regex: routeRegex(path)}, Method: &istioStringMatch{Exact: method}}}
	}
	if p.Deadline > 0 {
		r.Timeout = durPtr(p.Deadline)
	}
	if p.HedgeAfter > 0 {
		n.add(e, "hedging after %s cannot be expressed in Istio", protoDuration(p.HedgeAfter))
	}
	if p.MaxAttempts < 2 || p.HedgeAfter > 0 {
		return r
	}
	rt := r.Retries
	rt.Attempts = pfPtr(p.MaxAttempts - 1)
	rt.RetryOn = "5xx,connect-failure,refused-stream"
	if grpc {
		rt.RetryOn = "connect-failure,refused-stream,unavailable"
	}
	if p.HonorRetryAfter {
		rt.RetryOn += ",429"
		n.add(e, "Retry-After cannot be expressed: Istio retries 429 but has no rate_limited_retry_back_off")
	}
	if p.PerTryTimeout > 0 {
		rt.PerTryTimeout = durPtr(p.PerTryTimeout)
	}
	b := p.Backoff
	switch {
	case b.Kind == "" || b.Kind == replay.BackoffImmediate || b.Base <= 0:
		rt.Backoff = durPtr(envoyMinBase)
		n.add(e, "immediate retries cannot be expressed: Istio's backoff is Envoy's, written with base %s", protoDuration(envoyMinBase))
	default:
		rt.Backoff = durPtr(b.Base)
		if b.Kind != replay.BackoffExponential || (b.Multiplier != 0 && b.Multiplier != 2) || b.Cap != envoyMaxIntervalFactor*b.Base {
			n.add(e, "backoff (%s) cannot be expressed: Istio sets the base only (Envoy doubles it up to 10 × base)", backoffWords(b))
		}
	}
	jitterNote(n, e, replay.JitterFull)
	return r
}

// kubeDoc is a Kubernetes object with its spec.
func kubeDoc(apiVersion, kind, name string, annotations map[string]string, spec any) any {
	type meta struct {
		Name        string            `yaml:"name"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	}
	return struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   meta   `yaml:"metadata"`
		Spec       any    `yaml:"spec"`
	}{apiVersion, kind, meta{name, annotations}, spec}
}

// pfKubeName turns an operation into a DNS-label-like name.
func pfKubeName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimSuffix(b.String(), "-")
	if len(out) > 63 {
		out = strings.TrimSuffix(out[:63], "-")
	}
	if out == "" {
		out = "route"
	}
	return out
}
