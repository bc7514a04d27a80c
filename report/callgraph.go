package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/retryaudit/retryaudit/graph"
)

// callGraph is the service graph that the DOT and Mermaid renderers draw:
// one node per service, one link per caller and callee, aggregated over the
// operations the caller calls.
type callGraph struct {
	nodes []callNode
	links []callLink
}

type callNode struct {
	// id is generated (n0, n1, …) so that it is safe in every format;
	// the name goes in a label.
	id      string
	label   string
	virtual bool
}

type callLink struct {
	from, to        int
	calls, attempts int
	// worst is the retrying operation that allows the most attempts, nil
	// when no operation on the link retries.
	worst *graph.Edge
	// edges are the link's operations, in the topology's order.
	edges []*graph.Edge
}

func newCallGraph(t *graph.Topology) callGraph {
	var g callGraph
	index := map[string]int{}
	node := func(name string, virtual bool) int {
		if i, ok := index[name]; ok {
			return i
		}
		index[name] = len(g.nodes)
		g.nodes = append(g.nodes, callNode{id: "n" + strconv.Itoa(len(g.nodes)), label: display(name), virtual: virtual})
		return index[name]
	}
	for _, s := range t.Services {
		node(s.Name, s.Virtual)
	}
	links := map[[2]int]int{}
	for i := range t.Edges {
		e := &t.Edges[i]
		key := [2]int{node(e.Caller, false), node(e.Callee, false)}
		li, ok := links[key]
		if !ok {
			li = len(g.links)
			links[key] = li
			g.links = append(g.links, callLink{from: key[0], to: key[1]})
		}
		l := &g.links[li]
		l.calls += e.Calls
		l.attempts += e.Attempts
		l.edges = append(l.edges, e)
		if e.Retries && (l.worst == nil || e.MaxAttempts > l.worst.MaxAttempts) {
			l.worst = e
		}
	}
	return g
}

// retryLabel is the attempts a retrying link allows: "×3", or "×≥2" for a
// lower bound.
func (l callLink) retryLabel() string { return "×" + maxAttempts(*l.worst) }

// TopologyDOT renders the call graph of a topology for Graphviz: one node
// per service (uninstrumented, virtual services dashed) and one edge per
// caller and callee, labelled with the calls made and, where the caller
// retries, the attempts it allows and its backoff, drawn red and bold.
// Every identifier and label is quoted and escaped.
func TopologyDOT(w io.Writer, t *graph.Topology) error {
	g := newCallGraph(t)
	sw := &stickyWriter{w: w}
	fmt.Fprintln(sw, `digraph "retry topology" {`)
	fmt.Fprintln(sw, `  rankdir="LR";`)
	fmt.Fprintln(sw, `  node [shape="box", fontname="Helvetica"];`)
	fmt.Fprintln(sw, `  edge [fontname="Helvetica", fontsize="10"];`)
	for _, n := range g.nodes {
		style := ""
		if n.virtual {
			style = `, style="dashed"`
		}
		fmt.Fprintf(sw, "  %s [label=%s%s];\n", dotQuote(n.id), dotQuote(n.label), style)
	}
	for _, l := range g.links {
		label := plural(l.calls, "call")
		attrs := ""
		if l.worst != nil {
			label = fmt.Sprintf("%s (%s)\n%s for %s", l.retryLabel(), backoffShort(l.worst.Backoff),
				plural(l.attempts, "attempt"), label)
			attrs = `, color="red", fontcolor="red", style="bold"`
		}
		fmt.Fprintf(sw, "  %s -> %s [label=%s%s];\n", dotQuote(g.nodes[l.from].id), dotQuote(g.nodes[l.to].id), dotQuote(label), attrs)
	}
	fmt.Fprintln(sw, "}")
	return sw.err
}

// TopologyMermaid renders the call graph of a topology as a Mermaid
// flowchart: nodes with generated ids and escaped labels, virtual services
// dashed, retrying links as thick arrows labelled with the attempts they
// allow.
func TopologyMermaid(w io.Writer, t *graph.Topology) error {
	g := newCallGraph(t)
	sw := &stickyWriter{w: w}
	fmt.Fprintln(sw, "flowchart LR")
	var virtual []string
	for _, n := range g.nodes {
		fmt.Fprintf(sw, "    %s[\"%s\"]\n", n.id, mermaidEscape(n.label))
		if n.virtual {
			virtual = append(virtual, n.id)
		}
	}
	for _, l := range g.links {
		from, to := g.nodes[l.from].id, g.nodes[l.to].id
		if l.worst != nil {
			fmt.Fprintf(sw, "    %s ==>|\"%s\"| %s\n", from, mermaidEscape(l.retryLabel()), to)
		} else {
			fmt.Fprintf(sw, "    %s --> %s\n", from, to)
		}
	}
	if len(virtual) > 0 {
		fmt.Fprintln(sw, "    classDef virtual stroke-dasharray: 5 5")
		fmt.Fprintf(sw, "    class %s virtual\n", strings.Join(virtual, ","))
	}
	return sw.err
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
