package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// jsonDoc is one top-level JSON value of a buffer: b[start:end].
type jsonDoc struct{ start, end int }

// shapeErr is a bound or framing error at an offset of the scanned buffer.
type shapeErr struct {
	off int
	err error
}

// splitJSON finds the top-level documents of b (one, or several written one
// after another as jq reads them) and checks each against the shape bounds
// before any library unmarshals it: nesting depth, attributes per list
// ("attributes" arrays), elements per value ("values" arrays) and array
// elements per document. It is one pass over the bytes that only follows
// strings and brackets; a document it passes may still be invalid JSON,
// which the decoder reports (syntaxOffset positions it). Bytes between
// documents that start no object or array are an error at their offset.
// open reports that the last document does not end within b.
func splitJSON(b []byte, lim *Limits) (docs []jsonDoc, open bool, serr *shapeErr) {
	type frame struct {
		array bool
		kind  uint8 // 0 other, 1 attributes, 2 values
		n     int
	}
	var (
		stack          []frame
		items          int
		start          int
		keyFrom, keyTo int  // the last string read
		prev           byte // the last significant byte, or 'v' after a value
	)
	count := func(at int) *shapeErr {
		top := &stack[len(stack)-1]
		top.n++
		items++
		var err error
		switch {
		case items > lim.MaxDocumentItems:
			err = lim.items(items)
		case top.kind == 1:
			err = lim.attributes(top.n, "attributes in one list")
		case top.kind == 2:
			err = lim.values(top.n)
		}
		if err != nil {
			return &shapeErr{at, err}
		}
		return nil
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			continue
		}
		if len(stack) == 0 {
			if c != '{' && c != '[' {
				what := "where a document should start"
				if len(docs) > 0 {
					what = "after the end of a document"
				}
				return docs, false, &shapeErr{i, fmt.Errorf("JSON: unexpected %s %s", quoteByte(c), what)}
			}
			start = i
		}
		switch c {
		case '"':
			end := stringEnd(b, i+1)
			if end < 0 {
				return append(docs, jsonDoc{start, len(b)}), true, nil // unterminated: the decoder says where
			}
			keyFrom, keyTo = i+1, end
			i, prev = end, '"'
		case '{', '[':
			var kind uint8
			if prev == ':' && c == '[' {
				switch string(b[keyFrom:keyTo]) {
				case "attributes":
					kind = 1
				case "values":
					kind = 2
				}
			}
			if err := lim.depth(len(stack) + 1); err != nil {
				return docs, false, &shapeErr{i, err}
			}
			stack = append(stack, frame{array: c == '[', kind: kind})
			prev = c
			if c == '[' { // count the first element where it starts
				j := i + 1
				for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\r' || b[j] == '\n') {
					j++
				}
				if j < len(b) && b[j] != ']' {
					if err := count(j); err != nil {
						return docs, false, err
					}
				}
			}
		case '}', ']':
			if len(stack) == 0 {
				return docs, false, &shapeErr{i, fmt.Errorf("JSON: unexpected %s", quoteByte(c))}
			}
			stack = stack[:len(stack)-1]
			prev = 'v'
			if len(stack) == 0 {
				docs = append(docs, jsonDoc{start, i + 1})
			}
		case ',':
			if top := &stack[len(stack)-1]; top.array {
				if err := count(i + 1); err != nil {
					return docs, false, err
				}
			}
			prev = ','
		case ':':
			prev = ':'
		default: // a number, true, false, null, or a stray byte the decoder rejects
			for i+1 < len(b) && !jsonDelim[b[i+1]] {
				i++
			}
			prev = 'v'
		}
	}
	if len(stack) > 0 {
		return append(docs, jsonDoc{start, len(b)}), true, nil // cut short: the decoder says where
	}
	return docs, false, nil
}

// jsonDelim marks the bytes that end a number or literal.
var jsonDelim = func() (t [256]bool) {
	for _, c := range []byte(" \t\r\n,:{}[]\"") {
		t[c] = true
	}
	return t
}()

// stringEnd returns the index of the quote closing the JSON string whose
// content starts at b[from], or -1 when the string does not end.
func stringEnd(b []byte, from int) int {
	for j := from; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		bs := 0
		for p := q - 1; p >= from && b[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return q
		}
		j = q + 1
	}
}

// quoteByte renders a byte for an error message: 'x', or 0x1b.
func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// syntaxOffset returns nil when b is valid JSON; otherwise why it is not
// and the offset of the byte where it fails (len(b) when it ends too soon).
func syntaxOffset(b []byte) (int64, error) {
	if json.Valid(b) {
		return 0, nil
	}
	var v struct{}
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return 0, nil
	}
	off := se.Offset - 1 // Offset counts the failing byte as read
	if off < 0 || se.Offset >= int64(len(b)) && bytes.HasPrefix([]byte(se.Error()), []byte("unexpected end")) {
		off = int64(len(b))
	}
	return min(max(off, 0), int64(len(b))), se
}

// OTLP protobuf messages the shape check descends into.
type pbKind uint8

const (
	pbRequest pbKind = iota // ExportTraceServiceRequest / TracesData
	pbResourceSpans
	pbResource
	pbScopeSpans
	pbScope
	pbSpan
	pbEvent
	pbLink
	pbKeyValue
	pbAnyValue
	pbArray
	pbKVList
)

// What a child field counts as.
const (
	pbItem  = iota // a span, event, link, resource or scope list entry
	pbAttr         // an attribute of its parent
	pbValue        // an element of an array or key-value-list value
	pbPlain        // counted nowhere (a resource, a scope, a value)
)

// pbField is what the shape check knows of one field of a message.
type pbField struct {
	num   protowire.Number
	child pbKind
	role  int
}

// pbSchema lists, per message kind, the fields the check descends into
// (field numbers from opentelemetry-proto's trace and common messages).
var pbSchema = [...][]pbField{
	pbRequest:       {{1, pbResourceSpans, pbItem}},
	pbResourceSpans: {{1, pbResource, pbPlain}, {2, pbScopeSpans, pbItem}},
	pbResource:      {{1, pbKeyValue, pbAttr}},
	pbScopeSpans:    {{1, pbScope, pbPlain}, {2, pbSpan, pbItem}},
	pbScope:         {{3, pbKeyValue, pbAttr}},
	pbSpan:          {{9, pbKeyValue, pbAttr}, {11, pbEvent, pbItem}, {13, pbLink, pbItem}},
	pbEvent:         {{3, pbKeyValue, pbAttr}},
	pbLink:          {{5, pbKeyValue, pbAttr}},
	pbKeyValue:      {{2, pbAnyValue, pbPlain}},
	pbAnyValue:      {{5, pbArray, pbPlain}, {6, pbKVList, pbPlain}},
	pbArray:         {{1, pbAnyValue, pbValue}},
	pbKVList:        {{1, pbKeyValue, pbValue}},
}

// pbChild returns the message kind of field num of a kind message and what
// it counts as; ok is false for fields the check does not descend into.
func pbChild(kind pbKind, num protowire.Number) (child pbKind, role int, ok bool) {
	for _, f := range pbSchema[kind] {
		if f.num == num {
			return f.child, f.role, true
		}
	}
	return 0, 0, false
}

// framing positions a wire-format error in a message of size bytes at
// base: a field cut short fails at the end of its message (where an input
// was cut), anything else at the field's tag.
func framing(base, off, size int, num protowire.Number, code int) *shapeErr {
	err := protowire.ParseError(code)
	what := fmt.Sprintf("field tag at offset %d", base+off)
	if num > 0 {
		what = fmt.Sprintf("field %d at offset %d", num, base+off)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &shapeErr{base + size, fmt.Errorf("truncated: %s runs past the end of its message", what)}
	}
	return &shapeErr{base + off, fmt.Errorf("%s: %w", what, err)}
}

var pbOwner = [...]string{pbResource: "a resource", pbScope: "a scope", pbSpan: "a span", pbEvent: "a span event", pbLink: "a span link"}

// checkOTLPProtoShape walks an OTLP protobuf request with protowire, before
// pdata unmarshals it, and checks it against the shape bounds: nesting of
// attribute values, attributes per span, resource, scope, event or link,
// elements per value, and items per document. Framing errors are left to
// pdata, which reports them.
func checkOTLPProtoShape(b []byte, lim *Limits) *shapeErr {
	c := protoShape{lim: lim}
	return c.walk(b, 0, pbRequest, 0)
}

// protoShape is the state of one checkOTLPProtoShape walk.
type protoShape struct {
	lim   *Limits
	items int
}

// walk checks the kind message b, at offset base of the document, depth
// messages deep. Tags and lengths of one byte, nearly all of them, are
// read inline; the limits are compared inline and only a failure builds
// an error.
func (c *protoShape) walk(b []byte, base int, kind pbKind, depth int) *shapeErr {
	if depth > c.lim.MaxDepth {
		return &shapeErr{base, c.lim.depth(depth)}
	}
	attrs, values := 0, 0
	for off := 0; off < len(b); {
		var num protowire.Number
		var typ protowire.Type
		n := 1
		if t := b[off]; t < 0x80 && t >= 8 { // field numbers 1 to 15
			num, typ = protowire.Number(t>>3), protowire.Type(t&7)
		} else if num, typ, n = protowire.ConsumeTag(b[off:]); n < 0 {
			return framing(base, off, len(b), 0, n)
		}
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b[off+n:])
			if m < 0 {
				return framing(base, off, len(b), num, m)
			}
			off += n + m
			continue
		}
		size, m := 0, 1
		if p := off + n; p < len(b) && b[p] < 0x80 {
			size = int(b[p])
		} else {
			l, k := protowire.ConsumeVarint(b[p:])
			if k < 0 {
				return framing(base, off, len(b), num, k)
			}
			size, m = int(min(l, uint64(len(b)))), k
		}
		start := off + n + m
		if size > len(b)-start {
			return framing(base, off, len(b), num, -1) // protowire's code for truncated
		}
		if child, role, ok := pbChild(kind, num); ok {
			var err error
			switch role {
			case pbAttr:
				if attrs++; attrs > c.lim.MaxAttributes {
					err = c.lim.attributes(attrs, "attributes of "+pbOwner[kind])
				}
			case pbValue:
				if values++; values > c.lim.MaxValues {
					err = c.lim.values(values)
				}
			}
			if role != pbPlain {
				if c.items++; err == nil && c.items > c.lim.MaxDocumentItems {
					err = c.lim.items(c.items)
				}
			}
			if err != nil {
				return &shapeErr{base + off, err}
			}
			if e := c.walk(b[start:start+size], base+start, child, depth+1); e != nil {
				return e
			}
		}
		off = start + size
	}
	return nil
}
