// Package remote reads traces straight from a running tracing backend: the
// Jaeger query service (its api_v3 HTTP API, or the older /api/traces),
// Grafana Tempo (/api/search, then each trace) and Zipkin (/api/v2/traces). Every response is decoded by
// package ingest, sniffed from its content like a file, and recorded as an
// input named by its request URL.
//
// The package never prints; progress goes to a callback, and every failure
// names the URL it came from.
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/retryaudit/retryaudit/ingest"
)

// Query selects the traces to fetch.
type Query struct {
	// Service and Operation narrow the search. Jaeger searches one service
	// at a time: with no Service every service it lists is searched.
	Service, Operation string
	// Start and End bound the traces' start times; both are required.
	Start, End time.Time
	// Limit is the number of traces asked for per search (required, > 0).
	Limit int
}

// Options tune the HTTP side. The zero value takes the defaults.
type Options struct {
	// Client sends the requests (default: a client with Timeout).
	Client *http.Client
	// Timeout bounds each request, body included (default 30s).
	Timeout time.Duration
	// Decode bounds what each response may cost to decode.
	Decode ingest.Options
	// Progress, when set, is told the number of requests answered so far
	// and the number known to be needed (which grows as searches answer).
	Progress func(done, total int)
}

// DefaultTimeout bounds each request when Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// IsURL reports whether an input name is an http or https URL.
func IsURL(name string) bool {
	return strings.HasPrefix(name, "http://") || strings.HasPrefix(name, "https://")
}

// Fetch reads the traces q selects from the backend at rawURL into set.
//
// rawURL may be the backend's base URL (the kind of backend is then probed:
// Jaeger's /api/v3/services, then /api/services, then Tempo's /api/echo,
// then Zipkin's /api/v2/services), a search endpoint (/api/v3/traces,
// /api/traces, /api/search, /api/v2/traces — its own query parameters are
// kept, q fills in the rest), or one trace (/api/traces/ID,
// /api/v2/traces/ID, /api/v3/traces/ID, /api/v2/trace/ID), read as is.
// Jaeger UI pages (/search?service=…, /trace/ID) read as their API URLs.
// A search that finds nothing is an error saying what was searched. Per-
// service searches return a trace once per service it crosses: the caller
// merges the copies (ingest.Filter.Unique).
func Fetch(ctx context.Context, set *ingest.Set, rawURL string, q Query, opts Options) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return errors.New("an input that starts like a URL does not parse as one")
	}
	if u.Host == "" || u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s: not an http or https URL with a host", u.Redacted())
	}
	f := &fetcher{set: set, opts: opts, client: opts.Client}
	if f.opts.Timeout <= 0 {
		f.opts.Timeout = DefaultTimeout
	}
	if f.client == nil {
		f.client = &http.Client{Timeout: f.opts.Timeout}
	}
	uiToAPI(u)
	before := len(set.Spans)
	if traceByID.MatchString(u.Path) {
		if err := f.decode(ctx, u, "application/json"); err != nil {
			return err
		}
		if len(set.Spans) == before {
			return fmt.Errorf("GET %s: the trace holds no spans", u.Redacted())
		}
		return nil
	}
	if q.Limit <= 0 || q.Start.IsZero() || q.End.IsZero() {
		return fmt.Errorf("%s: a search needs a time window and a trace limit", u.Redacted())
	}
	api, base, err := f.api(ctx, u)
	if err != nil {
		return err
	}
	switch api {
	case jaegerV3, jaegerV1:
		err = f.jaeger(ctx, api, base, u, q)
	case tempo:
		err = f.tempo(ctx, base, u, q)
	case zipkin:
		err = f.zipkin(ctx, base, u, q)
	}
	if err != nil {
		return err
	}
	if len(set.Spans) == before {
		return fmt.Errorf("%s: the %s search found no traces (%s)", u.Redacted(), api, q)
	}
	return nil
}

// String describes the query for messages.
func (q Query) String() string {
	var parts []string
	if q.Service != "" {
		parts = append(parts, "service "+q.Service)
	}
	if q.Operation != "" {
		parts = append(parts, "operation "+q.Operation)
	}
	parts = append(parts, fmt.Sprintf("started %s to %s", q.Start.UTC().Format(time.RFC3339), q.End.UTC().Format(time.RFC3339)))
	return strings.Join(parts, ", ")
}

// jaegerUITrace matches the path of a trace page of Jaeger's UI.
var jaegerUITrace = regexp.MustCompile(`/trace/([0-9a-fA-F]{1,32})$`)

// uiToAPI rewrites, in place, a URL of Jaeger's UI as people copy it from
// their browser — a search page (/search?service=…&lookback=…) or a trace
// page (/trace/ID) — into the API URL that serves the same traces.
func uiToAPI(u *url.URL) {
	p := strings.TrimSuffix(u.Path, "/")
	switch {
	case strings.HasSuffix(p, "/search") && !strings.HasSuffix(p, "/api/search") && u.Query().Get("service") != "":
		u.Path = strings.TrimSuffix(p, "/search") + "/api/traces"
		// The UI's lookback ("1h", "2d", "custom") is read by the UI only.
		v := u.Query()
		v.Del("lookback")
		u.RawQuery = v.Encode()
	case jaegerUITrace.MatchString(p) && !strings.Contains(p, "/api/"):
		u.Path = jaegerUITrace.ReplaceAllString(p, "/api/traces/$1")
	}
}

// traceByID matches the path of one trace in Jaeger's, Tempo's or Zipkin's
// APIs.
var traceByID = regexp.MustCompile(`/api/(v2/|v3/)?traces?/[0-9a-fA-F]{1,32}$`)

type apiKind int

const (
	jaegerV3 apiKind = iota + 1 // Jaeger api_v3 over HTTP: OTLP JSON in {"result": ...}
	jaegerV1                    // Jaeger's UI API: /api/traces, Jaeger JSON
	tempo                       // Grafana Tempo: /api/search and /api/traces/{id}
	zipkin                      // Zipkin: /api/v2/traces, an array of traces
)

func (k apiKind) String() string {
	return [...]string{"", "Jaeger api_v3", "Jaeger query", "Tempo", "Zipkin"}[k]
}

type fetcher struct {
	set        *ingest.Set
	opts       Options
	client     *http.Client
	done, need int
}

// api tells which API u names, probing a base URL, and returns the
// backend's base URL (u without the API path).
func (f *fetcher) api(ctx context.Context, u *url.URL) (apiKind, *url.URL, error) {
	p := strings.TrimSuffix(u.Path, "/")
	for _, e := range []struct {
		suffix string
		kind   apiKind
	}{{"/api/v3/traces", jaegerV3}, {"/api/v3", jaegerV3}, {"/api/traces", jaegerV1}, {"/api/search", tempo}, {"/api/v2/traces", zipkin}} {
		if strings.HasSuffix(p, e.suffix) {
			base := *u
			base.Path, base.RawQuery = strings.TrimSuffix(p, e.suffix), ""
			return e.kind, &base, nil
		}
	}
	base := *u
	base.Path, base.RawQuery = p, ""
	var tried []string
	for _, probe := range []struct {
		path string
		kind apiKind
		ok   func([]byte) bool
	}{
		{"/api/v3/services", jaegerV3, func(b []byte) bool { return hasKey(b, "services") }},
		{"/api/services", jaegerV1, func(b []byte) bool { return hasKey(b, "data") }},
		{"/api/echo", tempo, func(b []byte) bool { return strings.TrimSpace(string(b)) == "echo" }},
		{"/api/v2/services", zipkin, func(b []byte) bool { var l []string; return json.Unmarshal(b, &l) == nil }},
	} {
		pu := base.JoinPath(probe.path)
		b, err := f.get(ctx, pu, "", 1<<20)
		if err == nil && probe.ok(b) {
			return probe.kind, &base, nil
		}
		if err != nil && ctx.Err() != nil {
			return 0, nil, err
		}
		var he *httpError
		if err != nil && !errors.As(err, &he) {
			return 0, nil, err // the host does not answer at all
		}
		tried = append(tried, probe.path)
	}
	return 0, nil, fmt.Errorf("%s: no Jaeger query service, Tempo or Zipkin answers there (tried %s)", u.Redacted(), strings.Join(tried, ", "))
}

// jaeger searches Jaeger, once per service when q names none.
func (f *fetcher) jaeger(ctx context.Context, api apiKind, base, u *url.URL, q Query) error {
	services := []string{q.Service}
	if q.Service == "" {
		if s := serviceParam(api, u); s != "" {
			services = []string{s}
		} else {
			var err error
			if services, err = f.services(ctx, api, base); err != nil {
				return err
			}
		}
	}
	f.need += len(services)
	f.progress()
	for _, svc := range services {
		su := searchURL(api, base, u, svc, q)
		err := f.decode(ctx, su, "application/json")
		if isNotFound(err) {
			err = nil // api_v3 answers an empty search with 404 "No traces found"
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// serviceParam is the service named in a search URL's own query.
func serviceParam(api apiKind, u *url.URL) string {
	if api == jaegerV3 {
		return u.Query().Get("query.service_name")
	}
	return u.Query().Get("service")
}

// searchURL builds one Jaeger search: the URL's own parameters, then q's
// where the URL sets none.
func searchURL(api apiKind, base, u *url.URL, service string, q Query) *url.URL {
	v := u.Query()
	set := func(k, val string) {
		if val != "" && v.Get(k) == "" {
			v.Set(k, val)
		}
	}
	var su *url.URL
	if api == jaegerV3 {
		su = base.JoinPath("/api/v3/traces")
		set("query.service_name", service)
		set("query.operation_name", q.Operation)
		set("query.start_time_min", q.Start.UTC().Format(time.RFC3339Nano))
		set("query.start_time_max", q.End.UTC().Format(time.RFC3339Nano))
		set("query.num_traces", fmt.Sprint(q.Limit))
	} else {
		su = base.JoinPath("/api/traces")
		set("service", service)
		set("operation", q.Operation)
		if v.Get("lookback") == "" {
			set("start", fmt.Sprint(q.Start.UnixMicro()))
			set("end", fmt.Sprint(q.End.UnixMicro()))
		}
		set("limit", fmt.Sprint(q.Limit))
	}
	su.RawQuery = v.Encode()
	return su
}

// services lists the services Jaeger knows.
func (f *fetcher) services(ctx context.Context, api apiKind, base *url.URL) ([]string, error) {
	path, key := "/api/v3/services", "services"
	if api == jaegerV1 {
		path, key = "/api/services", "data"
	}
	su := base.JoinPath(path)
	b, err := f.get(ctx, su, "application/json", 64<<20)
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	var list []string
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("GET %s: %w", su.Redacted(), err)
	}
	if raw := doc[key]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("GET %s: %s: %w", su.Redacted(), key, err)
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("GET %s: Jaeger knows no services: it holds no traces", su.Redacted())
	}
	return list, nil
}

// tempo searches Tempo, then reads each trace found.
func (f *fetcher) tempo(ctx context.Context, base, u *url.URL, q Query) error {
	su := base.JoinPath("/api/search")
	v := u.Query()
	if v.Get("tags") == "" && v.Get("q") == "" {
		var tags []string
		if q.Service != "" {
			tags = append(tags, "service.name="+logfmtValue(q.Service))
		}
		if q.Operation != "" {
			tags = append(tags, "name="+logfmtValue(q.Operation))
		}
		if len(tags) > 0 {
			v.Set("tags", strings.Join(tags, " "))
		}
	}
	if v.Get("start") == "" && v.Get("end") == "" {
		v.Set("start", fmt.Sprint(q.Start.Unix()))
		v.Set("end", fmt.Sprint(q.End.Unix()+1)) // whole seconds, End included
	}
	if v.Get("limit") == "" {
		v.Set("limit", fmt.Sprint(q.Limit))
	}
	su.RawQuery = v.Encode()
	f.need++
	f.progress()
	b, err := f.get(ctx, su, "application/json", 64<<20)
	if err != nil {
		return err
	}
	f.done++
	var res struct {
		Traces []struct {
			TraceID string `json:"traceID"`
		} `json:"traces"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("GET %s: Tempo search response: %w", su.Redacted(), err)
	}
	f.need += len(res.Traces)
	var traces []*url.URL
	for _, t := range res.Traces {
		if !hexID.MatchString(t.TraceID) {
			return fmt.Errorf("GET %s: Tempo search returned trace id %q, not hex", su.Redacted(), t.TraceID)
		}
		traces = append(traces, base.JoinPath("/api/traces", t.TraceID))
	}
	return f.decodeAll(ctx, traces, "application/json")
}

// parallel is how many requests for single traces are in flight at once.
const parallel = 4

// decodeAll GETs the URLs, parallel at a time, and decodes their bodies in
// the order given, so the Set does not depend on which answered first. A
// body waiting its turn stays in the connection: its server is held back,
// not buffered here.
func (f *fetcher) decodeAll(ctx context.Context, us []*url.URL, accept string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		resp *http.Response
		done context.CancelFunc
		err  error
	}
	answers := make([]chan answer, len(us))
	for i := range answers {
		answers[i] = make(chan answer, 1)
	}
	// Slots are taken in order and given back in order, as bodies are
	// decoded: the next body to decode always holds one.
	slots := make(chan struct{}, parallel)
	go func() {
		for i, u := range us {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				answers[i] <- answer{err: ctx.Err()}
				continue
			}
			go func() {
				resp, done, err := f.do(ctx, u, accept)
				answers[i] <- answer{resp, done, err}
			}()
		}
	}()
	var first error
	for i, u := range us {
		a := <-answers[i]
		if a.err == nil {
			if first == nil {
				first = f.decodeBody(ctx, u, a.resp)
			}
			a.resp.Body.Close()
			a.done()
		} else if first == nil {
			first = a.err
		}
		if first != nil {
			cancel() // the rest fail fast
		}
		select {
		case <-slots:
		default: // an answer given without a slot, after cancel
		}
	}
	return first
}

// zipkin searches Zipkin's /api/v2/traces, which returns whole traces
// across services.
func (f *fetcher) zipkin(ctx context.Context, base, u *url.URL, q Query) error {
	su := base.JoinPath("/api/v2/traces")
	v := u.Query()
	set := func(k, val string) {
		if val != "" && v.Get(k) == "" {
			v.Set(k, val)
		}
	}
	set("serviceName", q.Service)
	set("spanName", q.Operation)
	set("endTs", fmt.Sprint(q.End.UnixMilli()))
	set("lookback", fmt.Sprint(q.End.Sub(q.Start).Milliseconds()))
	set("limit", fmt.Sprint(q.Limit))
	su.RawQuery = v.Encode()
	f.need++
	f.progress()
	return f.decode(ctx, su, "application/json")
}

var hexID = regexp.MustCompile(`^[0-9a-fA-F]{1,32}$`)

// logfmtValue quotes a tag value for Tempo's logfmt tags parameter.
func logfmtValue(s string) string {
	if strings.ContainsAny(s, " \t\"=") || s == "" {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// decode GETs u and decodes its body into the Set as an input named by the
// URL. A response holding no span adds nothing and is no error.
func (f *fetcher) decode(ctx context.Context, u *url.URL, accept string) error {
	resp, cancel, err := f.do(ctx, u, accept)
	if err != nil {
		return err
	}
	defer cancel()
	defer resp.Body.Close()
	return f.decodeBody(ctx, u, resp)
}

// decodeBody decodes the body of the answer to u.
func (f *fetcher) decodeBody(ctx context.Context, u *url.URL, resp *http.Response) error {
	err := ingest.Decode(ctx, f.set, u.Redacted(), resp.Body, f.opts.Decode)
	f.done++
	f.progress()
	switch {
	case errors.Is(err, ingest.ErrNoSpans):
		return nil
	case err != nil && isTimeout(err):
		return fmt.Errorf("GET %s: no complete answer within %s", u.Redacted(), f.opts.Timeout)
	}
	return err
}

// get GETs u and returns its body, at most max bytes.
func (f *fetcher) get(ctx context.Context, u *url.URL, accept string, max int64) ([]byte, error) {
	resp, cancel, err := f.do(ctx, u, accept)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, f.transportErr(u, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("GET %s: response exceeds %d bytes", u.Redacted(), max)
	}
	return b, nil
}

// do sends the request and checks the status; the caller closes the body
// and calls cancel.
func (f *fetcher) do(ctx context.Context, u *url.URL, accept string) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	req.Header.Set("User-Agent", "retryaudit")
	resp, err := f.client.Do(req)
	if err != nil {
		defer cancel()
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, nil, ctx.Err() // the caller gave up: no transport error to report
		}
		return nil, nil, f.transportErr(u, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		cancel()
		return nil, nil, &httpError{url: u.Redacted(), status: resp.StatusCode, body: errorText(body)}
	}
	return resp, cancel, nil
}

func (f *fetcher) transportErr(u *url.URL, err error) error {
	if isTimeout(err) {
		return fmt.Errorf("GET %s: no complete answer within %s", u.Redacted(), f.opts.Timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("GET %s: %w", u.Redacted(), err)
}

func (f *fetcher) progress() {
	if f.opts.Progress != nil {
		f.opts.Progress(f.done, f.need)
	}
}

// httpError is a response with a status other than 200.
type httpError struct {
	url    string
	status int
	body   string
}

func (e *httpError) Error() string {
	msg := fmt.Sprintf("GET %s: HTTP %d %s", e.url, e.status, http.StatusText(e.status))
	if e.body != "" {
		msg += ": " + e.body
	}
	return msg
}

func isNotFound(err error) bool {
	var he *httpError
	return errors.As(err, &he) && he.status == http.StatusNotFound
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) && te.Timeout()
}

// errorText renders an error body for a terminal: the message of a JSON
// error ({"error": {"message"}}, {"errors": [{"msg"}]}), else the text, on
// one line, control bytes removed, at most 300 bytes.
func errorText(b []byte) string {
	var doc struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Errors []struct {
			Msg string `json:"msg"`
		} `json:"errors"`
	}
	s := string(b)
	if json.Unmarshal(b, &doc) == nil {
		switch {
		case doc.Error != nil && doc.Error.Message != "":
			s = doc.Error.Message
		case len(doc.Errors) > 0 && doc.Errors[0].Msg != "":
			s = doc.Errors[0].Msg
		}
	}
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)), " ")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}

// hasKey reports whether b is a JSON object with key.
func hasKey(b []byte, key string) bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(b, &doc) != nil {
		return false
	}
	_, ok := doc[key]
	return ok
}
