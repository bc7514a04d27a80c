package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"

	model "github.com/jaegertracing/jaeger-idl/model/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// decodeJaegerProto decodes one binary jaeger-idl api_v2 message: a Batch
// (spans=1, process=2), a Trace (spans=1, process_map=2, warnings=3) or a
// query SpansResponseChunk (spans=1 alone, each span carrying its process).
// It walks the top-level fields itself, so that processes are known before
// any span is converted and an error names the offset of the field it is
// in, and unmarshals each span and process with the generated gogo code.
func decodeJaegerProto(s *source, set *Set, w *warnings) error {
	base := s.offset()
	b, err := s.readAll()
	if err != nil {
		return err
	}
	var procs []protoField
	var traceWarnings []string
	err = walkProto(b, func(num protowire.Number, f protoField) error {
		switch num {
		case 2:
			procs = append(procs, f)
		case 3:
			traceWarnings = append(traceWarnings, string(f.b))
		default:
			return nil
		}
		if err := s.lim.attributes(len(procs)+len(traceWarnings), "processes and warnings in one message"); err != nil {
			return s.errAt(base+int64(f.off), fmt.Errorf("Jaeger protobuf: %w", err))
		}
		return nil
	})
	if err != nil {
		return positionProto(s, base, err)
	}

	j := newJaegerSpans(set, w)
	what := "Batch"
	if isProcessMap(procs, len(traceWarnings) > 0) {
		what = "Trace"
		for _, f := range procs {
			var m model.Trace_ProcessMapping
			if err := m.Unmarshal(f.b); err != nil {
				return s.errAt(base+int64(f.off), fmt.Errorf("Jaeger protobuf Trace: process_map entry: %w", err))
			}
			j.addProcess(m.ProcessID, protoProc(&m.Process))
		}
	} else if len(procs) > 0 {
		var p model.Process
		for _, f := range procs { // repeated occurrences merge, as protobuf specifies
			if err := p.Unmarshal(f.b); err != nil {
				return s.errAt(base+int64(f.off), fmt.Errorf("Jaeger protobuf Batch: process: %w", err))
			}
		}
		j.setBatchProcess(protoProc(&p))
	}
	for _, msg := range traceWarnings {
		j.warning("trace", msg)
	}

	var ms model.Span
	n := 0
	err = walkProto(b, func(num protowire.Number, f protoField) error {
		if num != 1 {
			return nil
		}
		if n++; n%1024 == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
		if err := checkJaegerSpanShape(f.b, s.lim); err != nil {
			return s.errAt(base+int64(f.off), fmt.Errorf("Jaeger protobuf %s: span %d: %w", what, n, err))
		}
		tags, refs := ms.Tags[:0], ms.References[:0]
		ms = model.Span{Tags: tags, References: refs}
		if err := ms.Unmarshal(f.b); err != nil {
			return s.errAt(base+int64(f.off), fmt.Errorf("Jaeger protobuf %s: span %d: %w", what, n, err))
		}
		if err := addProtoSpan(j, &ms); err != nil {
			return s.errAt(base+int64(f.off), fmt.Errorf("Jaeger protobuf %s: span %d (%s): %w", what, n, ms.SpanID, err))
		}
		return nil
	})
	return positionProto(s, base, err)
}

// positionProto adds the input offset to a framing error from walkProto;
// other errors already carry theirs.
func positionProto(s *source, base int64, err error) error {
	var fe *protoFieldErr
	if errors.As(err, &fe) {
		return s.errAt(base+int64(fe.off), err)
	}
	return err
}

// protoField is a length-delimited top-level field: its payload and the
// offset of its tag in the message.
type protoField struct {
	off int
	b   []byte
}

// protoFieldErr is a framing error at a message offset.
type protoFieldErr struct {
	off int
	err error
}

// Error renders the framing error.
func (e *protoFieldErr) Error() string { return "Jaeger protobuf: " + e.err.Error() }

// Unwrap returns the underlying error.
func (e *protoFieldErr) Unwrap() error { return e.err }

// walkProto calls fn with each length-delimited top-level field of b, in
// order, skipping fields of other wire types. Fields 1 to 3 must be
// length-delimited in every message it reads. A framing error is a
// *protoFieldErr; errors from fn are returned as they are.
func walkProto(b []byte, fn func(protowire.Number, protoField) error) error {
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return &protoFieldErr{off, fmt.Errorf("field tag: %w", protowire.ParseError(n))}
		}
		if typ != protowire.BytesType {
			if num <= 3 {
				return &protoFieldErr{off, fmt.Errorf("field %d has wire type %d, want length-delimited", num, typ)}
			}
			m := protowire.ConsumeFieldValue(num, typ, b[off+n:])
			if m < 0 {
				return &protoFieldErr{off, fmt.Errorf("field %d: %w", num, protowire.ParseError(m))}
			}
			off += n + m
			continue
		}
		v, m := protowire.ConsumeBytes(b[off+n:])
		if m < 0 {
			return &protoFieldErr{off, fmt.Errorf("field %d: %w", num, protowire.ParseError(m))}
		}
		if err := fn(num, protoField{off: off, b: v}); err != nil {
			return err
		}
		off += n + m
	}
	return nil
}

// isProcessMap tells a Trace's process_map entries from a Batch's process
// in top-level field 2. Both messages start with a string (process_id,
// service_name) and carry a message in their field 2: a Process in a
// ProcessMapping, a KeyValue tag in a Process. A KeyValue shows itself by a
// varint field 2 (v_type) or any field from 3 (its values); a Process has
// only fields 1 and 2. Several field 2 entries, or trace warnings (field 3),
// mean a Trace; a field 2 with no message inside is a Batch's untagged
// process. One tag with neither type nor value (an empty string tag) reads
// as a Trace: the layouts are identical.
func isProcessMap(procs []protoField, warnings bool) bool {
	if len(procs) > 1 || warnings {
		return true
	}
	if len(procs) == 0 {
		return false
	}
	inner := false
	keyValue := false
	_ = walkProto(procs[0].b, func(num protowire.Number, f protoField) error {
		if num == 2 {
			inner = true
			keyValue = keyValue || keyValueShaped(f.b)
		}
		return nil
	})
	return inner && !keyValue
}

// keyValueShaped reports whether b has a field only a KeyValue has.
func keyValueShaped(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		if num >= 3 || num == 2 && typ == protowire.VarintType {
			return true
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
	}
	return false
}

// checkJaegerSpanShape counts what the generated code would allocate for
// one span before it unmarshals it: tags (field 8) against MaxAttributes;
// references (4), logs (9) and their fields against MaxDocumentItems.
// Framing errors are left to the unmarshaller.
func checkJaegerSpanShape(b []byte, lim *Limits) error {
	tags, items := 0, 0
	_ = walkProto(b, func(num protowire.Number, f protoField) error {
		switch num {
		case 8:
			tags++
		case 4:
			items++
		case 9:
			items++
			_ = walkProto(f.b, func(num protowire.Number, _ protoField) error {
				if num == 2 {
					items++
				}
				return nil
			})
		}
		return nil
	})
	if err := lim.attributes(tags, "tags in one span"); err != nil {
		return err
	}
	return lim.items(items)
}

// addProtoSpan converts one protobuf span. Its process is its own, else the
// one its process_id names, else the batch's.
func addProtoSpan(j *jaegerSpans, ms *model.Span) error {
	sp := Record{Span: Span{TraceID: protoTraceID(ms.TraceID), SpanID: protoSpanID(ms.SpanID)}}
	start, err := unixNanos(ms.StartTime)
	if err != nil {
		return fmt.Errorf("start_time: %w", err)
	}
	if sp.End, err = spanEnd(start, int64(ms.Duration)); err != nil {
		return err
	}
	sp.Start = start
	j.begin()
	for i := range ms.References {
		r := &ms.References[i]
		j.ref(&sp, r.RefType == model.SpanRefType_CHILD_OF, protoTraceID(r.TraceID), protoSpanID(r.SpanID))
	}
	for i := range ms.Tags {
		j.tag(&ms.Tags[i])
	}
	for _, msg := range ms.Warnings {
		j.warning("span "+sp.SpanID.String(), msg)
	}
	if ms.Process != nil {
		p := protoProc(ms.Process)
		sp.Service = j.named(p.service, sp.SpanID)
		p.apply(j.set, &sp.Span, j.w)
	} else {
		j.resolve(&sp.Span, ms.ProcessID)
	}
	return j.finish(&sp, ms.OperationName, SpanID{})
}

// protoTraceID renders a jaeger-idl trace id as 16 big-endian bytes.
func protoTraceID(t model.TraceID) TraceID {
	var id TraceID
	binary.BigEndian.PutUint64(id[:8], t.High)
	binary.BigEndian.PutUint64(id[8:], t.Low)
	return id
}

// protoSpanID renders a jaeger-idl span id as 8 big-endian bytes.
func protoSpanID(s model.SpanID) SpanID {
	var id SpanID
	binary.BigEndian.PutUint64(id[:], uint64(s))
	return id
}

// protoProc is the part of a protobuf process that matters.
func protoProc(p *model.Process) jProc {
	return newJProc(p.ServiceName, len(p.Tags), func(i int) (string, string) { return p.Tags[i].Key, p.Tags[i].AsString() })
}
