package policyfile

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/retryaudit/retryaudit/replay"
)

// Linkerd's retry and timeout annotations (on a Service, HTTPRoute or
// GRPCRoute).
const (
	linkerdRetryHTTP    = "retry.linkerd.io/http"
	linkerdRetryGRPC    = "retry.linkerd.io/grpc"
	linkerdRetryLimit   = "retry.linkerd.io/limit"
	linkerdRetryTimeout = "retry.linkerd.io/timeout"
	linkerdTimeout      = "timeout.linkerd.io/request"
	// linkerdDefaultLimit is how many retries Linkerd allows when only the
	// conditions are given.
	linkerdDefaultLimit = 1
)

// Gateway API routes, as far as matching goes: read, and written.
type gatewayRoute struct {
	Spec gatewayRouteSpec `yaml:"spec"`
}

type gatewayRouteSpec struct {
	ParentRefs []gatewayParentRef `yaml:"parentRefs"`
	Rules      []gatewayRule      `yaml:"rules,omitempty"`
}

type gatewayParentRef struct {
	Group string `yaml:"group,omitempty"`
	Kind  string `yaml:"kind,omitempty"`
	Name  string `yaml:"name"`
}

type gatewayRule struct {
	Matches  []gatewayMatch `yaml:"matches,omitempty"`
	Timeouts *struct {
		Request *Duration `yaml:"request,omitempty"`
	} `yaml:"timeouts,omitempty"`
}

type gatewayMatch struct {
	Path *gatewayPath `yaml:"path,omitempty"`
	// Method is a string in an HTTPRoute, {service, method} in a GRPCRoute.
	Method any `yaml:"method,omitempty"`
}

type gatewayPath struct {
	Type  string `yaml:"type,omitempty"`
	Value string `yaml:"value,omitempty"`
}

// readRoute reads an HTTPRoute or GRPCRoute: its parent Services are the
// callees, its rules' matches the operations, its annotations the policy.
func (f *PolicyFile) readRoute(src *pfSource, doc ast.Node, obj kubeObject, where string) error {
	var r gatewayRoute
	if err := src.decode(doc, &r); err != nil {
		return err
	}
	var hosts []string
	for _, p := range r.Spec.ParentRefs {
		if p.Kind == "" || p.Kind == "Service" {
			hosts = append(hosts, p.Name)
		}
	}
	if len(hosts) == 0 {
		f.note("%s: no Service parent: Linkerd applies route annotations to Service parents only", where)
		return nil
	}
	if len(r.Spec.Rules) == 0 {
		f.readLinkerdAnnotations(obj, &target{hosts: hosts, origin: where})
	}
	for i, rule := range r.Spec.Rules {
		var deadline *Duration
		if rule.Timeouts != nil && rule.Timeouts.Request != nil {
			deadline = rule.Timeouts.Request
		}
		add := func(to *target) {
			if ep := f.readLinkerdAnnotations(obj, to); ep != nil && deadline != nil && ep.Deadline == nil {
				ep.Deadline = deadline
			} else if ep == nil && deadline != nil {
				f.add(to, PolicySpec{Deadline: deadline})
			}
		}
		if len(rule.Matches) == 0 { // Gateway API: a rule without matches takes every path
			add(&target{hosts: hosts, prefix: "/", group: where, origin: fmt.Sprintf("%s rules[%d]", where, i)})
		}
		for k, m := range rule.Matches {
			to := &target{hosts: hosts, group: where, origin: fmt.Sprintf("%s rules[%d].matches[%d]", where, i, k)}
			switch mm := m.Method.(type) {
			case string:
				to.method = mm
			case map[string]any:
				to.grpcService, _ = mm["service"].(string)
				to.grpcMethod, _ = mm["method"].(string)
			}
			if p := m.Path; p != nil {
				switch p.Type {
				case "Exact":
					to.exact = p.Value
				case "RegularExpression":
					re, err := regexp.Compile("^(?:" + p.Value + ")$")
					if err != nil {
						path := pfPath{"spec", "rules", i, "matches", k, "path", "value"}
						return src.errorAt(src.locate(path), path, err.Error())
					}
					to.regex = re
				default:
					if p.Value != "/" {
						to.prefix = p.Value
					}
				}
			}
			add(to)
		}
	}
	return nil
}

// readLinkerdAnnotations adds the entry Linkerd's annotations give, if any.
func (f *PolicyFile) readLinkerdAnnotations(obj kubeObject, to *target) *EdgePolicy {
	a := obj.Metadata.Annotations
	conds := a[linkerdRetryHTTP]
	if g := a[linkerdRetryGRPC]; g != "" {
		conds = g
	}
	var s PolicySpec
	set := false
	if conds != "" || a[linkerdRetryLimit] != "" {
		limit := linkerdDefaultLimit
		if v := a[linkerdRetryLimit]; v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				f.note("%s: %s %q is not a retry count; ignored", to.origin, linkerdRetryLimit, v)
			} else {
				limit = n
			}
		}
		attempts := limit + 1
		s.MaxAttempts = &attempts
		s.Backoff = &BackoffSpec{Kind: replay.BackoffImmediate}
		f.note("%s: Linkerd retries without backoff; simulated as immediate retries on %s", to.origin, pfOrNone(conds))
		to.retryOn = conds
		set = true
	}
	for _, k := range []struct {
		key string
		d   **Duration
	}{{linkerdRetryTimeout, &s.PerTryTimeout}, {linkerdTimeout, &s.Deadline}} {
		if v := a[k.key]; v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				f.note("%s: %s %q is not a duration; ignored", to.origin, k.key, v)
				continue
			}
			dd := Duration(d)
			*k.d = &dd
			set = true
		}
	}
	if !set {
		return nil
	}
	f.add(to, s)
	return &f.Edges[len(f.Edges)-1]
}

// Linkerd's ServiceProfile (linkerd.io/v1alpha2), as far as retries go.
type serviceProfile struct {
	Spec struct {
		Routes []struct {
			Name      string `yaml:"name"`
			Condition struct {
				Method    string `yaml:"method,omitempty"`
				PathRegex string `yaml:"pathRegex,omitempty"`
			} `yaml:"condition"`
			IsRetryable bool      `yaml:"isRetryable,omitempty"`
			Timeout     *Duration `yaml:"timeout,omitempty"`
		} `yaml:"routes,omitempty"`
		RetryBudget *struct {
			RetryRatio          *float64  `yaml:"retryRatio,omitempty"`
			MinRetriesPerSecond *int      `yaml:"minRetriesPerSecond,omitempty"`
			TTL                 *Duration `yaml:"ttl,omitempty"`
		} `yaml:"retryBudget,omitempty"`
	} `yaml:"spec"`
}

// serviceProfileAttempts is how many attempts a retryable ServiceProfile
// route is simulated with: Linkerd bounds its retries by the budget alone.
const serviceProfileAttempts = 10

func (f *PolicyFile) readServiceProfile(src *pfSource, doc ast.Node, obj kubeObject, where string) error {
	var sp serviceProfile
	if err := src.decode(doc, &sp); err != nil {
		return err
	}
	hosts := []string{obj.Metadata.Name}
	if b := sp.Spec.RetryBudget; b != nil {
		fb := &FinagleRetryBudget{TTL: b.TTL, MinRetriesPerSec: b.MinRetriesPerSecond, PercentCanRetry: b.RetryRatio}
		f.add(&target{hosts: hosts, origin: where + " retryBudget"}, PolicySpec{Finagle: fb})
	}
	for i, r := range sp.Spec.Routes {
		to := &target{hosts: hosts, group: where, origin: fmt.Sprintf("%s routes[%d] %s", where, i, r.Name), method: r.Condition.Method}
		if r.Condition.PathRegex != "" {
			re, err := regexp.Compile("^(?:" + r.Condition.PathRegex + ")$")
			if err != nil {
				path := pfPath{"spec", "routes", i, "condition", "pathRegex"}
				return src.errorAt(src.locate(path), path, err.Error())
			}
			to.regex = re
		}
		var s PolicySpec
		if r.IsRetryable {
			n := serviceProfileAttempts
			s.MaxAttempts = &n
			s.Backoff = &BackoffSpec{Kind: replay.BackoffImmediate}
			f.note("%s: isRetryable: Linkerd bounds retries by the retry budget alone; simulated with up to %d attempts, immediate", to.origin, n)
		}
		s.Deadline = r.Timeout
		if s.MaxAttempts != nil || s.Deadline != nil {
			f.add(to, s)
		}
	}
	return nil
}

// emitLinkerd writes a Gateway API HTTPRoute (or GRPCRoute) per callee and
// operation with Service parent and Linkerd's retry and timeout
// annotations.
func emitLinkerd(edges []Edge) (*Emitted, error) {
	n := &notes{format: "Linkerd"}
	var docs []any
	for _, group := range byCallee(edges, false) {
		callee := group[0].Callee
		for _, e := range byOperation(group, n) {
			p := e.Policy
			method, path, grpc := splitOp(e.Operation)
			ann := map[string]string{}
			if p.MaxAttempts > 1 && p.HedgeAfter == 0 {
				if grpc {
					ann[linkerdRetryGRPC] = "unavailable"
				} else {
					ann[linkerdRetryHTTP] = "5xx"
					if p.HonorRetryAfter {
						ann[linkerdRetryHTTP] = "5xx,429"
						n.add(e, "Retry-After cannot be expressed: Linkerd retries 429 at once")
					}
				}
				ann[linkerdRetryLimit] = strconv.Itoa(p.MaxAttempts - 1)
				if p.PerTryTimeout > 0 {
					ann[linkerdRetryTimeout] = linkerdDuration(p.PerTryTimeout)
				}
				if b := p.Backoff; b.Kind != "" && b.Kind != replay.BackoffImmediate {
					n.add(e, "backoff (%s) cannot be expressed: Linkerd retries at once", backoffWords(b))
				}
			}
			if p.Deadline > 0 {
				ann[linkerdTimeout] = linkerdDuration(p.Deadline)
			}
			if p.HedgeAfter > 0 {
				n.add(e, "hedging after %s cannot be expressed in Linkerd", protoDuration(p.HedgeAfter))
			}
			if p.Breaker.Enabled() {
				n.add(e, "the circuit breaker cannot be expressed per route: Linkerd's failure accrual is a Service annotation (balancer.linkerd.io/failure-accrual) and ejects endpoints")
			}
			budgetNote(n, e)
			spec := gatewayRouteSpec{ParentRefs: []gatewayParentRef{{Group: "core", Kind: "Service", Name: callee}}, Rules: make([]gatewayRule, 1)}
			name, kind := pfKubeName(callee+"-"+e.Operation), "HTTPRoute"
			m := gatewayMatch{Path: &gatewayPath{Type: "PathPrefix", Value: "/"}}
			switch {
			case grpc:
				kind, m = "GRPCRoute", gatewayMatch{Method: map[string]string{"service": method, "method": path}}
			case path != "":
				m = gatewayMatch{Path: &gatewayPath{Type: "RegularExpression", Value: routeRegex(path)}, Method: method}
			default:
				n.add(e, "operation %q is neither an HTTP route nor a gRPC method; written as a route for every path", e.Operation)
			}
			spec.Rules[0].Matches = []gatewayMatch{m}
			docs = append(docs, kubeDoc("gateway.networking.k8s.io/v1", kind, name, ann, spec))
		}
	}
	return emitYAML("Gateway API routes with Linkerd annotations, written by retryaudit", docs, make([][]byte, len(docs)), n)
}

// linkerdDuration writes seconds as a Go-style duration ("300ms").
func linkerdDuration(seconds float64) string {
	return time.Duration(seconds * 1e9).Round(time.Microsecond).String()
}
