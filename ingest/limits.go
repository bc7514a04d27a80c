package ingest

import (
	"errors"
	"fmt"
)

// Limits bound what decoding may hold in memory, whatever the input says.
// Every decoder applies them: the span and string budgets through Set.add,
// the shape bounds (depth, attributes, values, items) by checking a
// document before a library unmarshals it (checkJSONShape,
// checkOTLPProtoShape) or while it walks one itself. A zero field takes its
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
	// MaxStringBytes bounds the distinct strings (names, peers, routes,
	// messages; each cut to MaxValueBytes) a Set holds. Default 256 MiB.
	MaxStringBytes int64
}

// Default limits.
const (
	DefaultMaxSpans         = 2_000_000
	DefaultMaxAttributes    = 1_000
	DefaultMaxValues        = 1_000
	DefaultMaxDepth         = 64
	DefaultMaxDocumentItems = 3_000_000
	DefaultMaxStringBytes   = 256 << 20
)

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
	if l.MaxStringBytes <= 0 {
		l.MaxStringBytes = DefaultMaxStringBytes
	}
	return l
}

// ErrLimit is what every *LimitError matches with errors.Is.
var ErrLimit = errors.New("input exceeds a limit")

// LimitError reports an input that went past one of the Limits.
type LimitError struct {
	// What names the bound: "spans", "attributes", "values", "depth",
	// "document items" or "string bytes".
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

// attributes checks the attribute count of one span (or resource, scope,
// event, link; Jaeger tags, references, processes); what says which, as in
// "tags in one span". Decoders that walk attributes themselves call it.
func (l *Limits) attributes(n int, what string) error {
	if n > l.MaxAttributes {
		return &LimitError{What: "attributes", Limit: int64(l.MaxAttributes), Flag: "--max-attributes",
			Detail: fmt.Sprintf("%d %s", n, what)}
	}
	return nil
}

// values checks the element count of one array or key-value-list value.
func (l *Limits) values(n int) error {
	if n > l.MaxValues {
		return &LimitError{What: "values per attribute", Limit: int64(l.MaxValues),
			Detail: fmt.Sprintf("an attribute value holds at least %d elements", n)}
	}
	return nil
}

// depth checks the nesting depth reached.
func (l *Limits) depth(d int) error {
	if d > l.MaxDepth {
		return &LimitError{What: "levels of nesting", Limit: int64(l.MaxDepth),
			Detail: fmt.Sprintf("the document nests %d levels deep", d)}
	}
	return nil
}

// items checks the count of items in one document.
func (l *Limits) items(n int) error {
	if n > l.MaxDocumentItems {
		return &LimitError{What: "items (spans, attributes, values, events, links) in one document", Limit: int64(l.MaxDocumentItems),
			Detail: fmt.Sprintf("the document holds at least %d items", n)}
	}
	return nil
}

// spans checks the span count of a Set about to grow to n.
func (l *Limits) spans(n int) error {
	if n > l.MaxSpans {
		return &LimitError{What: "spans", Limit: int64(l.MaxSpans), Flag: "--max-spans",
			Detail: fmt.Sprintf("the inputs hold at least %d spans", n)}
	}
	return nil
}

// strings checks the bytes of distinct strings a Set holds.
func (l *Limits) strings(n int64) error {
	if n > l.MaxStringBytes {
		return &LimitError{What: "bytes of distinct strings", Limit: l.MaxStringBytes,
			Detail: fmt.Sprintf("the inputs hold at least %d bytes of distinct names, routes and messages", n)}
	}
	return nil
}
