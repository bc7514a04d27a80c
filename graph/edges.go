package graph

import (
	"fmt"
	"slices"
	"sort"
	"strings"
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
// operation, in a stable order.
func groupEdges(ix *index, calls []*call) []*edgeCalls {
	m := map[edgeKey]*edgeCalls{}
	for _, c := range calls {
		from := &ix.spans[c.from]
		k := edgeKey{caller: ix.str(from.Service), callerOp: ix.opName(ix.serverOf(c.from)), callee: c.callee, op: c.op}
		e := m[k]
		if e == nil {
			e = &edgeCalls{key: k}
			m[k] = e
		}
		e.calls = append(e.calls, c)
	}
	out := make([]*edgeCalls, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].key, out[j].key
		return a.caller+"\x00"+a.callee+"\x00"+a.op+"\x00"+a.callerOp < b.caller+"\x00"+b.callee+"\x00"+b.op+"\x00"+b.callerOp
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

// IdempotentMethod reports whether an HTTP method may be repeated safely
// (RFC 9110: every method but POST, PATCH and CONNECT; RPC methods, which
// carry no HTTP method, count as idempotent).
func IdempotentMethod(m string) bool {
	switch strings.ToUpper(m) {
	case "POST", "PATCH", "CONNECT":
		return false
	}
	return true
}

// inferEdge turns the calls of one edge into its inferred policy.
func inferEdge(ix *index, ec *edgeCalls) Edge {
	e := Edge{Caller: ec.key.caller, CallerOperation: ec.key.callerOp, Callee: ec.key.callee, Operation: ec.key.op,
		AttemptsHistogram: []int{}, RetriedStatus: []string{}, NotRetriedStatus: []string{}}
	mostAttempts := maxAttemptsSoFar(ec)
	evidence := ""
	var gaps [][]float64
	retried, notRetried := map[string]bool{}, map[string]bool{}
	var timeoutDur, namedTimeoutDur, okDur, serverDur []float64
	var hedgeDelays []float64
	failed := 0
	methods := map[string]int{}
	idem := Idempotency{}
	for _, c := range ec.calls {
		n := len(c.attempts) + c.missing
		e.Calls++
		e.Attempts += len(c.attempts)
		e.MissingAttempts += c.missing
		methods[c.method]++
		if c.hedged {
			if e.Hedging == nil {
				e.Hedging = &Hedging{}
			}
			e.Hedging.Calls++
			hedgeDelays = append(hedgeDelays, float64(c.hedgeGap)/1e6)
			continue
		}
		for len(e.AttemptsHistogram) < n {
			e.AttemptsHistogram = append(e.AttemptsHistogram, 0)
		}
		e.AttemptsHistogram[n-1]++
		if n > 1 && (evidence == "" || c.evidence != "timing") {
			evidence = c.evidence
		}
		if n > 1 && !IdempotentMethod(c.method) {
			idem.RetriedCalls++
			for _, a := range c.attempts {
				if a.idemKey {
					idem.WithKey++
					break
				}
			}
		}
		for k, a := range c.attempts {
			if a.outcome.failed() {
				failed++
			}
			if a.server >= 0 {
				serverDur = append(serverDur, float64(ix.spans[a.server].Duration())/1e6)
			}
			switch {
			case a.synthetic:
			case a.transport:
				timeoutDur = append(timeoutDur, float64(a.end-a.start)/1e6)
				if a.status == "timeout" {
					namedTimeoutDur = append(namedTimeoutDur, float64(a.end-a.start)/1e6)
				}
			case a.outcome == outcomeOK:
				okDur = append(okDur, float64(a.end-a.start)/1e6)
			}
			if ca := ix.callerAttempt(c.from); ca >= 0 && a.start > ix.spans[ca].End {
				e.OutlivedCaller++
			}
			if k == len(c.attempts)-1 {
				continue
			}
			retried[a.status] = true
			next := c.attempts[k+1]
			if a.nth < 0 || next.nth != a.nth+1 {
				continue // not consecutive attempts: no wait between them is known
			}
			wait := float64(next.start-a.end) / 1e6
			if a.retryAfter >= 0 {
				if wait >= 0.9*float64(a.retryAfter)-5 {
					e.RetryAfterHonored++
					continue // this wait is the server's, not the backoff
				}
				e.RetryAfterIgnored++
			}
			if c.evidence == "below-instrumentation" && c.missing == 0 && len(c.attempts) > 1 {
				// Waits between server spans include the network both ways.
				wait = max(wait, 0)
			}
			for len(gaps) <= a.nth {
				gaps = append(gaps, nil)
			}
			gaps[a.nth] = append(gaps[a.nth], max(wait, 0))
		}
		// A call that gave up early did not retry its last status; one
		// that gave up at the most attempts seen may have run out of them.
		if l := c.last(); l.outcome.failed() && (n < mostAttempts || mostAttempts == 1) {
			notRetried[l.status] = true
		}
	}
	e.MaxAttempts = max(mostAttempts, 1)
	e.Retries = mostAttempts > 1
	e.Evidence = evidence
	e.MaxAttemptsExact = exhausted(ec, e.MaxAttempts, retried)
	for s := range retried {
		e.RetriedStatus = append(e.RetriedStatus, s)
		delete(notRetried, s)
	}
	for s := range notRetried {
		e.NotRetriedStatus = append(e.NotRetriedStatus, s)
	}
	sortStatuses(e.RetriedStatus)
	sortStatuses(e.NotRetriedStatus)
	if e.Retries {
		e.Backoff = inferBackoff(gaps)
	} else {
		e.Backoff = Backoff{Kind: BackoffImmediate, Jitter: JitterNone}
	}
	if len(namedTimeoutDur) >= 2 {
		// Failures that say they timed out outweigh fast refusals and resets.
		timeoutDur = namedTimeoutDur
	}
	e.PerTryTimeoutMS = perTryTimeout(timeoutDur, okDur)
	if e.Hedging != nil {
		slices.Sort(hedgeDelays)
		e.Hedging.DelayMS = round3(quantile(hedgeDelays, 0.5))
	}
	if idem.RetriedCalls > 0 {
		e.Idempotency = &idem
	}
	e.Method = mostCommon(methods)
	slices.Sort(serverDur)
	e.CalleeP50MS, e.CalleeP95MS, e.CalleeP99MS = latency(serverDur)
	if e.Attempts > 0 {
		e.FailureRate = round3(float64(failed) / float64(e.Attempts))
	}
	return e
}

func maxAttemptsSoFar(ec *edgeCalls) int {
	m := 0
	for _, c := range ec.calls {
		if !c.hedged {
			m = max(m, len(c.attempts)+c.missing)
		}
	}
	return m
}

// exhausted reports whether some call is seen giving up after maxAtt
// attempts that all failed in a way this edge retries (or, for an edge
// that never retries, failed retryably and was not tried again): then the
// maximum is the policy's, not a lower bound.
func exhausted(ec *edgeCalls, maxAtt int, retried map[string]bool) bool {
	for _, c := range ec.calls {
		if c.hedged || len(c.attempts)+c.missing != maxAtt {
			continue
		}
		l := c.last()
		if maxAtt == 1 && l.outcome == outcomeRetryable {
			return true
		}
		if maxAtt > 1 && l.outcome.failed() && retried[l.status] {
			return true
		}
	}
	return false
}

// perTryTimeout finds the per-try timeout from attempts that failed without
// an answer: those cut off by the timeout cluster just above it, whatever
// error their client recorded ("context deadline exceeded", "request
// canceled"). A cluster needs two attempts within 10% of the median and no
// successful attempt longer than the cluster.
func perTryTimeout(timeouts, ok []float64) *float64 {
	if len(timeouts) < 2 {
		return nil
	}
	slices.Sort(timeouts)
	med := quantile(timeouts, 0.5)
	var cluster []float64
	for _, d := range timeouts {
		if d >= 0.9*med && d <= 1.1*med {
			cluster = append(cluster, d)
		}
	}
	if len(cluster) < 2 {
		return nil
	}
	for _, d := range ok {
		if d > cluster[len(cluster)-1] {
			return nil // a success outlasted the supposed timeout
		}
	}
	return ptr(round3(cluster[0]))
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
