package graph

import (
	"slices"

	"github.com/retryaudit/retryaudit/ingest"
)

// shards deals the traces to inference's map steps (see the package
// comment for the phases). A map step reads the traces of one shard into a
// partial, the partials of all shards are merged in the shards' order, and
// the reduce reads the merged partial; an apply step rewrites the spans of
// one shard at a time from what an earlier reduce decided. Infer reads
// every trace as one shard (the zero shards); the shard test deals the
// traces at random and merges the partials in a random order, which must
// give the same topology byte for byte.
type shards struct {
	of    func(ingest.TraceID) int // a trace's shard; nil: one shard of every trace
	order []int                    // the shards, in the order their partials merge
	// sent is what every shard's partial goes through before it merges,
	// as from a map step in another process (the wire form,
	// encodePartial); nil: partials merge as they are.
	sent func(any) any
}

// sel selects the spans one map or apply step reads: those of the traces
// of one shard. nil selects every span.
type sel func(int32) bool

func (s sel) has(i int32) bool { return s == nil || s(i) }

// each runs step once per shard, in the shards' order.
func (ix *index) each(step func(sel)) {
	sh := ix.shards
	if sh.of == nil {
		step(nil)
		return
	}
	for _, k := range sh.order {
		step(func(i int32) bool { return sh.of(ix.spans[i].TraceID) == k })
	}
}

// mapShards runs the map step once per shard and merges the partials in
// the shards' order: merge(sum, p) adds p to sum. Every merge is
// associative and its result does not depend on the order of the
// partials, so one shard of every trace gives what any split does.
func mapShards[P any](ix *index, step func(sel) P, merge func(sum, p P)) P {
	var sum P
	first := true
	ix.each(func(s sel) {
		p := step(s)
		if ix.shards.sent != nil {
			p = ix.shards.sent(p).(P)
		}
		if first {
			sum, first = p, false
			return
		}
		merge(sum, p)
	})
	return sum
}

// addCounts is the merge of counts by key: it adds p's to sum.
func addCounts[K comparable](sum, p map[K]int) {
	for k, n := range p {
		sum[k] += n
	}
}

// perEdge is a per-edge partial: a value for each edge, named by the
// edge's key (its services and operations), not by its place in one
// grouping of the calls, so that a partial read in another process merges
// with the others by key. Every map step is given the same edges (the
// reduce of the calls), and its partial lists them in their order, so the
// merged partial's values are the edges' in that order.
type perEdge[T any] struct {
	keys []edgeKey
	of   []T
}

// edgeKeys is the keys of ecs, in order: the edges a per-edge partial is
// of (shared by the partials of every shard).
func edgeKeys(ecs []*edgeCalls) []edgeKey {
	keys := make([]edgeKey, len(ecs))
	for i, ec := range ecs {
		keys[i] = ec.key
	}
	return keys
}

// newPerEdge is a partial of keys' edges, each value made by zero (nil:
// T's zero value).
func newPerEdge[T any](keys []edgeKey, zero func() T) *perEdge[T] {
	e := &perEdge[T]{keys: keys, of: make([]T, len(keys))}
	if zero != nil {
		for i := range e.of {
			e.of[i] = zero()
		}
	}
	return e
}

// merge adds p's values to e's by add, edge by edge, matched by key; an
// edge that e does not have is added after its own.
func (e *perEdge[T]) merge(p *perEdge[T], add func(sum *T, v T)) {
	if slices.Equal(e.keys, p.keys) {
		for i, v := range p.of {
			add(&e.of[i], v)
		}
		return
	}
	at := make(map[edgeKey]int, len(e.keys))
	for i, k := range e.keys {
		at[k] = i
	}
	for j, k := range p.keys {
		i, ok := at[k]
		if !ok {
			e.keys = append(slices.Clip(e.keys), k)
			e.of = append(e.of, p.of[j])
			continue
		}
		add(&e.of[i], p.of[j])
	}
}

// addInt is the merge of a count.
func addInt(sum *int, n int) { *sum += n }

// in is e's values for the edges of keys, in their order (the zero value
// for an edge e does not have).
func (e *perEdge[T]) in(keys []edgeKey) []T {
	if len(e.keys) >= len(keys) && slices.Equal(e.keys[:len(keys)], keys) {
		return e.of[:len(keys)]
	}
	at := make(map[edgeKey]int, len(e.keys))
	for i, k := range e.keys {
		at[k] = i
	}
	out := make([]T, len(keys))
	for i, k := range keys {
		if j, ok := at[k]; ok {
			out[i] = e.of[j]
		}
	}
	return out
}
