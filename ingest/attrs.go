package ingest

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// attrs gathers the attributes (OTLP) or tags (Jaeger) that matter while a
// decoder walks them, whatever their order or wire type, then resolves
// priorities in finish. Decoders reuse one attrs value per input.
type attrs struct {
	peerService, serverAddress, serverPort, netPeerName, netPeerPort string
	dbSystem, dbNamespace, dbName, statement                         string
	urlFull, httpURL, httpHost, httpTarget, urlPath, urlQuery        string
	msgSystem, msgDest                                               string
	method, route, urlTemplate, rpcService, rpcMethod, rpcSystem     string
	errorType, retryAfter, otelStatus, otelStatusDesc, kindTag       string
	upstreamCluster, responseFlags, requestID                        string
	// idemKeyValue and appRequestID are a captured Idempotency-Key and
	// X-Request-Id header (not Envoy's guid:x-request-id tag): what names
	// the request whatever trace its attempts land in.
	idemKeyValue, appRequestID string

	sampler sampler

	httpStatus, grpcStatus                   int
	resend, prevAttempts, retryCount         int
	envoyAttempts                            int // x-envoy-attempt-count, 0 when absent
	transparent, idemKey, errorTag, truncate bool
	proxy                                    bool

	// invalid describes the first status attribute whose value was out of
	// range or not a number, and so ignored (checkSpan warns).
	invalid string

	buf   []byte // scratch space kept across spans
	num   []byte // the text of integer ports, for the span
	links []Link // the span's links, gathered by the OTLP decoders
}

func (a *attrs) reset() {
	*a = attrs{grpcStatus: Absent, resend: Absent, prevAttempts: Absent, retryCount: Absent, buf: a.buf, num: a.num[:0], links: a.links[:0]}
}

// urlTarget is a URL's request target: its path and query, without the
// scheme, host and fragment ("/" where it has no path).
func urlTarget(raw string) string {
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	} else if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
	}
	if rest != raw {
		i := strings.IndexAny(rest, "/?#")
		if i < 0 {
			return "/"
		}
		rest = rest[i:]
	}
	rest, _, _ = strings.Cut(rest, "#")
	if rest == "" || rest[0] == '?' {
		rest = "/" + rest
	}
	return rest
}

// splitURL returns the host[:port] and path of an absolute or
// scheme-relative URL without allocating (net/url.Parse costs more than the
// rest of a span's normalisation).
func splitURL(raw string) (host, path string) {
	if raw == "" {
		return "", ""
	}
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	} else if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
	} else {
		host = ""
		if i := strings.IndexAny(rest, "?#"); i >= 0 {
			rest = rest[:i]
		}
		return "", rest
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		return stripUserinfo(rest), ""
	}
	host, rest = stripUserinfo(rest[:end]), rest[end:]
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	return host, rest
}

func stripUserinfo(h string) string {
	if i := strings.LastIndexByte(h, '@'); i >= 0 {
		return h[i+1:]
	}
	return h
}

// attrKey names an attribute (or tag) key the normalisation reads. Keys
// outside attrKeys matter only when they look like captured headers (see
// header); wants tells a decoder which values it may skip unread.
type attrKey uint8

const (
	keyOther attrKey = iota
	keyPeerService
	keyServerAddress
	keyServerPort
	keyNetPeerName
	keyNetPeerPort
	keyDBSystem
	keyDBNamespace
	keyDBName
	keyStatement
	keyURLFull
	keyHTTPURL
	keyHTTPHost
	keyHTTPTarget
	keyURLPath
	keyURLQuery
	keyMsgSystem
	keyMsgDest
	keyMethod
	keyRoute
	keyURLTemplate
	keyRPCService
	keyRPCMethod
	keyRPCSystem
	keyErrorType
	keyOtelStatus
	keyOtelStatusDesc
	keySpanKind
	keyComponent
	keyUpstreamCluster
	keyResponseFlags
	keyRequestID
	keyError
	keyRPCStatus  // rpc.response.status_code: a name or a number
	keyGRPCStatus // rpc.grpc.status_code: a number
	keyHTTPStatus
	keyResend
	keyPrevAttempts
	keyRetryCount
	keyTransparent
	keySamplerType
	keySamplerParam
)

var attrKeys = map[string]attrKey{
	"peer.service":               keyPeerService,
	"server.address":             keyServerAddress,
	"server.port":                keyServerPort,
	"net.peer.name":              keyNetPeerName,
	"net.peer.port":              keyNetPeerPort,
	"db.system":                  keyDBSystem,
	"db.system.name":             keyDBSystem,
	"db.namespace":               keyDBNamespace,
	"db.name":                    keyDBName,
	"db.statement":               keyStatement,
	"db.query.text":              keyStatement,
	"url.full":                   keyURLFull,
	"http.url":                   keyHTTPURL,
	"http.host":                  keyHTTPHost,
	"http.target":                keyHTTPTarget,
	"url.path":                   keyURLPath,
	"url.query":                  keyURLQuery,
	"messaging.system":           keyMsgSystem,
	"messaging.destination.name": keyMsgDest,
	"messaging.destination":      keyMsgDest,
	"http.request.method":        keyMethod,
	"http.method":                keyMethod,
	"http.route":                 keyRoute,
	"url.template":               keyURLTemplate,
	"rpc.service":                keyRPCService,
	"rpc.method":                 keyRPCMethod,
	"rpc.system":                 keyRPCSystem,
	"rpc.system.name":            keyRPCSystem,
	"error.type":                 keyErrorType,
	"otel.status_code":           keyOtelStatus,
	"otel.status_description":    keyOtelStatusDesc,
	"span.kind":                  keySpanKind,
	"component":                  keyComponent,
	"upstream_cluster":           keyUpstreamCluster,
	"upstream_cluster.name":      keyUpstreamCluster,
	"response_flags":             keyResponseFlags,
	"guid:x-request-id":          keyRequestID,
	"error":                      keyError,
	"rpc.response.status_code":   keyRPCStatus,
	"rpc.grpc.status_code":       keyGRPCStatus,
	"http.response.status_code":  keyHTTPStatus,
	"http.status_code":           keyHTTPStatus,
	"http.request.resend_count":  keyResend,
	"previous-rpc-attempts":      keyPrevAttempts,
	"retry.count":                keyRetryCount,
	"transparent-retry":          keyTransparent,
	"sampler.type":               keySamplerType,
	"sampler.param":              keySamplerParam,
}

// wants reports whether the value of key can change the Span, and the key's
// name; a decoder may skip the values of the keys it does not want.
func wants(key string) (attrKey, bool) {
	k, ok := attrKeys[key]
	return k, ok || isHeaderKey(key)
}

// str records a string-typed value. Numeric keys parse it, since Jaeger and
// older SDKs send integers as strings.
func (a *attrs) str(key, v string) { a.strKey(attrKeys[key], key, v) }

// integer records an integer-typed value; string keys get its decimal form.
func (a *attrs) integer(key string, n int64) { a.intKey(attrKeys[key], key, n) }

// double records a float-typed value: an integral one counts as the
// integer (a status code sent as 503.0); a status key with a fraction, NaN
// or infinity is rejected.
func (a *attrs) double(key string, d float64) { a.doubleKey(attrKeys[key], key, d) }

// boolean records a boolean-typed value.
func (a *attrs) boolean(key string, b bool) { a.boolKey(attrKeys[key], b) }

// strKey is str with the key already looked up.
func (a *attrs) strKey(k attrKey, key, v string) {
	switch k {
	case keySamplerType, keySamplerParam:
		a.sampler.tag(key, v)
	case keyPeerService:
		a.peerService = v
	case keyServerAddress:
		a.serverAddress = v
	case keyServerPort:
		a.serverPort = v
	case keyNetPeerName:
		a.netPeerName = v
	case keyNetPeerPort:
		a.netPeerPort = v
	case keyDBSystem:
		a.dbSystem = v
	case keyDBNamespace:
		a.dbNamespace = v
	case keyDBName:
		a.dbName = v
	case keyStatement:
		a.statement = v
	case keyURLFull:
		a.urlFull = v
	case keyHTTPURL:
		a.httpURL = v
	case keyHTTPHost:
		a.httpHost = v
	case keyHTTPTarget:
		a.httpTarget = v
	case keyURLPath:
		a.urlPath = v
	case keyURLQuery:
		a.urlQuery = v
	case keyMsgSystem:
		a.msgSystem = v
	case keyMsgDest:
		a.msgDest = v
	case keyMethod:
		a.method = v
	case keyRoute:
		a.route = v
	case keyURLTemplate:
		a.urlTemplate = v
	case keyRPCService:
		a.rpcService = v
	case keyRPCMethod:
		a.rpcMethod = v
	case keyRPCSystem:
		a.rpcSystem = v
	case keyErrorType:
		a.errorType = v
	case keyOtelStatus:
		a.otelStatus = v
	case keyOtelStatusDesc:
		a.otelStatusDesc = v
	case keySpanKind:
		a.kindTag = v
	case keyComponent:
		a.proxy = a.proxy || v == "proxy"
	case keyUpstreamCluster:
		a.upstreamCluster, a.proxy = v, true
	case keyResponseFlags:
		a.responseFlags, a.proxy = v, true
	case keyRequestID:
		a.requestID = v
	case keyError:
		a.errorTag = v == "true"
	case keyRPCStatus:
		if c, ok := grpcCode(v); ok {
			a.grpcStatus = c
		} else {
			a.reject(key, strconv.Quote(v))
		}
	case keyHTTPStatus, keyGRPCStatus, keyResend, keyPrevAttempts, keyRetryCount, keyTransparent:
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			a.intKey(k, key, n)
		} else if b, err := strconv.ParseBool(v); err == nil {
			a.boolKey(k, b)
		} else if isStatusKey(k) {
			a.reject(key, strconv.Quote(v))
		}
	default:
		a.header(key, v)
	}
}

// intKey is integer with the key already looked up.
func (a *attrs) intKey(k attrKey, key string, n int64) {
	switch k {
	case keyHTTPStatus:
		switch {
		case n >= 100 && n <= 599:
			a.httpStatus = int(n)
		case n == 0:
			// No response: Envoy writes 0 when upstream never answered
			// (its response_flags say why), as browsers' fetch does.
		default:
			a.reject(key, strconv.FormatInt(n, 10))
		}
	case keyGRPCStatus, keyRPCStatus:
		if n >= 0 && n <= 16 {
			a.grpcStatus = int(n)
		} else {
			a.reject(key, strconv.FormatInt(n, 10))
		}
	case keyResend:
		a.resend = clampCount(n)
	case keyPrevAttempts:
		a.prevAttempts = clampCount(n)
	case keyRetryCount:
		a.retryCount = clampCount(n)
	case keyTransparent:
		a.transparent = n != 0
	case keyServerPort, keyNetPeerPort, keySamplerParam:
		// The decimal form is appended to num, whose earlier bytes stay
		// put (a grown num leaves them in the old array), so it needs no
		// allocation of its own.
		start := len(a.num)
		a.num = strconv.AppendInt(a.num, n, 10)
		a.strKey(k, key, unsafe.String(&a.num[start], len(a.num)-start))
	}
}

// doubleKey is double with the key already looked up.
func (a *attrs) doubleKey(k attrKey, key string, d float64) {
	if d == math.Trunc(d) && d >= math.MinInt64 && d < math.MaxInt64 {
		a.intKey(k, key, int64(d))
	} else if isStatusKey(k) {
		a.reject(key, strconv.FormatFloat(d, 'g', -1, 64))
	}
}

// isStatusKey reports whether k carries an HTTP or gRPC status code.
func isStatusKey(k attrKey) bool {
	return k == keyHTTPStatus || k == keyGRPCStatus || k == keyRPCStatus
}

// reject notes a status attribute whose value cannot be a status code.
func (a *attrs) reject(key, v string) {
	if a.invalid == "" {
		a.invalid = key + " " + v
	}
}

// boolKey is boolean with the key already looked up.
func (a *attrs) boolKey(k attrKey, b bool) {
	switch k {
	case keyTransparent:
		a.transparent = b
	case keyError:
		a.errorTag = b
	}
}

// isHeaderKey reports whether header may use key.
func isHeaderKey(key string) bool {
	return strings.HasSuffix(key, "x-envoy-attempt-count") ||
		strings.Contains(key, "dempotency") || strings.Contains(key, "etry") || isRequestIDKey(key)
}

// isRequestIDKey reports whether key is a captured X-Request-Id header
// (http.request.header.x-request-id, or with underscores).
func isRequestIDKey(key string) bool {
	return strings.HasSuffix(key, "x-request-id") || strings.HasSuffix(key, "x_request_id")
}

// header picks the retry-relevant headers out of captured request/response
// headers and metadata (http.request.header.*, rpc.grpc.*.metadata.*, or a
// bare header name as some instrumentations tag them).
func (a *attrs) header(key, v string) {
	if strings.HasSuffix(key, "x-envoy-attempt-count") {
		if n, err := strconv.Atoi(firstOfArray(v)); err == nil && n > 0 {
			a.envoyAttempts = min(n, 32768)
		}
		return
	}
	if !isHeaderKey(key) {
		return
	}
	name := key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		name = key[i+1:]
	}
	name = strings.ToLower(name)
	switch {
	case strings.Contains(name, "idempotency"):
		if v != "" && v != "[]" {
			a.idemKey, a.idemKeyValue = true, firstOfArray(v)
		}
	case isRequestIDKey(name) && v != "" && v != "[]":
		a.appRequestID = firstOfArray(v)
	case name == "retry-after" || name == "retry_after" || name == "grpc-retry-pushback-ms":
		a.retryAfter = firstOfArray(v)
		if name == "grpc-retry-pushback-ms" {
			a.retryAfter = "ms:" + a.retryAfter
		}
	}
}

// firstOfArray takes the first element of a value that arrived as a
// stringified array (Jaeger renders OTLP array attributes as JSON text).
func firstOfArray(v string) string {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "[") {
		return v
	}
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	if i := strings.IndexByte(v, ','); i >= 0 {
		v = v[:i]
	}
	return strings.Trim(strings.TrimSpace(v), `"`)
}

func clampCount(n int64) int {
	switch {
	case n < 0:
		return Absent
	case n > 32767:
		return 32767
	}
	return int(n)
}

// finish resolves the gathered attributes into sp. The caller has set ids,
// times, name, kind and OTLP status already.
func (a *attrs) finish(set *Set, sp *Record) {
	if sp.Kind == KindUnspecified && a.kindTag != "" {
		sp.Kind, _ = ParseKind(a.kindTag)
	}
	if sp.Status == StatusUnset {
		switch {
		case strings.EqualFold(a.otelStatus, "error") || a.errorTag:
			sp.Status = StatusError
		case strings.EqualFold(a.otelStatus, "ok"):
			sp.Status = StatusOK
		}
		if sp.StatusMessage == 0 && a.otelStatusDesc != "" {
			sp.StatusMessage = a.intern(set, a.otelStatusDesc)
		}
	}
	sp.HTTPStatus = uint16(a.httpStatus)
	sp.GRPCStatus = int8(a.grpcStatus)
	sp.ResendCount = int16(a.resend)
	sp.PrevAttempts = int16(a.prevAttempts)
	sp.RetryCount = int16(a.retryCount)
	if a.retryCount == Absent && a.envoyAttempts > 0 {
		sp.RetryCount = int16(a.envoyAttempts - 1) // the attempts before this one
	}
	if a.proxy {
		sp.Flags |= FlagProxy
	}
	sp.Flags |= responseFlagBits(a.responseFlags)
	if a.transparent {
		sp.Flags |= FlagTransparentRetry
	}
	if a.idemKey {
		sp.Flags |= FlagIdempotencyKey
	}
	switch {
	case a.idemKeyValue != "":
		sp.RequestKey = fnv64("idempotency-key " + a.idemKeyValue)
	case a.appRequestID != "":
		sp.RequestKey = fnv64("x-request-id " + a.appRequestID)
	}
	sp.RetryAfterMS = int32(retryAfterMS(a.retryAfter, sp.End))
	a.sampler.apply(set, &sp.Span)
	sp.ErrorType = a.intern(set, a.errorType)

	rawURL := a.urlFull
	if rawURL == "" {
		rawURL = a.httpURL
	}
	urlHost, urlPath := splitURL(rawURL)
	if sp.Kind == KindClient || sp.Kind == KindProducer || a.peerService != "" || a.upstreamCluster != "" {
		a.buf = a.peer(a.buf[:0], urlHost)
		if len(a.buf) > MaxValueBytes {
			a.truncate = true
		}
		sp.Peer = set.internBytes(a.buf)
	}
	switch {
	case a.method != "":
		sp.Method = a.intern(set, strings.ToUpper(a.method))
	case a.rpcMethod != "":
		sp.Method = a.intern(set, a.rpcMethod)
	}
	switch {
	case a.route != "":
		sp.Route = a.intern(set, a.route)
	case a.urlTemplate != "":
		sp.Route = a.intern(set, a.urlTemplate)
	case a.rpcService != "" || a.rpcMethod != "":
		sp.Route = a.intern(set, a.rpcService+"/"+a.rpcMethod)
	default:
		p := a.urlPath
		if p == "" {
			p = urlPath
		}
		if p == "" && a.httpTarget != "" {
			p, _, _ = strings.Cut(a.httpTarget, "?")
		}
		if p != "" {
			a.buf = appendTemplatePath(a.buf[:0], p)
			sp.Route = set.internBytes(a.buf)
		}
	}
	switch {
	case sp.Kind == KindServer && a.httpTarget != "":
		// A request as the server received it, without the host: a
		// proxy that sends one request to several replicas may keep
		// the Host header or set each replica's.
		sp.Target = fnv64(a.httpTarget)
	case sp.Kind == KindServer && a.urlPath != "" && a.urlQuery != "":
		sp.Target = fnv64(a.urlPath + "?" + a.urlQuery)
	case sp.Kind == KindServer && a.urlPath != "":
		sp.Target = fnv64(a.urlPath)
	case sp.Kind == KindServer && rawURL != "":
		sp.Target = fnv64(urlTarget(rawURL))
	case rawURL != "" && a.proxy && a.requestID != "":
		// A sidecar's request is its URL for the request Envoy's
		// x-request-id names: Envoy's own tries of one request share
		// both.
		sp.Target = fnv64(rawURL + " " + a.requestID)
	case rawURL != "":
		sp.Target = fnv64(rawURL)
	case a.httpTarget != "":
		sp.Target = fnv64(a.httpHost + a.httpTarget)
	case a.statement != "":
		sp.Target = fnv64(a.statement)
	case a.msgDest != "":
		sp.Target = fnv64(a.msgSystem + "/" + a.msgDest)
	case a.proxy && a.requestID != "":
		sp.Target = fnv64(a.requestID)
	}
	if a.truncate {
		sp.Flags |= FlagTruncated
	}
}

// responseFlagBits reads Envoy's response_flags, a comma-separated list
// of short codes ("-" for none), into span flags: URX (retry limit
// exceeded), UF/UH/UC/UR (no answer from upstream), UT (upstream request
// timeout), UO (overflow: the circuit breaker shed the request). Other
// codes (DC, DI, NR, RL, ...) change nothing a retry policy reads.
func responseFlagBits(flags string) uint8 {
	var f uint8
	for flags != "" {
		var code string
		code, flags, _ = strings.Cut(flags, ",")
		switch strings.TrimSpace(code) {
		case "URX":
			f |= FlagRetryLimit
		case "UF", "UH", "UC", "UR":
			f |= FlagConnectFailed
		case "UT":
			f |= FlagProxyTimeout
		case "UO":
			f |= FlagOverflow
		}
	}
	return f
}

// peer appends the remote identity of a client span, resolved in the
// documented order, to dst.
func (a *attrs) peer(dst []byte, urlHost string) []byte {
	withPort := func(host, port string) []byte {
		dst = append(dst, host...)
		if port != "" && port != "0" {
			dst = append(append(dst, ':'), port...)
		}
		return dst
	}
	switch {
	case a.peerService != "":
		return append(dst, a.peerService...)
	case a.serverAddress != "":
		return withPort(a.serverAddress, a.serverPort)
	case a.upstreamCluster != "":
		// Envoy's cluster: outbound|9080|subset|reviews.default.svc.cluster.local.
		c := a.upstreamCluster
		if i := strings.LastIndexByte(c, '|'); i >= 0 {
			c = c[i+1:]
		}
		return append(dst, c...)
	case a.dbSystem != "":
		ns := a.dbNamespace
		if ns == "" {
			ns = a.dbName
		}
		dst = append(dst, a.dbSystem...)
		if ns != "" {
			dst = append(append(dst, '/'), ns...)
		}
		return dst
	case a.netPeerName != "":
		return withPort(a.netPeerName, a.netPeerPort)
	case urlHost != "":
		return append(dst, urlHost...)
	case a.httpHost != "":
		return append(dst, a.httpHost...)
	case a.msgDest != "":
		return append(append(append(dst, a.msgSystem...), '/'), a.msgDest...)
	}
	return dst
}

func (a *attrs) intern(set *Set, v string) Sym {
	if v == "" {
		return 0
	}
	if len(v) > MaxValueBytes {
		a.truncate = true
	}
	return set.Intern(v)
}

// retryAfterMS parses a Retry-After value: delta-seconds, an HTTP-date
// (relative to the span's end), or "ms:N" for gRPC pushback, whose
// negative N says not to retry (NoRetry).
func retryAfterMS(v string, endNanos int64) int {
	if v == "" {
		return Absent
	}
	if ms, ok := strings.CutPrefix(v, "ms:"); ok {
		n, err := strconv.ParseInt(ms, 10, 32)
		switch {
		case err != nil:
			return Absent
		case n < 0:
			return NoRetry
		}
		return int(n)
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e6 {
			return Absent
		}
		return int(s * 1000)
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(time.Unix(0, endNanos))
		if d < 0 {
			d = 0
		}
		if d > 1e6*time.Second {
			return Absent
		}
		return int(d / time.Millisecond)
	}
	return Absent
}

var grpcCodes = map[string]int{
	"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
	"NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
	"FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12,
	"INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16,
}

// grpcCode parses a gRPC status given by name ("UNAVAILABLE", "Unavailable")
// or number.
func grpcCode(v string) (int, bool) {
	if n, err := strconv.Atoi(v); err == nil {
		return n, n >= 0 && n <= 16
	}
	c, ok := grpcCodes[strings.ToUpper(strings.ReplaceAll(v, " ", "_"))]
	return c, ok
}

// TemplatePath replaces path segments that look like identifiers (numbers,
// UUIDs, long hex or mixed digit/letter tokens) with {id}, so that
// /orders/42/items becomes /orders/{id}/items.
func TemplatePath(p string) string {
	return string(appendTemplatePath(nil, p))
}

func appendTemplatePath(dst []byte, p string) []byte {
	for {
		seg, rest, more := strings.Cut(p, "/")
		if looksLikeID(seg) {
			dst = append(dst, "{id}"...)
		} else {
			dst = append(dst, seg...)
		}
		if !more {
			return dst
		}
		dst = append(dst, '/')
		p = rest
	}
}

func looksLikeID(s string) bool {
	if s == "" {
		return false
	}
	digits, hexOnly := 0, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F', c == '-':
		default:
			hexOnly = false
		}
	}
	switch {
	case digits == len(s):
		return true // 42
	case hexOnly && len(s) >= 8 && digits > 0:
		return true // UUIDs, hashes
	}
	return digits*2 >= len(s) && len(s) >= 6 // mostly digits: a1234b
}

// fnv64 is FNV-1a, stable across runs (unlike hash/maphash), so targets
// compare across inputs and sessions.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
