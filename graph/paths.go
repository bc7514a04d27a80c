package graph

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// node is a service serving one operation.
type node struct{ svc, op string }

// maxPathSteps bounds the walk that enumerates paths: steps are nodes
// visited along chains, each costing up to the chain's length.
const maxPathSteps = 100_000

// userCaller names the callers outside the traces: whoever sent the root
// requests.
const userCaller = "user"

// buildPaths enumerates every chain of edges from a root operation to an
// operation that calls nothing further, with its worst-case amplification
// (the product of max attempts) and the highest amplification one root
// request really saw.
//
// The chains of a graph with many operations calling each other can
// outnumber anything a reader could use (they grow exponentially with the
// crossings), so the walk stops after maxPathSteps steps and reports that
// it did (truncated).
func buildPaths(ix *index, edges []Edge, byServer *serverCalls, roots map[node]*rootOp) (paths []Path, truncated bool) {
	out := map[node][]int{}
	for i, e := range edges {
		if e.Caller == userCaller {
			continue
		}
		n := node{e.Caller, e.CallerOperation}
		out[n] = append(out[n], i)
	}
	rootNodes := sortedNodes(roots)
	observed := observedAmplification(ix, byServer)
	steps := 0
	var walk func(n node, chain []int, onStack map[node]bool)
	walk = func(n node, chain []int, onStack map[node]bool) {
		if steps++; steps > maxPathSteps {
			truncated = true
			return
		}
		onStack[n] = true
		walked := false
		for _, i := range out[n] {
			m := node{edges[i].Callee, edges[i].Operation}
			if onStack[m] {
				continue // a cycle: the path ends where it would repeat
			}
			walked = true
			walk(m, append(chain[:len(chain):len(chain)], i), onStack)
		}
		delete(onStack, n)
		if !walked && len(chain) > 0 {
			// No call goes on, or each would close a cycle: the chain is a path.
			paths = append(paths, makePath(edges, chain, observed.observed(chain)))
		}
	}
	for _, r := range rootNodes {
		walk(r, nil, map[node]bool{})
	}
	if paths == nil {
		paths = []Path{}
	}
	sort.SliceStable(paths, func(i, j int) bool {
		if paths[i].WorstCaseAmplification != paths[j].WorstCaseAmplification {
			return paths[i].WorstCaseAmplification > paths[j].WorstCaseAmplification
		}
		return slices.Compare(paths[i].Operations, paths[j].Operations) < 0
	})
	return paths, truncated
}

// amplification is how many requests one call on edge e can become at
// worst: its max attempts, or the most requests a hedged call sent when
// that is more (a call allowed N concurrent requests multiplies by N).
// exact is false when the figure is a lower bound: retries never seen
// exhausted or unknown (RetriesUnknown), or hedging, whose limit the
// traces only bound from below.
func amplification(e Edge) (factor int, exact bool) {
	factor, exact = e.MaxAttempts, e.MaxAttemptsExact || !e.Retries && !e.RetriesUnknown
	if h := e.Hedging; h != nil && h.MaxRequests > factor {
		factor, exact = h.MaxRequests, false
	}
	return factor, exact
}

// sortedNodes lists the root nodes by service, then operation.
func sortedNodes[V any](roots map[node]V) []node {
	out := make([]node, 0, len(roots))
	for n := range roots {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b node) int { return cmp.Or(strings.Compare(a.svc, b.svc), strings.Compare(a.op, b.op)) })
	return out
}

func makePath(edges []Edge, chain []int, observed float64) Path {
	p := Path{WorstCaseAmplification: 1, WorstCaseExact: true, RetryingLayers: []string{}, ObservedMaxAmplification: round3(observed)}
	first := edges[chain[0]]
	p.Services = append(p.Services, first.Caller)
	p.Operations = append(p.Operations, first.CallerOperation)
	var examples [][]Example
	for _, i := range chain {
		e := edges[i]
		p.Services = append(p.Services, e.Callee)
		p.Operations = append(p.Operations, e.Operation)
		factor, exact := amplification(e)
		p.WorstCaseAmplification *= factor
		if e.Retries || factor > 1 {
			examples = append([][]Example{e.Examples}, examples...)
			p.RetryingLayers = append(p.RetryingLayers, e.Caller)
			if e.RetriesBy == "proxy and application" {
				// Two layers of one service: its code, and its sidecar
				// retrying each of its attempts.
				p.RetryingLayers = append(p.RetryingLayers, e.Caller+" (sidecar)")
			}
			p.WorstCaseExact = p.WorstCaseExact && exact
		}
		if e.RetriesUnknown {
			// Whether this layer retries is unknown: the product is a
			// lower bound, and no retrying layer is claimed.
			p.WorstCaseExact = false
		}
	}
	p.Examples = mergeExamples(examples...)
	return p
}

// callsByServer maps each SERVER span to the edge calls made while serving
// it, as offsets into one slice (a map of a million slices costs more than
// the rest of path building).
type serverCalls struct {
	off   []int32
	calls []edgeCall
	ecs   []*edgeCalls
}

func (s *serverCalls) call(e edgeCall) *call { return s.ecs[e.edge].calls[e.k] }

func (s *serverCalls) of(span int32) []edgeCall { return s.calls[s.off[span]:s.off[span+1]] }

func callsByServer(ix *index, ecs []*edgeCalls) *serverCalls {
	n := len(ix.spans)
	// off[s] counts s's calls, then sums them up to s (the end of s's
	// range); filling from the last call back moves each back to its
	// range's start. No list of the servers or copy of off is made (at
	// 10M spans 80 MB at inference's peak).
	sc := &serverCalls{off: make([]int32, n+1), ecs: ecs}
	total := 0
	for _, ec := range ecs {
		for _, c := range ec.calls {
			sc.off[ix.serverOf(c.from)]++
		}
		total += len(ec.calls)
	}
	for i := 1; i < n; i++ {
		sc.off[i] += sc.off[i-1]
	}
	sc.off[n] = int32(total)
	sc.calls = make([]edgeCall, total)
	for ei := len(ecs) - 1; ei >= 0; ei-- {
		calls := ecs[ei].calls
		for k := len(calls) - 1; k >= 0; k-- {
			s := ix.serverOf(calls[k].from)
			sc.off[s]--
			sc.calls[sc.off[s]] = edgeCall{int32(ei), int32(k)}
		}
	}
	return sc
}

// concurrency is how an edge's calls overlap others made while serving
// the same request.
type concurrency struct {
	// Share overlapped any other call; OtherShare a call of another edge.
	Share, OtherShare float64
	// Width is the median, over the requests that made several calls of
	// the edge, of the most of them in flight at once: 1 for a loop that
	// waits for each call, N for a pool of N workers or a fan-out of N.
	// 0 where no request made more than one.
	Width int
}

// concurrencyOf measures, per edge, how its calls overlapped other calls
// made while serving the same request.
func concurrencyOf(ix *index, ecs []*edgeCalls, byServer *serverCalls) []concurrency {
	keys := edgeKeys(ecs)
	o := mapShards(ix, func(s sel) *perEdge[overlaps] { return overlappingCalls(ix, s, keys, byServer) },
		func(sum, p *perEdge[overlaps]) { sum.merge(p, (*overlaps).merge) }).in(keys)
	out := make([]concurrency, len(ecs))
	for i, ec := range ecs {
		out[i] = concurrency{Share: round3(float64(o[i].any) / float64(len(ec.calls))),
			OtherShare: round3(float64(o[i].other) / float64(len(ec.calls))), Width: medianCount(o[i].widths)}
	}
	return out
}

// overlaps is what concurrencyOf's map step counts of one edge: the calls
// that overlapped any other call of their request and those that
// overlapped a call of another edge, and how many requests had each width.
type overlaps struct {
	any, other int
	widths     map[int]int
}

func (o *overlaps) merge(p overlaps) {
	o.any += p.any
	o.other += p.other
	if o.widths == nil {
		o.widths = map[int]int{}
	}
	addCounts(o.widths, p.widths)
}

// medianCount is the median of values given as counts (the lower of the
// middle two), 0 for none.
func medianCount(counts map[int]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	seen := 0
	for _, v := range slices.Sorted(maps.Keys(counts)) {
		if seen += counts[v]; 2*seen >= n {
			return v
		}
	}
	return 0
}

// overlappingCalls is the map step of concurrencyOf over the selected
// requests.
func overlappingCalls(ix *index, sl sel, keys []edgeKey, byServer *serverCalls) *perEdge[overlaps] {
	o := newPerEdge(keys, func() overlaps { return overlaps{widths: map[int]int{}} })
	type span struct {
		start, end int64
		edge       int
	}
	var calls []span
	var ends []int64
	var marked []bool
	for s := range ix.spans {
		here := byServer.of(int32(s))
		if len(here) < 2 || !sl.has(int32(s)) {
			continue
		}
		calls = calls[:0]
		for _, ec := range here {
			a := ix.attemptsOf(byServer.call(ec))
			calls = append(calls, span{ix.spans[a[0].span].Start, ix.spans[a[len(a)-1].span].End, int(ec.edge)})
		}
		// By edge, then start: each edge's calls in order, for its width.
		slices.SortFunc(calls, func(x, y span) int {
			return cmp.Or(cmp.Compare(x.edge, y.edge), cmpInt64(x.start, y.start))
		})
		for lo := 0; lo < len(calls); {
			hi := lo + 1
			for hi < len(calls) && calls[hi].edge == calls[lo].edge {
				hi++
			}
			if hi-lo > 1 {
				// The most calls in flight at once: each start against the
				// ends so far still to come.
				ends, most := ends[:0], 0
				for _, c := range calls[lo:hi] {
					for k := 0; k < len(ends); {
						if ends[k] <= c.start+overlapTolerance {
							ends[k] = ends[len(ends)-1]
							ends = ends[:len(ends)-1]
							continue
						}
						k++
					}
					ends = append(ends, c.end)
					most = max(most, len(ends))
				}
				o.of[calls[lo].edge].widths[most]++
			}
			lo = hi
		}
		slices.SortFunc(calls, func(x, y span) int { return cmpInt64(x.start, y.start) })
		// A call overlaps another when it starts before the latest end so
		// far, or the next call starts before it ends.
		latest := int64(math.MinInt64)
		for i, c := range calls {
			if c.start+overlapTolerance < latest || i+1 < len(calls) && calls[i+1].start+overlapTolerance < c.end {
				o.of[c.edge].any++
			}
			latest = max(latest, c.end)
		}
		// And a call of another edge: one started before it and still
		// running, or one started after it and before it ended.
		marked = slices.Grow(marked[:0], len(calls))[:len(calls)]
		clear(marked)
		before := newExtremes(func(x, y int64) bool { return x > y })
		for i, c := range calls {
			if end, ok := before.other(c.edge); ok && c.start+overlapTolerance < end {
				marked[i] = true
			}
			before.add(c.end, c.edge)
		}
		after := newExtremes(func(x, y int64) bool { return x < y })
		for i := len(calls) - 1; i >= 0; i-- {
			c := calls[i]
			if start, ok := after.other(c.edge); ok && start+overlapTolerance < c.end {
				marked[i] = true
			}
			after.add(c.start, c.edge)
		}
		for i, m := range marked {
			if m {
				o.of[calls[i].edge].other++
			}
		}
	}
	return o
}

// extremes keeps the two most extreme values seen (by beats) that come
// from different edges, so that the most extreme of any edge but one is
// at hand.
type extremes struct {
	beats func(x, y int64) bool
	v     [2]int64
	edge  [2]int // -1: none yet
}

func newExtremes(beats func(x, y int64) bool) *extremes {
	return &extremes{beats: beats, edge: [2]int{-1, -1}}
}

func (e *extremes) add(v int64, edge int) {
	switch {
	case e.edge[0] < 0 || edge == e.edge[0]:
		if e.edge[0] < 0 || e.beats(v, e.v[0]) {
			e.v[0], e.edge[0] = v, edge
		}
	case e.beats(v, e.v[0]):
		e.v[1], e.edge[1] = e.v[0], e.edge[0]
		e.v[0], e.edge[0] = v, edge
	case e.edge[1] < 0 || e.beats(v, e.v[1]):
		e.v[1], e.edge[1] = v, edge
	}
}

// other is the most extreme value of an edge other than edge.
func (e *extremes) other(edge int) (int64, bool) {
	if e.edge[0] >= 0 && e.edge[0] != edge {
		return e.v[0], true
	}
	return e.v[1], e.edge[1] >= 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// edgeCall is a call by its edge and its place among the edge's calls
// (serverCalls.call): 8 bytes, not 16 with a pointer.
type edgeCall struct{ edge, k int32 }

// chainTrie holds, for every chain of edges some root request followed
// (a trie of edge indices from the root), the highest amplification one
// root request saw at the chain's last hop. An edge index is its place in
// keys, the edges by value, so that tries of different edges merge.
type chainTrie struct {
	keys []edgeKey
	next map[chainStep]int32
	best []float64
	from []chainStep // how each chain was reached: its chain without the last hop, and that hop
}

type chainStep struct{ at, edge int32 }

func (t *chainTrie) step(at int32, edge int) int32 {
	k := chainStep{at, int32(edge)}
	if n, ok := t.next[k]; ok {
		return n
	}
	n := int32(len(t.best))
	t.next[k] = n
	t.best = append(t.best, 0)
	t.from = append(t.from, k)
	return n
}

// merge adds o's chains (of other root requests) to t, keeping the higher
// amplification of each. A chain is numbered after the chain it extends,
// so o's are walked in number order.
func (t *chainTrie) merge(o *chainTrie) {
	edge := func(e int32) int32 { return e }
	if !slices.Equal(t.keys, o.keys) {
		// o's edges as t's: a key t does not have is added after its own.
		at := make(map[edgeKey]int32, len(t.keys))
		for i, k := range t.keys {
			at[k] = int32(i)
		}
		ours := make([]int32, len(o.keys))
		for i, k := range o.keys {
			e, ok := at[k]
			if !ok {
				e = int32(len(t.keys))
				t.keys = append(slices.Clip(t.keys), k)
			}
			ours[i] = e
		}
		edge = func(e int32) int32 { return ours[e] }
	}
	to := make([]int32, len(o.best))
	for n := 1; n < len(o.best); n++ {
		k := o.from[n]
		to[n] = t.step(to[k.at], int(edge(k.edge)))
		t.best[to[n]] = max(t.best[to[n]], o.best[n])
	}
}

// observed returns the chain's highest amplification, 0 if no root request
// followed it.
func (t *chainTrie) observed(chain []int) float64 {
	at := int32(0)
	for _, e := range chain {
		n, ok := t.next[chainStep{at, int32(e)}]
		if !ok {
			return 0
		}
		at = n
	}
	return t.best[at]
}

// observedAmplification walks every root request's calls once, down every
// chain of edges at the same time, and records per chain the highest ratio
// of attempts at its last hop to the calls that hop would have seen
// without any retry above or at it (fan-out loops count as calls, not
// amplification). Each call is visited once, so the walk is linear
// whatever the number of paths or the depth of a trace.
func observedAmplification(ix *index, byServer *serverCalls) *chainTrie {
	keys := edgeKeys(byServer.ecs)
	return mapShards(ix, func(s sel) *chainTrie { return observedIn(ix, s, byServer, keys) }, (*chainTrie).merge)
}

// observedIn is observedAmplification's map step, over the selected root
// requests (keys: the edges of byServer).
func observedIn(ix *index, s sel, byServer *serverCalls, keys []edgeKey) *chainTrie {
	t := &chainTrie{keys: keys, next: map[chainStep]int32{}, best: []float64{0}, from: []chainStep{{}}}
	var attempts, first []int
	var touched []int32
	type inst struct {
		span, at int32
		allFirst bool
	}
	var stack []inst
	roots := ix.rootSpans(s)
	for _, rn := range sortedNodes(roots) {
		for _, r := range roots[rn] {
			stack = append(stack[:0], inst{r, 0, true})
			for len(stack) > 0 {
				in := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, ec := range byServer.of(in.span) {
					// A hedged call's requests count as its retries' do:
					// each reached the callee (and the losers' work ran).
					c := byServer.call(ec)
					n := t.step(in.at, int(ec.edge))
					for int(n) >= len(attempts) {
						attempts, first = append(attempts, 0), append(first, 0)
					}
					if attempts[n] == 0 && first[n] == 0 {
						touched = append(touched, n)
					}
					attempts[n] += len(ix.attemptsOf(c))
					if in.allFirst {
						first[n]++
					}
					for k, a := range ix.attemptsOf(c) {
						if a.server >= 0 {
							stack = append(stack, inst{a.server, n, in.allFirst && k == 0})
						}
					}
				}
			}
			for _, n := range touched {
				ratio := float64(attempts[n])
				if first[n] > 0 {
					ratio /= float64(first[n])
				}
				t.best[n] = max(t.best[n], ratio)
				attempts[n], first[n] = 0, 0
			}
			touched = touched[:0]
		}
	}
	return t
}
