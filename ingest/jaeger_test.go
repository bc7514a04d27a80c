package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/jsonpb"
	model "github.com/jaegertracing/jaeger-idl/model/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// jaegerRealTrace reads a reference file from shared/realtraces beside the
// checkout, skipping the test when that folder is absent.
func jaegerRealTrace(t testing.TB, name string) []byte {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "realtraces")
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		t.Skipf("reference traces not available: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jaegerDecode runs the public entry point (sniffing included) on b.
func jaegerDecode(t testing.TB, name string, b []byte, opts Options) (*Set, error) {
	t.Helper()
	set := NewSet()
	return set, Decode(context.Background(), set, name, bytes.NewReader(b), opts)
}

// jaegerMustDecode decodes b, failing the test on error, and checks the
// detected format.
func jaegerMustDecode(t testing.TB, name string, b []byte, format Format) *Set {
	t.Helper()
	set, err := jaegerDecode(t, name, b, Options{})
	if err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	if got := set.Inputs[0].Format; got != format {
		t.Fatalf("%s detected as %s, want %s", name, got, format)
	}
	return set
}

// warningKinds lists the kinds of an input's warnings.
func warningKinds(set *Set) []string {
	var kinds []string
	for _, in := range set.Inputs {
		for _, w := range in.Warnings {
			kinds = append(kinds, w.Kind)
		}
	}
	return kinds
}

// TestJaegerRealFiles decodes the Jaeger UI files of shared/realtraces
// through Decode, sniffing included.
func TestJaegerRealFiles(t *testing.T) {
	for _, tc := range []struct {
		file  string
		spans int
		check func(t *testing.T, set *Set, views []spanView)
	}{
		{"jaeger__otlp2jaeger-out.jaegerui.json", 2, func(t *testing.T, set *Set, views []spanView) {
			for _, v := range views {
				if v.Service != "telemetrygen" || v.Kind != "server" || v.Peer != "telemetrygen-client" ||
					v.ParentID != "909541b92cf05311" || v.End-v.Start != 123_000 {
					t.Errorf("span %+v", v)
				}
			}
		}},
		{"jaegerui__otlp2jaeger-multi-out.jaegerui.json", 4, func(t *testing.T, set *Set, views []spanView) {
			roots := 0
			for _, v := range views {
				if v.Service != "example-trace" || v.Kind != "internal" {
					t.Errorf("span %+v", v)
				}
				if v.ParentID == "0000000000000000" {
					roots++
				}
			}
			if roots != 1 {
				t.Errorf("%d roots, want 1 (main)", roots)
			}
		}},
		{"jaegerui__petclinic-nplus1.jaegerui-trace.json", 17, func(t *testing.T, set *Set, views []spanView) {
			services := map[string]int{}
			hikari := 0
			for _, v := range views {
				services[v.Service]++
				if v.TraceID != "0df84e36b9e2ee3815d07f0867a5be1f" { // 31 digits, left-padded
					t.Errorf("trace id %s", v.TraceID)
				}
				if v.Name == "HikariProxyPreparedStatement.executeQuery" {
					hikari++
					// The JDBC spans are children of customers-service's
					// GET /owners. The trimmed fixture keeps only their
					// database/sql tags and no span.kind, so their kind is
					// unspecified, not client: span kind comes from the
					// span.kind tag alone.
					if v.Service != "customers-service" || v.ParentID != "6f9bbe751e5fd944" || v.Kind != "unspecified" {
						t.Errorf("JDBC span %+v", v)
					}
				}
			}
			if hikari != 14 {
				t.Errorf("%d HikariProxyPreparedStatement.executeQuery spans, want 14", hikari)
			}
			if len(services) != 2 || services["api-gateway"] != 2 || services["customers-service"] != 15 {
				t.Errorf("services %v", services)
			}
			if !slices.ContainsFunc(views, func(v spanView) bool { return v.SpanID == "0a68c6983a6d81a2" }) {
				t.Error("15-digit span id a68c6983a6d81a2 not left-padded")
			}
			kinds := map[string]int{}
			for _, v := range views {
				kinds[v.Kind]++
			}
			if kinds["client"] != 1 || kinds["server"] != 2 {
				t.Errorf("kinds %v", kinds)
			}
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			set := jaegerMustDecode(t, tc.file, jaegerRealTrace(t, tc.file), FormatJaegerJSON)
			views := viewSpans(set)
			if len(views) != tc.spans {
				t.Fatalf("%d spans, want %d", len(views), tc.spans)
			}
			if w := warningKinds(set); len(w) != 0 {
				t.Errorf("warnings %v", w)
			}
			tc.check(t, set, views)
		})
	}
}

// TestJaegerMatchesOTLP decodes Jaeger's own OTLP→Jaeger conversions and
// their OTLP inputs: every Span field must agree once times are cut to the
// microseconds Jaeger keeps (its start and duration are whole microseconds).
// Nothing else the Span record holds is lost in the conversion: span kind
// travels as the span.kind tag, the OTLP parent as a CHILD_OF reference,
// resource service.name as the process serviceName, and the scope name
// Jaeger adds (otel.scope.name / otel.library.name) is no attribute the Span
// keeps.
func TestJaegerMatchesOTLP(t *testing.T) {
	for _, tc := range []struct {
		otlp, jaeger string
		otlpFormat   Format
	}{
		{"jaeger__otlp2jaeger-in.otlp.json", "jaeger__otlp2jaeger-out.jaegerui.json", FormatOTLPJSON},
		{"jaegerui__otlp2jaeger-multi-in.otlp.jsonl", "jaegerui__otlp2jaeger-multi-out.jaegerui.json", FormatOTLPJSONLines},
	} {
		t.Run(tc.jaeger, func(t *testing.T) {
			want := viewSpans(jaegerMustDecode(t, tc.otlp, jaegerRealTrace(t, tc.otlp), tc.otlpFormat))
			got := viewSpans(jaegerMustDecode(t, tc.jaeger, jaegerRealTrace(t, tc.jaeger), FormatJaegerJSON))
			for i := range want {
				want[i] = want[i].atMicros()
			}
			for i := range got {
				if got[i] != got[i].atMicros() {
					t.Errorf("Jaeger span %d has sub-microsecond times: %+v", i, got[i])
				}
			}
			if d := diffSpanViews(got, want); d != "" {
				t.Error(d)
			}
		})
	}
}

const jTestTrace = "83a9efd15c1c98a977e0711cc93ee28b"

// jaegerUIDoc wraps spans (JSON text) in a query response whose trace
// defines process p1 (service "api").
func jaegerUIDoc(spans ...string) string {
	return `{"data":[{"traceID":"` + jTestTrace + `","spans":[` + strings.Join(spans, ",") +
		`],"processes":{"p1":{"serviceName":"api","tags":[]}},"warnings":null}],"total":0,"limit":0,"offset":0,"errors":null}`
}

// jaegerUISpan renders one UI span of process p1; extra is inserted as
// further keys (with a leading comma) after the tags.
func jaegerUISpan(id, refs, tags, extra string) string {
	return `{"traceID":"` + jTestTrace + `","spanID":"` + id + `","flags":1,"operationName":"GET /items","references":[` + refs +
		`],"startTime":1706678909209712,"duration":1500,"tags":[` + tags + `],"logs":[],"processID":"p1","warnings":null` + extra + `}`
}

// jaegerUITag renders a UI tag; value is JSON text.
func jaegerUITag(key, typ, value string) string {
	return `{"key":"` + key + `","type":"` + typ + `","value":` + value + `}`
}

// jaegerUIRef renders a reference.
func jaegerUIRef(typ, trace, span string) string {
	return `{"refType":"` + typ + `","traceID":"` + trace + `","spanID":"` + span + `"}`
}

// jaegerCases are hand-written Jaeger JSON inputs that decode, with what
// must hold of their first span (sorted) and warnings.
var jaegerCases = []struct {
	name  string
	doc   string
	spans int
	check func(t *testing.T, v spanView, warnings []string)
}{
	{"int64 tag as a string", jaegerUIDoc(jaegerUISpan("1", "", jaegerUITag("http.status_code", "int64", `"503"`)+","+jaegerUITag("span.kind", "string", `"client"`), "")), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.HTTPStatus != 503 || v.Kind != "client" {
				t.Errorf("%+v", v)
			}
		}},
	{"int64 tag as a number", jaegerUIDoc(jaegerUISpan("1", "", jaegerUITag("http.status_code", "int64", `503`), "")), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.HTTPStatus != 503 {
				t.Errorf("%+v", v)
			}
		}},
	{"string tag holding a number", jaegerUIDoc(jaegerUISpan("1", "", jaegerUITag("http.status_code", "string", `503`), "")), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.HTTPStatus != 503 {
				t.Errorf("%+v", v)
			}
		}},
	{"float64 tag holding an integer", jaegerUIDoc(jaegerUISpan("1", "", jaegerUITag("http.status_code", "float64", `503.0`)+","+jaegerUITag("retry.count", "float64", `2.5`), "")), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.HTTPStatus != 503 || v.RetryCount != Absent {
				t.Errorf("%+v", v)
			}
		}},
	{"bool tag as a string", jaegerUIDoc(jaegerUISpan("1", "", jaegerUITag("error", "bool", `"true"`), "")), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.Status != "error" {
				t.Errorf("%+v", v)
			}
		}},
	{"int64 tag that is no number stays a string", jaegerUIDoc(jaegerUISpan("1", "", jaegerUITag("peer.service", "int64", `"inventory"`)+","+jaegerUITag("span.kind", "string", `"CLIENT"`), "")), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.Peer != "inventory" || v.Kind != "client" {
				t.Errorf("%+v", v)
			}
		}},
	{"otel status and description", jaegerUIDoc(jaegerUISpan("1", "", jaegerUITag("otel.status_code", "string", `"ERROR"`)+","+jaegerUITag("otel.status_description", "string", `"upstream \"reset\""`)+","+jaegerUITag("error.type", "string", `"timeout"`), "")), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.Status != "error" || v.StatusMessage != `upstream "reset"` || v.ErrorType != "timeout" {
				t.Errorf("%+v", v)
			}
		}},
	{"client call identity", jaegerUIDoc(jaegerUISpan("1", "", jaegerUITag("span.kind", "string", `"client"`)+","+
		jaegerUITag("http.method", "string", `"get"`)+","+jaegerUITag("http.url", "string", `"http://inventory:8080/items/42?x=1"`)+","+
		jaegerUITag("http.request.resend_count", "int64", `2`)+","+jaegerUITag("http.request.header.idempotency-key", "string", `"k1"`), "")), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.Peer != "inventory:8080" || v.Method != "GET" || v.Route != "/items/{id}" ||
				v.Target != fnv64("http://inventory:8080/items/42?x=1") || v.ResendCount != 2 || v.Flags&FlagIdempotencyKey == 0 {
				t.Errorf("%+v", v)
			}
		}},
	{"references", jaegerUIDoc(jaegerUISpan("1", jaegerUIRef("FOLLOWS_FROM", jTestTrace, "b")+","+jaegerUIRef("CHILD_OF", "ffff", "c")+","+
		jaegerUIRef("CHILD_OF", jTestTrace, "a")+","+jaegerUIRef("CHILD_OF", jTestTrace, "d"), "", "")), 1,
		func(t *testing.T, v spanView, _ []string) {
			// The first CHILD_OF within the trace is the parent; the rest are links, in order.
			wantLinks := jTestTrace + "/000000000000000b," + "0000000000000000000000000000ffff/000000000000000c," + jTestTrace + "/000000000000000d"
			if v.ParentID != "000000000000000a" || v.Links != wantLinks {
				t.Errorf("%+v", v)
			}
		}},
	{"FOLLOWS_FROM alone is a link, not a parent", jaegerUIDoc(jaegerUISpan("1", jaegerUIRef("FOLLOWS_FROM", jTestTrace, "b"), "", "")), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.ParentID != "0000000000000000" || v.Links != jTestTrace+"/000000000000000b" {
				t.Errorf("%+v", v)
			}
		}},
	{"older export's parentSpanID", jaegerUIDoc(jaegerUISpan("1", "", "", `,"parentSpanID":"1234"`)), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.ParentID != "0000000000001234" {
				t.Errorf("%+v", v)
			}
		}},
	{"a reference beats parentSpanID", jaegerUIDoc(jaegerUISpan("1", jaegerUIRef("CHILD_OF", jTestTrace, "a"), "", `,"parentSpanID":"1234"`)), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.ParentID != "000000000000000a" || v.Links != "" {
				t.Errorf("%+v", v)
			}
		}},
	{"times as numeric strings, short ids", strings.Replace(strings.Replace(jaegerUIDoc(jaegerUISpan("1", "", "", "")),
		`"startTime":1706678909209712,"duration":1500`, `"startTime":"1706678909209712","duration":"1500"`, 1), `"traceID":"`+jTestTrace+`","spanID"`, `"traceID":"abc","spanID"`, 1), 1,
		func(t *testing.T, v spanView, _ []string) {
			if v.Start != 1706678909209712000 || v.End != 1706678909211212000 || v.TraceID != "00000000000000000000000000000abc" || v.SpanID != "0000000000000001" {
				t.Errorf("%+v", v)
			}
		}},
	{"process missing from processes", strings.Replace(jaegerUIDoc(jaegerUISpan("1", "", "", "")), `"processID":"p1"`, `"processID":"p9"`, 1), 1,
		func(t *testing.T, v spanView, warnings []string) {
			if v.Service != "unknown_service" || !slices.Contains(warnings, "unknown process") {
				t.Errorf("%+v %v", v, warnings)
			}
		}},
	{"inline process", `{"traceID":"1","spans":[{"traceID":"1","spanID":"2","operationName":"x","startTime":1,"duration":1,"process":{"serviceName":"inline","tags":[]}}]}`, 1,
		func(t *testing.T, v spanView, warnings []string) {
			if v.Service != "inline" || len(warnings) != 0 {
				t.Errorf("%+v %v", v, warnings)
			}
		}},
	{"span and trace warnings", `{"traceID":"1","spans":[{"traceID":"1","spanID":"2","operationName":"x","startTime":1,"duration":1,"processID":"p1","warnings":["clock skew adjusted"]}],` +
		`"processes":{"p1":{"serviceName":"s"}},"warnings":["invalid parent span IDs=3; skipping clock skew adjustment"]}`, 1,
		func(t *testing.T, v spanView, warnings []string) {
			if v.Service != "s" || !slices.Equal(warnings, []string{"jaeger warning"}) {
				t.Errorf("%+v %v", v, warnings)
			}
		}},
	{"top-level array of traces", `[{"traceID":"1","spans":[{"traceID":"1","spanID":"2","startTime":1,"duration":1,"processID":"p1"}],"processes":{"p1":{"serviceName":"s"}}},` +
		`{"traceID":"3","spans":[{"traceID":"3","spanID":"4","startTime":1,"duration":1,"processID":"p1"}],"processes":{"p1":{"serviceName":"t"}}}]`, 2,
		func(t *testing.T, v spanView, warnings []string) {
			if v.Service != "s" || len(warnings) != 0 { // each trace has its own process table
				t.Errorf("%+v %v", v, warnings)
			}
		}},
	{"one trace per line", "\xef\xbb\xbf" + `{"traceID":"1","spans":[{"traceID":"1","spanID":"2","startTime":1,"duration":1,"processID":"p1"}],"processes":{"p1":{"serviceName":"s"}}}` + "\n" +
		`{"traceID":"3","spans":[{"traceID":"3","spanID":"4","startTime":1,"duration":1,"processID":"p1"}],"processes":{"p1":{"serviceName":"t"}}}` + "\n", 2,
		func(t *testing.T, v spanView, _ []string) {
			if v.Service != "s" {
				t.Errorf("%+v", v)
			}
		}},
	{"protobuf JSON written by hand", `{"spans":[{"traceId":"AAAAAAAAAAAAAAAAAAAAEQ==","spanId":"AAAAAAAAAAM=","operationName":"example-operation-1",` +
		`"references":[{"traceId":"AAAAAAAAAAAAAAAAAAAAEQ==","spanId":"AAAAAAAAAAI=","refType":"CHILD_OF"}],"startTime":"2017-01-26T16:46:31.639875Z","duration":"100000ns",` +
		`"tags":[{"key":"http.status_code","vType":"INT64","vInt64":"503"},{"key":"span.kind","vStr":"server"}],"process":{"serviceName":"example-service-1","tags":[]},` +
		`"logs":[{"timestamp":"2017-01-26T16:46:31.639875Z","fields":[{"key":"event","vStr":"x"}]}]}]}`, 1,
		func(t *testing.T, v spanView, warnings []string) {
			want := spanView{TraceID: "00000000000000000000000000000011", SpanID: "0000000000000003", ParentID: "0000000000000002",
				Start: 1485449191639875000, End: 1485449191639975000, Service: "example-service-1", Name: "example-operation-1",
				Kind: "server", Status: "unset", GRPCStatus: Absent, HTTPStatus: 503, ResendCount: Absent, PrevAttempts: Absent,
				RetryCount: Absent, RetryAfterMS: Absent}
			if v != want || len(warnings) != 0 {
				t.Errorf("got  %+v\nwant %+v\nwarnings %v", v, want, warnings)
			}
		}},
	{"query errors beside data", strings.Replace(jaegerUIDoc(jaegerUISpan("1", "", "", "")), `"errors":null`, `"errors":[{"code":500,"msg":"storage timeout"}]`, 1), 1,
		func(t *testing.T, v spanView, warnings []string) {
			if !slices.Equal(warnings, []string{"jaeger query error"}) {
				t.Errorf("%v", warnings)
			}
		}},
}

// TestJaegerJSON decodes the hand-written cases of jaegerCases.
func TestJaegerJSON(t *testing.T) {
	for _, tc := range jaegerCases {
		t.Run(tc.name, func(t *testing.T) {
			set := jaegerMustDecode(t, "case", []byte(tc.doc), FormatJaegerJSON)
			views := viewSpans(set)
			if len(views) != tc.spans {
				t.Fatalf("%d spans, want %d", len(views), tc.spans)
			}
			tc.check(t, views[0], warningKinds(set))
		})
	}
}

// jaegerBadDocs are inputs that must fail; the error names the offset of
// the byte after at (the whole input when at is "", its end when at is
// "$") and contains every string of has.
var jaegerBadDocs = []struct {
	name, doc, at string
	opts          Options
	has           []string
}{
	{name: "data null with errors", doc: `{"data":null,"total":0,"limit":0,"offset":0,"errors":[{"code":404,"msg":"trace not found"},{"code":500,"msg":"x"}]}`,
		at: `"errors":`, has: []string{`error 404: "trace not found" (and 1 more)`}},
	{name: "data empty with errors", doc: `{"data":[],"errors":[{"msg":"no storage"}]}`, at: `"errors":`, has: []string{`"no storage"`}},
	{name: "truncated", doc: jaegerUIDoc(jaegerUISpan("1", "", "", ""))[:300], at: "$", has: []string{"unexpected end of input"}},
	{name: "truncated between tokens", doc: `{"data":[{"traceID":"1"`, at: "$", has: []string{"unexpected end of input"}},
	{name: "truncated inside a key", doc: `{"data":[{"traceID":"1","spa`, at: "$", has: []string{"unexpected end of input"}},
	{name: "bad character", doc: strings.Replace(jaegerUIDoc(jaegerUISpan("1", "", "", "")), `"duration":1500`, `"duration":15x0`, 1),
		at: `"duration":15`, has: []string{"invalid character 'x'"}},
	{name: "missing comma between spans", doc: jaegerUIDoc(jaegerUISpan("1", "", "", "") + " " + jaegerUISpan("2", "", "", "")),
		at: `"warnings":null} `, has: []string{"expected ','"}},
	{name: "bad span id", doc: jaegerUIDoc(jaegerUISpan("1", "", "", ""), jaegerUISpan("zz12", "", "", "")),
		at: `"warnings":null},`, has: []string{`invalid span id "zz12"`}},
	{name: "trace id too long", doc: strings.Replace(jaegerUIDoc(jaegerUISpan("1", "", "", "")), `"traceID":"`+jTestTrace+`","spanID"`, `"traceID":"`+jTestTrace+`0","spanID"`, 1),
		at: `"spans":[`, has: []string{`invalid trace id "` + jTestTrace + `0"`}},
	{name: "operation name of the wrong type", doc: strings.Replace(jaegerUIDoc(jaegerUISpan("1", "", "", "")), `"GET /items"`, `5`, 1),
		at: `"operationName":5`, has: []string{"cannot unmarshal number into Go struct field jSpan.operationName of type string"}},
	{name: "start time out of range", doc: strings.Replace(jaegerUIDoc(jaegerUISpan("1", "", "", "")), `1706678909209712`, `9999999999999999999`, 1),
		at: `"spans":[`, has: []string{"out of range"}},
	{name: "duration overflows the end", doc: strings.Replace(jaegerUIDoc(jaegerUISpan("1", "", "", "")), `"duration":1500`, `"duration":9000000000000000`, 1),
		at: `"spans":[`, has: []string{"overflows"}},
	{name: "data is not an array", doc: `{"data":{"traceID":"1"}}`, at: `"data":`, has: []string{"expected an array of traces"}},
	{name: "no spans", doc: `{"data":[],"total":0,"errors":null}`, at: "$", has: []string{"holds no spans"}},
	{name: "span over the document limit", doc: jaegerUIDoc(jaegerUISpan("1", "", jaegerUITag("k", "string", `"`+strings.Repeat("v", 300)+`"`), "")),
		opts: Options{MaxDocumentBytes: 256}, at: `"spans":[`, has: []string{"span exceeds the 256 byte document limit"}},
}

// TestJaegerJSONErrors checks that each of jaegerBadDocs fails at the
// expected offset with the expected message.
func TestJaegerJSONErrors(t *testing.T) {
	for _, tc := range jaegerBadDocs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jaegerDecode(t, "bad.json", []byte(tc.doc), tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			off := len(tc.doc)
			if tc.at != "$" {
				i := strings.Index(tc.doc, tc.at)
				if i < 0 {
					t.Fatalf("marker %q not in the input", tc.at)
				}
				off = i + len(tc.at)
			}
			want := append([]string{fmt.Sprintf("ingest bad.json: offset %d: ", off)}, tc.has...)
			for _, s := range want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

// Protobuf test fixtures: one span of every shape, in a Batch, a Trace and
// a query chunk.
var (
	jpTrace   = model.NewTraceID(0x0102030405060708, 0x090a0b0c0d0e0f10)
	jpStart   = time.Unix(1_700_000_000, 123_456_789).UTC()
	jpURL     = "http://inventory:8080/items/42"
	jpProcess = model.Process{ServiceName: "checkout", Tags: []model.KeyValue{model.String("hostname", "h1"), model.Int64("pid", 7)}}
)

// jpSpans returns a client call that failed and its retry, which follows
// from it, with processes named as a Trace names them.
func jpSpans() []*model.Span {
	return []*model.Span{
		{
			TraceID: jpTrace, SpanID: 0x11, OperationName: "GET /items/{id}", StartTime: jpStart, Duration: 1500 * time.Microsecond,
			References: []model.SpanRef{model.NewChildOfRef(jpTrace, 0x10)},
			Tags: []model.KeyValue{model.String("span.kind", "client"), model.String("http.method", "GET"), model.String("http.url", jpURL),
				model.Int64("http.status_code", 503), model.Bool("error", true), model.String("peer.service", "inventory"),
				model.Float64("retry.count", 0), model.Binary("blob", []byte{1, 2})},
			ProcessID: "p1", Warnings: []string{"clock skew adjusted"},
		},
		{
			TraceID: jpTrace, SpanID: 0x12, OperationName: "GET /items/{id}", StartTime: jpStart.Add(2 * time.Millisecond), Duration: time.Millisecond,
			References: []model.SpanRef{model.NewChildOfRef(jpTrace, 0x10), model.NewFollowsFromRef(jpTrace, 0x11)},
			Tags:       []model.KeyValue{model.String("span.kind", "client"), model.String("http.method", "GET"), model.String("http.url", jpURL), model.Int64("http.status_code", 200), model.Int64("retry.count", 1)},
			ProcessID:  "p1",
		},
	}
}

// jpWant is what jpSpans decode to, with service svc, recorded by
// instance inst ("" for none).
func jpWant(svc, inst string) []spanView {
	trace := "0102030405060708090a0b0c0d0e0f10"
	start := jpStart.UnixNano()
	base := spanView{
		TraceID: trace, ParentID: "0000000000000010", Service: svc, Name: "GET /items/{id}", Peer: "inventory",
		Method: "GET", Route: "/items/{id}", Target: fnv64(jpURL), Kind: "client", GRPCStatus: Absent,
		ResendCount: Absent, PrevAttempts: Absent, RetryAfterMS: Absent,
	}
	a, b := base, base
	a.SpanID, a.Start, a.End, a.Status, a.HTTPStatus, a.RetryCount = "0000000000000011", start, start+1_500_000, "error", 503, 0
	b.SpanID, b.Start, b.End, b.Status, b.HTTPStatus, b.RetryCount = "0000000000000012", start+2_000_000, start+3_000_000, "unset", 200, 1
	b.Links = trace + "/0000000000000011"
	b.Peer = "inventory:8080" // no peer.service: the URL host
	a.Origin.Instance, b.Origin.Instance = inst, inst
	return []spanView{a, b}
}

// jpMessage is a jaeger-idl message, marshalled to binary by its generated
// code and to protobuf JSON by gogo's jsonpb.
type jpMessage interface {
	Marshal() ([]byte, error)
	Reset()
	String() string
	ProtoMessage()
}

// jpMessages are the protobuf messages the Jaeger tests and fuzz seeds use.
func jpMessages() map[string]jpMessage {
	withProcess := jpSpans()
	for _, s := range withProcess {
		s.ProcessID, s.Process = "", &model.Process{ServiceName: "checkout"}
	}
	return map[string]jpMessage{
		"batch":                  &model.Batch{Spans: jpSpans(), Process: &jpProcess},
		"batch untagged process": &model.Batch{Spans: jpSpans(), Process: &model.Process{ServiceName: "checkout"}},
		"trace": &model.Trace{Spans: jpSpans(), Warnings: []string{"trace too large"}, ProcessMap: []model.Trace_ProcessMapping{
			{ProcessID: "p0", Process: model.Process{ServiceName: "other"}}, {ProcessID: "p1", Process: jpProcess}}},
		"trace one untagged process": &model.Trace{Spans: jpSpans(), ProcessMap: []model.Trace_ProcessMapping{{ProcessID: "p1", Process: model.Process{ServiceName: "checkout"}}}},
		"trace one tagged process":   &model.Trace{Spans: jpSpans(), ProcessMap: []model.Trace_ProcessMapping{{ProcessID: "p1", Process: jpProcess}}},
		"query chunk":                &model.Batch{Spans: withProcess},
	}
}

// TestJaegerProto round-trips Batch, Trace and query-chunk messages built
// with the jaeger-idl types, in binary and in protobuf JSON.
func TestJaegerProto(t *testing.T) {
	for name, msg := range jpMessages() {
		t.Run(name, func(t *testing.T) {
			b, err := msg.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			// jpProcess's hostname tag names the instance.
			inst := "h1"
			if strings.Contains(name, "untagged") || name == "query chunk" {
				inst = ""
			}
			set := jaegerMustDecode(t, name, b, FormatJaegerProto)
			if d := diffSpanViews(viewSpans(set), jpWant("checkout", inst)); d != "" {
				t.Error(d)
			}
			wantWarnings := []string{"jaeger warning"}
			if kinds := warningKinds(set); !slices.Equal(kinds, wantWarnings) {
				t.Errorf("warnings %v, want %v", kinds, wantWarnings)
			}

			// The same message in protobuf JSON decodes to the same spans.
			var buf bytes.Buffer
			if err := (&jsonpb.Marshaler{}).Marshal(&buf, msg); err != nil {
				t.Fatal(err)
			}
			jset := jaegerMustDecode(t, name+".json", buf.Bytes(), FormatJaegerJSON)
			if d := diffSpanViews(viewSpans(jset), jpWant("checkout", inst)); d != "" {
				t.Errorf("protobuf JSON %s:\n%s", buf.Bytes(), d)
			}
		})
	}
}

// TestJaegerProtoProcesses covers spans whose process is unknown.
func TestJaegerProtoProcesses(t *testing.T) {
	unknown := jpSpans()
	unknown[0].ProcessID = "p7"
	trace := &model.Trace{Spans: unknown, ProcessMap: []model.Trace_ProcessMapping{{ProcessID: "p1", Process: jpProcess}, {ProcessID: "p2", Process: jpProcess}}}
	b, err := trace.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	set := jaegerMustDecode(t, "trace", b, FormatJaegerProto)
	views := viewSpans(set)
	if views[0].Service != "unknown_service" || views[1].Service != "checkout" || !slices.Contains(warningKinds(set), "unknown process") {
		t.Errorf("services %q %q, warnings %v", views[0].Service, views[1].Service, warningKinds(set))
	}

	// In a Batch, spans that name a process the batch does not define
	// belong to the batch's process.
	batch := &model.Batch{Spans: unknown, Process: &model.Process{ServiceName: ""}}
	if b, err = batch.Marshal(); err != nil {
		t.Fatal(err)
	}
	set = jaegerMustDecode(t, "batch", b, FormatJaegerProto)
	if views = viewSpans(set); views[0].Service != "unknown_service" || !slices.Contains(warningKinds(set), "missing service.name") {
		t.Errorf("service %q, warnings %v", views[0].Service, warningKinds(set))
	}
}

// TestJaegerProtoErrors checks the offsets and messages of bad messages.
func TestJaegerProtoErrors(t *testing.T) {
	good, err := (&model.Batch{Spans: jpSpans(), Process: &jpProcess}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	span2, err := jpSpans()[1].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// A third span whose payload ends in a field of the invalid wire type 7.
	bad := protowire.AppendTag(slices.Clone(good), 1, protowire.BytesType)
	bad = protowire.AppendBytes(bad, protowire.AppendTag(slices.Clone(span2), 15, 7))
	noStart := jpSpans()[:1]
	noStart[0].StartTime = time.Time{}
	noStartMsg, err := (&model.Batch{Spans: noStart}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		off  int
		has  string
	}{
		{"cut short", good[:len(good)-10], firstFieldAt(t, good, 2), "unexpected EOF"},
		{"bad span field", bad, len(good), "span 3: proto: illegal wireType 7"},
		{"no start time", noStartMsg, 0, "start_time: time 0001-01-01T00:00:00Z is missing or outside the years 1677 to 2262"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jaegerDecode(t, "bad.pb", tc.b, Options{})
			want := fmt.Sprintf("ingest bad.pb: offset %d: ", tc.off)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.has) {
				t.Errorf("error %v, want %q and %q", err, want, tc.has)
			}
		})
	}
}

// firstFieldAt returns the offset of the first top-level field num in b.
func firstFieldAt(t *testing.T, b []byte, num protowire.Number) int {
	t.Helper()
	for off := 0; off < len(b); {
		n, typ, m := protowire.ConsumeTag(b[off:])
		if m < 0 {
			t.Fatal("bad fixture")
		}
		if n == num {
			return off
		}
		off += m + protowire.ConsumeFieldValue(n, typ, b[off+m:])
	}
	t.Fatalf("no field %d", num)
	return 0
}

// jaegerFuzzCheck is the property both Jaeger fuzz targets assert: an
// error names an offset within the input; a success yields spans whose
// links are in range, whose service is set, and whose end precedes their
// start only with an "end before start" warning.
func jaegerFuzzCheck(t *testing.T, data []byte, set *Set, w *warnings, err error) {
	if err != nil {
		m := regexp.MustCompile(`^ingest fuzz: offset (\d+): `).FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("error names no offset: %v", err)
		}
		if off, _ := strconv.Atoi(m[1]); off > len(data) {
			t.Fatalf("offset %d beyond the %d-byte input: %v", off, len(data), err)
		}
		return
	}
	endBeforeStart := slices.ContainsFunc(w.list, func(x Warning) bool { return x.Kind == "end before start" })
	for i := range set.Spans {
		sp := &set.Spans[i]
		if x := set.Extra(sp); int(x.FirstLink)+int(x.NumLinks) > len(set.Links) {
			t.Fatalf("span %d: links out of range", i)
		}
		if sp.Service == 0 {
			t.Fatalf("span %d has no service", i)
		}
		if sp.End < sp.Start && !endBeforeStart {
			t.Fatalf("span %d ends before it starts, unwarned", i)
		}
	}
}

// FuzzJaegerJSON drives decodeJaegerJSON with the reference files, the
// hand-written cases and protobuf JSON renderings as seeds.
func FuzzJaegerJSON(f *testing.F) {
	if names, _ := filepath.Glob(filepath.Join("..", "..", "shared", "realtraces", "*.json*")); len(names) > 0 {
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	for _, tc := range jaegerCases {
		f.Add([]byte(tc.doc))
	}
	for _, tc := range jaegerBadDocs {
		f.Add([]byte(tc.doc))
	}
	for _, msg := range jpMessages() {
		var buf bytes.Buffer
		if err := (&jsonpb.Marshaler{}).Marshal(&buf, msg); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, w := NewSet(), &warnings{}
		err := decodeJaegerJSON(testSource("fuzz", data, 1<<20), set, w)
		jaegerFuzzCheck(t, data, set, w, err)
	})
}

// FuzzJaegerProto drives decodeJaegerProto with the protobuf fixtures.
func FuzzJaegerProto(f *testing.F) {
	for _, msg := range jpMessages() {
		b, err := msg.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, w := NewSet(), &warnings{}
		err := decodeJaegerProto(testSource("fuzz", data, 1<<20), set, w)
		jaegerFuzzCheck(t, data, set, w, err)
	})
}

// jaegerBenchDoc renders a Jaeger UI query response of n spans in traces of
// 20: a gateway server span, and client/server pairs across three services
// with the tags real instrumentations write.
func jaegerBenchDoc(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"data":[`)
	services := []string{"gateway", "checkout", "inventory"}
	for t := 0; t*20 < n; t++ {
		if t > 0 {
			b.WriteByte(',')
		}
		trace := fmt.Sprintf("%032x", uint64(t)*0x9e3779b97f4a7c15+1)
		fmt.Fprintf(&b, `{"traceID":%q,"spans":[`, trace)
		start := int64(1_706_678_909_000_000) + int64(t)*1000
		for i := 0; i < 20 && t*20+i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			kind, svc := "server", i%3
			if i%2 == 1 {
				kind = "client"
			}
			refs := ""
			if i > 0 {
				refs = fmt.Sprintf(`{"refType":"CHILD_OF","traceID":%q,"spanID":"%016x"}`, trace, uint64(t)<<8|uint64(i-1)+1)
			}
			status := 200
			if i%7 == 3 {
				status = 503
			}
			fmt.Fprintf(&b, `{"traceID":%q,"spanID":"%016x","flags":1,"operationName":"GET /api/items/{id}","references":[%s],`+
				`"startTime":%d,"duration":%d,"tags":[`+
				`{"key":"span.kind","type":"string","value":%q},`+
				`{"key":"component","type":"string","value":"net/http"},`+
				`{"key":"http.method","type":"string","value":"GET"},`+
				`{"key":"http.url","type":"string","value":"http://%s:8080/api/items/%d"},`+
				`{"key":"http.status_code","type":"int64","value":%d},`+
				`{"key":"peer.service","type":"string","value":%q},`+
				`{"key":"net.peer.port","type":"int64","value":8080},`+
				`{"key":"error","type":"bool","value":%t},`+
				`{"key":"otel.library.name","type":"string","value":"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"}],`+
				`"logs":[{"timestamp":%d,"fields":[{"key":"event","type":"string","value":"request sent"}]}],"processID":"p%d","warnings":null}`,
				trace, uint64(t)<<8|uint64(i)+1, refs, start+int64(i)*100, 5000-i*100, kind, services[(svc+1)%3], i,
				status, services[(svc+1)%3], status >= 500, start+int64(i)*100+10, svc+1)
		}
		b.WriteString(`],"processes":{`)
		for i, s := range services {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{"serviceName":%q,"tags":[{"key":"hostname","type":"string","value":"%s-7d9f"},{"key":"jaeger.version","type":"string","value":"Go-2.30.0"}]}`, i+1, s, s)
		}
		b.WriteString(`},"warnings":null}`)
	}
	b.WriteString(`],"total":0,"limit":0,"offset":0,"errors":null}`)
	return b.Bytes()
}

// BenchmarkJaegerJSON decodes a 100,000-span query response.
func BenchmarkJaegerJSON(b *testing.B) {
	const n = 100_000
	doc := jaegerBenchDoc(n)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		set := NewSet()
		if err := decodeJaegerJSON(testSource("bench", doc, 1<<30), set, &warnings{}); err != nil {
			b.Fatal(err)
		}
		if len(set.Spans) != n {
			b.Fatalf("%d spans", len(set.Spans))
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "spans/s")
}
