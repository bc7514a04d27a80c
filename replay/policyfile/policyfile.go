// Package policyfile reads and writes client retry policies in the
// vocabularies of the systems SREs run: retryaudit's own YAML (native),
// gRPC service config JSON, Envoy route and cluster configuration, Istio
// VirtualService and DestinationRule, and Linkerd's HTTPRoute, GRPCRoute
// and ServiceProfile resources. One file per vocabulary; yamlcheck.go is
// the YAML checker they share (positions, carets, typos, depth limits).
//
// Reading maps a file onto a replay.Model's edges: native files name
// caller, callee and operation; the projects' own files name hosts,
// clusters, gRPC services and routes, which are matched to the model's
// services and operations by name (Unmatched lists what matched nothing).
// Writing takes one policy per edge (Edges) and renders it in a
// vocabulary; what the vocabulary cannot say is written as a comment in
// the file and returned as a note.
package policyfile

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/retryaudit/retryaudit/replay"
)

// Format is a policy vocabulary.
type Format string

// Formats.
const (
	FormatNative  Format = "native"
	FormatGRPC    Format = "grpc"
	FormatEnvoy   Format = "envoy"
	FormatIstio   Format = "istio"
	FormatLinkerd Format = "linkerd"
)

// formatKube is what pfSniff says of Kubernetes resources, Istio's or
// Linkerd's.
const formatKube Format = "kubernetes"

// Formats lists the vocabularies --policy-format accepts.
func Formats() []Format {
	return []Format{FormatEnvoy, FormatIstio, FormatLinkerd, FormatGRPC, FormatNative}
}

// ParseFormat checks a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("policy format %q: want %s", s, pfJoin(Formats(), ", "))
}

// Read parses a policy file in any vocabulary, telling which by its shape:
// a JSON or YAML object with methodConfig or retryThrottling is a gRPC
// service config; documents with apiVersion and kind are Kubernetes
// resources (Istio, Linkerd, Gateway API); documents with virtual_hosts,
// circuit_breakers or static_resources are Envoy configuration; anything
// else is retryaudit's own format.
func Read(name string, data []byte) (*PolicyFile, error) {
	src, docs, err := pfParse(name, data)
	if err != nil {
		return nil, err
	}
	switch pfSniff(src, docs) {
	case FormatGRPC:
		return readGRPC(src, docs)
	case FormatEnvoy:
		return readEnvoy(src, docs)
	case formatKube:
		return readKube(src, docs)
	}
	return parseNative(src, docs)
}

// pfSniff names the vocabulary of a parsed file from its top-level keys.
func pfSniff(src *pfSource, docs []ast.Node) Format {
	for _, d := range docs {
		has := func(k string) bool { return src.find(d, k, 0) != nil }
		switch {
		case has("methodConfig") || has("retryThrottling") || has("loadBalancingConfig"):
			return FormatGRPC
		case has("apiVersion") && has("kind"):
			return formatKube
		case has("virtual_hosts") || has("circuit_breakers") || has("static_resources") || has("connect_timeout") || has("load_assignment"):
			return FormatEnvoy
		}
	}
	return FormatNative
}

// Notes lists what the file holds that the simulator does not model (read
// and kept, but without effect on a replay), in file order.
func (f *PolicyFile) Notes() []string { return slices.Clone(f.notes) }

// Unmatched lists the entries of a project's file that match no edge of m:
// hosts, clusters, gRPC services or routes none of m's services or
// operations answer to.
func (f *PolicyFile) Unmatched(m *replay.Model) []string {
	var out []string
	for j := range f.Edges {
		ep := &f.Edges[j]
		if ep.to != nil && ep.PolicySpec != (PolicySpec{}) && len(ep.to.match(m)) == 0 {
			out = append(out, ep.to.origin+" ("+ep.to.describe()+") matches no edge")
		}
	}
	return out
}

// applied is one entry and the edges it applies to.
type applied struct {
	entry int
	edges []int
}

// matches returns the entries in the order they apply, each with its
// edges: entries naming no operation first, then the others; among the
// route entries of one group (the routes of one Envoy virtual host or
// Istio VirtualService), the first that matches an edge is the one that
// applies, as in the proxies.
func (f *PolicyFile) matches(m *replay.Model, e *pfErrs) []applied {
	var out []applied
	claimed := map[string]map[int]bool{}
	for pass := range 2 {
		for j := range f.Edges {
			ep := &f.Edges[j]
			if ep.to == nil {
				if (ep.Operation != "") == (pass == 1) {
					out = append(out, applied{j, f.match(m, j, e)})
				}
				continue
			}
			if ep.to.routed() != (pass == 1) {
				continue
			}
			g := claimed[ep.to.group]
			if g == nil {
				g = map[int]bool{}
				claimed[ep.to.group] = g
			}
			a := applied{entry: j}
			for _, i := range ep.to.match(m) {
				if ep.to.routed() {
					if g[i] {
						continue
					}
					g[i] = true
				}
				a.edges = append(a.edges, i)
			}
			out = append(out, a)
		}
	}
	return out
}

// target is what a project's file names: hosts (DNS names, Envoy
// clusters, Kubernetes Services, gRPC services) and optionally a route.
type target struct {
	hosts []string
	// grpcService and grpcMethod: a gRPC method name ("" method: all).
	grpcService, grpcMethod string
	// An HTTP route: a path prefix, exact path or regular expression, and
	// a method.
	prefix, exact string
	regex         *regexp.Regexp
	method        string
	// group orders route entries that compete (first match wins); origin
	// says where in the file the entry is, for notes.
	group, origin string
	// retryOn are retry conditions the file gives outside the entry's
	// keys (Linkerd's annotations), for Compare.
	retryOn string
}

func (t *target) routed() bool {
	return t.grpcMethod != "" || t.prefix != "" || t.exact != "" || t.regex != nil || t.method != ""
}

func (t *target) describe() string {
	var parts []string
	if len(t.hosts) > 0 {
		parts = append(parts, "hosts "+strings.Join(t.hosts, ", "))
	}
	switch {
	case t.grpcService != "" && t.grpcMethod != "":
		parts = append(parts, "method "+t.grpcService+"/"+t.grpcMethod)
	case t.grpcService != "":
		parts = append(parts, "service "+t.grpcService)
	}
	if t.method != "" {
		parts = append(parts, "method "+t.method)
	}
	switch {
	case t.exact != "":
		parts = append(parts, "path "+t.exact)
	case t.prefix != "":
		parts = append(parts, "prefix "+t.prefix)
	case t.regex != nil:
		parts = append(parts, "regex "+t.regex.String())
	}
	if len(parts) == 0 {
		return "every callee"
	}
	return strings.Join(parts, "; ")
}

// match returns the edges of m the target names.
func (t *target) match(m *replay.Model) []int {
	var idx []int
	for i, ed := range m.Edges {
		if !pfIn(m, ed.Callee) {
			continue
		}
		svc := m.Services[ed.Callee]
		if !t.hostMatches(svc) {
			continue
		}
		if ed.CalleeOp < 0 || ed.CalleeOp >= len(svc.Ops) || !t.opMatches(svc.Ops[ed.CalleeOp].Name) {
			continue
		}
		idx = append(idx, i)
	}
	return idx
}

// hostMatches says whether a service answers to one of the hosts, or to
// the gRPC service: by its name, by the first label of a DNS name
// ("inventory.shop.svc.cluster.local", "inventory:8080"), by the last
// part of an Envoy cluster name ("outbound|80||inventory.shop.svc…"), or,
// for a gRPC service, by serving its methods.
func (t *target) hostMatches(svc replay.Service) bool {
	if len(t.hosts) == 0 && t.grpcService == "" {
		return true
	}
	for _, h := range t.hosts {
		if h == "*" || pfHostName(h) == strings.ToLower(svc.Name) || h == svc.Name {
			return true
		}
	}
	if s := t.grpcService; s != "" {
		for _, op := range svc.Ops {
			if strings.HasPrefix(op.Name, s+"/") {
				return true
			}
		}
		last := s[strings.LastIndexByte(s, '.')+1:]
		return strings.EqualFold(last, svc.Name) || s == svc.Name
	}
	return false
}

// pfHostName reduces a host to the service name it most likely stands for.
func pfHostName(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if i := strings.LastIndexByte(h, '|'); i >= 0 {
		h = h[i+1:]
	}
	if i := strings.IndexByte(h, ':'); i >= 0 {
		h = h[:i]
	}
	if i := strings.IndexByte(h, '.'); i >= 0 {
		h = h[:i]
	}
	return h
}

// opMatches says whether a callee operation, as traces name it ("GET
// /inventory/{sku}", "shop.Inventory/Reserve", "reserve"), is one the
// route names.
func (t *target) opMatches(op string) bool {
	if !t.routed() {
		return true
	}
	if t.grpcMethod != "" {
		return op == t.grpcService+"/"+t.grpcMethod || strings.HasSuffix(op, "/"+t.grpcMethod) || op == t.grpcMethod
	}
	method, path, ok := strings.Cut(op, " ")
	if !ok {
		method, path = "", op
		if _, _, grpc := splitOp(op); grpc {
			path = "/" + op // a gRPC method's HTTP/2 path
		}
	}
	if t.method != "" && !strings.EqualFold(t.method, method) {
		return false
	}
	switch {
	case t.exact != "":
		return pfPathMatches(path, t.exact, false)
	case t.prefix != "":
		return pfPathMatches(path, t.prefix, true)
	case t.regex != nil:
		return t.regex.MatchString(path) || t.regex.MatchString(pfTemplateExample(path))
	}
	return true
}

// pfPathMatches matches a route template ("/items/{id}") against a path or
// path prefix from a config, a template segment matching any segment.
func pfPathMatches(template, path string, prefix bool) bool {
	if prefix && path == "/" {
		return true // every path, and operations that are not HTTP routes
	}
	ts, ps := strings.Split(template, "/"), strings.Split(path, "/")
	if len(ps) > len(ts) || !prefix && len(ps) != len(ts) {
		return false
	}
	for i, p := range ps {
		tsg := ts[i]
		wild := strings.HasPrefix(tsg, "{") || strings.HasPrefix(tsg, ":")
		switch {
		case wild || tsg == p:
		case prefix && i == len(ps)-1 && strings.HasPrefix(tsg, p):
		default:
			return false
		}
	}
	return true
}

// pfTemplateExample turns a route template into a path a regular
// expression written for real paths can match: {id} becomes 1.
func pfTemplateExample(template string) string {
	segs := strings.Split(template, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") || strings.HasPrefix(s, ":") {
			segs[i] = "1"
		}
	}
	return strings.Join(segs, "/")
}
