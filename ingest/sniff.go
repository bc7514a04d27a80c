package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrUnrecognised means the content is no trace format ingest knows.
var ErrUnrecognised = errors.New("not a trace format")

// sniffBytes is how much of the input detection may look at.
const sniffBytes = 64 << 10

// sniff detects the format from the first bytes of the decompressed input.
func sniff(s *source) (Format, error) {
	head, err := s.r.Peek(sniffBytes)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return "", s.errAt(int64(len(head)), err)
	}
	if len(head) == 0 {
		return "", s.errAt(0, errors.New("empty input"))
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if len(trimmed) == 0 {
		return "", s.errAt(int64(len(head)), errors.New("input holds only white space"))
	}
	// 0x0a is both a newline and the tag of protobuf field 1: JSON wins only
	// when an object with a key (or an array) really follows.
	if t := trimmed[0]; (t == '{' || t == '[') && (head[0] != 0x0a || t == '[' || len(topLevelKeys(trimmed)) > 0) {
		if errors.Is(err, io.EOF) && t == '{' && len(topLevelKeys(trimmed)) == 0 && !json.Valid(trimmed) {
			// The whole input is the start of a JSON value cut short.
			return "", s.errAt(int64(len(head)), fmt.Errorf("%w: JSON cut short before its first key", ErrUnrecognised))
		}
		return sniffJSON(s, trimmed)
	}
	switch {
	case head[0] == 0x0a:
		if looksLikeJaegerBatch(head) {
			return FormatJaegerProto, nil
		}
		return FormatOTLPProto, nil
	case len(head) >= 5 && head[4] == 0x0a && binary.BigEndian.Uint32(head) > 0:
		// A length prefix, then a message starting with field 1.
		return FormatOTLPProtoStream, nil
	}
	return "", s.errAt(0, fmt.Errorf("%w: content starts % x; expected OTLP protobuf or JSON, Jaeger JSON or protobuf, Tempo or Zipkin JSON (gzip and zstd are decompressed)", ErrUnrecognised, head[:min(len(head), 8)]))
}

// sniffJSON tells the JSON dialects apart by their top-level keys.
func sniffJSON(s *source, head []byte) (Format, error) {
	keys := topLevelKeys(head)
	has := func(names ...string) bool {
		for _, n := range names {
			for _, k := range keys {
				if k == n {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has("resourceSpans", "resource_spans"):
		if firstLineIsDocument(head) {
			return FormatOTLPJSONLines, nil
		}
		return FormatOTLPJSON, nil
	case has("result"):
		return FormatJaegerAPIv3, nil
	case has("batches", "trace"):
		return FormatTempoJSON, nil
	case has("data", "traceID", "spans", "processes"):
		return FormatJaegerJSON, nil
	case head[0] == '[' && isZipkinArray(head):
		return FormatZipkinJSON, nil
	case head[0] == '[':
		return FormatJaegerJSON, nil
	case has("instrumentationLibrarySpans", "resourceLogs", "resourceMetrics", "resource_logs", "resource_metrics"):
		return "", s.errAt(0, fmt.Errorf("OTLP JSON without trace data: top-level keys %s", strings.Join(keys, ", ")))
	}
	if len(keys) == 0 {
		return "", s.errAt(0, fmt.Errorf("%w: JSON document with no keys", ErrUnrecognised))
	}
	return "", s.errAt(0, fmt.Errorf("%w: JSON with top-level keys %s (want resourceSpans, result, data, batches, trace, or a Jaeger trace)", ErrUnrecognised, strings.Join(keys, ", ")))
}

// isZipkinArray tells a Zipkin v2 array of spans ([{"traceId", "id", ...}]
// or /api/v2/traces' [[...], ...]) from Jaeger's array of traces
// ([{"traceID", "spans", "processes"}]): Jaeger never nests arrays, and its
// traces hold spans where Zipkin's elements are spans.
func isZipkinArray(head []byte) bool {
	rest := bytes.TrimLeft(head[1:], " \t\r\n")
	if len(rest) > 0 && rest[0] == '[' {
		return true
	}
	keys := topLevelKeys(rest)
	span, trace := false, false
	for _, k := range keys {
		switch k {
		case "traceId", "id", "parentId", "localEndpoint", "remoteEndpoint", "timestamp",
			"name", "kind", "duration", "annotations", "tags", "debug", "shared":
			// Keys of a span (the sniffed prefix may end inside the first):
			// Jaeger's traces have none of them.
			span = true
		case "spans", "processes", "processMap", "traceID":
			trace = true
		}
	}
	return span && !trace
}

// topLevelKeys lists the keys of the first JSON object in head (which may be
// cut short), without decoding the values.
func topLevelKeys(head []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(head))
	var keys []string
	depth := 0
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				depth++
				expectKey = depth == 1 && t == '{'
			case '}', ']':
				depth--
				if depth == 0 {
					return keys
				}
				expectKey = depth == 1
			}
			continue
		case string:
			if depth == 1 && expectKey {
				keys = append(keys, t)
				expectKey = false
				continue
			}
		}
		if depth == 1 {
			expectKey = true
		}
	}
}

// firstLineIsDocument reports whether the input is JSON Lines: its first
// line is a complete JSON value, or longer than the sniffed prefix (a
// minified document, which line mode reads just as well).
func firstLineIsDocument(head []byte) bool {
	i := bytes.IndexByte(head, '\n')
	if i < 0 {
		return true
	}
	return json.Valid(head[:i])
}

// looksLikeJaegerBatch tells a jaeger-idl Batch/Trace (field 1 = Span, whose
// first fields are a 16- or 8-byte trace_id and an 8-byte span_id) from an
// OTLP request (field 1 = ResourceSpans, which starts with a Resource or
// ScopeSpans message).
func looksLikeJaegerBatch(b []byte) bool {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return false
	}
	inner, m := protowire.ConsumeBytes(b[n:])
	if m < 0 {
		// Cut short by the sniff window: look at what is there.
		_, ln := protowire.ConsumeVarint(b[n:])
		if ln < 0 {
			return false
		}
		inner = b[n+ln:]
	}
	num, typ, n = protowire.ConsumeTag(inner)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return false
	}
	id, m := protowire.ConsumeBytes(inner[n:])
	if m < 0 || (len(id) != 16 && len(id) != 8) {
		return false
	}
	rest := inner[n+m:]
	num, typ, n = protowire.ConsumeTag(rest)
	if n < 0 || num != 2 || typ != protowire.BytesType {
		return false
	}
	sid, m := protowire.ConsumeBytes(rest[n:])
	return m >= 0 && len(sid) == 8
}
