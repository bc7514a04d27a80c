package graph

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat"
)

type edgeKey struct {
	caller, callerOp, callee, op string
}

// edgeCalls gathers the calls of one edge.
type edgeCalls struct {
	key   edgeKey
	calls []*call
}

// groupEdges groups calls by caller, the caller's operation, callee and
// operation, in a stable order. Every edge's calls, in the order given,
// are a window of calls, which it reorders: no edge's list grows by
// appending, which at millions of calls costs a tenth of the memory
// inference holds; the reordering's one scratch list (8 bytes a call) is
// dropped on return.
func groupEdges(ix *index, calls []*call) []*edgeCalls {
	m := map[edgeKey]int32{}
	var out []*edgeCalls
	var counts []int
	edgeOf := make([]int32, len(calls))
	for i, c := range calls {
		k := edgeKey{caller: ix.str(ix.spans[c.from].Service), callerOp: ix.opName(ix.serverOf(c.from)), callee: ix.nameOf(c).callee, op: ix.nameOf(c).op}
		e, ok := m[k]
		if !ok {
			e = int32(len(out))
			m[k] = e
			out = append(out, &edgeCalls{key: k})
			counts = append(counts, 0)
		}
		edgeOf[i] = e
		counts[e]++
	}
	// Each call goes to its edge's run of calls, in the order given: a
	// counting sort through a second list, written as a few sequential
	// streams (one per edge), then copied back. (Following the
	// permutation's cycles in place saves the second list but swaps at
	// random across all calls, which at millions of calls misses the
	// cache on every step: 28 times the time at 10M spans as at 1M.)
	next := make([]int32, len(out))
	off := 0
	for e, ec := range out {
		next[e] = int32(off)
		ec.calls = calls[off : off+counts[e] : off+counts[e]]
		off += counts[e]
	}
	sorted := make([]*call, len(calls))
	for i, e := range edgeOf {
		sorted[next[e]] = calls[i]
		next[e]++
	}
	copy(calls, sorted)
	slices.SortFunc(out, func(x, y *edgeCalls) int {
		a, b := x.key, y.key
		return cmp.Or(strings.Compare(a.caller, b.caller), strings.Compare(a.callee, b.callee), strings.Compare(a.op, b.op),
			strings.Compare(a.callerOp, b.callerOp))
	})
	return out
}

// serverOf walks up from span i to the SERVER/CONSUMER span of the same
// service that it runs under (i itself if it is one, or the local root).
func (ix *index) serverOf(i int32) int32 {
	svc := ix.spans[i].Service
	for steps := 0; steps < 1000; steps++ {
		if isServer(&ix.spans[i]) {
			return i
		}
		p := ix.parent[i]
		if p < 0 || ix.spans[p].Service != svc {
			return i
		}
		i = p
	}
	return i
}

// callerAttempt returns the upstream client attempt that caused the work in
// span i: the parent of the SERVER span i runs under, or -1.
func (ix *index) callerAttempt(i int32) int32 {
	s := ix.serverOf(i)
	if !isServer(&ix.spans[s]) {
		return -1
	}
	return ix.parent[s]
}

// IdempotentMethod reports whether a call with HTTP method m may be
// repeated safely by HTTP semantics (RFC 9110 §9.2.2: GET, HEAD, OPTIONS,
// TRACE, PUT, DELETE). Anything else is not known to be safe: the writes
// (see WriteMethod) and a call with no HTTP method at all (an RPC, a
// database statement), which is idempotent only when declared so (gRPC's
// idempotency_level in a policy file, --idempotent). Method tokens are
// case-sensitive (RFC 9110 §9.1) and instrumentations record the standard
// ones in upper case: "Get" or "Delete" is an RPC's method name (gRPC
// instrumentations record rpc.method so), not HTTP's GET or DELETE.
func IdempotentMethod(m string) bool {
	switch m {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

// WriteMethod reports whether HTTP method m is known not to be idempotent
// (POST, PATCH, CONNECT). A method that is neither this nor idempotent is
// unknown: the findings about unkeyed writes do not judge it, and replay
// does not repeat it unless it is declared idempotent.
func WriteMethod(m string) bool {
	switch m {
	case "POST", "PATCH", "CONNECT":
		return true
	}
	return false
}

// inferEdge turns the calls of one edge into its inferred policy: each
// shard's calls are read into statistics of their own (the map step),
// which merge and are then fitted (see edgeStats).
func inferEdge(ix *index, ec *edgeCalls) (Edge, map[string][]Example) {
	st := mapShards(ix, func(s sel) *edgeStats {
		st := newEdgeStats(ec.key)
		for _, c := range ec.calls {
			if s.has(c.from) {
				st.add(ix, c)
			}
		}
		return st
	}, (*edgeStats).merge)
	return st.fit()
}

// abandonedAttempt is a failed attempt that something shows was given up
// on rather than answered with an error.
type abandonedAttempt struct {
	ms       float64
	named    bool // it ended with a status (not a bare reset or no answer)
	timedOut bool // its error says timeout, deadline or cancel
	byCaller bool // it ended when the caller's own attempt did
}

// abandoned reports whether a failed attempt was given up on: its error
// says it timed out or was cancelled (gRPC DEADLINE_EXCEEDED or
// CANCELLED), an HTTP client got no answer, or the callee went on working
// after a client span that records no answer's status ended. An error returned after a fixed delay is
// none of these: a callee that fails slowly has no timeout.
func (ix *index) abandoned(a attempt) bool {
	if timedOut(a.status) || a.status == labelNoResponse {
		return true
	}
	if ix.spans[a.span].HTTPStatus != 0 {
		// The client recorded the status it was answered with: an answer
		// reached it, whenever the callee's span says it ended (a busy
		// callee host ends its span after the response has gone).
		return false
	}
	return a.server >= 0 && a.server != a.span && ix.spans[a.server].End > ix.spans[a.span].End+overlapTolerance
}

// timedOut reports whether an attempt's error says it timed out or was
// cancelled: a timeout or cancel error, gRPC DEADLINE_EXCEEDED or
// CANCELLED.
func timedOut(status label) bool {
	switch status {
	case labelTimeout, grpcLabel(4), grpcLabel(1): // DEADLINE_EXCEEDED, CANCELLED
		return true
	}
	return false
}

// endsWithCaller reports whether an attempt made from span from ended when
// the upstream attempt that caused from's work did: cut by the caller's
// deadline, propagated, rather than by a timeout of its own. Not where
// the caller answered that upstream attempt (it recorded an HTTP status)
// before the attempt ended: the caller stopped waiting for its call and
// answered on its own (a timeout around the call that does not cancel
// the request, as Hystrix's, resilience4j's TimeLimiter or Polly's
// pessimistic timeout do), and the attempt ended only after, when the
// request it had abandoned was cancelled with the answered request or
// answered late. A deadline from upstream ends the upstream attempt
// without an answer, or ends the call before the caller answers.
func (ix *index) endsWithCaller(from int32, end int64) bool {
	ca := ix.callerAttempt(from)
	if ca < 0 {
		return false
	}
	if s := ix.serverOf(from); ix.spans[ca].HTTPStatus != 0 && ix.spans[s].End < end {
		return false
	}
	up := ix.spans[ca].End
	tol := max(int64(2e6), ix.spans[ca].Duration()/50)
	return end >= up-tol && end <= up+tol
}

// perTryTimeout finds the per-try timeout from attempts that were
// abandoned: the timeout cuts them off at one duration, so they cluster
// tightly (within 2ms or 5%) at the longest failures, and no success lasts
// longer. A timer never fires early and a loaded host fires some late, so
// a tail of later attempts is the same timeout fired late: at most as
// many as the cluster within the edge's timing noise of it (noise, ms: on
// a busy host a timer is as late as the edge's other timings, and a
// blocked event loop fires several at once), and beyond that at most half
// as many, thinning out (no window of them holds three and a quarter of
// the cluster's count: that would be a second timeout). When attempts that name a timeout form a cluster, refusals
// and resets do not count. Abandoned attempts that mostly (four in five)
// ended with their caller's own attempt are the caller's deadline
// propagated, not a timeout of this edge, whether or not they cluster (a
// call made later in the request is cut sooner): it returns no timeout
// and how many attempts it cut. Attempts that name a timeout but were cut
// at no one duration leave the timeout unknown: it returns how many there
// were (undecided). longestOK is the longest successful attempt (negative
// when none).
func perTryTimeout(abandoned []abandonedAttempt, longestOK, noise float64) (timeout *float64, cut, undecided int) {
	byCaller := 0
	for _, a := range abandoned {
		if a.byCaller {
			byCaller++
		}
	}
	if byCaller > 0 && byCaller*5 >= len(abandoned)*4 {
		return nil, byCaller, 0
	}
	if named := slices.DeleteFunc(slices.Clone(abandoned), func(a abandonedAttempt) bool { return !a.named }); len(named) >= 2 {
		abandoned = named
	}
	unknown := 0 // said when no one timeout shows: unknown where they said they timed out
	for _, a := range abandoned {
		if a.timedOut {
			unknown++
		}
	}
	if unknown < 2 {
		unknown = 0
	}
	if len(abandoned) < 2 {
		return nil, 0, 0
	}
	slices.SortFunc(abandoned, func(a, b abandonedAttempt) int { return cmp.Compare(a.ms, b.ms) })
	lo, size := densest(abandoned)
	cluster := abandoned[lo : lo+size]
	if size < 2 {
		return nil, 0, unknown
	}
	hi := cluster[size-1].ms
	if after := abandoned[lo+size:]; len(after) > 0 {
		// Attempts abandoned later than the cluster: timers fired late
		// if they are few and sparse; otherwise no one timeout.
		far := slices.DeleteFunc(slices.Clone(after), func(a abandonedAttempt) bool { return a.ms <= hi+noise })
		if len(after) > size || 2*len(far) > size {
			return nil, 0, unknown
		}
		if _, n := densest(far); n >= 3 && 4*n >= size {
			return nil, 0, unknown // a cluster of their own: another timeout
		}
	}
	if longestOK > hi {
		return nil, 0, 0 // a success outlasted the supposed timeout
	}
	return ptr(round3(cluster[0].ms)), 0, 0
}

// densest returns the densest window [d, d+w(d)] of sorted abandoned
// attempts (w: 2ms or 5% of d), the longest on ties (a timeout is the
// most anything abandoned lasted): where it starts and how many it holds.
func densest(abandoned []abandonedAttempt) (lo, size int) {
	for i, j := 0, 0; i < len(abandoned); i++ {
		j = max(j, i)
		w := max(2, 0.05*abandoned[i].ms)
		for j+1 < len(abandoned) && abandoned[j+1].ms <= abandoned[i].ms+w {
			j++
		}
		if j-i+1 >= size {
			lo, size = i, j-i+1
		}
	}
	return lo, size
}

// sortStatuses orders status labels numerically where they are numbers.
func sortStatuses(s []string) {
	sort.Slice(s, func(i, j int) bool {
		var a, b int
		_, ea := fmt.Sscan(s[i], &a)
		_, eb := fmt.Sscan(s[j], &b)
		if ea == nil && eb == nil {
			return a < b
		}
		if (ea == nil) != (eb == nil) {
			return ea == nil
		}
		return s[i] < s[j]
	})
}

// pendingWait is a wait between two consecutive attempts of a call, before
// it is known whether the schedule or the server set it.
type pendingWait struct {
	nth      int // the attempt before the wait is the call's nth+1
	ms       float64
	pushback pushbackKind // the attempt before was refused with a status a server sends its wait with
	// call tells the waits of one call from another's: the sample key of
	// the call's first attempt, whichever shard read it.
	call uint64
}

// pushbackKind is how a server may have told the caller when to retry,
// read from the status of the attempt before a wait.
type pushbackKind uint8

const (
	pushbackNone pushbackKind = iota
	// pushbackHTTP: a 429 or 503, which may carry Retry-After (seconds).
	pushbackHTTP
	// pushbackGRPC: RESOURCE_EXHAUSTED or UNAVAILABLE, which may carry
	// grpc-retry-pushback-ms (gRFC A6), a wait in milliseconds that no
	// instrumentation records.
	pushbackGRPC
)

// pushbackOf is the pushback a status may carry.
func pushbackOf(status label) pushbackKind {
	switch status {
	case httpLabel(429), httpLabel(503):
		return pushbackHTTP
	case grpcLabel(8), grpcLabel(14): // RESOURCE_EXHAUSTED, UNAVAILABLE
		return pushbackGRPC
	}
	return pushbackNone
}

// Server-directed waits that no span captured are waits after a pushback
// status that depart from what the schedule waits at the same attempt
// index: at least offScheduleFactor times its 90th percentile (the other
// waits there, or, with fewer than minPerIndex of them, offScheduleFactor²
// times that of the nearest index before). Retry-After counts in seconds,
// so an HTTP one sits at a whole number of seconds, to within
// wholeSecondLateMS late (or the edge's timing noise, if more: on a busy
// host the timer fires late by what its other timings vary) and
// wholeSecondEarlyMS early, and may also lie below the schedule
// (belowSchedule: a server asking for 1s where the schedule waits 2s) or
// above it by less than the factor where the schedule's own waits there
// spread little (aboveSchedule: 1s where ky's schedule waits 600ms). A
// gRPC pushback counts in milliseconds, so its value shows nothing; what
// shows it is that a server's wait is the server's, unjittered and the
// same whatever the attempt: at least minAgreeingPushbacks such waits
// within pushbackAgreeMS plus pushbackAgreeFraction of one another, where
// backoff jitters and grows and late timers scatter.
const (
	wholeSecondEarlyMS    = 10
	wholeSecondLateMS     = 60
	offScheduleFactor     = 3
	minAgreeingPushbacks  = 2
	pushbackAgreeMS       = 2
	pushbackAgreeFraction = 0.05
)

// wholeSeconds reports whether ms is a whole number of seconds, up to
// late ms late (at least wholeSecondLateMS).
func wholeSeconds(ms, late float64) bool {
	s := math.Round(ms / 1000)
	return s >= 1 && ms >= 1000*s-wholeSecondEarlyMS && ms <= 1000*s+max(late, wholeSecondLateMS)
}

// splitServerDirected separates the waits the server directed (a
// Retry-After or gRPC pushback not captured in any span) from those that
// follow the backoff schedule: it returns the latter per attempt index,
// and how many of the former it found. A wait the schedule could have
// produced, or one with no schedule to compare it with, stays in the
// schedule: a constant 1s backoff is not a server's instruction. noise is
// the edge's timing noise (ms), how late a whole-second wait may come.
//
// After a server's wait a library either starts its backoff over (gRFC
// A6: grpc-go resets its count of retries since the pushback, grpc-java
// its next backoff to the initial one) or goes on with it (got, most HTTP
// clients: the next wait is the one its attempt sets). Which, the waits
// that came after a server's wait say (afterServerWait): indexed from it
// or by their attempt, as it reads; where they cannot tell, they are left
// out of the schedule (after says why; nil where no call waited again
// after a server's wait).
//
// chains are the same schedule waits call by call: each call's waits in
// the order of their attempt index, from the first up to the first index
// it has none at (a server's wait ends the chain: the waits on either
// side of it are not consecutive draws of the schedule), in the order the
// calls' first waits come in waits; they show how one call's waits depend
// on each other (decorrelated jitter).
func splitServerDirected(waits []pendingWait, noise float64) (gaps [][]float64, n int, chains [][]float64, after *serverWaitReading) {
	directed := make([]bool, len(waits))
	markDirected(waits, directed, func(w pendingWait) bool { return w.pushback != pushbackNone && wholeSeconds(w.ms, noise) }, false,
		func(s float64, all []float64) bool {
			return belowSchedule(s, all, noise) || aboveSchedule(s, all, noise)
		},
		func(off []int) []int { return sameSecond(waits, off) })
	// Every retry after UNAVAILABLE is a suspect here: the schedule is
	// read from all the waits at an index.
	markDirected(waits, directed, func(w pendingWait) bool { return w.pushback == pushbackGRPC }, true,
		nil, func(off []int) []int { return agreeing(waits, off) })
	// The server's waits of each call, by the index of the wait.
	serverAt := map[uint64][]int{}
	for i, w := range waits {
		if directed[i] {
			serverAt[w.call] = append(serverAt[w.call], w.nth)
		}
	}
	// since returns the index of wait w counted from the last server's
	// wait before it in its call, or -1 where none came before.
	since := func(w pendingWait) int {
		k := -1
		for _, p := range serverAt[w.call] {
			if p < w.nth && (k < 0 || w.nth-p-1 < k) {
				k = w.nth - p - 1
			}
		}
		return k
	}
	read := afterServerWait(waits, directed, since, max(minNoiseMS, noiseFactor*noise))
	byCall := map[uint64]map[int]float64{}
	var order []uint64
	for i, w := range waits {
		if directed[i] {
			n++
			continue
		}
		k := w.nth
		if r := since(w); r >= 0 {
			switch read.reading {
			case ScheduleRestarts:
				k = r
			case ScheduleUnknown:
				continue // indexed neither way: left out
			}
		}
		for len(gaps) <= k {
			gaps = append(gaps, nil)
		}
		gaps[k] = append(gaps[k], w.ms)
		if len(serverAt[w.call]) > 0 && read.reading == ScheduleRestarts {
			continue // its waits were reindexed from a server's wait: no chain
		}
		if byCall[w.call] == nil {
			byCall[w.call] = map[int]float64{}
			order = append(order, w.call)
		}
		byCall[w.call][k] = w.ms
	}
	for _, c := range order {
		var ch []float64
		for k := 0; ; k++ {
			ms, ok := byCall[c][k]
			if !ok {
				break
			}
			ch = append(ch, ms)
		}
		if len(ch) > 0 {
			chains = append(chains, ch)
		}
	}
	if read.evidence != nil {
		after = &read
	}
	return gaps, n, chains, after
}

// serverWaitReading is what afterServerWait reads: the reading and its
// evidence (nil where no wait came after a server's wait).
type serverWaitReading struct {
	reading  AfterServerWait
	evidence *ServerWaitEvidence
}

// Thresholds of afterServerWait. minReference: how many waits an attempt
// index needs, from calls no server's wait came before, to weigh a wait
// against. lateWeight: the share of a wait's likelihood allowed for a
// wait far from every reference wait (a timer fired late, a schedule's
// ceiling past the references' longest), spread evenly over the
// logarithm of the waits' whole range, so that no single wait decides.
const (
	minReference = minNoJitter
	lateWeight   = 0.05
)

// afterServerWait reads whether the schedule restarts or continues after
// a server's wait. Each wait that came after one (since(w) ≥ 0; the
// others, directed ones left out, are the references) is weighed at the
// index it would have if the schedule restarted (since(w)) and at the
// index its attempt gives (w.nth), where both indices hold minReference
// reference waits: its likelihood under each is a kernel density of the
// logarithms of the reference waits there (bandwidth Silverman's rule,
// at least the noise tol against their median, as agreeing waits agree),
// mixed with lateWeight of an even density over the logarithm of every
// wait's range. The log likelihood ratios add up over the waits; a
// reading is claimed where the likelier one is kindEvidenceRatio (30:1)
// or more ahead, else unknown. Restarting and continuing index the first
// wait after a server's wait alike only where the server's wait came
// before the first attempt, which it cannot.
func afterServerWait(waits []pendingWait, directed []bool, since func(pendingWait) int, tol float64) serverWaitReading {
	var ref [][]float64
	lo, hi := math.Inf(1), 0.0
	for i, w := range waits {
		if directed[i] {
			continue
		}
		lo, hi = min(lo, max(w.ms, immediateMS)), max(hi, w.ms)
		if since(w) >= 0 {
			continue
		}
		for len(ref) <= w.nth {
			ref = append(ref, nil)
		}
		ref[w.nth] = append(ref[w.nth], w.ms)
	}
	// density returns the likelihood of ms at index k, or false.
	span := math.Log(max(hi, lo*math.E) / lo)
	type kde struct {
		logs []float64
		h    float64
	}
	kdes := make([]*kde, len(ref))
	for k, r := range ref {
		if len(r) < minReference {
			continue
		}
		logs := make([]float64, len(r))
		for i, x := range r {
			logs[i] = math.Log(max(x, immediateMS))
		}
		slices.Sort(logs)
		sd := stat.StdDev(logs, nil)
		iqr := (quantile(logs, 0.75) - quantile(logs, 0.25)) / 1.349
		h := 0.9 * math.Min(sd, max(iqr, 1e-9)) * math.Pow(float64(len(logs)), -0.2)
		med := math.Exp(quantile(logs, 0.5))
		kdes[k] = &kde{logs: logs, h: max(h, math.Log1p(tol/med))}
	}
	density := func(k int, ms float64) (float64, bool) {
		if k >= len(kdes) || kdes[k] == nil {
			return 0, false
		}
		d, x := kdes[k], math.Log(max(ms, immediateMS))
		sum := 0.0
		for _, l := range d.logs {
			z := (x - l) / d.h
			sum += math.Exp(-z * z / 2)
		}
		p := sum / (float64(len(d.logs)) * d.h * math.Sqrt(2*math.Pi))
		return (1-lateWeight)*p + lateWeight/span, true
	}
	out := serverWaitReading{reading: ScheduleUnknown}
	ev := &ServerWaitEvidence{Ratio: 1}
	llr := 0.0 // log likelihood of restarting over continuing
	for i, w := range waits {
		r := since(w)
		if directed[i] || r < 0 {
			continue
		}
		ev.Waits++
		pr, okR := density(r, w.ms)
		pc, okC := density(w.nth, w.ms)
		if !okR || !okC {
			continue
		}
		ev.Judged++
		l := math.Log(pr / pc)
		switch {
		case l > 0:
			ev.Restart++
		case l < 0:
			ev.Continue++
		}
		llr += l
	}
	if ev.Waits == 0 {
		return out
	}
	out.evidence = ev
	ev.Ratio = math.Round(100*min(math.Exp(math.Abs(llr)), maxEvidenceRatio)) / 100
	switch {
	case llr >= math.Log(kindEvidenceRatio):
		out.reading = ScheduleRestarts
	case -llr >= math.Log(kindEvidenceRatio):
		out.reading = ScheduleContinues
	}
	return out
}

// markDirected marks as directed the waits suspect(w) picks out that are
// off the schedule the other waits at their attempt index show (or, with
// below, below it by below(wait, every wait at the index)) and that
// confirm keeps of those. With among, the schedule is read from every
// wait at the index, suspects included, as the lesser of their 90th
// percentile and twice their median: no backoff waits longer than twice
// its median at one index (full jitter's ceiling), so long as the
// server's waits are fewer than half of them.
func markDirected(waits []pendingWait, directed []bool, suspect func(pendingWait) bool, among bool,
	below func(s float64, all []float64) bool, confirm func(off []int) []int) {
	var others, all [][]float64
	var suspects [][]int
	for i, w := range waits {
		for len(others) <= w.nth {
			others, all, suspects = append(others, nil), append(all, nil), append(suspects, nil)
		}
		if directed[i] {
			continue
		}
		all[w.nth] = append(all[w.nth], w.ms)
		s := suspect(w)
		if s {
			suspects[w.nth] = append(suspects[w.nth], i)
		}
		if !s || among {
			others[w.nth] = append(others[w.nth], w.ms)
		}
	}
	var off []int
	ref := -1.0 // the schedule's wait at the nearest index before
	for k := range others {
		here := -1.0
		if len(others[k]) >= minPerIndex {
			g := slices.Sorted(slices.Values(others[k]))
			here = quantile(g, 0.9)
			if among {
				here = min(here, 2*quantile(g, 0.5))
			}
		}
		limit := -1.0
		switch {
		case here >= 0:
			limit = offScheduleFactor * max(here, immediateMS)
		case ref >= 0:
			// The schedule may grow: allow it the factor twice over.
			limit = offScheduleFactor * offScheduleFactor * max(ref, immediateMS)
		}
		for _, i := range suspects[k] {
			if ms := waits[i].ms; limit >= 0 && ms >= limit || below != nil && below(ms, all[k]) {
				off = append(off, i)
			}
		}
		if here >= 0 {
			ref = here
		}
	}
	for _, i := range confirm(off) {
		directed[i] = true
	}
}

// sameSecond returns, of the off-schedule whole-second waits off, those
// that at least minAgreeingPushbacks-1 others share their whole second
// with. A busy host fires some timers seconds late (a Node event loop
// stalled 1.6s past a 364ms wait); one of them lands on a whole second by
// chance, as often as the allowance for lateness is wide against a
// second; a server's Retry-After directs every caller it refuses alike.
func sameSecond(waits []pendingWait, off []int) []int {
	per := map[float64]int{}
	for _, i := range off {
		per[math.Round(waits[i].ms/1000)]++
	}
	var kept []int
	for _, i := range off {
		if per[math.Round(waits[i].ms/1000)] >= minAgreeingPushbacks {
			kept = append(kept, i)
		}
	}
	return kept
}

// agreeing returns, of the off-schedule waits off, those that at least
// minAgreeingPushbacks-1 others agree with (within pushbackAgreeMS plus
// pushbackAgreeFraction of the shorter). It reorders off.
func agreeing(waits []pendingWait, off []int) []int {
	slices.SortFunc(off, func(a, b int) int { return cmp.Compare(waits[a].ms, waits[b].ms) })
	agree := func(a, b int) bool {
		lo, hi := min(waits[a].ms, waits[b].ms), max(waits[a].ms, waits[b].ms)
		return hi-lo <= pushbackAgreeMS+pushbackAgreeFraction*lo
	}
	var kept []int
	for j, i := range off {
		n := 1
		for l := j - 1; l >= 0 && agree(off[l], i); l-- {
			n++
		}
		for l := j + 1; l < len(off) && agree(i, off[l]); l++ {
			n++
		}
		if n >= minAgreeingPushbacks {
			kept = append(kept, i)
		}
	}
	return kept
}

// belowSchedule reports whether whole-second wait s lies below the
// schedule that the other waits at its attempt index follow: minNoJitter
// or more of them are longer (leaving out those at s's own whole second,
// which a server may have directed alike or the schedule's lower end may
// hold), and s is below their shortest by more than their range and by a
// third of it. Bounded jitter does not reach below its floor by its own
// width; full jitter's floor is near zero, so nothing falls below it.
func belowSchedule(s float64, waits []float64, noise float64) bool {
	var above []float64
	for _, x := range waits {
		if x > s && !(wholeSeconds(x, noise) && math.Round(x/1000) == math.Round(s/1000)) {
			above = append(above, x)
		}
	}
	if len(above) < minNoJitter {
		return false
	}
	lo, hi := slices.Min(above), slices.Max(above)
	return s < lo-(hi-lo) && s < lo*(1-1.0/offScheduleFactor)
}

// aboveSchedule reports whether whole-second wait s lies above the
// schedule the other waits at its attempt index follow (leaving out those
// at s's own whole second, which a server may have directed alike): none
// of them is as long, minNoJitter or more are shorter, s is above their
// longest by a third, and the schedule is unlikely to reach it: were the
// waits drawn evenly from their shortest up to a ceiling at s or past it,
// all n would fall at or below their longest with chance
// ((longest−shortest)/(s−shortest))^n, under lateAlpha. An unjittered
// schedule spreads by its timers' noise only (ky's 600ms waits within
// 2ms: a 1s wait there is far above it, though under offScheduleFactor
// times it); a jittered one by its jitter, full jitter's from near zero to
// its ceiling (ky's U[0, 600): a 1s wait is above it only where the
// others come near enough to the ceiling to show where it is).
func aboveSchedule(s float64, waits []float64, noise float64) bool {
	var below []float64
	for _, x := range waits {
		if wholeSeconds(x, noise) && math.Round(x/1000) == math.Round(s/1000) {
			continue
		}
		if x >= s {
			return false // the schedule reaches past s
		}
		below = append(below, x)
	}
	if len(below) < minNoJitter {
		return false
	}
	lo, hi := slices.Min(below), slices.Max(below)
	return s > hi*(1+1.0/offScheduleFactor) && math.Pow((hi-lo)/(s-lo), float64(len(below))) < lateAlpha
}

// spread is how much a timing varies: central, the width of the central
// 80% of xs (without its outliers), and bulk, from its 10th percentile to
// its median (the variation the faster half of them shows, which a late
// tail leaves alone); both 0 for fewer than four values.
func spread(xs []float64) (central, bulk float64) {
	if len(xs) < 4 {
		return 0, 0
	}
	slices.Sort(xs)
	return quantile(xs, 0.9) - quantile(xs, 0.1), quantile(xs, 0.5) - quantile(xs, 0.1)
}
