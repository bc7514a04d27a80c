package graph

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"fmt"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/retryaudit/retryaudit/ingest"
)

// An edge's statistics are a self-contained partial: they name the edge by
// its services and operations and the calls they keep as examples by trace
// and span id, never by a span's place in an index. So a map step in
// another process can send them to the reduce: encodeEdgeStats and
// decodeEdgeStats give them a wire form (encoding/gob of edgeStatsWire),
// and a decoded partial merges and fits exactly as the one encoded.

// edgeStatsWire is edgeStats with exported fields, for encoding/gob.
type edgeStatsWire struct {
	Caller, CallerOp, Callee, Op          string
	Calls, Attempts, Missing, Failed      int
	Hist                                  []int
	ByLength                              map[int]callEndsWire
	GaveUp                                map[string]int
	Retried                               map[string]bool
	Evidence, Methods                     map[string]int
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
	ByFinding                             map[string][]exampleWire
}

type callEndsWire struct {
	Limit, Retryable bool
	Failed           map[string]bool
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

func sampleFromWire[T, W any](s *sample[T], w sampleWire[W], from func(W) T) error {
	if len(w.Keys) != len(w.Values) || len(w.Keys) > w.Seen {
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

func (d *dist) fromWire(w distWire) error {
	if w.Sketch == nil {
		d.exact = w.Exact
		return nil
	}
	d.sk, _ = ddsketch.LogUnboundedDenseDDSketch(SketchAccuracy)
	return d.sk.DecodeAndMergeWith(w.Sketch)
}

func examplesToWire(s *exampleSet) []exampleWire {
	var out []exampleWire
	for _, x := range s.best {
		out = append(out, exampleWire{Trace: x.trace, From: spanIDOf(x.from), Attempts: x.attempts, Hedged: x.hedged,
			Start: x.start, FirstSpan: x.firstSpan, AttemptIDs: x.attemptIDs})
	}
	return out
}

func examplesFromWire(ws []exampleWire) exampleSet {
	var s exampleSet
	for _, w := range ws {
		s.best = append(s.best, exampleCall{from: keyOf(&ingest.Span{TraceID: w.Trace, SpanID: w.From}, 0), trace: w.Trace, attempts: w.Attempts,
			hedged: w.Hedged, start: w.Start, firstSpan: w.FirstSpan, attemptIDs: w.AttemptIDs})
	}
	return s
}

// encodeEdgeStats is st's wire form.
func encodeEdgeStats(st *edgeStats) ([]byte, error) {
	w := edgeStatsWire{Caller: st.key.caller, CallerOp: st.key.callerOp, Callee: st.key.callee, Op: st.key.op,
		Calls: st.calls, Attempts: st.attempts, Missing: st.missing, Failed: st.failed, Hist: st.hist,
		ByLength: map[int]callEndsWire{}, GaveUp: st.gaveUp, Retried: st.retried, Evidence: st.evidence, Methods: st.methods,
		ProxyRetried: st.proxyRetried, AppRetried: st.appRetried, ProxyMost: st.proxyMostTries, Idem: st.idem, Hedged: st.hedged,
		Outlived: st.outlived, ProxyShed: st.proxyShed, RAHonored: st.raHonored, RAIgn: st.raIgnored, LongestOK: st.longestOK,
		HedgeDelays: sampleToWire(&st.hedgeDelays, same[float64]), Legs: sampleToWire(&st.legs, same[float64]),
		Waits: sampleToWire(&st.waits, func(p pendingWait) waitWire { return waitWire{p.nth, p.ms, p.pushback, p.call} }),
		Abandoned: sampleToWire(&st.abandoned, func(a abandonedAttempt) abandonedWire {
			return abandonedWire{a.ms, a.named, a.timedOut, a.byCaller}
		}),
		ServerDur: st.serverDur.toWire(), Examples: examplesToWire(&st.examples), ByFinding: map[string][]exampleWire{}}
	for n, e := range st.byLength {
		w.ByLength[n] = callEndsWire{e.limit, e.retryable, e.failed}
	}
	for id, s := range st.byFinding {
		w.ByFinding[id] = examplesToWire(s)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&w); err != nil {
		return nil, fmt.Errorf("encode the statistics of %s → %s %s: %w", st.key.caller, st.key.callee, st.key.op, err)
	}
	return b.Bytes(), nil
}

// decodeEdgeStats reads statistics encodeEdgeStats wrote.
func decodeEdgeStats(data []byte) (*edgeStats, error) {
	var w edgeStatsWire
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return nil, fmt.Errorf("decode edge statistics: %w", err)
	}
	st := newEdgeStats(edgeKey{w.Caller, w.CallerOp, w.Callee, w.Op})
	st.calls, st.attempts, st.missing, st.failed, st.hist = w.Calls, w.Attempts, w.Missing, w.Failed, w.Hist
	for n, e := range w.ByLength {
		if e.Failed == nil {
			e.Failed = map[string]bool{}
		}
		st.byLength[n] = &callEnds{limit: e.Limit, retryable: e.Retryable, failed: e.Failed}
	}
	for _, m := range []struct{ to, from map[string]int }{{st.gaveUp, w.GaveUp}, {st.evidence, w.Evidence}, {st.methods, w.Methods}} {
		for k, v := range m.from {
			m.to[k] = v
		}
	}
	for s := range w.Retried {
		st.retried[s] = true
	}
	st.proxyRetried, st.appRetried, st.proxyMostTries, st.idem, st.hedged = w.ProxyRetried, w.AppRetried, w.ProxyMost, w.Idem, w.Hedged
	st.outlived, st.proxyShed, st.raHonored, st.raIgnored, st.longestOK = w.Outlived, w.ProxyShed, w.RAHonored, w.RAIgn, w.LongestOK
	st.examples = examplesFromWire(w.Examples)
	for id, ws := range w.ByFinding {
		s := examplesFromWire(ws)
		st.byFinding[id] = &s
	}
	for _, err := range []error{
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
