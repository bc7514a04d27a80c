package graph

import (
	"slices"
	"testing"
)

// TestPathThroughCycle: a request that loops back to an operation already
// on its chain (a → b → a) is a path that ends where it would repeat; a
// chain whose every call closes a cycle used to give no path at all, and
// the headline "no calls between services".
func TestPathThroughCycle(t *testing.T) {
	b := newBuilder()
	root := b.server(-1, "a", "GET /x", 0, 30)
	_, bs := b.call(root, "b", "GET /y", 1, 20)
	b.call(bs, "a", "GET /x", 2, 10)
	tp := b.infer()
	if len(tp.Paths) != 1 || !slices.Equal(tp.Paths[0].Services, []string{"a", "b"}) {
		t.Fatalf("paths %+v, want one: a → b", tp.Paths)
	}
	b = newBuilder()
	b.server(-1, "a", "GET /x", 0, 30)
	if tp = b.infer(); tp.Paths == nil {
		t.Error("a root that calls nothing: paths is nil, want an empty list (JSON [] rather than null)")
	}
}
