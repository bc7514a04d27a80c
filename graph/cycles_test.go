package graph

import "testing"

// TestParentCycles: a parent cycle or a self-parent is warned about and
// broken; it never makes up an x → x edge.
func TestParentCycles(t *testing.T) {
	b := newBuilder()
	root := b.server(-1, "a", "GET /", 0, 100)
	_, s1 := b.call(root, "b", "GET /b", 10, 50, httpStatus(200))
	c2 := b.client(s1, "a", 20, 10, httpStatus(200))
	// a's root span names b's client span as its parent: a → b → a → …
	b.set.Spans[root].ParentID = b.set.Spans[c2].SpanID
	// And a span in another trace that is its own parent.
	b.newTrace()
	self := b.server(-1, "c", "GET /c", 0, 10)
	b.set.Spans[self].ParentID = b.set.Spans[self].SpanID
	tp := b.infer()
	for _, e := range tp.Edges {
		if e.Caller == e.Callee {
			t.Errorf("invented edge %s → %s", e.Caller, e.Callee)
		}
	}
	edge(t, tp, "a", "b")
	if !hasWarning(tp, "1 spans name themselves as parent and 1 parent cycles were found") {
		t.Errorf("no cycle warning in %q", tp.Warnings)
	}
}
