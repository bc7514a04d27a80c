package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	model "github.com/jaegertracing/jaeger-idl/model/v1"
)

// decodeJaegerJSON decodes Jaeger JSON: the UI download / query API response
// {"data":[trace, ...], "errors":[...]}, a bare trace object
// {"traceID", "spans", "processes", "warnings"}, a top-level array of traces,
// or several such documents in a row. It also reads the protobuf-JSON
// (jsonpb) rendering of the jaeger-idl model — {"spans":[...], "process":{}}
// (a Batch) or {"spans":[...], "processMap":[...]} (a Trace), with base64
// ids, RFC 3339 start times, "0.000100s" durations and vType/vStr tags —
// telling the dialects apart value by value.
//
// It streams: the top levels are walked token by token and each span is
// decoded and converted on its own, so memory holds one span (and one
// trace's process table) at a time, each value bounded by MaxDocumentBytes.
func decodeJaegerJSON(s *source, set *Set, w *warnings) error {
	d := &jaegerJSON{jsonStream: newJSONStream(s, "Jaeger JSON"), set: set, j: newJaegerSpans(set, w)}
	for {
		at := d.valueStart()
		tok, err := d.token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			err = d.object(true)
		case json.Delim('['):
			err = d.traces()
		default:
			err = d.s.errAt(d.base+at, fmt.Errorf("Jaeger JSON: expected an object or an array of traces, found %v", tok))
		}
		if err != nil {
			return err
		}
	}
}

// jaegerJSON is the state of one Jaeger JSON input being decoded.
type jaegerJSON struct {
	*jsonStream
	set   *Set
	j     *jaegerSpans
	sp    jSpan // the span being decoded, reused
	spans int   // spans decoded, for periodic cancellation checks
}

// jsonStream walks one JSON input token by token, every value bounded by
// MaxDocumentBytes, and positions its errors as input offsets. dialect names
// the format in errors.
type jsonStream struct {
	s       *source
	dec     *json.Decoder
	lim     *docLimit
	base    int64 // input offset of the decoder's first byte
	depth   int   // open objects and arrays, to tell a clean end from a cut one
	dialect string
}

func newJSONStream(s *source, dialect string) *jsonStream {
	lim := &docLimit{r: s.r}
	return &jsonStream{s: s, dec: json.NewDecoder(lim), lim: lim, base: s.offset(), dialect: dialect}
}

// jPending is a span whose service waits for its trace's process table.
type jPending struct {
	idx int    // index in Set.Spans
	pid string // its processID
}

// jTraceInfo is what a trace object carries besides its spans.
type jTraceInfo struct {
	traceID    jTraceID
	processes  jProcesses             // UI: processID → process
	processMap jList[jProcessMapping] // protobuf JSON Trace
	process    *jProcess              // protobuf JSON Batch
	warnings   jList[string]
	pending    []jPending
}

// object walks a JSON object whose '{' has been read. At the top level it
// may be a query response ({"data":[...], "errors":[...]}); at any level it
// may be a trace. Query errors fail the input when no span came with them.
func (d *jaegerJSON) object(top bool) error {
	t := jTraceInfo{
		processes:  jProcesses{lim: d.s.lim},
		processMap: jList[jProcessMapping]{lim: d.s.lim, what: "processes in one trace"},
		warnings:   jList[string]{lim: d.s.lim, what: "warnings in one trace"},
	}
	qerrList := jList[jQueryError]{lim: d.s.lim, what: "errors in one query response"}
	var errsAt int64
	spansBefore := len(d.set.Spans)
	for d.dec.More() {
		key, err := d.key()
		if err != nil {
			return err
		}
		switch k := strings.ToLower(key); {
		case k == "spans":
			err = d.spanArray(&t)
		case k == "traceid":
			_, err = d.decode(&t.traceID, "traceID")
		case k == "processes":
			_, err = d.decode(&t.processes, "processes")
		case k == "processmap":
			_, err = d.decode(&t.processMap, "processMap")
		case k == "process":
			_, err = d.decode(&t.process, "process")
		case k == "warnings":
			_, err = d.decode(&t.warnings, "warnings")
		case top && k == "data":
			err = d.data()
		case top && k == "errors":
			errsAt, err = d.decode(&qerrList, "errors")
		default:
			var skip json.RawMessage
			_, err = d.decode(&skip, key)
		}
		if err != nil {
			return err
		}
	}
	if _, err := d.token(); err != nil { // '}'
		return err
	}
	d.endTrace(&t)
	if qerrs := qerrList.v; len(qerrs) > 0 {
		if len(d.set.Spans) == spansBefore {
			more := ""
			if len(qerrs) > 1 {
				more = fmt.Sprintf(" (and %d more)", len(qerrs)-1)
			}
			return d.s.errAt(d.base+errsAt, fmt.Errorf("Jaeger query response holds no traces, only errors: %s%s", qerrs[0], more))
		}
		for _, e := range qerrs {
			d.j.w.add("jaeger query error", "%s", e)
		}
	}
	return nil
}

// endTrace resolves the services of the trace's spans once its processes
// are known (the UI writes them after the spans) and keeps its warnings.
func (d *jaegerJSON) endTrace(t *jTraceInfo) {
	d.j.beginTrace()
	for id, p := range t.processes.m {
		d.j.addProcess(id, p.proc())
	}
	for _, m := range t.processMap.v {
		d.j.addProcess(m.ProcessID, m.Process.proc())
	}
	if t.process != nil {
		d.j.setBatchProcess(t.process.proc())
	}
	for _, p := range t.pending {
		sp := &d.set.Spans[p.idx]
		d.j.resolve(sp, p.pid)
	}
	for _, msg := range t.warnings.v {
		d.j.warning("trace "+TraceID(t.traceID.id).String(), msg)
	}
}

// data reads the value of a query response's "data" key: null or an array
// of traces.
func (d *jaegerJSON) data() error {
	if ok, err := d.openArray("data: expected an array of traces"); !ok {
		return err
	}
	return d.traces()
}

// openArray reads the start of a value that must be null or an array: ok
// is true when an array's '[' was read; a null gives false and no error,
// anything else an error saying what was expected.
func (d *jsonStream) openArray(expected string) (ok bool, err error) {
	at := d.valueStart()
	tok, err := d.token()
	switch {
	case err != nil:
		return false, err
	case tok == nil:
		return false, nil
	case tok != json.Delim('['):
		return false, d.s.errAt(d.base+at, fmt.Errorf("%s: %s, found %v", d.dialect, expected, tok))
	}
	return true, nil
}

// traces reads the elements of an array of trace objects whose '[' has been
// read, and its ']'.
func (d *jaegerJSON) traces() error {
	for d.dec.More() {
		if err := d.s.ctx.Err(); err != nil {
			return err
		}
		at := d.valueStart()
		tok, err := d.token()
		if err != nil {
			return err
		}
		if tok != json.Delim('{') {
			return d.s.errAt(d.base+at, fmt.Errorf("Jaeger JSON: expected a trace object, found %v", tok))
		}
		if err := d.object(false); err != nil {
			return err
		}
	}
	_, err := d.token() // ']'
	return err
}

// spanArray decodes a trace's "spans" value, converting each span as soon as
// it is read.
func (d *jaegerJSON) spanArray(t *jTraceInfo) error {
	if ok, err := d.openArray("spans: expected an array"); !ok {
		return err
	}
	for d.dec.More() {
		if d.spans++; d.spans%1024 == 0 {
			if err := d.s.ctx.Err(); err != nil {
				return err
			}
		}
		d.sp.reset(d.s.lim)
		start, err := d.decode(&d.sp, "span")
		if err != nil {
			return err
		}
		if err := d.addSpan(start, t); err != nil {
			return err
		}
	}
	_, err := d.token() // ']'
	return err
}

// addSpan converts the span just decoded, which started at input offset
// start. A span without an inline process waits for the trace's processes.
func (d *jaegerJSON) addSpan(start int64, t *jTraceInfo) error {
	js, j := &d.sp, d.j
	sp := Record{Span: Span{TraceID: js.TraceID.id, SpanID: js.SpanID.id, Start: js.StartTime.ns}}
	end, err := spanEnd(sp.Start, js.Duration.ns)
	if err != nil {
		return d.s.errAt(d.base+start, fmt.Errorf("Jaeger JSON: span %s: %w", sp.SpanID, err))
	}
	sp.End = end
	j.begin()
	for i := range js.References.v {
		r := &js.References.v[i]
		trace := TraceID(r.TraceID.id)
		if trace.IsZero() { // a reference naming no trace points into the span's own
			trace = sp.TraceID
		}
		j.ref(&sp, !r.RefType.other, trace, r.SpanID.id)
	}
	var kv model.KeyValue
	for i := range js.Tags.v {
		if js.Tags.v[i].keyValue(&kv) {
			j.tag(&kv)
		}
	}
	for _, msg := range js.Warnings.v {
		j.warning("span "+sp.SpanID.String(), msg)
	}
	if js.Process != nil {
		p := js.Process.proc()
		sp.Service = j.named(p.service, sp.SpanID)
		p.apply(d.set, &sp.Span, j.w)
	} else {
		t.pending = append(t.pending, jPending{idx: len(d.set.Spans), pid: js.ProcessID})
	}
	if err := j.finish(&sp, js.OperationName, js.ParentSpanID.id); err != nil {
		return d.s.errAt(d.base+start, fmt.Errorf("Jaeger JSON: span %s: %w", sp.SpanID, err))
	}
	return nil
}

// key reads an object key.
func (d *jsonStream) key() (string, error) {
	at := d.valueStart()
	tok, err := d.token()
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", d.s.errAt(d.base+at, fmt.Errorf("%s: expected an object key, found %v", d.dialect, tok))
	}
	return k, nil
}

// token reads the next token, bounded by the document limit. It returns
// io.EOF only at a clean end of input (outside any object or array); every
// other error names its offset.
func (d *jsonStream) token() (json.Token, error) {
	d.lim.allow(d.dec.InputOffset() + d.s.maxDoc)
	tok, err := d.dec.Token()
	if err != nil {
		if err == io.EOF && d.depth == 0 {
			return nil, io.EOF
		}
		return nil, d.tokenErr(err)
	}
	switch tok {
	case json.Delim('{'), json.Delim('['):
		d.depth++
	case json.Delim('}'), json.Delim(']'):
		d.depth--
	}
	return tok, nil
}

// decode reads the next value into v, bounded by the document limit, and
// returns the input offset (relative to the decoder) where the value starts.
// what names the value in errors.
func (d *jsonStream) decode(v any, what string) (int64, error) {
	data, start := d.valuePos()
	d.lim.allow(d.dec.InputOffset() + d.s.maxDoc)
	if err := d.dec.Decode(v); err != nil {
		return start, d.decodeErr(data, start, what, err)
	}
	return start, nil
}

// valueStart is the decoder-relative offset where the next value begins:
// the decoder's position past any white space and the ',' or ':' before the
// value that it has buffered.
func (d *jsonStream) valueStart() int64 {
	_, start := d.valuePos()
	return start
}

// valuePos returns where the bytes Decoder.Decode reads for the next value
// begin (data: past the ',' or ':' before it, which Decode consumes first,
// but before the white space it then reads with the value, so the offsets
// of its type errors count from there) and where the value itself begins
// (start: past that white space too).
func (d *jsonStream) valuePos() (data, start int64) {
	off := d.dec.InputOffset()
	data = off
	r, ok := d.dec.Buffered().(io.ByteReader)
	if !ok {
		return data, off
	}
	sep := false
	for {
		c, err := r.ReadByte()
		if err != nil {
			return data, off
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		case (c == ',' || c == ':') && !sep:
			sep = true
			data = off + 1
		default:
			return data, off
		}
		off++
	}
}

// tokenErr positions an error from Decoder.Token: the first byte that is not
// white space where the decoder stopped, or the end of input when the input
// ends inside a token or structure.
func (d *jsonStream) tokenErr(err error) error {
	rest := d.buffered()
	skip := len(rest) - len(bytes.TrimLeft(rest, " \t\r\n"))
	off := d.base + d.dec.InputOffset() + int64(skip)
	var se *json.SyntaxError
	switch {
	case errors.Is(err, errDocLimit):
		return d.s.errAt(off, fmt.Errorf("%s: a token exceeds the %d byte document limit", d.dialect, d.s.maxDoc))
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		end := d.base + d.dec.InputOffset() + int64(len(rest))
		return d.s.errAt(end, fmt.Errorf("%s: unexpected end of input", d.dialect))
	case errors.As(err, &se):
		return d.s.errAt(off, fmt.Errorf("%s: %s", d.dialect, se.Error()))
	}
	return d.s.errAt(off, fmt.Errorf("%s: %w", d.dialect, err))
}

// decodeErr positions an error from Decoder.Decode of the value starting at
// decoder-relative offset start, whose bytes as Decode read them (white
// space before the value included) begin at data. Syntax errors are found
// again by scanning what the decoder still holds (its own offsets are not
// stream positions once Token has been used); type errors carry their
// offset in the bytes Decode read.
func (d *jsonStream) decodeErr(data, start int64, what string, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, errDocLimit):
		return d.s.errAt(d.base+start, fmt.Errorf("%s: %s exceeds the %d byte document limit", d.dialect, what, d.s.maxDoc))
	case errors.As(err, &se) || err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		off, msg := d.rescan()
		return d.s.errAt(d.base+off, fmt.Errorf("%s: %s: %s", d.dialect, what, msg))
	case errors.As(err, &te):
		return d.s.errAt(d.base+data+te.Offset, fmt.Errorf("%s: %s: %w", d.dialect, what, err))
	}
	return d.s.errAt(d.base+start, fmt.Errorf("%s: %s: %w", d.dialect, what, err))
}

// rescan locates a syntax error in the value the decoder failed to read,
// which it still holds unconsumed. A value that scans cleanly means the
// separator before it was wrong, at the value's first byte.
func (d *jsonStream) rescan() (int64, string) {
	off := d.dec.InputOffset()
	rest := d.buffered()
	skip := int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n")))
	if len(bytes.TrimSpace(rest)) == 0 {
		return off + int64(len(rest)), "unexpected end of input"
	}
	var raw json.RawMessage
	if json.NewDecoder(bytes.NewReader(rest)).Decode(&raw) == nil {
		return off + skip, "expected ',' or ':' before this value"
	}
	var se *json.SyntaxError
	if err := json.Unmarshal(rest, &raw); errors.As(err, &se) {
		if se.Offset >= int64(len(rest)) {
			return off + int64(len(rest)), "unexpected end of input"
		}
		return off + se.Offset - 1, se.Error() // Offset counts the bad byte as read
	}
	return off + skip, "invalid JSON"
}

// buffered returns a copy of what the decoder has read but not consumed.
func (d *jsonStream) buffered() []byte {
	b, _ := io.ReadAll(d.dec.Buffered())
	return b
}

// errDocLimit is what docLimit returns once a value outgrows its bound.
var errDocLimit = errors.New("document limit reached")

// docLimit lets the JSON decoder read at most up to a moving bound: the
// start of the value it reads plus MaxDocumentBytes, so that no single
// value (a span, a process table, a skipped key) is buffered past the limit.
type docLimit struct {
	r      io.Reader
	n, max int64
}

// allow moves the bound to max bytes from the decoder's start.
func (l *docLimit) allow(max int64) { l.max = max }

// Read reads up to the bound, then fails with errDocLimit.
func (l *docLimit) Read(p []byte) (int, error) {
	if l.n >= l.max {
		return 0, errDocLimit
	}
	if rem := l.max - l.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}

// jSpan is one span in either JSON dialect. encoding/json matches keys
// case-insensitively, so traceID and traceId, processID and processId land
// in the same fields; the value types accept both dialects' encodings.
type jSpan struct {
	TraceID       jTraceID      `json:"traceID"`
	SpanID        jSpanID       `json:"spanID"`
	ParentSpanID  jSpanID       `json:"parentSpanID"` // older exports, before references
	OperationName string        `json:"operationName"`
	References    jList[jRef]   `json:"references"`
	StartTime     jStart        `json:"startTime"`
	Duration      jDuration     `json:"duration"`
	Tags          jList[jTag]   `json:"tags"`
	ProcessID     string        `json:"processID"`
	Process       *jProcess     `json:"process"` // inline: UI-enriched exports and protobuf JSON
	Warnings      jList[string] `json:"warnings"`
}

// reset zeroes the span for the next decode, keeping the capacity of its tag
// and reference slices (encoding/json decodes into existing elements without
// zeroing them, hence the clear), and bounds its lists by lim.
func (s *jSpan) reset(lim *Limits) {
	tags, refs := s.Tags.v[:cap(s.Tags.v)], s.References.v[:cap(s.References.v)]
	clear(tags)
	clear(refs)
	*s = jSpan{
		Tags:       jList[jTag]{v: tags[:0], lim: lim, what: "tags in one span"},
		References: jList[jRef]{v: refs[:0], lim: lim, what: "references in one span"},
		Warnings:   jList[string]{lim: lim, what: "warnings in one span"},
	}
}

// jList is a JSON array of a span's that is decoded only when it holds at
// most max elements: encoding/json would otherwise allocate every element
// of a span made of millions of empty tags.
type jList[T any] struct {
	v    []T
	lim  *Limits
	what string
}

// UnmarshalJSON counts the elements, then decodes them. A list decoded
// inside a value the decoder creates itself (a process in a process
// table) has no limits set and takes the defaults.
func (l *jList[T]) UnmarshalJSON(data []byte) error {
	lim, what := l.lim, l.what
	if lim == nil {
		lim, what = &defaultLimits, "tags in one process"
	}
	if err := lim.attributes(jsonElements(data), what); err != nil {
		return err
	}
	return json.Unmarshal(data, &l.v)
}

// jsonElements counts the elements of the JSON array or members of the
// object in data (valid JSON: encoding/json has scanned it) by its
// top-level commas.
func jsonElements(data []byte) int {
	n, depth, empty := 0, 0, true
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			if depth == 1 {
				empty = false
			}
			if end := stringEnd(data, i+1); end >= 0 {
				i = end
			}
		case '{', '[':
			if depth == 1 {
				empty = false
			}
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 1 {
				n++
			}
		case ' ', '\t', '\r', '\n':
		default:
			if depth == 1 {
				empty = false
			}
		}
	}
	if empty {
		return 0
	}
	return n + 1
}

// jRef is a span reference.
type jRef struct {
	RefType jRefType `json:"refType"`
	TraceID jTraceID `json:"traceID"`
	SpanID  jSpanID  `json:"spanID"`
}

// jProcess is a process; its service name and sampler tags matter.
type jProcess struct {
	ServiceName string      `json:"serviceName"`
	Tags        jList[jTag] `json:"tags"` // bounded by the default MaxAttributes
}

func (p *jProcess) proc() jProc {
	var kv model.KeyValue
	return newJProc(p.ServiceName, len(p.Tags.v), func(i int) (string, string) {
		if !p.Tags.v[i].keyValue(&kv) {
			return "", ""
		}
		return kv.Key, kv.AsString()
	})
}

// jProcesses is a trace's process table, decoded only when it holds at
// most MaxAttributes entries.
type jProcesses struct {
	m   map[string]jProcess
	lim *Limits
}

// UnmarshalJSON counts the entries, then decodes them.
func (p *jProcesses) UnmarshalJSON(data []byte) error {
	if err := p.lim.attributes(jsonElements(data), "processes in one trace"); err != nil {
		return err
	}
	return json.Unmarshal(data, &p.m)
}

// jProcessMapping is one entry of a protobuf-JSON Trace's processMap.
type jProcessMapping struct {
	ProcessID string   `json:"processID"`
	Process   jProcess `json:"process"`
}

// jQueryError is one entry of a query response's errors.
type jQueryError struct {
	Code json.RawMessage `json:"code"`
	Msg  string          `json:"msg"`
}

// String renders "error 404: trace not found", or the message alone.
func (e jQueryError) String() string {
	if len(e.Code) == 0 || string(e.Code) == "null" {
		return strconv.Quote(e.Msg)
	}
	return fmt.Sprintf("error %s: %q", e.Code, e.Msg)
}

// jTag is a tag in either dialect: UI {key, type, value} or protobuf JSON
// {key, vType, vStr | vBool | vInt64 | vFloat64}.
type jTag struct {
	Key      string `json:"key"`
	Type     jVType `json:"type"`
	Value    jValue `json:"value"`
	VType    jVType `json:"vType"`
	VStr     jValue `json:"vStr"`
	VBool    jValue `json:"vBool"`
	VInt64   jValue `json:"vInt64"`
	VFloat64 jValue `json:"vFloat64"`
}

// keyValue fills kv from the tag and reports whether it carries a usable
// value. The declared type wins when the value fits it (int64 503 or "503");
// otherwise the JSON type of the value decides (a string stays a string).
func (t *jTag) keyValue(kv *model.KeyValue) bool {
	*kv = model.KeyValue{Key: t.Key}
	v, vt := t.Value, t.Type
	if !t.Type.present && t.Value.kind == jAbsent {
		v, vt = t.protoValue()
	}
	if vt.known {
		switch vt.vt {
		case model.ValueType_INT64:
			if n, ok := v.asInt(); ok {
				kv.VType, kv.VInt64 = model.ValueType_INT64, n
				return true
			}
		case model.ValueType_FLOAT64:
			if f, ok := v.asFloat(); ok {
				kv.VType, kv.VFloat64 = model.ValueType_FLOAT64, f
				return true
			}
		case model.ValueType_BOOL:
			if b, ok := v.asBool(); ok {
				kv.VType, kv.VBool = model.ValueType_BOOL, b
				return true
			}
		case model.ValueType_BINARY:
			return false
		}
	}
	switch v.kind {
	case jString:
		kv.VType, kv.VStr = model.ValueType_STRING, v.s
	case jInt:
		kv.VType, kv.VInt64 = model.ValueType_INT64, v.n
	case jFloat:
		kv.VType, kv.VFloat64 = model.ValueType_FLOAT64, v.f
	case jBool:
		kv.VType, kv.VBool = model.ValueType_BOOL, v.n != 0
	default:
		return false
	}
	return true
}

// protoValue picks the value of a protobuf-JSON tag: the field its vType
// names (proto3 JSON omits zero values, and a missing vType means STRING),
// or, for an unknown vType, whichever value field is present.
func (t *jTag) protoValue() (jValue, jVType) {
	vt := t.VType
	if !vt.present {
		vt = jVType{vt: model.ValueType_STRING, present: true, known: true}
	}
	if !vt.known {
		for _, v := range [...]jValue{t.VStr, t.VBool, t.VInt64, t.VFloat64} {
			if v.kind != jAbsent {
				return v, vt
			}
		}
		return jValue{}, vt
	}
	orZero := func(v jValue, k jKind) jValue {
		if v.kind == jAbsent {
			return jValue{kind: k}
		}
		return v
	}
	switch vt.vt {
	case model.ValueType_BOOL:
		return orZero(t.VBool, jBool), vt
	case model.ValueType_INT64:
		return orZero(t.VInt64, jInt), vt
	case model.ValueType_FLOAT64:
		return orZero(t.VFloat64, jFloat), vt
	case model.ValueType_STRING:
		return orZero(t.VStr, jString), vt
	}
	return jValue{}, vt
}

// jKind is the JSON type of a jValue.
type jKind uint8

// JSON value kinds; jAbsent means the key was not there.
const (
	jAbsent jKind = iota
	jNull
	jString
	jInt
	jFloat
	jBool
)

// jValue is a tag value of any JSON type. Objects and arrays are kept as
// their JSON text, the way Jaeger renders structured attributes.
type jValue struct {
	s    string
	n    int64 // jInt value; 1 or 0 for jBool
	f    float64
	kind jKind
}

// UnmarshalJSON records the value and its JSON type.
func (v *jValue) UnmarshalJSON(data []byte) error {
	if len(data) == 0 {
		return errors.New("empty tag value")
	}
	switch data[0] {
	case 'n':
		v.kind = jNull
	case 't', 'f':
		v.kind, v.n = jBool, 0
		if data[0] == 't' {
			v.n = 1
		}
	case '"':
		b, _ := unquote(data)
		v.kind, v.s = jString, string(b)
	case '{', '[':
		v.kind, v.s = jString, string(data)
	default:
		if n, err := strconv.ParseInt(string(data), 10, 64); err == nil {
			v.kind, v.n = jInt, n
			return nil
		}
		f, err := strconv.ParseFloat(string(data), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("tag value %s: %w", data, err)
		}
		v.kind, v.f = jFloat, f
	}
	return nil
}

// asInt returns the value as an integer: an integer, an integral float, or
// a string holding one.
func (v *jValue) asInt() (int64, bool) {
	switch v.kind {
	case jInt:
		return v.n, true
	case jFloat:
		return floatInt(v.f)
	case jString:
		s := strings.TrimSpace(v.s)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return floatInt(f)
		}
	}
	return 0, false
}

// floatInt returns f as an int64 when it is integral and in range.
func floatInt(f float64) (int64, bool) {
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), true
	}
	return 0, false
}

// asFloat returns the value as a float: a number or a string holding one.
func (v *jValue) asFloat() (float64, bool) {
	switch v.kind {
	case jInt:
		return float64(v.n), true
	case jFloat:
		return v.f, true
	case jString:
		if f, err := strconv.ParseFloat(strings.TrimSpace(v.s), 64); err == nil {
			return f, true
		}
	}
	return 0, false
}

// asBool returns the value as a boolean: a boolean, a string strconv.ParseBool
// accepts, or the integer 0 or 1.
func (v *jValue) asBool() (bool, bool) {
	switch v.kind {
	case jBool:
		return v.n != 0, true
	case jString:
		if b, err := strconv.ParseBool(strings.TrimSpace(v.s)); err == nil {
			return b, true
		}
	case jInt:
		if v.n == 0 || v.n == 1 {
			return v.n == 1, true
		}
	}
	return false, false
}

// jVType is a declared tag type: UI "string", "int64", ... or protobuf JSON
// "INT64" (or its number).
type jVType struct {
	vt      model.ValueType
	present bool // the key was there
	known   bool // and named a type this package knows
}

// UnmarshalJSON parses a type name case-insensitively, or an enum number.
func (t *jVType) UnmarshalJSON(data []byte) error {
	t.present = true
	if b, ok := unquote(data); ok {
		for i, name := range valueTypeNames {
			if strings.EqualFold(string(b), name) {
				t.vt, t.known = model.ValueType(i), true
				return nil
			}
		}
		return nil
	}
	if n, err := strconv.ParseInt(string(data), 10, 32); err == nil && n >= 0 && n < int64(len(valueTypeNames)) {
		t.vt, t.known = model.ValueType(n), true
	}
	return nil
}

// valueTypeNames are the jaeger-idl ValueType names, indexed by value.
var valueTypeNames = [...]string{
	model.ValueType_STRING:  "STRING",
	model.ValueType_BOOL:    "BOOL",
	model.ValueType_INT64:   "INT64",
	model.ValueType_FLOAT64: "FLOAT64",
	model.ValueType_BINARY:  "BINARY",
}

// jRefType is a reference type; the zero value is CHILD_OF, which protobuf
// JSON omits as the default.
type jRefType struct {
	other bool // anything but CHILD_OF: FOLLOWS_FROM, or unknown
}

// UnmarshalJSON accepts "CHILD_OF", "FOLLOWS_FROM" (any case) or an enum
// number.
func (r *jRefType) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	if b, ok := unquote(data); ok {
		r.other = !strings.EqualFold(string(b), "CHILD_OF")
		return nil
	}
	r.other = string(data) != "0"
	return nil
}

// jTraceID is a trace id: up to 32 hex digits (Jaeger trims leading zeros),
// or base64 of 16 (or 8) bytes in protobuf JSON.
type jTraceID struct{ id [16]byte }

// UnmarshalJSON parses the id; a bad one is an error quoting it.
func (t *jTraceID) UnmarshalJSON(data []byte) error {
	return parseJSONID(t.id[:], data, "trace")
}

// jSpanID is a span id: up to 16 hex digits, or base64 of 8 bytes.
type jSpanID struct{ id [8]byte }

// UnmarshalJSON parses the id; a bad one is an error quoting it.
func (s *jSpanID) UnmarshalJSON(data []byte) error {
	return parseJSONID(s.id[:], data, "span")
}

// parseJSONID parses a JSON id value into dst, right-aligned. null and ""
// leave it zero.
func parseJSONID(dst, data []byte, what string) error {
	clear(dst)
	if string(data) == "null" {
		return nil
	}
	b, ok := unquote(data)
	if !ok {
		return fmt.Errorf("invalid %s id %s: not a string", what, data)
	}
	if len(b) == 0 || len(b) <= 2*len(dst) && hexRight(dst, b) {
		return nil
	}
	clear(dst)
	if base64Right(dst, b) {
		return nil
	}
	clear(dst)
	return fmt.Errorf("invalid %s id %q: want 1 to %d hex digits, or base64 of %d bytes", what, b, 2*len(dst), len(dst))
}

// hexRight decodes hex digits b into the low-order end of dst (which holds
// at least len(b)/2 bytes and starts zeroed), so "abc" becomes 0x0a 0xbc.
func hexRight(dst, b []byte) bool {
	for i := range b {
		c := b[len(b)-1-i]
		var nib byte
		switch {
		case c >= '0' && c <= '9':
			nib = c - '0'
		case c >= 'a' && c <= 'f':
			nib = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			nib = c - 'A' + 10
		default:
			return false
		}
		if i%2 == 1 {
			nib <<= 4
		}
		dst[len(dst)-1-i/2] |= nib
	}
	return true
}

// base64Right decodes a base64 id of len(dst) bytes (or 8 bytes for a
// 16-byte trace id) into the low-order end of dst.
func base64Right(dst, b []byte) bool {
	var buf [18]byte
	for _, enc := range [...]*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if enc.DecodedLen(len(b)) > len(buf) {
			continue
		}
		n, err := enc.Decode(buf[:], b)
		if err == nil && (n == len(dst) || n == 8 && len(dst) == 16) {
			copy(dst[len(dst)-n:], buf[:n])
			return true
		}
	}
	return false
}

// jStart is a start time: microseconds since the epoch (a number or a
// numeric string), or an RFC 3339 time in protobuf JSON.
type jStart struct{ ns int64 }

// UnmarshalJSON parses the time into Unix nanoseconds.
func (t *jStart) UnmarshalJSON(data []byte) error {
	return parseMicrosOr(data, &t.ns, "startTime", "microseconds since the epoch nor an RFC 3339 time", func(lit string) (int64, bool, error) {
		tm, err := time.Parse(time.RFC3339Nano, lit)
		if err != nil {
			return 0, false, nil
		}
		ns, err := unixNanos(tm)
		return ns, true, err
	})
}

// jDuration is a duration: microseconds (a number or a numeric string), or
// a protobuf JSON duration such as "0.000100s".
type jDuration struct{ ns int64 }

// UnmarshalJSON parses the duration into nanoseconds.
func (d *jDuration) UnmarshalJSON(data []byte) error {
	return parseMicrosOr(data, &d.ns, "duration", `microseconds nor a duration like "0.000100s"`, func(lit string) (int64, bool, error) {
		dur, err := time.ParseDuration(lit)
		return int64(dur), err == nil, nil
	})
}

// parseMicrosOr reads a Jaeger time field into *ns: microseconds as a
// number or numeric string, else a string in the protobuf JSON form that
// alt parses (alt reports ok false when the string is not in that form).
// null leaves *ns as it is.
func parseMicrosOr(data []byte, ns *int64, field, want string, alt func(string) (int64, bool, error)) error {
	if string(data) == "null" {
		return nil
	}
	lit, isStr := unquote(data)
	if !isStr {
		lit = data
	}
	v, numeric, err := micros(lit)
	if err != nil {
		return fmt.Errorf("%s %s: %w", field, data, err)
	}
	if numeric {
		*ns = v
		return nil
	}
	if isStr {
		v, ok, err := alt(string(lit))
		if err != nil {
			return fmt.Errorf("%s %s: %w", field, data, err)
		}
		if ok {
			*ns = v
			return nil
		}
	}
	return fmt.Errorf("%s %s is neither %s", field, data, want)
}

// micros parses a decimal number of microseconds into nanoseconds. numeric
// is false when lit is not a number at all; err reports one out of range.
// lit is converted to a string only in calls that do not keep it, so the
// common case does not allocate.
func micros(lit []byte) (ns int64, numeric bool, err error) {
	lit = bytes.TrimSpace(lit)
	if n, perr := strconv.ParseInt(string(lit), 10, 64); perr == nil {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, true, fmt.Errorf("%d microseconds is out of range", n)
		}
		return n * 1000, true, nil
	}
	if len(lit) == 0 || !(lit[0] >= '0' && lit[0] <= '9' || lit[0] == '-' || lit[0] == '+' || lit[0] == '.') {
		return 0, false, nil
	}
	f, perr := strconv.ParseFloat(string(lit), 64)
	if perr != nil && !errors.Is(perr, strconv.ErrRange) {
		return 0, false, nil
	}
	if perr != nil || f*1000 >= math.MaxInt64 || f*1000 < math.MinInt64 || math.IsNaN(f) {
		return 0, true, fmt.Errorf("%s microseconds is out of range", lit)
	}
	return int64(f * 1000), true, nil
}

// unquote returns the content of a JSON string literal, without allocating
// when it holds no escapes; ok is false when data is not a string.
func unquote(data []byte) ([]byte, bool) {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return nil, false
	}
	inner := data[1 : len(data)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner, true
	}
	var s string
	if json.Unmarshal(data, &s) != nil {
		return nil, false
	}
	return []byte(s), true
}
