package ingest

import (
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// The OTLP JSON fast path (see fastOTLP) reads the canonical form the
// collector's file exporter and pdata write: camelCase keys, hex ids,
// integers for enums, each key once. Anything else (snake_case keys, enum
// names, base64 ids, unknown keys, nulls, bytes values, numbers it cannot
// be sure pdata reads alike) is refused and left to pdata.

// json parses one OTLP JSON document into the batch, or reports false (and
// leaves the batch empty) when the document is pdata's to decode.
func (d *fastOTLP) json(b []byte) bool {
	d.reset()
	s := jsonScan{b: b}
	ok := s.object(func(key string) bool {
		return key == "resourceSpans" && s.array(func() bool { return d.jsonResourceSpans(&s) })
	})
	s.ws()
	if !ok || s.i != len(s.b) {
		d.reset()
		return false
	}
	return true
}

// jsonScan reads strict JSON from b at i.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// eat consumes c after white space, if it is next.
func (s *jsonScan) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads an object, calling fn with each key once its colon is read
// (fn reads the value). A key seen twice is refused (pdata would merge or
// overwrite), as is a document with more than 16 keys in one object: no
// object the fast path reads has more.
func (s *jsonScan) object(fn func(key string) bool) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	var seen [16]string
	var mask uint64 // a bit per key signature, to compare keys only on a hit
	n := 0
	for {
		k, ok := s.str()
		if !ok || !s.eat(':') || n == len(seen) || k == "" {
			return false
		}
		bit := uint64(1) << ((uint(len(k))*7 + uint(k[0]) + uint(k[len(k)-1])*3) % 64)
		if mask&bit != 0 {
			for _, x := range seen[:n] {
				if x == k {
					return false
				}
			}
		}
		mask |= bit
		seen[n] = k
		n++
		if !fn(k) {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

// quoted reports whether a string comes next.
func (s *jsonScan) quoted() bool {
	s.ws()
	return s.i < len(s.b) && s.b[s.i] == '"'
}

// array reads an array, calling fn to read each element.
func (s *jsonScan) array(fn func() bool) bool {
	if !s.eat('[') {
		return false
	}
	if s.eat(']') {
		return true
	}
	for {
		if !fn() {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat(']')
	}
}

// str reads a string. An unescaped one aliases b; raw control characters
// and surrogate escapes are refused.
func (s *jsonScan) str() (string, bool) {
	if !s.eat('"') {
		return "", false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			v := wireString(s.b[start:s.i])
			s.i++
			return v, true
		case c == '\\':
			return s.escaped(start)
		case c < 0x20:
			return "", false
		}
		s.i++
	}
	return "", false
}

func (s *jsonScan) escaped(start int) (string, bool) {
	buf := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			buf = append(buf, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			return "", false
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if s.i+4 > len(s.b) {
				return "", false
			}
			r, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 32)
			if err != nil || r >= 0xd800 && r < 0xe000 {
				return "", false
			}
			buf = utf8.AppendRune(buf, rune(r))
			s.i += 4
		default:
			return "", false
		}
	}
	return "", false
}

// digits reads a bare integer literal (an optional minus, then digits
// with no leading zero) and returns its text.
func (s *jsonScan) digits() (string, bool) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	d := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == d || (s.b[d] == '0' && s.i > d+1) {
		return "", false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return "", false
		}
	}
	return wireString(s.b[start:s.i]), true
}

// uint reads an unsigned integer of the given size given as a bare literal
// or a decimal string, both of which pdata reads with strconv's rules.
func (s *jsonScan) uint(bits int) (uint64, bool) {
	text, ok := s.integerText()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(text, 10, bits)
	return n, err == nil
}

// integerText returns the text of an integer given as a string or a bare
// literal, for strconv to parse as pdata does.
func (s *jsonScan) integerText() (string, bool) {
	if s.quoted() {
		return s.str()
	}
	return s.digits()
}

// enum reads an enum given as a bare non-negative literal (names are
// pdata's to map).
func (s *jsonScan) enum() (int32, bool) {
	text, ok := s.digits()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(text, 10, 32)
	return int32(n), err == nil && n >= 0
}

// id reads a hex identifier into dst: empty (zero) or exactly its length.
func (s *jsonScan) id(dst []byte) bool {
	v, ok := s.str()
	if !ok {
		return false
	}
	if v == "" {
		clear(dst)
		return true
	}
	if len(v) != 2*len(dst) {
		return false
	}
	_, err := hex.Decode(dst, []byte(v))
	return err == nil
}

func (d *fastOTLP) jsonResourceSpans(s *jsonScan) bool {
	resolved := false
	ok := s.object(func(key string) bool {
		switch key {
		case "resource":
			if resolved {
				return false // after the spans: pdata's order, not ours
			}
			name, inst, ok := jsonResource(s)
			d.group(name, inst)
			resolved = true
			return ok
		case "scopeSpans":
			if !resolved {
				d.group("", "")
				resolved = true
			}
			return s.array(func() bool { return d.jsonScopeSpans(s) })
		case "schemaUrl":
			_, ok := s.str()
			return ok
		}
		return false
	})
	if ok && !resolved {
		d.group("", "") // addTraces names even an empty one
	}
	return ok
}

// jsonResource reads a Resource and returns its first service.name, which
// must be a string, and the instance its attributes name (instanceTags).
func jsonResource(s *jsonScan) (svc, inst string, ok bool) {
	found := false
	var tags instanceTags
	ok = s.object(func(key string) bool {
		switch key {
		case "attributes":
			return s.array(func() bool {
				k, v, ok := jsonKeyValue(s, 1)
				if !ok {
					return false
				}
				if k == "service.name" && !found {
					found = true
					svc = v.str
					return v.kind == valueStr || v.kind == valueEmpty
				}
				switch v.kind {
				case valueStr:
					tags.tag(k, v.str)
				case valueInt:
					tags.number(k, v.num)
				}
				return true
			})
		case "droppedAttributesCount":
			_, ok := s.uint(32)
			return ok
		}
		return false
	})
	return svc, tags.name(), ok
}

func (d *fastOTLP) jsonScopeSpans(s *jsonScan) bool {
	return s.object(func(key string) bool {
		switch key {
		case "scope":
			return s.object(func(key string) bool {
				switch key {
				case "name", "version":
					_, ok := s.str()
					return ok
				case "attributes":
					return jsonAttributes(s)
				case "droppedAttributesCount":
					_, ok := s.uint(32)
					return ok
				}
				return false
			})
		case "spans":
			return s.array(func() bool { return d.jsonSpan(s) })
		case "schemaUrl":
			_, ok := s.str()
			return ok
		}
		return false
	})
}

// jsonAttributes checks a list of attributes nothing reads.
func jsonAttributes(s *jsonScan) bool {
	return s.array(func() bool {
		_, _, ok := jsonKeyValue(s, 1)
		return ok
	})
}

func (d *fastOTLP) jsonSpan(s *jsonScan) bool {
	r := d.record()
	sp := &r.span
	var kind, code int32
	var name, msg, traceState string
	ok := s.object(func(key string) bool {
		var ok bool
		switch key {
		case "traceId":
			return s.id(sp.TraceID[:])
		case "spanId":
			return s.id(sp.SpanID[:])
		case "parentSpanId":
			return s.id(sp.ParentID[:])
		case "traceState":
			traceState, ok = s.str()
		case "name":
			name, ok = s.str()
		case "kind":
			kind, ok = s.enum()
		case "startTimeUnixNano", "endTimeUnixNano":
			var t uint64
			if t, ok = s.uint(64); key[0] == 's' {
				sp.Start = int64(t)
			} else {
				sp.End = int64(t)
			}
		case "flags", "droppedAttributesCount", "droppedEventsCount", "droppedLinksCount":
			_, ok = s.uint(32)
		case "attributes":
			ok = s.array(func() bool { return d.jsonAttribute(s) })
		case "events":
			ok = s.array(func() bool { return jsonEvent(s) })
		case "links":
			ok = s.array(func() bool { return d.jsonLink(s) })
		case "status":
			ok = s.object(func(key string) bool {
				var ok bool
				switch key {
				case "message":
					msg, ok = s.str()
				case "code":
					code, ok = s.enum()
				}
				return ok
			})
		}
		return ok
	})
	if !ok {
		return false
	}
	r.kind, r.code, r.name, r.msg, r.traceState = kind, code, name, msg, traceState
	return true
}

func jsonEvent(s *jsonScan) bool {
	return s.object(func(key string) bool {
		var ok bool
		switch key {
		case "timeUnixNano":
			_, ok = s.uint(64)
		case "name":
			_, ok = s.str()
		case "attributes":
			ok = jsonAttributes(s)
		case "droppedAttributesCount":
			_, ok = s.uint(32)
		}
		return ok
	})
}

func (d *fastOTLP) jsonLink(s *jsonScan) bool {
	var l Link
	ok := s.object(func(key string) bool {
		var ok bool
		switch key {
		case "traceId":
			ok = s.id(l.TraceID[:])
		case "spanId":
			ok = s.id(l.SpanID[:])
		case "traceState":
			_, ok = s.str()
		case "attributes":
			ok = jsonAttributes(s)
		case "droppedAttributesCount", "flags":
			_, ok = s.uint(32)
		}
		return ok
	})
	d.a.links = append(d.a.links, l)
	return ok
}

// jsonValue is a decoded AnyValue: its kind, a string value (or an array's
// first element, when a string), an integer or boolean (num).
type jsonValue struct {
	kind valueKind
	str  string
	num  int64
	// first is the kind of an array's first element (valueEmpty when the
	// array is empty or its first element is an empty value).
	first valueKind
	n     int // an array's length
}

// jsonAttribute feeds one span attribute to the attrs, as attribute does
// for protobuf.
func (d *fastOTLP) jsonAttribute(s *jsonScan) bool {
	key, v, ok := jsonKeyValue(s, 1)
	if !ok {
		return false
	}
	k, wanted := wants(key)
	if !wanted {
		return true
	}
	switch v.kind {
	case valueStr:
		d.a.strKey(k, key, v.str)
	case valueInt:
		d.a.intKey(k, key, v.num)
	case valueBool:
		d.a.boolKey(k, v.num != 0)
	case valueDouble:
		return false // pdata's float reading decides what it holds
	case valueArray:
		if v.n > 0 && v.first != valueStr {
			return false // pdata's AsString renders it
		}
		d.a.strKey(k, key, v.str)
	}
	return true
}

// jsonKeyValue reads a KeyValue at nesting depth depth.
func jsonKeyValue(s *jsonScan, depth int) (string, jsonValue, bool) {
	var key string
	var v jsonValue
	ok := s.object(func(k string) bool {
		var ok bool
		switch k {
		case "key":
			key, ok = s.str()
		case "value":
			v, ok = jsonAnyValue(s, depth+1)
		}
		return ok
	})
	return key, v, ok
}

// jsonAnyValue reads an AnyValue with at most one of its fields.
func jsonAnyValue(s *jsonScan, depth int) (jsonValue, bool) {
	var v jsonValue
	if depth >= maxWireDepth {
		return v, false
	}
	ok := s.object(func(key string) bool {
		switch key {
		case "stringValue":
			var ok bool
			v.kind = valueStr
			v.str, ok = s.str()
			return ok
		case "boolValue":
			v.kind = valueBool
			switch {
			case s.literal("true"):
				v.num = 1
				return true
			case s.literal("false"):
				return true
			}
			return false
		case "intValue":
			text, ok := s.integerText()
			if !ok {
				return false
			}
			n, err := strconv.ParseInt(text, 10, 64)
			v.kind, v.num = valueInt, n
			return err == nil
		case "doubleValue":
			v.kind = valueDouble
			return s.number()
		case "arrayValue":
			v.kind = valueArray
			return s.object(func(key string) bool {
				return key == "values" && s.array(func() bool {
					el, ok := jsonAnyValue(s, depth+1)
					if v.n == 0 {
						v.first, v.str = el.kind, el.str
					}
					v.n++
					return ok
				})
			})
		case "kvlistValue":
			v.kind = valueMap
			return s.object(func(key string) bool {
				return key == "values" && s.array(func() bool {
					_, _, ok := jsonKeyValue(s, depth+1)
					return ok
				})
			})
		}
		return false
	})
	return v, ok
}

// literal consumes the keyword w if it is next.
func (s *jsonScan) literal(w string) bool {
	s.ws()
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// number checks a bare JSON number literal without exponent, of at most 24
// characters: one pdata reads without error.
func (s *jsonScan) number() bool {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	d := s.i
	if n := digits(); n == 0 || (s.b[d] == '0' && n > 1) {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false // exponents, and their overflows, are pdata's to read
	}
	return s.i-start <= 24
}
