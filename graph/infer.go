package graph

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/retryaudit/retryaudit/ingest"
)

// SelfQuantileLevels are the quantiles of each operation's self time carried in
// Operation.SelfQuantilesMS, from which replay draws service times.
var SelfQuantileLevels = []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1}

// Infer builds the retry topology of the spans in set. It does not fail on
// odd input: what it cannot decide it reports as unknown, and what looks
// wrong it lists in Topology.Warnings. Its only error is ctx's, when ctx
// ends before inference does.
func Infer(ctx context.Context, set *ingest.Set) (*Topology, error) {
	ix, err := newIndex(ctx, set)
	if err != nil {
		return nil, err
	}
	return infer(ctx, ix)
}

// InferWithArrivals is Infer, plus the root requests in time order that
// replay sends as the traces' own traffic (--arrivals trace), from one
// index of the spans.
func InferWithArrivals(ctx context.Context, set *ingest.Set) (*Topology, []Arrival, error) {
	ix, err := newIndex(ctx, set)
	if err != nil {
		return nil, nil, err
	}
	t, err := infer(ctx, ix)
	if err != nil {
		return nil, nil, err
	}
	return t, rootArrivals(ix), nil
}

// checkEvery is how many spans or calls inference handles between two
// looks at its context: often enough to stop within milliseconds, rarely
// enough to cost nothing.
const checkEvery = 1 << 14

// canceled returns ctx's error every checkEvery-th i, nil otherwise.
func canceled(ctx context.Context, i int) error {
	if i%checkEvery != 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("infer: %w", err)
	}
	return nil
}

func infer(ctx context.Context, ix *index) (*Topology, error) {
	var ops opTable
	var instrumented map[string]bool
	var instances map[string]map[string]bool
	statsDone := make(chan struct{})
	go func() {
		defer close(statsDone)
		ops, instrumented, instances = serverStats(ix) // reads the index only
	}()
	names := newNaming(ix)
	calls, err := extractCalls(ctx, ix, names)
	if err != nil {
		<-statsDone
		return nil, err
	}
	joinRootRetries(ix, names, calls)
	ix.joinedEnds = clientEnds(ix, calls)
	ecs := groupEdges(ix, calls)
	lateTransit := resolveLateOK(ix, ecs)
	<-statsDone
	// Before anything else is built from the calls: what the operations'
	// statistics hold is freed as they are read.
	svcs := services(ix, ops, instrumented, instances, ecs)

	var byFinding findingExamples
	t := &Topology{Schema: Schema, Services: []Service{}, Edges: []Edge{}, Paths: []Path{}, Warnings: []string{}}
	for i, ec := range ecs {
		if err := canceled(ctx, i); err != nil {
			return nil, err
		}
		e, shows := inferEdge(ix, ec)
		if e.ResultRetries != nil {
			e.ResultRetries.TransitMS = lateTransit[i]
		}
		t.Edges = append(t.Edges, e)
		byFinding = append(byFinding, shows)
	}
	for i, n := range leakedAttempts(ix, names, ecs) {
		t.Edges[i].LeakedAttempts = n
	}
	for i, l := range lostRetries(ix, ecs) {
		applyRootCalls(&t.Edges[i], rootCallsOf(ix, ecs[i].calls))
		applyLost(&t.Edges[i], l)
	}
	rs := mapShards(ix, ix.rootsOf, (*rootSet).merge)
	roots, lo, hi := rs.ops, rs.lo, rs.hi
	t.Edges = append(t.Edges, userEdges(roots)...)
	byServer := callsByServer(ix, ecs)
	for i, c := range concurrencyOf(ix, ecs, byServer) {
		t.Edges[i].ConcurrentShare, t.Edges[i].ConcurrentOtherShare, t.Edges[i].FanOutWidth = c.Share, c.OtherShare, c.Width
	}
	// The edges' late-tail noise goes to the breakers' reading of fast
	// answers; it is not part of the topology (nor of its JSON).
	// The waits of each edge's retry loop: a loop around a breaker waits
	// them out when the breaker refuses every try of a call.
	tails := make([]float64, len(ecs))
	waits := make([]retryWaits, len(ecs))
	for i, ec := range ecs {
		tails[i], t.Edges[i].noiseTail = t.Edges[i].noiseTail, 0
		waits[i] = retryWaitsOf(ix, ec, &t.Edges[i])
	}
	for i, b := range breakers(ix, ecs, byServer, tails, waits) {
		if n := t.Edges[i].proxyShed; n > 0 {
			if b == nil {
				b = &Breaker{}
			}
			b.ProxyShed = n
		}
		if t.Edges[i].LostContextLeftOut > 0 {
			// Its calls' retries, and their answers, are in other traces:
			// a call that reads failed may have succeeded on a retry, so
			// failures in a row say nothing of a breaker.
			b = nil
		}
		t.Edges[i].Breaker = b
	}
	var truncated bool
	t.Paths, truncated = buildPaths(ix, t.Edges, byServer, roots)
	t.Services = svcs
	calibrate(ix, ecs, roots, t)
	t.Findings = findings(t.Edges, t.Paths, byFinding)

	rootCalls := requests(roots)
	t.Source = Source{Traces: ix.traces, Spans: len(ix.spans) - ix.dups, RootCalls: rootCalls, ContextLeaks: ix.leaks + ix.repeats}
	t.Source.LostContextRetries = ix.lostRoots
	if ix.leaks+ix.repeats > 0 {
		t.Source.ContextLeakShapes = &LeakShapes{Late: ix.leaks, Repeated: ix.repeats, Spans: ix.leakedSpans}
	}
	switch window := float64(hi-lo) / 1e9; {
	case ix.strayRoots > 0 && t.Calibration != nil:
		// A stray root's clock would stretch the spans' window too.
		t.Source.WindowS, t.Source.RootRatePerS = t.Calibration.ArrivalWindowS, t.Calibration.RootRatePerS
	case window >= 1e-3:
		// Below a millisecond a rate says nothing: leave it 0 (unknown).
		t.Source.WindowS = round3(window)
		t.Source.RootRatePerS = round3(float64(rootCalls) / window)
	}
	t.Warnings = warningsOf(ix, t)
	if truncated {
		t.Warnings = append(t.Warnings, fmt.Sprintf("the call graph has more chains than %d steps of listing them reach: %d paths listed, the others left out",
			maxPathSteps, len(t.Paths)))
	}
	if err := canceled(ctx, 0); err != nil {
		return nil, err
	}
	return t, nil
}

// rootSet is the root requests of some traces, by value: per root
// operation each request's start, duration and own outcome, its best
// examples and which of its spans came first in the input; and the time
// the traces' spans cover (lo is 0 when there are none). The map steps
// that walk down from the roots read their own shard's (rootSpans).
type rootSet struct {
	ops    map[node]*rootOp
	lo, hi int64
}

// rootOp is the root requests of one root operation in some traces.
type rootOp struct {
	// reqs are in no particular order (a merge appends): every reduce
	// sorts or counts the values it reads.
	reqs []rootReq
	// first is the input position of the operation's first root span (the
	// input's span order, which the index keeps), server and method that
	// span's: they name the user edge, as the first root always has.
	// client: that span is a root CLIENT span, a call whose caller is not
	// traced (clientRootRequest): the operation is a client's entry.
	first          int32
	server, client bool
	method         string
	// examples are the best maxExamples requests (rootExample.better).
	examples []rootExample
}

// rootReq is one root request: its span's start and duration (ns) and
// its own outcome; a client's call joined to attempts of other traces
// lasts until its last attempt ended, with that attempt's outcome.
type rootReq struct {
	start, dur int64
	out        outcome
}

// isRootRequest reports whether span i starts a request: a root span that
// is no attempt, or an attempt made from no span.
func (ix *index) isRootRequest(i int32) bool {
	return ix.parent[i] < 0 && !isAttempt(&ix.spans[i]) || isRootAttempt(ix, i)
}

// clientRootRequest reports whether span i is a root CLIENT span that
// starts a root request: a call of a client with no span around its
// calls, not read as another call's attempt.
func (ix *index) clientRootRequest(i int32) bool {
	return ix.spans[i].Kind == ingest.KindClient && isRootAttempt(ix, i)
}

// clientEnds is, for each call made from a root client span that holds
// attempts of other traces (root spans joined to it as its retries), when
// its last attempt ended and that attempt's own outcome (start unset):
// the root request the call stands for lasts from its first attempt's
// start to its last one's end and ends as that attempt did. Nil when no
// call was joined.
func clientEnds(ix *index, calls []*call) map[int32]rootReq {
	if len(ix.joins) == 0 {
		return nil
	}
	out := map[int32]rootReq{}
	for _, c := range calls {
		if !ix.clientRootRequest(c.from) {
			continue
		}
		last := ix.last(c)
		if last.span == c.from || ix.parent[last.span] >= 0 {
			continue // its attempts are all under its own span
		}
		end := ix.spans[c.from].End
		for _, a := range ix.attemptsOf(c) {
			end = max(end, ix.spans[a.span].End)
		}
		o, _ := classify(ix, last.span, last.span)
		out[c.from] = rootReq{dur: end - ix.spans[c.from].Start, out: o}
	}
	return out
}

// rootNode is root span i's operation.
func (ix *index) rootNode(i int32) node { return node{ix.str(ix.spans[i].Service), ix.opName(i)} }

// rootsOf is a map step: the selected root requests and their spans' time.
func (ix *index) rootsOf(s sel) *rootSet {
	rs := &rootSet{ops: map[node]*rootOp{}}
	for i := range ix.spans {
		if !ix.keep[i] || !s.has(int32(i)) {
			continue
		}
		sp := &ix.spans[i]
		if rs.lo == 0 || sp.Start < rs.lo {
			rs.lo = sp.Start
		}
		rs.hi = max(rs.hi, sp.End)
		if !ix.isRootRequest(int32(i)) {
			continue
		}
		n := ix.rootNode(int32(i))
		o := rs.ops[n]
		if o == nil {
			o = &rootOp{first: int32(i), server: isServer(sp), client: ix.clientRootRequest(int32(i)), method: ix.str(sp.Method)}
			rs.ops[n] = o
		}
		out, _ := classify(ix, int32(i), int32(i))
		dur := sp.Duration()
		if j, ok := ix.joinedEnds[int32(i)]; ok {
			dur, out = j.dur, j.out
		}
		o.reqs = append(o.reqs, rootReq{sp.Start, dur, out})
		o.addExample(rootExample{sp.TraceID, sp.SpanID, out.failed()})
	}
	return rs
}

// rootSpans is the selected root requests by operation, in span order:
// what a map step that walks down from them reads of its own shard.
func (ix *index) rootSpans(s sel) map[node][]int32 {
	roots := map[node][]int32{}
	for i := range ix.spans {
		if ix.keep[i] && ix.isRootRequest(int32(i)) && s.has(int32(i)) {
			n := ix.rootNode(int32(i))
			roots[n] = append(roots[n], int32(i))
		}
	}
	return roots
}

// merge adds o's root requests (of other traces) to rs, by operation.
func (rs *rootSet) merge(o *rootSet) {
	for n, p := range o.ops {
		sum := rs.ops[n]
		if sum == nil {
			rs.ops[n] = p
			continue
		}
		sum.reqs = append(sum.reqs, p.reqs...)
		if p.first < sum.first {
			sum.first, sum.server, sum.client, sum.method = p.first, p.server, p.client, p.method
		}
		for _, x := range p.examples {
			sum.addExample(x)
		}
	}
	if rs.lo == 0 || o.lo != 0 && o.lo < rs.lo {
		rs.lo = o.lo
	}
	rs.hi = max(rs.hi, o.hi)
}

// requests is how many root requests roots holds.
func requests(roots map[node]*rootOp) int {
	n := 0
	for _, o := range roots {
		n += len(o.reqs)
	}
	return n
}

// userEdges adds a `user` caller for every root operation.
func userEdges(roots map[node]*rootOp) []Edge {
	var out []Edge
	for n, o := range roots {
		if !o.server {
			continue
		}
		k := len(o.reqs)
		e := Edge{Caller: userCaller, Callee: n.svc, Operation: n.op, Calls: k, Attempts: k,
			AttemptsHistogram: []int{k}, MaxAttempts: 1, Backoff: Backoff{Kind: BackoffImmediate, Jitter: JitterNone},
			RetriedStatus: []string{}, NotRetriedStatus: []string{}, Method: o.method}
		d := make([]float64, 0, k)
		failed := 0
		for _, r := range o.reqs {
			d = append(d, float64(r.dur)/1e6)
			if r.out.failed() {
				failed++
			}
		}
		slices.Sort(d)
		e.CalleeP50MS, e.CalleeP95MS, e.CalleeP99MS = latency(d)
		e.FailureRate = round3(float64(failed) / float64(k))
		e.Examples = rootExampleList(o.examples)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Edge) int {
		return cmp.Or(strings.Compare(a.Callee, b.Callee), strings.Compare(a.Operation, b.Operation))
	})
	return out
}

// opStats gathers one operation's executions (the SERVER spans of an
// instrumented service): their durations, self times and failures.
type opStats struct {
	dur, self dist
	failed    int
}

// opTable maps service → operation → stats.
type opTable map[string]map[string]*opStats

func (t opTable) get(svc, op string) *opStats {
	if t[svc] == nil {
		t[svc] = map[string]*opStats{}
	}
	if t[svc][op] == nil {
		t[svc][op] = &opStats{}
	}
	return t[svc][op]
}

// serverStats measures every operation of the instrumented services from
// their SERVER spans (and local roots). A service is instrumented when it
// has such a span: one seen only in spans under another service's (a
// database client span emitted under the database's name, as HotROD's
// mysql and redis-manual are) serves nothing of its own that a span shows,
// so it is virtual, timed by its callers' attempts. It reads the index
// only, so Infer runs it beside call extraction.
func serverStats(ix *index) (opTable, map[string]bool, map[string]map[string]bool) {
	st := mapShards(ix, ix.serverStatsIn, (*opPartial).merge)
	return st.ops, st.instrumented, st.instances
}

// opPartial is the operations' statistics of some traces.
type opPartial struct {
	ops          opTable
	instrumented map[string]bool
	// instances are the process instances each service's spans ran in,
	// by name ("": a span that names none).
	instances map[string]map[string]bool
}

// merge adds o's executions (of other traces) to p.
func (p *opPartial) merge(o *opPartial) {
	for svc, m := range o.ops {
		for op, os := range m {
			st := p.ops.get(svc, op)
			st.dur.merge(&os.dur)
			st.self.merge(&os.self)
			st.failed += os.failed
		}
	}
	maps.Copy(p.instrumented, o.instrumented)
	for svc, in := range o.instances {
		if p.instances[svc] == nil {
			p.instances[svc] = map[string]bool{}
		}
		maps.Copy(p.instances[svc], in)
	}
}

// serverStatsIn is serverStats' map step, over the selected spans.
func (ix *index) serverStatsIn(s sel) *opPartial {
	ops := opTable{}
	instrumented := map[string]bool{}
	instances := map[string]map[string]bool{}
	for i := range ix.spans {
		sp := &ix.spans[i]
		if !ix.keep[i] || !s.has(int32(i)) {
			continue
		}
		if !isServer(sp) && ix.parent[i] >= 0 {
			continue
		}
		svc := ix.str(sp.Service)
		instrumented[svc] = true
		if instances[svc] == nil {
			instances[svc] = map[string]bool{}
		}
		instances[svc][ix.str(ix.set.Instance(sp))] = true
		st := ops.get(svc, ix.opName(int32(i)))
		st.dur.add(float64(sp.Duration()) / 1e6)
		st.self.add(float64(selfTime(ix, int32(i))) / 1e6)
		if o, _ := classify(ix, int32(i), int32(i)); o.failed() {
			st.failed++
		}
	}
	return &opPartial{ops: ops, instrumented: instrumented, instances: instances}
}

// services lists every service with the operations it serves: measured
// from SERVER spans for instrumented services (ops), from their callers'
// attempts for virtual ones.
func services(ix *index, ops opTable, instrumented map[string]bool, instances map[string]map[string]bool, ecs []*edgeCalls) []Service {
	for _, ec := range ecs {
		if instrumented[ec.key.callee] {
			continue
		}
		// A virtual callee's time is what its callers waited for it.
		st := ops.get(ec.key.callee, ec.key.op)
		for _, c := range ec.calls {
			for _, a := range ix.attemptsOf(c) {
				d := float64(ix.spans[a.span].Duration()) / 1e6
				st.dur.add(d)
				st.self.add(d)
				if a.outcome.failed() {
					st.failed++
				}
			}
		}
	}
	var out []Service
	for svc, m := range ops {
		s := Service{Name: svc, Virtual: !instrumented[svc], Operations: []Operation{}, Instances: instanceCount(instances[svc])}
		for op, st := range m {
			o := Operation{Name: op, Count: st.dur.n(), SelfQuantilesMS: []float64{}}
			o.P50MS, o.P95MS, o.P99MS = st.dur.latency()
			if st.self.n() > 0 {
				o.SelfQuantilesMS = st.self.quantiles(SelfQuantileLevels)
			}
			if o.Count > 0 {
				o.ErrorRate = round3(float64(st.failed) / float64(o.Count))
			}
			summarized(&o.Summarized, "durations", st.dur.summary())
			summarized(&o.Summarized, "self_times", st.self.summary())
			s.Operations = append(s.Operations, o)
		}
		sort.Slice(s.Operations, func(i, j int) bool { return s.Operations[i].Name < s.Operations[j].Name })
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// instanceCount is how many process instances a service ran in, from
// the instances its spans name (in: "" for a span that names none):
// those named, and one more where spans that name none run beside
// them (as instanceGroups reads a caller's breakers); 0 where no span
// names one.
func instanceCount(in map[string]bool) int {
	if len(in) == 0 || len(in) == 1 && in[""] {
		return 0
	}
	return len(in)
}

// selfTime is a span's duration minus the time covered by its children
// (their union, clipped to the span).
func selfTime(ix *index, i int32) int64 {
	sp := &ix.spans[i]
	covered, end := int64(0), sp.Start
	for _, c := range ix.kids(i) { // sorted by start
		cs, ce := max(ix.spans[c].Start, end), min(ix.spans[c].End, sp.End)
		if ce > cs {
			covered += ce - cs
			end = ce
		}
	}
	return max(sp.Duration()-covered, 0)
}

func warningsOf(ix *index, t *Topology) []string {
	w := []string{}
	if ix.dups > 0 {
		w = append(w, fmt.Sprintf("%d spans appear more than once (the same export read twice?): each counted once", ix.dups))
	}
	if ix.selfParents > 0 || ix.cycles > 0 {
		w = append(w, fmt.Sprintf("%d spans name themselves as parent and %d parent cycles were found (corrupt ids?): each cycle was cut at its earliest span, which counts as a root",
			ix.selfParents, ix.cycles))
	}
	if ix.strayRoots > 0 {
		w = append(w, fmt.Sprintf("%d root requests start more than a day, and more than ten times the others' span, away from the rest (a clock's error?): left out of the arrival window and the root rate",
			ix.strayRoots))
	}
	if ix.leaks+ix.repeats > 0 {
		var shapes []string
		if ix.leaks > 0 {
			shapes = append(shapes, fmt.Sprintf("%d client spans started after their parent span had ended", ix.leaks))
		}
		if ix.repeats > 0 {
			shapes = append(shapes, fmt.Sprintf("%d client spans repeated a request their parent had already had answered", ix.repeats))
		}
		w = append(w, fmt.Sprintf("%s (%d spans with what they called): "+
			"they ran in the context of another request (a retrying agent on a reused connection, a worker's stale context?); left out of attempts, amplification and deadline findings",
			strings.Join(shapes, " and "), ix.leakedSpans))
	}
	w = append(w, rootWarnings(ix, t)...)
	if ix.unnamedNamed > 0 {
		w = append(w, fmt.Sprintf("%d spans named no service (unknown_service): each was given the service its caller addressed (a server span) or its parent's (any other span)", ix.unnamedNamed))
	}
	if ix.unnamedLeft > 0 {
		w = append(w, fmt.Sprintf("%d spans name no service and nothing in their trace names one: they stay unknown_service", ix.unnamedLeft))
	}
	if ix.polls > 0 {
		w = append(w, fmt.Sprintf("%d client spans repeated a request their parent had already had answered, with nothing to show another request sent them "+
			"(none failed and was sent again, none outlived its parent, no trace misses that request's retry): kept as the parent's own polls, "+
			"and read as retries on the result (result_retries) where one followed the answer with nothing else sent between", ix.polls))
	}
	if ix.orphans > 0 {
		w = append(w, fmt.Sprintf("%d spans name a parent that is not in the input: their calls cannot be attributed to a caller", ix.orphans))
	}
	for _, s := range t.Services {
		for _, o := range s.Operations {
			if len(o.Summarized) > 0 {
				w = append(w, fmt.Sprintf("%s %s: quantiles read from sketches of more than %d values (%s)", s.Name, o.Name, MaxExactValues, summarizedList(o.Summarized)))
			}
		}
	}
	for _, e := range t.Edges {
		if r := e.ResultRetries; r != nil && r.Unknown > 0 {
			w = append(w, fmt.Sprintf("%s: hedge or retry on the result unknown: in %d calls read below the instrumentation a request reached the callee after an earlier one "+
				"had answered OK there, within %gms (the edge's longest transit): sent before that answer came back (a hedge) or after it (a retry on the result), "+
				"the spans cannot tell; counted as hedged calls", edgeLocation(e), r.Unknown, r.TransitMS))
		}
		if h := e.Hedging; h != nil && h.DelayUnknown == h.Calls {
			w = append(w, fmt.Sprintf("%s: hedge delay unknown: in each of the %d hedged calls an attempt reached the callee after another had answered OK, "+
				"so the order the attempts arrived in is not the order they were sent in", edgeLocation(e), h.Calls))
		}
		if h := e.Hedging; h != nil && h.BelowInstrumentation > 0 && h.AnsweredByEarlier == 0 {
			w = append(w, fmt.Sprintf("%s: %d calls sent attempts that overlapped under one client span, and none was answered by an earlier attempt while a later one still ran: "+
				"per-try timeouts that leave the callee at work look the same, so these may be retries, not hedges", edgeLocation(e), h.BelowInstrumentation))
		}
		if e.MissingAttempts > 0 {
			w = append(w, fmt.Sprintf("%s: %d attempts that retry markers count are missing from the input (spans never exported?)", edgeLocation(e), e.MissingAttempts))
		}
		if e.PerTryTimeoutUnknown > 0 {
			w = append(w, fmt.Sprintf("%s: %d attempts timed out, but at no one duration: the per-try timeout is unknown", edgeLocation(e), e.PerTryTimeoutUnknown))
		}
		switch b := e.Backoff; {
		case !e.Retries || b.Kind != BackoffUnknown, e.LostContextLeftOut > 0 && b.Samples == 0:
			// A lost-context edge's retries are in other traces: the
			// warning on them says why their waits are not read.
		case len(b.KindCandidates) > 1:
			w = append(w, fmt.Sprintf("%s: the %d waits between attempts fit several backoff kinds (%s) at every retry: the kind is unknown, the schedule stands as read",
				edgeLocation(e), b.Samples, kindList(b.KindCandidates)))
		case len(b.KindCandidates) == 1:
			w = append(w, fmt.Sprintf("%s: the %d waits between attempts fit only %s backoff, which %d retries do not show enough of to claim (Fibonacci's rule needs four, exponential growth a multiplier): the kind is unknown, the schedule stands as read",
				edgeLocation(e), b.Samples, b.KindCandidates[0], len(b.Schedule)))
		case len(b.Schedule) >= minKindIndices:
			w = append(w, fmt.Sprintf("%s: the %d waits between attempts fit no backoff kind (constant, linear, exponential, fibonacci) at every retry: the schedule stands as read",
				edgeLocation(e), b.Samples))
		default:
			w = append(w, fmt.Sprintf("%s: %d waits between attempts are too few to tell the backoff", edgeLocation(e), b.Samples))
		}
		if e.Retries && !e.MaxAttemptsExact {
			w = append(w, fmt.Sprintf("%s: no call was seen exhausting its retries; max attempts %d is a lower bound", edgeLocation(e), e.MaxAttempts))
		}
		if len(e.Summarized) > 0 {
			w = append(w, fmt.Sprintf("%s: fits read bounded summaries of more than %d values (%s)", edgeLocation(e), MaxExactValues, summarizedList(e.Summarized)))
		}
	}
	return w
}

// kindList joins backoff kinds for messages.
func kindList(ks []BackoffKind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
