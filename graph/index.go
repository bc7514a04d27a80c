package graph

import (
	"cmp"
	"context"
	"encoding/binary"
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
// comparing byte arrays through an index.
type spanKey struct {
	hi, lo, sid uint64
	idx         int32
}

func keyOf(sp *ingest.Span, i int32) spanKey {
	return spanKey{binary.BigEndian.Uint64(sp.TraceID[:8]), binary.BigEndian.Uint64(sp.TraceID[8:]), binary.BigEndian.Uint64(sp.SpanID[:]), i}
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

// sortKeys sorts keys on two cores, in place: the keys are split by the
// top bit of the trace id (every key of the lower half orders before every
// key of the upper), and each half is sorted on its own. Ids that are not
// random may split unevenly, which costs parallelism, never order. A merge
// into a second slice would hold twice the keys (640 MB at 10M spans).
func sortKeys(keys []spanKey) []spanKey {
	if len(keys) < 1<<14 {
		slices.SortFunc(keys, compareKeys)
		return keys
	}
	i, j := 0, len(keys)-1
	for {
		for i <= j && keys[i].hi>>63 == 0 {
			i++
		}
		for i <= j && keys[j].hi>>63 == 1 {
			j--
		}
		if i >= j {
			break
		}
		keys[i], keys[j] = keys[j], keys[i]
	}
	a, b := keys[:i], keys[i:]
	done := make(chan struct{})
	go func() { slices.SortFunc(a, compareKeys); close(done) }()
	slices.SortFunc(b, compareKeys)
	<-done
	return keys
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
	keys = sortKeys(keys)
	if err := canceled(ctx, 0); err != nil {
		return nil, err
	}
	for i, k := range keys {
		if i > 0 && k.cmpID(keys[i-1]) == 0 {
			ix.dups++
			continue
		}
		if i == 0 || k.hi != keys[i-1].hi || k.lo != keys[i-1].lo {
			ix.traces++
		}
		ix.keep[k.idx] = true
	}
	// Walk the sorted keys trace by trace: a parent is searched for only
	// among the spans of its own trace, which stay in cache.
	for i := range ix.parent {
		ix.parent[i] = -1
	}
	counts := make([]int32, n+1)
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && keys[hi].hi == keys[lo].hi && keys[hi].lo == keys[lo].lo {
			hi++
		}
		trace := keys[lo:hi]
		for _, k := range trace {
			sp := &spans[k.idx]
			if !ix.keep[k.idx] || sp.ParentID.IsZero() {
				continue
			}
			want := spanKey{k.hi, k.lo, binary.BigEndian.Uint64(sp.ParentID[:]), 0}
			j, ok := slices.BinarySearchFunc(trace, want, spanKey.cmpID)
			if !ok {
				ix.orphans++
				continue
			}
			if p := trace[j].idx; p != k.idx {
				ix.parent[k.idx] = p
			} else {
				ix.selfParents++
			}
		}
		lo = hi
	}
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
		slices.SortFunc(c, func(a, b int32) int {
			if d := spans[a].Start - spans[b].Start; d != 0 {
				if d < 0 {
					return -1
				}
				return 1
			}
			return int(a - b)
		})
	}
	ix.nameUnnamed(set)
	ix.markLeaks()
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
