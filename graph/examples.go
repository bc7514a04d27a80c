package graph

import (
	"slices"
	"strings"
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

// rootExamples picks up to three root requests as the examples of a
// user edge: failed ones first, then by trace and span id.
func rootExamples(ix *index, roots []int32) []Example {
	failed := func(s int32) bool { o, _ := classify(ix, s, s); return o.failed() }
	better := func(a, b int32) bool {
		if fa, fb := failed(a), failed(b); fa != fb {
			return fa
		}
		return compareKeys(keyOf(&ix.spans[a], 0), keyOf(&ix.spans[b], 0)) < 0
	}
	var best []int32
	for _, r := range roots {
		i := len(best)
		for i > 0 && better(r, best[i-1]) {
			i--
		}
		if i < maxExamples {
			best = slices.Insert(best, i, r)[:min(len(best)+1, maxExamples)]
		}
	}
	out := make([]Example, len(best))
	for i, r := range best {
		sp := &ix.spans[r]
		out[i] = Example{TraceID: sp.TraceID.String(), SpanIDs: []string{sp.SpanID.String()}}
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
