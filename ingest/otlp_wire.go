package ingest

import (
	"math"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"
)

// fastOTLP decodes OTLP straight into span records: protobuf messages
// with protowire (this file), JSON documents with a small scanner
// (otlp_json.go). No pdata tree is built, no string the Set already holds
// is copied, and the values of attribute keys the normalisation never reads
// are checked but not kept.
//
// Decoding is in two steps, which a stream runs on two cores (runBatches):
// parsing a message into the batch (proto, json), which touches no Set, and
// adding the batch to the Set in input order (apply), which interns the
// strings and resolves the attributes exactly as addTraces does.
//
// pdata stays the decoder of record. The fast path takes a message only when
// it is sure to produce exactly what pdata followed by addTraces would; on
// anything else (malformed input, whose error pdata then words, or rare
// shapes such as a repeated singular field, a deprecated field, a service
// name that is not a string) the parse reports false and the message goes
// to pdata. TestOTLPWireMatchesPdata, TestOTLPJSONFastMatchesPdata and
// their fuzz targets hold the paths to identical spans and errors.
type fastOTLP struct {
	groups []resourceGroup
	recs   []spanRecord
	a      *attrs // the attributes of the span being parsed

	// Set by the stream decoders (runBatches).
	buf  []byte            // the message, which the records' strings view
	td   []ptrace.Traces   // what pdata decoded when the parse refused
	read int64             // stored bytes read when the message was
	fail func(error) error // positions an error adding the batch
}

// resourceGroup is the spans of one resource: recs[first:] up to the next
// group.
type resourceGroup struct {
	service  string
	instance string // the process instance its attributes name, "" for none
	first    int
}

// spanRecord is a parsed span waiting for apply: ids and times set, its
// attributes gathered, its strings still views of the message.
type spanRecord struct {
	span                  Record
	kind, code            int32
	name, msg, traceState string
	a                     attrs
}

// reset empties the batch, keeping its storage.
func (d *fastOTLP) reset() {
	d.groups, d.recs, d.td = d.groups[:0], d.recs[:0], d.td[:0]
}

// group starts the spans of a resource.
func (d *fastOTLP) group(service, instance string) {
	d.groups = append(d.groups, resourceGroup{service: service, instance: instance, first: len(d.recs)})
}

// record starts a span record, reusing the storage of an earlier one.
func (d *fastOTLP) record() *spanRecord {
	if len(d.recs) < cap(d.recs) {
		d.recs = d.recs[:len(d.recs)+1]
	} else {
		d.recs = append(d.recs, spanRecord{})
	}
	r := &d.recs[len(d.recs)-1]
	r.span, r.kind, r.code, r.name, r.msg, r.traceState = Record{}, 0, 0, "", "", ""
	r.a.reset()
	d.a = &r.a
	return r
}

// proto parses protobuf message b into the batch, or reports false (and
// leaves the batch empty) when the message is pdata's to decode.
func (d *fastOTLP) proto(b []byte) bool {
	d.reset()
	if d.request(b) {
		return true
	}
	d.reset()
	return false
}

// apply adds the parsed spans to set, in order; it fails when the set's
// limits are reached.
func (d *fastOTLP) apply(set *Set, w *warnings) error {
	for gi, g := range d.groups {
		end := len(d.recs)
		if gi+1 < len(d.groups) {
			end = d.groups[gi+1].first
		}
		svc := serviceSym(set, w, g.service)
		for i := g.first; i < end; i++ {
			r := &d.recs[i]
			r.span.Service = svc
			setInstance(set, &r.span.Span, g.instance, w)
			// The times were parsed as OTLP's unsigned nanoseconds.
			err := addRecord(set, &r.span, uint64(r.span.Start), uint64(r.span.End), r.kind, r.name, r.code, r.msg, r.traceState, &r.a, w)
			if err != nil {
				return err
			}
		}
	}
	for _, td := range d.td {
		if err := addTraces(set, td, w); err != nil {
			return err
		}
	}
	return nil
}

// serviceSym interns a resource's service name, or unknown_service with a
// warning when it has none.
func serviceSym(set *Set, w *warnings, name string) Sym {
	if name == "" {
		name = "unknown_service"
		w.add("missing service.name", "a resource without service.name: spans attributed to unknown_service")
	}
	return set.Intern(name)
}

// wireString views b as a string without copying. The Set copies what it
// keeps (Intern), and nothing else outlives the batch holding the message.
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

// eachField calls fn with the number and wire type of each field of
// message b and the bytes after its tag; fn returns how many of those the
// field's value takes, or -1 to refuse the message. eachField reports
// whether every field was read.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) int) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if n = fn(num, typ, b); n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// lenField consumes a length-delimited value and hands it to read; -1 when
// the wire type is another (pdata rejects that for every known field) or
// read refuses the value.
func lenField(typ protowire.Type, b []byte, read func(v []byte) bool) int {
	v, n := consumeLen(typ, b)
	if n < 0 || !read(v) {
		return -1
	}
	return n
}

// varintField consumes a varint value, or reports -1 for another wire type.
func varintField(typ protowire.Type, b []byte, dst *uint64) int {
	if typ != protowire.VarintType {
		return -1
	}
	v, n := protowire.ConsumeVarint(b)
	*dst = v
	return n
}

// fixedField consumes a fixed64 (or, with want Fixed32Type, a fixed32)
// value, or reports -1 for another wire type.
func fixedField(typ, want protowire.Type, b []byte, dst *uint64) int {
	if typ != want {
		return -1
	}
	if want == protowire.Fixed32Type {
		v, n := protowire.ConsumeFixed32(b)
		*dst = uint64(v)
		return n
	}
	v, n := protowire.ConsumeFixed64(b)
	*dst = v
	return n
}

// accept takes any value.
func accept([]byte) bool { return true }

func (d *fastOTLP) request(b []byte) bool {
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		if num == 1 {
			return lenField(typ, b, d.resourceSpans)
		}
		return skipField(num, typ, b)
	})
}

// resourceSpans reads the resource first (its service name is interned
// before the spans, as addTraces does), then the spans.
func (d *fastOTLP) resourceSpans(b []byte) bool {
	var res []byte
	resources := 0
	ok := eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 1:
			resources++
			return lenField(typ, b, func(v []byte) bool { res = v; return true })
		case 2, 3:
			return lenField(typ, b, accept)
		case 1000: // deprecated instrumentation_library_spans: pdata's business
			return -1
		}
		return skipField(num, typ, b)
	})
	if !ok || resources > 1 || !validMessage(res, &resourceFields, 0) {
		return false // resources > 1: pdata merges repeated messages
	}
	svc, inst, ok := resourceNames(res)
	if !ok {
		return false
	}
	d.group(svc, inst)
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		if num == 2 {
			return lenField(typ, b, d.scopeSpans)
		}
		return skipField(num, typ, b)
	})
}

// resourceNames returns the string value of the first service.name
// attribute of a validated Resource ("" when there is none) and the
// instance its attributes name (instanceTags); false when that service
// name is not a string, whose rendering is pdata's.
func resourceNames(res []byte) (svc, inst string, ok bool) {
	found := false
	var tags instanceTags
	ok = eachField(res, func(num protowire.Number, typ protowire.Type, b []byte) int {
		if num != 1 {
			return skipField(num, typ, b)
		}
		return lenField(typ, b, func(kv []byte) bool {
			key, val, ok := keyValue(kv)
			if !ok {
				return false
			}
			k := wireString(key)
			if k != "service.name" || found {
				v, ok := anyValue(val, 1)
				switch v.kind {
				case valueStr:
					tags.tag(k, wireString(v.bytes))
				case valueInt:
					tags.number(k, int64(v.num))
				}
				return ok
			}
			found = true
			v, ok := anyValue(val, 1)
			svc = wireString(v.bytes)
			return ok && (v.kind == valueStr || v.kind == valueEmpty)
		})
	})
	return svc, tags.name(), ok
}

func (d *fastOTLP) scopeSpans(b []byte) bool {
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 1:
			return lenField(typ, b, func(v []byte) bool { return validMessage(v, &scopeFields, 0) })
		case 2:
			return lenField(typ, b, d.span)
		case 3:
			return lenField(typ, b, accept)
		}
		return skipField(num, typ, b)
	})
}

// span parses one Span message into a record, which apply completes with
// addRecord, the tail it shares with the pdata path. span, keyValue and anyValue run for every
// span and attribute: they loop over the fields themselves, which costs a
// quarter less than eachField's call per field.
func (d *fastOTLP) span(b []byte) bool {
	r := d.record()
	s := &r.span
	var kind, code, skip uint64
	var name, msg, traceState []byte
	statuses := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		var v []byte
		switch num {
		case 1, 2, 4:
			v, n = consumeLen(typ, b)
			if n >= 0 && !wireID([...][]byte{1: s.TraceID[:], 2: s.SpanID[:], 4: s.ParentID[:]}[num], v) {
				return false
			}
		case 3:
			traceState, n = consumeLen(typ, b)
		case 5:
			name, n = consumeLen(typ, b)
		case 6:
			n = varintField(typ, b, &kind)
		case 7, 8:
			var t uint64
			n = fixedField(typ, protowire.Fixed64Type, b, &t)
			if num == 7 {
				s.Start = int64(t)
			} else {
				s.End = int64(t)
			}
		case 9:
			if v, n = consumeLen(typ, b); n >= 0 && !d.attribute(v) {
				return false
			}
		case 10, 12, 14:
			n = varintField(typ, b, &skip)
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
			n = fixedField(typ, protowire.Fixed32Type, b, &skip)
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
	r.kind, r.code, r.name, r.msg, r.traceState = int32(kind), int32(code), wireString(name), wireString(msg), wireString(traceState)
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

func status(b []byte, msg *[]byte, code *uint64) bool {
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 2:
			return lenField(typ, b, func(v []byte) bool { *msg = v; return true })
		case 3:
			return varintField(typ, b, code)
		}
		return skipField(num, typ, b)
	})
}

// link gathers a span link's identifiers into the attrs' scratch list.
func (d *fastOTLP) link(b []byte) bool {
	if !validMessage(b, &linkFields, 0) {
		return false
	}
	var l Link
	eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		switch num {
		case 1:
			return lenField(typ, b, func(v []byte) bool { return wireID(l.TraceID[:], v) })
		case 2:
			return lenField(typ, b, func(v []byte) bool { return wireID(l.SpanID[:], v) })
		}
		return skipField(num, typ, b)
	})
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
		d.a.doubleKey(k, ks, math.Float64frombits(v.num))
	case valueArray:
		first, ok := firstElement(v.bytes)
		if !ok {
			return false
		}
		d.a.strKey(k, ks, first)
	}
	return true
}

// firstElement returns the first value of a validated ArrayValue as pdata's
// AsString would render it: "" for an empty array; false for anything but
// a string, whose rendering is left to pdata.
func firstElement(b []byte) (string, bool) {
	first, ok, seen := "", true, false
	eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		if num != 1 || seen {
			return skipField(num, typ, b)
		}
		seen = true
		return lenField(typ, b, func(el []byte) bool {
			v, _ := anyValue(el, 0)
			first, ok = wireString(v.bytes), v.kind == valueStr
			return true
		})
	})
	return first, ok
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
			n = -1
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
			v.bytes, v.kind = x, [...]valueKind{1: valueStr, 5: valueArray, 6: valueMap, 7: valueBytes}[num]
			if (num == 5 || num == 6) && (depth >= maxWireDepth || !validMessage(x, fieldsOf(num), depth+1)) {
				return v, false
			}
		case 2, 3:
			n = varintField(typ, b, &v.num)
			v.kind = valueInt
			if num == 2 {
				v.kind, v.num = valueBool, boolBits(v.num != 0)
			}
		case 4:
			v.kind = valueDouble
			n = fixedField(typ, protowire.Fixed64Type, b, &v.num)
		case 8: // a string-table index (profiles): pdata's business
			n = -1
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
	return eachField(b, func(num protowire.Number, typ protowire.Type, b []byte) int {
		f, known := (*fs)[num]
		if !known {
			return skipField(num, typ, b)
		}
		if typ != f.typ {
			return -1
		}
		if typ != protowire.BytesType {
			return protowire.ConsumeFieldValue(num, typ, b)
		}
		return lenField(typ, b, func(v []byte) bool {
			switch {
			case f.idLen > 0:
				return len(v) == 0 || len(v) == f.idLen
			case f.msg != nil:
				return validMessage(v, f.msg, depth+1)
			case f.value:
				_, ok := anyValue(v, depth+1)
				return ok
			case f.kv:
				_, val, ok := keyValue(v)
				if ok {
					_, ok = anyValue(val, depth+1)
				}
				return ok
			}
			return true
		})
	})
}
