// Package synth generates synthetic traces at benchmark sizes: a
// five-service call graph (edge → api → inventory → db, plus a cache) with
// HTTP and database attributes as the OpenTelemetry SDKs write them, some
// failed attempts retried, and a deterministic PCG stream. Real traces for
// correctness live beside it in samples/<scenario>; these exist only to
// measure speed and memory at sizes no committed file could have.
package synth

import (
	"bufio"
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

// hop is one call in the generated trace shape: a CLIENT span in the
// caller's service and, unless the callee is an uninstrumented database, a
// SERVER span in the callee's.
type hop struct {
	caller, callee, route string
	parent                int // index of the hop whose server span makes this call; -1 for the root
	db                    bool
}

var shape = []hop{
	{callee: "edge", route: "/checkout/{id}", parent: -1},
	{caller: "edge", callee: "api", route: "/api/cart/{id}", parent: 0},
	{caller: "api", callee: "inventory", route: "/inventory/{sku}", parent: 1},
	{caller: "api", callee: "pricing", route: "/price/{sku}", parent: 1},
	{caller: "inventory", callee: "postgresql", route: "SELECT inventory.stock", parent: 2, db: true},
}

// Requests returns export requests holding n spans in all, each with up to
// SpansPerRequest spans, grouped by service as SDK exporters send them.
// Every tenth inventory call is retried once or twice after a 503, with
// http.request.resend_count on the retries, as .NET and Java HTTP clients
// record them. Spans carry only the attributes the audit reads.
func Requests(n int, seed uint64) []ptrace.Traces {
	return generate(n, seed, false)
}

// HTTPRequests returns the same traces as Requests with every attribute
// the OpenTelemetry Go SDK and otelhttp (semantic conventions 1.26) write:
// server spans carry the peer's address and port, the client address, the
// user agent, the URL scheme, protocol version and body size beside the
// method, route, path and status; client spans the full URL, server address
// and port, protocol version and status; resources the SDK's and host's
// attributes. That is about 9.5 attributes and 380 bytes of OTLP protobuf
// per span, half of whose keys the audit never reads: the shape of the
// traces it must ingest fastest.
func HTTPRequests(n int, seed uint64) []ptrace.Traces {
	return generate(n, seed, true)
}

// userAgents are real client user agents, of the sizes otelhttp records.
var userAgents = []string{
	"Go-http-client/1.1",
	"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"okhttp/4.12.0",
	"python-requests/2.32.3",
}

func generate(n int, seed uint64, full bool) []ptrace.Traces {
	var out []ptrace.Traces
	_ = run(n, seed, full, 0, func(reqs []ptrace.Traces) error {
		out = append(out, reqs...)
		return nil
	})
	return out
}

// streamBatch is how many requests StreamHTTP holds before writing them.
const streamBatch = 64

// StreamHTTP writes the traces of HTTPRequests(n, seed) with write (such as
// WriteProtoStream) in batches of a few dozen requests, so that inputs of
// tens of millions of spans are generated in bounded memory. A batch ends
// with a whole trace, so requests at batch ends hold fewer spans than
// HTTPRequests' would.
func StreamHTTP(w io.Writer, n int, seed uint64, write func(io.Writer, []ptrace.Traces) error) error {
	return run(n, seed, true, streamBatch, func(reqs []ptrace.Traces) error { return write(w, reqs) })
}

// run generates n spans, handing the requests to flush as whole traces:
// in batches of at least batch requests, or all at the end when batch is 0.
func run(n int, seed uint64, full bool, batch int, flush func([]ptrace.Traces) error) error {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	g := &gen{n: n, full: full}
	start := int64(1_764_000_000_000_000_000)
	for trace := 0; g.made < n; trace++ {
		if batch > 0 && len(g.out) >= batch {
			if err := flush(g.out); err != nil {
				return err
			}
			g.out, g.inCur = nil, 0
		}
		var tid pcommon.TraceID
		binary.BigEndian.PutUint64(tid[:8], rng.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rng.Uint64())
		servers := make([]pcommon.SpanID, len(shape)) // each hop's successful server span
		t := start + int64(trace)*1_000_000           // 1,000 root requests a second
		for i, h := range shape {
			begin := t + int64(i)*200_000
			if h.parent < 0 {
				servers[i] = g.span(rng, tid, h.callee, "GET "+h.route, ptrace.SpanKindServer, pcommon.SpanID{}, begin, 5_000_000, func(at pcommon.Map) {
					at.PutStr("http.request.method", "GET")
					at.PutStr("http.route", h.route)
					at.PutStr("url.path", fmt.Sprintf("/checkout/%d", rng.IntN(1e6)))
					at.PutInt("http.response.status_code", 200)
					g.serverAttrs(rng, at, h.callee)
				})
				continue
			}
			attempts := 1
			if i == 2 && rng.IntN(10) == 0 {
				attempts = 2 + rng.IntN(2)
			}
			for a := 0; a < attempts && g.made < n; a++ {
				failed := a < attempts-1
				status := int64(200)
				if failed {
					status = 503
				}
				at0 := begin + int64(a)*5_000_000
				dur := 500_000 + rng.Int64N(2_000_000)
				name := "GET"
				if h.db {
					name = h.route
				}
				client := g.span(rng, tid, h.caller, name, ptrace.SpanKindClient, servers[h.parent], at0, dur, func(at pcommon.Map) {
					if h.db {
						at.PutStr("db.system", "postgresql")
						at.PutStr("db.namespace", "inventory")
						at.PutStr("db.query.text", "SELECT qty FROM stock WHERE sku = $1")
						at.PutStr("server.address", "db.internal")
						at.PutInt("server.port", 5432)
						return
					}
					at.PutStr("http.request.method", "GET")
					at.PutStr("url.full", fmt.Sprintf("http://%s:8080/%s/%d", h.callee, h.callee, rng.IntN(1e6)))
					at.PutStr("server.address", h.callee)
					at.PutInt("server.port", 8080)
					at.PutInt("http.response.status_code", status)
					if a > 0 {
						at.PutInt("http.request.resend_count", int64(a))
					}
					if g.full {
						at.PutStr("network.protocol.version", "1.1")
					}
				})
				if h.db || g.made >= n {
					continue
				}
				server := g.span(rng, tid, h.callee, "GET "+h.route, ptrace.SpanKindServer, client, at0+50_000, dur-100_000, func(at pcommon.Map) {
					at.PutStr("http.request.method", "GET")
					at.PutStr("http.route", h.route)
					at.PutInt("http.response.status_code", status)
					if g.full {
						at.PutStr("url.path", fmt.Sprintf("/%s/%d", h.callee, rng.IntN(1e6)))
					}
					g.serverAttrs(rng, at, h.callee)
				})
				if !failed {
					servers[i] = server
				}
			}
		}
	}
	return flush(g.out)
}

// gen appends spans to export requests of SpansPerRequest spans.
type gen struct {
	n, made, inCur int
	full           bool // every attribute otelhttp writes (HTTPRequests)
	out            []ptrace.Traces
	scopes         map[string]ptrace.SpanSlice
}

// serverAttrs adds what otelhttp records on a server span beyond what the
// audit reads, when the generator writes every attribute.
func (g *gen) serverAttrs(rng *rand.Rand, at pcommon.Map, svc string) {
	if !g.full {
		return
	}
	peer := fmt.Sprintf("10.0.%d.%d", rng.IntN(256), rng.IntN(256))
	at.PutStr("url.scheme", "http")
	at.PutStr("server.address", svc)
	at.PutInt("server.port", 8080)
	at.PutStr("network.peer.address", peer)
	at.PutInt("network.peer.port", 30000+rng.Int64N(30000))
	at.PutStr("client.address", peer)
	at.PutStr("user_agent.original", userAgents[rng.IntN(len(userAgents))])
	at.PutStr("network.protocol.version", "1.1")
	at.PutInt("http.response.body.size", 200+rng.Int64N(4000))
}

func (g *gen) span(rng *rand.Rand, tid pcommon.TraceID, svc, name string, kind ptrace.SpanKind, parent pcommon.SpanID,
	start, dur int64, attrs func(pcommon.Map)) pcommon.SpanID {
	if g.made >= g.n {
		return pcommon.SpanID{}
	}
	if g.inCur == 0 || g.inCur >= SpansPerRequest {
		g.out = append(g.out, ptrace.NewTraces())
		g.inCur = 0
		g.scopes = map[string]ptrace.SpanSlice{}
	}
	spans, ok := g.scopes[svc]
	if !ok {
		rs := g.out[len(g.out)-1].ResourceSpans().AppendEmpty()
		res := rs.Resource().Attributes()
		res.PutStr("service.name", svc)
		res.PutStr("telemetry.sdk.language", "go")
		if g.full {
			res.PutStr("service.version", "1.4.2")
			res.PutStr("telemetry.sdk.name", "opentelemetry")
			res.PutStr("telemetry.sdk.version", "1.33.0")
			res.PutStr("host.name", svc+"-7d9f8b6c5-x2k4q")
			res.PutInt("process.pid", 1)
		}
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp")
		spans = ss.Spans()
		g.scopes[svc] = spans
	}
	sp := spans.AppendEmpty()
	var sid pcommon.SpanID
	binary.BigEndian.PutUint64(sid[:], rng.Uint64())
	sp.SetTraceID(tid)
	sp.SetSpanID(sid)
	sp.SetParentSpanID(parent)
	sp.SetName(name)
	sp.SetKind(kind)
	sp.SetStartTimestamp(pcommon.Timestamp(start))
	sp.SetEndTimestamp(pcommon.Timestamp(start + dur))
	attrs(sp.Attributes())
	if code, ok := sp.Attributes().Get("http.response.status_code"); ok && code.Int() >= 500 {
		sp.Attributes().PutStr("error.type", "503")
		sp.Status().SetCode(ptrace.StatusCodeError)
	}
	g.made++
	g.inCur++
	return sid
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

// UnmarshalProtoStream is the floor ingest benchmarks compare against:
// pdata unmarshalling each message of a length-prefixed OTLP protobuf
// stream, read one by one into a reused buffer, and nothing else. It
// returns the number of spans.
func UnmarshalProtoStream(r io.Reader) (int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var u ptrace.ProtoUnmarshaler
	var hdr [4]byte
	var buf []byte
	n := 0
	for {
		if _, err := io.ReadFull(br, hdr[:]); err == io.EOF {
			return n, nil
		} else if err != nil {
			return n, err
		}
		size := int(binary.BigEndian.Uint32(hdr[:]))
		if cap(buf) < size {
			buf = make([]byte, size)
		}
		if _, err := io.ReadFull(br, buf[:size]); err != nil {
			return n, err
		}
		td, err := u.UnmarshalTraces(buf[:size])
		if err != nil {
			return n, err
		}
		n += td.SpanCount()
	}
}

// UnmarshalJSONLines is the same floor for OTLP JSON lines.
func UnmarshalJSONLines(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	var u ptrace.JSONUnmarshaler
	n := 0
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		td, err := u.UnmarshalTraces(sc.Bytes())
		if err != nil {
			return n, err
		}
		n += td.SpanCount()
	}
	return n, sc.Err()
}
