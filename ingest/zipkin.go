package ingest

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// decodeZipkinJSON decodes Zipkin v2 JSON: an array of spans (what
// /api/v2/trace/{id} returns and what reporters POST to /api/v2/spans), an
// array of such arrays (/api/v2/traces), or several of either in a row.
//
// Zipkin's v2 model puts the service in localEndpoint.serviceName, the
// callee of a client span in remoteEndpoint, times in microseconds and tags
// as a flat string map; the "error" tag marks a failed span whatever its
// value. A server span that reuses its client's span id (shared: true, as
// B3 propagation without a new span id produces) gets an id of its own, a
// child of the client span, and the server's own children under it: the
// call tree is then what OpenTelemetry would have recorded.
func decodeZipkinJSON(s *source, set *Set, w *warnings) error {
	d := &zipkinJSON{jsonStream: newJSONStream(s, "Zipkin JSON"), set: set, w: w, first: len(set.Spans)}
	for {
		at := d.valueStart()
		tok, err := d.token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if tok != json.Delim('[') {
			return d.s.errAt(d.base+at, fmt.Errorf("Zipkin JSON: expected an array of spans, found %v", tok))
		}
		if err := d.array(true); err != nil {
			return err
		}
	}
	d.unshare()
	return nil
}

// zipkinJSON is the state of one Zipkin JSON input being decoded.
type zipkinJSON struct {
	*jsonStream
	set    *Set
	w      *warnings
	a      attrs
	sp     zSpan
	keys   []string
	first  int   // index in Set.Spans of this input's first span
	shared []int // indices of server spans that shared their client's id
	spans  int
}

// zSpan is one Zipkin v2 span. Ids and times reuse the Jaeger JSON value
// types: hex ids (right-aligned when shorter), microsecond numbers.
type zSpan struct {
	TraceID        jTraceID   `json:"traceId"`
	ID             jSpanID    `json:"id"`
	ParentID       jSpanID    `json:"parentId"`
	Kind           string     `json:"kind"`
	Name           string     `json:"name"`
	Timestamp      jStart     `json:"timestamp"`
	Duration       jDuration  `json:"duration"`
	LocalEndpoint  *zEndpoint `json:"localEndpoint"`
	RemoteEndpoint *zEndpoint `json:"remoteEndpoint"`
	Tags           zTags      `json:"tags"`
	Shared         bool       `json:"shared"`
}

// zTags is a span's tag map, decoded only when it holds at most
// MaxAttributes entries: encoding/json would otherwise build a map of every
// tag of a span made of millions of them (10^7 took 1 GB) before a check
// on its length could refuse it.
type zTags struct {
	m   map[string]string
	lim *Limits
}

// UnmarshalJSON counts the members, then decodes them.
func (t *zTags) UnmarshalJSON(data []byte) error {
	if err := t.lim.attributes(jsonElements(data), "tags in one span"); err != nil {
		return err
	}
	return json.Unmarshal(data, &t.m)
}

// zEndpoint is a Zipkin endpoint: a service and its network address.
type zEndpoint struct {
	ServiceName string `json:"serviceName"`
	IPv4        string `json:"ipv4"`
	IPv6        string `json:"ipv6"`
	Port        int    `json:"port"`
}

// array reads the elements of an array whose '[' has been read: spans, or
// (at the top level only) arrays of spans, one per trace.
func (d *zipkinJSON) array(top bool) error {
	for d.dec.More() {
		if d.spans++; d.spans%1024 == 0 {
			if err := d.s.ctx.Err(); err != nil {
				return err
			}
		}
		if top && d.peek() == '[' {
			if _, err := d.token(); err != nil {
				return err
			}
			if err := d.array(false); err != nil {
				return err
			}
			continue
		}
		d.sp = zSpan{Tags: zTags{m: d.sp.Tags.m, lim: d.s.lim}}
		clear(d.sp.Tags.m)
		start, err := d.decode(&d.sp, "span")
		if err != nil {
			return err
		}
		if err := d.add(start); err != nil {
			return err
		}
	}
	_, err := d.token() // ']'
	return err
}

// peek returns the first byte of the next value without consuming it.
func (d *zipkinJSON) peek() byte {
	r, ok := d.dec.Buffered().(io.ByteReader)
	if !ok {
		return 0
	}
	for {
		c, err := r.ReadByte()
		if err != nil {
			// The decoder has not buffered the value yet: More has
			// filled its buffer up to the value, so this is the end.
			return 0
		}
		switch c {
		case ' ', '\t', '\r', '\n', ',':
			continue
		}
		return c
	}
}

// add converts the span just decoded, which started at decoder offset start.
func (d *zipkinJSON) add(start int64) error {
	z := &d.sp
	sp := Record{Span: Span{TraceID: z.TraceID.id, SpanID: z.ID.id, ParentID: z.ParentID.id, Start: z.Timestamp.ns}}
	end, err := spanEnd(sp.Start, z.Duration.ns)
	if err != nil {
		return d.s.errAt(d.base+start, fmt.Errorf("Zipkin JSON: span %s: %w", sp.SpanID, err))
	}
	sp.End = end
	if sp.Start == 0 {
		d.w.add("missing timestamp", "Zipkin span %s has no timestamp", sp.SpanID)
	}
	switch k, ok := ParseKind(z.Kind); {
	case z.Kind == "":
		sp.Kind = KindInternal // Zipkin's local spans carry no kind
	case ok:
		sp.Kind = k
	default:
		d.w.add("unknown span kind", "Zipkin span %s has kind %q", sp.SpanID, z.Kind)
	}
	service := ""
	if z.LocalEndpoint != nil {
		service = z.LocalEndpoint.ServiceName
	}
	if service == "" {
		d.w.add("missing service.name", "Zipkin span %s has no localEndpoint.serviceName: attributed to unknown_service", sp.SpanID)
		service = "unknown_service"
	}
	sp.Service = d.set.Intern(service)
	if l := z.LocalEndpoint; l != nil {
		setInstance(d.set, &sp.Span, endpointInstance(cmp.Or(l.IPv4, l.IPv6), strconv.Itoa(l.Port)), d.w)
	}

	a := &d.a
	a.reset()
	if r := z.RemoteEndpoint; r != nil && (sp.Kind == KindClient || sp.Kind == KindProducer) {
		// The callee; a server span's remote endpoint is its caller.
		a.str("peer.service", r.ServiceName)
		if ip := cmp.Or(r.IPv4, r.IPv6); ip != "" {
			a.str("server.address", ip)
			if r.Port > 0 {
				a.str("server.port", strconv.Itoa(r.Port))
			}
		}
	}
	d.keys = d.keys[:0]
	for k := range z.Tags.m {
		d.keys = append(d.keys, k)
	}
	slices.Sort(d.keys) // a stable order when two keys feed one field
	for _, k := range d.keys {
		v := z.Tags.m[k]
		if k == "error" {
			// Zipkin marks a failure with an "error" tag holding the message.
			a.boolean(k, true)
			if sp.StatusMessage == 0 && v != "" && v != "true" {
				sp.StatusMessage = a.intern(d.set, v)
			}
			continue
		}
		if k == "http.path" {
			k = "http.target" // Zipkin's path tag: the request path, no query
		}
		a.str(k, v)
	}
	sp.Name = a.intern(d.set, z.Name)
	a.finish(d.set, &sp)
	checkSpan(d.set, &sp, a, d.w)
	if z.Shared && sp.Kind == KindServer {
		d.shared = append(d.shared, len(d.set.Spans))
	}
	if err := d.set.add(&sp); err != nil {
		return d.s.errAt(d.base+start, fmt.Errorf("Zipkin JSON: span %s: %w", sp.SpanID, err))
	}
	return nil
}

// unshare gives each shared server span whose client span is in the same
// input an id of its own, derived from the shared one, makes it a child of
// the client span, and moves the server's children (spans of its service
// whose parent is the shared id) under it. A shared server span alone with
// its id (its caller not traced, as Envoy marks every ingress span shared)
// keeps it: no span to be the child of.
func (d *zipkinJSON) unshare() {
	if len(d.shared) == 0 {
		return
	}
	type key struct {
		t TraceID
		s SpanID
	}
	type server struct {
		id      SpanID
		service Sym
	}
	spans := d.set.Spans[d.first:]
	holders := make(map[key]int, len(spans))
	for i := range spans {
		holders[key{spans[i].TraceID, spans[i].SpanID}]++
	}
	moved := make(map[key]server, len(d.shared))
	for _, i := range d.shared {
		sp := &d.set.Spans[i]
		if holders[key{sp.TraceID, sp.SpanID}] < 2 {
			continue
		}
		id := sharedServerID(sp.SpanID)
		moved[key{sp.TraceID, sp.SpanID}] = server{id, sp.Service}
		d.w.add("zipkin shared span", "server span %s shares its id with its client span: given id %s", sp.SpanID, id)
		sp.ParentID, sp.SpanID = sp.SpanID, id
	}
	for i := range spans {
		sp := &spans[i]
		if srv, ok := moved[key{sp.TraceID, sp.ParentID}]; ok && sp.Service == srv.service && sp.SpanID != srv.id {
			sp.ParentID = srv.id
		}
	}
}

// sharedServerID derives a stable span id for the server half of a shared
// span: FNV-1a of the shared id, never zero and never the id itself.
func sharedServerID(shared SpanID) SpanID {
	h := fnv64("zipkin-shared:" + string(shared[:]))
	var id SpanID
	binary.BigEndian.PutUint64(id[:], h|1)
	if id == shared {
		id[0] ^= 0x80
	}
	return id
}
