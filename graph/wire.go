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

// partialWire is one partial on the wire: exactly one field is set.
type partialWire struct {
	Edge *edgeStatsWire
	Ops  *opPartialWire
}

// encodePartial is p's wire form.
func encodePartial(p any) ([]byte, error) {
	var w partialWire
	switch p := p.(type) {
	case *edgeStats:
		w.Edge = edgeStatsToWire(p)
	case *opPartial:
		w.Ops = opPartialToWire(p)
	default:
		return nil, fmt.Errorf("encode a %T: %w", p, errNoWireForm)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&w); err != nil {
		return nil, fmt.Errorf("encode a %T: %w", p, err)
	}
	return b.Bytes(), nil
}

// decodePartial reads a partial encodePartial wrote: an *edgeStats or an
// *opPartial. Bytes that are not one give an error.
func decodePartial(data []byte) (any, error) {
	var w partialWire
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return nil, fmt.Errorf("decode a partial: %w", err)
	}
	switch {
	case w.Edge != nil && w.Ops == nil:
		return edgeStatsFromWire(w.Edge)
	case w.Ops != nil && w.Edge == nil:
		return opPartialFromWire(w.Ops)
	}
	return nil, errors.New("decode a partial: not exactly one partial in it")
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
	Outlived, ProxyShed, RAHonored, RAIgn int
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

func edgeStatsToWire(st *edgeStats) *edgeStatsWire {
	return &edgeStatsWire{Caller: st.key.caller, CallerOp: st.key.callerOp, Callee: st.key.callee, Op: st.key.op,
		Calls: st.calls, Attempts: st.attempts, Missing: st.missing, Failed: st.failed, Hist: st.hist,
		ByLength: pairsOf(st.byLength, func(e *callEnds) callEndsWire { return callEndsWire{e.limit, e.retryable, setOf(e.failed)} }),
		GaveUp:   pairsOf(st.gaveUp, same[int]), Retried: setOf(st.retried),
		Evidence: pairsOf(st.evidence, same[int]), Methods: pairsOf(st.methods, same[int]),
		ProxyRetried: st.proxyRetried, AppRetried: st.appRetried, ProxyMost: st.proxyMostTries, Idem: st.idem, Hedged: st.hedged,
		Outlived: st.outlived, ProxyShed: st.proxyShed, RAHonored: st.raHonored, RAIgn: st.raIgnored, LongestOK: st.longestOK,
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
	st.examples = *examplesFromWire(w.Examples)
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
}

type opWire struct {
	Service, Op string
	Dur, Self   distWire
	Failed      int
}

func opPartialToWire(p *opPartial) *opPartialWire {
	w := &opPartialWire{Instrumented: setOf(p.instrumented)}
	for _, svc := range slices.Sorted(maps.Keys(p.ops)) {
		for _, op := range slices.Sorted(maps.Keys(p.ops[svc])) {
			st := p.ops[svc][op]
			w.Ops = append(w.Ops, opWire{svc, op, st.dur.toWire(), st.self.toWire(), st.failed})
		}
	}
	return w
}

func opPartialFromWire(w *opPartialWire) (*opPartial, error) {
	p := &opPartial{ops: opTable{}, instrumented: map[string]bool{}}
	for _, s := range w.Instrumented {
		p.instrumented[s] = true
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
