package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// decodeOTLPProto decodes one ExportTraceServiceRequest or TracesData
// message (they share a wire layout): by the protowire fast path when it
// takes the message, else by pdata; the shape bounds hold for both.
func decodeOTLPProto(s *source, set *Set, w *warnings) error {
	base := s.offset()
	b, err := s.readAll()
	if err != nil {
		return err
	}
	var d fastOTLP
	if err := d.protoOrPdata(b, s.lim); err != nil {
		return s.errAt(base+int64(err.off), err.err)
	}
	if err := d.apply(set, w); err != nil {
		return s.errAt(base, err)
	}
	return nil
}

// protoOrPdata checks protobuf message b against the shape bounds, then
// parses it into the batch, or has pdata unmarshal it when the fast path
// refuses it; an error comes with its offset in b.
func (d *fastOTLP) protoOrPdata(b []byte, lim *Limits) *shapeErr {
	if e := checkOTLPProtoShape(b, lim); e != nil {
		return &shapeErr{off: e.off, err: fmt.Errorf("OTLP protobuf: %w", e.err)}
	}
	if d.proto(b) {
		return nil
	}
	td, off, err := unmarshalOTLPProto(b, lim)
	if err != nil {
		return &shapeErr{off: int(off), err: err}
	}
	d.td = append(d.td, td)
	return nil
}

// unmarshalOTLPProto checks one OTLP protobuf message against the shape
// bounds, then unmarshals it with pdata; a failure comes with its offset in b.
func unmarshalOTLPProto(b []byte, lim *Limits) (ptrace.Traces, int64, error) {
	if e := checkOTLPProtoShape(b, lim); e != nil {
		return ptrace.Traces{}, int64(e.off), fmt.Errorf("OTLP protobuf: %w", e.err)
	}
	var u ptrace.ProtoUnmarshaler
	td, err := u.UnmarshalTraces(b)
	if err != nil {
		return td, 0, fmt.Errorf("OTLP protobuf message of %d bytes: %w", len(b), err)
	}
	return td, 0, nil
}

// decodeOTLPProtoStream decodes the collector file exporter's protobuf
// layout: each message preceded by its length as a 4-byte big-endian
// integer, each read into the buffer of a batch (runBatches).
func decodeOTLPProtoStream(s *source, set *Set, w *warnings) error {
	return runBatches(s, set, w, func(next func() (*fastOTLP, error), send func(*fastOTLP) error, _ *warnings) error {
		var hdr [4]byte
		for {
			off := s.offset()
			n, err := io.ReadFull(s.r, hdr[:])
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return s.errAt(off+int64(n), fmt.Errorf("truncated length prefix (%d of 4 bytes)", n))
			}
			size := binary.BigEndian.Uint32(hdr[:])
			if size == 0 {
				return s.errAt(off, errors.New("zero-length message in length-prefixed OTLP stream"))
			}
			d, err := next()
			if err != nil {
				return err
			}
			if d.buf, err = s.readN(d.buf, int64(size)); err != nil {
				return err
			}
			if e := d.protoOrPdata(d.buf, s.lim); e != nil {
				return s.errAt(off+4+int64(e.off), e.err)
			}
			d.fail = func(err error) error { return s.errAt(off, err) }
			if err := send(d); err != nil {
				return err
			}
		}
	})
}

// runBatches decodes a stream on two cores in bounded memory. produce, on
// its own goroutine, takes a batch from next for each message or document,
// reads it into the batch's buffer, parses it (or has pdata unmarshal it)
// and hands it to send; here each batch is added to set, in input order,
// and its storage handed back to next. An error adding a batch (a limit
// reached) stops produce and is returned, positioned by the batch's fail.
// produce records its own warnings in pw; they are merged into w when it
// ends.
func runBatches(s *source, set *Set, w *warnings, produce func(next func() (*fastOTLP, error), send func(*fastOTLP) error, pw *warnings) error) error {
	const inFlight = 3 // one being parsed, one being added, one between
	free := make(chan *fastOTLP, inFlight)
	for range inFlight {
		free <- &fastOTLP{}
	}
	full := make(chan *fastOTLP, inFlight) // never blocks: only inFlight batches exist
	done := make(chan struct{})
	var perr error
	var pw warnings
	go func() {
		defer close(full)
		perr = produce(func() (*fastOTLP, error) {
			select {
			case d := <-free:
				d.reset()
				return d, s.ctx.Err()
			case <-done:
				return nil, errStopped
			}
		}, func(d *fastOTLP) error {
			d.read = s.raw.n
			full <- d
			return s.ctx.Err()
		}, &pw)
	}()
	var cerr error
	for d := range full {
		if cerr != nil {
			continue // drain what produce sent before it saw done
		}
		if err := d.apply(set, w); err != nil {
			cerr = d.fail(err)
			close(done)
			continue
		}
		s.presize(set, d.read)
		free <- d
	}
	if cerr == nil {
		close(done)
	}
	for _, x := range pw.list {
		w.list = MergeWarnings(w.list, []Warning{x})
	}
	if cerr != nil {
		return cerr
	}
	return perr
}

// emitFunc hands one request pdata unmarshalled to the batch being filled,
// with how to position an error found adding it.
type emitFunc func(td ptrace.Traces, fail func(error) error) error

// errStopped ends a producer once adding its batches has failed.
var errStopped = errors.New("stopped")

// decodeOTLPJSONStream decodes OTLP JSON: one document, several written one
// after another, JSON Lines (one request per line, or several on a line),
// or Jaeger api_v3 responses ({"result": <OTLP JSON>}, one or several).
// Each document goes through runBatches in a batch of its own: OTLP ones
// are parsed by the fast path when it takes them, the rest unmarshalled by
// pdata.
func decodeOTLPJSONStream(s *source, set *Set, w *warnings, f Format) error {
	wholeDoc := f == FormatOTLPJSON
	if f == FormatJaegerAPIv3 || f == FormatTempoJSON {
		// api_v3 and Tempo responses come one per line, or as one pretty-printed document.
		head, _ := s.r.Peek(sniffBytes)
		wholeDoc = !firstLineIsDocument(bytes.TrimLeft(head, " \t\r\n"))
	}
	return runBatches(s, set, w, func(next func() (*fastOTLP, error), send func(*fastOTLP) error, pw *warnings) error {
		// decode decodes the documents splitJSON found in b; fail
		// positions an error at an offset in b. b is the reader's
		// buffer unless whole: then each batch holds a copy of its
		// document.
		decode := func(b []byte, whole bool, list []jsonDoc, serr *shapeErr, fail func(int64, error) error) error {
			for _, jd := range list {
				d, err := next()
				if err != nil {
					return err
				}
				doc := b[jd.start:jd.end]
				if !whole {
					doc = append(d.buf[:0], doc...)
					d.buf = doc
				}
				at := func(off int64, err error) error { return fail(int64(jd.start)+off, err) }
				emit := func(td ptrace.Traces, fail func(error) error) error {
					d.td, d.fail = append(d.td, td), fail
					return nil
				}
				d.fail = func(err error) error { return at(0, err) }
				switch {
				case f == FormatJaegerAPIv3:
					err = decodeAPIv3Doc(doc, emit, pw, at)
				case f == FormatTempoJSON:
					err = decodeTempoDoc(doc, emit, pw, at)
				case !d.json(doc):
					err = decodeOTLPJSONDoc(doc, emit, at)
				}
				if err != nil {
					return err
				}
				if err := send(d); err != nil {
					return err
				}
			}
			if serr != nil {
				return fail(int64(serr.off), serr.err)
			}
			return nil
		}
		// whole decodes head (the start of a document, or nothing) and
		// the rest of the input, head starting at input offset base.
		whole := func(head []byte, base int64) error {
			b, err := s.readAll()
			if err != nil {
				return err
			}
			if head != nil {
				if int64(len(head)+len(b)) > s.maxDoc {
					return s.errAt(base, fmt.Errorf("document exceeds %d bytes after decompression", s.maxDoc))
				}
				b = append(head, b...)
			}
			list, _, serr := splitJSON(b, s.lim)
			return decode(b, true, list, serr, func(off int64, err error) error { return s.errAt(base+off, err) })
		}
		if wholeDoc {
			return whole(nil, s.offset())
		}
		// Lines, each holding one request or several. A line whose last
		// document goes on (a pretty-printed one after compact ones) hands
		// it and the rest of the input to whole, so no document is lost.
		var cont *continued
		err := s.lines(func(raw []byte, n int, off int64) error {
			line := bytes.TrimRight(raw, "\r\n") // positions count the content, not its end of line
			list, open, serr := splitJSON(line, s.lim)
			lineFail := func(off int64, err error) error {
				return fmt.Errorf("ingest %s: line %d: column %d: %w", s.name, n, min(off, int64(len(line)))+1, err)
			}
			if !open || serr != nil || s.atEnd() || s.nextLineIsDocument() {
				// Complete, or cut short: a document that went on would
				// not be followed by one that starts afresh.
				return decode(line, false, list, serr, lineFail)
			}
			last := list[len(list)-1]
			if err := decode(line, false, list[:len(list)-1], nil, lineFail); err != nil {
				return err
			}
			cont = &continued{head: append([]byte(nil), raw[last.start:]...), off: off + int64(last.start)}
			return errContinued
		})
		if err == errContinued {
			return whole(cont.head, cont.off)
		}
		return err
	})
}

// continued is a document that starts on a line and goes on past it.
type continued struct {
	head []byte
	off  int64
}

// errContinued ends the line loop when a document goes on past its line.
var errContinued = errors.New("document continues")

// decodeAPIv3Doc unwraps one Jaeger api_v3 response.
func decodeAPIv3Doc(b []byte, emit emitFunc, w *warnings, fail func(int64, error) error) error {
	var doc struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		if off, serr := syntaxOffset(b); serr != nil {
			return fail(off, fmt.Errorf("Jaeger api_v3 JSON: %w", serr))
		}
		return fail(min(jsonOffset(err), int64(len(b))), fmt.Errorf("Jaeger api_v3 JSON: %w", err))
	}
	if doc.Error != nil {
		return fail(0, fmt.Errorf("Jaeger api_v3 response is an error: %v %s", doc.Error.Code, doc.Error.Message))
	}
	if len(doc.Result) == 0 || string(doc.Result) == "null" {
		w.add("empty api_v3 result", "a response with no result")
		return nil
	}
	// Positions inside the result are reported from the start of b.
	base := int64(bytes.Index(b, doc.Result))
	return decodeOTLPJSONDoc(doc.Result, emit, func(off int64, err error) error { return fail(base+off, err) })
}

// decodeOTLPJSONDoc decodes one OTLP JSON request with pdata. Dialects pdata
// rejects or silently drops (base64 ids as protobuf-canonical JSON writes
// them, lowercase enum names, the deprecated instrumentationLibrarySpans)
// are normalised and decoded again. Invalid JSON is positioned by
// encoding/json, which pdata's decoder does not do reliably.
func decodeOTLPJSONDoc(b []byte, emit emitFunc, fail func(int64, error) error) error {
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(b)
	atDoc := func(err error) error { return fail(0, err) }
	if err == nil && (td.SpanCount() > 0 || !bytes.Contains(b, []byte("nstrumentationLibrary"))) {
		return emit(td, atDoc)
	}
	if off, serr := syntaxOffset(b); serr != nil {
		return fail(off, fmt.Errorf("OTLP JSON: %w", serr))
	}
	fixed, at, nerr := normaliseOTLPJSON(b)
	if nerr != nil {
		return fail(at, fmt.Errorf("OTLP JSON: %w", nerr))
	}
	td, err2 := u.UnmarshalTraces(fixed)
	if err2 != nil {
		if err == nil {
			err = err2
		}
		return fail(min(jsoniterOffset(err), int64(len(b))), fmt.Errorf("OTLP JSON: %s", jsoniterMessage(err)))
	}
	return emit(td, atDoc)
}

var jsoniterPos = regexp.MustCompile(`error found in #(\d+) byte`)

// jsoniterOffset extracts the byte position pdata's JSON decoder reports.
func jsoniterOffset(err error) int64 {
	if m := jsoniterPos.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	return 0
}

// jsoniterMessage keeps the first clause of a jsoniter error, whose context
// excerpts can run to hundreds of bytes of raw input.
func jsoniterMessage(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ", error found in"); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// jsonOffset extracts the offset from encoding/json errors.
func jsonOffset(err error) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	}
	return 0
}

// normaliseOTLPJSON rewrites a valid JSON document into the dialect pdata
// reads: deprecated keys renamed, base64 ids as hex, enum names as
// numbers. It copies the bytes through in one pass, rewriting only those
// strings, so it holds the input and its rewrite, never a tree of the
// document (which takes over ten times its size).
// A failure comes with the offset of the string at fault.
func normaliseOTLPJSON(b []byte) ([]byte, int64, error) {
	type frame struct {
		obj bool
		key string // the member being read (objects)
	}
	var stack []frame
	out := make([]byte, 0, len(b)+len(b)/16)
	prev := byte(0) // the last structural byte, or 'v' after a value
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch c {
		case '"':
			end := stringEnd(b, i+1)
			if end < 0 || len(stack) == 0 {
				return nil, int64(i), errors.New("not a JSON object")
			}
			lit := b[i : end+1]
			i = end
			top := &stack[len(stack)-1]
			text, _ := unquote(lit)
			if top.obj && (prev == '{' || prev == ',') { // a key
				top.key = string(text)
				if nk, ok := renames[top.key]; ok {
					top.key = nk
					lit = appendJSONString(nil, nk)
				}
				out = append(out, lit...)
				prev = 'k'
				continue
			}
			prev = 'v'
			var k, parent string
			if top.obj {
				k = top.key
				if n := len(stack); n > 1 && stack[n-2].obj {
					parent = stack[n-2].key
				}
			}
			switch k {
			case "traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id":
				h, err := idToHex(string(text), k)
				if err != nil {
					return nil, int64(i - len(lit) + 1), err
				}
				out = appendJSONString(out, h)
				continue
			case "kind":
				if kd, ok := ParseKind(string(text)); ok {
					out = strconv.AppendInt(out, int64(kd), 10)
					continue
				}
			case "code":
				if code, ok := statusCodes[strings.TrimPrefix(strings.ToUpper(string(text)), "STATUS_CODE_")]; ok && parent == "status" {
					out = strconv.AppendInt(out, int64(code), 10)
					continue
				}
			}
			out = append(out, lit...)
		case '{', '[':
			stack = append(stack, frame{obj: c == '{'})
			out = append(out, c)
			prev = c
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			out = append(out, c)
			prev = 'v'
		case ',', ':':
			out = append(out, c)
			prev = c
		case ' ', '\t', '\r', '\n':
			out = append(out, c)
		default:
			out = append(out, c)
			prev = 'v'
		}
	}
	return out, 0, nil
}

var renames = map[string]string{
	"instrumentationLibrarySpans":   "scopeSpans",
	"instrumentation_library_spans": "scopeSpans",
	"instrumentationLibrary":        "scope",
	"instrumentation_library":       "scope",
}

// statusCodes are the OTLP status code names.
var statusCodes = map[string]int{"UNSET": 0, "OK": 1, "ERROR": 2}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// idToHex accepts a hex or base64 identifier and returns hex.
func idToHex(s, key string) (string, error) {
	if s == "" {
		return s, nil
	}
	want := 8
	if strings.HasPrefix(key, "trace") {
		want = 16
	}
	if len(s) == 2*want {
		if _, err := hex.DecodeString(s); err == nil {
			return s, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == want {
			return hex.EncodeToString(b), nil
		}
	}
	return "", fmt.Errorf("%s %q is neither %d hex digits nor base64 of %d bytes", key, s, 2*want, want)
}

// addTraces appends every span of td to set; it fails when the set's
// limits are reached.
func addTraces(set *Set, td ptrace.Traces, w *warnings) error {
	var a attrs
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		var svc string
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			svc = v.AsString()
		}
		svcSym := serviceSym(set, w, svc)
		inst := resourceInstance(rs.Resource().Attributes())
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if err := addSpan(set, spans.At(k), svcSym, inst, &a, w); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// resourceInstance is the instance a resource's attributes name
// (instanceTags), "" for none.
func resourceInstance(attrs pcommon.Map) string {
	var tags instanceTags
	attrs.Range(func(k string, v pcommon.Value) bool {
		switch v.Type() {
		case pcommon.ValueTypeStr:
			tags.tag(k, v.Str())
		case pcommon.ValueTypeInt:
			tags.number(k, v.Int())
		}
		return true
	})
	return tags.name()
}

func addSpan(set *Set, sp ptrace.Span, svc Sym, inst string, a *attrs, w *warnings) error {
	s := Record{Span: Span{
		TraceID:  TraceID(sp.TraceID()),
		SpanID:   SpanID(sp.SpanID()),
		ParentID: SpanID(sp.ParentSpanID()),
		Service:  svc,
	}}
	setInstance(set, &s.Span, inst, w)
	a.reset()
	sp.Attributes().Range(func(k string, v pcommon.Value) bool {
		switch v.Type() {
		case pcommon.ValueTypeStr:
			a.str(k, v.Str())
		case pcommon.ValueTypeInt:
			a.integer(k, v.Int())
		case pcommon.ValueTypeBool:
			a.boolean(k, v.Bool())
		case pcommon.ValueTypeDouble:
			a.double(k, v.Double())
		case pcommon.ValueTypeSlice:
			if sl := v.Slice(); sl.Len() > 0 {
				a.str(k, sl.At(0).AsString())
			} else {
				a.str(k, "")
			}
		}
		return true
	})
	links := sp.Links()
	for i := 0; i < links.Len(); i++ {
		l := links.At(i)
		a.links = append(a.links, Link{TraceID: TraceID(l.TraceID()), SpanID: SpanID(l.SpanID())})
	}
	st := sp.Status()
	return addRecord(set, &s, uint64(sp.StartTimestamp()), uint64(sp.EndTimestamp()), int32(sp.Kind()),
		sp.Name(), int32(st.Code()), st.Message(), sp.TraceState().AsRaw(), a, w)
}

// addRecord completes an OTLP span, whose ids and service are set and whose
// attributes and links a holds, from its raw times, kind, name, status and
// trace state, and appends it to set (or drops it, with a warning, when a
// time is out of range). Both OTLP paths, pdata's and the fast one, end
// here.
func addRecord(set *Set, s *Record, start, end uint64, kind int32, name string, code int32, msg, traceState string, a *attrs, w *warnings) error {
	var ok bool
	if s.Start, s.End, ok = otlpTimes(start, end, s.SpanID, w); !ok {
		return nil
	}
	s.Kind = Kind(kind)
	if s.Kind > KindConsumer {
		w.add("unknown span kind", "span %s has kind %d", s.SpanID, kind)
		s.Kind = KindUnspecified
	}
	s.Name = a.intern(set, name)
	s.Status = otlpStatus(code, s.SpanID, w)
	s.StatusMessage = a.intern(set, msg)
	a.finish(set, s)
	if p, ok := traceStateProb(traceState); ok && set.Sampling(&s.Span) == (Sampling{}) {
		set.SetSampling(&s.Span, Sampling{P: p, Source: SampledTraceState})
	}
	if len(a.links) > 0 {
		s.FirstLink = uint32(len(set.Links))
		n := min(len(a.links), maxLinks)
		if n < len(a.links) {
			w.add("links dropped", "span %s has %d links: the first %d are kept", s.SpanID, len(a.links), maxLinks)
		}
		set.Links = append(set.Links, a.links[:n]...)
		s.NumLinks = uint16(n)
	}
	checkSpan(set, s, a, w)
	return set.add(s)
}

// otlpTimes converts OTLP's unsigned Unix nanoseconds; ok is false, with a
// "timestamp out of range" warning, when either is at or past 2^63 ns (the
// year 2262), which would wrap to 1677 and corrupt every duration and
// window computed from it: the decoder drops the span. A start of 0 (the
// field unset) is kept, as Zipkin's is, with a "missing timestamp" warning.
func otlpTimes(start, end uint64, id SpanID, w *warnings) (int64, int64, bool) {
	if start > math.MaxInt64 || end > math.MaxInt64 {
		w.add("timestamp out of range", "span %s starts at %d or ends at %d ns, past the year 2262: span dropped", id, start, end)
		return 0, 0, false
	}
	if start == 0 {
		w.add("missing timestamp", "span %s has no start time (0 ns)", id)
	}
	return int64(start), int64(end), true
}

// otlpStatus maps an OTLP status code; codes other than 0 to 2 are taken
// as unset, with an "unknown status code" warning.
func otlpStatus(code int32, id SpanID, w *warnings) Status {
	switch code {
	case 0:
		return StatusUnset
	case 1:
		return StatusOK
	case 2:
		return StatusError
	}
	w.add("unknown status code", "span %s has status code %d: taken as unset", id, code)
	return StatusUnset
}

// checkSpan records per-span problems every decoder shares: bad ids, an end
// before the start, a truncated value, a status attribute out of range
// (which is ignored), and names that are not valid UTF-8. Decoders call it
// with the attributes gathered for s, after attrs.finish.
func checkSpan(set *Set, s *Record, a *attrs, w *warnings) {
	if s.TraceID.IsZero() {
		w.add("invalid trace id", "span %s has an all-zero trace id", s.SpanID)
	}
	if s.SpanID.IsZero() {
		w.add("invalid span id", "a span in trace %s has an all-zero span id", s.TraceID)
	}
	if s.End < s.Start {
		w.add("end before start", "span %s ends %dns before it starts", s.SpanID, s.Start-s.End)
	}
	if s.Has(FlagTruncated) {
		w.add("attribute value truncated", "span %s had a value over %d bytes", s.SpanID, MaxValueBytes)
	}
	if a.invalid != "" {
		w.add("invalid status code", "span %s: %s, ignored", s.SpanID, a.invalid)
	}
	for _, f := range [...]struct {
		what string
		sym  Sym
	}{{"service", s.Service}, {"name", s.Name}, {"peer", s.Peer}, {"method", s.Method}, {"route", s.Route}, {"status message", s.StatusMessage}, {"error type", s.ErrorType}} {
		if v := set.Str(f.sym); !utf8.ValidString(v) {
			w.add("invalid UTF-8", "span %s: %s %q is not valid UTF-8 (shown escaped)", s.SpanID, f.what, v)
			break
		}
	}
}
