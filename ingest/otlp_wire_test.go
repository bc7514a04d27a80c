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
// addTraces and the protowire fast path, and fails unless they agree (see
// sameAsPdata), so that whatever the fast path refuses the pdata fallback
// alone decides. It reports whether the fast path took it.
func compareWire(t *testing.T, name string, b []byte) bool {
	t.Helper()
	want, wantW := NewSet(), &warnings{}
	td, perr := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
	if perr == nil {
		mustAdd(t, addTraces(want, td, wantW))
	}
	return sameAsPdata(t, name, want, wantW, perr, parsed(t, (*fastOTLP).proto, b))
}

// parsed is the fast path on input b: parse into a fresh batch, then add
// it to the Set; false when the parse refuses b.
func parsed(t *testing.T, parse func(*fastOTLP, []byte) bool, b []byte) func(*Set, *warnings) bool {
	return func(set *Set, w *warnings) bool {
		var d fastOTLP
		if !parse(&d, b) {
			return false
		}
		mustAdd(t, d.apply(set, w))
		return true
	}
}

// sameAsPdata runs a fast path (fast) on a fresh Set and fails unless it
// agrees with pdata's result (want, wantW, perr): when it takes the input,
// pdata must have taken it too, with identical spans, links, string table
// and warnings; when it refuses, its Set and warnings must be untouched.
func sameAsPdata(t *testing.T, name string, want *Set, wantW *warnings, perr error, fast func(*Set, *warnings) bool) bool {
	t.Helper()
	got, gotW := NewSet(), &warnings{}
	// A warning recorded before must survive a refused input unchanged.
	gotW.add("earlier", "from a previous message")
	before := append([]Warning{}, gotW.list...)
	if !fast(got, gotW) {
		if len(got.Spans) != 0 || len(got.Links) != 0 || len(got.strs) != 1 || len(got.index) != 1 ||
			!slices.Equal(gotW.list, before) {
			t.Fatalf("%s: the refused input left %d spans, %d links, %d strings, warnings %v",
				name, len(got.Spans), len(got.Links), len(got.strs), gotW.list)
		}
		return false
	}
	if perr != nil {
		t.Fatalf("%s: the fast path took an input pdata rejects: %v", name, perr)
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

// compareSequence decodes a sequence of messages into one Set both ways:
// pdata alone, and one batch reused for every message as the stream
// decoders reuse theirs (parse, then pdata for what the parse refuses), and
// fails unless the Sets are identical.
func compareSequence(t *testing.T, name string, msgs [][]byte, parse func(*fastOTLP, []byte) bool, pdata func([]byte) (ptrace.Traces, error)) {
	t.Helper()
	want, wantW := NewSet(), &warnings{}
	var ok [][]byte
	for _, m := range msgs {
		if td, err := pdata(m); err == nil {
			mustAdd(t, addTraces(want, td, wantW))
			ok = append(ok, m)
		}
	}
	sameAsPdata(t, name+" as a sequence", want, wantW, nil, func(set *Set, w *warnings) bool {
		var d fastOTLP
		for _, m := range ok {
			if !parse(&d, m) {
				td, _ := pdata(m)
				d.td = append(d.td, td)
			}
			mustAdd(t, d.apply(set, w))
		}
		return true
	})
}

// mustAdd fails the test when adding spans reached a limit, which no input
// here should.
func mustAdd(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
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
		compareSequence(t, in.name, in.msgs, (*fastOTLP).proto, func(m []byte) (ptrace.Traces, error) {
			return (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(m)
		})
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
		{"sampling", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) {
			sp.TraceState().FromRaw("vendor=x,ot=th:8")
			sp.Attributes().PutStr("sampler.type", "probabilistic")
			sp.Attributes().PutDouble("sampler.param", 1)
		}), true},
		{"sampler param an int", build(func(_ ptrace.ResourceSpans, sp ptrace.Span) {
			sp.Attributes().PutStr("sampler.type", "const")
			sp.Attributes().PutInt("sampler.param", 1)
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

// compareJSON is compareWire for the OTLP JSON fast path, against pdata
// with the dialect normalisation (decodeOTLPJSONDoc) then addTraces.
func compareJSON(t *testing.T, name string, doc []byte) bool {
	t.Helper()
	want, wantW := NewSet(), &warnings{}
	perr := decodeOTLPJSONDoc(doc, func(td ptrace.Traces, _ func(error) error) error {
		return addTraces(want, td, wantW)
	}, func(_ int64, err error) error { return err })
	return sameAsPdata(t, name, want, wantW, perr, parsed(t, (*fastOTLP).json, doc))
}

// pdataJSONDoc decodes one OTLP JSON document as the pdata path does.
func pdataJSONDoc(doc []byte) (ptrace.Traces, error) {
	var out ptrace.Traces
	err := decodeOTLPJSONDoc(doc, func(td ptrace.Traces, _ func(error) error) error {
		out = td
		return nil
	}, func(_ int64, err error) error { return err })
	return out, err
}

// jsonDocs splits OTLP JSON into its documents: lines, or the whole.
func jsonDocs(b []byte) [][]byte {
	if !firstLineIsDocument(bytes.TrimLeft(b, " \t\r\n")) {
		return [][]byte{b}
	}
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// TestOTLPJSONFastMatchesPdata is TestOTLPWireMatchesPdata for OTLP JSON:
// every sample, real trace, synthetic trace, hand-made case and fuzz corpus
// entry decoded both ways. Samples and synthetic traces must take the fast
// path.
func TestOTLPJSONFastMatchesPdata(t *testing.T) {
	check := func(name string, doc []byte, fast bool) bool {
		took := compareJSON(t, name, doc)
		if fast && !took {
			t.Errorf("%s: the fast path refused it", name)
		}
		return took
	}
	samples, _ := filepath.Glob(filepath.Join("..", "samples", "*", "traces.otlp.jsonl*"))
	for _, name := range samples {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		docs := jsonDocs(gunzipMaybe(t, b))
		compareSequence(t, name, docs, (*fastOTLP).json, pdataJSONDoc)
		for i, doc := range docs {
			check(name+" document "+strconv.Itoa(i), doc, true)
		}
	}
	real, _ := filepath.Glob(filepath.Join("..", "..", "shared", "realtraces", "*otlp*"))
	for _, name := range real {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range jsonDocs(b) {
			if !check(name+" document "+strconv.Itoa(i), doc, false) {
				t.Logf("%s document %d: decoded by pdata", name, i)
			}
		}
	}
	for _, reqs := range [][]ptrace.Traces{synth.Requests(2000, 9), synth.HTTPRequests(2000, 9)} {
		var b bytes.Buffer
		if err := synth.WriteJSONLines(&b, reqs); err != nil {
			t.Fatal(err)
		}
		docs := jsonDocs(b.Bytes())
		compareSequence(t, "synth", docs, (*fastOTLP).json, pdataJSONDoc)
		for i, doc := range docs {
			check("synth document "+strconv.Itoa(i), doc, true)
		}
	}
	for _, c := range jsonCases(t) {
		if took := check("case "+c.name, c.msg, c.fast); !c.fast && took {
			t.Errorf("case %s: the fast path took it; the case expects pdata to decode it", c.name)
		}
	}
	for _, dir := range []string{"FuzzDecode", "FuzzOTLPJSON", "FuzzOTLPJSONFast"} {
		for i, b := range corpusEntries(t, filepath.Join("testdata", "fuzz", dir)) {
			for j, doc := range append(jsonDocs(b), b) {
				check(dir+" #"+strconv.Itoa(i)+"/"+strconv.Itoa(j), doc, false)
			}
		}
	}
}

// jsonCases are the protobuf cases as pdata writes them in JSON, and edits
// of the canonical form into the dialects the fast path leaves to pdata.
func jsonCases(t testing.TB) []wireCase {
	var out []wireCase
	for _, c := range wireCases() {
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(c.msg)
		if err != nil {
			continue
		}
		doc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		// Cases the protobuf path refuses only for protobuf reasons
		// are fine in JSON.
		fast := c.fast || c.name == "repeated status" || c.name == "value given twice"
		if c.name == "service.name an int" || c.name == "array of ints" {
			fast = false
		}
		if c.name == "typed values" || c.name == "sampling" {
			fast = false // holds a double for a key the audit reads
		}
		out = append(out, wireCase{c.name, doc, fast})
	}
	canonical := request(span("3", str("peer.service", "inventory")+","+num("http.response.status_code", 503)))
	edit := func(name string, fast bool, pairs ...string) {
		out = append(out, wireCase{name, []byte(strings.NewReplacer(pairs...).Replace(canonical)), fast})
	}
	edit("canonical", true)
	edit("pretty", true, `,"`, ",\n  \"", `{"`, "{ \"", `":`, `" : `)
	edit("trailing newline", true, `]}]}]}`, "]}]}]}\r\n")
	edit("escapes", true, `"name":"GET"`, `"name":"G\u00e9T \"x\"\n\t\\\/"`)
	edit("raw UTF-8", true, `"name":"GET"`, `"name":"GÉT ✓"`)
	edit("surrogate escape", false, `"name":"GET"`, `"name":"\ud83d\ude00"`)
	edit("control character", false, `"name":"GET"`, "\"name\":\"G\tT\"")
	edit("int as number", true, `{"intValue":"503"}`, `{"intValue":503}`)
	edit("int with plus", true, `{"intValue":"503"}`, `{"intValue":"+503"}`)
	edit("int not a number", false, `{"intValue":"503"}`, `{"intValue":"5x"}`)
	edit("int leading zero", false, `{"intValue":"503"}`, `{"intValue":0503}`)
	edit("double status", false, `{"intValue":"503"}`, `{"doubleValue":503}`)
	edit("double unread", true, `"key":"peer.service","value":{"stringValue":"inventory"}`, `"key":"x","value":{"doubleValue":-0.5}`)
	edit("double with exponent", false, `"key":"peer.service","value":{"stringValue":"inventory"}`, `"key":"x","value":{"doubleValue":5e3}`)
	edit("bytes value", false, `{"stringValue":"inventory"}`, `{"bytesValue":"aGk="}`)
	edit("bool values", true, `{"stringValue":"inventory"}`, `{"boolValue":true}`)
	edit("empty value", true, `{"stringValue":"inventory"}`, `{}`)
	edit("two values", true, `{"stringValue":"inventory"}`, `{"stringValue":"a","intValue":"1"}`)
	edit("times as numbers", true, `"1706678909209712000"`, `1706678909209712000`)
	edit("time overflows", false, `"1706678909209712000"`, `"99999999999999999999"`)
	edit("kind name", false, `"kind":3`, `"kind":"SPAN_KIND_CLIENT"`)
	edit("kind negative", false, `"kind":3`, `"kind":-1`)
	edit("kind large", true, `"kind":3`, `"kind":300`)
	edit("status code", true, `"status":{}`, `"status":{"code":2,"message":"boom"}`)
	edit("status code name", false, `"status":{}`, `"status":{"code":"STATUS_CODE_ERROR"}`)
	edit("snake_case", false, `traceId`, `trace_id`)
	edit("base64 id", false, `"83a9efd15c1c98a977e0711cc93ee28b"`, `"g6nv0VwcmKl34HEcyT7iiw=="`)
	edit("uppercase hex id", true, `"83a9efd15c1c98a977e0711cc93ee28b"`, `"83A9EFD15C1C98A977E0711CC93EE28B"`)
	edit("empty ids", true, `"e127af99e3b3e074"`, `""`, `"909541b92cf05311"`, `""`)
	edit("short id", false, `"e127af99e3b3e074"`, `"e127af99"`)
	edit("unknown key", false, `"name":"GET"`, `"name":"GET","futureField":1`)
	edit("duplicate key", false, `"name":"GET"`, `"name":"GET","name":"PUT"`)
	edit("null", false, `"status":{}`, `"status":null`)
	edit("trailing garbage", false, `]}]}]}`, `]}]}]} x`)
	edit("trailing comma", false, `"status":{}`, `"status":{},`)
	edit("resource after spans", false, `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},"scopeSpans":[`,
		`{"scopeSpans":[`, `]}]}]}`, `]}],"resource":{}}]}`)
	edit("no resource", true, `"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},`, ``)
	edit("links and events", true, `"status":{}`, `"status":{},"links":[{"traceId":"83a9efd15c1c98a977e0711cc93ee28b","spanId":"e127af99e3b3e074","attributes":[{"key":"a","value":{"kvlistValue":{"values":[{"key":"b","value":{"arrayValue":{"values":[{"stringValue":"c"}]}}}]}}}]}],"events":[{"timeUnixNano":"1","name":"e","attributes":[]}],"droppedEventsCount":2`)
	edit("array attribute", true, `{"stringValue":"inventory"}`, `{"arrayValue":{"values":[{"stringValue":"a"},{"intValue":"2"}]}}`)
	edit("empty array attribute", true, `{"stringValue":"inventory"}`, `{"arrayValue":{}}`)
	edit("instrumentationLibrarySpans", false, `scopeSpans`, `instrumentationLibrarySpans`)
	return out
}

// FuzzOTLPJSONFast holds the OTLP JSON fast path to pdata on arbitrary
// bytes.
func FuzzOTLPJSONFast(f *testing.F) {
	for _, c := range jsonCases(f) {
		f.Add(c.msg)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		compareJSON(t, "fuzz", b)
	})
}
