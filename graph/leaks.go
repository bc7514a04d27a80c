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
//   - the same request repeated under one parent after it was answered (an
//     HTTP CLIENT span to the same destination, with the same URL and
//     reaching the same operation as an earlier sibling that had already
//     succeeded when it started; see repeatLeaked for when such a repeat
//     is another request's and when it is the parent's own poll).
//
// It returns how many spans start such a subtree for each shape, how many
// spans the subtrees hold in all, and how many repeats were kept as the
// parent's own. It runs in time linear in the spans, whatever their depth.
func (ix *index) markLeaks() (late, repeats, spans, polls int) {
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
		ix.leakRoots = append(ix.leakRoots, int32(i))
		mark(int32(i))
	}
	origins := ix.unretriedFailures()
	answered := map[repeatKey]int64{} // when each request was first answered, per parent
	last := map[repeatKey]int{}       // the last sibling sending each request, per parent
	leakedFailure := map[repeatKey]bool{}
	var keys []repeatKey
	var ok []bool
	for p := range ix.spans {
		kids := ix.kids(int32(p))
		if len(kids) < 2 || !ix.keep[p] || ix.leaked[p] {
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
					repeats++
					ix.leakRoots = append(ix.leakRoots, c)
					mark(c)
					leakedFailure[k] = o == outcomeRetryable
				} else {
					polls++
				}
				continue
			}
			if _, seen := answered[k]; !seen && o == outcomeOK {
				answered[k] = ix.spans[c].End
			}
		}
	}
	return late, repeats, spans, polls
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
func (ix *index) repeatLeaked(p, c int32, k repeatKey, o outcome, sentAgain, afterLeakedFailure bool, origins map[repeatKey][]origin) bool {
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
// under its parent in its own trace: in which trace, when it failed, and
// until when its parent still waited.
type origin struct {
	trace              ingest.TraceID
	failedAt, waitedTo int64
}

// maxOrigins bounds the unretried failures kept per request: a request
// that fails unretried in more traces than that is too common to tell
// which of them a copy elsewhere belongs to, and the first found stand.
const maxOrigins = 64

// unretriedFailures lists, per request, the attempts that failed
// retryably with no later attempt of the same request under their parent.
func (ix *index) unretriedFailures() map[repeatKey][]origin {
	out := map[repeatKey][]origin{}
	lastAt := map[repeatKey]int32{}
	for p := range ix.spans {
		kids := ix.kids(int32(p))
		if len(kids) == 0 || !ix.keep[p] || ix.leaked[p] {
			continue
		}
		clear(lastAt)
		for _, c := range kids {
			if k, ok := ix.repeatKeyOf(c); ok {
				lastAt[k] = c
			}
		}
		for k, c := range lastAt {
			if o, _ := classify(ix, c, ix.firstServer(c)); o != outcomeRetryable || len(out[k]) >= maxOrigins {
				continue
			}
			out[k] = append(out[k], origin{trace: ix.spans[c].TraceID, failedAt: ix.spans[c].End, waitedTo: ix.spans[p].End})
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

// leakedAttempts counts, for each edge of ecs, the leaked client spans
// (leak roots) that its caller's operation sent to its callee's: attempts
// that were made on the edge but ran in another request's context, so the
// calls they belong to show fewer attempts than they made. A leaked span
// is named as an attempt would be (its server child, or its peer); one
// whose name matches no edge is not counted.
func leakedAttempts(ix *index, names *naming, ecs []*edgeCalls) []int {
	out := make([]int, len(ecs))
	if len(ix.leakRoots) == 0 {
		return out
	}
	at := make(map[edgeKey]int, len(ecs))
	for i, ec := range ecs {
		at[ec.key] = i
	}
	for _, r := range ix.leakRoots {
		p := ix.parent[r]
		if p < 0 {
			continue
		}
		callee, op := names.resolve(ix, r, ix.firstServer(r))
		k := edgeKey{caller: ix.str(ix.spans[p].Service), callerOp: ix.opName(ix.serverOf(p)), callee: callee, op: op}
		if i, ok := at[k]; ok {
			out[i]++
		}
	}
	return out
}
