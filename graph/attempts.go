package graph

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/retryaudit/retryaudit/ingest"
)

// outcome classifies how an attempt ended, as a retry policy sees it.
type outcome uint8

const (
	outcomeOK outcome = iota
	// outcomeRetryable: 5xx, 429, 408, gRPC UNAVAILABLE / RESOURCE_EXHAUSTED /
	// DEADLINE_EXCEEDED, a transport error or a timeout.
	outcomeRetryable
	// outcomeClientError: a 4xx other than 401/407/408/429, or a gRPC status
	// a client should not retry.
	outcomeClientError
	// outcomeChallenge: a redirect or an authentication challenge, which
	// clients answer with a new request that is not a retry.
	outcomeChallenge
	// outcomeResult: answered OK, and the caller sent the same request
	// again after reading the answer: its retry condition looked at the
	// result (a body that says "pending", a field that says not ready),
	// as go-retryablehttp's CheckRetry, failsafe-go's HandleIf or a poll
	// loop do. Not a failure of the callee; a retry of the caller's.
	outcomeResult
)

func (o outcome) failed() bool { return o == outcomeRetryable || o == outcomeClientError }

// retried reports whether a call went on from an attempt that ended so:
// one that failed, or one its caller retried on the result.
func (o outcome) retried() bool { return o.failed() || o == outcomeResult }

var grpcNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
	"OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// label is an attempt's status label ("503", "grpc UNAVAILABLE",
// "timeout", …) packed in 32 bits, so that the millions of attempts
// inference holds carry no string and classify allocates none: its kind
// in the top byte, an HTTP or gRPC code below it. The zero label is "".
type label uint32

const (
	labelNone label = iota
	labelOK
	labelTimeout
	labelError
	labelTransport
	labelNoResponse
	labelOverflow
)

const (
	labelHTTP = 1 << 24 // | the HTTP status code
	labelGRPC = 2 << 24 // | the gRPC code, as a byte
)

var fixedLabels = [...]string{"", "ok", "timeout", "error", "transport error", "no response", "overflow"}

func httpLabel(code int) label { return labelHTTP | label(uint16(code)) }
func grpcLabel(code int) label { return labelGRPC | label(uint8(int8(code))) }

// httpTexts holds the labels of the HTTP status codes below 1000, built
// once.
var httpTexts = func() []string {
	t := make([]string, 1000)
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

func (l label) String() string {
	switch l &^ (1<<24 - 1) {
	case labelHTTP:
		if c := int(l & 0xffff); c < len(httpTexts) {
			return httpTexts[c]
		} else {
			return strconv.Itoa(c)
		}
	case labelGRPC:
		c := int(int8(uint8(l)))
		if c >= 0 && c < len(grpcNames) {
			return "grpc " + grpcNames[c]
		}
		return fmt.Sprintf("grpc %d", c)
	}
	if int(l) < len(fixedLabels) {
		return fixedLabels[l]
	}
	return fmt.Sprintf("label %#x", uint32(l))
}

// classify reads an attempt's outcome and a status label ("503",
// "grpc UNAVAILABLE", "timeout", "error") from its span, falling back to
// the callee's server span when the client span carries no status.
func classify(ix *index, client, server int32) (outcome, label) {
	sp := &ix.spans[client]
	// A sidecar's response flags say what its status code (the proxy's
	// own 503 or 504) hides: whether upstream answered at all.
	switch {
	case sp.Has(ingest.FlagOverflow):
		return outcomeRetryable, labelOverflow
	case sp.Has(ingest.FlagProxyTimeout):
		return outcomeRetryable, labelTimeout
	case sp.Has(ingest.FlagConnectFailed):
		return outcomeRetryable, labelTransport
	}
	httpStatus, grpcStatus := sp.HTTPStatus, sp.GRPCStatus
	httpClient := sp.Kind == ingest.KindClient && httpMethod(ix.str(sp.Method))
	if httpStatus == 0 && grpcStatus == ingest.Absent && sp.Status != ingest.StatusError && server >= 0 && !httpClient {
		// The client span says nothing of the answer: take the server's
		// word. Not an HTTP client's: it records the status of every
		// answer it gets, so none means none reached it (below), whatever
		// the server says it sent: a slow answer the client had given up
		// on (fetch aborted by its timeout), or the status a server span
		// ends with when its client hangs up (200 in Node's http).
		httpStatus, grpcStatus = ix.spans[server].HTTPStatus, ix.spans[server].GRPCStatus
	}
	switch {
	case httpStatus != 0:
		s := int(httpStatus)
		label := httpLabel(s)
		switch {
		case s >= 500, s == 429, s == 408:
			return outcomeRetryable, label
		case s == 401, s == 407, s >= 300 && s < 400:
			return outcomeChallenge, label
		case s >= 400:
			return outcomeClientError, label
		}
		return outcomeOK, label
	case grpcStatus != ingest.Absent:
		c := int(grpcStatus)
		label := grpcLabel(c)
		if c < 0 || c >= len(grpcNames) {
			// Not a gRPC status (ingest keeps 0..16; a hand-built set may not).
			return outcomeClientError, label
		}
		switch c {
		case 0:
			return outcomeOK, label
		case 4, 8, 14:
			return outcomeRetryable, label
		}
		return outcomeClientError, label
	case sp.Status == ingest.StatusError:
		if isTimeout(ix, sp) {
			return outcomeRetryable, labelTimeout
		}
		return outcomeRetryable, labelTransport
	case httpClient:
		// An HTTP client records the status of every answer it gets: none
		// means none came (fetch, ky and undici end a timed-out request's
		// span so, with status Unset).
		return outcomeRetryable, labelNoResponse
	}
	return outcomeOK, labelOK
}

// httpMethod reports whether m is an HTTP request method (not an RPC
// method, which gRPC instrumentations put in the same field).
func httpMethod(m string) bool {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT":
		return true
	}
	return false
}

// isTimeout recognises timeouts and abandoned requests by the words
// instrumentations use for them.
func isTimeout(ix *index, sp *ingest.Span) bool {
	x := ix.set.Extra(sp)
	for _, s := range []string{ix.str(x.StatusMessage), ix.str(x.ErrorType)} {
		s = strings.ToLower(s)
		for _, w := range []string{"timeout", "deadline", "timed out", "cancel", "abort"} {
			if strings.Contains(s, w) {
				return true
			}
		}
	}
	return false
}

// attempt is one try of a logical call. Its fields are ordered so that
// it packs without padding: there are millions of them.
type attempt struct {
	span       int32 // the span standing for the attempt
	server     int32 // the callee's SERVER/CONSUMER span, -1 if not instrumented
	retryAfter int32
	// nth is the attempt's position in its call, counting attempts that
	// markers say were made but not exported; -1 when unknown.
	nth int32
	// req is the client span that sent the request: its target, peer
	// (host and port) and route say whether a later attempt sends the
	// same one again (index.request).
	req       int32
	status    label
	outcome   outcome
	transport bool // failed without an answer: a timeout, a reset, a refused connection
	idemKey   bool
	// synthetic attempts stand for tries hidden inside one span (Envoy's
	// retry.count): their times are the span's, not their own.
	synthetic bool
	// Its start and end are its span's (span): never held twice.
}

// request returns the identity of a's request (a hash of the full URL or
// statement), where it was sent (host and port) and its route. Attempts
// read from the callee's server spans under one client span
// (belowCall) know only the client's identity.
func (ix *index) request(a *attempt) (target uint64, peer, route ingest.Sym) {
	sp := &ix.spans[a.req]
	if a.span == a.server {
		return sp.Target, 0, 0
	}
	return sp.Target, sp.Peer, sp.Route
}

// call is a logical call: the attempts one caller span made for one
// request. Its fields are ordered so that it packs without padding, and
// it holds no pointers: its names are shared (callName, by id) and the
// attempts of the few calls that make more than one sit in a table on the
// index, so that at 10M spans the garbage collector has millions of calls
// to skip rather than to scan on every cycle.
type call struct {
	from int32 // the caller's span the call is made from
	// app is the application's client span of the latest attempt
	// (appAttempts > 0).
	app int32
	// appAttempts counts the application's attempts of a call whose tries
	// went through its sidecar (0 for calls not seen through one); each
	// attempt's tries are numbered from 0 (nth), as the proxy restarts its
	// schedule for every request. proxyMost is the most tries the sidecar
	// made for one of them.
	appAttempts, proxyMost int32
	missing                int32
	name                   nameID // read with index.nameOf, change with index.rename
	// more is 0 while the call has at most one attempt (in inline, when
	// held is set), else 1 + the index of all its attempts in the
	// index's table of them (index.attemptsOf).
	more   int32
	hedged bool
	// proxy: the retries were a service-mesh sidecar's (its spans, or its
	// attempt count); limit: the sidecar said it ran out of retries (URX).
	proxy, limit bool
	held         bool
	// lateOK: read below the instrumentation, the call was taken as
	// hedged only because a request reached the callee after an earlier
	// one had answered OK there (lateConcurrent), with no two requests
	// overlapping and no answer the client took while a later request
	// still ran: a hedge delayed in transit, or a retry on the result
	// (resolveLateOK decides by the edge).
	lateOK   bool
	hedgeGap int64 // delay from the first attempt to the hedge; -1 unknown
	inline   [1]attempt
}

// callName is what names a call and how its retries were seen. Calls
// share one per distinct value (index.name), so a call holds an id, not
// five strings.
type callName struct {
	callee   string
	op       string // operation as the callee names it
	method   string
	clientOp string // how the caller names it, for attempts that never reached the callee
	evidence string // "markers", "below-instrumentation" or "timing"
}

// nameID is a callName's position in the index's table of them.
type nameID int32

// name returns the id of the index's one copy of n.
func (ix *index) name(n callName) nameID {
	if len(ix.callNames) > 0 && ix.callNames[ix.lastName] == n {
		return ix.lastName
	}
	id, ok := ix.names[n]
	if !ok {
		if ix.names == nil {
			ix.names = map[callName]nameID{}
		}
		id = nameID(len(ix.callNames))
		ix.callNames = append(ix.callNames, n)
		ix.names[n] = id
	}
	ix.lastName = id
	return id
}

// nameOf returns c's names.
func (ix *index) nameOf(c *call) *callName { return &ix.callNames[c.name] }

// rename changes c's names by f.
func (ix *index) rename(c *call, f func(*callName)) {
	n := *ix.nameOf(c)
	f(&n)
	c.name = ix.name(n)
}

// attemptsOf returns c's attempts, in order. The slice is c's own: its
// elements may be changed in place, never appended to (addAttempts).
func (ix *index) attemptsOf(c *call) []attempt {
	switch {
	case c.more > 0:
		return ix.more[c.more-1]
	case c.held:
		return c.inline[:]
	}
	return nil
}

// addAttempts appends as to c's attempts.
func (ix *index) addAttempts(c *call, as ...attempt) {
	switch {
	case len(as) == 0:
	case c.more > 0:
		ix.more[c.more-1] = append(ix.more[c.more-1], as...)
	case !c.held && len(as) == 1:
		c.inline[0], c.held = as[0], true
	default: // from the second attempt on, all of them are in the table
		ix.more = append(ix.more, append(slices.Clip(ix.attemptsOf(c)), as...))
		c.more = int32(len(ix.more))
	}
}

// last returns c's latest attempt.
func (ix *index) last(c *call) *attempt {
	as := ix.attemptsOf(c)
	return &as[len(as)-1]
}

// callChunk is how many calls the index allocates at once.
const callChunk = 4096

// newCall places c in the index's arena: calls are allocated in chunks,
// and a call's first attempt lives inside it, since most calls make one.
// A million spans otherwise cost two allocations per call.
func (ix *index) newCall(c call) *call {
	if len(ix.arena) == cap(ix.arena) {
		ix.arena = make([]call, 0, callChunk)
	}
	ix.arena = append(ix.arena, c)
	return &ix.arena[len(ix.arena)-1]
}

// isAttempt reports whether a span is a client-side attempt: a CLIENT or
// PRODUCER span, or a span of no kind that names a remote peer and has no
// server child.
func isAttempt(sp *ingest.Span) bool {
	switch sp.Kind {
	case ingest.KindClient, ingest.KindProducer:
		return true
	case ingest.KindUnspecified, ingest.KindInternal:
		return sp.Peer != 0
	}
	return false
}

func isServer(sp *ingest.Span) bool {
	return sp.Kind == ingest.KindServer || sp.Kind == ingest.KindConsumer
}

// serverChildren returns the SERVER/CONSUMER children of span i in
// another service... or its own (a service calling itself).
func (ix *index) serverChildren(i int32) []int32 {
	var out []int32
	for _, c := range ix.kids(i) {
		if isServer(&ix.spans[c]) {
			out = append(out, c)
		}
	}
	return out
}

// opName names what a span serves (a server span) or calls (a client
// span): its route with the method, else its name. Names are built once
// per distinct name when the index is made.
func (ix *index) opName(i int32) string { return ix.opNames.list[ix.ops[i]] }

// clientOpName names what a client span calls, as the caller sees it.
func (ix *index) clientOpName(i int32) string { return ix.opName(i) }

// nameKey identifies an operation name by the interned strings it is made
// of, so each distinct name is built once, not once per span.
type nameKey struct{ method, route, name ingest.Sym }

// opNames numbers the distinct operation names: a span holds a 4-byte
// number rather than a 16-byte string header.
type opNames struct {
	ids  map[nameKey]uint32
	list []string
}

func (m *opNames) id(set *ingest.Set, k nameKey) uint32 {
	if id, ok := m.ids[k]; ok {
		return id
	}
	route, name, method := set.Str(k.route), set.Str(k.name), set.Str(k.method)
	s := name
	switch {
	case route == "":
	case method == "" || strings.HasPrefix(route, method+" "):
		s = route
	default:
		s = method + " " + route
	}
	id := uint32(len(m.list))
	m.ids[k] = id
	m.list = append(m.list, s)
	return id
}

func (ix *index) newAttempt(client, server int32) attempt {
	sp := &ix.spans[client]
	o, status := classify(ix, client, server)
	if server < 0 && o == outcomeRetryable && ix.unreached(client) {
		status = labelTransport // the status is the proxy's own: the callee never answered
	}
	a := attempt{span: client, server: server, outcome: o, status: status,
		retryAfter: ix.set.Extra(sp).RetryAfterMS, idemKey: sp.Has(ingest.FlagIdempotencyKey), req: client}
	a.transport = o == outcomeRetryable && (sp.HTTPStatus == 0 && sp.GRPCStatus == ingest.Absent || status == labelTransport)
	if a.retryAfter == ingest.Absent && server >= 0 {
		a.retryAfter = ix.set.Extra(&ix.spans[server]).RetryAfterMS
	}
	if !a.idemKey && server >= 0 {
		a.idemKey = ix.spans[server].Has(ingest.FlagIdempotencyKey)
	}
	return a
}

// extractCalls finds every logical call in the index.
func extractCalls(ctx context.Context, ix *index, names *naming) ([]*call, error) {
	ex := mapShards(ix, func(s sel) *extracted { return extractIn(ctx, ix, s, names) }, (*extracted).merge)
	return ex.calls, ex.err
}

// extracted is the calls of some traces, in the order of the spans that
// made them, or the error that stopped their extraction.
type extracted struct {
	calls []*call
	err   error
}

// merge adds o's calls (of other traces) to x, in span order.
func (x *extracted) merge(o *extracted) {
	x.calls = append(x.calls, o.calls...)
	slices.SortStableFunc(x.calls, func(a, b *call) int { return cmp.Compare(a.from, b.from) })
	x.err = cmp.Or(x.err, o.err)
}

// extractIn is call extraction's map step: the calls the selected spans
// made.
func extractIn(ctx context.Context, ix *index, s sel, names *naming) *extracted {
	var calls []*call
	for p := range ix.spans {
		if err := canceled(ctx, p); err != nil {
			return &extracted{err: err}
		}
		if !ix.keep[p] || ix.leaked[p] || !s.has(int32(p)) || ix.wrapper(int32(p)) {
			continue
		}
		calls = append(calls, callsUnder(ix, names, int32(p), ix.kids(int32(p)))...)
		if isRootAttempt(ix, int32(p)) {
			// A trace that starts with a client (a load generator, a
			// batch job's HTTP client): the attempt is its own caller.
			calls = append(calls, callsUnder(ix, names, int32(p), []int32{int32(p)})...)
		}
	}
	return &extracted{calls: calls}
}

// isRootAttempt reports whether span i is an attempt that starts its
// trace, other than a retry whose context was lost (markRootStreams: it
// belongs to the failed call it repeats).
func isRootAttempt(ix *index, i int32) bool {
	return ix.parent[i] < 0 && ix.spans[i].ParentID.IsZero() && isAttempt(&ix.spans[i]) && !ix.lostRoot(i)
}

// callsUnder groups the attempts among kids, made from span p, into calls.
func callsUnder(ix *index, names *naming, p int32, kids []int32) []*call {
	var out []*call
	// direct: the group's attempts are server spans sent without a
	// client span (uninstrumentedRequest), kept apart from client spans
	// that happen to share the names.
	type groupKey struct {
		callee, clientOp string
		direct           bool
	}
	type group struct {
		groupKey
		calls []*call
	}
	var groups []*group
	var byKey map[groupKey]*group // once there are too many groups to search
	groupOf := func(k groupKey) *group {
		if byKey != nil {
			if g := byKey[k]; g != nil {
				return g
			}
		} else {
			for _, x := range groups {
				if x.groupKey == k {
					return x
				}
			}
		}
		g := &group{groupKey: k}
		groups = append(groups, g)
		if byKey != nil {
			byKey[k] = g
		} else if len(groups) > 8 {
			byKey = make(map[groupKey]*group, 2*len(groups))
			for _, x := range groups {
				byKey[x.groupKey] = x
			}
		}
		return g
	}
	for _, c := range kids {
		// resend is the attempt's resend count, or its wrapper's.
		resend := int16(ingest.Absent)
		if w := ix.wrappedAttempt(c); w >= 0 && ix.spans[c].Service == ix.spans[p].Service {
			resend = ix.wrapperResend(c, w)
			c = w
		}
		sp := &ix.spans[c]
		if r := ix.set.Extra(sp).ResendCount; r != ingest.Absent {
			resend = r
		}
		if served, ok := ix.uninstrumentedRequest(p, c); ok {
			a := ix.serverAttempt(c)
			callee, op := ix.str(sp.Service), ix.opName(c)
			forwarded := ix.forwards(served, c)
			g := groupOf(groupKey{callee, op, true})
			g.calls = joinAttempt(ix, g.calls, a, resend, func() *call {
				return ix.newCall(call{from: p, proxy: forwarded,
					name: ix.name(callName{callee: callee, op: op, method: ix.str(sp.Method), clientOp: op, evidence: EvidenceBelow})})
			})
			continue
		}
		if !isAttempt(sp) || ix.leaked[c] {
			continue
		}
		if ix.set.Extra(sp).PrevAttempts != ingest.Absent && isAttempt(&ix.spans[p]) {
			continue // an attempt of p's call, counted by grpcCall under p's parent
		}
		if sp.Has(ingest.FlagProxy) && isAttempt(&ix.spans[p]) && ix.spans[p].Service == sp.Service {
			continue // the sidecar's try of p's call, counted by proxyCall under p's parent
		}
		tries := ix.sidecarTries(c)
		if len(tries) == 1 {
			if sub := ix.sidecarTries(tries[0]); len(sub) > 0 {
				// Envoy's router spans (start_child_span) under the
				// sidecar's span: one per try.
				tries = sub
			}
		}
		if len(tries) > 1 || len(tries) == 1 && ix.set.Extra(&ix.spans[tries[0]]).RetryCount > 0 {
			pc := ix.proxyCall(names, p, c, tries)
			g := groupOf(groupKey{ix.nameOf(pc).callee, ix.nameOf(pc).clientOp, false})
			g.calls = joinProxy(ix, g.calls, pc)
			continue
		}
		// grpc-go: one CLIENT span per call, one child per attempt.
		if atts := ix.markedAttemptChildren(c); len(atts) > 0 {
			out = append(out, ix.grpcCall(names, p, c, atts))
			continue
		}
		servers := ix.serverChildren(c)
		if len(tries) == 1 && len(servers) == 0 {
			servers = ix.serverChildren(tries[0]) // one try through the sidecar: the application's attempt
		}
		if len(servers) > 1 && sameOperation(ix, servers) || ix.set.Extra(sp).RetryCount > 0 {
			bc := ix.belowCall(names, p, c, servers)
			if len(servers) == 0 {
				out = append(out, bc) // attempts counted by a retry counter: no times to join by
				continue
			}
			g := groupOf(groupKey{ix.nameOf(bc).callee, ix.clientOpName(c), false})
			g.calls = joinBelow(ix, g.calls, bc)
			continue
		}
		server := int32(-1)
		if len(servers) == 1 {
			server = servers[0]
		}
		a := ix.newAttempt(c, server)
		if len(tries) == 1 {
			ix.proxyOutcome(&a, tries[0])
		}
		callee, op := names.resolve(ix, c, server)
		g := groupOf(groupKey{callee, ix.clientOpName(c), false})
		g.calls = joinAttempt(ix, g.calls, a, resend, func() *call {
			return ix.newCall(call{from: p, proxy: ix.forwardsClient(p, c),
				name: ix.name(callName{callee: callee, op: op, method: ix.str(sp.Method), clientOp: ix.clientOpName(c), evidence: "timing"})})
		})
		if last := g.calls[len(g.calls)-1]; ix.nameOf(last).op == "" || (server >= 0 && ix.nameOf(last).op != op) {
			if server >= 0 {
				ix.rename(last, func(n *callName) { n.op = op })
			}
		}
	}
	for _, g := range groups {
		for _, cl := range g.calls {
			// A proxy's own tries (it forwards the request it serves):
			// every attempt of the call is one. A sidecar's call
			// (proxyCall) has counted its tries already.
			if cl.proxy && (g.direct || cl.proxyMost == 0) {
				cl.proxyMost = int32(len(ix.attemptsOf(cl))) + cl.missing
			}
		}
		out = append(out, g.calls...)
	}
	return out
}

// uninstrumentedRequest reports whether span c, a child of span p, is a
// request p's service sent with no client span of its own: a SERVER span
// of another service under a span of the caller that is neither an attempt
// nor inside one (a reverse proxy or gateway that traces only what it
// serves, and passes its SERVER span's context on to its upstreams; not
// grpc-go's per-attempt spans under its CLIENT span). Several such spans
// of one service and operation under one parent are the tries of one call
// when each follows the failure of the one before, as sibling attempts are
// (joinAttempt): a proxy retrying, on the same replica or another. served
// is the SERVER span of p's service that p works for (p itself, or its
// nearest SERVER ancestor in that service), -1 if none.
func (ix *index) uninstrumentedRequest(p, c int32) (served int32, ok bool) {
	sp, parent := &ix.spans[c], &ix.spans[p]
	if sp.Kind != ingest.KindServer || ix.leaked[c] || sp.Service == parent.Service {
		return -1, false
	}
	for q := p; q >= 0 && ix.spans[q].Service == parent.Service; q = ix.parent[q] {
		if isAttempt(&ix.spans[q]) {
			return -1, false
		}
		if isServer(&ix.spans[q]) {
			return q, true
		}
	}
	return -1, true
}

// serverAttempt is the attempt server span s stands for, alone: the
// callee's span is the only record of the request (uninstrumentedRequest).
func (ix *index) serverAttempt(s int32) attempt {
	srv := &ix.spans[s]
	o, status := classify(ix, s, s)
	return attempt{span: s, server: s, outcome: o, status: status,
		retryAfter: ix.set.Extra(srv).RetryAfterMS, idemKey: srv.Has(ingest.FlagIdempotencyKey), req: s}
}

// forwards reports whether server span c, a request sent without a client
// span, is the request its caller received passed on: served, the
// caller's SERVER span it was sent for, has the same method and the same
// request target (path and query; the host is not part of a SERVER span's
// target). The caller is then a proxy layer, and its retries the proxy's.
func (ix *index) forwards(served, c int32) bool {
	if served < 0 {
		return false
	}
	srv, sp := &ix.spans[served], &ix.spans[c]
	return srv.Kind == ingest.KindServer && srv.Target != 0 && srv.Target == sp.Target && srv.Method == sp.Method
}

// forwardsClient reports whether client span c, made by span p, is the
// request p's service serves passed on: the SERVER span p works for has
// the same method and the same route (http.route, or the path with its
// ids templated) as c's URL. The caller is then a reverse proxy or
// gateway, and its retries are the proxy layer's. The SERVER span's own
// route must be a path (a gateway forwards a path; a handler named by
// its span name alone says nothing).
func (ix *index) forwardsClient(p, c int32) bool {
	s, sp := &ix.spans[ix.serverOf(p)], &ix.spans[c]
	if s.Kind != ingest.KindServer {
		return false
	}
	return sp.Kind == ingest.KindClient && s.Route != 0 && s.Route == sp.Route && s.Method != 0 && s.Method == sp.Method &&
		strings.HasPrefix(ix.str(s.Route), "/")
}

// wrappedAttempt returns the attempt span that span w wraps, or -1: w is
// neither an attempt nor a server span, and each span down from it has
// exactly one child, of w's service, until an attempt. Such a span is an
// in-process layer around one request: a proxy's per-try middleware
// spans (one "Retry" span per try, a "Service" span under it, the client
// span under that). Several of them under one span are tries of one call
// as sibling client spans would be (callsUnder looks through them).
func (ix *index) wrappedAttempt(w int32) int32 {
	svc := ix.spans[w].Service
	if sp := &ix.spans[w]; isAttempt(sp) || isServer(sp) {
		return -1
	}
	for range maxWrapperDepth {
		kids := ix.kids(w)
		if len(kids) != 1 {
			return -1
		}
		w = kids[0]
		switch sp := &ix.spans[w]; {
		case sp.Service != svc || isServer(sp):
			return -1
		case isAttempt(sp):
			return w
		}
	}
	return -1
}

// maxWrapperDepth bounds how many in-process spans wrappedAttempt looks
// through.
const maxWrapperDepth = 4

// wrapper reports whether span w is a wrapper (wrappedAttempt) whose
// parent, of its service, counts its attempt: w makes no calls of its own.
func (ix *index) wrapper(w int32) bool {
	p := ix.parent[w]
	return p >= 0 && ix.spans[p].Service == ix.spans[w].Service && ix.wrappedAttempt(w) >= 0
}

// wrapperResend is the resend count (http.request.resend_count) a span
// from w down to its attempt a carries, the nearest to a first; Absent
// where none does.
func (ix *index) wrapperResend(w, a int32) int16 {
	for q := ix.parent[a]; q >= 0; q = ix.parent[q] {
		if r := ix.set.Extra(&ix.spans[q]).ResendCount; r != ingest.Absent {
			return r
		}
		if q == w {
			break
		}
	}
	return ingest.Absent
}

// joinAttempt adds attempt a to the calls of its group: it continues the
// latest call when markers say so (resend, the attempt's resend count or
// Absent), or when it starts after that call's last attempt failed; it
// hedges that call when it overlaps an attempt for the same request;
// otherwise it starts a new call.
func joinAttempt(ix *index, calls []*call, a attempt, resend int16, newCall func() *call) []*call {
	// start begins a new call with a; a resend count says how many
	// attempts before it were not exported.
	start := func() []*call {
		c := newCall()
		if resend > 0 {
			ix.rename(c, func(n *callName) { n.evidence = "markers" })
			c.missing = int32(resend)
		}
		a.nth = c.missing
		ix.addAttempts(c, a)
		return append(calls, c)
	}
	if len(calls) == 0 {
		return start()
	}
	cur := calls[len(calls)-1]
	prev := ix.last(cur)
	prevTarget, prevPeer, prevRoute := ix.request(prev)
	target, peer, route := ix.request(&a)
	switch {
	case resend != ingest.Absent:
		if resend == 0 || prev.outcome == outcomeOK {
			// A resend never follows a success: its predecessors were
			// not exported.
			return start()
		}
		ix.rename(cur, func(n *callName) { n.evidence = "markers" })
		if gap := int32(resend) - int32(len(ix.attemptsOf(cur))) - cur.missing; gap > 0 {
			cur.missing += gap
		}
	case ix.spans[prev.span].End <= ix.spans[a.span].Start+overlapTolerance || ix.answeredFirst(prev, &a):
		// A different request identity after a failure is a loop moving
		// on to its next argument, not a retry; the same request sent to
		// another replica (another host or port, so another URL) is.
		if prev.outcome == outcomeOK && !cur.hedged && ix.sentAgainOnResult(prev, &a) {
			prev.outcome = outcomeResult
			break
		}
		if !prev.outcome.failed() || !sameRequest(prevTarget, target, prevPeer, peer, prevRoute, route) {
			return start()
		}
	case prevTarget != 0 && prevTarget == target && (prev.outcome != outcomeOK || a.outcome != outcomeOK):
		// A hedge is abandoned once one attempt answers: two overlapping
		// successes are parallel work (a pool running one parametrised
		// statement), not a hedge.
		cur.hedged = true
		if cur.hedgeGap == 0 {
			cur.hedgeGap = ix.spans[a.span].Start - ix.spans[ix.attemptsOf(cur)[0].span].Start
		}
	default:
		return start() // parallel fan-out
	}
	a.nth = int32(len(ix.attemptsOf(cur))) + cur.missing
	if cur.appAttempts > 0 {
		// The application retried a call its sidecar had tried: this
		// attempt is one try of the proxy's, the first of its own.
		a.nth = 0
		cur.appAttempts++
		cur.app = a.span
	}
	ix.addAttempts(cur, a)
	return calls
}

// sentAgainOnResult reports whether attempt a, a client span that starts
// after attempt prev's ended with an OK answer, is prev's request sent
// again on its result: both are HTTP client spans of one parent with the
// same request (the full URL, the destination and the operation that
// served it: repeatKeyOf, what markRepeats keeps as the parent's own
// poll), and the parent sent nothing else between them. A client that
// had the answer and sent the very same request again at once, with
// nothing in between, did not like the answer: its retry condition read
// the result (a 200 whose body says "pending", a poll until ready). Two
// calls of the same request with other work between them are two calls,
// and gRPC or database requests, whose identity does not hold their
// arguments, are never read so.
func (ix *index) sentAgainOnResult(prev, a *attempt) bool {
	if prev.server == prev.span || a.server == a.span {
		return false // a server span sent without a client span: no request identity of the client's
	}
	pk, ok := ix.repeatKeyOf(prev.span)
	if !ok {
		return false
	}
	if k, ok := ix.repeatKeyOf(a.span); !ok || k != pk {
		return false
	}
	p := ix.parent[a.span]
	if p < 0 || ix.parent[prev.span] != p {
		return false
	}
	// The parent's children are in start order: look only at those that
	// started from prev's start to a's, so that a long poll costs no
	// more than its length.
	from, to := ix.spans[prev.span].Start, ix.spans[a.span].Start
	kids := ix.kids(p)
	i, _ := slices.BinarySearchFunc(kids, from, func(k int32, t int64) int { return cmp.Compare(ix.spans[k].Start, t) })
	for _, k := range kids[i:] {
		if ix.spans[k].Start > to {
			break
		}
		if k != prev.span && k != a.span && (isAttempt(&ix.spans[k]) || isServer(&ix.spans[k])) {
			return false // the parent called something else in between
		}
	}
	return true
}

// joinBelow adds bc, a call whose requests a library below the
// instrumentation sent under one client span, to the calls of its group.
// A layer above may send the same request again through that library:
// when bc's client span starts after the group's latest call ended
// failing, for the same request, bc is that call's retry; when it starts
// while that call's latest attempt still runs, for the same request, and
// one of the two did not answer OK, it is a hedge (a hedging library over
// net/http, whose Transport resends a GET on a new connection below the
// instrumentation). Either way bc's requests join that call's, in the
// order sent; otherwise bc is a call of its own.
func joinBelow(ix *index, calls []*call, bc *call) []*call {
	as := ix.attemptsOf(bc)
	if len(calls) == 0 || bc.missing > 0 || bc.proxy || bc.limit {
		return append(calls, bc) // a sidecar's tries are the proxy's (joinProxy)
	}
	cur := calls[len(calls)-1]
	if cur.appAttempts > 0 || cur.missing > 0 {
		return append(calls, bc)
	}
	prev, first := ix.last(cur), &as[0]
	prevTarget, prevPeer, prevRoute := ix.request(prev)
	target, peer, route := ix.request(first)
	sent := ix.spans[first.req].Start
	joinedAsHedge := false
	switch {
	case ix.spans[prev.span].End <= sent+overlapTolerance:
		if !prev.outcome.failed() || !sameRequest(prevTarget, target, prevPeer, peer, prevRoute, route) {
			return append(calls, bc)
		}
	case prevTarget != 0 && prevTarget == target && (prev.outcome != outcomeOK || slices.ContainsFunc(as, func(a attempt) bool { return a.outcome != outcomeOK })):
		joinedAsHedge = true
		cur.hedged = true
		if cur.hedgeGap == 0 {
			cur.hedgeGap = sent - ix.spans[ix.attemptsOf(cur)[0].req].Start
		}
	default:
		return append(calls, bc)
	}
	// The joined call is hedged only by a late request (lateOK) while
	// neither part, nor the join, shows requests that overlapped.
	cur.lateOK = (cur.lateOK || bc.lateOK) && !overlapped(cur) && !overlapped(bc) && !joinedAsHedge
	if bc.hedged {
		cur.hedged = true
		if cur.hedgeGap == 0 {
			cur.hedgeGap = bc.hedgeGap
		}
	}
	for _, a := range as {
		a.nth = int32(len(ix.attemptsOf(cur))) + cur.missing
		ix.addAttempts(cur, a)
	}
	return calls
}

// overlapped reports whether c is hedged by requests that overlapped (or
// an answer taken while a later request ran), not only by a request that
// reached the callee after an OK answer (call.lateOK).
func overlapped(c *call) bool { return c.hedged && !c.lateOK }

// waitOf is the wait between consecutive attempts prev and next of a
// call, from when prev ended to when next was sent: between the callee's
// spans where a library below the instrumentation sent both under one
// client span (nothing else shows its waits), and otherwise between the
// client's own spans, so that a request sent again through another client
// span after one whose requests were read below it (joinBelow) waits from
// when that client span ended, when its client had the error, not from
// its last request's end at the callee.
func (ix *index) waitOf(prev, next *attempt) (from, to int64) {
	if prev.req != next.req {
		return ix.spans[prev.req].End, ix.spans[next.req].Start
	}
	return ix.spans[prev.span].End, ix.spans[next.span].Start
}

// sameRequest reports whether two attempts, by their request identity
// (target), peer and route, may be one request sent again: a different
// identity after a failure is a loop moving on to its next argument, not a
// retry; the same request sent to another replica (another host or port,
// so another URL) is one.
func sameRequest(t1, t2 uint64, peer1, peer2, route1, route2 ingest.Sym) bool {
	return t1 == 0 || t2 == 0 || t1 == t2 || peer1 != peer2 && route1 != 0 && route1 == route2
}

// joinProxy adds pc, the tries the sidecar made for one application
// attempt, to the calls of its group: when the latest call's last attempt
// failed before pc began, for the same request as the application sent
// it, pc is the application retrying that call (its tries join the
// call's, numbered from 0 again); otherwise pc is a call of its own.
func joinProxy(ix *index, calls []*call, pc *call) []*call {
	if len(calls) > 0 {
		cur := calls[len(calls)-1]
		prev, first := ix.last(cur), &ix.attemptsOf(pc)[0]
		app, prevApp := &ix.spans[pc.app], &ix.spans[prev.span]
		if cur.appAttempts > 0 {
			prevApp = &ix.spans[cur.app]
		}
		if !cur.hedged && prev.outcome.failed() && ix.spans[prev.span].End <= ix.spans[first.span].Start+overlapTolerance &&
			sameRequest(prevApp.Target, app.Target, prevApp.Peer, app.Peer, prevApp.Route, app.Route) {
			ix.addAttempts(cur, ix.attemptsOf(pc)...)
			cur.missing += pc.missing
			cur.appAttempts = max(cur.appAttempts, 1) + 1
			cur.proxy = cur.proxy || pc.proxy
			cur.limit = pc.limit // the proxy ran out on the application's last attempt
			cur.proxyMost = max(cur.proxyMost, pc.proxyMost)
			cur.app = pc.app
			ix.rename(cur, func(n *callName) { n.evidence = "proxy" })
			return calls
		}
	}
	return append(calls, pc)
}

// answeredFirst reports whether attempt a was sent on prev's failed
// answer though prev's client span ends after a's begins: a library that
// retries at once from inside the failed response's handler (superagent)
// sends the next request before the instrumentation's own handler ends
// the span of the one that failed. It takes both sides to say so: the
// client spans overlap by no more than immediateMS (a handler's run, not
// a second request outstanding), and the callee's own spans, recorded by
// one process on one clock, show prev answered before a arrived, to
// within immediateMS (a Node server ends its span when the answer is
// flushed, which its event loop may run after reading the next request:
// 0.15ms after, in a capture). A hedge is sent on a timer while its
// predecessor still runs, so the callee sees it arrive while it still
// serves that one; one sent within a millisecond of a failed answer is
// told from a retry by nothing in the spans. Attempts read from the
// callee's spans themselves (below the instrumentation) have no client
// span of their own to overlap.
func (ix *index) answeredFirst(prev, a *attempt) bool {
	if !prev.outcome.failed() || prev.server < 0 || a.server < 0 || prev.server == prev.span || a.server == a.span {
		return false
	}
	const slack = int64(immediateMS * 1e6) // ns
	ps, as := &ix.spans[prev.server], &ix.spans[a.server]
	return ps.Service == as.Service && ps.Origin == as.Origin &&
		ix.spans[prev.span].End <= ix.spans[a.span].Start+slack && ps.End <= as.Start+slack
}

// overlapTolerance absorbs the clock granularity of exporters that round
// times (Jaeger's microseconds): an attempt may appear to start a hair
// before its predecessor ended.
const overlapTolerance = 50_000 // ns

// markedAttemptChildren returns the children of a CLIENT span that are
// grpc-go Attempt spans (they carry previous-rpc-attempts).
func (ix *index) markedAttemptChildren(c int32) []int32 {
	var out []int32
	for _, k := range ix.kids(c) {
		if ix.set.Extra(&ix.spans[k]).PrevAttempts != ingest.Absent {
			out = append(out, k)
		}
	}
	return out
}

// firstServer returns span k's first SERVER/CONSUMER child, or -1.
func (ix *index) firstServer(k int32) int32 {
	if s := ix.serverChildren(k); len(s) > 0 {
		return s[0]
	}
	return -1
}

// nameBy names cl from client span c of one of its attempts, whose server
// span is server (-1 if none): by the first attempt, then by the first
// that reached the callee, whose server spans name it best (later ones
// that reach it refine the operation). named says whether a server span
// named it already; nameBy returns it updated.
func (cl *call) nameBy(ix *index, names *naming, first bool, c, server int32, named bool) bool {
	switch {
	case first || server >= 0 && !named:
		callee, op := names.resolve(ix, c, server)
		ix.rename(cl, func(n *callName) { n.callee, n.op = callee, op })
		return server >= 0
	case server >= 0:
		_, op := names.resolve(ix, c, server)
		ix.rename(cl, func(n *callName) { n.op = op })
	}
	return named
}

// grpcCall builds a call from grpc-go's per-attempt spans under CLIENT span c.
func (ix *index) grpcCall(names *naming, p, c int32, atts []int32) *call {
	cl := ix.newCall(call{from: p, name: ix.name(callName{method: ix.str(ix.spans[c].Method), clientOp: ix.clientOpName(c), evidence: "markers"})})
	slices.SortFunc(atts, func(a, b int32) int {
		return int(ix.set.Extra(&ix.spans[a]).PrevAttempts) - int(ix.set.Extra(&ix.spans[b]).PrevAttempts)
	})
	named := false
	for i, k := range atts {
		server := ix.firstServer(k)
		a := ix.newAttempt(k, server)
		a.nth = int32(ix.set.Extra(&ix.spans[k]).PrevAttempts)
		if a.outcome == outcomeOK && ix.spans[k].Status == ingest.StatusUnset && ix.spans[k].GRPCStatus == ingest.Absent {
			// Attempt spans often carry no status of their own: the call's
			// status holds for the last attempt, and earlier ones failed.
			if i < len(atts)-1 {
				a.outcome, a.status = outcomeRetryable, labelError
			} else {
				a.outcome, a.status = classify(ix, c, server)
			}
		}
		named = cl.nameBy(ix, names, i == 0, c, server, named)
		ix.addAttempts(cl, a)
	}
	if want := int(ix.set.Extra(&ix.spans[atts[len(atts)-1]]).PrevAttempts) + 1; want > len(atts) {
		cl.missing = int32(want - len(atts))
	}
	return cl
}

// sidecarTries returns the sidecar spans under client span c: the tries
// the application's service mesh made for c's request.
func (ix *index) sidecarTries(c int32) []int32 {
	var out []int32
	for _, k := range ix.kids(c) {
		if sp := &ix.spans[k]; sp.Has(ingest.FlagProxy) && isAttempt(sp) && sp.Service == ix.spans[c].Service {
			out = append(out, k)
		}
	}
	return out
}

// proxyCall builds the call of application client span c whose request
// went through its sidecar: each sidecar span under c (or under c's one
// sidecar span: Envoy's router spans) is one try, numbered by its
// retry.count when it carries one (Envoy tags each retry with its number),
// and a single sidecar span carrying an attempt count stands for that many
// tries. The retries are the proxy's, not the application's.
func (ix *index) proxyCall(names *naming, p, c int32, tries []int32) *call {
	if len(tries) == 1 && ix.set.Extra(&ix.spans[tries[0]]).RetryCount > 0 {
		cl := ix.belowCall(names, p, tries[0], ix.serverChildren(tries[0]))
		ix.rename(cl, func(n *callName) { n.clientOp = ix.clientOpName(c) })
		cl.app, cl.appAttempts, cl.proxyMost = c, 1, int32(len(ix.attemptsOf(cl)))+cl.missing
		cl.proxy = cl.proxyMost > 1
		return cl
	}
	cl := ix.newCall(call{from: p, name: ix.name(callName{method: ix.str(ix.spans[c].Method), clientOp: ix.clientOpName(c), evidence: "proxy"}),
		app: c, appAttempts: 1})
	named := false
	for i, k := range tries {
		server := ix.firstServer(k)
		a := ix.newAttempt(k, server)
		a.nth = int32(i)
		if rc := ix.set.Extra(&ix.spans[k]).RetryCount; rc != ingest.Absent && len(tries) > 1 {
			a.nth = int32(rc)
		}
		named = cl.nameBy(ix, names, i == 0, k, server, named)
		cl.limit = cl.limit || ix.spans[k].Has(ingest.FlagRetryLimit) || ix.spans[ix.parent[k]].Has(ingest.FlagRetryLimit)
		ix.addAttempts(cl, a)
	}
	slices.SortStableFunc(ix.attemptsOf(cl), func(x, y attempt) int { return int(x.nth) - int(y.nth) })
	if last := int(ix.last(cl).nth); last+1 > len(ix.attemptsOf(cl)) {
		cl.missing = int32(last + 1 - len(ix.attemptsOf(cl))) // tries Envoy numbered but did not export
	}
	cl.proxyMost = int32(len(ix.attemptsOf(cl))) + cl.missing
	cl.proxy = cl.proxyMost > 1
	return cl
}

// proxyOutcome takes the outcome of an application's attempt from its one
// sidecar try when the sidecar's response flags say more than the
// application's span does (no answer upstream, a timeout, an overflow).
func (ix *index) proxyOutcome(a *attempt, try int32) {
	if !ix.spans[try].Has(ingest.FlagConnectFailed | ingest.FlagProxyTimeout | ingest.FlagOverflow) {
		return
	}
	a.outcome, a.status = classify(ix, try, -1)
	a.transport = a.status == labelTransport
}

// belowCall builds a call whose retries happen below the instrumentation:
// several SERVER spans under one CLIENT span (a proxy or library retried), or
// Envoy's retry.count on the client span.
// sameOperation reports whether the server spans are one service serving
// one operation: retries of one request below the instrumentation. Server
// spans of different services under one client (a PRODUCER consumed by
// several subscribers) are fan-out.
func sameOperation(ix *index, servers []int32) bool {
	first := &ix.spans[servers[0]]
	for _, s := range servers[1:] {
		sp := &ix.spans[s]
		if sp.Service != first.Service || ix.opName(s) != ix.opName(servers[0]) {
			return false
		}
	}
	return true
}

// answeredByEarlier reports whether a call read below the instrumentation
// (as: the callee's spans under client span as[0].req) was answered by an
// attempt that an attempt started after it outlasted: the client took the
// first answer, and ended, while a later request still ran. Only hedging
// does that; a per-try timeout gives each attempt up before the next
// starts, so a call that succeeds ends on the latest attempt's answer, and
// one that ends otherwise is no evidence either way.
func (ix *index) answeredByEarlier(as []attempt) bool {
	cl := &ix.spans[as[0].req]
	if cl.Status == ingest.StatusError {
		return false
	}
	end := func(k int) int64 { return ix.spans[as[k].span].End }
	w := -1 // the first answer that succeeded
	for k := range as {
		if as[k].outcome == outcomeOK && (w < 0 || end(k) < end(w)) {
			w = k
		}
	}
	if w < 0 || end(w) > cl.End+overlapTolerance {
		return false
	}
	later := false
	for k := range as {
		switch {
		case k != w && end(k) > end(w) && end(k) <= cl.End:
			return false // another answer came before the call ended: w did not end it
		case k > w && end(k) > cl.End+overlapTolerance:
			later = true
		}
	}
	return later
}

// What a hedged call's client did after an attempt failed while another
// was out (index.failedWhileOut).
type failFollow uint8

const (
	failNone     failFollow = iota // no attempt failed while another was out, or the spans cannot tell
	failEnded                      // it stopped waiting for the attempts out, sending nothing more
	failSentNext                   // it sent another attempt at once
	failWaited                     // it waited for the attempts out or its hedge timer
)

// failedWhileOut reads, in a hedged call (its attempts as, gap its hedge
// delay in ns, -1 unknown), the first attempt to fail (its span's end)
// before any success while another attempt was still out (sent before the
// failure, answered after it), and what the client did next. An attempt's
// answer is its callee's span's end where the callee is instrumented (its
// own span's otherwise); the failure is read when the failed attempt's span
// ends. The client sent the next attempt at once when one went out after
// the failure, before any attempt out answered and before its hedge timer
// was due (the latest start before the failure plus gap, less a tenth of
// gap for the timer's jitter); one sent later, or none before an answer,
// means it waited, unless it had stopped waiting for every attempt out
// before their answers: below the instrumentation the call's client span
// ended before the first of them answered, above it each of their client
// spans ended before its callee's. Calls with attempts that stand for
// tries hidden in one span, or where no span tells, are failNone.
func (ix *index) failedWhileOut(as []attempt, gap int64) failFollow {
	below := as[0].span == as[0].server && as[0].req != as[0].span
	answered := func(k int) int64 {
		if as[k].server >= 0 {
			return ix.spans[as[k].server].End
		}
		return ix.spans[as[k].span].End
	}
	start := func(k int) int64 { return ix.spans[as[k].span].Start }
	firstOK := int64(math.MaxInt64)
	var failed []int
	for k := range as {
		switch a := &as[k]; {
		case a.synthetic:
			return failNone
		case a.outcome == outcomeOK:
			firstOK = min(firstOK, answered(k))
		case a.outcome.failed():
			failed = append(failed, k)
		}
	}
	slices.SortStableFunc(failed, func(i, j int) int { return cmp.Compare(ix.spans[as[i].span].End, ix.spans[as[j].span].End) })
	for _, f := range failed {
		tf := ix.spans[as[f].span].End
		if firstOK <= tf {
			return failNone // a success came first: the call ended on it
		}
		if follow := ix.afterFailure(as, f, tf, gap, below, answered, start); follow != failNone {
			return follow
		}
	}
	return failNone
}

// afterFailure is failedWhileOut for attempt f of as, failed at tf: what
// followed while another attempt was out, failNone where none was.
func (ix *index) afterFailure(as []attempt, f int, tf, gap int64, below bool, answered, start func(int) int64) failFollow {
	// last: the hedge timer restarts with every attempt sent, the failed
	// one included.
	var out []int
	firstOut, last := int64(math.MaxInt64), start(f)
	for k := range as {
		if k == f || start(k) >= tf-overlapTolerance {
			continue
		}
		last = max(last, start(k))
		if answered(k) > tf+overlapTolerance {
			out = append(out, k)
			firstOut = min(firstOut, answered(k))
		}
	}
	if len(out) == 0 {
		return failNone
	}
	next := int64(-1)
	for k := range as {
		if t := start(k); k != f && t >= tf-overlapTolerance && t < firstOut && (next < 0 || t < next) {
			next = t
		}
	}
	if next >= 0 {
		if gap <= 0 {
			return failNone // no hedge timer to tell a resend from
		}
		if next < last+gap-gap/10 {
			return failSentNext
		}
		return failWaited
	}
	if below {
		if ix.spans[as[0].req].End+overlapTolerance < firstOut {
			return failEnded
		}
		return failWaited
	}
	for _, k := range out {
		if as[k].server < 0 {
			return failNone // no answer to compare its client's end with
		}
		if ix.spans[as[k].span].End+overlapTolerance >= answered(k) {
			return failWaited
		}
	}
	return failEnded
}

// maxSynthetic bounds the attempts made up from one span's retry counter.
const maxSynthetic = 64

func (ix *index) belowCall(names *naming, p, c int32, servers []int32) *call {
	sp := &ix.spans[c]
	n := callName{method: ix.str(sp.Method), clientOp: ix.clientOpName(c), evidence: EvidenceBelow}
	cl := ix.newCall(call{from: p, proxy: sp.Has(ingest.FlagProxy), limit: sp.Has(ingest.FlagRetryLimit)})
	if len(servers) == 0 {
		n.callee, n.op = names.resolve(ix, c, -1)
		n.evidence = "markers"
		cl.name = ix.name(n)
		// retry.count is untrusted input: stand in at most maxSynthetic
		// attempts for it and count the rest as missing, so a hostile span
		// cannot make inference allocate without bound.
		retries := int(ix.set.Extra(sp).RetryCount)
		tries := min(retries+1, maxSynthetic)
		cl.missing = int32(retries + 1 - tries)
		for i := 0; i < tries; i++ {
			a := ix.newAttempt(c, -1)
			if i < tries-1 {
				a.outcome, a.status = outcomeRetryable, labelError
			}
			// Only the whole span's times are known: no wait or duration
			// of a single attempt can be read from them.
			a.nth, a.synthetic = -1, true
			ix.addAttempts(cl, a)
		}
		return cl
	}
	n.callee, n.op = names.resolve(ix, c, servers[0])
	cl.name = ix.name(n)
	if tries := int(ix.set.Extra(sp).RetryCount) + 1; tries > len(servers) {
		cl.missing = int32(tries - len(servers))
	}
	silent := ix.silentServers(c, servers)
	for i, s := range servers {
		o, status := classify(ix, s, s)
		// A request the callee sent no answer to failed in transport at
		// the client (a closed connection, an EOF): the callee ended it,
		// the client gave nothing up (no per-try timeout to read).
		dropped := silent && o == outcomeOK && ix.unanswered(s)
		if dropped {
			o, status = outcomeRetryable, labelTransport
		}
		srv := &ix.spans[s]
		nth := int32(i)
		if cl.missing > 0 {
			nth = -1 // which attempts are missing is unknown
		}
		ix.addAttempts(cl, attempt{span: s, server: s, outcome: o, status: status, transport: dropped,
			retryAfter: ix.set.Extra(srv).RetryAfterMS, idemKey: srv.Has(ingest.FlagIdempotencyKey), req: c, nth: nth})
	}
	cl.hedged, cl.hedgeGap = concurrentAttempts(ix, servers)
	as := ix.attemptsOf(cl)
	for k := range as {
		if ix.lateConcurrent(as, k) {
			// An attempt sent before the call was answered reached the
			// callee after: the call was hedged, and its arrivals do not
			// show when its attempts were sent, nor the hedge delay. Or
			// the client retried on the answer's result: unless requests
			// overlapped, or the client took an earlier answer while a
			// later request still ran, the edge decides (resolveLateOK).
			cl.lateOK = !cl.hedged && !ix.answeredByEarlier(as)
			cl.hedged, cl.hedgeGap = true, -1
			break
		}
	}
	return cl
}

// unanswered reports whether server span s, of an HTTP request, records
// no answer: no status code, and no error status.
func (ix *index) unanswered(s int32) bool {
	sp := &ix.spans[s]
	return sp.Kind == ingest.KindServer && sp.HTTPStatus == 0 && sp.GRPCStatus == ingest.Absent &&
		sp.Status != ingest.StatusError && httpMethod(ix.str(sp.Method))
}

// silentServers reports whether a server span without a status code among
// servers (the callee's spans of one request under client span c) sent
// no answer, which its client takes as a transport error: HTTP instrumentations record the status code of every
// response sent (OpenTelemetry's conventions: if and only if one was
// sent), which a sibling that carries one shows this callee's does, and
// an HTTP client span without one got no answer at all. A handler that
// aborts, or a connection closed under it, ends its span so (Go's otelhttp
// after http.ErrAbortHandler), and the client sends the request again:
// net/http's Transport resends a GET at once on a new connection, a
// hedging library sends its next request.
func (ix *index) silentServers(c int32, servers []int32) bool {
	cl := &ix.spans[c]
	if cl.Kind == ingest.KindClient && cl.HTTPStatus == 0 && httpMethod(ix.str(cl.Method)) {
		return true
	}
	return slices.ContainsFunc(servers, func(s int32) bool { return ix.spans[s].HTTPStatus != 0 })
}

// lateConcurrent reports whether attempt k of a call read below the
// instrumentation (as, the callee's spans under one client span, in the
// order they reached the callee) reached the callee after an earlier
// attempt of the call had already succeeded there. No retry library sends
// a request again after a success, so the client sent it before that
// answer came back, while another attempt ran: a concurrent attempt (a
// hedge, or the first attempt a hedge overtook) delayed in transit, which
// arrived late on a loaded host or network, not a retry after an OK
// answer. Attempts with client spans of their own show when they were
// sent and are never late in this sense.
func (ix *index) lateConcurrent(as []attempt, k int) bool {
	a := &as[k]
	if a.server < 0 || a.span != a.server || a.req == a.span {
		return false
	}
	start := ix.spans[a.span].Start
	for j := range k {
		if as[j].outcome == outcomeOK && ix.spans[as[j].span].End <= start+overlapTolerance {
			return true
		}
	}
	return false
}

// sentConcurrently reports whether attempt k of a call (as) was sent while
// an earlier attempt of the call still ran: it began before the attempt
// just before it ended (and the callee did not answer that one first:
// answeredFirst), or it reached the callee after an earlier one
// had already succeeded there (lateConcurrent). A retry waits for its
// predecessor to fail; such an attempt is a hedge.
func (ix *index) sentConcurrently(as []attempt, k int) bool {
	return k > 0 && (ix.spans[as[k].span].Start+overlapTolerance < ix.spans[as[k-1].span].End && !ix.answeredFirst(&as[k-1], &as[k]) || ix.lateConcurrent(as, k))
}

// concurrentAttempts reads hedging from the callee's spans of one request
// (the SERVER spans under one client span, in the order they started): an
// attempt that starts while an earlier one still runs is a hedge, since a
// retry waits for its predecessor to fail (grpc-js's hedgingPolicy, or any
// library below the instrumentation that sends a request again before the
// first answered). gap is the delay from the start of the attempt before
// the first hedge to the hedge: the first attempt to overlap another can
// only overlap the one just before it, and a hedge timer counts from the
// start of the latest attempt (grpc-js restarts it with every attempt;
// failsafe-go's nth hedge comes n delays after the first attempt).
func concurrentAttempts(ix *index, servers []int32) (hedged bool, gap int64) {
	for i := 1; i < len(servers); i++ {
		prev, sp := &ix.spans[servers[i-1]], &ix.spans[servers[i]]
		if sp.Start+overlapTolerance < prev.End {
			return true, sp.Start - prev.Start
		}
	}
	return false, 0
}
