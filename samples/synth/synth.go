// Package synth generates synthetic traces at benchmark sizes: a
// five-service call graph (edge → api → inventory → db, plus a cache) with
// HTTP and database attributes as the OpenTelemetry SDKs write them, some
// failed attempts retried, and a deterministic PCG stream. Real traces for
// correctness live beside it in samples/<scenario>; these exist only to
// measure speed and memory at sizes no committed file could have.
package synth

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// SpansPerRequest is the size of each generated export request, as an SDK
// batch span processor with its default batch of 512 spans would send.
const SpansPerRequest = 512

// hop is one call in the generated trace shape.
type hop struct {
	service, peer, route, method string
	parent                       int // index of the calling hop, -1 for the root
	db                           bool
}

var shape = []hop{
	{service: "edge", route: "GET /checkout/{id}", method: "GET", parent: -1},
	{service: "api", peer: "api", route: "GET /api/cart/{id}", method: "GET", parent: 0},
	{service: "inventory", peer: "inventory", route: "GET /inventory/{sku}", method: "GET", parent: 1},
	{service: "pricing", peer: "pricing", route: "GET /price/{sku}", method: "GET", parent: 1},
	{service: "inventory", peer: "postgresql", route: "SELECT stock", method: "", parent: 2, db: true},
}

// Requests returns export requests holding n spans in all, each with up to
// SpansPerRequest spans, grouped by service as SDK exporters send them.
func Requests(n int, seed uint64) []ptrace.Traces {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var out []ptrace.Traces
	var cur ptrace.Traces
	inCur := 0
	scopes := map[string]ptrace.SpanSlice{}
	start := int64(1_764_000_000_000_000_000)
	for made := 0; made < n; {
		if inCur == 0 || inCur >= SpansPerRequest {
			cur = ptrace.NewTraces()
			out = append(out, cur)
			inCur = 0
			clear(scopes)
		}
		var tid pcommon.TraceID
		binary.BigEndian.PutUint64(tid[:8], rng.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rng.Uint64())
		ids := make([]pcommon.SpanID, 0, 16)
		t := start + int64(made)*1_000_000
		for i, h := range shape {
			attempts := 1
			if i == 2 && rng.IntN(10) == 0 {
				attempts = 2 + rng.IntN(2) // a retried call
			}
			for a := 0; a < attempts && made < n; a++ {
				spans, ok := scopes[h.service]
				if !ok {
					rs := cur.ResourceSpans().AppendEmpty()
					rs.Resource().Attributes().PutStr("service.name", h.service)
					rs.Resource().Attributes().PutStr("telemetry.sdk.language", "go")
					ss := rs.ScopeSpans().AppendEmpty()
					ss.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp")
					spans = ss.Spans()
					scopes[h.service] = spans
				}
				sp := spans.AppendEmpty()
				var sid pcommon.SpanID
				binary.BigEndian.PutUint64(sid[:], rng.Uint64())
				sp.SetTraceID(tid)
				sp.SetSpanID(sid)
				if h.parent >= 0 && h.parent < len(ids) {
					sp.SetParentSpanID(ids[h.parent])
				}
				begin := t + int64(i)*200_000 + int64(a)*5_000_000
				sp.SetStartTimestamp(pcommon.Timestamp(begin))
				sp.SetEndTimestamp(pcommon.Timestamp(begin + 1_000_000 + rng.Int64N(4_000_000)))
				at := sp.Attributes()
				failed := a < attempts-1
				switch {
				case h.parent < 0:
					sp.SetName(h.route)
					sp.SetKind(ptrace.SpanKindServer)
					at.PutStr("http.request.method", h.method)
					at.PutStr("http.route", "/checkout/{id}")
					at.PutStr("url.path", fmt.Sprintf("/checkout/%d", rng.IntN(1e6)))
					at.PutInt("http.response.status_code", 200)
				case h.db:
					sp.SetName("SELECT inventory.stock")
					sp.SetKind(ptrace.SpanKindClient)
					at.PutStr("db.system", "postgresql")
					at.PutStr("db.namespace", "inventory")
					at.PutStr("db.query.text", "SELECT qty FROM stock WHERE sku = $1")
					at.PutStr("server.address", "db.internal")
					at.PutInt("server.port", 5432)
				default:
					sp.SetName(h.method)
					sp.SetKind(ptrace.SpanKindClient)
					at.PutStr("http.request.method", h.method)
					at.PutStr("url.full", fmt.Sprintf("http://%s:8080/%s/%d", h.peer, h.peer, rng.IntN(1e6)))
					at.PutStr("server.address", h.peer)
					at.PutInt("server.port", 8080)
					at.PutStr("network.protocol.version", "1.1")
					if failed {
						at.PutInt("http.response.status_code", 503)
						at.PutStr("error.type", "503")
						sp.Status().SetCode(ptrace.StatusCodeError)
					} else {
						at.PutInt("http.response.status_code", 200)
					}
					if a > 0 {
						at.PutInt("http.request.resend_count", int64(a))
					}
				}
				if a == 0 {
					ids = append(ids, sid)
				}
				made++
				inCur++
			}
		}
	}
	return out
}

// WriteProtoStream writes requests in the collector file exporter's protobuf
// layout: each message preceded by its length as 4 big-endian bytes.
func WriteProtoStream(w io.Writer, reqs []ptrace.Traces) error {
	var m ptrace.ProtoMarshaler
	var hdr [4]byte
	for _, td := range reqs {
		b, err := m.MarshalTraces(td)
		if err != nil {
			return err
		}
		binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSONLines writes requests as OTLP JSON, one request per line, as the
// collector file exporter does.
func WriteJSONLines(w io.Writer, reqs []ptrace.Traces) error {
	var m ptrace.JSONMarshaler
	for _, td := range reqs {
		b, err := m.MarshalTraces(td)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}
