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
	"regexp"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// decodeOTLPProto decodes one ExportTraceServiceRequest or TracesData
// message (they share a wire layout).
func decodeOTLPProto(s *source, set *Set, w *warnings) error {
	b, err := s.readAll()
	if err != nil {
		return err
	}
	var u ptrace.ProtoUnmarshaler
	td, err := u.UnmarshalTraces(b)
	if err != nil {
		return s.errAt(0, fmt.Errorf("OTLP protobuf: %w", err))
	}
	addTraces(set, td, w)
	return nil
}

// decodeOTLPProtoStream decodes the collector file exporter's protobuf
// layout: each message preceded by its length as a 4-byte big-endian integer.
func decodeOTLPProtoStream(s *source, set *Set, w *warnings) error {
	return pipeline(s, set, w, func(emit func(ptrace.Traces) error, _ *warnings) error {
		var u ptrace.ProtoUnmarshaler
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
			b, err := s.readN(int64(size))
			if err != nil {
				return err
			}
			td, err := u.UnmarshalTraces(b)
			if err != nil {
				return s.errAt(off+4, fmt.Errorf("OTLP protobuf message of %d bytes: %w", size, err))
			}
			if err := emit(td); err != nil {
				return err
			}
		}
	})
}

// pipeline overlaps reading and unmarshalling (produce, in its own
// goroutine) with normalising into the Set (here), one request at a time in
// input order, so a stream decodes on two cores in bounded memory.
// produce records its warnings in the *warnings it is given; they are merged
// into w when it ends.
func pipeline(s *source, set *Set, w *warnings, produce func(emit func(ptrace.Traces) error, pw *warnings) error) error {
	batches := make(chan ptrace.Traces, 2)
	done := make(chan struct{})
	var perr error
	var pw warnings
	go func() {
		defer close(batches)
		perr = produce(func(td ptrace.Traces) error {
			select {
			case batches <- td:
				return s.ctx.Err()
			case <-done:
				return errors.New("stopped")
			}
		}, &pw)
	}()
	for td := range batches {
		addTraces(set, td, w)
	}
	close(done)
	for _, x := range pw.list {
		w.list = MergeWarnings(w.list, []Warning{x})
	}
	return perr
}

// decodeOTLPJSONStream decodes OTLP JSON: one document, JSON Lines (one
// request per line), or Jaeger api_v3 responses ({"result": <OTLP JSON>},
// one or several).
func decodeOTLPJSONStream(s *source, set *Set, w *warnings, f Format) error {
	whole := f == FormatOTLPJSON
	if f == FormatJaegerAPIv3 {
		// api_v3 responses come one per line, or as one pretty-printed document.
		head, _ := s.r.Peek(sniffBytes)
		whole = !firstLineIsDocument(bytes.TrimLeft(head, " \t\r\n"))
	}
	return pipeline(s, set, w, func(emit func(ptrace.Traces) error, pw *warnings) error {
		doc := func(b []byte, fail func(int64, error) error) error {
			if f == FormatJaegerAPIv3 {
				return decodeAPIv3Doc(b, emit, pw, fail)
			}
			return decodeOTLPJSONDoc(b, emit, fail)
		}
		if whole {
			b, err := s.readAll()
			if err != nil {
				return err
			}
			return doc(b, func(off int64, err error) error { return s.errAt(off, err) })
		}
		return s.lines(func(line []byte, n int, _ int64) error {
			return doc(line, func(off int64, err error) error {
				return fmt.Errorf("ingest %s: line %d: column %d: %w", s.name, n, off+1, err)
			})
		})
	})
}

// decodeAPIv3Doc unwraps one Jaeger api_v3 response.
func decodeAPIv3Doc(b []byte, emit func(ptrace.Traces) error, w *warnings, fail func(int64, error) error) error {
	var doc struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fail(jsonOffset(err), fmt.Errorf("Jaeger api_v3 JSON: %w", err))
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
// are normalised and decoded again.
func decodeOTLPJSONDoc(b []byte, emit func(ptrace.Traces) error, fail func(int64, error) error) error {
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(b)
	if err == nil && (td.SpanCount() > 0 || !bytes.Contains(b, []byte("nstrumentationLibrary"))) {
		return emit(td)
	}
	fixed, nerr := normaliseOTLPJSON(b)
	if nerr != nil {
		return fail(jsonOffset(nerr), fmt.Errorf("OTLP JSON: %w", nerr))
	}
	td, err2 := u.UnmarshalTraces(fixed)
	if err2 != nil {
		if err == nil {
			err = err2
		}
		return fail(jsoniterOffset(err), fmt.Errorf("OTLP JSON: %s", jsoniterMessage(err)))
	}
	return emit(td)
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

// normaliseOTLPJSON rewrites a JSON document into the dialect pdata reads.
func normaliseOTLPJSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if err := normaliseValue(v, ""); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

var renames = map[string]string{
	"instrumentationLibrarySpans":   "scopeSpans",
	"instrumentation_library_spans": "scopeSpans",
	"instrumentationLibrary":        "scope",
	"instrumentation_library":       "scope",
}

func normaliseValue(v any, key string) error {
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			if err := normaliseValue(x, key); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, x := range t {
			if nk, ok := renames[k]; ok {
				if _, exists := t[nk]; !exists {
					delete(t, k)
					t[nk] = x
					k = nk
				}
			}
			switch k {
			case "traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id":
				if s, ok := x.(string); ok {
					h, err := idToHex(s, k)
					if err != nil {
						return err
					}
					t[k] = h
				}
				continue
			case "kind":
				if s, ok := x.(string); ok {
					if kd, ok := ParseKind(s); ok {
						t[k] = int(kd)
					}
				}
				continue
			case "code":
				if s, ok := x.(string); ok && key == "status" {
					switch strings.ToUpper(strings.TrimPrefix(strings.ToUpper(s), "STATUS_CODE_")) {
					case "OK":
						t[k] = 1
					case "ERROR":
						t[k] = 2
					case "UNSET":
						t[k] = 0
					}
				}
				continue
			}
			if err := normaliseValue(x, k); err != nil {
				return err
			}
		}
	}
	return nil
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

// addTraces appends every span of td to set.
func addTraces(set *Set, td ptrace.Traces, w *warnings) {
	var a attrs
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		svc := "unknown_service"
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok && v.AsString() != "" {
			svc = v.AsString()
		} else {
			w.add("missing service.name", "a resource without service.name: spans attributed to unknown_service")
		}
		svcSym := set.Intern(svc)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				addSpan(set, spans.At(k), svcSym, &a, w)
			}
		}
	}
}

func addSpan(set *Set, sp ptrace.Span, svc Sym, a *attrs, w *warnings) {
	s := Span{
		TraceID:  TraceID(sp.TraceID()),
		SpanID:   SpanID(sp.SpanID()),
		ParentID: SpanID(sp.ParentSpanID()),
		Start:    int64(sp.StartTimestamp()),
		End:      int64(sp.EndTimestamp()),
		Service:  svc,
		Kind:     Kind(sp.Kind()),
	}
	if s.Kind > KindConsumer {
		w.add("unknown span kind", "span %s has kind %d", s.SpanID, sp.Kind())
		s.Kind = KindUnspecified
	}
	a.reset()
	s.Name = a.intern(set, sp.Name())
	st := sp.Status()
	switch st.Code() {
	case ptrace.StatusCodeOk:
		s.Status = StatusOK
	case ptrace.StatusCodeError:
		s.Status = StatusError
	}
	s.StatusMessage = a.intern(set, st.Message())
	sp.Attributes().Range(func(k string, v pcommon.Value) bool {
		switch v.Type() {
		case pcommon.ValueTypeStr:
			a.str(k, v.Str())
		case pcommon.ValueTypeInt:
			a.integer(k, v.Int())
		case pcommon.ValueTypeBool:
			a.boolean(k, v.Bool())
		case pcommon.ValueTypeDouble:
			if d := v.Double(); d == float64(int64(d)) {
				a.integer(k, int64(d))
			}
		case pcommon.ValueTypeSlice:
			if sl := v.Slice(); sl.Len() > 0 {
				a.str(k, sl.At(0).AsString())
			} else {
				a.str(k, "")
			}
		}
		return true
	})
	a.finish(set, &s)
	if p, ok := traceStateProb(sp.TraceState().AsRaw()); ok && s.SampleProb == 0 {
		s.SampleProb, s.SampleSource = float32(p), set.Intern(SampledTraceState)
	}
	if links := sp.Links(); links.Len() > 0 {
		s.FirstLink = uint32(len(set.Links))
		n := min(links.Len(), 1<<16-1)
		for i := 0; i < n; i++ {
			l := links.At(i)
			set.Links = append(set.Links, Link{TraceID: TraceID(l.TraceID()), SpanID: SpanID(l.SpanID())})
		}
		s.NumLinks = uint16(n)
	}
	checkSpan(&s, w)
	set.add(&s)
}

// checkSpan records per-span problems every decoder shares.
func checkSpan(s *Span, w *warnings) {
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
}
