package ingest

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	model "github.com/jaegertracing/jaeger-idl/model/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// testPBSpan encodes one OTLP protobuf span with ids, a name, client kind and
// the given start and end, then extra (already encoded fields).
func testPBSpan(start, end uint64, extra []byte) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, bytes.Repeat([]byte{0xab}, 16))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, bytes.Repeat([]byte{0xcd}, 8))
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	b = protowire.AppendString(b, "GET")
	b = protowire.AppendTag(b, 6, protowire.VarintType)
	b = protowire.AppendVarint(b, 3)
	b = protowire.AppendTag(b, 7, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, start)
	b = protowire.AppendTag(b, 8, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, end)
	return append(b, extra...)
}

// testPBRequest wraps encoded spans in an ExportTraceServiceRequest of one
// resource (service "api") and one scope.
func testPBRequest(spans ...[]byte) []byte {
	var scope []byte
	for _, sp := range spans {
		scope = protowire.AppendTag(scope, 2, protowire.BytesType)
		scope = protowire.AppendBytes(scope, sp)
	}
	kv := protowire.AppendTag(nil, 1, protowire.BytesType)
	kv = protowire.AppendString(kv, "service.name")
	kv = protowire.AppendTag(kv, 2, protowire.BytesType)
	kv = protowire.AppendBytes(kv, protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "api"))
	res := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), kv)
	rs := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), res)
	rs = protowire.AppendTag(rs, 2, protowire.BytesType)
	rs = protowire.AppendBytes(rs, scope)
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
}

// pbEmptyAttrs is n empty attributes (field 9 of a span), two bytes each.
func pbEmptyAttrs(n int) []byte {
	return bytes.Repeat([]byte{9<<3 | 2, 0}, n)
}

// pbNestedArray is one attribute whose value is an array nested depth
// deep, written outside in (in linear time) from the sizes of its levels.
func pbNestedArray(depth int) []byte {
	value := make([]int, depth+1) // value[k]: size of the AnyValue k levels deep
	array := make([]int, depth+1) // array[k]: size of the ArrayValue inside it
	for k := 1; k <= depth; k++ {
		array[k] = 1 + protowire.SizeVarint(uint64(value[k-1])) + value[k-1]
		value[k] = 1 + protowire.SizeVarint(uint64(array[k])) + array[k]
	}
	var v []byte
	for k := depth; k >= 1; k-- {
		v = protowire.AppendVarint(protowire.AppendTag(v, 5, protowire.BytesType), uint64(array[k]))   // AnyValue.array_value
		v = protowire.AppendVarint(protowire.AppendTag(v, 1, protowire.BytesType), uint64(value[k-1])) // ArrayValue.values
	}
	kv := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "deep")
	kv = protowire.AppendBytes(protowire.AppendTag(kv, 2, protowire.BytesType), v)
	return protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), kv)
}

// jsonNestedArray is an OTLP JSON attribute whose arrayValue nests depth deep.
func jsonNestedArray(depth int) string {
	return `{"key":"deep","value":` + strings.Repeat(`{"arrayValue":{"values":[`, depth) + strings.Repeat(`]}}`, depth) + `}`
}

// TestExhaustion feeds inputs built to exhaust the stack or memory: each
// must fail with a *LimitError naming the input and an offset inside it,
// before a library allocates what the input asks for.
func TestExhaustion(t *testing.T) {
	many := func(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	jTags := func(n int) string { return many(n, `{}`) }
	jaegerBomb, err := (&model.Batch{Spans: []*model.Span{{TraceID: jpTrace, SpanID: 1, Tags: make([]model.KeyValue, 5000)}}, Process: &jpProcess}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	warned, err := (&model.Trace{Spans: jpSpans(), Warnings: make([]string, 5000)}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		in     []byte
		limits Limits
		want   string
	}{
		{"JSON arrayValue nested 100,000 deep", []byte(request(span("3", jsonNestedArray(100_000)))), Limits{}, "levels of nesting"},
		{"JSON nested brackets only", []byte(`{"resourceSpans":` + strings.Repeat("[", 200_000)), Limits{}, "levels of nesting"},
		{"protobuf arrayValue nested 100,000 deep", testPBRequest(testPBSpan(1, 2, pbNestedArray(100_000))), Limits{}, "levels of nesting"},
		{"protobuf span with 2,000,000 empty attributes", testPBRequest(testPBSpan(1, 2, pbEmptyAttrs(2_000_000))), Limits{}, "attributes"},
		{"JSON span with 5,000 empty attributes", []byte(request(span("3", jTags(5000)))), Limits{}, "attributes"},
		{"JSON array value of 5,000 elements", []byte(request(span("3", `{"key":"a","value":{"arrayValue":{"values":[`+jTags(5000)+`]}}}`))), Limits{}, "values per attribute"},
		{"JSON document of many small spans", []byte(request(many(200, span("3", jTags(10))))), Limits{MaxDocumentItems: 1000}, "items"},
		{"protobuf document of many small spans", testPBRequest(slices.Repeat([][]byte{testPBSpan(1, 2, nil)}, 2000)...), Limits{MaxDocumentItems: 1000}, "items"},
		{"spans past --max-spans", []byte(request(many(10, span("3", "")))), Limits{MaxSpans: 5}, "limit of 5 spans"},
		{"distinct strings past the budget", []byte(request(func() string {
			var s []string
			for i := range 50 {
				s = append(s, strings.Replace(span("3", ""), `"name":"GET"`, `"name":"op`+strconv.Itoa(i)+strings.Repeat("x", 500)+`"`, 1))
			}
			return strings.Join(s, ",")
		}())), Limits{MaxHeldBytes: 10_000}, "bytes of distinct strings and links"},
		{"links past the held budget", []byte(request(strings.Replace(span("3", ""), `"status":{}`, `"links":[`+many(5000, `{"traceId":"83a9efd15c1c98a977e0711cc93ee28b","spanId":"e127af99e3b3e070"}`)+`],"status":{}`, 1))),
			Limits{MaxHeldBytes: 50_000}, "distinct strings and links"},
		{"Jaeger JSON span with 5,000 tags", []byte(jaegerUIDoc(jaegerUISpan("1", "", jTags(5000), ""))), Limits{}, "5000 tags in one span"},
		{"Jaeger JSON trace with 5,000 processes", []byte(`{"data":[{"traceID":"` + jTestTrace + `","spans":[],"processes":{` + many(5000, `"p":{}`) + `}}]}`), Limits{}, "processes in one trace"},
		{"Jaeger protobuf span with 5,000 tags", jaegerBomb, Limits{}, "5000 tags in one span"},
		{"Jaeger protobuf trace with 5,000 warnings", warned, Limits{}, "processes and warnings in one message"},
		{"Jaeger query response with 5,000 errors", []byte(`{"data":[],"errors":[` + many(5000, `{}`) + `]}`), Limits{}, "5000 errors in one query response"},
		{"Zipkin span with 400,000 distinct tags", []byte(`[{"traceId":"` + jTestTrace + `","id":"e127af99e3b3e074","name":"x","timestamp":1706678909209712,"duration":10,` +
			`"localEndpoint":{"serviceName":"a"},"tags":{` + func() string {
			var b strings.Builder
			for i := range 400_000 {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`"` + strconv.Itoa(i) + `":""`)
			}
			return b.String()
		}() + `}}]`), Limits{}, "400000 tags in one span"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := decodeBytes(t, "bomb", tc.in, Options{Limits: tc.limits})
			runtime.ReadMemStats(&after)
			// What was refused must not have been built first: a library
			// that allocates every element of a bomb holds many times its
			// size (a Zipkin tag map of 10^7 entries took 1 GB).
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(8*len(tc.in))+4<<20 {
				t.Errorf("allocated %d bytes to refuse a %d-byte input", alloc, len(tc.in))
			}
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("got %v, want a limit error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			checkPosition(t, err, len(tc.in))
		})
	}
}

// positionRE finds the position an error names.
var positionRE = regexp.MustCompile(`^ingest [^:]+: (?:offset (\d+)|line (\d+): column (\d+)|line (\d+))`)

// checkPosition asserts err names a position, and that an offset lies in
// an input of size bytes.
func checkPosition(t *testing.T, err error, size int) int64 {
	t.Helper()
	m := positionRE.FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error names no position: %v", err)
	}
	if m[3] != "" && m[2] == "1" { // the first line: the column gives the offset
		col, _ := strconv.ParseInt(m[3], 10, 64)
		m[1] = strconv.FormatInt(col-1, 10)
	}
	if m[1] == "" {
		return -1
	}
	off, _ := strconv.ParseInt(m[1], 10, 64)
	if off < 0 || off > int64(size) {
		t.Errorf("offset %d is outside the %d-byte input: %v", off, size, err)
	}
	return off
}

// TestSilentLoss covers inputs whose content used to be dropped or taken
// at a wrong value without a word: every span must be read, or a warning
// (or error) must say what was not.
func TestSilentLoss(t *testing.T) {
	one := request(span("3", ""))
	other := strings.Replace(one, "e127af99e3b3e074", "e127af99e3b3e075", 1)
	pretty := strings.ReplaceAll(one, `,"`, ",\n  \"")
	for _, tc := range []struct {
		name    string
		in      string
		spans   int
		warning string // a warning kind that must be reported
		err     string // or an error that must be
	}{
		{name: "two documents on one line", in: one + other, spans: 2},
		{name: "two documents on one line, then a third", in: one + other + "\n" + one + "\n", spans: 3},
		{name: "two pretty-printed documents", in: pretty + "\n" + strings.ReplaceAll(other, `,"`, ",\n  \""), spans: 2},
		{name: "trailing garbage", in: pretty + "\nxyz", err: `offset ` + strconv.Itoa(len(pretty)+1) + `: JSON: unexpected 'x' after the end of a document`},
		{name: "trailing garbage after a line", in: one + "\n" + one + "]\n", err: "line 2: column " + strconv.Itoa(len(one)+1)},
		{name: "trailing garbage on the only line", in: one + "]", err: "line 1: column " + strconv.Itoa(len(one)+1)},
		{name: "a line cut short between whole ones", in: one + "\n" + one[:100] + "\n" + one + "\n", err: "line 2: column 101"},
		{name: "two api_v3 responses on one line", in: `{"result":` + one + `}{"result":` + other + `}`, spans: 2},
		{name: "two Jaeger documents", in: jaegerUIDoc(jaegerUISpan("1", "", "", "")) + jaegerUIDoc(jaegerUISpan("2", "", "", "")), spans: 2},
		{name: "Jaeger document and garbage", in: jaegerUIDoc(jaegerUISpan("1", "", "", "")) + " xyz", err: "offset " + strconv.Itoa(len(jaegerUIDoc(jaegerUISpan("1", "", "", "")))+1)},
		{name: "start at 2^63 ns", in: strings.Replace(one, `"1706678909209712000"`, `"9223372036854775808"`, 1), warning: "timestamp out of range", err: "holds no spans"},
		{name: "end past 2^63 ns", in: request(span("3", ""), strings.Replace(strings.Replace(span("3", ""), "e127af99e3b3e074", "e127af99e3b3e075", 1), `"1706678909219712000"`, `"18446744073709551615"`, 1)), spans: 1, warning: "timestamp out of range"},
		{name: "start unset (0 ns)", in: request(span("3", ""), strings.Replace(strings.Replace(span("3", ""), "e127af99e3b3e074", "e127af99e3b3e075", 1), `"1706678909209712000"`, `"0"`, 1)), spans: 2, warning: "missing timestamp"},
		{name: "span status 7", in: strings.Replace(one, `"status":{}`, `"status":{"code":7}`, 1), spans: 1, warning: "unknown status code"},
		{name: "HTTP status 1000", in: request(span("3", num("http.response.status_code", 1000))), spans: 1, warning: "invalid status code"},
		{name: "HTTP status NaN", in: request(span("3", `{"key":"http.status_code","value":{"doubleValue":"NaN"}}`)), spans: 1, warning: "invalid status code"},
		{name: "HTTP status as words", in: request(span("3", str("http.status_code", "teapot"))), spans: 1, warning: "invalid status code"},
		{name: "gRPC status 99", in: request(span("3", num("rpc.grpc.status_code", 99))), spans: 1, warning: "invalid status code"},
		{name: "invalid UTF-8 in a name", in: strings.Replace(one, `"name":"GET"`, "\"name\":\"G\xffT\"", 1), spans: 1, warning: "invalid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := decodeBytes(t, "loss", []byte(tc.in), Options{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				if tc.warning != "" && !strings.Contains(err.Error(), tc.warning) {
					t.Errorf("error %v does not carry warning %q", err, tc.warning)
				}
				checkPosition(t, err, len(tc.in))
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Spans) != tc.spans {
				t.Errorf("%d spans, want %d", len(set.Spans), tc.spans)
			}
			if tc.warning != "" && !strings.Contains(strings.Join(warningKinds(set), ","), tc.warning) {
				t.Errorf("warnings %v, want %q", set.Inputs[0].Warnings, tc.warning)
			}
			for i := range set.Spans {
				if sp := &set.Spans[i]; sp.Start < 0 || sp.End < 0 || sp.HTTPStatus >= 1000 {
					t.Errorf("span %d keeps a nonsense value: %+v", i, sp)
				}
			}
		})
	}
}

// TestTruncationOffsets cuts inputs of every format at every byte: each
// cut that fails must name a position inside the cut input, and a cut
// OTLP JSON document must be reported where it was cut.
func TestTruncationOffsets(t *testing.T) {
	jb, err := (&model.Batch{Spans: jpSpans(), Process: &jpProcess}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	doc := request(span("3", str("peer.service", "inventory")))
	for _, tc := range []struct {
		name  string
		in    []byte
		atEnd bool // a failing cut must be reported at its end
	}{
		{"OTLP JSON", []byte(doc), true},
		{"OTLP JSON lines", []byte(doc + "\n" + doc + "\n"), false},
		{"OTLP protobuf", testPBRequest(testPBSpan(1, 2, pbEmptyAttrs(3))), true},
		{"Jaeger JSON", []byte(jaegerUIDoc(jaegerUISpan("1", "", jaegerUITag("http.status_code", "int64", "503"), ""))), false},
		{"Jaeger protobuf", jb, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for cut := 1; cut < len(tc.in); cut++ {
				_, err := decodeBytes(t, "cut", tc.in[:cut], Options{})
				if err == nil {
					continue
				}
				off := checkPosition(t, err, cut)
				if tc.atEnd && off != int64(cut) {
					t.Errorf("cut at %d reported at offset %d: %v", cut, off, err)
				}
			}
		})
	}
}

// TestCancelledRead stops at once when the context is done.
func TestCancelledRead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Decode(ctx, NewSet(), "x", strings.NewReader(request(span("3", ""))), Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
