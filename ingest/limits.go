package ingest

import (
	"errors"
	"fmt"
)

// Limits bound what decoding may hold in memory, whatever the input says.
// Every decoder applies them: the span and held-bytes budgets through
// Set.add, the shape bounds (depth, attributes, values, items) by checking
// a document before a library unmarshals it (splitJSON for JSON,
// checkOTLPProtoShape for OTLP protobuf, checkJaegerSpanShape, jList) or,
// in a decoder that walks the wire format itself, by calling the checks
// below (attributes, values, depth, items) as it goes. A zero field takes its
// default. Past a bound decoding fails with a *LimitError naming the input,
// the position and the limit; nothing is dropped silently.
type Limits struct {
	// MaxSpans bounds the spans of a Set, over all inputs (--max-spans).
	// Default 2,000,000: about 450 MB of span records at the worst.
	MaxSpans int
	// MaxAttributes bounds the attributes (Jaeger: tags) of one span,
	// resource, scope, event or link. Default 1,000; OpenTelemetry SDKs
	// keep 128 by default.
	MaxAttributes int
	// MaxValues bounds the elements of one array or key-value-list
	// attribute value. Default 1,000.
	MaxValues int
	// MaxDepth bounds the nesting of a JSON document and of attribute
	// values (arrays in arrays). Default 64; OTLP itself needs 8.
	MaxDepth int
	// MaxDocumentItems bounds the spans, attributes, values, events and
	// links one document may hold: a library unmarshals a document whole
	// before any of it is normalised. Default 3,000,000, about 400 MB of
	// pdata objects.
	MaxDocumentItems int
	// MaxHeldBytes bounds what a Set holds besides its span records: the
	// bytes of its distinct strings (names, peers, routes, messages; each
	// cut to MaxValueBytes) and of its links. Default 256 MiB.
	MaxHeldBytes int64
}

// Default limits.
const (
	DefaultMaxSpans         = 2_000_000
	DefaultMaxAttributes    = 1_000
	DefaultMaxValues        = 1_000
	DefaultMaxDepth         = 64
	DefaultMaxDocumentItems = 3_000_000
	DefaultMaxHeldBytes     = 256 << 20
)

// defaultLimits is Limits{} with every default.
var defaultLimits = Limits{}.withDefaults()

// withDefaults returns l with every zero field set to its default.
func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxSpans, DefaultMaxSpans)
	def(&l.MaxAttributes, DefaultMaxAttributes)
	def(&l.MaxValues, DefaultMaxValues)
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxDocumentItems, DefaultMaxDocumentItems)
	if l.MaxHeldBytes <= 0 {
		l.MaxHeldBytes = DefaultMaxHeldBytes
	}
	return l
}

// ErrLimit is what every *LimitError matches with errors.Is.
var ErrLimit = errors.New("input exceeds a limit")

// LimitError reports an input that went past one of the Limits.
type LimitError struct {
	// What names the bound, as the message says it: "spans",
	// "attributes", "values per attribute", "levels of nesting", "items
	// (…) in one document" or "bytes of distinct strings and links".
	What string
	// Limit is the bound and Flag the command-line flag that raises it, if any.
	Limit int64
	Flag  string
	// Detail says what the input held.
	Detail string
}

// Error renders the detail, the limit and how to raise it.
func (e *LimitError) Error() string {
	s := fmt.Sprintf("%s: more than the limit of %d %s", e.Detail, e.Limit, e.What)
	if e.Flag != "" {
		s += " (raise it with " + e.Flag + ")"
	}
	return s
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// exceeded returns nil when n is within limit, else a *LimitError whose
// detail is format (holding one %d) applied to n. Callers on hot paths
// pass constant formats, so the check allocates nothing.
func exceeded(n, limit int64, what, flag, format string) error {
	if n <= limit {
		return nil
	}
	return &LimitError{What: what, Limit: limit, Flag: flag, Detail: fmt.Sprintf(format, n)}
}

// attributes checks the attribute count of one span (or resource, scope,
// event, link; Jaeger tags, references, processes); what says which, as in
// "tags in one span". Decoders that walk attributes themselves call it.
func (l *Limits) attributes(n int, what string) error {
	if n <= l.MaxAttributes {
		return nil
	}
	return exceeded(int64(n), int64(l.MaxAttributes), "attributes", "--max-attributes", "%d "+what)
}

// values checks the element count of one array or key-value-list value.
func (l *Limits) values(n int) error {
	return exceeded(int64(n), int64(l.MaxValues), "values per attribute", "", "an attribute value holds at least %d elements")
}

// depth checks the nesting depth reached.
func (l *Limits) depth(d int) error {
	return exceeded(int64(d), int64(l.MaxDepth), "levels of nesting", "", "the document nests %d levels deep")
}

// items checks the count of items in one document.
func (l *Limits) items(n int) error {
	return exceeded(int64(n), int64(l.MaxDocumentItems), "items (spans, attributes, values, events, links) in one document", "",
		"the document holds at least %d items")
}

// spans checks the span count of a Set about to grow to n.
func (l *Limits) spans(n int) error {
	return exceeded(int64(n), int64(l.MaxSpans), "spans", "--max-spans", "the inputs hold at least %d spans")
}

// held checks the bytes of strings and links a Set holds.
func (l *Limits) held(n int64) error {
	return exceeded(n, l.MaxHeldBytes, "bytes of distinct strings and links", "",
		"the inputs hold at least %d bytes of distinct names, routes, messages and links")
}
