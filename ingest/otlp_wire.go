package ingest

import (
	"math"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// fastOTLP decodes OTLP straight into a Set: protobuf messages with
// protowire (this file), JSON documents with a small scanner (otlp_json.go).
// No pdata tree is built, no string the Set already holds is copied, and
// the values of attribute keys the normalisation never reads are checked
// but not kept.
//
// pdata stays the decoder of record. The fast path takes a message only when
// it is sure to produce exactly what pdata followed by addTraces would; on
// anything else (malformed input, whose error pdata then words, or rare
// shapes such as a repeated singular field, a deprecated field, a service
// name that is not a string) it undoes what it added and reports false, and
// the caller decodes the message with pdata. TestOTLPWireMatchesPdata,
// TestOTLPJSONFastMatchesPdata and their fuzz targets hold the paths to
// identical spans and errors.
type fastOTLP struct {
	set   *Set
	w     *warnings
	a     attrs
	saved []Warning
}

func newFastOTLP(set *Set, w *warnings) *fastOTLP { return &fastOTLP{set: set, w: w} }

// addProto decodes protobuf message b into the Set and reports whether it
// did; when it did not, the Set and the warnings are as they were.
func (d *fastOTLP) addProto(b []byte) bool { return d.try(d.request, b) }

func (d *fastOTLP) try(decode func([]byte) bool, b []byte) bool {
	m := d.set.mark()
	d.saved = append(d.saved[:0], d.w.list...)
	if decode(b) {
		return true
	}
	d.set.rollback(m)
	d.w.list = append(d.w.list[:0], d.saved...)
	return false
}

// wireString views b as a string without copying. The Set copies what it
// keeps (Intern), and nothing else outlives the message.
func wireString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// skipField consumes the value of a field the decoder does not use. Groups
// are refused: pdata and protowire disagree on how to skip them.
func skipField(num protowire.Number, typ protowire.Type, b []byte) int {
	if typ == protowire.StartGroupType || typ == protowire.EndGroupType {
		return -1
	}
	return protowire.ConsumeFieldValue(num, typ, b)
}

// consumeLen consumes a length-delimited value, or reports -1 when the
// field has another wire type (pdata rejects that for every known field).
func consumeLen(typ protowire.Type, b []byte) ([]byte, int) {
	if typ != protowire.BytesType {
		return nil, -1
	}
	return protowire.ConsumeBytes(b)
}

func (d *fastOTLP) request(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num == 1 {
			var v []byte
			if v, n = consumeLen(typ, b); n < 0 || !d.resourceSpans(v) {
				return false
			}
		} else if n = skipField(num, typ, b); n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// resourceSpans reads the resource first (its service name is interned
// before the spans, as addTraces does), then the spans.
func (d *fastOTLP) resourceSpans(b []byte) bool {
	var res []byte
	resources := 0
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 {
			return false
		}
		rest = rest[n:]
		switch num {
		case 1:
			res, n = consumeLen(typ, rest)
			resources++
		case 2, 3:
			_, n = consumeLen(typ, rest)
		case 1000: // deprecated instrumentation_library_spans: pdata's business
			return false
		default:
			n = skipField(num, typ, rest)
		}
		if n < 0 {
			return false
		}
		rest = rest[n:]
	}
	if resources > 1 || !validMessage(res, &resourceFields, 0) {
		return false // pdata merges repeated messages
	}
	svc, ok := d.serviceName(res)
	if !ok {
		return false
	}
	svcSym := d.service(svc)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		if num == 2 {
			var v []byte
			if v, n = consumeLen(typ, b); !d.scopeSpans(v, svcSym) {
				return false
			}
		} else {
			n = skipField(num, typ, b)
		}
		b = b[n:]
	}
	return true
}

// service interns a resource's service name as addTraces does.
func (d *fastOTLP) service(name string) Sym {
	if name == "" {
		name = "unknown_service"
		d.w.add("missing service.name", "a resource without service.name: spans attributed to unknown_service")
	}
	return d.set.Intern(name)
}

// serviceName returns the string value of the first service.name attribute
// of a validated Resource ("" when there is none); false when that value is
// not a string, whose rendering is pdata's.
func (d *fastOTLP) serviceName(res []byte) (string, bool) {
	for len(res) > 0 {
		num, typ, n := protowire.ConsumeTag(res)
		res = res[n:]
		if num != 1 {
			res = res[skipField(num, typ, res):]
			continue
		}
		kv, n := protowire.ConsumeBytes(res)
		res = res[n:]
		key, val, ok := keyValue(kv)
		if !ok {
			return "", false
		}
		if wireString(key) != "service.name" {
			continue
		}
		v, ok := anyValue(val, 1)
		if !ok || (v.kind != valueStr && v.kind != valueEmpty) {
			return "", false
		}
		return wireString(v.bytes), true
	}
	return "", true
}

func (d *fastOTLP) scopeSpans(b []byte, svc Sym) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var v []byte
		switch num {
		case 1:
			if v, n = consumeLen(typ, b); n >= 0 && !validMessage(v, &scopeFields, 0) {
				return false
			}
		case 2:
			if v, n = consumeLen(typ, b); n >= 0 && !d.span(v, svc) {
				return false
			}
		case 3:
			_, n = consumeLen(typ, b)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// span decodes one Span message and adds it through addRecord, the tail it
// shares with the pdata path.
func (d *fastOTLP) span(b []byte, svc Sym) bool {
	s := Span{Service: svc}
	var kind, code int32
	var name, msg []byte
	statuses := 0
	d.a.reset()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var v []byte
		switch num {
		case 1:
			if v, n = consumeLen(typ, b); n >= 0 && !wireID(s.TraceID[:], v) {
				return false
			}
		case 2:
			if v, n = consumeLen(typ, b); n >= 0 && !wireID(s.SpanID[:], v) {
				return false
			}
		case 4:
			if v, n = consumeLen(typ, b); n >= 0 && !wireID(s.ParentID[:], v) {
				return false
			}
		case 3:
			_, n = consumeLen(typ, b)
		case 5:
			name, n = consumeLen(typ, b)
		case 6:
			var k uint64
			if typ != protowire.VarintType {
				return false
			}
			k, n = protowire.ConsumeVarint(b)
			kind = int32(k)
		case 7, 8:
			var t uint64
			if typ != protowire.Fixed64Type {
				return false
			}
			if t, n = protowire.ConsumeFixed64(b); num == 7 {
				s.Start = int64(t)
			} else {
				s.End = int64(t)
			}
		case 9:
			if v, n = consumeLen(typ, b); n >= 0 && !d.attribute(v) {
				return false
			}
		case 10, 12, 14:
			if typ != protowire.VarintType {
				return false
			}
			_, n = protowire.ConsumeVarint(b)
		case 11:
			if v, n = consumeLen(typ, b); n >= 0 && !validMessage(v, &eventFields, 0) {
				return false
			}
		case 13:
			if v, n = consumeLen(typ, b); n >= 0 && !d.link(v) {
				return false
			}
		case 15:
			statuses++
			if v, n = consumeLen(typ, b); n >= 0 && !status(v, &msg, &code) {
				return false
			}
		case 16:
			if typ != protowire.Fixed32Type {
				return false
			}
			_, n = protowire.ConsumeFixed32(b)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	if statuses > 1 {
		return false // pdata merges repeated messages
	}
	addRecord(d.set, &s, kind, wireString(name), code, wireString(msg), &d.a, d.w)
	return true
}

// wireID copies an identifier of len(dst) bytes; an empty one is zero, as
// pdata reads it, and any other length is pdata's error to report.
func wireID(dst, v []byte) bool {
	switch len(v) {
	case 0:
		clear(dst)
	case len(dst):
		copy(dst, v)
	default:
		return false
	}
	return true
}

func status(b []byte, msg *[]byte, code *int32) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch num {
		case 2:
			*msg, n = consumeLen(typ, b)
		case 3:
			var c uint64
			if typ != protowire.VarintType {
				return false
			}
			c, n = protowire.ConsumeVarint(b)
			*code = int32(c)
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// link gathers a span link's identifiers into the attrs' scratch list.
func (d *fastOTLP) link(b []byte) bool {
	if !validMessage(b, &linkFields, 0) {
		return false
	}
	var l Link
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		switch num {
		case 1, 2:
			v, m := protowire.ConsumeBytes(b)
			if num == 1 {
				wireID(l.TraceID[:], v)
			} else {
				wireID(l.SpanID[:], v)
			}
			n = m
		default:
			n = skipField(num, typ, b)
		}
		b = b[n:]
	}
	d.a.links = append(d.a.links, l)
	return true
}

// attribute feeds one span attribute to the attrs, or only checks it when
// its key is one the normalisation never reads.
func (d *fastOTLP) attribute(b []byte) bool {
	key, val, ok := keyValue(b)
	if !ok {
		return false
	}
	k, wanted := wants(wireString(key))
	v, ok := anyValue(val, 1)
	if !ok {
		return false
	}
	if !wanted {
		return true
	}
	ks := wireString(key)
	switch v.kind {
	case valueStr:
		d.a.strKey(k, ks, wireString(v.bytes))
	case valueInt:
		d.a.intKey(k, ks, int64(v.num))
	case valueBool:
		d.a.boolKey(k, v.num != 0)
	case valueDouble:
		if f := math.Float64frombits(v.num); f == float64(int64(f)) {
			d.a.intKey(k, ks, int64(f))
		}
	case valueArray:
		first, ok := firstElement(v.bytes)
		if !ok {
			return false
		}
		d.a.strKey(k, ks, first)
	}
	return true
}

// firstElement returns the first value of an ArrayValue as pdata's AsString
// would render it: "" for an empty array; false for anything but a string,
// whose rendering is left to pdata.
func firstElement(b []byte) (string, bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		if num == 1 {
			el, _ := protowire.ConsumeBytes(b)
			v, _ := anyValue(el, 0) // validated with the array
			return wireString(v.bytes), v.kind == valueStr
		}
		b = b[skipField(num, typ, b):]
	}
	return "", true
}

// keyValue splits a KeyValue into its key and its AnyValue's bytes. False
// when it is malformed or holds what only pdata reads (a repeated value,
// which pdata merges; a key given as a string-table index).
func keyValue(b []byte) (key, val []byte, ok bool) {
	values := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, false
		}
		b = b[n:]
		switch num {
		case 1:
			key, n = consumeLen(typ, b)
		case 2:
			val, n = consumeLen(typ, b)
			values++
		case 3:
			return nil, nil, false
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return nil, nil, false
		}
		b = b[n:]
	}
	return key, val, values <= 1
}

// valueKind is the type of an AnyValue, as pcommon.ValueType.
type valueKind uint8

const (
	valueEmpty valueKind = iota
	valueStr
	valueBool
	valueInt
	valueDouble
	valueMap
	valueArray
	valueBytes
)

// wireValue is a decoded AnyValue: the last of its oneof fields wins, as
// in pdata. bytes holds a string, array, map or bytes value; num a bool,
// int or the bits of a double.
type wireValue struct {
	kind  valueKind
	bytes []byte
	num   uint64
}

// maxWireDepth bounds the nesting of arrays and maps the fast path walks;
// deeper values go to pdata, which has its own limit.
const maxWireDepth = 32

// anyValue decodes and checks an AnyValue at nesting depth depth.
func anyValue(b []byte, depth int) (wireValue, bool) {
	var v wireValue
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return v, false
		}
		b = b[n:]
		switch num {
		case 1, 5, 6, 7:
			var x []byte
			if x, n = consumeLen(typ, b); n < 0 {
				return v, false
			}
			v.bytes = x
			switch num {
			case 1:
				v.kind = valueStr
			case 5:
				v.kind = valueArray
			case 6:
				v.kind = valueMap
			case 7:
				v.kind = valueBytes
			}
			if num == 5 || num == 6 {
				if depth >= maxWireDepth || !validMessage(x, fieldsOf(num), depth+1) {
					return v, false
				}
			}
		case 2, 3:
			if typ != protowire.VarintType {
				return v, false
			}
			v.num, n = protowire.ConsumeVarint(b)
			v.kind = valueInt
			if num == 2 {
				v.kind, v.num = valueBool, boolBits(v.num != 0)
			}
		case 4:
			if typ != protowire.Fixed64Type {
				return v, false
			}
			v.num, n = protowire.ConsumeFixed64(b)
			v.kind = valueDouble
		case 8: // a string-table index (profiles): pdata's business
			return v, false
		default:
			n = skipField(num, typ, b)
		}
		if n < 0 {
			return v, false
		}
		b = b[n:]
	}
	return v, true
}

func boolBits(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func fieldsOf(anyValueField protowire.Number) *wireMessage {
	if anyValueField == 5 {
		return &arrayFields
	}
	return &kvlistFields
}

// wireField describes a field pdata knows in a message the fast path only
// checks: its wire type and, for a message, its fields; idLen, for trace
// and span identifiers, the one length besides 0 that pdata accepts.
type wireField struct {
	typ   protowire.Type
	msg   *wireMessage
	idLen int
	value bool // an AnyValue (keyValue-style checks)
	kv    bool // a KeyValue
}

// wireMessage maps field numbers to their descriptions; numbers it does not
// list are skipped as unknown, as pdata skips them.
type wireMessage map[protowire.Number]wireField

var (
	wStr      = wireField{typ: protowire.BytesType}
	wVarint   = wireField{typ: protowire.VarintType}
	wFixed32  = wireField{typ: protowire.Fixed32Type}
	wFixed64  = wireField{typ: protowire.Fixed64Type}
	wKeyValue = wireField{typ: protowire.BytesType, kv: true}

	resourceFields  = wireMessage{1: wKeyValue, 2: wVarint, 3: {typ: protowire.BytesType, msg: &entityRefFields}}
	entityRefFields = wireMessage{1: wStr, 2: wStr, 3: wStr, 4: wStr}
	scopeFields     = wireMessage{1: wStr, 2: wStr, 3: wKeyValue, 4: wVarint}
	eventFields     = wireMessage{1: wFixed64, 2: wStr, 3: wKeyValue, 4: wVarint}
	linkFields      = wireMessage{
		1: {typ: protowire.BytesType, idLen: 16}, 2: {typ: protowire.BytesType, idLen: 8},
		3: wStr, 4: wKeyValue, 5: wVarint, 6: wFixed32,
	}
	arrayFields  = wireMessage{1: {typ: protowire.BytesType, value: true}}
	kvlistFields = wireMessage{1: wKeyValue}
)

// validMessage reports whether pdata would read b, a message with fields
// fs at nesting depth depth, without error (and the fast path may take it).
func validMessage(b []byte, fs *wireMessage, depth int) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		f, known := (*fs)[num]
		if !known {
			if n = skipField(num, typ, b); n < 0 {
				return false
			}
			b = b[n:]
			continue
		}
		if typ != f.typ {
			return false
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return false
		}
		if typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b)
			switch {
			case f.idLen > 0 && len(v) != 0 && len(v) != f.idLen:
				return false
			case f.msg != nil && !validMessage(v, f.msg, depth+1):
				return false
			case f.value:
				if _, ok := anyValue(v, depth+1); !ok {
					return false
				}
			case f.kv:
				_, val, ok := keyValue(v)
				if !ok {
					return false
				}
				if _, ok := anyValue(val, depth+1); !ok {
					return false
				}
			}
		}
		b = b[n:]
	}
	return true
}
