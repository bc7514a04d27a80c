package graph

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/retryaudit/retryaudit/ingest"
)

// Client spans that start their own trace (a root CLIENT span: no parent)
// are calls whose caller is not traced, or whose context was lost:
//
//   - an instrumented client with no span around its calls (a script, a
//     load generator, a CLI, a batch job): each attempt, retries included,
//     is the root of a trace of its own, and nothing links a retry to the
//     attempt it repeats;
//   - a retry run with a fresh context (context.Background(), a worker's,
//     timer's or pooled callback's): the first attempt sits under its
//     caller, the retries start new traces;
//   - an ordinary root: a cron or batch client's single calls.
//
// A root client span is a call of its own, made by its own service (the
// client). Which of them are retries of which the spans do not say: roots
// of one instance to one request that follow a failed one may be its
// retries, or the client's next calls, and under concurrency nothing tells
// which call a root repeats. Inference reads the roots as streams, one
// per instance and request (rootStream), in time order, and counts what
// the streams show as evidence (RootCalls): the edge's retries are unknown
// where a root failed retryably, never "not retried". Three things link
// a root to another call, and make it that call's next attempt (joins,
// joinRootRetries) rather than a call or root request of its own:
//
//   - it starts while a caller of the same instance still waits on a
//     failed, unretried call of the same request: that call's retry with
//     its context lost (Edge.LostContextRetries; where several such calls
//     wait and no request key tells them apart, or the stream also holds
//     roots no failed call waited for, whose it is is unknown, and it is
//     only counted);
//   - its resend marker (http.request.resend_count) is one above that of
//     the root before it in its stream, which failed and ended before it
//     started with no other root of the stream in flight;
//   - it names the same request key (a captured Idempotency-Key or
//     X-Request-Id) as the stream's last root to name one, which failed
//     and ended before it started, at any concurrency.

// rootStream is what makes attempts one stream: the same instance of the
// same service sending the same request (its URL or statement hash, host
// and port, and operation as the client names it).
type rootStream struct {
	Service, Instance, Peer, Op string
	Target                      uint64
}

func cmpStream(a, b rootStream) int {
	return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Peer, b.Peer),
		cmp.Compare(a.Op, b.Op), cmp.Compare(a.Target, b.Target))
}

// rootEvent is one attempt of a stream: a root client span (Root), or a
// client span under a caller that failed retryably and was not sent again
// under it (an origin of lost-context retries; WaitedTo is when its
// parent ended). Its fields are exported for the wire form.
type rootEvent struct {
	Stream     rootStream
	Trace      ingest.TraceID
	Span       ingest.SpanID
	Start, End int64
	WaitedTo   int64
	Root       bool
	Failed     bool // failed retryably
	// Resend is the root's resend marker (http.request.resend_count),
	// 0 where it carries none.
	Resend int16
	// Key is the request's captured Idempotency-Key or X-Request-Id
	// (ingest.SpanExtra.RequestKey), 0 where none was captured.
	Key uint64
	// Below: the root's client span has several callee spans under it
	// (attempts below the instrumentation): a call of its own, never
	// joined to another as one attempt.
	Below bool
}

// rootEvents is the streams' attempts of some traces (a map step's
// partial), in no particular order.
type rootEvents struct{ list []rootEvent }

func (r *rootEvents) merge(o *rootEvents) { r.list = append(r.list, o.list...) }

// rootVerdict is what the streams say of one root client span.
type rootVerdict struct {
	lost bool // a retry of a failed call whose context was lost
	// linked: a retry of the root before it in its stream, as its resend
	// marker says, or of the stream's last root with its request key
	// (byKey); joined to that root's call.
	linked, byKey bool
	// follows: it is the next root of its stream after a failed one, gap
	// (ns) after that one ended; afterOK: the next after a root that
	// succeeded, okGap after it ended.
	follows, afterOK bool
	gap, okGap       int64
	inFlight         int32 // roots of its stream running when it started, itself included
	failed           bool
	stream           int32 // its stream's number, for counting streams per edge
	noInstance       bool
}

// originVerdict is what the streams say of a failed call under a caller:
// how many lost-context roots followed it, how many of those were joined
// to its call as its next attempts, and whether any of them could have
// followed another failed call as well.
type originVerdict struct {
	retries, joined int
	// ambiguous: a retry of it could be another failed call's; mixed: its
	// stream also holds roots no failed call was waiting for.
	ambiguous, mixed bool
}

// streamOf returns client span c's stream.
func (ix *index) streamOf(c int32) rootStream {
	sp := &ix.spans[c]
	return rootStream{Service: ix.str(sp.Service), Instance: ix.str(ix.set.Instance(sp)), Peer: ix.str(sp.Peer), Op: ix.clientOpName(c), Target: sp.Target}
}

// rootClient reports whether span i is a root CLIENT span that inference
// reads as an attempt (isRootAttempt, before any is found lost).
func (ix *index) rootClient(i int32) bool {
	sp := &ix.spans[i]
	return ix.keep[i] && !ix.leaked[i] && sp.Kind == ingest.KindClient && ix.parent[i] < 0 && sp.ParentID.IsZero()
}

// rootClientServices is phase 1's map step: the services of the selected
// root client spans.
func (ix *index) rootClientServices(s sel) map[ingest.Sym]bool {
	out := map[ingest.Sym]bool{}
	for i := range ix.spans {
		if s.has(int32(i)) && ix.rootClient(int32(i)) {
			out[ix.spans[i].Service] = true
		}
	}
	return out
}

// rootStreamEvents is phase 2's map step: the selected root client spans,
// and the failed, unretried client calls under a caller of the services
// that made root client spans in any trace (services).
func (ix *index) rootStreamEvents(s sel, services map[ingest.Sym]bool) *rootEvents {
	out := &rootEvents{}
	if len(services) == 0 {
		return out
	}
	n := 0
	for p := range ix.spans {
		if s.has(int32(p)) && ix.rootClient(int32(p)) {
			n++
		}
	}
	out.list = make([]rootEvent, 0, n)
	lastAt := map[rootStream]int32{}
	for p := range ix.spans {
		if !ix.keep[p] || !s.has(int32(p)) {
			continue
		}
		if ix.rootClient(int32(p)) {
			server, servers := ix.serverCount(int32(p))
			o, _ := classify(ix, int32(p), server)
			sp := &ix.spans[p]
			out.list = append(out.list, rootEvent{Stream: ix.streamOf(int32(p)), Trace: sp.TraceID, Span: sp.SpanID, Start: sp.Start, End: sp.End,
				Root: true, Failed: o == outcomeRetryable, Resend: max(ix.set.Extra(sp).ResendCount, 0), Below: servers > 1, Key: ix.set.Extra(sp).RequestKey})
		}
		if ix.leaked[p] || isAttempt(&ix.spans[p]) {
			continue // the children of an attempt are its tries, not calls of their own
		}
		clear(lastAt)
		for _, c := range ix.kids(int32(p)) {
			sp := &ix.spans[c]
			if sp.Kind == ingest.KindClient && !ix.leaked[c] && services[sp.Service] {
				lastAt[ix.streamOf(c)] = c
			}
		}
		for k, c := range lastAt {
			if o, _ := classify(ix, c, ix.firstServer(c)); o == outcomeRetryable {
				sp := &ix.spans[c]
				out.list = append(out.list, rootEvent{Stream: k, Trace: sp.TraceID, Span: sp.SpanID, Start: sp.Start, End: sp.End,
					WaitedTo: ix.spans[p].End, Failed: true, Key: ix.set.Extra(sp).RequestKey})
			}
		}
	}
	return out
}

// serverCount returns span i's first SERVER/CONSUMER child (-1 if none)
// and how many it has, without making a list of them (firstServer,
// serverChildren): it is asked for every root client span.
func (ix *index) serverCount(i int32) (first int32, n int) {
	first = -1
	for _, c := range ix.kids(i) {
		if isServer(&ix.spans[c]) {
			if n == 0 {
				first = c
			}
			n++
		}
	}
	return first, n
}

// spanRef names a span across shards.
type spanRef struct {
	trace ingest.TraceID
	span  ingest.SpanID
}

// waitingOrigins are the origins of a stream (failed calls not sent again
// under their caller) seen so far in time order, whose caller may still
// wait.
type waitingOrigins struct{ list []rootEvent }

func (w *waitingOrigins) add(o rootEvent) { w.list = append(w.list, o) }

// waitsAt reports whether origin o had failed, and its caller still
// waited, when root e started, for a request that may be e's: one of them
// names no request key, or both name the same.
func (o *rootEvent) waitsAt(e rootEvent) bool {
	return o.End <= e.Start+overlapTolerance && e.Start <= o.WaitedTo+leakTolerance && (o.Key == 0 || e.Key == 0 || o.Key == e.Key)
}

// at returns how many origins were waiting when root e started, and the
// one that failed last, after dropping those whose caller had stopped
// waiting (they match no later root either: roots come in time order).
// Where e names a request key that exactly one of them names too, that
// one is proved its origin (keyed), alone.
func (w *waitingOrigins) at(e rootEvent) (from *rootEvent, n int, keyed bool) {
	w.list = slices.DeleteFunc(w.list, func(o rootEvent) bool { return o.WaitedTo+leakTolerance < e.Start })
	var byKey *rootEvent
	same := 0
	for k := range w.list {
		if o := &w.list[k]; o.waitsAt(e) {
			n++
			if from == nil || o.End > from.End {
				from = o
			}
			if e.Key != 0 && o.Key == e.Key {
				same++
				byKey = o
			}
		}
	}
	if same == 1 {
		return byKey, 1, true
	}
	return from, n, false
}

// rootJoin is a root client span to be read as the next attempt of the
// call whose latest attempt is after: a lost-context retry whose failed
// call is the only one it can be the retry of, or a root whose resend
// marker continues the root before it in its stream.
type rootJoin struct {
	after, root spanRef
	start       int64
}

// readRootStreams is the reduce: each stream's attempts in time order.
// A root that starts after a failed origin of its stream ended, while the
// origin's caller still waited, is a lost-context retry of it (of the
// latest such origin; ambiguous when several were waiting). Every other
// root is read against the root before it in its stream; one whose resend
// marker is one more than that root's, which failed and ended before it
// started with no other root of the stream in flight, is its retry. It
// returns the verdicts by root and origin, and the joins in time order.
func readRootStreams(ev *rootEvents) (map[spanRef]rootVerdict, map[spanRef]originVerdict, []rootJoin) {
	list := ev.list
	slices.SortFunc(list, func(a, b rootEvent) int {
		return cmp.Or(cmpStream(a.Stream, b.Stream), cmp.Compare(a.Start, b.Start), bytes.Compare(a.Trace[:], b.Trace[:]), bytes.Compare(a.Span[:], b.Span[:]))
	})
	roots, origins := make(map[spanRef]rootVerdict, len(list)), map[spanRef]originVerdict{}
	var joins []rootJoin
	// chain is, per origin, the latest attempt of its call so far (the
	// origin, then each lost retry joined to it); broken, the origins
	// whose call is read no further: a retry of it could have been
	// another's, or was not joined.
	chain := map[spanRef]spanRef{}
	broken := map[spanRef]bool{}
	stream := int32(0)
	for lo := 0; lo < len(list); stream++ {
		hi := lo + 1
		for hi < len(list) && list[hi].Stream == list[lo].Stream {
			hi++
		}
		// mixed: the stream also holds roots no failed call was waiting
		// for (a poller or job of the same instance sending the same
		// request): which of its roots are retries is then unknown.
		mixed, any := false, false
		var w waitingOrigins
		for _, e := range list[lo:hi] {
			if !e.Root {
				w.add(e)
				continue
			}
			_, n, _ := w.at(e)
			any, mixed = any || n > 0, mixed || n == 0
		}
		mixed = mixed && any
		w = waitingOrigins{}
		var running []int64 // ends of the stream's roots so far
		prev := -1          // the stream's latest root that was no lost retry
		// lastByKey is, per request key, the stream's latest root that
		// named it and was no lost retry.
		lastByKey := map[uint64]int{}
		for j := lo; j < hi; j++ {
			e := list[j]
			ref := spanRef{e.Trace, e.Span}
			if !e.Root {
				w.add(e)
				continue
			}
			v := rootVerdict{failed: e.Failed, stream: stream, noInstance: e.Stream.Instance == ""}
			from, n, keyed := w.at(e)
			if n > 1 {
				// It could be the retry of any of them: none of their
				// calls is read on from here.
				for _, o := range w.list {
					if o.waitsAt(e) {
						broken[spanRef{o.Trace, o.Span}] = true
					}
				}
			}
			if from != nil {
				v.lost = true
				o := spanRef{from.Trace, from.Span}
				ov := origins[o]
				ov.retries++
				ov.ambiguous = ov.ambiguous || n > 1
				ov.mixed = ov.mixed || mixed && !keyed
				origins[o] = ov
				roots[ref] = v
				after, ok := chain[o]
				if !ok {
					after = o
				}
				if n > 1 || mixed && !keyed || e.Below || broken[o] {
					broken[o] = true
					continue
				}
				joins = append(joins, rootJoin{after: after, root: ref, start: e.Start})
				chain[o] = ref
				ov.joined++
				origins[o] = ov
				continue
			}
			running = slices.DeleteFunc(running, func(end int64) bool { return end <= e.Start+overlapTolerance })
			v.inFlight = int32(len(running)) + 1
			running = append(running, e.End)
			if prev >= 0 && list[prev].End <= e.Start+overlapTolerance {
				p := &list[prev]
				if p.Failed {
					v.follows, v.gap = true, e.Start-p.End
				} else {
					v.afterOK, v.okGap = true, e.Start-p.End
				}
				if e.Key == 0 && p.Failed && e.Resend > 0 && p.Resend == e.Resend-1 && v.inFlight == 1 && !e.Below && !p.Below {
					v.linked = true
					joins = append(joins, rootJoin{after: spanRef{p.Trace, p.Span}, root: ref, start: e.Start})
				}
			}
			if k, ok := lastByKey[e.Key]; ok && e.Key != 0 {
				// The same request key: the same request sent again, after
				// its last root failed.
				if p := &list[k]; p.Failed && p.End <= e.Start+overlapTolerance && !e.Below && !p.Below {
					v.linked, v.byKey = true, true
					joins = append(joins, rootJoin{after: spanRef{p.Trace, p.Span}, root: ref, start: e.Start})
				}
			}
			if e.Key != 0 {
				lastByKey[e.Key] = j
			}
			prev = j
			roots[ref] = v
		}
		lo = hi
	}
	slices.SortFunc(joins, func(a, b rootJoin) int {
		return cmp.Or(cmp.Compare(a.start, b.start), bytes.Compare(a.root.trace[:], b.root.trace[:]), bytes.Compare(a.root.span[:], b.root.span[:]))
	})
	return roots, origins, joins
}

// markRootStreams reads the root client spans' streams (rootStreamEvents,
// readRootStreams) and keeps what they say by span: ix.roots for the roots,
// ix.lostOrigins for the failed calls that lost-context roots retried,
// ix.joins for the roots to read as the next attempt of another call.
func (ix *index) markRootStreams() {
	services := mapShards(ix, ix.rootClientServices, func(sum, p map[ingest.Sym]bool) {
		for k := range p {
			sum[k] = true
		}
	})
	if len(services) == 0 {
		return
	}
	ev := mapShards(ix, func(s sel) *rootEvents { return ix.rootStreamEvents(s, services) }, (*rootEvents).merge)
	if len(ev.list) == 0 {
		return
	}
	roots, origins, joins := readRootStreams(ev)
	inJoin := map[spanRef]int32{}
	for _, j := range joins {
		inJoin[j.after], inJoin[j.root] = -1, -1
	}
	ix.roots = make(map[int32]rootVerdict, len(roots))
	ix.lostOrigins = map[int32]originVerdict{}
	ix.attemptRoot = make([]bool, len(ix.spans))
	ix.each(func(s sel) {
		for i := range ix.spans {
			if !ix.keep[i] || !s.has(int32(i)) || ix.spans[i].Kind != ingest.KindClient {
				continue
			}
			ref := spanRef{ix.spans[i].TraceID, ix.spans[i].SpanID}
			if v, ok := roots[ref]; ok {
				ix.roots[int32(i)] = v
				if v.lost {
					ix.lostRoots++
				}
				ix.attemptRoot[i] = v.lost || v.linked
			}
			if o, ok := origins[ref]; ok {
				ix.lostOrigins[int32(i)] = o
				if o.ambiguous {
					ix.lostAmbiguous += o.retries
				}
				if o.mixed {
					ix.lostMixed += o.retries
				}
			}
			if _, ok := inJoin[ref]; ok {
				inJoin[ref] = int32(i)
			}
		}
	})
	for _, j := range joins {
		ix.joins = append(ix.joins, [2]int32{inJoin[j.after], inJoin[j.root]})
	}
}

// joinRootRetries adds each root of ix.joins, in time order, to the call
// whose latest attempt is the span it follows, as that call's next
// attempt: a lost-context retry to the failed call it retried, a root
// whose resend marker continues the root before it to that root's call.
// Calls hold attempts of one trace otherwise; these are the calls whose
// attempts the traces split. A root whose call is not found (its latest
// attempt is not the span it follows: the call went on under its caller,
// or was hedged) is left out, counted in ix.unjoined.
func joinRootRetries(ix *index, names *naming, calls []*call) {
	if len(ix.joins) == 0 {
		return
	}
	latest := map[int32]*call{}
	for _, c := range calls {
		if as := ix.attemptsOf(c); len(as) > 0 {
			latest[as[len(as)-1].span] = c
		}
	}
	for _, j := range ix.joins {
		after, root := j[0], j[1]
		c := latest[after]
		if c == nil || c.hedged || after < 0 || root < 0 {
			ix.unjoined++
			continue
		}
		prev := ix.last(c)
		server := ix.firstServer(root)
		a := ix.newAttempt(root, server)
		a.nth = -1
		if prev.nth >= 0 {
			a.nth = prev.nth + 1
		}
		ix.addAttempts(c, a)
		if n := ix.nameOf(c); n.op == "" && server >= 0 {
			_, op := names.resolve(ix, root, server)
			ix.rename(c, func(n *callName) { n.op = op })
		}
		evidence := EvidenceLostContext
		switch v := ix.roots[root]; {
		case v.byKey:
			evidence = EvidenceRequestKey
		case v.linked:
			evidence = "markers"
		}
		ix.rename(c, func(n *callName) { n.evidence = evidence })
		delete(latest, after)
		latest[root] = c
	}
}

// lostRoot reports whether root span i is read as another call's attempt:
// a retry whose context was lost, or one its resend marker links to the
// root before it.
func (ix *index) lostRoot(i int32) bool { return ix.attemptRoot != nil && ix.attemptRoot[i] }

// RootCalls is the evidence of an edge's calls whose client span starts
// its own trace (a client with no span around its calls): each such span
// counts as a call, since no span links a retry to the attempt it repeats.
type RootCalls struct {
	// Calls counts the edge's calls whose client span is a trace's root,
	// Failed those whose root span (the call's first attempt) failed
	// retryably.
	Calls  int `json:"calls"`
	Failed int `json:"failed"`
	// Streams counts the instance and request streams they came in (one
	// instance of the client sending one request: URL, host and port,
	// operation); NoInstance the calls whose spans name no instance, whose
	// streams may mix several.
	Streams    int `json:"streams"`
	NoInstance int `json:"no_instance,omitempty"`
	// FollowedFailure counts the calls that came next in their stream
	// after a failed one, which ended before they started: retries of it,
	// or the client's next calls; FollowedOK those that came next after
	// one that succeeded. GapAfterFailureP50MS and GapAfterOKP50MS are the
	// median gaps from the one before's end (null without any).
	FollowedFailure      int      `json:"followed_failure"`
	FollowedOK           int      `json:"followed_ok"`
	GapAfterFailureP50MS *float64 `json:"gap_after_failure_p50_ms"`
	GapAfterOKP50MS      *float64 `json:"gap_after_ok_p50_ms"`
	// MostInFlight is the most calls of one stream running at once (1: one
	// after another).
	MostInFlight int `json:"most_in_flight"`
	// Linked counts the roots read as a later attempt of one of these
	// calls: each carries a resend marker (http.request.resend_count) one
	// above the root before it in its stream, which failed and ended
	// before it started with no other root of the stream in flight.
	// LinkedByKey counts those that name the same request key as the
	// stream's last root to name it, which failed and ended before they
	// started. Both are in Attempts, not Calls.
	Linked      int `json:"linked_by_markers,omitempty"`
	LinkedByKey int `json:"linked_by_key,omitempty"`
}

// rootCallsOf gathers the evidence of the root calls among calls (an
// edge's); nil when there are none.
func rootCallsOf(ix *index, calls []*call) *RootCalls {
	if ix.roots == nil {
		return nil
	}
	rc := &RootCalls{}
	streams := map[int32]bool{}
	var afterFailure, afterOK []float64
	for _, c := range calls {
		v, ok := ix.roots[c.from]
		if !ok || v.lost || ix.attemptsOf(c)[0].req != c.from {
			continue
		}
		rc.Calls++
		streams[v.stream] = true
		rc.MostInFlight = max(rc.MostInFlight, int(v.inFlight))
		if v.failed {
			rc.Failed++
		}
		if v.noInstance {
			rc.NoInstance++
		}
		for _, a := range ix.attemptsOf(c)[1:] {
			switch v := ix.roots[a.span]; {
			case v.byKey:
				rc.LinkedByKey++
			case v.linked:
				rc.Linked++
			}
		}
		if v.follows {
			rc.FollowedFailure++
			afterFailure = append(afterFailure, float64(v.gap)/1e6)
		}
		if v.afterOK {
			rc.FollowedOK++
			afterOK = append(afterOK, float64(v.okGap)/1e6)
		}
	}
	if rc.Calls == 0 {
		return nil
	}
	rc.Streams = len(streams)
	rc.GapAfterFailureP50MS, rc.GapAfterOKP50MS = medianMS(afterFailure), medianMS(afterOK)
	return rc
}

// medianMS is the median of xs rounded to a microsecond, nil for none.
func medianMS(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	slices.Sort(xs)
	m := round3(quantile(xs, 0.5))
	return &m
}

// applyRootCalls sets what an edge's root calls allow it to claim: where
// one of them failed retryably and nothing else shows the edge retrying,
// its retries are unknown, not absent (RetriesUnknown): no attempt count,
// status or schedule is claimed from calls nothing links.
func applyRootCalls(e *Edge, rc *RootCalls) {
	e.RootCalls = rc
	if rc == nil || rc.Failed == 0 || e.Retries {
		return
	}
	e.RetriesUnknown = true
	e.MaxAttemptsExact = false
	e.NotRetriedStatus = []string{}
	e.Backoff = Backoff{Kind: BackoffUnknown, Jitter: JitterUnknown}
	e.PerTryTimeoutMS = nil
}

// lostRetries counts, for each edge of ecs, the lost-context retries of
// its failed calls (ix.lostOrigins), whether any could have been another
// call's as well, the status labels of the calls they retried, and the
// most retries one call had where none could be another's.
type lostOnEdge struct {
	retries, leftOut, most int
	ambiguous              bool
	status                 []string
}

func lostRetries(ix *index, ecs []*edgeCalls) []lostOnEdge {
	out := make([]lostOnEdge, len(ecs))
	if len(ix.lostOrigins) == 0 {
		return out
	}
	for i, ec := range ecs {
		l := &out[i]
		for _, c := range ec.calls {
			for _, a := range ix.attemptsOf(c) {
				o, ok := ix.lostOrigins[a.span]
				if !ok {
					continue
				}
				l.retries += o.retries
				l.leftOut += o.retries - o.joined
				l.ambiguous = l.ambiguous || o.ambiguous
				if !o.ambiguous {
					l.most = max(l.most, o.retries)
				}
				if s := a.status.String(); !slices.Contains(l.status, s) {
					l.status = append(l.status, s)
				}
			}
		}
	}
	return out
}

// applyLost sets what an edge's lost-context retries show. Those joined
// to their calls are attempts the fits read. Where none was (each could
// have been another call's), the edge still retries (the statuses they
// followed are retried ones), with at least one more attempt than it made
// under its callers (or than the most one call had, where no retry could
// be another call's), and an unknown schedule: the retries' waits are not
// read.
func applyLost(e *Edge, l lostOnEdge) {
	if l.retries == 0 {
		return
	}
	e.LostContextRetries, e.LostContextLeftOut = l.retries, l.leftOut
	if e.Retries {
		return
	}
	e.Retries = true
	e.MaxAttempts, e.MaxAttemptsExact = max(e.MaxAttempts+1, l.most+1), false
	e.Evidence = EvidenceLostContext
	e.Backoff = Backoff{Kind: BackoffUnknown, Jitter: JitterUnknown}
	for _, s := range l.status {
		e.NotRetriedStatus = slices.DeleteFunc(e.NotRetriedStatus, func(x string) bool { return x == s })
		if !slices.Contains(e.RetriedStatus, s) {
			e.RetriedStatus = append(e.RetriedStatus, s)
		}
	}
	slices.Sort(e.RetriedStatus)
}

// EvidenceRequestKey is Edge.Evidence where the attempts of a call were
// read from client spans that start their own traces and name the same
// request key (a captured Idempotency-Key or X-Request-Id header).
const EvidenceRequestKey = "request-key"

// EvidenceLostContext is Edge.Evidence where the retries were read from
// client spans that started their own trace right after a failed call of
// the same instance and request, its caller still waiting: retries that
// lost their context.
const EvidenceLostContext = "lost-context"

// rootWarnings explains the edges whose retries the root calls leave
// unknown, and the lost-context retries.
func rootWarnings(ix *index, t *Topology) []string {
	var w []string
	if ix.lostRoots > 0 {
		leftOut := 0
		for _, o := range ix.lostOrigins {
			leftOut += o.retries - o.joined
		}
		amb := ""
		if ix.lostAmbiguous > 0 {
			amb = fmt.Sprintf("; %d of them could be the retry of more than one failed call, and count for the latest", ix.lostAmbiguous)
		}
		if ix.lostMixed > 0 {
			amb += fmt.Sprintf("; %d of them share their instance and request with roots no failed call was waiting for (a poller or job sending the same request?), so which are retries is unknown", ix.lostMixed)
		}
		w = append(w, fmt.Sprintf("%d client spans started their own trace while a caller of the same instance still waited on the same request, which had just failed "+
			"(retries that lost their context: a fresh context, a worker's or timer's callback?): read as retries of the failed calls, not as calls or root requests; "+
			"%d of them are read as their calls' attempts, %d are counted on the calls' edges only (lost_context_left_out; the waits before them are not read)%s",
			ix.lostRoots, ix.lostRoots-leftOut, leftOut, amb))
	}
	if ix.unjoined > 0 {
		w = append(w, fmt.Sprintf("%d client spans that start their own trace follow a call that went on after them (hedged, or continued under its caller): left out of attempts and calls", ix.unjoined))
	}
	for _, e := range t.Edges {
		rc := e.RootCalls
		if !e.RetriesUnknown || rc == nil {
			continue
		}
		w = append(w, fmt.Sprintf("%s: %d calls start their own trace (no span around the client's calls) and %d of them failed; "+
			"%d came next in their stream (instance and request) after a failed one (gap p50 %s; after a success %s), in %d streams, at most %d at once: "+
			"no span links a retry to the call it repeats, so whether the client retries is unknown",
			edgeLocation(e), rc.Calls, rc.Failed, rc.FollowedFailure, msOrNone(rc.GapAfterFailureP50MS), msOrNone(rc.GapAfterOKP50MS), rc.Streams, rc.MostInFlight))
	}
	return w
}

// msOrNone spells an optional duration for messages.
func msOrNone(v *float64) string {
	if v == nil {
		return "none seen"
	}
	return ms(*v)
}
