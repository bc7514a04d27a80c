package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// decodeBytes runs the public entry point on b.
func decodeBytes(t testing.TB, name string, b []byte, opts Options) (*Set, error) {
	t.Helper()
	set := NewSet()
	err := Decode(context.Background(), set, name, bytes.NewReader(b), opts)
	return set, err
}

func mustDecode(t testing.TB, name string, b []byte) *Set {
	t.Helper()
	set, err := decodeBytes(t, name, b, Options{})
	if err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return set
}

// realtrace reads a file from ../shared/realtraces, skipping when the
// shared folder is not beside the checkout.
func realtrace(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "shared", "realtraces", name))
	if os.IsNotExist(err) {
		t.Skipf("realtraces not available: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// span renders one OTLP JSON span with the given kind and attributes.
func span(kind, attrs string) string {
	return `{"traceId":"83a9efd15c1c98a977e0711cc93ee28b","spanId":"e127af99e3b3e074","parentSpanId":"909541b92cf05311",` +
		`"name":"GET","kind":` + kind + `,"startTimeUnixNano":"1706678909209712000","endTimeUnixNano":"1706678909219712000",` +
		`"attributes":[` + attrs + `],"status":{}}`
}

func request(spans ...string) string {
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},` +
		`"scopeSpans":[{"scope":{"name":"otelhttp"},"spans":[` + strings.Join(spans, ",") + `]}]}]}`
}

func str(k, v string) string { return fmt.Sprintf(`{"key":%q,"value":{"stringValue":%q}}`, k, v) }
func num(k string, v int) string {
	return fmt.Sprintf(`{"key":%q,"value":{"intValue":"%d"}}`, k, v)
}

func TestRealOTLP(t *testing.T) {
	for _, tc := range []struct {
		file     string
		format   Format
		spans    int
		services []string
	}{
		{"jaeger__otlp2jaeger-in.otlp.json", FormatOTLPJSON, 2, []string{"telemetrygen"}},
		{"jaegerui__otlp2jaeger-multi-in.otlp.jsonl", FormatOTLPJSONLines, 4, []string{"example-trace"}},
		// SOURCES.md describes this file as jsonpb with base64 ids; upstream
		// has since rewritten it as OTLP JSON, which is what the bytes hold.
		{"jaeger__example_trace.jsonpb-base64.json", FormatOTLPJSON, 5, []string{"example-service-1", "example-service-2", "example-service-3"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			set := mustDecode(t, tc.file, realtrace(t, tc.file))
			in := set.Inputs[0]
			if in.Format != tc.format || in.Count != tc.spans {
				t.Errorf("got %s with %d spans, want %s with %d", in.Format, in.Count, tc.format, tc.spans)
			}
			seen := map[string]bool{}
			for _, sp := range set.Spans {
				seen[set.Str(sp.Service)] = true
			}
			for _, s := range tc.services {
				if !seen[s] {
					t.Errorf("service %s missing; have %v", s, seen)
				}
			}
		})
	}
}

// TestOTLPDialects covers what real OTLP JSON files carry beyond the
// canonical form pdata writes.
func TestOTLPDialects(t *testing.T) {
	canonical := request(span("3", str("peer.service", "inventory")))
	for _, tc := range []struct {
		name, doc string
		format    Format
		spans     int
		kind      Kind
		status    Status
	}{
		{"canonical", canonical, FormatOTLPJSON, 1, KindClient, StatusUnset},
		{"pretty", strings.ReplaceAll(canonical, `,"`, ",\n  \""), FormatOTLPJSON, 1, KindClient, StatusUnset},
		{"enum names", strings.Replace(strings.Replace(canonical, `"kind":3`, `"kind":"SPAN_KIND_CLIENT"`, 1),
			`"status":{}`, `"status":{"code":"STATUS_CODE_ERROR","message":"boom"}`, 1), FormatOTLPJSON, 1, KindClient, StatusError},
		{"lowercase enums", strings.Replace(strings.Replace(canonical, `"kind":3`, `"kind":"client"`, 1),
			`"status":{}`, `"status":{"code":"error"}`, 1), FormatOTLPJSON, 1, KindClient, StatusError},
		{"base64 ids", strings.NewReplacer(
			`"83a9efd15c1c98a977e0711cc93ee28b"`, `"g6nv0VwcmKl34HEcyT7iiw=="`,
			`"e127af99e3b3e074"`, `"4SevmeOz4HQ="`,
			`"909541b92cf05311"`, `"kJVBuSzwUxE="`).Replace(canonical), FormatOTLPJSON, 1, KindClient, StatusUnset},
		{"numbers as numbers", strings.NewReplacer(`"1706678909209712000"`, `1706678909209712000`,
			`"1706678909219712000"`, `1706678909219712000`).Replace(canonical), FormatOTLPJSON, 1, KindClient, StatusUnset},
		{"snake_case keys", strings.NewReplacer(`resourceSpans`, `resource_spans`, `scopeSpans`, `scope_spans`,
			`traceId`, `trace_id`, `parentSpanId`, `parent_span_id`, `spanId`, `span_id`,
			`startTimeUnixNano`, `start_time_unix_nano`, `endTimeUnixNano`, `end_time_unix_nano`,
			`stringValue`, `string_value`).Replace(canonical), FormatOTLPJSON, 1, KindClient, StatusUnset},
		{"instrumentationLibrarySpans", strings.NewReplacer(`scopeSpans`, `instrumentationLibrarySpans`,
			`"scope":`, `"instrumentationLibrary":`).Replace(canonical), FormatOTLPJSON, 1, KindClient, StatusUnset},
		{"json lines", canonical + "\n" + canonical + "\n", FormatOTLPJSONLines, 2, KindClient, StatusUnset},
		{"api_v3", `{"result":` + canonical + `}`, FormatJaegerAPIv3, 1, KindClient, StatusUnset},
		{"api_v3 stream", `{"result":` + canonical + "}\n" + `{"result":` + canonical + "}\n", FormatJaegerAPIv3, 2, KindClient, StatusUnset},
		{"api_v3 pretty", "{\n  \"result\": " + canonical + "\n}\n", FormatJaegerAPIv3, 1, KindClient, StatusUnset},
		{"byte order mark", "\ufeff" + canonical, FormatOTLPJSON, 1, KindClient, StatusUnset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mustDecode(t, tc.name, []byte(tc.doc))
			if got := set.Inputs[0].Format; got != tc.format {
				t.Errorf("format %s, want %s", got, tc.format)
			}
			if len(set.Spans) != tc.spans {
				t.Fatalf("%d spans, want %d", len(set.Spans), tc.spans)
			}
			sp := set.Spans[0]
			if sp.TraceID.String() != "83a9efd15c1c98a977e0711cc93ee28b" || sp.SpanID.String() != "e127af99e3b3e074" || sp.ParentID.String() != "909541b92cf05311" {
				t.Errorf("ids %s %s %s", sp.TraceID, sp.SpanID, sp.ParentID)
			}
			if sp.Start != 1706678909209712000 || sp.Duration() != 10_000_000 {
				t.Errorf("times %d +%d", sp.Start, sp.Duration())
			}
			if sp.Kind != tc.kind || sp.Status != tc.status {
				t.Errorf("kind %s status %s, want %s %s", sp.Kind, sp.Status, tc.kind, tc.status)
			}
			if got := set.Str(sp.Service); got != "api" {
				t.Errorf("service %q", got)
			}
			if got := set.Str(sp.Peer); got != "inventory" {
				t.Errorf("peer %q", got)
			}
		})
	}
}

// TestCompressionAndProto decodes the same request as OTLP protobuf (single
// message and the file exporter's stream), and gzip- and zstd-compressed.
func TestCompressionAndProto(t *testing.T) {
	doc := []byte(request(span("3", str("peer.service", "inventory")), strings.Replace(span("2", ""), "e127af99e3b3e074", "e127af99e3b3e075", 1)))
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(doc)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	var stream []byte
	for range 3 {
		stream = binary.BigEndian.AppendUint32(stream, uint32(len(pb)))
		stream = append(stream, pb...)
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	zs := func(b []byte) []byte {
		w, _ := zstd.NewWriter(nil)
		return w.EncodeAll(b, nil)
	}
	for _, tc := range []struct {
		name        string
		b           []byte
		format      Format
		compression string
		spans       int
	}{
		{"proto", pb, FormatOTLPProto, "", 2},
		{"proto stream", stream, FormatOTLPProtoStream, "", 6},
		{"gzip json", gz(doc), FormatOTLPJSON, "gzip", 2},
		{"zstd json", zs(doc), FormatOTLPJSON, "zstd", 2},
		{"zstd proto stream", zs(stream), FormatOTLPProtoStream, "zstd", 6},
		{"gzip proto", gz(pb), FormatOTLPProto, "gzip", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mustDecode(t, tc.name, tc.b)
			in := set.Inputs[0]
			if in.Format != tc.format || in.Compression != tc.compression || in.Count != tc.spans {
				t.Errorf("got %s+%s with %d spans, want %s+%s with %d", in.Format, in.Compression, in.Count, tc.format, tc.compression, tc.spans)
			}
			if set.Spans[0].Kind != KindClient || set.Str(set.Spans[0].Peer) != "inventory" {
				t.Errorf("first span %+v", set.Spans[0])
			}
		})
	}
}

// TestAttributes checks the normalisation of every attribute ingest keeps,
// in the spellings of old and new semantic conventions.
func TestAttributes(t *testing.T) {
	type want struct {
		peer, method, route, errType string
		http                         uint16
		grpc, resend, prev, retry    int
		retryAfterMS                 int
		flags                        uint8
		requestKey                   uint64
	}
	base := want{grpc: Absent, resend: Absent, prev: Absent, retry: Absent, retryAfterMS: Absent}
	with := func(f func(*want)) want { w := base; f(&w); return w }
	for _, tc := range []struct {
		name, kind, attrs string
		want              want
	}{
		{"peer.service wins", "3", str("server.address", "10.0.0.1") + "," + str("peer.service", "inventory") + "," + str("url.full", "http://x/y"),
			with(func(w *want) { w.peer = "inventory"; w.route = "/y" })},
		{"server.address with port", "3", str("server.address", "inventory.svc") + "," + num("server.port", 8080),
			with(func(w *want) { w.peer = "inventory.svc:8080" })},
		{"db system and namespace", "3", str("db.system", "postgresql") + "," + str("db.namespace", "orders") + "," + str("net.peer.name", "db1"),
			with(func(w *want) { w.peer = "postgresql/orders" })},
		{"db.name (old)", "3", str("db.system", "mysql") + "," + str("db.name", "shop"),
			with(func(w *want) { w.peer = "mysql/shop" })},
		{"net.peer.name", "3", str("net.peer.name", "cache") + "," + num("net.peer.port", 6379),
			with(func(w *want) { w.peer = "cache:6379" })},
		{"url host and templated path", "3", str("http.url", "https://user@api.example.com:8443/orders/42/items/9f8e7d6c-1a2b-3c4d?x=1") + "," + str("http.method", "post"),
			with(func(w *want) { w.peer = "api.example.com:8443"; w.method = "POST"; w.route = "/orders/{id}/items/{id}" })},
		{"route wins over url", "2", str("http.route", "/orders/{id}") + "," + str("url.path", "/orders/7") + "," + str("http.request.method", "GET"),
			with(func(w *want) { w.method = "GET"; w.route = "/orders/{id}" })},
		{"url.template", "3", str("url.template", "/carts/{cart}") + "," + str("url.full", "http://cart/carts/77"),
			with(func(w *want) { w.peer = "cart"; w.route = "/carts/{cart}" })},
		{"http status new and old, as string", "3", num("http.response.status_code", 503),
			with(func(w *want) { w.http = 503 })},
		{"http status old", "3", str("http.status_code", "429"),
			with(func(w *want) { w.http = 429 })},
		{"grpc status int", "3", num("rpc.grpc.status_code", 14) + "," + str("rpc.service", "inv.Stock") + "," + str("rpc.method", "Get"),
			with(func(w *want) { w.grpc = 14; w.method = "Get"; w.route = "inv.Stock/Get" })},
		{"grpc status name", "3", str("rpc.response.status_code", "DEADLINE_EXCEEDED"),
			with(func(w *want) { w.grpc = 4 })},
		{"error.type", "3", str("error.type", "timeout"), with(func(w *want) { w.errType = "timeout" })},
		{"resend count", "3", num("http.request.resend_count", 2), with(func(w *want) { w.resend = 2 })},
		{"grpc-go attempt markers", "1", num("previous-rpc-attempts", 1) + `,{"key":"transparent-retry","value":{"boolValue":true}}`,
			with(func(w *want) { w.prev = 1; w.flags = FlagTransparentRetry })},
		{"envoy retry.count", "3", str("retry.count", "3"), with(func(w *want) { w.retry = 3 })},
		{"idempotency key header", "3", `{"key":"http.request.header.idempotency-key","value":{"arrayValue":{"values":[{"stringValue":"k-1"}]}}}`,
			with(func(w *want) { w.flags = FlagIdempotencyKey; w.requestKey = fnv64("idempotency-key k-1") })},
		{"x-request-id header", "3", `{"key":"http.request.header.x-request-id","value":{"arrayValue":{"values":[{"stringValue":"r-9"}]}}}`,
			with(func(w *want) { w.requestKey = fnv64("x-request-id r-9") })},
		{"x_request_id tag", "3", str("x_request_id", "r-9"), with(func(w *want) { w.requestKey = fnv64("x-request-id r-9") })},
		{"idempotency key names the request before x-request-id", "3", str("http.request.header.x-request-id", "r-9") + "," +
			str("http.request.header.idempotency-key", "k-1"),
			with(func(w *want) { w.flags = FlagIdempotencyKey; w.requestKey = fnv64("idempotency-key k-1") })},
		{"empty idempotency key", "3", str("http.request.header.idempotency-key", ""), base},
		{"retry-after seconds", "3", `{"key":"http.response.header.retry-after","value":{"arrayValue":{"values":[{"stringValue":"2"}]}}}`,
			with(func(w *want) { w.retryAfterMS = 2000 })},
		{"retry-after date", "3", str("http.response.header.retry-after", "Wed, 31 Jan 2024 05:28:32 GMT"),
			with(func(w *want) { w.retryAfterMS = 2780 })}, // span ends 05:28:29.219712
		{"grpc pushback", "3", str("rpc.grpc.response.metadata.grpc-retry-pushback-ms", "150"),
			with(func(w *want) { w.retryAfterMS = 150 })},
		{"grpc pushback: do not retry", "3", str("rpc.grpc.response.metadata.grpc-retry-pushback-ms", "-1"),
			with(func(w *want) { w.retryAfterMS = NoRetry })},
		{"server span has no peer", "2", str("server.address", "me") + "," + str("http.route", "/x"),
			with(func(w *want) { w.route = "/x" })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mustDecode(t, tc.name, []byte(request(span(tc.kind, tc.attrs))))
			sp := set.Spans[0]
			x := set.Extra(&sp)
			got := want{peer: set.Str(sp.Peer), method: set.Str(sp.Method), route: set.Str(sp.Route), errType: set.Str(x.ErrorType),
				http: sp.HTTPStatus, grpc: int(sp.GRPCStatus), resend: int(x.ResendCount), prev: int(x.PrevAttempts),
				retry: int(x.RetryCount), retryAfterMS: int(x.RetryAfterMS), flags: sp.Flags, requestKey: x.RequestKey}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestLinksAndTarget(t *testing.T) {
	s := strings.Replace(span("3", str("url.full", "http://inv/items/1")), `"status":{}`,
		`"status":{},"links":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708"}]`, 1)
	set := mustDecode(t, "links", []byte(request(s, strings.Replace(s, "e127af99e3b3e074", "e127af99e3b3e075", 1))))
	if len(set.Links) != 2 {
		t.Fatalf("%d links", len(set.Links))
	}
	l := set.SpanLinks(&set.Spans[1])
	if len(l) != 1 || l[0].TraceID.String() != "0102030405060708090a0b0c0d0e0f10" || l[0].SpanID.String() != "0102030405060708" {
		t.Errorf("links of span 2: %v", l)
	}
	if set.Spans[0].Target == 0 || set.Spans[0].Target != set.Spans[1].Target {
		t.Errorf("same URL, targets %x %x", set.Spans[0].Target, set.Spans[1].Target)
	}
}

// TestServerTarget: a SERVER span's request identity is the target it
// received, path and query, without the host, so that one request a proxy
// sends to several replicas (keeping the Host header or setting each
// replica's) is one request; a CLIENT span's is still its full URL.
func TestServerTarget(t *testing.T) {
	for _, tc := range []struct {
		name      string
		kind      string
		a, b      string
		sameWant  bool
		wantEmpty bool
	}{
		{"url.path, another host", "2", str("url.path", "/items/1") + "," + str("server.address", "r1"),
			str("url.path", "/items/1") + "," + str("server.address", "r2"), true, false},
		{"url.path, another path", "2", str("url.path", "/items/1"), str("url.path", "/items/2"), false, false},
		{"url.query counts", "2", str("url.path", "/items/1") + "," + str("url.query", "x=1"), str("url.path", "/items/1"), false, false},
		{"http.target, another http.host", "2", str("http.target", "/items/1?x=1") + "," + str("http.host", "r1:80"),
			str("http.target", "/items/1?x=1") + "," + str("http.host", "r2:80"), true, false},
		{"http.target and url.path with url.query agree", "2", str("http.target", "/items/1?x=1"),
			str("url.path", "/items/1") + "," + str("url.query", "x=1"), true, false},
		{"http.url, another host", "2", str("http.url", "http://r1:80/items/1?x=1#f"), str("http.url", "http://r2:81/items/1?x=1"), true, false},
		{"url.full and url.path with url.query agree", "2", str("url.full", "https://gw/items/1?x=1"),
			str("url.path", "/items/1") + "," + str("url.query", "x=1"), true, false},
		{"url.full without a path is /", "2", str("url.full", "http://gw"), str("url.path", "/"), true, false},
		{"a client's full URL keeps its host", "3", str("url.full", "http://r1/items/1"), str("url.full", "http://r2/items/1"), false, false},
		{"a server span with no target", "2", str("http.route", "/items/{id}"), str("http.route", "/items/{id}"), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := strings.Replace(span(tc.kind, tc.b), "e127af99e3b3e074", "e127af99e3b3e075", 1)
			set := mustDecode(t, tc.name, []byte(request(span(tc.kind, tc.a), b)))
			ta, tb := set.Spans[0].Target, set.Spans[1].Target
			if (ta == tb) != tc.sameWant || (ta == 0) != tc.wantEmpty {
				t.Errorf("targets %x and %x: want same %v, empty %v", ta, tb, tc.sameWant, tc.wantEmpty)
			}
		})
	}
}

func TestTemplatePath(t *testing.T) {
	for in, want := range map[string]string{
		"/orders/42":       "/orders/{id}",
		"/orders/42/items": "/orders/{id}/items",
		"/u/3fa85f64-5717-4562-b3fc-2c963f66afa6": "/u/{id}",
		"/v1/users":       "/v1/users",
		"/static/app.js":  "/static/app.js",
		"/img/a1b2c3d4e5": "/img/{id}",
		"/":               "/",
	} {
		if got := TemplatePath(in); got != want {
			t.Errorf("TemplatePath(%q) = %q, want %q", in, got, want)
		}
	}
}
