package graph

// Retries on the result: a caller that sends a request again after an
// answer every status check calls a success (an HTTP 200 whose body says
// "pending", a gRPC OK with a field that says not ready), because its
// retry condition reads the result: go-retryablehttp's CheckRetry reading
// the body, failsafe-go's HandleIf, retry-go's RetryIf on a returned value,
// p-retry or axios-retry's retryCondition on response.data, a poll loop.
//
// Above the instrumentation each attempt is a client span of its own, and
// the client's span of the earlier attempt ended before the next began: the
// client had the answer, so the next request is no hedge, and the same
// request sent again at once with nothing between is a retry of it
// (index.sentAgainOnResult). Below the instrumentation (one client span
// over several of the callee's spans) only the callee's spans show the
// attempts, and a request that reached the callee after an earlier one had
// answered OK there may be a hedge sent before that answer came back and
// delayed in transit (lateConcurrent), or a retry sent after it: resolveLateOK
// tells them apart by the edge.

// ResultRetries says that an edge's caller sent requests again after
// answers that succeeded: its retry condition read the result.
type ResultRetries struct {
	// Calls counts the calls that sent a request again after an OK
	// answer, Retries the requests they sent after one.
	Calls   int `json:"calls"`
	Retries int `json:"retries"`
	// Statuses are the OK statuses retried ("200", "grpc OK"), also in
	// the edge's retried_status.
	Statuses []string `json:"statuses"`
	// Unknown counts the calls, read below the instrumentation, in which
	// a request reached the callee after an earlier one had answered OK
	// there within the edge's longest transit (TransitMS): sent before
	// that answer came back (a hedge) or after it (a retry on the
	// result), the spans cannot tell. They are counted as hedged calls.
	Unknown int `json:"unknown,omitempty"`
	// TransitMS, where calls were read below the instrumentation, is the
	// longest time a request and its answer spent outside the callee on
	// the edge (client span less the callee's, or a call's way out and
	// back under one client span): a request that reached the callee
	// more than this after an OK answer was sent after the client had
	// that answer.
	TransitMS float64 `json:"transit_ms,omitempty"`
}

// resolveLateOK decides, edge by edge, the calls read below the
// instrumentation that were taken as hedged only because a request reached
// the callee after an earlier one had answered OK there (call.lateOK). A
// hedge is sent before the first answer comes back, so it reaches the
// callee at most one round trip after that answer left it; a request that
// arrives later than the edge's longest round trip (longestTransit) after
// the OK answer was sent after the client read it: a retry on the result,
// and the call is no hedge. On an edge whose other calls overlap their
// requests (it hedges), a late request is a hedge delayed on a loaded
// host, as before. A call whose late request came within the transit is
// left hedged and counted unknown (ResultRetries.Unknown). It returns
// each edge's longest transit in ms, 0 for edges with no such call.
func resolveLateOK(ix *index, ecs []*edgeCalls) []float64 {
	bounds := make([]float64, len(ecs))
	for i, ec := range ecs {
		hedges, late := false, false
		for _, c := range ec.calls {
			hedges, late = hedges || overlapped(c), late || c.lateOK
		}
		switch {
		case !late:
			continue
		case hedges:
			for _, c := range ec.calls {
				c.lateOK = false
			}
			continue
		}
		bound := max(longestTransit(ix, ec.calls), int64(minNoiseMS*1e6))
		bounds[i] = round3(float64(bound) / 1e6)
		for _, c := range ec.calls {
			if c.lateOK && lateGap(ix, ix.attemptsOf(c)) > bound {
				retryOnResult(ix, c)
			}
		}
	}
	return bounds
}

// longestTransit is the longest time, in ns, that one of calls' requests
// and its answer spent outside the callee: an answered attempt's client
// span less its callee's, or, for a call read below the instrumentation,
// its way out and its answer's way back (belowTransit).
func longestTransit(ix *index, calls []*call) int64 {
	var most int64
	for _, c := range calls {
		as := ix.attemptsOf(c)
		if len(as) > 0 && as[0].span == as[0].server && as[0].req != as[0].span {
			if ms, ok := ix.belowTransit(as); ok {
				most = max(most, int64(ms*1e6))
			}
			continue
		}
		for k := range as {
			a := &as[k]
			if a.server < 0 || a.server == a.span || a.synthetic {
				continue
			}
			cl, sv := &ix.spans[a.span], &ix.spans[a.server]
			if sv.End <= cl.End+overlapTolerance {
				most = max(most, cl.Duration()-sv.Duration())
			}
		}
	}
	return most
}

// lateGap is, in ns, the shortest time between an OK answer at the callee
// and a later request of the same call reaching it (as, in the order they
// arrived): how long after the answer the client sent it, plus the
// transit both ways.
func lateGap(ix *index, as []attempt) int64 {
	gap := int64(-1)
	for k := range as {
		if !ix.lateConcurrent(as, k) {
			continue
		}
		start := ix.spans[as[k].span].Start
		var answered int64
		for j := range k {
			if end := ix.spans[as[j].span].End; as[j].outcome == outcomeOK && end <= start+overlapTolerance {
				answered = max(answered, end)
			}
		}
		if g := start - answered; gap < 0 || g < gap {
			gap = g
		}
	}
	return gap
}

// retryOnResult reads call c as retried on its results: no hedge, and
// every OK answer a later request followed was retried (outcomeResult).
func retryOnResult(ix *index, c *call) {
	c.hedged, c.hedgeGap, c.lateOK = false, 0, false
	as := ix.attemptsOf(c)
	for k := range as[:len(as)-1] {
		if as[k].outcome == outcomeOK {
			as[k].outcome = outcomeResult
		}
	}
}
