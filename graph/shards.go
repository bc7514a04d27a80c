package graph

import "github.com/retryaudit/retryaudit/ingest"

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

// addInts is the merge of per-edge counts: it adds p's to sum.
func addInts(sum, p []int) {
	for i, n := range p {
		sum[i] += n
	}
}

// addCounts is the merge of counts by key: it adds p's to sum.
func addCounts[K comparable](sum, p map[K]int) {
	for k, n := range p {
		sum[k] += n
	}
}
