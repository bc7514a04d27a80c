package ingest

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// testdataFile reads a hand-written file of a backend's documented shape.
func testdataFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkoutTrace is the trace every backend file of testdata/tempo and
// testdata/zipkin holds: frontend serves /checkout and calls inventory
// twice, the first attempt failing with 503.
func checkoutTrace(t *testing.T, set *Set) {
	t.Helper()
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	want := map[string]struct {
		parent, service, kind, status string
		http                          uint16
		durMS                         int64
	}{
		"00f067aa0ba902b7": {"0000000000000000", "frontend", "server", "unset", 0, 120},
		"1a2b3c4d5e6f7081": {"00f067aa0ba902b7", "frontend", "client", "error", 503, 35},
		"1a2b3c4d5e6f7082": {"00f067aa0ba902b7", "frontend", "client", "unset", 0, 50},
		"9f8e7d6c5b4a3921": {"1a2b3c4d5e6f7081", "inventory", "server", "error", 503, 31},
		"9f8e7d6c5b4a3922": {"1a2b3c4d5e6f7082", "inventory", "server", "unset", 0, 46},
	}
	n := 0
	for _, v := range viewSpans(set) {
		if v.TraceID != trace {
			continue
		}
		n++
		w, ok := want[v.SpanID]
		if !ok {
			t.Errorf("unexpected span %s", v.SpanID)
			continue
		}
		if v.ParentID != w.parent || v.Service != w.service || v.Kind != w.kind || v.Status != w.status ||
			(w.http != 0 && v.HTTPStatus != w.http) || (v.End-v.Start)/1e6 != w.durMS {
			t.Errorf("span %s: got %+v, want %+v", v.SpanID, v, w)
		}
		if v.Kind == "client" && v.Peer != "inventory" {
			t.Errorf("client span %s: peer %q, want inventory", v.SpanID, v.Peer)
		}
		if v.Service == "inventory" && v.Route != "/items/{id}" {
			t.Errorf("server span %s: route %q", v.SpanID, v.Route)
		}
	}
	if n != len(want) {
		t.Errorf("trace %s: %d spans, want %d", trace, n, len(want))
	}
	if got := set.Spans[0].Start; got != 1764579600000000000 {
		t.Errorf("first start %d", got)
	}
}

func TestTempoJSON(t *testing.T) {
	for _, tc := range []struct {
		file     string
		spans    int
		warnings []string
		format   Format
	}{
		{"tempo/api-traces-v1.json", 5, nil, FormatTempoJSON},
		{"tempo/api-traces-tempo1.json", 5, nil, FormatTempoJSON},
		{"tempo/api-v2-traces.json", 5, nil, FormatTempoJSON},
		{"tempo/api-v2-traces-partial.json", 3, []string{"tempo partial trace"}, FormatTempoJSON},
		// Of the shapes Tempo's code writes (see testdata/README.md): one
		// line of gogo jsonpb, ids in base64, enums by name, 64-bit
		// integers as strings; v2 with its metrics and PARTIAL status; a
		// tempopb.Trace without the batches rename; the OTLP form of
		// Tempo's own fixture, upper-case hex ids and enums as integers.
		{"tempo/api-traces-v1-jsonpb.json", 5, nil, FormatTempoJSON},
		{"tempo/api-v2-traces-jsonpb.json", 5, nil, FormatTempoJSON},
		{"tempo/api-v2-traces-partial-jsonpb.json", 3, []string{"tempo partial trace"}, FormatTempoJSON},
		{"tempo/tempopb-trace.json", 5, nil, FormatOTLPJSON},
		{"tempo/batches-enum-ints.json", 5, nil, FormatTempoJSON},
	} {
		t.Run(tc.file, func(t *testing.T) {
			set := jaegerMustDecode(t, tc.file, testdataFile(t, tc.file), tc.format)
			if len(set.Spans) != tc.spans {
				t.Fatalf("%d spans, want %d", len(set.Spans), tc.spans)
			}
			if got := warningKinds(set); !slices.Equal(got, tc.warnings) {
				t.Errorf("warnings %v, want %v", got, tc.warnings)
			}
			if tc.spans == 5 {
				checkoutTrace(t, set)
			}
		})
	}
}

// TestTempoSameAsOTLP: Tempo's renderings of one trace decode to the same
// spans.
func TestTempoSameAsOTLP(t *testing.T) {
	ref := viewSpans(jaegerMustDecode(t, "v2", testdataFile(t, "tempo/api-v2-traces.json"), FormatTempoJSON))
	for _, f := range []string{"tempo/api-traces-v1.json", "tempo/api-traces-tempo1.json", "tempo/api-traces-v1-jsonpb.json",
		"tempo/api-v2-traces-jsonpb.json", "tempo/tempopb-trace.json", "tempo/batches-enum-ints.json"} {
		format := FormatTempoJSON
		if f == "tempo/tempopb-trace.json" {
			format = FormatOTLPJSON
		}
		got := viewSpans(jaegerMustDecode(t, f, testdataFile(t, f), format))
		if d := diffSpanViews(got, ref); d != "" {
			t.Errorf("%s differs from the v2 rendering:\n%s", f, d)
		}
	}
}

// TestTempoProto decodes /api/traces/{id} with Accept: application/protobuf:
// a tempopb.Trace, written here field by field from tempo.proto (batches = 1,
// each an OTLP ResourceSpans).
func TestTempoProto(t *testing.T) {
	str := func(b []byte, num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
	}
	msg := func(b []byte, num protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
	}
	fixed := func(b []byte, num protowire.Number, v uint64) []byte {
		return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
	}
	traceID := []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	var span []byte
	span = msg(span, 1, traceID)
	span = msg(span, 2, binary.BigEndian.AppendUint64(nil, 0x00f067aa0ba902b7))
	span = str(span, 5, "GET /checkout")
	span = protowire.AppendVarint(protowire.AppendTag(span, 6, protowire.VarintType), 2) // SERVER
	span = fixed(span, 7, 1764579600000000000)
	span = fixed(span, 8, 1764579600120000000)
	kv := msg(str(nil, 1, "service.name"), 2, str(nil, 1, "frontend"))
	resource := msg(nil, 1, kv)
	scopeSpans := msg(nil, 2, span)
	rs := msg(msg(nil, 1, resource), 2, scopeSpans)
	trace := msg(nil, 1, rs) // tempopb.Trace{batches: [rs]}
	set := jaegerMustDecode(t, "trace.pb", trace, FormatOTLPProto)
	v := viewSpans(set)
	if len(v) != 1 || v[0].Service != "frontend" || v[0].Kind != "server" || v[0].Name != "GET /checkout" || v[0].End-v[0].Start != 120e6 {
		t.Fatalf("got %+v", v)
	}
}

func TestTempoErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"batches": 3}`, "line 1: column 13: Tempo JSON: batches: expected an array"},
		{"{\n  \"batches\": 3\n}", "offset 15: Tempo JSON: batches: expected an array"},
		{`{"trace": null, "message": "trace not found"}`, "Tempo response holds no trace: trace not found"},
		{`{"batches": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}`, `line 1: column 53: OTLP JSON: traceId "zz" is neither`},
		{`{"trace": {"resourceSpans": [1]}}`, "OTLP JSON"},
		{`{"batches": []}`, "tempo-json input holds no spans"},
	} {
		_, err := jaegerDecode(t, "t.json", []byte(tc.doc), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "ingest t.json: ") {
			t.Errorf("%s: error %v, want one containing %q", tc.doc, err, tc.want)
		}
	}
}

// FuzzTempoJSON drives the Tempo decoder with small seeds of each shape
// (the fuzzer minimises every new input, which is slow on the testdata files).
func FuzzTempoJSON(f *testing.F) {
	for _, seed := range []string{
		`{"batches":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"s"}}]},"scopeSpans":[{"spans":[{"traceId":"S/kvNXezTaajzpKdDg5HNg==","spanId":"APBnqgupArc=","kind":"SPAN_KIND_CLIENT","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"http.response.status_code","value":{"intValue":"503"}}],"status":{"code":"STATUS_CODE_ERROR"}}]}]}]}`,
		`{"batches":[{"instrumentationLibrarySpans":[{"instrumentationLibrary":{"name":"x"},"spans":[{"traceId":"S/kvNXezTaajzpKdDg5HNg==","spanId":"APBnqgupArc="}]}]}]}`,
		`{"trace":{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7"}]}]}]},"status":"partial","message":"m"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		set := NewSet()
		err := decodeOTLPJSONStream(testSource("fuzz", b, 1<<20), set, &warnings{}, FormatTempoJSON)
		checkDecoded(t, set, err)
	})
}
