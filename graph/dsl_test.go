package graph

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"reflect"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// A small DSL for hand-built traces. Times are milliseconds from t0; every
// builder method returns the index of the span it appended, so children name
// their parent by index (-1 for a root).

const t0 = int64(1_700_000_000_000_000_000)

type builder struct {
	set    *ingest.Set
	trace  ingest.TraceID
	traces uint64
	spans  uint64
}

// opt sets an attribute of a span being built.
type opt func(*ingest.Set, *ingest.Record)

func newBuilder() *builder {
	b := &builder{set: ingest.NewSet()}
	b.newTrace()
	return b
}

// newTrace starts a new trace: spans added from now on belong to it.
func (b *builder) newTrace() {
	b.traces++
	b.trace = ingest.TraceID{}
	binary.BigEndian.PutUint64(b.trace[8:], b.traces)
}

func at(ms float64) int64 { return t0 + int64(ms*1e6) }

func (b *builder) add(parent int, kind ingest.Kind, svc, name string, start, dur float64, opts []opt) int {
	b.spans++
	sp := ingest.Record{Span: ingest.Span{TraceID: b.trace, Kind: kind, Service: b.set.Intern(svc), Name: b.set.Intern(name),
		Start: at(start), End: at(start + dur), GRPCStatus: ingest.Absent}, SpanExtra: ingest.NoExtra}
	binary.BigEndian.PutUint64(sp.SpanID[:], b.spans)
	if parent >= 0 {
		sp.ParentID = b.set.Spans[parent].SpanID
		sp.TraceID = b.set.Spans[parent].TraceID
	}
	for _, o := range opts {
		o(b.set, &sp)
	}
	b.set.Append(sp)
	return len(b.set.Spans) - 1
}

// server adds a SERVER span of svc serving op.
func (b *builder) server(parent int, svc, op string, start, dur float64, opts ...opt) int {
	return b.add(parent, ingest.KindServer, svc, op, start, dur, opts)
}

// client adds a CLIENT span from parent's service to peer, named "GET"
// unless opts say otherwise.
func (b *builder) client(parent int, peer string, start, dur float64, opts ...opt) int {
	svc := b.set.Str(b.set.Spans[parent].Service)
	opts = append([]opt{func(s *ingest.Set, sp *ingest.Record) { sp.Peer = s.Intern(peer) }}, opts...)
	return b.add(parent, ingest.KindClient, svc, "GET", start, dur, opts)
}

// call adds a CLIENT span to callee and the callee's SERVER span inside it
// (0.5ms of network each way). Options apply to the client span.
func (b *builder) call(parent int, callee, op string, start, dur float64, opts ...opt) (client, server int) {
	client = b.client(parent, callee, start, dur, opts...)
	server = b.server(client, callee, op, start+0.5, dur-1)
	return client, server
}

// end moves the end of span i.
func (b *builder) end(i int, ms float64) { b.set.Spans[i].End = at(ms) }

func (b *builder) infer() *Topology {
	tp, err := Infer(context.Background(), b.set)
	if err != nil {
		panic(err) // a background context is never cancelled
	}
	return tp
}

func httpStatus(code int) opt {
	return func(_ *ingest.Set, sp *ingest.Record) {
		sp.HTTPStatus = uint16(code)
		if code >= 500 {
			sp.Status = ingest.StatusError
		}
	}
}

func grpcCode(code int) opt {
	return func(_ *ingest.Set, sp *ingest.Record) {
		sp.GRPCStatus = int8(code)
		if code != 0 {
			sp.Status = ingest.StatusError
		}
	}
}

// failed marks the span as an error with a message and no status code: a
// transport error or a timeout.
func failed(msg string) opt {
	return func(s *ingest.Set, sp *ingest.Record) {
		sp.Status = ingest.StatusError
		sp.StatusMessage = s.Intern(msg)
	}
}

// instance names the process instance that recorded the span.
func instance(name string) opt {
	return func(s *ingest.Set, sp *ingest.Record) { s.SetInstance(&sp.Span, s.Intern(name)) }
}

func statusOK() opt { return func(_ *ingest.Set, sp *ingest.Record) { sp.Status = ingest.StatusOK } }

// target sets the request identity (URL or statement) hash.
func target(id string) opt {
	return func(_ *ingest.Set, sp *ingest.Record) {
		h := fnv.New64a()
		h.Write([]byte(id))
		sp.Target = h.Sum64()
	}
}

func name(n string) opt   { return func(s *ingest.Set, sp *ingest.Record) { sp.Name = s.Intern(n) } }
func method(m string) opt { return func(s *ingest.Set, sp *ingest.Record) { sp.Method = s.Intern(m) } }
func resend(n int) opt    { return func(_ *ingest.Set, sp *ingest.Record) { sp.ResendCount = int16(n) } }
func prevAttempts(n int) opt {
	return func(_ *ingest.Set, sp *ingest.Record) { sp.PrevAttempts = int16(n) }
}
func retryCount(n int) opt {
	return func(_ *ingest.Set, sp *ingest.Record) { sp.RetryCount = int16(n) }
}
func retryAfter(ms int) opt {
	return func(_ *ingest.Set, sp *ingest.Record) { sp.RetryAfterMS = int32(ms) }
}
func idemKey() opt {
	return func(_ *ingest.Set, sp *ingest.Record) { sp.Flags |= ingest.FlagIdempotencyKey }
}

// chain adds a retried call under parent: attempt k+1 fails with a 503
// after failMS, attempt k+2 starts waits[k] after it ended, and the last
// attempt ends with last (nothing: it fails like the others). It returns
// when the last attempt ended.
func (b *builder) chain(parent int, peer string, start float64, waits []float64, failMS float64, last ...opt) float64 {
	t := start
	for k := 0; k <= len(waits); k++ {
		opts := []opt{httpStatus(503)}
		if k == len(waits) && len(last) > 0 {
			opts = last
		}
		b.client(parent, peer, t, failMS, opts...)
		t += failMS
		if k < len(waits) {
			t += waits[k]
		}
	}
	return t
}

// --- assertions ---

// shape is the part of an Edge most cases assert exactly.
type shape struct {
	Calls, Attempts   int
	Hist              []int
	Retries           bool
	Max               int
	Exact             bool
	Evidence          string
	Retried, NotRetry []string
	Missing           int
}

func shapeOf(e Edge) shape {
	return shape{Calls: e.Calls, Attempts: e.Attempts, Hist: e.AttemptsHistogram, Retries: e.Retries, Max: e.MaxAttempts,
		Exact: e.MaxAttemptsExact, Evidence: e.Evidence, Retried: e.RetriedStatus, NotRetry: e.NotRetriedStatus, Missing: e.MissingAttempts}
}

// edge returns the one edge from caller to callee.
func edge(t *testing.T, tp *Topology, caller, callee string) Edge {
	t.Helper()
	var found []Edge
	for _, e := range tp.Edges {
		if e.Caller == caller && e.Callee == callee {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one edge %s → %s, got %d; edges: %s", caller, callee, len(found), edgeList(tp))
	}
	return found[0]
}

func edgeList(tp *Topology) string {
	var s []string
	for _, e := range tp.Edges {
		s = append(s, e.Caller+"("+e.CallerOperation+") → "+e.Callee+" "+e.Operation)
	}
	return strings.Join(s, "; ")
}

func wantShape(t *testing.T, e Edge, want shape) {
	t.Helper()
	if got := shapeOf(e); !reflect.DeepEqual(got, want) {
		t.Errorf("%s → %s:\n got %+v\nwant %+v", e.Caller, e.Callee, got, want)
	}
}

func findingIDs(tp *Topology) []string {
	ids := []string{}
	for _, f := range tp.Findings {
		ids = append(ids, f.ID)
	}
	return ids
}

func wantFindings(t *testing.T, tp *Topology, ids ...string) {
	t.Helper()
	if ids == nil {
		ids = []string{}
	}
	if got := findingIDs(tp); !reflect.DeepEqual(got, ids) {
		t.Errorf("findings: got %q, want %q\n%+v", got, ids, tp.Findings)
	}
}

func finding(t *testing.T, tp *Topology, id string) Finding {
	t.Helper()
	for _, f := range tp.Findings {
		if f.ID == id {
			return f
		}
	}
	t.Fatalf("no finding %s in %+v", id, tp.Findings)
	return Finding{}
}

func wantEq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func wantPtr(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: got null, want %v", what, want)
	} else if *got != want {
		t.Errorf("%s: got %v, want %v", what, *got, want)
	}
}

func wantNil(t *testing.T, what string, got *float64) {
	t.Helper()
	if got != nil {
		t.Errorf("%s: got %v, want null", what, *got)
	}
}
