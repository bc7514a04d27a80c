package ingest

import (
	"fmt"
	"strings"
	"unsafe"
)

// MaxValueBytes bounds every attribute value the Span record keeps (status
// messages, operation names, error types): one enormous attribute must not
// balloon the string table. Longer values are cut and the span is flagged.
const MaxValueBytes = 1024

// Set holds decoded spans, their interned strings and links, and the inputs
// they came from. Several inputs decode into one Set so traces spread over
// files join up.
type Set struct {
	Spans []Span
	Links []Link
	// extras are the spans' SpanExtra that are not NoExtra (Span.Extra
	// indexes them from 1).
	extras []SpanExtra
	Inputs []Input
	// Skipped lists files inside directories that held no trace format.
	Skipped []Skip

	strs  []string
	index map[string]Sym

	lim      Limits // set by Decode from its Options
	strBytes int64  // bytes of strs, with stringOverhead each
	strFull  bool   // a string was refused: the next add fails

	// pendingBytes is the stored size of the inputs ReadFiles will decode
	// after the current one, for the span table's estimate (source.presize).
	pendingBytes int64
	// reserved is set once an estimate has sized the table; past it, the
	// table grows by an eighth rather than doubling.
	reserved bool
	// origins are the distinct pairs of head sampling and instance
	// spans carry (Span.Origin indexes them; 0 is "unknown"), originIx
	// finds them, and last is the one set most recently (a resource's
	// spans come in a row).
	origins  []origin
	originIx map[origin]uint16
	last     uint16
}

// Sampling is how a trace was kept: with probability P (0 when the source
// does not say) by Source (SampledJaeger, SampledTraceState,
// SampledRateLimited), "" when unknown.
type Sampling struct {
	P      float64
	Source string
}

// origin is one entry of the Set's table of origins.
type origin struct {
	Sampling
	instance Sym
}

// maxOrigins is how many distinct origins Span.Origin can index.
const maxOrigins = 1 << 16

// origin returns the origin of sp.
func (s *Set) origin(sp *Span) origin {
	if i := int(sp.Origin); i > 0 && i < len(s.origins) {
		return s.origins[i]
	}
	return origin{}
}

// Sampling returns how sp's trace was kept.
func (s *Set) Sampling(sp *Span) Sampling { return s.origin(sp).Sampling }

// Instance returns the process instance that recorded sp (an interned
// name, see SetInstance), 0 when its resource named none.
func (s *Set) Instance(sp *Span) Sym { return s.origin(sp).instance }

// SetSampling records on sp how its trace was kept. Distinct samplings
// are few (one per sampler configuration). Past 65535 distinct origins,
// hostile input or a fleet of that many instances, a new one is refused
// (see setOrigin).
func (s *Set) SetSampling(sp *Span, x Sampling) {
	o := s.origin(sp)
	o.Sampling = x
	s.setOrigin(sp, o)
}

// SetInstance records on sp the process instance that recorded it,
// interned by the caller (a decoder names it from its resource: OTLP's
// service.instance.id, Jaeger's client-uuid, a pod, host and process id,
// Zipkin's local endpoint). It reports false where the table of origins
// is full and the instance was not recorded.
func (s *Set) SetInstance(sp *Span, inst Sym) bool {
	o := s.origin(sp)
	o.instance = inst
	return s.setOrigin(sp, o)
}

// setOrigin points sp at o in the table, adding it if new. A full table
// keeps the sampling and drops the instance where it holds that sampling
// alone, and otherwise leaves sp as it was; setOrigin then reports false.
func (s *Set) setOrigin(sp *Span, o origin) bool {
	if o == (origin{}) {
		sp.Origin = 0
		return true
	}
	if int(s.last) < len(s.origins) && s.last > 0 && s.origins[s.last] == o {
		sp.Origin = s.last
		return true
	}
	if s.originIx == nil {
		s.origins, s.originIx = []origin{{}}, map[origin]uint16{}
	}
	i, ok := s.originIx[o]
	if !ok && len(s.origins) >= maxOrigins {
		if i, ok = s.originIx[origin{Sampling: o.Sampling}]; ok || o.Sampling == (Sampling{}) {
			sp.Origin = i
		}
		return false
	}
	if !ok {
		i = uint16(len(s.origins))
		s.origins = append(s.origins, o)
		s.originIx[o] = i
	}
	sp.Origin, s.last = i, i
	return true
}

// NewSet returns an empty Set whose string table holds only "".
func NewSet() *Set {
	return &Set{strs: []string{""}, index: map[string]Sym{"": 0}, lim: Limits{}.withDefaults()}
}

// Str resolves an interned string.
func (s *Set) Str(x Sym) string {
	if int(x) < len(s.strs) {
		return s.strs[x]
	}
	return ""
}

// Intern returns the Sym for v, adding it to the table if new. Values longer
// than MaxValueBytes are cut (on a UTF-8 boundary) before interning. Past
// Limits.MaxHeldBytes a new string is refused (Intern returns 0) and the
// next span added fails with a *LimitError.
// The table keeps its own copy of a new value, so v may alias a buffer
// the caller reuses.
func (s *Set) Intern(v string) Sym {
	v, _ = clip(v)
	if x, ok := s.index[v]; ok {
		return x
	}
	if s.held()+int64(len(v))+stringOverhead > s.lim.MaxHeldBytes {
		s.strFull = true
		return 0
	}
	v = strings.Clone(v)
	x := Sym(len(s.strs))
	s.strs = append(s.strs, v)
	s.index[v] = x
	s.strBytes += int64(len(v)) + stringOverhead
	return x
}

// stringOverhead is what the string table and its index spend on each
// string beside its bytes (a string header, a map entry and its share of
// the map's buckets), counted against Limits.MaxHeldBytes so that millions
// of short distinct strings are bounded too.
const stringOverhead = 64

// internBytes interns b without allocating when the string is already known.
func (s *Set) internBytes(b []byte) Sym {
	if x, ok := s.index[string(b)]; ok {
		return x
	}
	return s.Intern(string(b))
}

// add appends r. When full, capacity doubles: append's 1.25x growth for
// large slices copies a million-span Set four times over. Decoders that can
// estimate how many spans are coming call reserve first, so a large input
// is stored without the doubling's copies and slack. add is where every
// decoder meets the Set's budgets: past Limits.MaxSpans, or once a string
// was refused, it returns a *LimitError and appends nothing.
func (s *Set) add(r *Record) error {
	if err := s.lim.spans(len(s.Spans) + 1); err != nil {
		return err
	}
	if s.strFull {
		return s.lim.held(s.held() + MaxValueBytes)
	}
	if err := s.lim.held(s.held()); err != nil {
		return err
	}
	if len(s.Spans) == cap(s.Spans) {
		if s.reserved {
			s.grow(cap(s.Spans) + cap(s.Spans)/8)
		} else {
			s.grow(max(1024, 2*cap(s.Spans)))
		}
	}
	s.Append(*r)
	return nil
}

// Append adds r to the Set as it is, for spans built by hand (tests,
// tools): no budget applies. Its SpanExtra goes to the table beside the
// spans unless it is NoExtra; r.Span.Extra is set to match.
func (s *Set) Append(r Record) {
	r.Span.Extra = 0
	if r.SpanExtra != NoExtra {
		s.extras = append(s.extras, r.SpanExtra)
		r.Span.Extra = uint32(len(s.extras))
	}
	s.Spans = append(s.Spans, r.Span)
}

// Extra returns the fields of sp that few spans carry: NoExtra when it
// carries none of them.
func (s *Set) Extra(sp *Span) SpanExtra {
	if i := int(sp.Extra); i > 0 && i <= len(s.extras) {
		return s.extras[i-1]
	}
	return NoExtra
}

// held is the bytes of strings and links the Set holds.
func (s *Set) held() int64 {
	return s.strBytes + int64(len(s.Links))*int64(unsafe.Sizeof(Link{}))
}

// reserve makes room for n more spans, growing at least 1.25x so that
// repeated estimates stay amortised.
func (s *Set) reserve(n int) {
	s.reserved = true
	if need := len(s.Spans) + n; need > cap(s.Spans) {
		s.grow(max(need, cap(s.Spans)+cap(s.Spans)/4))
	}
}

// grow reallocates the span table, to capacity but never past MaxSpans:
// add refuses the span after that.
func (s *Set) grow(capacity int) {
	grown := make([]Span, len(s.Spans), max(len(s.Spans)+1, min(capacity, s.lim.MaxSpans)))
	copy(grown, s.Spans)
	s.Spans = grown
}

// SpanLinks returns the links of sp.
func (s *Set) SpanLinks(sp *Span) []Link {
	x := s.Extra(sp)
	return s.Links[x.FirstLink : x.FirstLink+uint32(x.NumLinks)]
}

// clip cuts v to MaxValueBytes on a rune boundary and reports whether it did.
func clip(v string) (string, bool) {
	if len(v) <= MaxValueBytes {
		return v, false
	}
	n := MaxValueBytes
	for n > 0 && v[n]&0xC0 == 0x80 {
		n--
	}
	return v[:n], true
}

// Format names a detected input format.
type Format string

// The formats ingest detects from content.
const (
	FormatOTLPProto       Format = "otlp-proto"        // one ExportTraceServiceRequest / TracesData
	FormatOTLPProtoStream Format = "otlp-proto-stream" // collector file exporter: 4-byte big-endian length + message, repeated
	FormatOTLPJSON        Format = "otlp-json"         // one request per document
	FormatOTLPJSONLines   Format = "otlp-jsonl"        // collector file exporter: one request per line
	FormatJaegerJSON      Format = "jaeger-json"       // Jaeger UI download / query API {"data":[...]} or a bare trace
	FormatJaegerAPIv3     Format = "jaeger-api-v3-json"
	FormatJaegerProto     Format = "jaeger-proto" // jaeger-idl api_v2 model Batch / Trace / SpansResponseChunk
	FormatTempoJSON       Format = "tempo-json"   // Grafana Tempo tempopb.Trace {"batches":[...]} or /api/v2/traces {"trace":{...}}
	FormatZipkinJSON      Format = "zipkin-json"  // Zipkin v2: an array of spans, or /api/v2/traces' array of arrays
)

// Input describes one decoded input: where its spans sit in Set.Spans and
// what decoding noticed along the way.
type Input struct {
	Name         string // file path, or "-" for stdin
	Format       Format
	Compression  string // "", "gzip" or "zstd"
	Bytes        int64  // bytes read after decompression
	First, Count int    // Set.Spans[First:First+Count]
	Warnings     []Warning
}

// Skip is a file passed over while reading a directory.
type Skip struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Warning is a non-fatal observation about the input, aggregated by kind.
type Warning struct {
	Kind    string `json:"kind"`
	Count   int    `json:"count"`
	Example string `json:"example"`
}

// String renders "kind (xN): example".
func (w Warning) String() string {
	if w.Count > 1 {
		return fmt.Sprintf("%s (x%d): %s", w.Kind, w.Count, w.Example)
	}
	return fmt.Sprintf("%s: %s", w.Kind, w.Example)
}

// warnings aggregates warnings by kind, keeping the first example of each and
// the order kinds were first seen.
type warnings struct {
	list []Warning
}

func (w *warnings) add(kind, format string, args ...any) {
	for i := range w.list {
		if w.list[i].Kind == kind {
			w.list[i].Count++
			return
		}
	}
	w.list = append(w.list, Warning{Kind: kind, Count: 1, Example: fmt.Sprintf(format, args...)})
}
