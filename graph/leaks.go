package graph

import "github.com/retryaudit/retryaudit/ingest"

// leakTolerance is how long after its parent ended a client span may
// start and still be the parent's own (timestamps rounded by exporters,
// an end recorded a hair early).
const leakTolerance = 1_000_000 // ns

// markLeaks finds the client spans that ran in the context of another
// request, and marks them with everything below them. Retries run in the
// context of another request (undici's RetryAgent on a reused keep-alive
// socket, a pooled worker's stale context) land in other traces, under
// spans that are not their caller's: counting them would add attempts,
// amplification and "retry after the caller gave up" to a request they
// never belonged to. Two shapes show it:
//
//   - a CLIENT span that starts after its parent span had ended (a parent
//     that is over makes no more calls);
//   - the same request repeated under one parent after it was answered: an
//     HTTP CLIENT span to the same destination, with the same URL and
//     reaching the same operation as an earlier sibling that had already
//     succeeded when it started. A retry follows a failure and a hedge
//     overlaps the request it hedges; an HTTP request already answered is
//     sent again only by another request's code. (A database statement is
//     no such identity: one parametrised statement serves a whole loop.)
//
// It returns how many spans start such a subtree for each shape and how
// many spans the subtrees hold in all. It runs in time linear in the
// spans, whatever their depth.
func (ix *index) markLeaks() (late, repeats, spans int) {
	ix.leaked = make([]bool, len(ix.spans))
	var stack []int32
	mark := func(i int32) {
		stack = append(stack[:0], i)
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
	for i := range ix.spans {
		sp := &ix.spans[i]
		p := ix.parent[i]
		// CLIENT spans only: a PRODUCER publishing after its parent
		// answered is ordinary asynchronous work.
		if !ix.keep[i] || p < 0 || sp.Kind != ingest.KindClient || sp.Start <= ix.spans[p].End+leakTolerance {
			continue
		}
		late++
		mark(int32(i))
	}
	answered := map[repeatKey]int64{} // when each request was first answered, per parent
	for p := range ix.spans {
		kids := ix.kids(int32(p))
		if len(kids) < 2 || !ix.keep[p] || ix.leaked[p] {
			continue
		}
		clear(answered)
		for _, c := range kids {
			k, ok := ix.repeatKeyOf(c)
			if !ok {
				continue
			}
			if at, seen := answered[k]; seen && ix.spans[c].Start >= at-overlapTolerance {
				repeats++
				mark(c)
				continue
			}
			if _, seen := answered[k]; !seen {
				if o, _ := classify(ix, c, ix.firstServer(c)); o == outcomeOK {
					answered[k] = ix.spans[c].End
				}
			}
		}
	}
	return late, repeats, spans
}

// repeatKey is what makes two sibling client spans the same request: the
// request identity, and the operation that answered it (or the peer the
// client named when no server span was exported).
type repeatKey struct {
	target   uint64
	callee   ingest.Sym
	op, peer string
}

// repeatKeyOf returns client span c's repeatKey; false for spans that are
// not an application's HTTP client attempt with a URL (marker
// attempt spans and sidecar tries belong to their call span).
func (ix *index) repeatKeyOf(c int32) (repeatKey, bool) {
	sp := &ix.spans[c]
	if !ix.keep[c] || ix.leaked[c] || sp.Kind != ingest.KindClient || sp.Target == 0 || !httpMethod(ix.str(sp.Method)) ||
		sp.PrevAttempts != ingest.Absent || sp.Has(ingest.FlagProxy) {
		return repeatKey{}, false
	}
	k := repeatKey{target: sp.Target, op: ix.clientOpName(c)}
	if s := ix.firstServer(c); s >= 0 {
		k.callee, k.op = ix.spans[s].Service, ix.opName(s)
	} else {
		k.peer = ix.str(sp.Peer)
	}
	return k, true
}
