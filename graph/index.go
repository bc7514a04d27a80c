package graph

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"

	"github.com/retryaudit/retryaudit/ingest"
)

// index links spans to their parents and children. Spans that appear more
// than once (the same export read twice, or in two formats) count once.
type index struct {
	set      *ingest.Set
	spans    []ingest.Span
	keep     []bool  // false for duplicates
	parent   []int32 // -1 for roots and spans whose parent is missing
	childOff []int32 // children of i are children[childOff[i]:childOff[i+1]], by start time
	children []int32
	dups     int
	traces   int // distinct trace ids
	orphans  int
	// selfParents counts spans that named themselves as parent, cycles the
	// parent cycles broken (breakCycles): both are made roots.
	selfParents, cycles int
	// strayRoots counts the root requests left out of the arrival window
	// as a clock's error (arrivalWindow).
	strayRoots int
	// leaked marks the subtrees of client spans that ran in another
	// request's context (markLeaks): leaks count those that started after
	// their parent ended, repeats those that repeated a request already
	// answered, leakedSpans the spans of both.
	leaked                      []bool
	leaks, repeats, leakedSpans int
	// leakRoots are the client spans that start a leaked subtree.
	leakRoots []int32
	// answered holds the peers some client span reached: one with a
	// callee's SERVER span under it (markAnswered).
	answered map[ingest.Sym]bool
	// roots holds what the streams of root client spans say of each
	// (markRootStreams), lostOrigins the failed calls that lost-context
	// roots retried; both nil when there is no root client span.
	// lostRoots counts the lost-context roots, lostAmbiguous those that
	// could be the retry of more than one failed call, lostMixed those
	// whose stream also holds roots no failed call was waiting for.
	roots                    map[int32]rootVerdict
	lostOrigins              map[int32]originVerdict
	lostRoots, lostAmbiguous int
	lostMixed                int
	// joins are the roots to read as the next attempt of another call:
	// the span of that call's latest attempt, then the root's
	// (joinRootRetries); unjoined counts those whose call was not found.
	joins    [][2]int32
	unjoined int
	// joinedEnds holds, for each root client span whose call was joined
	// attempts of other traces (joinRootRetries), when its last attempt
	// ended and how: that call's root request ends there (clientEnds).
	joinedEnds map[int32]rootReq
	// attemptRoot marks the root client spans read as another call's
	// attempt (lost or linked: lostRoot), by span; nil when there is no
	// root client span. isRootAttempt asks for every span, often.
	attemptRoot []bool
	// polls counts the requests repeated under one parent after it was
	// answered that were kept as the parent's own (markLeaks).
	polls int
	// unnamedNamed counts the spans exported without a service name that
	// nameUnnamed named from their place in the trace, unnamedLeft those
	// it could not.
	unnamedNamed, unnamedLeft int
	ops                       []uint32 // each span's operation name, as an index into opNames.list (opName)
	opNames                   opNames
	arena                     []call // the current chunk of calls (newCall)
	names                     map[callName]nameID
	callNames                 []callName // by nameID
	lastName                  nameID
	more                      [][]attempt // the attempts of calls that made more than one (call.more)
	// shards deals the traces to the map steps (one shard in Infer).
	shards shards
}

// spanKey orders spans by trace id, then span id, then position, as
// integers: sorting a million of these is several times faster than
// comparing byte arrays through an index. It carries the parent's id too,
// so that linking spans to their parents reads the keys alone.
type spanKey struct {
	hi, lo, sid, parent uint64
	idx                 int32
}

func keyOf(sp *ingest.Span, i int32) spanKey {
	return spanKey{binary.BigEndian.Uint64(sp.TraceID[:8]), binary.BigEndian.Uint64(sp.TraceID[8:]), binary.BigEndian.Uint64(sp.SpanID[:]),
		binary.BigEndian.Uint64(sp.ParentID[:]), i}
}

func (a spanKey) cmpID(b spanKey) int {
	switch {
	case a.hi != b.hi:
		return cmp.Compare(a.hi, b.hi)
	case a.lo != b.lo:
		return cmp.Compare(a.lo, b.lo)
	}
	return cmp.Compare(a.sid, b.sid)
}

// compareKeys orders by id, then position: the first copy of a duplicate
// comes first and wins.
func compareKeys(a, b spanKey) int {
	if c := a.cmpID(b); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

// traceHash mixes the key's trace id (the finalizer of SplitMix64), so
// that its top bits spread ids that are not random (Jaeger's 64-bit ids
// leave hi zero) as well as random ones.
func (a *spanKey) traceHash() uint64 {
	x := a.hi ^ a.lo*0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// keysPerBucket is about how many keys groupByTrace leaves to a
// comparison sort, firstPassBits how many bits of the trace hash its
// first pass deals by.
const (
	keysPerBucket = 32
	firstPassBits = 8
)

// groupByTrace orders keys in place so that the keys of each trace are
// together and in compareKeys order, the traces in no particular order.
// It deals the keys to buckets by the top bits of their trace hash, in
// two passes in place (the first by firstPassBits of them, each of those
// buckets then by the rest, in cache), and sorts the buckets of a few
// dozen keys each: linear, where one comparison sort of every key is n
// log n and its partitions range over all of them. The first pass's
// buckets are finished on two cores. A trace of many spans is one bucket,
// sorted as before.
func groupByTrace(keys []spanKey) {
	width := bits.Len(uint(len(keys) / keysPerBucket))
	if width == 0 {
		slices.SortFunc(keys, compareKeys)
		return
	}
	first := min(width, firstPassBits)
	outer := dealKeys(keys, 64-first, first, nil)
	finish := func(from, to int) {
		var bounds []int
		for i := from; i < to; i++ {
			part := keys[outer[i]:outer[i+1]]
			if width == first {
				slices.SortFunc(part, compareKeys)
				continue
			}
			bounds = dealKeys(part, 64-width, width-first, bounds)
			for j := 1; j < len(bounds); j++ {
				slices.SortFunc(part[bounds[j-1]:bounds[j]], compareKeys)
			}
		}
	}
	half := (len(outer) - 1) / 2
	done := make(chan struct{})
	go func() { finish(0, half); close(done) }()
	finish(half, len(outer)-1)
	<-done
}

// dealKeys permutes keys in place into 1<<width buckets, in order, by the
// width bits of their trace hash from bit shift up, and returns where each
// bucket starts followed by len(keys) (in scratch, when it is big enough).
func dealKeys(keys []spanKey, shift, width int, scratch []int) []int {
	n := 1 << width
	mask := uint64(n - 1)
	digit := func(k *spanKey) int { return int(k.traceHash() >> shift & mask) }
	bounds := slices.Grow(scratch[:0], 2*n+1)[:n+1]
	clear(bounds)
	for i := range keys {
		bounds[digit(&keys[i])+1]++
	}
	for d := 1; d <= n; d++ {
		bounds[d] += bounds[d-1]
	}
	next := append(bounds[n+1:], bounds[:n]...)
	for d := range n {
		for next[d] < bounds[d+1] {
			k := keys[next[d]]
			for e := digit(&k); e != d; e = digit(&k) {
				keys[next[e]], k = k, keys[next[e]]
				next[e]++
			}
			keys[next[d]] = k
			next[d]++
		}
	}
	return bounds
}

func newIndex(ctx context.Context, set *ingest.Set) (*index, error) {
	return shardedIndex(ctx, set, shards{})
}

// shardedIndex is newIndex with the traces dealt to sh for every map step.
func shardedIndex(ctx context.Context, set *ingest.Set, sh shards) (*index, error) {
	spans := sidecarsAsTheirApps(set)
	n := len(spans)
	ix := &index{set: set, spans: spans, keep: make([]bool, n), parent: make([]int32, n), ops: make([]uint32, n),
		opNames: opNames{ids: map[nameKey]uint32{}}, shards: sh}
	var last nameKey
	lastName := uint32(0)
	for i := range spans {
		sp := &spans[i]
		k := nameKey{sp.Method, sp.Route, sp.Name}
		if i == 0 || k != last {
			last, lastName = k, ix.opNames.id(set, k)
		}
		ix.ops[i] = lastName
	}
	keys := make([]spanKey, n)
	for i := range spans {
		keys[i] = keyOf(&spans[i], int32(i))
	}
	groupByTrace(keys)
	if err := canceled(ctx, 0); err != nil {
		return nil, err
	}
	// Walk the keys trace by trace: the first copy of each span is kept,
	// and a parent is searched for only among the keys of its own trace,
	// which stay in cache.
	for i := range ix.parent {
		ix.parent[i] = -1
	}
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && keys[hi].hi == keys[lo].hi && keys[hi].lo == keys[lo].lo {
			hi++
		}
		ix.traces++
		trace := keys[lo:hi]
		for j, k := range trace {
			if j > 0 && k.cmpID(trace[j-1]) == 0 {
				ix.dups++
				continue
			}
			ix.keep[k.idx] = true
			if k.parent == 0 {
				continue
			}
			p, ok := slices.BinarySearchFunc(trace, spanKey{hi: k.hi, lo: k.lo, sid: k.parent}, spanKey.cmpID)
			switch {
			case !ok:
				ix.orphans++
			case trace[p].idx == k.idx:
				ix.selfParents++
			default:
				ix.parent[k.idx] = trace[p].idx
			}
		}
		lo = hi
	}
	counts := make([]int32, n+1)
	ix.cycles = ix.breakCycles()
	for _, p := range ix.parent {
		if p >= 0 {
			counts[p+1]++
		}
	}
	ix.childOff = counts
	for i := 1; i <= n; i++ {
		ix.childOff[i] += ix.childOff[i-1]
	}
	ix.children = make([]int32, ix.childOff[n])
	fill := slices.Clone(ix.childOff[:n])
	for i, p := range ix.parent {
		if p >= 0 {
			ix.children[fill[p]] = int32(i)
			fill[p]++
		}
	}
	for i := 0; i < n; i++ {
		c := ix.children[ix.childOff[i]:ix.childOff[i+1]]
		if len(c) < 2 {
			continue
		}
		// By start, then end, then span id: siblings that start together
		// (a microsecond clock, a retry sent at once) keep one order
		// whatever order the spans came in (a backend's API returns a
		// trace's spans in no fixed order); the input's order only for
		// spans alike in all three.
		slices.SortFunc(c, func(a, b int32) int {
			sa, sb := &spans[a], &spans[b]
			return cmp.Or(cmp.Compare(sa.Start, sb.Start), cmp.Compare(sa.End, sb.End),
				bytes.Compare(sa.SpanID[:], sb.SpanID[:]), cmp.Compare(a, b))
		})
	}
	ix.nameUnnamed(set)
	ix.markAnswered()
	ix.markLeaks()
	ix.markRootStreams()
	if err := canceled(ctx, 0); err != nil {
		return nil, err
	}
	return ix, nil
}

// sidecarsAsTheirApps returns the spans with every service-mesh sidecar
// span (ingest.FlagProxy) under its application's service name: Istio
// names a sidecar app.namespace, and a sidecar is a layer of its
// application, never a service of its own. The input is copied only when
// it holds sidecar spans.
func sidecarsAsTheirApps(set *ingest.Set) []ingest.Span {
	spans := set.Spans
	renamed := map[ingest.Sym]ingest.Sym{}
	for i := range spans {
		sp := &spans[i]
		if !sp.Has(ingest.FlagProxy) {
			continue
		}
		to, ok := renamed[sp.Service]
		if !ok {
			to = sp.Service
			if app, _, dotted := strings.Cut(set.Str(sp.Service), "."); dotted && app != "" {
				to = set.Intern(app)
			}
			renamed[sp.Service] = to
		}
		if to == sp.Service {
			continue
		}
		if &spans[0] == &set.Spans[0] {
			spans = slices.Clone(spans) // never rewrite the caller's spans
		}
		spans[i].Service = to
	}
	return spans
}

// breakCycles finds spans whose parents lead back to themselves (a parent
// cycle: corrupt or hostile input) and breaks each cycle at its earliest
// span (by start, then position), which becomes a root: no call is ever
// made from a span to itself or its own ancestors. Each span is walked
// once, so it is linear however long the chains.
func (ix *index) breakCycles() int {
	const (
		unseen = iota
		onWalk
		done
	)
	state := make([]uint8, len(ix.parent))
	var walk []int32
	cycles := 0
	for i := range ix.parent {
		walk = walk[:0]
		j := int32(i)
		for j >= 0 && state[j] == unseen {
			state[j] = onWalk
			walk = append(walk, j)
			j = ix.parent[j]
		}
		if j >= 0 && state[j] == onWalk {
			// j is on the walk: the walk from j on is a cycle.
			earliest := j
			for k := ix.parent[j]; k != j; k = ix.parent[k] {
				a, b := &ix.spans[k], &ix.spans[earliest]
				if a.Start < b.Start || a.Start == b.Start && k < earliest {
					earliest = k
				}
			}
			ix.parent[earliest] = -1
			cycles++
		}
		for _, k := range walk {
			state[k] = done
		}
	}
	return cycles
}

func (ix *index) kids(i int32) []int32 { return ix.children[ix.childOff[i]:ix.childOff[i+1]] }

func (ix *index) str(s ingest.Sym) string { return ix.set.Str(s) }

// markAnswered records the peers whose callee is instrumented: some client
// span to the peer has a SERVER span of another service under it.
func (ix *index) markAnswered() {
	ix.answered = map[ingest.Sym]bool{}
	for i := range ix.spans {
		sp := &ix.spans[i]
		if sp.Kind != ingest.KindClient || sp.Peer == 0 || !ix.keep[i] || ix.answered[sp.Peer] {
			continue
		}
		for _, c := range ix.kids(int32(i)) {
			if k := &ix.spans[c]; isServer(k) && k.Service != sp.Service {
				ix.answered[sp.Peer] = true
				break
			}
		}
	}
}

// unreached reports whether client span c, with no callee span under it,
// is a request that never reached its callee although the callee is
// instrumented (its peer answered other requests with spans), sent by a
// proxy layer forwarding the request it serves (forwardsClient): the 502
// or 503 on it is the proxy's own answer, for a dial refused or no
// upstream to send to (Traefik's ReverseProxy span, a gateway without
// Envoy's response flags). An application's client span is left alone
// (a callee span missing under it is more likely lost than never made),
// and so is a 504: the request may have been sent and timed out.
func (ix *index) unreached(c int32) bool {
	sp := &ix.spans[c]
	return sp.Kind == ingest.KindClient && (sp.HTTPStatus == 502 || sp.HTTPStatus == 503) && sp.Peer != 0 &&
		ix.answered[sp.Peer] && len(ix.kids(c)) == 0 && ix.parent[c] >= 0 && ix.forwardsClient(ix.parent[c], c)
}
