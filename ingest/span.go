// Package ingest detects and decodes exported distributed traces (OTLP protobuf
// and JSON, Jaeger UI/query JSON, Jaeger api_v3 JSON and the Jaeger protobuf
// model, Grafana Tempo JSON and protobuf, Zipkin v2 JSON, optionally gzip- or
// zstd-compressed) and normalises every span into one compact record, Span,
// held in a Set.
//
// The package knows nothing of what spans mean: pairing, retries and graphs
// belong to package graph. It never prints and never exits; errors name the
// input and the byte offset or line where decoding failed.
package ingest

import (
	"encoding/hex"
	"strings"
)

// TraceID is a 16-byte trace identifier. Shorter identifiers (Jaeger's 64-bit
// ids, or hex strings with leading zeros trimmed) are right-aligned.
type TraceID [16]byte

// SpanID is an 8-byte span identifier; the zero value means "none".
type SpanID [8]byte

// String returns the identifier as 32 lowercase hex digits.
func (t TraceID) String() string { return hex.EncodeToString(t[:]) }

// IsZero reports whether the identifier is all zeros (invalid in OTLP).
func (t TraceID) IsZero() bool { return t == TraceID{} }

// String returns the identifier as 16 lowercase hex digits.
func (s SpanID) String() string { return hex.EncodeToString(s[:]) }

// IsZero reports whether the identifier is all zeros, which for a parent
// means the span is a root.
func (s SpanID) IsZero() bool { return s == SpanID{} }

// Kind is the OpenTelemetry span kind.
type Kind uint8

// Span kinds, numbered as in OTLP.
const (
	KindUnspecified Kind = iota
	KindInternal
	KindServer
	KindClient
	KindProducer
	KindConsumer
)

var kindNames = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}

// String returns the lowercase kind name, e.g. "client".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unspecified"
}

// ParseKind accepts the spellings real exporters use: "client", "CLIENT",
// "SPAN_KIND_CLIENT", and Jaeger's span.kind tag values.
func ParseKind(s string) (Kind, bool) {
	s = strings.ToLower(strings.TrimPrefix(strings.ToUpper(s), "SPAN_KIND_"))
	for i, n := range kindNames {
		if s == n {
			return Kind(i), true
		}
	}
	return KindUnspecified, false
}

// Status is the span status code.
type Status uint8

// Status codes, numbered as in OTLP.
const (
	StatusUnset Status = iota
	StatusOK
	StatusError
)

// String returns "unset", "ok" or "error".
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusError:
		return "error"
	}
	return "unset"
}

// Sym is an interned string: an index into the Set's string table. Sym 0 is
// always the empty string, so a zero Sym means "absent".
type Sym uint32

// Absent marks an optional small integer field (resend count, retry counts,
// gRPC status, Retry-After) that the span did not carry.
const Absent = -1

// NoRetry is the RetryAfterMS of an answer that asked not to be retried:
// a negative grpc-retry-pushback-ms (gRFC A6: the client must not retry).
const NoRetry = -2

// Span flag bits.
const (
	// FlagTransparentRetry is grpc-go's transparent-retry attempt marker.
	FlagTransparentRetry uint8 = 1 << iota
	// FlagIdempotencyKey means the request carried an idempotency key header.
	FlagIdempotencyKey
	// FlagTruncated means at least one retained attribute value was cut to
	// MaxValueBytes.
	FlagTruncated
	// FlagProxy marks a service-mesh sidecar's span (Envoy, Istio):
	// component=proxy, or an upstream_cluster or response_flags tag.
	FlagProxy
	// FlagRetryLimit is Envoy's URX response flag: the proxy gave up after
	// its retry limit.
	FlagRetryLimit
	// FlagConnectFailed is Envoy's UF, UH, UC or UR response flag: the
	// proxy got no answer from upstream (connection failure, no healthy
	// host, connection terminated, remote reset); its status code is the
	// proxy's own.
	FlagConnectFailed
	// FlagProxyTimeout is Envoy's UT response flag: the proxy timed the
	// upstream request out.
	FlagProxyTimeout
	// FlagOverflow is Envoy's UO response flag: the proxy's circuit
	// breaker (connection pool limits) shed the request without sending it.
	FlagOverflow
)

// Span is the normalised record every decoder produces, as the Set holds
// it: 88 bytes and no pointers. Strings are interned Syms resolved through
// Set.Str, which keeps a million spans near 100 MB; the fields few spans
// carry are a SpanExtra in a table beside the spans (Set.Extra).
type Span struct {
	TraceID  TraceID
	SpanID   SpanID
	ParentID SpanID
	// Start and End are Unix times in nanoseconds.
	Start, End int64

	// Target is a hash of the request identity (full URL, database statement,
	// messaging destination; for a SERVER span the target it received,
	// path and query without the host): equal targets with equal peers
	// suggest the same request sent again. Zero when the span carries none.
	Target uint64

	Service Sym // resource service.name (Jaeger process serviceName)
	Name    Sym // span name (operation)
	// Peer is the remote identity of a client or producer span, taken from
	// peer.service, server.address, db.system+db.namespace (or db.name),
	// net.peer.name, the URL host, messaging system+destination, in that order.
	Peer   Sym
	Method Sym // HTTP request method, or the gRPC/RPC method
	Route  Sym // http.route, url.template, or rpc service/method

	// Extra indexes the Set's table of SpanExtra from 1; 0 when every
	// field of the span's SpanExtra has its NoExtra value.
	Extra uint32

	Kind   Kind
	Status Status
	Flags  uint8
	// GRPCStatus is the gRPC status code (0..16), or Absent.
	GRPCStatus int8
	// HTTPStatus is the HTTP response status code, 0 when absent.
	HTTPStatus uint16
	// Origin indexes the Set's table of what is known of where the span
	// came from: how its trace was kept (head sampling, Set.Sampling) and
	// the process instance that recorded it (Set.Instance); 0 when
	// neither is known. Both are shared by many spans (one sampler
	// configuration, one process), so one small index holds them.
	Origin uint16
}

// SpanExtra holds the fields of a span that most spans do not carry
// (status messages and error types come with failures, retry counters
// with retries, links are rare), kept apart so that the span table does
// not pay for them on every span.
type SpanExtra struct {
	StatusMessage Sym
	ErrorType     Sym // error.type
	// RetryAfterMS is a captured Retry-After (or gRPC pushback) in
	// milliseconds, NoRetry for a pushback that said not to retry, or
	// Absent.
	RetryAfterMS int32
	// FirstLink and NumLinks index Set.Links.
	FirstLink uint32
	// ResendCount is http.request.resend_count, or Absent.
	ResendCount int16
	// PrevAttempts is grpc-go's previous-rpc-attempts on Attempt spans, or Absent.
	PrevAttempts int16
	// RetryCount is Envoy's retry.count (or a library's retry attempt tag), or Absent.
	RetryCount int16
	NumLinks   uint16
	// RequestKey is a hash of the request's captured Idempotency-Key (or,
	// without one, X-Request-Id) header, 0 when none was captured: the
	// same key on two attempts makes them one request, whatever traces
	// they are in.
	RequestKey uint64
}

// NoExtra is the SpanExtra of a span that carries none of its fields.
var NoExtra = SpanExtra{RetryAfterMS: Absent, ResendCount: Absent, PrevAttempts: Absent, RetryCount: Absent}

// Record is a span with all of its fields, as decoders build it and
// Set.Append takes it.
type Record struct {
	Span
	SpanExtra
}

// Duration returns End-Start in nanoseconds.
func (s *Span) Duration() int64 { return s.End - s.Start }

// Has reports whether flag bit f is set.
func (s *Span) Has(f uint8) bool { return s.Flags&f != 0 }

// maxLinks is how many links a Span can index (NumLinks is 16 bits); more
// are dropped with a "links dropped" warning.
const maxLinks = 1<<16 - 1

// Link is a span link: a reference from one span to another span, possibly in
// another trace.
type Link struct {
	TraceID TraceID
	SpanID  SpanID
}
