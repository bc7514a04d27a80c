package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/retryaudit/retryaudit/samples/synth"
)

// compareWire decodes one OTLP protobuf message both ways, pdata then
// addTraces and the protowire fast path, and fails unless they agree: when
// the fast path takes the message, pdata must take it too and the two Sets
// must be identical (spans, links, string table, warnings); when it does
// not, it must leave its Set and warnings untouched, so that the pdata
// fallback alone decides. It reports whether the fast path took it.
func compareWire(t *testing.T, name string, b []byte) bool {
	t.Helper()
	want, wantW := NewSet(), &warnings{}
	td, perr := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
	if perr == nil {
		addTraces(want, td, wantW)
	}
	got, gotW := NewSet(), &warnings{}
	// A warning recorded before must survive a refused message unchanged.
	gotW.add("earlier", "from a previous message")
	before := append([]Warning{}, gotW.list...)
	if !newOTLPWire(got, gotW).add(b) {
		if len(got.Spans) != 0 || len(got.Links) != 0 || len(got.strs) != 1 || len(got.index) != 1 ||
			!slices.Equal(gotW.list, before) {
			t.Fatalf("%s: the refused message left %d spans, %d links, %d strings, warnings %v",
				name, len(got.Spans), len(got.Links), len(got.strs), gotW.list)
		}
		return false
	}
	if perr != nil {
		t.Fatalf("%s: the fast path took a message pdata rejects: %v", name, perr)
	}
	if !reflect.DeepEqual(got.Spans, want.Spans) {
		t.Fatalf("%s: spans differ from pdata's:\n%s", name, diffSpanViews(viewSpans(got), viewSpans(want)))
	}
	if !reflect.DeepEqual(got.Links, want.Links) || !reflect.DeepEqual(got.strs, want.strs) {
		t.Fatalf("%s: links or strings differ:\n got  %v %q\n want %v %q", name, got.Links, got.strs, want.Links, want.strs)
	}
	if !slices.Equal(gotW.list[1:], wantW.list) {
		t.Fatalf("%s: warnings %v, pdata's %v", name, gotW.list[1:], wantW.list)
	}
	return true
}

// protoMessages splits a decompressed OTLP protobuf input into messages:
// the frames of a length-prefixed stream, or the input as one message.
func protoMessages(b []byte) [][]byte {
	var out [][]byte
	for rest := b; len(rest) >= 4; {
		n := binary.BigEndian.Uint32(rest)
		if n == 0 || int64(n) > int64(len(rest)-4) {
			break
		}
		out = append(out, rest[4:4+n])
		rest = rest[4+n:]
		if len(rest) == 0 {
			return out
		}
	}
	return [][]byte{b}
}

// jsonMessages turns OTLP JSON (one document, or one per line) into
// protobuf messages through pdata, skipping what pdata's JSON reader refuses.
func jsonMessages(t *testing.T, b []byte) [][]byte {
	var docs [][]byte
	if firstLineIsDocument(bytes.TrimLeft(b, " \t\r\n")) {
		docs = bytes.Split(b, []byte("\n"))
	} else {
		docs = [][]byte{b}
	}
	var out [][]byte
	for _, doc := range docs {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(doc)
		if err != nil || td.SpanCount() == 0 {
			continue
		}
		pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pb)
	}
	return out
}

func gunzipMaybe(t *testing.T, b []byte) []byte {
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// corpusEntries reads the []byte values of a Go fuzz corpus directory.
func corpusEntries(t *testing.T, dir string) [][]byte {
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	var out [][]byte
	for _, n := range names {
		f, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(f))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := sc.Text()
			if q, ok := strings.CutPrefix(line, "[]byte("); ok {
				v, err := strconv.Unquote(strings.TrimSuffix(q, ")"))
				if err != nil {
					t.Fatalf("%s: %v", n, err)
				}
				out = append(out, []byte(v))
			}
		}
	}
	return out
}

// TestOTLPWireMatchesPdata decodes every OTLP message we hold both ways:
// the committed samples (protobuf, and JSON converted to protobuf), every
// OTLP file in the shared real traces, the synthetic benchmark shapes, hand
// made edge cases and every fuzz corpus entry. The samples, real traces and
// synthetic traces must all take the fast path.
func TestOTLPWireMatchesPdata(t *testing.T) {
	type input struct {
		name string
		msgs [][]byte
		fast bool // every message must take the fast path
		// exact: and every message must be refused when fast is false
		exact bool
	}
	var inputs []input
	samples, _ := filepath.Glob(filepath.Join("..", "samples", "*", "traces.otlp.*"))
	if len(samples) == 0 {
		t.Fatal("no samples")
	}
	for _, name := range samples {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		b = gunzipMaybe(t, b)
		if strings.Contains(name, ".binpb") {
			inputs = append(inputs, input{name, protoMessages(b), true, false})
		} else {
			inputs = append(inputs, input{name, jsonMessages(t, b), true, false})
		}
	}
	real, _ := filepath.Glob(filepath.Join("..", "..", "shared", "realtraces", "*"))
	for _, name := range real {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if msgs := jsonMessages(t, b); len(msgs) > 0 {
			inputs = append(inputs, input{name, msgs, true, false})
		}
	}
	for _, gen := range []struct {
		name string
		reqs []ptrace.Traces
	}{{"synth", synth.Requests(3000, 9)}, {"synth-http", synth.HTTPRequests(3000, 9)}} {
		var b bytes.Buffer
		if err := synth.WriteProtoStream(&b, gen.reqs); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{gen.name, protoMessages(b.Bytes()), true, false})
	}
	for _, c := range wireCases() {
		inputs = append(inputs, input{"case " + c.name, [][]byte{c.msg}, c.fast, true})
	}
	for _, dir := range []string{"FuzzDecode", "FuzzOTLPProtoStream", "FuzzOTLPWire"} {
		for i, b := range corpusEntries(t, filepath.Join("testdata", "fuzz", dir)) {
			inputs = append(inputs, input{dir + " #" + strconv.Itoa(i), append(protoMessages(b), b), false, false})
		}
	}
	for _, in := range inputs {
		for i, m := range in.msgs {
			name := in.name + " message " + strconv.Itoa(i)
			took := compareWire(t, name, m)
			switch {
			case in.fast && !took:
				t.Errorf("%s: the fast path refused it", name)
			case in.exact && !in.fast && took:
				t.Errorf("%s: the fast path took it; the case expects pdata to decode it", name)
			}
		}
	}
}

type wireCase struct {
	name string
	msg  []byte
	fast bool
}

// wireCases are messages built to reach each branch of the fast path and
// each shape it leaves to pdata.
func wireCases() []wireCase {
	build := func(fill func(rs ptrace.ResourceSpans, sp ptrace.Span)) []byte {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "api")
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1, 2, 3})
		sp.SetSpanID(pcommon.SpanID{4, 5})
		sp.SetParentSpanID(pcommon.SpanID{6})
		sp.SetName("GET")
		sp.SetKind(ptrace.SpanKindClient)
		sp.SetStartTimestamp(1e18)
		sp.SetEndTimestamp(1e18 + 5e6)
		fill(rs, sp)
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			panic(err)
		}
		return b
	}
	long := strings.Repeat("é", MaxValueBytes)
	cases := []wireCase{
		{"plain", build(func(ptrace.ResourceSpans, ptrace.Span) {}), true},
		{"every kept attribute", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) {
			at := sp.Attributes()
			for k := range attrKeys {
				at.PutStr(k, "7")
			}
			at.PutStr("http.request.header.idempotency-key", "k1")
			at.PutStr("http.response.header.retry-after", "2")
		}), true},
		{"typed values", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) {
			at := sp.Attributes()
			at.PutInt("http.response.status_code", 503)
			at.PutDouble("rpc.grpc.status_code", 14)
			at.PutDouble("retry.count", 1.5)
			at.PutBool("transparent-retry", true)
			at.PutBool("error", true)
			at.PutInt("server.port", 8443)
			at.PutStr("server.address", "inventory")
			at.PutEmptyBytes("peer.service").FromRaw([]byte("x"))
			at.PutEmptyMap("url.full").PutStr("a", "b")
			at.PutEmpty("http.route")
			at.PutEmptySlice("http.request.method").AppendEmpty().SetStr("post")
			at.PutEmptySlice("url.path")
			arr := at.PutEmptySlice("user_agent.original")
			arr.AppendEmpty().SetInt(3)
			arr.AppendEmpty().SetEmptySlice().AppendEmpty().SetEmptyMap().PutDouble("x", 1)
		}), true},
		{"array of ints", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) {
			sp.Attributes().PutEmptySlice("http.route").AppendEmpty().SetInt(3)
		}), false},
		{"status, links, events, long values", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) {
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage(long)
			sp.SetName(long + "x")
			for i := range 3 {
				l := sp.Links().AppendEmpty()
				l.SetTraceID(pcommon.TraceID{byte(i + 1)})
				l.SetSpanID(pcommon.SpanID{9, byte(i)})
				l.Attributes().PutStr("k", "v")
				l.TraceState().FromRaw("a=b")
			}
			ev := sp.Events().AppendEmpty()
			ev.SetName("exception")
			ev.Attributes().PutStr("exception.message", "boom")
			sp.TraceState().FromRaw("x=y")
			sp.SetFlags(1)
			sp.SetDroppedAttributesCount(2)
		}), true},
		{"status ok", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) { sp.Status().SetCode(ptrace.StatusCodeOk) }), true},
		{"otel status attributes", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) {
			sp.Attributes().PutStr("otel.status_code", "ERROR")
			sp.Attributes().PutStr("otel.status_description", "bad")
			sp.SetKind(ptrace.SpanKindUnspecified)
			sp.Attributes().PutStr("span.kind", "server")
		}), true},
		{"unknown kind", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) { sp.SetKind(9) }), true},
		{"kind past a byte", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) { sp.SetKind(259) }), true},
		{"zero ids, end before start", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) {
			sp.SetTraceID(pcommon.TraceID{})
			sp.SetSpanID(pcommon.SpanID{})
			sp.SetEndTimestamp(1)
		}), true},
		{"no service.name", build(func(rs ptrace.ResourceSpans, _ ptrace.Span) { rs.Resource().Attributes().Remove("service.name") }), true},
		{"empty service.name", build(func(rs ptrace.ResourceSpans, _ ptrace.Span) { rs.Resource().Attributes().PutStr("service.name", "") }), true},
		{"service.name an int", build(func(rs ptrace.ResourceSpans, _ ptrace.Span) { rs.Resource().Attributes().PutInt("service.name", 5) }), false},
		{"resource and scope extras", build(func(rs ptrace.ResourceSpans, _ ptrace.Span) {
			rs.Resource().Attributes().PutEmptyMap("k8s").PutStr("pod", "p")
			rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
			sc := rs.ScopeSpans().At(0).Scope()
			sc.SetName("otelhttp")
			sc.SetVersion("0.58.0")
			sc.Attributes().PutStr("a", "b")
		}), true},
	}
	plain := cases[0].msg
	// Raw edits pdata's marshaller cannot produce.
	raw := func(name string, fast bool, parts ...[]byte) {
		cases = append(cases, wireCase{name, bytes.Join(parts, nil), fast})
	}
	field := func(num protowire.Number, typ protowire.Type, v []byte) []byte {
		b := protowire.AppendTag(nil, num, typ)
		if typ == protowire.BytesType {
			return protowire.AppendBytes(b, v)
		}
		return append(b, v...)
	}
	rsWith := func(spanFields ...[]byte) []byte {
		sp := bytes.Join(spanFields, nil)
		ss := field(2, protowire.BytesType, sp)
		rs := field(2, protowire.BytesType, ss)
		return field(1, protowire.BytesType, rs)
	}
	raw("unknown top-level field", true, plain, field(9, protowire.VarintType, []byte{1}))
	raw("group field", false, plain, protowire.AppendTag(nil, 9, protowire.StartGroupType), protowire.AppendTag(nil, 9, protowire.EndGroupType))
	raw("truncated", false, plain[:len(plain)-3])
	raw("trace id of 3 bytes", false, rsWith(field(1, protowire.BytesType, []byte{1, 2, 3})))
	raw("span id of 16 bytes", false, rsWith(field(2, protowire.BytesType, make([]byte, 16))))
	raw("kind as bytes", false, rsWith(field(6, protowire.BytesType, []byte{3})))
	raw("repeated status", false, rsWith(field(15, protowire.BytesType, nil), field(15, protowire.BytesType, nil)))
	raw("repeated name", true, rsWith(field(5, protowire.BytesType, []byte("a")), field(5, protowire.BytesType, []byte("b"))))
	raw("event with bad attribute", false, rsWith(field(11, protowire.BytesType, field(3, protowire.BytesType, []byte{0xff}))))
	raw("link id of 5 bytes", false, rsWith(field(13, protowire.BytesType, field(1, protowire.BytesType, make([]byte, 5)))))
	raw("deprecated library spans", false, field(1, protowire.BytesType, field(1000, protowire.BytesType, nil)))
	raw("attribute key as index", false, rsWith(field(9, protowire.BytesType, field(3, protowire.VarintType, []byte{1}))))
	raw("value given twice", false, rsWith(field(9, protowire.BytesType, bytes.Join([][]byte{
		field(1, protowire.BytesType, []byte("http.route")),
		field(2, protowire.BytesType, field(1, protowire.BytesType, []byte("/a"))),
		field(2, protowire.BytesType, field(3, protowire.VarintType, []byte{1}))}, nil))))
	raw("last oneof wins", true, rsWith(field(9, protowire.BytesType, bytes.Join([][]byte{
		field(1, protowire.BytesType, []byte("http.route")),
		field(2, protowire.BytesType, bytes.Join([][]byte{
			field(3, protowire.VarintType, []byte{1}),
			field(1, protowire.BytesType, []byte("/b"))}, nil))}, nil))))
	raw("over-long varint", false, rsWith(field(6, protowire.VarintType, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})))
	raw("huge field number", false, protowire.AppendVarint(nil, uint64(1)<<35|uint64(protowire.BytesType)), []byte{0})
	deep := field(1, protowire.BytesType, []byte("s"))
	for range 40 {
		deep = field(5, protowire.BytesType, field(1, protowire.BytesType, deep))
	}
	raw("deeply nested value", false, rsWith(field(9, protowire.BytesType, bytes.Join([][]byte{
		field(1, protowire.BytesType, []byte("x")), field(2, protowire.BytesType, deep)}, nil))))
	return cases
}

// FuzzOTLPWire holds the protowire fast path to pdata on arbitrary bytes:
// whatever it takes, pdata takes and decodes identically.
func FuzzOTLPWire(f *testing.F) {
	for _, c := range wireCases() {
		f.Add(c.msg)
	}
	var b bytes.Buffer
	if err := synth.WriteProtoStream(&b, synth.HTTPRequests(20, 4)); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes()[4:])
	f.Fuzz(func(t *testing.T, b []byte) {
		compareWire(t, "fuzz", b)
	})
}
