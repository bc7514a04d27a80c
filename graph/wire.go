package graph

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/store"
	"github.com/retryaudit/retryaudit/ingest"
)

// A self-contained partial names what it holds by value (an edge by its
// services and operations, an example by trace and span id), never by a
// span's place in an index, so a map step in another process can send it
// to the reduce. encodePartial and decodePartial give every such partial
// one wire form: encoding/gob of partialWire, which has no maps (a gob map
// decodes into a map made at the size the bytes claim, and encodes in
// random order), so that decoding allocates no more than the bytes hold
// and the same partial always encodes to the same bytes. A decoded partial
// merges and fits exactly as the one encoded. The partials that still name
// spans by index have none (errNoWireForm); the package comment lists them.

// errNoWireForm is encodePartial's error for a partial that names spans
// by their place in one index.
var errNoWireForm = errors.New("the partial names spans by their place in one index: it has no wire form")

// partialWire is one partial on the wire: which kind it is, and the
// field of that kind (gob leaves an empty one out).
type partialWire struct {
	Kind     partialKind
	Edge     edgeStatsWire
	Ops      opPartialWire
	Sampling headSamplingWire
	// Names are phase 0's service names (true: a placeholder for none).
	Names []pair[string, bool]
	Votes nameVotesWire
	// Origins are the leak rule's unretried failures per request.
	Origins []originsWire
	// OpCounts and OpPairs are counts by operation (breakers' fast
	// failures; own failures and executions).
	OpCounts []opCount[int]
	OpPairs  []opCount[[2]int]
	// Work is calibration's work times by operation.
	Work []opCount[[4]distWire]
	// Leaked is the leaked attempts per edge.
	Leaked perEdgeWire[int]
	// FirstFailed is calibration's first failure per edge and trace.
	FirstFailed perEdgeWire[[]traceTime]
	// Overlaps is concurrency's overlapping calls and widths per edge.
	Overlaps perEdgeWire[overlapsWire]
	// Orders is calibration's call order.
	Orders callOrdersWire
	// Outcomes is calibration's outcomes of one edge's attempts.
	Outcomes outcomeStatsWire
	// Ends is the ends of some of an edge's calls.
	Ends callEndListWire
	// Held is the requests each service held.
	Held requestsHeldWire
	// Roots is the user edges' root requests' outcomes.
	Roots perEdgeWire[rootOutcomesWire]
	// Chains is the observed amplification by chain of edges.
	Chains chainTrieWire
	// Requests is the root requests by operation, and the spans' time.
	Requests rootSetWire
	// AttemptWork is the edges' callee work by kind of attempt.
	AttemptWork perEdgeWire[[2]distWire]
	// RootEvents is the attempts of the root client spans' streams.
	RootEvents []rootEvent
	// WorkPairs is the edges' counted attempts after the first, by what
	// came before them.
	WorkPairs perEdgeWire[workPairsWire]
}

// workPairsWire is workPairs on the wire.
type workPairsWire struct {
	Tries SlowTries
}

type partialKind uint8

const (
	kindEdge partialKind = 1 + iota
	kindOps
	kindSampling
	kindNames
	kindVotes
	kindOrigins
	kindOpCounts
	kindOpPairs
	kindWork
	kindLeaked
	kindFirstFailed
	kindOverlaps
	kindOrders
	kindOutcomes
	kindEnds
	kindHeld
	kindRoots
	kindChains
	kindRequests
	kindAttemptWork
	kindRootEvents
	kindWorkPairs
)

// encodePartial is p's wire form. Names a partial holds as symbols of set
// go as the names themselves.
func encodePartial(set *ingest.Set, p any) ([]byte, error) {
	var w partialWire
	switch p := p.(type) {
	case *edgeStats:
		w.Kind, w.Edge = kindEdge, edgeStatsToWire(p)
	case *opPartial:
		w.Kind, w.Ops = kindOps, opPartialToWire(p)
	case *headSampling:
		w.Kind, w.Sampling = kindSampling, headSamplingWire{ByP: pairsOf(p.byP, same[int]), Sources: setOf(p.sources)}
	case map[ingest.Sym]bool:
		w.Kind, w.Names = kindNames, pairsOf(symKeyed(set, p), same[bool])
	case *nameVotes:
		w.Kind, w.Votes = kindVotes, nameVotesToWire(set, p)
	case origins:
		w.Kind, w.Origins = kindOrigins, originsToWire(set, p)
	case map[node]int:
		w.Kind, w.OpCounts = kindOpCounts, opCountsOf(p)
	case map[node][2]int:
		w.Kind, w.OpPairs = kindOpPairs, opCountsOf(p)
	case map[node]*workTimes:
		w.Kind, w.Work = kindWork, workToWire(p)
	case *perEdge[int]:
		w.Kind, w.Leaked = kindLeaked, perEdgeToWire(p, same[int])
	case *perEdge[map[ingest.TraceID]int64]:
		w.Kind, w.FirstFailed = kindFirstFailed, perEdgeToWire(p, traceTimesOf)
	case *outcomeStats:
		w.Kind, w.Outcomes = kindOutcomes, outcomeStatsToWire(p)
	case *callEndList:
		w.Kind, w.Ends = kindEnds, callEndListToWire(p)
	case *requestsHeld:
		w.Kind, w.Held = kindHeld, requestsHeldWire{heldToWire(p.served), heldToWire(p.attempted), setOf(p.instrumented)}
	case *perEdge[rootOutcomes]:
		w.Kind, w.Roots = kindRoots, perEdgeToWire(p, func(o rootOutcomes) rootOutcomesWire {
			return rootOutcomesWire{o.first, o.downstreamFailed, o.propagated}
		})
	case *chainTrie:
		w.Kind, w.Chains = kindChains, chainTrieToWire(p)
	case *rootSet:
		w.Kind, w.Requests = kindRequests, rootSetToWire(p)
	case *callOrders:
		w.Kind, w.Orders = kindOrders, callOrdersWire{opCountsOf(p.failedRuns), opCountsOf(p.stopped), opCountsOf(p.continued),
			perEdgeToWire(p.edges, func(e edgeOrder) edgeOrderWire { return edgeOrderWire{e.reached, e.offsets} })}
	case *perEdge[attemptWork]:
		w.Kind, w.AttemptWork = kindAttemptWork, perEdgeToWire(p, func(x attemptWork) [2]distWire { return [2]distWire{x[0].toWire(), x[1].toWire()} })
	case *perEdge[overlaps]:
		w.Kind, w.Overlaps = kindOverlaps, perEdgeToWire(p, func(o overlaps) overlapsWire {
			return overlapsWire{o.any, o.other, pairsOf(o.widths, same[int])}
		})
	case *rootEvents:
		w.Kind, w.RootEvents = kindRootEvents, p.list
	case *perEdge[workPairs]:
		w.Kind, w.WorkPairs = kindWorkPairs, perEdgeToWire(p, func(x workPairs) workPairsWire {
			return workPairsWire{x.tries}
		})
	default:
		return nil, fmt.Errorf("encode a %T: %w", p, errNoWireForm)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&w); err != nil {
		return nil, fmt.Errorf("encode a %T: %w", p, err)
	}
	return b.Bytes(), nil
}

// decodePartial reads a partial encodePartial wrote, with its names as
// symbols of set. Bytes that are not one give an error.
func decodePartial(set *ingest.Set, data []byte) (any, error) {
	var w partialWire
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return nil, fmt.Errorf("decode a partial: %w", err)
	}
	switch w.Kind {
	case kindEdge:
		return edgeStatsFromWire(&w.Edge)
	case kindOps:
		return opPartialFromWire(&w.Ops)
	case kindSampling:
		return headSamplingFromWire(&w.Sampling)
	case kindNames:
		names := map[ingest.Sym]bool{}
		for _, p := range w.Names {
			names[set.Intern(p.K)] = p.V
		}
		return names, nil
	case kindVotes:
		return nameVotesFromWire(set, &w.Votes)
	case kindOrigins:
		return originsFromWire(set, w.Origins)
	case kindOpCounts:
		return opCountsFrom(w.OpCounts, func(n int) bool { return n >= 0 })
	case kindOpPairs:
		return opCountsFrom(w.OpPairs, func(n [2]int) bool { return n[0] >= 0 && n[1] >= 0 })
	case kindWork:
		return workFromWire(w.Work)
	case kindLeaked:
		return perEdgeFromWire(&w.Leaked, func(n int) (int, error) { return n, counts([]int{n}) })
	case kindFirstFailed:
		return perEdgeFromWire(&w.FirstFailed, traceTimesFrom)
	case kindOutcomes:
		return outcomeStatsFromWire(&w.Outcomes)
	case kindEnds:
		return callEndListFromWire(&w.Ends)
	case kindHeld:
		return requestsHeldFromWire(&w.Held)
	case kindRoots:
		return perEdgeFromWire(&w.Roots, func(o rootOutcomesWire) (rootOutcomes, error) {
			m := o.First
			return rootOutcomes{o.First, o.DownstreamFailed, o.Propagated},
				counts([]int{m.OK, m.ServerError, m.Throttled, m.RetryAfter, m.ClientError, m.Timeout, m.Transport, o.DownstreamFailed, o.Propagated})
		})
	case kindChains:
		return chainTrieFromWire(&w.Chains)
	case kindRequests:
		return rootSetFromWire(&w.Requests)
	case kindOrders:
		return callOrdersFromWire(&w.Orders)
	case kindOverlaps:
		return perEdgeFromWire(&w.Overlaps, overlapsFromWire)
	case kindAttemptWork:
		return perEdgeFromWire(&w.AttemptWork, func(d [2]distWire) (attemptWork, error) {
			var x attemptWork
			for k := range x {
				if err := x[k].fromWire(d[k]); err != nil {
					return x, fmt.Errorf("decode the callee work of %s attempts: %w", []string{"first", "later"}[k], err)
				}
			}
			return x, nil
		})
	case kindRootEvents:
		return &rootEvents{w.RootEvents}, nil
	case kindWorkPairs:
		return perEdgeFromWire(&w.WorkPairs, workPairsFromWire)
	}
	return nil, fmt.Errorf("decode a partial: of kind %d, which there is not", w.Kind)
}

// edgeStatsWire is edgeStats with exported fields, for encoding/gob.
type edgeStatsWire struct {
	Caller, CallerOp, Callee, Op          string
	Calls, Attempts, Missing, Failed      int
	Hist                                  []int
	ByLength                              []pair[int, callEndsWire]
	GaveUp                                []pair[string, int]
	Retried                               []string
	Evidence, Methods                     []pair[string, int]
	ProxyRetried, AppRetried, ProxyMost   int
	Idem                                  Idempotency
	Hedged                                *Hedging
	Result                                *ResultRetries
	Outlived, ProxyShed, RAHonored, RAIgn int
	Holds                                 [4]int
	LongestOK                             float64
	HedgeDelays, Legs                     sampleWire[float64]
	Waits                                 sampleWire[waitWire]
	Abandoned                             sampleWire[abandonedWire]
	ServerDur                             distWire
	Examples                              []exampleWire
	ByFinding                             []pair[string, []exampleWire]
}

// pair is one entry of a map on the wire.
type pair[K cmp.Ordered, V any] struct {
	K K
	V V
}

// pairsOf is m's entries in key order.
func pairsOf[K cmp.Ordered, V, W any](m map[K]V, to func(V) W) []pair[K, W] {
	out := make([]pair[K, W], 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, pair[K, W]{k, to(m[k])})
	}
	return out
}

// fromPairs adds ps to m; a key twice is an error.
func fromPairs[K cmp.Ordered, V, W any](m map[K]V, ps []pair[K, W], from func(W) V) error {
	for _, p := range ps {
		if _, ok := m[p.K]; ok {
			return fmt.Errorf("%v twice", p.K)
		}
		m[p.K] = from(p.V)
	}
	return nil
}

// setOf is the members of a set, in order.
func setOf[K cmp.Ordered](m map[K]bool) []K { return slices.Sorted(maps.Keys(m)) }

type callEndsWire struct {
	Limit, Retryable bool
	Failed           []string
}

type waitWire struct {
	Nth      int
	MS       float64
	Pushback pushbackKind
	Call     uint64
}

type abandonedWire struct {
	MS                        float64
	Named, TimedOut, ByCaller bool
}

type exampleWire struct {
	Trace      ingest.TraceID
	From       ingest.SpanID
	Attempts   int
	Hedged     bool
	Start      int64
	FirstSpan  ingest.SpanID
	AttemptIDs []ingest.SpanID
}

type sampleWire[W any] struct {
	Seen   int
	Keys   []uint64
	Values []W
}

// distWire is a dist: its exact values, or its sketch in sketches-go's
// own encoding (the index mapping left out: every dist has the same).
type distWire struct {
	Exact  []float64
	Sketch []byte
}

func sampleToWire[T, W any](s *sample[T], to func(T) W) sampleWire[W] {
	w := sampleWire[W]{Seen: s.seen}
	for _, k := range s.kept {
		w.Keys = append(w.Keys, k.key)
		w.Values = append(w.Values, to(k.v))
	}
	return w
}

// sampleFromWire reads w into s. A sample keeps fewer than
// 2·MaxExactValues values (it trims when it reaches that many), and no
// more than it has seen.
func sampleFromWire[T, W any](s *sample[T], w sampleWire[W], from func(W) T) error {
	if len(w.Keys) != len(w.Values) || len(w.Keys) > w.Seen || len(w.Keys) >= 2*MaxExactValues {
		return fmt.Errorf("a sample of %d keys, %d values and %d seen", len(w.Keys), len(w.Values), w.Seen)
	}
	s.seen = w.Seen
	for i, k := range w.Keys {
		s.kept = append(s.kept, keyed[T]{k, from(w.Values[i])})
	}
	return nil
}

func same[T any](v T) T { return v }

func spanIDOf(k spanKey) ingest.SpanID {
	var id ingest.SpanID
	binary.BigEndian.PutUint64(id[:], k.sid)
	return id
}

func (d *dist) toWire() distWire {
	if d.sk == nil {
		return distWire{Exact: d.exact}
	}
	var b []byte
	d.sk.Encode(&b, true)
	return distWire{Sketch: b}
}

// maxSketchIndex bounds the bins of a decoded sketch: at 1% accuracy a
// bin is a factor of 1.02, so bins -2048 to 2048 hold every value from
// 2e-18 to 6e17 ms, and every time a span gives (a nanosecond to 292
// years) falls inside. A sketch's dense store allocates every bin between
// its lowest and highest, also when partials merge, so a sketch of bins
// outside is refused before the dense store takes it.
const maxSketchIndex = 2048

// fromWire reads w into d: exact values (finite, no more than
// MaxExactValues of them) or a sketch (decoded into a sparse store first,
// whose bins and counts are checked before the dense store takes them).
func (d *dist) fromWire(w distWire) error {
	if w.Sketch == nil {
		if len(w.Exact) > MaxExactValues {
			return fmt.Errorf("%d exact values, more than %d", len(w.Exact), MaxExactValues)
		}
		for _, v := range w.Exact {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("an exact value of %v", v)
			}
		}
		d.exact = w.Exact
		return nil
	}
	d.toSketch()
	sparse, err := ddsketch.DecodeDDSketch(w.Sketch, store.SparseStoreConstructor, d.sk.IndexMapping)
	if err != nil {
		return fmt.Errorf("a sketch: %w", err)
	}
	for _, st := range []store.Store{sparse.GetPositiveValueStore(), sparse.GetNegativeValueStore()} {
		if st.IsEmpty() {
			continue
		}
		lo, _ := st.MinIndex()
		hi, _ := st.MaxIndex()
		if lo < -maxSketchIndex || hi > maxSketchIndex {
			return fmt.Errorf("a sketch of bins %d to %d, outside ±%d", lo, hi, maxSketchIndex)
		}
		bad := false
		st.ForEach(func(_ int, n float64) bool {
			bad = !(n >= 0) || math.IsInf(n, 0)
			return bad
		})
		if bad {
			return errors.New("a sketch with a negative or infinite count")
		}
	}
	if n := sparse.GetZeroCount(); !(n >= 0) || math.IsInf(n, 0) {
		return fmt.Errorf("a sketch with a zero count of %v", n)
	}
	return d.sk.MergeWith(sparse)
}

func examplesToWire(s *exampleSet) []exampleWire {
	var out []exampleWire
	for _, x := range s.best {
		out = append(out, exampleWire{Trace: x.trace, From: spanIDOf(x.from), Attempts: x.attempts, Hedged: x.hedged,
			Start: x.start, FirstSpan: x.firstSpan, AttemptIDs: x.attemptIDs})
	}
	return out
}

func examplesFromWire(ws []exampleWire) *exampleSet {
	var s exampleSet
	for _, w := range ws {
		s.best = append(s.best, exampleCall{from: keyOf(&ingest.Span{TraceID: w.Trace, SpanID: w.From}, 0), trace: w.Trace, attempts: w.Attempts,
			hedged: w.Hedged, start: w.Start, firstSpan: w.FirstSpan, attemptIDs: w.AttemptIDs})
	}
	return &s
}

func edgeStatsToWire(st *edgeStats) edgeStatsWire {
	return edgeStatsWire{Caller: st.key.caller, CallerOp: st.key.callerOp, Callee: st.key.callee, Op: st.key.op,
		Calls: st.calls, Attempts: st.attempts, Missing: st.missing, Failed: st.failed, Hist: st.hist,
		ByLength: pairsOf(st.byLength, func(e *callEnds) callEndsWire { return callEndsWire{e.limit, e.retryable, setOf(e.failed)} }),
		GaveUp:   pairsOf(st.gaveUp, same[int]), Retried: setOf(st.retried),
		Evidence: pairsOf(st.evidence, same[int]), Methods: pairsOf(st.methods, same[int]),
		ProxyRetried: st.proxyRetried, AppRetried: st.appRetried, ProxyMost: st.proxyMostTries, Idem: st.idem, Hedged: st.hedged, Result: st.result,
		Outlived: st.outlived, ProxyShed: st.proxyShed, RAHonored: st.raHonored, RAIgn: st.raIgnored, LongestOK: st.longestOK,
		Holds:       [4]int{st.holds.failedRetried, st.holds.failedHeld, st.holds.okAnswered, st.holds.okHeld},
		HedgeDelays: sampleToWire(&st.hedgeDelays, same[float64]), Legs: sampleToWire(&st.legs, same[float64]),
		Waits: sampleToWire(&st.waits, func(p pendingWait) waitWire { return waitWire{p.nth, p.ms, p.pushback, p.call} }),
		Abandoned: sampleToWire(&st.abandoned, func(a abandonedAttempt) abandonedWire {
			return abandonedWire{a.ms, a.named, a.timedOut, a.byCaller}
		}),
		ServerDur: st.serverDur.toWire(), Examples: examplesToWire(&st.examples),
		ByFinding: pairsOf(st.byFinding, examplesToWire)}
}

func edgeStatsFromWire(w *edgeStatsWire) (*edgeStats, error) {
	st := newEdgeStats(edgeKey{w.Caller, w.CallerOp, w.Callee, w.Op})
	st.calls, st.attempts, st.missing, st.failed, st.hist = w.Calls, w.Attempts, w.Missing, w.Failed, w.Hist
	st.proxyRetried, st.appRetried, st.proxyMostTries, st.idem, st.hedged = w.ProxyRetried, w.AppRetried, w.ProxyMost, w.Idem, w.Hedged
	st.outlived, st.proxyShed, st.raHonored, st.raIgnored, st.longestOK = w.Outlived, w.ProxyShed, w.RAHonored, w.RAIgn, w.LongestOK
	if err := counts(w.Holds[:]); err != nil {
		return nil, fmt.Errorf("decode the statistics of %s → %s %s: %w", w.Caller, w.Callee, w.Op, err)
	}
	st.holds = heldAnswers{w.Holds[0], w.Holds[1], w.Holds[2], w.Holds[3]}
	st.examples = *examplesFromWire(w.Examples)
	if r := w.Result; r != nil {
		if err := counts([]int{r.Calls, r.Retries, r.Unknown}); err != nil {
			return nil, fmt.Errorf("decode the statistics of %s → %s %s: %w", w.Caller, w.Callee, w.Op, err)
		}
		st.mergeResults(r)
	}
	retried := make([]pair[string, bool], len(w.Retried))
	for i, s := range w.Retried {
		retried[i] = pair[string, bool]{s, true}
	}
	for _, err := range []error{
		counts(append([]int{w.Calls, w.Attempts, w.Missing, w.Failed, w.ProxyRetried, w.AppRetried, w.ProxyMost,
			w.Idem.RetriedCalls, w.Idem.WithKey, w.Outlived, w.ProxyShed, w.RAHonored, w.RAIgn}, w.Hist...)),
		fromPairs(st.byLength, w.ByLength, func(e callEndsWire) *callEnds {
			c := &callEnds{limit: e.Limit, retryable: e.Retryable, failed: map[string]bool{}}
			for _, s := range e.Failed {
				c.failed[s] = true
			}
			return c
		}),
		fromPairs(st.gaveUp, w.GaveUp, same[int]),
		fromPairs(st.retried, retried, same[bool]),
		fromPairs(st.evidence, w.Evidence, same[int]),
		fromPairs(st.methods, w.Methods, same[int]),
		fromPairs(st.byFinding, w.ByFinding, examplesFromWire),
		sampleFromWire(&st.hedgeDelays, w.HedgeDelays, same[float64]),
		sampleFromWire(&st.legs, w.Legs, same[float64]),
		sampleFromWire(&st.waits, w.Waits, func(p waitWire) pendingWait { return pendingWait{p.Nth, p.MS, p.Pushback, p.Call} }),
		sampleFromWire(&st.abandoned, w.Abandoned, func(a abandonedWire) abandonedAttempt {
			return abandonedAttempt{a.MS, a.Named, a.TimedOut, a.ByCaller}
		}),
		st.serverDur.fromWire(w.ServerDur),
	} {
		if err != nil {
			return nil, fmt.Errorf("decode the statistics of %s → %s %s: %w", w.Caller, w.Callee, w.Op, err)
		}
	}
	return st, nil
}

// counts checks that counts are counts.
func counts(ns []int) error {
	for _, n := range ns {
		if n < 0 {
			return fmt.Errorf("a count of %d", n)
		}
	}
	return nil
}

// opPartialWire is opPartial on the wire: every operation of a service by
// name, and the services that have spans of their own.
type opPartialWire struct {
	Ops          []opWire
	Instrumented []string
	// Instances are each service's process instances by name ("" for
	// spans that name none).
	Instances []pair[string, []string]
}

type opWire struct {
	Service, Op string
	Dur, Self   distWire
	Failed      int
}

func opPartialToWire(p *opPartial) opPartialWire {
	w := opPartialWire{Instrumented: setOf(p.instrumented), Instances: pairsOf(p.instances, setOf[string])}
	for _, svc := range slices.Sorted(maps.Keys(p.ops)) {
		for _, op := range slices.Sorted(maps.Keys(p.ops[svc])) {
			st := p.ops[svc][op]
			w.Ops = append(w.Ops, opWire{svc, op, st.dur.toWire(), st.self.toWire(), st.failed})
		}
	}
	return w
}

func opPartialFromWire(w *opPartialWire) (*opPartial, error) {
	p := &opPartial{ops: opTable{}, instrumented: map[string]bool{}, instances: map[string]map[string]bool{}}
	for _, s := range w.Instrumented {
		p.instrumented[s] = true
	}
	for _, in := range w.Instances {
		if p.instances[in.K] != nil {
			return nil, fmt.Errorf("decode the operations' statistics: the instances of %s twice", in.K)
		}
		p.instances[in.K] = map[string]bool{}
		for _, name := range in.V {
			p.instances[in.K][name] = true
		}
	}
	for _, o := range w.Ops {
		if p.ops[o.Service][o.Op] != nil {
			return nil, fmt.Errorf("decode the operations' statistics: %s %s twice", o.Service, o.Op)
		}
		st := p.ops.get(o.Service, o.Op)
		st.failed = o.Failed
		for _, err := range []error{counts([]int{o.Failed}), st.dur.fromWire(o.Dur), st.self.fromWire(o.Self)} {
			if err != nil {
				return nil, fmt.Errorf("decode the statistics of %s %s: %w", o.Service, o.Op, err)
			}
		}
	}
	return p, nil
}

// headSamplingWire is headSampling on the wire: root counts by
// probability (0: unknown), and the sources.
type headSamplingWire struct {
	ByP     []pair[float64, int]
	Sources []string
}

func headSamplingFromWire(w *headSamplingWire) (*headSampling, error) {
	h := &headSampling{byP: map[float64]int{}, sources: map[string]bool{}}
	for _, p := range w.ByP {
		if !(p.K >= 0 && p.K <= 1) || p.V < 0 {
			return nil, fmt.Errorf("decode the roots' sampling: %d roots of probability %v", p.V, p.K)
		}
	}
	if err := fromPairs(h.byP, w.ByP, same[int]); err != nil {
		return nil, fmt.Errorf("decode the roots' sampling: %w", err)
	}
	for _, s := range w.Sources {
		h.sources[s] = true
	}
	return h, nil
}

// symKeyed is m with its symbols as the names they stand for.
func symKeyed[V any](set *ingest.Set, m map[ingest.Sym]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[set.Str(k)] = v
	}
	return out
}

// nameVotesWire is nameVotes on the wire: each vote's key as names (the
// caller, then the peer, the host, or the callee and the client's
// operation), with the names voted for and their counts.
type nameVotesWire struct {
	Peers, Hosts, Ops []voteWire
	Services          []string
}

type voteWire struct {
	Key   []string
	Names []pair[string, int]
}

func votesToWire[K comparable](v votes[K], key func(K) []string) []voteWire {
	var out []voteWire
	for k, m := range v {
		out = append(out, voteWire{key(k), pairsOf(m, same[int])})
	}
	slices.SortFunc(out, func(a, b voteWire) int { return slices.Compare(a.Key, b.Key) })
	return out
}

func votesFromWire[K comparable](v votes[K], ws []voteWire, parts int, key func([]string) K) error {
	for _, w := range ws {
		if len(w.Key) != parts {
			return fmt.Errorf("a vote keyed by %d names, not %d", len(w.Key), parts)
		}
		k := key(w.Key)
		if v[k] != nil {
			return fmt.Errorf("votes for %q twice", w.Key)
		}
		v[k] = map[string]int{}
		for _, p := range w.Names {
			if p.V <= 0 {
				return fmt.Errorf("%d votes for %q", p.V, p.K)
			}
		}
		if err := fromPairs(v[k], w.Names, same[int]); err != nil {
			return err
		}
	}
	return nil
}

func nameVotesToWire(set *ingest.Set, v *nameVotes) nameVotesWire {
	return nameVotesWire{
		Peers:    votesToWire(v.peers, func(k peerKey) []string { return []string{set.Str(k.caller), set.Str(k.peer)} }),
		Hosts:    votesToWire(v.hosts, func(k hostKey) []string { return []string{set.Str(k.caller), k.host} }),
		Ops:      votesToWire(v.ops, func(k opKey) []string { return []string{set.Str(k.caller), k.callee, k.clientOp} }),
		Services: setOf(v.services),
	}
}

func nameVotesFromWire(set *ingest.Set, w *nameVotesWire) (*nameVotes, error) {
	v := &nameVotes{peers: votes[peerKey]{}, hosts: votes[hostKey]{}, ops: votes[opKey]{}, services: map[string]bool{}}
	for _, s := range w.Services {
		v.services[s] = true
	}
	for _, err := range []error{
		votesFromWire(v.peers, w.Peers, 2, func(k []string) peerKey { return peerKey{set.Intern(k[0]), set.Intern(k[1])} }),
		votesFromWire(v.hosts, w.Hosts, 2, func(k []string) hostKey { return hostKey{set.Intern(k[0]), k[1]} }),
		votesFromWire(v.ops, w.Ops, 3, func(k []string) opKey { return opKey{set.Intern(k[0]), k[1], k[2]} }),
	} {
		if err != nil {
			return nil, fmt.Errorf("decode the name votes: %w", err)
		}
	}
	return v, nil
}

// originsWire is one request's unretried failures on the wire.
type originsWire struct {
	Target           uint64
	Callee, Op, Peer string
	Traces           []ingest.TraceID
	Parents          []ingest.SpanID
	FailedAt, Waited []int64
}

func originsToWire(set *ingest.Set, os origins) []originsWire {
	var out []originsWire
	for k, l := range os {
		w := originsWire{Target: k.target, Callee: set.Str(k.callee), Op: k.op, Peer: k.peer}
		for _, o := range l {
			w.Traces, w.Parents = append(w.Traces, o.trace), append(w.Parents, o.parent)
			w.FailedAt, w.Waited = append(w.FailedAt, o.failedAt), append(w.Waited, o.waitedTo)
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b originsWire) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Callee, b.Callee), cmp.Compare(a.Op, b.Op), cmp.Compare(a.Peer, b.Peer))
	})
	return out
}

// originsFromWire reads requests' failures: each request's at most
// maxOrigins, which it keeps in their order as origins.add does.
func originsFromWire(set *ingest.Set, ws []originsWire) (origins, error) {
	os := origins{}
	for _, w := range ws {
		n := len(w.Traces)
		if len(w.Parents) != n || len(w.FailedAt) != n || len(w.Waited) != n || n == 0 || n > maxOrigins {
			return nil, fmt.Errorf("decode the unretried failures: a request of %d, %d, %d and %d", n, len(w.Parents), len(w.FailedAt), len(w.Waited))
		}
		k := repeatKey{target: w.Target, callee: set.Intern(w.Callee), op: w.Op, peer: w.Peer}
		if os[k] != nil {
			return nil, fmt.Errorf("decode the unretried failures: %s %s twice", w.Callee, w.Op)
		}
		for i := range n {
			os.add(k, origin{trace: w.Traces[i], parent: w.Parents[i], failedAt: w.FailedAt[i], waitedTo: w.Waited[i]})
		}
	}
	return os, nil
}

// opCount is one operation's count on the wire.
type opCount[V any] struct {
	Service, Op string
	N           V
}

func opCountsOf[V any](m map[node]V) []opCount[V] {
	out := make([]opCount[V], 0, len(m))
	for n, v := range m {
		out = append(out, opCount[V]{n.svc, n.op, v})
	}
	slices.SortFunc(out, func(a, b opCount[V]) int { return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Op, b.Op)) })
	return out
}

func opCountsFrom[V any](cs []opCount[V], valid func(V) bool) (map[node]V, error) {
	m := map[node]V{}
	for _, c := range cs {
		n := node{c.Service, c.Op}
		if _, ok := m[n]; ok || !valid(c.N) {
			return nil, fmt.Errorf("decode counts by operation: %v for %s %s", c.N, c.Service, c.Op)
		}
		m[n] = c.N
	}
	return m, nil
}

func workToWire(m map[node]*workTimes) []opCount[[4]distWire] {
	out := make([]opCount[[4]distWire], 0, len(m))
	for _, c := range opCountsOf(m) {
		var d [4]distWire
		for k := range d {
			d[k] = c.N[k].toWire()
		}
		out = append(out, opCount[[4]distWire]{c.Service, c.Op, d})
	}
	return out
}

// workFromWire reads operations' work times, each operation once.
func workFromWire(cs []opCount[[4]distWire]) (map[node]*workTimes, error) {
	m := map[node]*workTimes{}
	for _, c := range cs {
		n := node{c.Service, c.Op}
		if m[n] != nil {
			return nil, fmt.Errorf("decode the work times: %s %s twice", c.Service, c.Op)
		}
		x := &workTimes{}
		for k := range x {
			if err := x[k].fromWire(c.N[k]); err != nil {
				return nil, fmt.Errorf("decode the work times of %s %s: %w", c.Service, c.Op, err)
			}
		}
		m[n] = x
	}
	return m, nil
}

// perEdgeWire is a per-edge partial on the wire: each edge by its key,
// and its value.
type perEdgeWire[W any] struct {
	Keys   []edgeKeyWire
	Values []W
}

type edgeKeyWire struct{ Caller, CallerOp, Callee, Op string }

func (k edgeKey) toWire() edgeKeyWire { return edgeKeyWire{k.caller, k.callerOp, k.callee, k.op} }

func (w edgeKeyWire) key() edgeKey { return edgeKey{w.Caller, w.CallerOp, w.Callee, w.Op} }

func perEdgeToWire[T, W any](e *perEdge[T], to func(T) W) perEdgeWire[W] {
	w := perEdgeWire[W]{Keys: make([]edgeKeyWire, len(e.keys)), Values: make([]W, len(e.of))}
	for i, k := range e.keys {
		w.Keys[i] = k.toWire()
		w.Values[i] = to(e.of[i])
	}
	return w
}

// perEdgeFromWire reads a per-edge partial: a value for each key, each
// key once.
func perEdgeFromWire[T, W any](w *perEdgeWire[W], from func(W) (T, error)) (*perEdge[T], error) {
	if len(w.Keys) != len(w.Values) {
		return nil, fmt.Errorf("decode a per-edge partial: %d edges and %d values", len(w.Keys), len(w.Values))
	}
	e := &perEdge[T]{keys: make([]edgeKey, len(w.Keys)), of: make([]T, len(w.Keys))}
	seen := make(map[edgeKey]bool, len(w.Keys))
	for i, k := range w.Keys {
		e.keys[i] = k.key()
		if seen[e.keys[i]] {
			return nil, fmt.Errorf("decode a per-edge partial: %s → %s %s twice", k.Caller, k.Callee, k.Op)
		}
		seen[e.keys[i]] = true
		v, err := from(w.Values[i])
		if err != nil {
			return nil, fmt.Errorf("decode a per-edge partial, of %s → %s %s: %w", k.Caller, k.Callee, k.Op, err)
		}
		e.of[i] = v
	}
	return e, nil
}

// traceTime is a time of one trace on the wire.
type traceTime struct {
	Trace ingest.TraceID
	At    int64
}

// traceTimesOf is m's entries in trace id order.
func traceTimesOf(m map[ingest.TraceID]int64) []traceTime {
	out := make([]traceTime, 0, len(m))
	for id, at := range m {
		out = append(out, traceTime{id, at})
	}
	slices.SortFunc(out, func(a, b traceTime) int { return bytes.Compare(a.Trace[:], b.Trace[:]) })
	return out
}

// traceTimesFrom reads times by trace, each trace once.
func traceTimesFrom(ts []traceTime) (map[ingest.TraceID]int64, error) {
	m := make(map[ingest.TraceID]int64, len(ts))
	for _, t := range ts {
		if _, ok := m[t.Trace]; ok {
			return nil, fmt.Errorf("trace %x twice", t.Trace)
		}
		m[t.Trace] = t.At
	}
	return m, nil
}

type overlapsWire struct {
	Any, Other int
	Widths     []pair[int, int]
}

func overlapsFromWire(w overlapsWire) (overlaps, error) {
	o := overlaps{any: w.Any, other: w.Other, widths: map[int]int{}}
	ns := []int{w.Any, w.Other}
	for _, p := range w.Widths {
		ns = append(ns, p.K, p.V)
	}
	return o, cmp.Or(counts(ns), fromPairs(o.widths, w.Widths, same[int]))
}

// callOrdersWire is callOrders on the wire: counts by caller operation,
// and per edge the failed executions that made it and its calls' offsets.
type callOrdersWire struct {
	FailedRuns, Stopped, Continued []opCount[int]
	Edges                          perEdgeWire[edgeOrderWire]
}

type edgeOrderWire struct {
	Reached int
	Offsets []float64
}

func callOrdersFromWire(w *callOrdersWire) (*callOrders, error) {
	o := &callOrders{}
	var errs [4]error
	valid := func(n int) bool { return n >= 0 }
	o.failedRuns, errs[0] = opCountsFrom(w.FailedRuns, valid)
	o.stopped, errs[1] = opCountsFrom(w.Stopped, valid)
	o.continued, errs[2] = opCountsFrom(w.Continued, valid)
	o.edges, errs[3] = perEdgeFromWire(&w.Edges, func(e edgeOrderWire) (edgeOrder, error) {
		for _, v := range e.Offsets {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return edgeOrder{}, fmt.Errorf("an offset of %v", v)
			}
		}
		return edgeOrder{e.Reached, e.Offsets}, counts([]int{e.Reached})
	})
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("decode the call order: %w", err)
	}
	return o, nil
}

// outcomeStatsWire is outcomeStats on the wire. Its attempts are listed by
// their index in the call (ByAttempt[k]: the k+1st attempts), so that an
// index the reduce lays out a count for costs the bytes of a list.
type outcomeStatsWire struct {
	Edge                         edgeKeyWire
	ByAttempt                    [][]outcomeRecWire
	Calls                        []callRecWire
	Slow                         SlowTries
	DownstreamFailed, Propagated int
	FirstDown                    []int64
	RASum                        float64
	RAN                          int
	Transit                      distWire
	FirstTransit, RetryTransit   distWire
	Waits                        []distWire
	Decisions                    []decisionWire
}

// outcomeRecWire is an attempt's outcome class, start (ns from the first
// root request) and what came before it (outcomeRec.flags).
type outcomeRecWire struct {
	Class mixClass
	At    int64
	Flags uint8
}

// callRecWire is a callRec on the wire.
type callRecWire struct {
	At     int64
	Prev   int8
	Failed bool
}

const (
	flagAfter uint8 = 1 << iota
	flagOther
	flagRun
	flagAfterDown
)

type decisionWire struct {
	Status      label
	Class       mixClass
	Retried     int
	Ended, Stop []int
}

func outcomeStatsToWire(st *outcomeStats) outcomeStatsWire {
	w := outcomeStatsWire{Edge: st.key.toWire(),
		Slow: st.slow, DownstreamFailed: st.downstreamFailed, Propagated: st.propagated,
		FirstDown: st.firstDown, RASum: st.raSum, RAN: st.raN,
		Transit: st.transit.toWire(), FirstTransit: st.byKind[0].toWire(), RetryTransit: st.byKind[1].toWire()}
	for _, r := range st.recs {
		for len(w.ByAttempt) <= r.k {
			w.ByAttempt = append(w.ByAttempt, nil)
		}
		w.ByAttempt[r.k] = append(w.ByAttempt[r.k], outcomeRecWire{r.class, r.at, r.flags()})
	}
	for _, c := range st.calls {
		w.Calls = append(w.Calls, callRecWire{c.at, c.prev, c.failed})
	}
	for k := range st.waits {
		w.Waits = append(w.Waits, st.waits[k].toWire())
	}
	for sc, r := range st.decisions {
		w.Decisions = append(w.Decisions, decisionWire{sc.status, sc.class, r.retried, r.ended, r.stop})
	}
	slices.SortFunc(w.Decisions, func(a, b decisionWire) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), cmp.Compare(a.Class, b.Class))
	})
	return w
}

// outcomeStatsFromWire reads one edge's outcomes: classes that are
// classes, counts that are counts, and lists paired as they are kept.
func outcomeStatsFromWire(w *outcomeStatsWire) (*outcomeStats, error) {
	st := &outcomeStats{key: w.Edge.key(), slow: w.Slow,
		downstreamFailed: w.DownstreamFailed, propagated: w.Propagated, firstDown: w.FirstDown, raSum: w.RASum, raN: w.RAN,
		decisions: map[statusClass]*statusRetries{}}
	fail := func(err error) (*outcomeStats, error) {
		return nil, fmt.Errorf("decode the outcomes of %s → %s %s: %w", w.Edge.Caller, w.Edge.Callee, w.Edge.Op, err)
	}
	ns := []int{w.Slow.First.Tries, w.Slow.First.Slow, w.DownstreamFailed, w.Propagated, w.RAN}
	if len(w.Slow.AfterSlowByAttempt) != len(w.Slow.AfterFailureByAttempt) {
		return fail(fmt.Errorf("%d and %d slow-try counts", len(w.Slow.AfterSlowByAttempt), len(w.Slow.AfterFailureByAttempt)))
	}
	for k := range w.Slow.AfterSlowByAttempt {
		a, b := w.Slow.AfterSlowByAttempt[k], w.Slow.AfterFailureByAttempt[k]
		ns = append(ns, a.Tries, a.Slow, b.Tries, b.Slow)
	}
	if err := counts(ns); err != nil {
		return fail(err)
	}
	if !(w.RASum >= 0) || math.IsInf(w.RASum, 0) {
		return fail(fmt.Errorf("a Retry-After sum of %v", w.RASum))
	}
	for _, t := range w.FirstDown {
		if t < 0 {
			return fail(fmt.Errorf("a downstream failure at %dns, before the first root request", t))
		}
	}
	for _, c := range w.Calls {
		if c.At < 0 || c.Prev < -1 || c.Prev > 1 {
			return fail(fmt.Errorf("a call at %dns after a call that ended %d", c.At, c.Prev))
		}
		st.calls = append(st.calls, callRec{c.At, c.Prev, c.Failed})
	}
	for k, recs := range w.ByAttempt {
		for _, r := range recs {
			if r.Class > classTransport || r.At < 0 || r.Flags >= flagAfterDown<<1 {
				return fail(fmt.Errorf("an attempt of class %d, at %dns and flags %#x", r.Class, r.At, r.Flags))
			}
			st.recs = append(st.recs, outcomeRec{class: r.Class, k: k, at: r.At, after: r.Flags&flagAfter != 0,
				other: r.Flags&flagOther != 0, run: r.Flags&flagRun != 0, afterDown: r.Flags&flagAfterDown != 0})
		}
	}
	for _, t := range []struct {
		d *dist
		w distWire
	}{{&st.transit, w.Transit}, {&st.byKind[0], w.FirstTransit}, {&st.byKind[1], w.RetryTransit}} {
		if err := t.d.fromWire(t.w); err != nil {
			return fail(err)
		}
	}
	st.waits = make([]dist, len(w.Waits))
	for k := range w.Waits {
		if err := st.waits[k].fromWire(w.Waits[k]); err != nil {
			return fail(err)
		}
	}
	for _, d := range w.Decisions {
		sc := statusClass{d.Status, d.Class}
		if st.decisions[sc] != nil || d.Class > classTransport || len(d.Ended) != len(d.Stop) {
			return fail(fmt.Errorf("decisions on %v of class %d: twice, or of %d and %d counts", d.Status, d.Class, len(d.Ended), len(d.Stop)))
		}
		if err := counts(append(append([]int{d.Retried}, d.Ended...), d.Stop...)); err != nil {
			return fail(err)
		}
		st.decisions[sc] = &statusRetries{d.Retried, d.Ended, d.Stop}
	}
	return st, nil
}

// callEndListWire is callEndList on the wire: the edge, and its calls'
// ends as parallel lists.
type callEndListWire struct {
	Edge   edgeKeyWire
	At     []int64
	Traces []ingest.TraceID
	Pos    []int32
	Failed []bool
}

func callEndListToWire(l *callEndList) callEndListWire {
	w := callEndListWire{Edge: l.key.toWire()}
	for _, e := range l.ends {
		w.At, w.Traces = append(w.At, e.at), append(w.Traces, e.trace)
		w.Pos, w.Failed = append(w.Pos, e.pos), append(w.Failed, e.failed)
	}
	return w
}

func callEndListFromWire(w *callEndListWire) (*callEndList, error) {
	n := len(w.At)
	if len(w.Traces) != n || len(w.Pos) != n || len(w.Failed) != n {
		return nil, fmt.Errorf("decode the call ends of %s → %s %s: %d, %d, %d and %d", w.Edge.Caller, w.Edge.Callee, w.Edge.Op,
			n, len(w.Traces), len(w.Pos), len(w.Failed))
	}
	l := &callEndList{key: w.Edge.key(), ends: make([]callEnd, n)}
	for i := range n {
		l.ends[i] = callEnd{at: w.At[i], trace: w.Traces[i], pos: w.Pos[i], failed: w.Failed[i]}
	}
	return l, nil
}

// requestsHeldWire is requestsHeld on the wire: each service's requests
// by name, and the services with spans of their own.
type requestsHeldWire struct {
	Served, Attempted []heldWire
	Instrumented      []string
}

type heldWire struct {
	Service      string
	Busy         int64
	Starts, Ends []int64
}

func heldToWire(m map[string]*heldTimes) []heldWire {
	out := make([]heldWire, 0, len(m))
	for _, svc := range slices.Sorted(maps.Keys(m)) {
		out = append(out, heldWire{svc, m[svc].busy, m[svc].starts, m[svc].ends})
	}
	return out
}

func requestsHeldFromWire(w *requestsHeldWire) (*requestsHeld, error) {
	h := &requestsHeld{served: map[string]*heldTimes{}, attempted: map[string]*heldTimes{}, instrumented: map[string]bool{}}
	for _, s := range w.Instrumented {
		h.instrumented[s] = true
	}
	for _, l := range []struct {
		to   map[string]*heldTimes
		from []heldWire
	}{{h.served, w.Served}, {h.attempted, w.Attempted}} {
		for _, t := range l.from {
			if l.to[t.Service] != nil || len(t.Starts) != len(t.Ends) {
				return nil, fmt.Errorf("decode the requests held: %s twice, or of %d starts and %d ends", t.Service, len(t.Starts), len(t.Ends))
			}
			l.to[t.Service] = &heldTimes{t.Busy, t.Starts, t.Ends}
		}
	}
	return h, nil
}

type rootOutcomesWire struct {
	First                        OutcomeMix
	DownstreamFailed, Propagated int
}

// chainTrieWire is chainTrie on the wire: its edges by key, and each chain
// but the empty one (numbered from 1) as the chain it extends, the edge it
// extends it by, and its highest amplification.
type chainTrieWire struct {
	Keys     []edgeKeyWire
	At, Edge []int32
	Best     []float64
}

func chainTrieToWire(t *chainTrie) chainTrieWire {
	w := chainTrieWire{Keys: make([]edgeKeyWire, len(t.keys))}
	for i, k := range t.keys {
		w.Keys[i] = k.toWire()
	}
	for n := 1; n < len(t.best); n++ {
		w.At, w.Edge, w.Best = append(w.At, t.from[n].at), append(w.Edge, t.from[n].edge), append(w.Best, t.best[n])
	}
	return w
}

// chainTrieFromWire reads a trie: each chain after the chain it extends,
// by an edge it names, once.
func chainTrieFromWire(w *chainTrieWire) (*chainTrie, error) {
	n := len(w.Best)
	if len(w.At) != n || len(w.Edge) != n {
		return nil, fmt.Errorf("decode the observed amplification: %d, %d and %d", len(w.At), len(w.Edge), n)
	}
	t := &chainTrie{keys: make([]edgeKey, len(w.Keys)), next: make(map[chainStep]int32, n), best: []float64{0}, from: []chainStep{{}}}
	seen := make(map[edgeKey]bool, len(w.Keys))
	for i, k := range w.Keys {
		if t.keys[i] = k.key(); seen[t.keys[i]] {
			return nil, fmt.Errorf("decode the observed amplification: %s → %s %s twice", k.Caller, k.Callee, k.Op)
		}
		seen[t.keys[i]] = true
	}
	for i := range n {
		k, b := chainStep{w.At[i], w.Edge[i]}, w.Best[i]
		if _, ok := t.next[k]; ok || k.at < 0 || int(k.at) > i || k.edge < 0 || int(k.edge) >= len(t.keys) || !(b >= 0) || math.IsInf(b, 0) {
			return nil, fmt.Errorf("decode the observed amplification: chain %d extends %d by edge %d (again?) to %v", i+1, k.at, k.edge, b)
		}
		t.next[k] = int32(i + 1)
		t.best, t.from = append(t.best, b), append(t.from, k)
	}
	return t, nil
}

// rootSetWire is rootSet on the wire: each root operation by name, with
// its requests' starts, durations and outcomes side by side.
type rootSetWire struct {
	Ops    []opCount[rootOpWire]
	Lo, Hi int64
}

type rootOpWire struct {
	Starts, Durs []int64
	Outcomes     []byte
	First        int32
	Server       bool
	Client       bool
	Method       string
	Examples     []rootExampleWire
}

type rootExampleWire struct {
	Trace  ingest.TraceID
	Span   ingest.SpanID
	Failed bool
}

func rootSetToWire(rs *rootSet) rootSetWire {
	w := rootSetWire{Lo: rs.lo, Hi: rs.hi}
	for _, c := range opCountsOf(rs.ops) {
		o := c.N
		ow := rootOpWire{Starts: make([]int64, len(o.reqs)), Durs: make([]int64, len(o.reqs)), Outcomes: make([]byte, len(o.reqs)),
			First: o.first, Server: o.server, Client: o.client, Method: o.method}
		for i, r := range o.reqs {
			ow.Starts[i], ow.Durs[i], ow.Outcomes[i] = r.start, r.dur, byte(r.out)
		}
		for _, x := range o.examples {
			ow.Examples = append(ow.Examples, rootExampleWire{x.trace, x.span, x.failed})
		}
		w.Ops = append(w.Ops, opCount[rootOpWire]{c.Service, c.Op, ow})
	}
	return w
}

// rootSetFromWire reads root requests: each operation once, with at
// least one request, a start, duration and known outcome each, a first
// position in the input, and no more examples than requests or
// maxExamples, in their order (rootExample.better).
func rootSetFromWire(w *rootSetWire) (*rootSet, error) {
	rs := &rootSet{ops: map[node]*rootOp{}, lo: w.Lo, hi: w.Hi}
	for _, c := range w.Ops {
		n, ow := node{c.Service, c.Op}, &c.N
		k := len(ow.Starts)
		if rs.ops[n] != nil || k == 0 || len(ow.Durs) != k || len(ow.Outcomes) != k || ow.First < 0 || len(ow.Examples) > min(k, maxExamples) {
			return nil, fmt.Errorf("decode the root requests of %s %s: twice, or %d starts, %d durations, %d outcomes, first at %d, %d examples",
				c.Service, c.Op, k, len(ow.Durs), len(ow.Outcomes), ow.First, len(ow.Examples))
		}
		o := &rootOp{reqs: make([]rootReq, k), first: ow.First, server: ow.Server, client: ow.Client, method: ow.Method}
		for i := range k {
			if outcome(ow.Outcomes[i]) > outcomeChallenge {
				return nil, fmt.Errorf("decode the root requests of %s %s: request %d of outcome %d, which there is not", c.Service, c.Op, i, ow.Outcomes[i])
			}
			o.reqs[i] = rootReq{ow.Starts[i], ow.Durs[i], outcome(ow.Outcomes[i])}
		}
		for i, x := range ow.Examples {
			e := rootExample{x.Trace, x.Span, x.Failed}
			if i > 0 && !o.examples[i-1].better(e) {
				return nil, fmt.Errorf("decode the root requests of %s %s: example %d out of order", c.Service, c.Op, i)
			}
			o.examples = append(o.examples, e)
		}
		rs.ops[n] = o
	}
	return rs, nil
}

// workPairsFromWire reads one edge's work pairs: counts of tries no fewer
// than their slow ones, as many after a slow attempt as after a fast one.
func workPairsFromWire(w workPairsWire) (workPairs, error) {
	x := workPairs{tries: w.Tries}
	st := &x.tries
	if len(st.AfterSlowByAttempt) != len(st.AfterFailureByAttempt) {
		return x, fmt.Errorf("decode the work pairs: %d counts after a slow attempt and %d after a fast one",
			len(st.AfterSlowByAttempt), len(st.AfterFailureByAttempt))
	}
	for _, c := range append(append([]TryCount{st.First}, st.AfterSlowByAttempt...), st.AfterFailureByAttempt...) {
		if err := counts([]int{c.Slow, c.Tries - c.Slow}); err != nil {
			return x, fmt.Errorf("decode the work pairs: %d slow of %d tries: %w", c.Slow, c.Tries, err)
		}
	}
	return x, nil
}
