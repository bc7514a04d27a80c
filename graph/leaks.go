package graph

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/retryaudit/retryaudit/ingest"
)

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
//   - the same request repeated under one parent after it was answered (an
//     HTTP CLIENT span to the same destination, with the same URL and
//     reaching the same operation as an earlier sibling that had already
//     succeeded when it started; see repeatLeaked for when such a repeat
//     is another request's and when it is the parent's own poll).
//
// It counts the spans that start such a subtree for each shape (ix.leaks,
// ix.repeats), the spans the subtrees hold in all (ix.leakedSpans), and the
// repeats kept as the parent's own (ix.polls). It runs in time linear in
// the spans, whatever their depth.
//
// A repeat is judged against the unretried failures of the same request in
// every other trace (phase 1: each shard's are read and merged, see
// origins); the late spans before, and the repeats after, are marked trace
// by trace.
func (ix *index) markLeaks() {
	ix.leaked = make([]bool, len(ix.spans))
	ix.each(ix.markLate)
	origins := mapShards(ix, ix.unretriedFailures, origins.merge)
	ix.each(func(s sel) { ix.markRepeats(s, origins) })
}

// markSubtree marks span i and everything below it as leaked.
func (ix *index) markSubtree(i int32, stack []int32) []int32 {
	stack = append(stack[:0], i)
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if ix.leaked[s] {
			continue // already marked from a leaked ancestor
		}
		ix.leaked[s] = true
		ix.leakedSpans++
		stack = append(stack, ix.kids(s)...)
	}
	return stack
}

// markLate marks the selected CLIENT spans that started after their parent
// ended. CLIENT spans only: a PRODUCER publishing after its parent answered
// is ordinary asynchronous work.
func (ix *index) markLate(s sel) {
	var stack []int32
	for i := range ix.spans {
		sp := &ix.spans[i]
		p := ix.parent[i]
		if !ix.keep[i] || p < 0 || sp.Kind != ingest.KindClient || sp.Start <= ix.spans[p].End+leakTolerance || !s.has(int32(i)) {
			continue
		}
		ix.leaks++
		ix.leakRoots = append(ix.leakRoots, int32(i))
		stack = ix.markSubtree(int32(i), stack)
	}
}

// markRepeats marks the selected requests repeated under their parent
// after it had them answered that another request sent (repeatLeaked).
func (ix *index) markRepeats(s sel, origins origins) {
	answered := map[repeatKey]int64{} // when each request was first answered, per parent
	last := map[repeatKey]int{}       // the last sibling sending each request, per parent
	leakedFailure := map[repeatKey]bool{}
	var keys []repeatKey
	var ok []bool
	var stack []int32
	for p := range ix.spans {
		kids := ix.kids(int32(p))
		if len(kids) < 2 || !ix.keep[p] || ix.leaked[p] || !s.has(int32(p)) {
			continue
		}
		clear(answered)
		clear(last)
		clear(leakedFailure)
		keys, ok = keys[:0], ok[:0]
		for j, c := range kids {
			k, has := ix.repeatKeyOf(c)
			keys, ok = append(keys, k), append(ok, has)
			if has {
				last[k] = j
			}
		}
		for j, c := range kids {
			if !ok[j] {
				continue
			}
			k := keys[j]
			o, _ := classify(ix, c, ix.firstServer(c))
			if at, seen := answered[k]; seen && ix.spans[c].Start >= at-overlapTolerance {
				sentAgain := last[k] > j
				if ix.repeatLeaked(int32(p), c, k, o, sentAgain, leakedFailure[k], origins) {
					ix.repeats++
					ix.leakRoots = append(ix.leakRoots, c)
					stack = ix.markSubtree(c, stack)
					leakedFailure[k] = o == outcomeRetryable
				} else {
					ix.polls++
				}
				continue
			}
			if _, seen := answered[k]; !seen && o == outcomeOK {
				answered[k] = ix.spans[c].End
			}
		}
	}
}

// repeatLeaked decides whether client span c, which sends request k again
// under parent p after p had it answered, ran in another request's
// context. A parent polls what it already had answered (a status, a job,
// a lock) and waits for each answer; a retrying agent on a reused
// connection sends another request's retries, which the parent neither
// asked for nor waits on. The copy is another request's when
//
//   - it outlived the parent: the parent did not wait for its answer;
//   - it is being retried: it failed retryably and is sent again, or it
//     follows a copy that was (the parent had its answer: these retries
//     are not its own);
//   - the request's own retry is missing where it belongs: in another
//     trace the same request failed retryably and was not tried again
//     under its parent, which was still waiting from that failure until
//     after this copy ended.
//
// Otherwise (answered copies, within the parent's time, with nothing
// missing elsewhere) it is the parent's own poll; a leaked retry that
// succeeded at once and whose own trace was not sampled looks the same,
// and is counted as a poll (the warning says how many).
func (ix *index) repeatLeaked(p, c int32, k repeatKey, o outcome, sentAgain, afterLeakedFailure bool, origins origins) bool {
	sp := &ix.spans[c]
	if sp.End > ix.spans[p].End+leakTolerance {
		return true
	}
	if o == outcomeRetryable && sentAgain || afterLeakedFailure {
		return true
	}
	for _, or := range origins[k] {
		if or.trace != sp.TraceID && or.failedAt <= sp.Start+overlapTolerance && sp.End <= or.waitedTo+leakTolerance {
			return true
		}
	}
	return false
}

// origin is an HTTP request that failed retryably and was not tried again
// under its parent in its own trace: in which trace and under which parent
// span, when it failed, and until when its parent still waited.
type origin struct {
	trace              ingest.TraceID
	parent             ingest.SpanID
	failedAt, waitedTo int64
}

// maxOrigins bounds the unretried failures kept per request: a request
// that fails unretried in more traces than that is too common to tell
// which of them a copy elsewhere belongs to, and the first by trace and
// parent span id stand (whatever order the traces came in).
const maxOrigins = 64

// origins lists, per request, its unretried failures in order of trace and
// parent span id, at most maxOrigins of them.
type origins map[repeatKey][]origin

func cmpOrigin(a, b origin) int {
	return cmp.Or(bytes.Compare(a.trace[:], b.trace[:]), bytes.Compare(a.parent[:], b.parent[:]))
}

// add keeps o if it is among the first maxOrigins of its request.
func (os origins) add(k repeatKey, o origin) {
	l := os[k]
	i, _ := slices.BinarySearchFunc(l, o, cmpOrigin)
	if i >= maxOrigins {
		return
	}
	l = slices.Insert(l, i, o)
	os[k] = l[:min(len(l), maxOrigins)]
}

// merge adds p's failures (of other traces) to os: the first maxOrigins of
// both, whichever order shards merge in.
func (os origins) merge(p origins) {
	for k, l := range p {
		for _, o := range l {
			os.add(k, o)
		}
	}
}

// unretriedFailures is phase 1's map step for the leak rule: per request,
// the selected attempts that failed retryably with no later attempt of the
// same request under their parent.
func (ix *index) unretriedFailures(s sel) origins {
	out := origins{}
	lastAt := map[repeatKey]int32{}
	for p := range ix.spans {
		kids := ix.kids(int32(p))
		if len(kids) == 0 || !ix.keep[p] || ix.leaked[p] || !s.has(int32(p)) {
			continue
		}
		clear(lastAt)
		for _, c := range kids {
			if k, ok := ix.repeatKeyOf(c); ok {
				lastAt[k] = c
			}
		}
		for k, c := range lastAt {
			if o, _ := classify(ix, c, ix.firstServer(c)); o == outcomeRetryable {
				out.add(k, origin{trace: ix.spans[c].TraceID, parent: ix.spans[p].SpanID, failedAt: ix.spans[c].End, waitedTo: ix.spans[p].End})
			}
		}
	}
	return out
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
		ix.set.Extra(sp).PrevAttempts != ingest.Absent || sp.Has(ingest.FlagProxy) {
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

// leakedAttempts counts, for each edge of ecs, the leaked client spans
// (leak roots) that its caller's operation sent to its callee's: attempts
// that were made on the edge but ran in another request's context, so the
// calls they belong to show fewer attempts than they made. A leaked span
// is named as an attempt would be (its server child, or its peer); one
// whose name matches no edge is not counted.
func leakedAttempts(ix *index, names *naming, ecs []*edgeCalls) []int {
	if len(ix.leakRoots) == 0 {
		return make([]int, len(ecs))
	}
	at := make(map[edgeKey]int, len(ecs))
	for i, ec := range ecs {
		at[ec.key] = i
	}
	keys := edgeKeys(ecs)
	return mapShards(ix, func(s sel) *perEdge[int] {
		out := newPerEdge[int](keys, nil)
		for _, r := range ix.leakRoots {
			p := ix.parent[r]
			if p < 0 || !s.has(r) {
				continue
			}
			callee, op := names.resolve(ix, r, ix.firstServer(r))
			k := edgeKey{caller: ix.str(ix.spans[p].Service), callerOp: ix.opName(ix.serverOf(p)), callee: callee, op: op}
			if i, ok := at[k]; ok {
				out.of[i]++
			}
		}
		return out
	}, func(sum, p *perEdge[int]) { sum.merge(p, addInt) }).in(keys)
}
