package policyfile

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/retryaudit/retryaudit/replay"
)

// Edge is one edge's policy as a plain value: the hand-over from whoever
// decides the policy (the audit's recommendation) to the writers.
type Edge struct {
	Caller, Callee, Operation string
	Policy                    replay.Policy
	// Pool is the callee's pool of request slots.
	Pool Pool
}

// Pool is a callee's pool of request slots as the model has it: Workers
// slots (a thread or connection a request holds while it is served), and
// Given when the user stated them (--capacity SVC=N) rather than the model
// estimating them from the requests the traces show in flight, which
// show how many were busy, never the pool's limit.
type Pool struct {
	Workers int
	Given   bool
}

// EdgesOf lists the policy of every edge of m, one per caller, callee and
// operation (the first, in edge order).
func EdgesOf(m *replay.Model) []Edge {
	var out []Edge
	seen := map[[3]string]bool{}
	for _, e := range m.Edges {
		if !pfIn(m, e.Caller) || !pfIn(m, e.Callee) || e.CalleeOp < 0 || e.CalleeOp >= len(m.Services[e.Callee].Ops) {
			continue
		}
		k := [3]string{m.Services[e.Caller].Name, m.Services[e.Callee].Name, m.Services[e.Callee].Ops[e.CalleeOp].Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, Edge{Caller: k[0], Callee: k[1], Operation: k[2], Policy: e.Policy, Pool: Pool{Workers: m.Services[e.Callee].Workers}})
	}
	return out
}

// Output is one written file: Name is "" for the file asked for, or a
// callee for the per-callee files of the gRPC format.
type Output struct {
	Callee string
	Data   []byte
}

// Emitted is what Emit wrote, and what the vocabulary could not say (each
// note is also a comment in the file, where the format has comments).
type Emitted struct {
	Files []Output
	Notes []string
}

// Emit writes the policies in a vocabulary. Callees with no edge that
// retries, hedges, or has a budget, breaker or deadline are left out of
// the project formats (their proxies need no configuration).
func Emit(format Format, edges []Edge) (*Emitted, error) {
	edges = slices.Clone(edges)
	slices.SortStableFunc(edges, func(a, b Edge) int {
		return strings.Compare(a.Callee+"\x00"+a.Operation+"\x00"+a.Caller, b.Callee+"\x00"+b.Operation+"\x00"+b.Caller)
	})
	switch format {
	case FormatNative:
		return emitNative(edges)
	case FormatGRPC:
		return emitGRPC(edges)
	case FormatEnvoy:
		return emitEnvoy(edges)
	case FormatIstio:
		return emitIstio(edges)
	case FormatLinkerd:
		return emitLinkerd(edges)
	}
	_, err := ParseFormat(string(format))
	return nil, err
}

// notes collects what a vocabulary cannot express, per edge; format is the
// vocabulary's name as its project writes it.
type notes struct {
	format string
	list   []string
}

// line adds a note that is about no one edge.
func (n *notes) line(s string) {
	if !slices.Contains(n.list, s) {
		n.list = append(n.list, s)
	}
}

func (n *notes) add(e Edge, format string, args ...any) {
	loc := e.Callee
	if e.Operation != "" {
		loc += " " + e.Operation
	}
	if e.Caller != "" {
		loc = e.Caller + " → " + loc
	}
	s := loc + ": " + fmt.Sprintf(format, args...)
	if !slices.Contains(n.list, s) {
		n.list = append(n.list, s)
	}
}

// comments renders notes as YAML comment lines.
func comments(header string, list []string) []byte {
	var b bytes.Buffer
	b.WriteString("# " + header + "\n")
	for _, l := range list {
		b.WriteString("# " + pfCommentSafe(l) + "\n")
	}
	return b.Bytes()
}

// pfCommentSafe keeps a note on one comment line.
func pfCommentSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// byCallee groups sorted edges by callee, keeping only callees whose
// edges need configuration, or every callee with all.
func byCallee(edges []Edge, all bool) [][]Edge {
	var out [][]Edge
	for i := 0; i < len(edges); {
		j := i
		for j < len(edges) && edges[j].Callee == edges[i].Callee {
			j++
		}
		group := edges[i:j]
		if all || slices.ContainsFunc(group, func(e Edge) bool { return configured(e.Policy) }) {
			out = append(out, group)
		}
		i = j
	}
	return out
}

// configured says whether a policy needs any proxy configuration.
func configured(p replay.Policy) bool {
	return p.MaxAttempts > 1 || p.HedgeAfter > 0 || p.Budget.Kind != replay.BudgetNone || p.Breaker.Enabled() || p.Deadline > 0 || p.PerTryTimeout > 0
}

// byOperation merges the edges of one callee into one policy per operation:
// a proxy's route is the callee's, whoever calls it. Callers that differ are
// noted, and the first caller's policy (in name order) is written.
func byOperation(group []Edge, n *notes) []Edge {
	var out []Edge
	for _, e := range group {
		if k := slices.IndexFunc(out, func(o Edge) bool { return o.Operation == e.Operation }); k >= 0 {
			if out[k].Policy != e.Policy {
				n.add(e, "callers differ in policy; %s has one route per operation, so %s's policy is written", n.format, out[k].Caller)
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// protoDuration writes seconds as a protobuf JSON duration ("0.025s"),
// rounded to the microsecond.
func protoDuration(seconds float64) string {
	us := math.Round(seconds * 1e6)
	return strconv.FormatFloat(us/1e6, 'f', -1, 64) + "s"
}

// splitOp splits a trace operation into an HTTP method and route
// ("GET /items/{id}"), or a gRPC service and method
// ("shop.Inventory/Reserve"); grpc says which.
func splitOp(op string) (method, path string, grpc bool) {
	if m, p, ok := strings.Cut(op, " "); ok && strings.HasPrefix(p, "/") {
		return m, p, false
	}
	if svc, m, ok := strings.Cut(op, "/"); ok && svc != "" && m != "" && !strings.Contains(m, "/") {
		return svc, m, true
	}
	return "", "", false
}

// routeRegex is a regular expression (RE2) matching the paths of a route
// template: each {param} matches one segment.
func routeRegex(template string) string {
	segs := strings.Split(template, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") || strings.HasPrefix(s, ":") {
			segs[i] = "[^/]+"
		} else {
			segs[i] = regexp.QuoteMeta(s)
		}
	}
	return strings.Join(segs, "/")
}

// yamlDocs renders values as YAML documents separated by ---, each after
// its own comment block (nil: none). *Duration fields are written as
// protobuf JSON has them ("0.25s"), which every project reads.
func yamlDocs(docs []any, heads [][]byte) ([]byte, error) {
	var b bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		if heads != nil && heads[i] != nil {
			b.Write(heads[i])
		}
		out, err := yaml.MarshalWithOptions(d, yaml.Indent(2), yaml.IndentSequence(true),
			yaml.CustomMarshaler(func(d *Duration) ([]byte, error) { return []byte(protoDuration(d.Seconds())), nil }))
		if err != nil {
			return nil, err
		}
		b.Write(out)
	}
	return b.Bytes(), nil
}

// jitterNote says how a vocabulary whose backoff has one fixed jitter
// differs from the policy's.
func jitterNote(n *notes, e Edge, fixed replay.JitterKind) {
	b := e.Policy.Backoff
	if e.Policy.MaxAttempts < 2 || e.Policy.HedgeAfter > 0 || b.Kind == "" || b.Kind == replay.BackoffImmediate {
		return
	}
	if j := b.Jitter; j != fixed && !(j == "" && fixed == replay.JitterNone) {
		if j == "" || j == replay.JitterNone {
			j = "no"
		}
		n.add(e, "%s jitter cannot be expressed (%s uses %s jitter)", j, n.format, fixed)
	}
}

func pfOrNone(s string) string {
	if s == "" {
		return "no"
	}
	return s
}

// budgetNote notes a budget a vocabulary has no equivalent for.
func budgetNote(n *notes, e Edge) {
	if e.Policy.Budget.Kind != replay.BudgetNone {
		n.add(e, "the %s retry budget cannot be expressed in %s", e.Policy.Budget.Kind, n.format)
	}
}

// backoffWords describes a backoff for notes: "exponential from 17ms ×1.5,
// no cap", "linear from 20ms +20ms, no cap", "constant 20ms", "steps 10ms,
// 40ms, 20ms", "immediate".
func backoffWords(b replay.Backoff) string {
	ms := func(s float64) string { return strconv.FormatFloat(math.Round(s*1e6)/1e3, 'f', -1, 64) + "ms" }
	if st := b.Steps; st != nil && len(st.ByRetry) > 0 {
		var w []string
		for _, x := range st.ByRetry {
			w = append(w, ms(x))
		}
		return "steps " + strings.Join(w, ", ")
	}
	switch b.Kind {
	case replay.BackoffConstant:
		return "constant " + ms(b.Base)
	case replay.BackoffLinear, replay.BackoffFibonacci:
		s := fmt.Sprintf("%s from %s +%s", b.Kind, ms(b.Base), ms(b.Increment))
		if b.Cap > 0 {
			return s + " capped at " + ms(b.Cap)
		}
		return s + ", no cap"
	case replay.BackoffExponential:
		m := b.Multiplier
		if m == 0 {
			m = 2
		}
		s := fmt.Sprintf("exponential from %s ×%g", ms(b.Base), m)
		if b.Cap > 0 {
			return s + " capped at " + ms(b.Cap)
		}
		return s + ", no cap"
	}
	return "immediate"
}

func pfPtr[T any](v T) *T { return &v }

// emitYAML is one file of YAML documents, the first after a comment with
// header and the notes, and the notes. With no document, the file is the
// comment alone.
func emitYAML(header string, docs []any, heads [][]byte, n *notes) (*Emitted, error) {
	if len(docs) == 0 {
		data := comments(header+": no callee needs configuration", n.list)
		return &Emitted{Files: []Output{{Data: data}}, Notes: n.list}, nil
	}
	heads[0] = comments(header, n.list)
	data, err := yamlDocs(docs, heads)
	if err != nil {
		return nil, err
	}
	return &Emitted{Files: []Output{{Data: data}}, Notes: n.list}, nil
}
