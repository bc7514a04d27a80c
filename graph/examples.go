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

// callExample is the example a call gives: its trace and its attempts' spans.
func callExample(ix *index, c *call) Example {
	ex := Example{TraceID: ix.spans[c.from].TraceID.String()}
	for _, a := range c.attempts {
		id := ix.spans[a.span].SpanID.String()
		if n := len(ex.SpanIDs); n == 0 || ex.SpanIDs[n-1] != id { // synthetic attempts share a span
			ex.SpanIDs = append(ex.SpanIDs, id)
		}
	}
	return ex
}

// edgeExamples picks the calls that best show an edge: those with the most
// attempts (retries, hedges) first, then by trace and span id, at most one
// per trace, so the choice does not depend on input order.
func edgeExamples(ix *index, calls []*call) []Example {
	best := make([]*call, 0, maxExamples+1)
	better := func(a, b *call) bool {
		na, nb := len(a.attempts)+a.missing, len(b.attempts)+b.missing
		if na != nb {
			return na > nb
		}
		if a.hedged != b.hedged {
			return a.hedged
		}
		return compareKeys(keyOf(&ix.spans[a.from], 0), keyOf(&ix.spans[b.from], 0)) < 0
	}
	for _, c := range calls {
		// Keep the best few in order: a bounded insertion, linear in calls.
		tr := ix.spans[c.from].TraceID
		dup := -1
		for i, b := range best {
			if ix.spans[b.from].TraceID == tr {
				dup = i
			}
		}
		if dup >= 0 {
			if !better(c, best[dup]) {
				continue
			}
			best = slices.Delete(best, dup, dup+1)
		}
		i := len(best)
		for i > 0 && better(c, best[i-1]) {
			i--
		}
		if i >= maxExamples {
			continue
		}
		best = slices.Insert(best, i, c)
		if len(best) > maxExamples {
			best = best[:maxExamples]
		}
	}
	out := make([]Example, len(best))
	for i, c := range best {
		out[i] = callExample(ix, c)
	}
	return out
}

// findingCalls gathers, per finding id, the calls of an edge that show
// that finding, for its examples.
type findingCalls map[string][]*call

func (f findingCalls) add(id string, c *call) {
	if l := f[id]; len(l) == 0 || l[len(l)-1] != c {
		f[id] = append(l, c)
	}
}

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
