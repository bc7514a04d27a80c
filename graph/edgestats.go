package graph

import (
	"cmp"
	"slices"

	"github.com/retryaudit/retryaudit/ingest"
)

// edgeStats is what the calls of one edge say about its retry policy, in a
// form that merges: the map step adds calls (those of any subset of the
// traces) to an edgeStats, merge sums two of them, and fit reads the edge's
// policy from the sum. Counts and histograms add; the value lists the fits
// read (waits, network legs, abandoned attempts) are bounded samples and
// the callee's durations a dist (see MaxExactValues): both keep every value
// up to a bound; example calls are kept as a bounded best few. Nothing the fit returns depends on
// the order calls were added in or statistics merged.
type edgeStats struct {
	key                      edgeKey
	calls, attempts, missing int
	failed                   int
	// hist counts the calls that were not hedged by their attempts
	// (counting missing ones): hist[n-1] made n.
	hist []int
	// byLength is, per attempt count, how the calls that made that many
	// ended (for exhausted).
	byLength map[int]*callEnds
	// gaveUp is, per status, the fewest attempts of a call that ended
	// failing with it (for the statuses not retried).
	gaveUp  map[string]int
	retried map[string]bool
	// evidence counts the retried calls by the evidence of their retries.
	evidence                 map[string]int
	proxyRetried, appRetried int
	proxyMostTries           int
	methods                  map[string]int
	idem                     Idempotency
	hedged                   *Hedging
	// result counts the calls retried on an OK answer (its TransitMS is
	// the reduce's: resolveLateOK's).
	result               *ResultRetries
	hedgeDelays          sample[float64]
	outlived             int
	proxyShed            int // attempts the sidecar's circuit breaker refused (UO)
	holds                heldAnswers
	raHonored, raIgnored int
	waits                sample[pendingWait]
	legs                 sample[float64]
	serverDur            dist
	abandoned            sample[abandonedAttempt]
	// longestOK is the longest successful attempt, -1 when none.
	longestOK float64
	examples  exampleSet
	byFinding map[string]*exampleSet
}

// callEnds is how the calls of one attempt count ended.
type callEnds struct {
	limit     bool            // a sidecar said it ran out of retries
	retryable bool            // one ended on a retryable failure
	failed    map[string]bool // the statuses calls ended failing with
}

func newEdgeStats(k edgeKey) *edgeStats {
	return &edgeStats{key: k, byLength: map[int]*callEnds{}, gaveUp: map[string]int{}, retried: map[string]bool{},
		evidence: map[string]int{}, methods: map[string]int{}, longestOK: -1, byFinding: map[string]*exampleSet{},
		hedgeDelays: newSample(cmp.Compare[float64]), legs: newSample(cmp.Compare[float64]),
		waits: newSample(func(a, b pendingWait) int {
			return cmp.Or(cmp.Compare(a.nth, b.nth), cmp.Compare(a.ms, b.ms), cmp.Compare(a.pushback, b.pushback), cmp.Compare(a.call, b.call))
		}),
		abandoned: newSample(cmpAbandoned)}
}

func cmpAbandoned(a, b abandonedAttempt) int {
	return cmp.Or(cmp.Compare(a.ms, b.ms), cmpBool(a.named, b.named), cmpBool(a.timedOut, b.timedOut), cmpBool(a.byCaller, b.byCaller))
}

// keyOfAttempt is the sample key of the k-th attempt of a call.
func (ix *index) keyOfAttempt(a *attempt, k int) uint64 {
	sp := &ix.spans[a.span]
	return sampleKey(sp.TraceID, sp.SpanID, k)
}

// add is the map step: it reads one call of the edge into the statistics.
// After it the call is not needed any more.
func (st *edgeStats) add(ix *index, c *call) {
	as, name := ix.attemptsOf(c), ix.nameOf(c)
	n := len(as) + int(c.missing)
	st.calls++
	st.attempts += len(as)
	st.missing += int(c.missing)
	st.methods[name.method]++
	st.examples.add(ix, c)
	if c.lateOK {
		st.resultsOf().Unknown++
	}
	if c.hedged {
		if st.hedged == nil {
			st.hedged = &Hedging{}
		}
		st.hedged.Calls++
		st.hedged.MaxRequests = max(st.hedged.MaxRequests, n)
		if c.hedgeGap >= 0 {
			st.hedgeDelays.add(ix.keyOfAttempt(&as[0], 0), float64(c.hedgeGap)/1e6)
		} else {
			st.hedged.DelayUnknown++
		}
		switch {
		case WriteMethod(name.method):
			st.hedged.NonIdempotent++
			st.show(ix, FindingHedgeWrite, c)
		case !IdempotentMethod(name.method):
			st.hedged.IdempotencyUnknown++
			st.show(ix, FindingHedgeUnknown, c)
		}
		switch ix.failedWhileOut(as, c.hedgeGap) {
		case failEnded:
			st.hedged.FailedWhileOut.Ended++
		case failSentNext:
			st.hedged.FailedWhileOut.SentNext++
		case failWaited:
			st.hedged.FailedWhileOut.Waited++
		}
		if as[0].span == as[0].server && as[0].req != as[0].span {
			st.hedged.BelowInstrumentation++
			if ix.answeredByEarlier(as) {
				st.hedged.AnsweredByEarlier++
			}
		}
		// The callee served every request, the hedges that lost too: its
		// latency is theirs as well (the slow answers hedging works around).
		for k := range as {
			if as[k].server >= 0 {
				st.serverDur.add(float64(ix.spans[as[k].server].Duration()) / 1e6)
			}
		}
		return
	}
	for len(st.hist) < n {
		st.hist = append(st.hist, 0)
	}
	st.hist[n-1]++
	if n > 1 {
		st.evidence[name.evidence]++
		if c.proxy {
			st.proxyRetried++
			st.proxyMostTries = max(st.proxyMostTries, int(c.proxyMost))
		}
		if !c.proxy || c.appAttempts > 1 {
			st.appRetried++
		}
		if WriteMethod(name.method) {
			st.idem.RetriedCalls++
			if slices.ContainsFunc(as, func(a attempt) bool { return a.idemKey }) {
				st.idem.WithKey++
			} else {
				st.show(ix, FindingNoIdempotency, c)
			}
		}
	}
	st.countResultRetries(as)
	callerAttempt := ix.callerAttempt(c.from)
	for k := range as {
		a := &as[k]
		if a.outcome.failed() {
			st.failed++
		}
		if a.status == labelOverflow {
			st.proxyShed++
		}
		if a.server >= 0 {
			st.serverDur.add(float64(ix.spans[a.server].Duration()) / 1e6)
			if a.server != a.span && !a.synthetic && ix.spans[a.server].End <= ix.spans[a.span].End+overlapTolerance {
				// The network's share of an answered attempt; a callee
				// that outlived its client (abandoned) says nothing of it.
				st.legs.add(ix.keyOfAttempt(a, k), float64(ix.spans[a.span].Duration()-ix.spans[a.server].Duration())/1e6)
			}
		}
		st.holds.count(ix, a, k < len(as)-1)
		switch {
		case a.synthetic:
		case a.outcome == outcomeOK:
			st.longestOK = max(st.longestOK, float64(ix.spans[a.span].Duration())/1e6)
		case a.outcome.failed() && ix.abandoned(*a):
			st.abandoned.add(ix.keyOfAttempt(a, k), abandonedAttempt{ms: float64(ix.spans[a.span].Duration()) / 1e6, named: a.status != labelNoResponse && a.status != labelTransport,
				timedOut: timedOut(a.status),
				byCaller: !sentAfter(ix, as[k+1:], ix.spans[a.span].End) && ix.endsWithCaller(c.from, ix.spans[a.span].End)})
		}
		if callerAttempt >= 0 && ix.spans[a.span].Start > ix.spans[callerAttempt].End {
			st.outlived++
			st.show(ix, FindingOutlivedCaller, c)
		}
		if k == len(as)-1 {
			continue
		}
		st.retried[a.status.String()] = true
		next := as[k+1]
		if a.nth < 0 || next.nth != a.nth+1 {
			continue // not consecutive attempts: no wait between them is known
		}
		from, to := ix.waitOf(a, &next)
		wait := float64(to-from) / 1e6
		if a.retryAfter >= 0 {
			if wait >= 0.9*float64(a.retryAfter)-5 {
				st.raHonored++
				continue // this wait is the server's, not the backoff
			}
			st.raIgnored++
			st.show(ix, FindingRetryAfter, c)
		}
		st.waits.add(ix.keyOfAttempt(a, k), pendingWait{nth: int(a.nth), ms: max(wait, 0), pushback: pushbackOf(a.status),
			call: ix.keyOfAttempt(&as[0], 0)})
	}
	ends := st.byLength[n]
	if ends == nil {
		ends = &callEnds{failed: map[string]bool{}}
		st.byLength[n] = ends
	}
	l := ix.last(c)
	ends.limit = ends.limit || c.limit
	ends.retryable = ends.retryable || l.outcome == outcomeRetryable
	if l.outcome.failed() {
		status := l.status.String()
		ends.failed[status] = true
		if m, ok := st.gaveUp[status]; !ok || n < m {
			st.gaveUp[status] = n
		}
	}
}

// resultsOf returns st's count of retries on the result, made on first use.
func (st *edgeStats) resultsOf() *ResultRetries {
	if st.result == nil {
		st.result = &ResultRetries{Statuses: []string{}}
	}
	return st.result
}

// countResultRetries counts a call's requests sent again after an OK
// answer (as, its attempts), and the statuses of those answers.
func (st *edgeStats) countResultRetries(as []attempt) {
	n := 0
	for k := range as {
		if as[k].outcome != outcomeResult {
			continue
		}
		n++
		r := st.resultsOf()
		if s := as[k].status.String(); !slices.Contains(r.Statuses, s) {
			r.Statuses = append(r.Statuses, s)
		}
	}
	if n > 0 {
		st.result.Calls++
		st.result.Retries += n
	}
}

// mergeResults adds o's counts of retries on the result to st's.
func (st *edgeStats) mergeResults(o *ResultRetries) {
	if o == nil {
		return
	}
	r := st.resultsOf()
	r.Calls += o.Calls
	r.Retries += o.Retries
	r.Unknown += o.Unknown
	for _, s := range o.Statuses {
		if !slices.Contains(r.Statuses, s) {
			r.Statuses = append(r.Statuses, s)
		}
	}
}

// sentAfter reports whether one of the attempts later reached the callee
// at or after end: the call went on after an attempt that ended then, so
// its caller was still waiting and no deadline of its own cut that
// attempt (an aborted request sent again at once ends as fast as the
// caller's short call does, within endsWithCaller's tolerance).
func sentAfter(ix *index, later []attempt, end int64) bool {
	return slices.ContainsFunc(later, func(a attempt) bool { return ix.spans[a.span].Start+overlapTolerance >= end })
}

// show records c as an example of finding id on this edge.
func (st *edgeStats) show(ix *index, id string, c *call) {
	s := st.byFinding[id]
	if s == nil {
		s = &exampleSet{}
		st.byFinding[id] = s
	}
	s.add(ix, c)
}

// merge adds o's statistics (of the same edge, other traces) to st.
func (st *edgeStats) merge(o *edgeStats) {
	st.calls += o.calls
	st.attempts += o.attempts
	st.missing += o.missing
	st.failed += o.failed
	for len(st.hist) < len(o.hist) {
		st.hist = append(st.hist, 0)
	}
	for i, n := range o.hist {
		st.hist[i] += n
	}
	for n, oe := range o.byLength {
		e := st.byLength[n]
		if e == nil {
			e = &callEnds{failed: map[string]bool{}}
			st.byLength[n] = e
		}
		e.limit = e.limit || oe.limit
		e.retryable = e.retryable || oe.retryable
		for s := range oe.failed {
			e.failed[s] = true
		}
	}
	for s, n := range o.gaveUp {
		if m, ok := st.gaveUp[s]; !ok || n < m {
			st.gaveUp[s] = n
		}
	}
	for s := range o.retried {
		st.retried[s] = true
	}
	for ev, n := range o.evidence {
		st.evidence[ev] += n
	}
	st.proxyRetried += o.proxyRetried
	st.appRetried += o.appRetried
	st.proxyMostTries = max(st.proxyMostTries, o.proxyMostTries)
	for m, n := range o.methods {
		st.methods[m] += n
	}
	st.idem.RetriedCalls += o.idem.RetriedCalls
	st.idem.WithKey += o.idem.WithKey
	if h := o.hedged; h != nil {
		if st.hedged == nil {
			st.hedged = &Hedging{}
		}
		st.hedged.Calls += h.Calls
		st.hedged.MaxRequests = max(st.hedged.MaxRequests, h.MaxRequests)
		st.hedged.NonIdempotent += h.NonIdempotent
		st.hedged.IdempotencyUnknown += h.IdempotencyUnknown
		st.hedged.BelowInstrumentation += h.BelowInstrumentation
		st.hedged.AnsweredByEarlier += h.AnsweredByEarlier
		st.hedged.DelayUnknown += h.DelayUnknown
		st.hedged.FailedWhileOut.Ended += h.FailedWhileOut.Ended
		st.hedged.FailedWhileOut.SentNext += h.FailedWhileOut.SentNext
		st.hedged.FailedWhileOut.Waited += h.FailedWhileOut.Waited
	}
	st.mergeResults(o.result)
	st.hedgeDelays.merge(&o.hedgeDelays)
	st.outlived += o.outlived
	st.proxyShed += o.proxyShed
	st.holds.merge(o.holds)
	st.raHonored += o.raHonored
	st.raIgnored += o.raIgnored
	st.waits.merge(&o.waits)
	st.legs.merge(&o.legs)
	st.serverDur.merge(&o.serverDur)
	st.abandoned.merge(&o.abandoned)
	st.longestOK = max(st.longestOK, o.longestOK)
	st.examples.merge(&o.examples)
	for id, os := range o.byFinding {
		s := st.byFinding[id]
		if s == nil {
			s = &exampleSet{}
			st.byFinding[id] = s
		}
		s.merge(os)
	}
}

// mostAttempts is the most attempts a call that was not hedged made.
func (st *edgeStats) mostAttempts() int { return len(st.hist) }

// exhausted reports whether some call is seen giving up after maxAtt
// attempts that all failed in a way this edge retries (or, for an edge
// that never retries, failed retryably and was not tried again): then the
// maximum is the policy's, not a lower bound.
func (st *edgeStats) exhausted(maxAtt int) bool {
	e := st.byLength[maxAtt]
	switch {
	case e == nil:
		return false
	case e.limit:
		return true // the sidecar says it ran out of retries
	case maxAtt == 1:
		return e.retryable
	}
	for s := range e.failed {
		if st.retried[s] {
			return true
		}
	}
	return false
}

// retriesEvidence is how the retries were recognised: markers, a sidecar
// or the spans below the instrumentation when any retried call says so
// (the most frequent of those, ties by name), else timing.
func (st *edgeStats) retriesEvidence() string {
	best, n := "", 0
	for ev, k := range st.evidence {
		if ev != "timing" && (k > n || k == n && ev < best) {
			best, n = ev, k
		}
	}
	if best == "" && st.evidence["timing"] > 0 {
		return "timing"
	}
	return best
}

// fit is the reduce's last step: it reads the edge's policy from the
// statistics of all its calls.
func (st *edgeStats) fit() (Edge, map[string][]Example) {
	e := Edge{Caller: st.key.caller, CallerOperation: st.key.callerOp, Callee: st.key.callee, Operation: st.key.op,
		AttemptsHistogram: slices.Clone(st.hist), RetriedStatus: []string{}, NotRetriedStatus: []string{},
		Calls: st.calls, Attempts: st.attempts, MissingAttempts: st.missing,
		ProxyMostTries: st.proxyMostTries, OutlivedCaller: st.outlived, RetryAfterHonored: st.raHonored, RetryAfterIgnored: st.raIgnored}
	if e.AttemptsHistogram == nil {
		e.AttemptsHistogram = []int{}
	}
	mostAttempts := st.mostAttempts()
	e.proxyShed = st.proxyShed
	e.MaxAttempts = max(mostAttempts, 1)
	e.Retries = mostAttempts > 1
	e.Evidence = st.retriesEvidence()
	e.MaxAttemptsExact = st.exhausted(e.MaxAttempts)
	switch {
	case st.proxyRetried > 0 && st.appRetried > 0:
		e.RetriesBy = "proxy and application"
	case st.proxyRetried > 0:
		e.RetriesBy = "proxy"
	case st.appRetried > 0:
		e.RetriesBy = "application"
	}
	for s := range st.retried {
		e.RetriedStatus = append(e.RetriedStatus, s)
	}
	// A call that gave up early did not retry its last status; one that
	// gave up at the most attempts seen may have run out of them.
	for s, n := range st.gaveUp {
		if !st.retried[s] && (n < mostAttempts || mostAttempts == 1) {
			e.NotRetriedStatus = append(e.NotRetriedStatus, s)
		}
	}
	sortStatuses(e.RetriedStatus)
	sortStatuses(e.NotRetriedStatus)
	noise, bulk := spread(st.legs.values())
	if tailed(noise, bulk) {
		e.noiseTail = noiseFactor * noise
	}
	if e.Retries {
		gaps, directed, chains, after := splitServerDirected(st.waits.values(), noise)
		// Counts of values read from a sample stand for the population.
		if directed = st.waits.scale(directed); directed > 0 {
			e.RetryAfterHonored += directed
			e.RetryAfterUncaptured = directed
		}
		// Waits read between the callee's spans (retries below the
		// instrumentation) hold the round trip through the caller that
		// took the failure and sent the request again: the network's
		// share of the edge's answered attempts, client span less server
		// span. Waits read between client spans hold none.
		roundTrip := 0.0
		if legs := st.legs.values(); e.Evidence == EvidenceBelow && len(legs) > 0 {
			slices.Sort(legs)
			roundTrip = quantile(legs, 0.5)
		}
		e.Backoff = inferBackoff(gaps, chains, noise, bulk, roundTrip)
		if st.holds.waitsInSpans() {
			// The waits lie inside the failed attempts' spans: what lies
			// between them is no wait; neither kind nor jitter is known.
			e.Backoff = Backoff{Kind: BackoffUnknown, Jitter: JitterUnknown, Samples: e.Backoff.Samples, WaitsInSpans: st.holds.failedHeld}
		}
		if after != nil {
			ev := *after.evidence
			ev.Waits, ev.Judged = st.waits.scale(ev.Waits), st.waits.scale(ev.Judged)
			ev.Restart, ev.Continue = st.waits.scale(ev.Restart), st.waits.scale(ev.Continue)
			e.Backoff.AfterServerWait, e.Backoff.AfterServerWaitEvidence = after.reading, &ev
		}
	} else {
		e.Backoff = Backoff{Kind: BackoffImmediate, Jitter: JitterNone}
	}
	// The attempts in one order whatever the order they were gathered in.
	abandoned := st.abandoned.values()
	slices.SortFunc(abandoned, cmpAbandoned)
	var cut, undecided int
	e.PerTryTimeoutMS, cut, undecided = perTryTimeout(abandoned, st.longestOK, max(minNoiseMS, noiseFactor*noise))
	e.DeadlineFromCaller, e.PerTryTimeoutUnknown = st.abandoned.scale(cut), st.abandoned.scale(undecided)
	if st.hedged != nil {
		h := *st.hedged
		delays := st.hedgeDelays.values()
		slices.Sort(delays)
		h.DelayMS = round3(quantile(delays, 0.5))
		h.OnFailure = h.FailedWhileOut.onFailure()
		e.Hedging = &h
	}
	if r := st.result; r != nil {
		rr := *r
		rr.Statuses = slices.Clone(r.Statuses)
		sortStatuses(rr.Statuses)
		e.ResultRetries = &rr
	}
	if st.idem.RetriedCalls > 0 {
		idem := st.idem
		e.Idempotency = &idem
	}
	e.Method = mostCommon(st.methods)
	e.Examples = st.examples.list()
	byFinding := map[string][]Example{}
	for id, s := range st.byFinding {
		byFinding[id] = s.list()
	}
	e.CalleeP50MS, e.CalleeP95MS, e.CalleeP99MS = st.serverDur.latency()
	for name, s := range map[string]*Summary{"waits": st.waits.summary(), "network_legs": st.legs.summary(),
		"abandoned_attempts": st.abandoned.summary(), "hedge_delays": st.hedgeDelays.summary(), "callee_durations": st.serverDur.summary()} {
		summarized(&e.Summarized, name, s)
	}
	if e.Attempts > 0 {
		e.FailureRate = round3(float64(st.failed) / float64(e.Attempts))
	}
	return e, byFinding
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// exampleSet keeps the calls that best show an edge or a finding: those
// with the most attempts (retries, hedges) first, then hedged ones, then
// by trace and caller span id, then by when and in which span the call
// began; at most one per trace and maxExamples in all. Sets merge, and the
// choice depends on neither the order calls were added in nor the order
// sets were merged.
type exampleSet struct {
	best []exampleCall
}

// exampleCall is what an example needs of a call.
type exampleCall struct {
	from       spanKey // the caller span's trace and span id (idx 0)
	trace      ingest.TraceID
	attempts   int // counting missing ones
	hedged     bool
	start      int64
	firstSpan  ingest.SpanID
	attemptIDs []ingest.SpanID // nil until the call is kept
}

func (a *exampleCall) better(b *exampleCall) bool {
	if a.attempts != b.attempts {
		return a.attempts > b.attempts
	}
	if a.hedged != b.hedged {
		return a.hedged
	}
	return cmp.Or(a.from.cmpID(b.from), cmpInt64(a.start, b.start),
		slices.Compare(a.firstSpan[:], b.firstSpan[:])) < 0
}

func (s *exampleSet) add(ix *index, c *call) {
	from := &ix.spans[c.from]
	as := ix.attemptsOf(c)
	first := &ix.spans[as[0].span]
	x := exampleCall{from: keyOf(from, 0), trace: from.TraceID, attempts: len(as) + int(c.missing), hedged: c.hedged,
		start: first.Start, firstSpan: first.SpanID}
	if !s.wants(&x) {
		return
	}
	for _, a := range as {
		id := ix.spans[a.span].SpanID
		if n := len(x.attemptIDs); n == 0 || x.attemptIDs[n-1] != id { // synthetic attempts share a span
			x.attemptIDs = append(x.attemptIDs, id)
		}
	}
	s.insert(x)
}

// wants reports whether x would be kept: cheap, so that the many calls
// that would not are never copied.
func (s *exampleSet) wants(x *exampleCall) bool {
	for i := range s.best {
		if s.best[i].trace == x.trace {
			return x.better(&s.best[i])
		}
	}
	return len(s.best) < maxExamples || x.better(&s.best[len(s.best)-1])
}

// insert keeps x in order, replacing a worse call of its trace.
func (s *exampleSet) insert(x exampleCall) {
	if i := slices.IndexFunc(s.best, func(b exampleCall) bool { return b.trace == x.trace }); i >= 0 {
		if !x.better(&s.best[i]) {
			return
		}
		s.best = slices.Delete(s.best, i, i+1)
	}
	i := len(s.best)
	for i > 0 && x.better(&s.best[i-1]) {
		i--
	}
	if i >= maxExamples {
		return
	}
	s.best = slices.Insert(s.best, i, x)
	if len(s.best) > maxExamples {
		s.best = s.best[:maxExamples]
	}
}

func (s *exampleSet) merge(o *exampleSet) {
	for _, x := range o.best {
		s.insert(x)
	}
}

func (s *exampleSet) list() []Example {
	out := make([]Example, len(s.best))
	for i, x := range s.best {
		out[i] = Example{TraceID: x.trace.String()}
		for _, id := range x.attemptIDs {
			out[i].SpanIDs = append(out[i].SpanIDs, id.String())
		}
	}
	return out
}

// heldAnswers counts an edge's answered attempts (an HTTP status
// recorded, the callee's span under the client's) whose client span
// stayed open long after the callee's ended (heldAnswer): among the
// failed ones a retry followed, and among the successful ones.
type heldAnswers struct {
	failedRetried, failedHeld, okAnswered, okHeld int
}

// Held answers: a client span held its answer when it ended at least
// minHeldMS after the callee's span and that was at least half of it.
// An edge's waits lie inside its failed attempts' spans where at least
// minHeldRetries failed attempts before a retry were counted, three in
// four of them held their answer, and at most one in ten of at least
// minHeldRetries successes did (the network's legs would hold both
// alike).
const (
	minHeldMS      = 2.0
	minHeldRetries = 3
)

// count counts attempt a, retried whether a retry followed it.
func (h *heldAnswers) count(ix *index, a *attempt, retried bool) {
	if a.synthetic || a.server < 0 || a.server == a.span || ix.spans[a.span].HTTPStatus == 0 {
		return
	}
	held := heldAnswer(&ix.spans[a.span], &ix.spans[a.server])
	switch {
	case a.outcome == outcomeOK:
		h.okAnswered++
		if held {
			h.okHeld++
		}
	case a.outcome.failed() && retried:
		h.failedRetried++
		if held {
			h.failedHeld++
		}
	}
}

// heldAnswer reports whether client span c stayed open long after its
// callee's span s ended: the caller held the answer (its response body
// not closed, which otelhttp's span waits for) rather than the network
// delaying it.
func heldAnswer(c, s *ingest.Span) bool {
	hold := float64(c.End-s.End) / 1e6
	return hold >= minHeldMS && 2*hold >= float64(c.Duration())/1e6
}

func (h *heldAnswers) merge(o heldAnswers) {
	h.failedRetried += o.failedRetried
	h.failedHeld += o.failedHeld
	h.okAnswered += o.okAnswered
	h.okHeld += o.okHeld
}

// waitsInSpans reports whether the edge's failed attempts held their
// answers through the wait before the next (gojek/heimdall closes a
// failed try's response body only when its next try goes out, after its
// backoff sleep): the waits are inside the spans, and the gaps between
// them are no waits.
func (h heldAnswers) waitsInSpans() bool {
	return h.failedRetried >= minHeldRetries && 4*h.failedHeld >= 3*h.failedRetried &&
		h.okAnswered >= minHeldRetries && 10*h.okHeld <= h.okAnswered
}
