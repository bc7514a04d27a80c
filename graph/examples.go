package graph

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"github.com/retryaudit/retryaudit/ingest"
)

// Example points at one trace that shows what an edge or a finding
// describes, so a user can open it in Jaeger or Tempo: the trace id and the
// span ids of the attempts involved (32 and 16 lowercase hex digits).
type Example struct {
	TraceID string   `json:"trace_id"`
	SpanIDs []string `json:"span_ids,omitempty"`
}

// maxExamples is how many example traces an edge or a finding carries.
const maxExamples = 3

// findingExamples holds, per edge (by index) and finding id, the examples
// of the calls that show that finding.
type findingExamples []map[string][]Example

// of returns the examples of edge i's finding id: the calls that show it
// when inference kept them, else the edge's own.
func (f findingExamples) of(i int, e Edge, id string) []Example {
	if i < len(f) {
		if ex := f[i][id]; len(ex) > 0 {
			return ex
		}
	}
	return e.Examples
}

// rootExample is a root request as an example of its user edge, by
// value: its trace and span id and whether it failed.
type rootExample struct {
	trace  ingest.TraceID
	span   ingest.SpanID
	failed bool
}

// better orders the examples of a user edge: failed ones first, then by
// trace and span id.
func (x rootExample) better(y rootExample) bool {
	if x.failed != y.failed {
		return x.failed
	}
	return cmp.Or(bytes.Compare(x.trace[:], y.trace[:]), bytes.Compare(x.span[:], y.span[:])) < 0
}

// addExample keeps x among o's examples if it is one of the best
// maxExamples seen: whatever order the requests come in, the same ones.
func (o *rootOp) addExample(x rootExample) {
	i := len(o.examples)
	for i > 0 && x.better(o.examples[i-1]) {
		i--
	}
	if i < maxExamples {
		o.examples = slices.Insert(o.examples, i, x)[:min(len(o.examples)+1, maxExamples)]
	}
}

// rootExampleList is a user edge's examples.
func rootExampleList(xs []rootExample) []Example {
	out := make([]Example, len(xs))
	for i, x := range xs {
		out[i] = Example{TraceID: x.trace.String(), SpanIDs: []string{x.span.String()}}
	}
	return out
}

// mergeExamples joins example lists, one per trace, at most maxExamples,
// in the order given.
func mergeExamples(lists ...[]Example) []Example {
	var out []Example
	for _, l := range lists {
		for _, ex := range l {
			if len(out) == maxExamples {
				return out
			}
			if !slices.ContainsFunc(out, func(o Example) bool { return strings.EqualFold(o.TraceID, ex.TraceID) }) {
				out = append(out, ex)
			}
		}
	}
	return out
}
