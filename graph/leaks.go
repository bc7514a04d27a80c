package graph

import "github.com/retryaudit/retryaudit/ingest"

// leakTolerance is how long after its parent ended a client span may
// start and still be the parent's own (timestamps rounded by exporters,
// an end recorded a hair early).
const leakTolerance = 1_000_000 // ns

// markLeaks finds client spans that started after their parent span had
// ended, and marks them with everything below them. Retries run in the
// context of another request (undici's RetryAgent on a reused keep-alive
// socket, a pooled connection's stale context) land so, in other traces
// under SERVER spans that are already over: counting them would add
// attempts, amplification and "retry after the caller gave up" to a
// request they never belonged to. It returns how many spans start such a
// subtree and how many spans the subtrees hold. It runs in time linear in
// the spans, whatever their depth.
func (ix *index) markLeaks() (roots, spans int) {
	ix.leaked = make([]bool, len(ix.spans))
	var stack []int32
	for i := range ix.spans {
		sp := &ix.spans[i]
		p := ix.parent[i]
		// CLIENT spans only: a PRODUCER publishing after its parent
		// answered is ordinary asynchronous work.
		if !ix.keep[i] || p < 0 || sp.Kind != ingest.KindClient || sp.Start <= ix.spans[p].End+leakTolerance {
			continue
		}
		roots++
		stack = append(stack[:0], int32(i))
		for len(stack) > 0 {
			s := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if ix.leaked[s] {
				continue // already marked from a leaked ancestor
			}
			ix.leaked[s] = true
			spans++
			stack = append(stack, ix.kids(s)...)
		}
	}
	return roots, spans
}
