package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retryaudit/retryaudit/ingest"
)

// recorded is the directory of responses make record-live saved from a
// real Jaeger v2 (v1.76.0) holding samples/mixed.
var recorded = filepath.Join("testdata", "jaeger-v1.76.0")

// The query window of the recordings (index.json says; these are checked
// against it).
var (
	since = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	until = time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
)

// replay serves the recorded responses, matching path and query
// parameters; any other request fails the test.
func replay(t *testing.T) *httptest.Server {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(recorded, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Since, Until time.Time
		Responses    []struct {
			Request     string `json:"request"`
			Status      int    `json:"status"`
			ContentType string `json:"content_type"`
			Body        string `json:"body"`
		}
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if !rec.Since.Equal(since) || !rec.Until.Equal(until) {
		t.Fatalf("the recordings searched %s to %s: set since and until to match", rec.Since, rec.Until)
	}
	index := rec.Responses
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, rec := range index {
			u, _ := url.Parse(rec.Request)
			if u.Path == r.URL.Path && reflect.DeepEqual(u.Query(), r.URL.Query()) {
				body, err := os.ReadFile(filepath.Join(recorded, rec.Body))
				if err != nil {
					t.Error(err)
				}
				w.Header().Set("Content-Type", rec.ContentType)
				w.WriteHeader(rec.Status)
				w.Write(body)
				return
			}
		}
		t.Errorf("no recorded response for %s", r.URL)
		http.Error(w, "not recorded", http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// traceIDs lists the distinct trace ids of set, in order of appearance.
func traceIDs(set *ingest.Set) []string {
	var ids []string
	seen := map[ingest.TraceID]bool{}
	for _, sp := range set.Spans {
		if !seen[sp.TraceID] {
			seen[sp.TraceID] = true
			ids = append(ids, sp.TraceID.String())
		}
	}
	return ids
}

func TestJaegerRecorded(t *testing.T) {
	srv := replay(t)
	payments := Query{Service: "payments", Start: since, End: until, Limit: 2}
	all := Query{Start: since, End: until, Limit: 1}
	for _, tc := range []struct {
		name, path string
		q          Query
		format     ingest.Format
		inputs     int
		traces     int
	}{
		{"base URL probes api_v3", "", payments, ingest.FormatJaegerAPIv3, 1, 2},
		{"/api/traces", "/api/traces", payments, ingest.FormatJaegerJSON, 1, 2},
		{"every service, api_v3", "/", all, ingest.FormatJaegerAPIv3, 6, 0},
		{"every service, /api/traces", "/api/traces", all, ingest.FormatJaegerJSON, 6, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := ingest.NewSet()
			if err := Fetch(context.Background(), set, srv.URL+tc.path, tc.q, Options{}); err != nil {
				t.Fatal(err)
			}
			set.Apply(ingest.Filter{Unique: true})
			if len(set.Inputs) != tc.inputs {
				t.Fatalf("%d inputs, want %d", len(set.Inputs), tc.inputs)
			}
			for _, in := range set.Inputs {
				if in.Format != tc.format || !strings.HasPrefix(in.Name, srv.URL+"/api/") {
					t.Errorf("input %s: format %s, want %s", in.Name, in.Format, tc.format)
				}
			}
			ids := traceIDs(set)
			if tc.traces > 0 && len(ids) != tc.traces {
				t.Errorf("%d traces, want %d", len(ids), tc.traces)
			}
			if len(ids) == 0 {
				t.Error("no traces")
			}
		})
	}
}

// TestJaegerAPIsAgree: the two APIs of one server return the same traces
// and spans for one search.
func TestJaegerAPIsAgree(t *testing.T) {
	srv := replay(t)
	q := Query{Service: "payments", Start: since, End: until, Limit: 2}
	v3, v1 := ingest.NewSet(), ingest.NewSet()
	if err := Fetch(context.Background(), v3, srv.URL+"/api/v3/traces", q, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Fetch(context.Background(), v1, srv.URL+"/api/traces", q, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(v3.Spans) != len(v1.Spans) || len(v3.Spans) == 0 {
		t.Fatalf("api_v3 %d spans, /api/traces %d", len(v3.Spans), len(v1.Spans))
	}
	ids := func(s *ingest.Set) map[string]bool {
		m := map[string]bool{}
		for _, sp := range s.Spans {
			m[sp.TraceID.String()+sp.SpanID.String()] = true
		}
		return m
	}
	if !reflect.DeepEqual(ids(v3), ids(v1)) {
		t.Error("the APIs return different spans")
	}
}

func TestJaegerRecordedErrors(t *testing.T) {
	srv := replay(t)
	for _, tc := range []struct {
		path string
		q    Query
		want string
	}{
		{"/api/v3/traces", Query{Service: "nobody", Start: since, End: until, Limit: 2},
			srv.URL + "/api/v3/traces: the Jaeger api_v3 search found no traces (service nobody, started 2026-11-30T10:00:00Z to 2026-11-30T11:00:00Z)"},
		{"/api/traces/00000000000000000000000000000bad", Query{},
			"GET " + srv.URL + "/api/traces/00000000000000000000000000000bad: HTTP 404 Not Found: trace not found"},
		{"/api/traces", Query{Service: "payments"}, srv.URL + "/api/traces: a search needs a time window and a trace limit"},
	} {
		err := Fetch(context.Background(), ingest.NewSet(), srv.URL+tc.path, tc.q, Options{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n error %v\n want  %s", tc.path, err, tc.want)
		}
	}
	// The server's own error bodies render as their message.
	for path, want := range map[string]string{
		"/api/traces": "GET " + srv.URL + "/api/traces: HTTP 400 Bad Request: parameter 'service' is required",
		"/api/v3/traces?query.service_name=payments": "GET " + srv.URL + "/api/v3/traces?query.service_name=payments: HTTP 400 Bad Request: query.start_time_min and query.start_time_max are required",
	} {
		u, _ := url.Parse(srv.URL + path)
		f := &fetcher{client: http.DefaultClient, opts: Options{Timeout: time.Second}}
		if _, err := f.get(context.Background(), u, "", 1<<20); err == nil || err.Error() != want {
			t.Errorf("%s:\n error %v\n want  %s", path, err, want)
		}
	}
}

// TestTempo serves Tempo's documented responses: /api/echo, a search, and
// each trace as /api/traces/{id} renders it.
func TestTempo(t *testing.T) {
	trace, err := os.ReadFile(filepath.Join("..", "testdata", "tempo", "api-traces-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var search url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v3/services", "/api/services":
			http.NotFound(w, r)
		case "/api/echo":
			w.Write([]byte("echo"))
		case "/api/search":
			search = r.URL.Query()
			w.Write([]byte(`{"traces":[{"traceID":"4bf92f3577b34da6a3ce929d0e0e4736","rootServiceName":"frontend","rootTraceName":"GET /checkout","startTimeUnixNano":"1764579600000000000","durationMs":120}],"metrics":{"inspectedBytes":"2048","completedJobs":1,"totalJobs":1}}`))
		case "/api/traces/4bf92f3577b34da6a3ce929d0e0e4736":
			if r.Header.Get("Accept") != "application/json" {
				t.Errorf("Accept %q", r.Header.Get("Accept"))
			}
			w.Write(trace)
		default:
			t.Errorf("unexpected request %s", r.URL)
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	set := ingest.NewSet()
	q := Query{Service: "frontend", Operation: "GET /checkout", Start: since, End: until, Limit: 20}
	if err := Fetch(context.Background(), set, srv.URL, q, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(set.Spans) != 5 || set.Inputs[0].Format != ingest.FormatTempoJSON {
		t.Fatalf("%d spans, inputs %+v", len(set.Spans), set.Inputs)
	}
	want := url.Values{"tags": {`service.name=frontend name="GET /checkout"`}, "limit": {"20"},
		"start": {"1796032800"}, "end": {"1796036401"}}
	if !reflect.DeepEqual(search, want) {
		t.Errorf("search %v, want %v", search, want)
	}
}

// TestTempoRecordedShapes serves bodies of the shapes Tempo's code writes
// (gogo jsonpb, one line; see ../testdata/README.md): a search whose
// results carry span sets and service stats, one trace id with its leading
// zeros trimmed as Tempo prints a 64-bit id, and each trace with ids in
// base64.
func TestTempoRecordedShapes(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "tempo", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	search, checkout, cart := read("api-search-jsonpb.json"), read("api-traces-v1-jsonpb.json"), read("api-traces-v1-64bit.json")
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path)
		switch r.URL.Path {
		case "/api/v3/services", "/api/services":
			http.NotFound(w, r)
		case "/api/echo":
			w.Write([]byte("echo"))
		case "/api/search":
			w.Write(search)
		case "/api/traces/4bf92f3577b34da6a3ce929d0e0e4736":
			w.Write(checkout)
		case "/api/traces/b7ad6b7169203331":
			w.Write(cart)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	set := ingest.NewSet()
	if err := Fetch(context.Background(), set, srv.URL, Query{Service: "frontend", Start: since, End: until, Limit: 20}, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(got) > 4 {
		slices.Sort(got[4:]) // the traces, in whatever order they are fetched
	}
	if want := []string{"/api/v3/services", "/api/services", "/api/echo", "/api/search",
		"/api/traces/4bf92f3577b34da6a3ce929d0e0e4736", "/api/traces/b7ad6b7169203331"}; !reflect.DeepEqual(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	traces := map[string]int{}
	for _, sp := range set.Spans {
		traces[sp.TraceID.String()]++
	}
	if want := map[string]int{"4bf92f3577b34da6a3ce929d0e0e4736": 5, "0000000000000000b7ad6b7169203331": 1}; !reflect.DeepEqual(traces, want) {
		t.Errorf("spans by trace %v, want %v", traces, want)
	}
}

func TestHTTPErrors(t *testing.T) {
	slow := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow/api/traces":
			select {
			case <-slow:
			case <-r.Context().Done():
			}
		case "/broken/api/traces":
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("upstream\x1b[31m down\r\n\x00"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	defer close(slow)
	q := Query{Service: "s", Start: since, End: until, Limit: 1}
	for _, tc := range []struct{ url, want string }{
		{srv.URL + "/slow/api/traces", "GET " + srv.URL + "/slow/api/traces?end=1796036400000000&limit=1&service=s&start=1796032800000000: no complete answer within 100ms"},
		{srv.URL + "/broken/api/traces", "GET " + srv.URL + "/broken/api/traces?end=1796036400000000&limit=1&service=s&start=1796032800000000: HTTP 502 Bad Gateway: upstream [31m down"},
		{srv.URL + "/nothing", srv.URL + "/nothing: no Jaeger query service, Tempo or Zipkin answers there (tried /api/v3/services, /api/services, /api/echo, /api/v2/services)"},
		{"ftp://me:secret@host/x", "ftp://me:xxxxx@host/x: not an http or https URL with a host"},
		{"http://me:secret@[::1", "an input that starts like a URL does not parse as one"},
		{"http://user:secret@" + strings.TrimPrefix(srv.URL, "http://") + "/nothing", "http://user:xxxxx@" + strings.TrimPrefix(srv.URL, "http://") + "/nothing: no Jaeger"},
	} {
		err := Fetch(context.Background(), ingest.NewSet(), tc.url, q, Options{Timeout: 100 * time.Millisecond})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s:\n error %v\n want  %s", tc.url, err, tc.want)
		}
	}
}

func TestProgress(t *testing.T) {
	srv := replay(t)
	var calls [][2]int
	opts := Options{Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }}
	if err := Fetch(context.Background(), ingest.NewSet(), srv.URL, Query{Start: since, End: until, Limit: 1}, opts); err != nil {
		t.Fatal(err)
	}
	if last := calls[len(calls)-1]; last != [2]int{6, 6} {
		t.Errorf("progress ends at %v, want [6 6] (one search per service)", last)
	}
}

// TestZipkin serves Zipkin's documented responses: /api/v2/services, then
// /api/v2/traces (an array of traces).
func TestZipkin(t *testing.T) {
	traces, err := os.ReadFile(filepath.Join("..", "testdata", "zipkin", "api-v2-traces.json"))
	if err != nil {
		t.Fatal(err)
	}
	var search url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/zipkin/api/v2/services":
			w.Write([]byte(`["frontend","inventory"]`))
		case "/zipkin/api/v2/traces":
			search = r.URL.Query()
			w.Write(traces)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	set := ingest.NewSet()
	q := Query{Service: "frontend", Start: since, End: until, Limit: 10}
	if err := Fetch(context.Background(), set, srv.URL+"/zipkin", q, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(set.Spans) != 7 || set.Inputs[0].Format != ingest.FormatZipkinJSON {
		t.Fatalf("%d spans, inputs %+v", len(set.Spans), set.Inputs)
	}
	want := url.Values{"serviceName": {"frontend"}, "endTs": {"1796036400000"}, "lookback": {"3600000"}, "limit": {"10"}}
	if !reflect.DeepEqual(search, want) {
		t.Errorf("search %v, want %v", search, want)
	}
}

func TestJaegerUIURLs(t *testing.T) {
	for in, want := range map[string]string{
		"http://jaeger:16686/search?service=payments&lookback=1h&limit=20": "http://jaeger:16686/api/traces?limit=20&service=payments",
		"http://jaeger:16686/jaeger/search?service=a":                      "http://jaeger:16686/jaeger/api/traces?service=a",
		"http://jaeger:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736":       "http://jaeger:16686/api/traces/4bf92f3577b34da6a3ce929d0e0e4736",
		"http://tempo:3200/api/search?tags=x":                              "http://tempo:3200/api/search?tags=x",
		"http://tempo:3200/api/v2/traces/4bf92f3577b34da6a3ce929d0e0e4736": "http://tempo:3200/api/v2/traces/4bf92f3577b34da6a3ce929d0e0e4736",
	} {
		u, _ := url.Parse(in)
		uiToAPI(u)
		if u.String() != want {
			t.Errorf("%s → %s, want %s", in, u, want)
		}
	}
	// A pasted UI search reads the recorded /api/traces response.
	srv := replay(t)
	set := ingest.NewSet()
	q := Query{Start: since, End: until, Limit: 2}
	if err := Fetch(context.Background(), set, srv.URL+"/search?service=payments&lookback=1h", q, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(traceIDs(set)) != 2 {
		t.Errorf("%d traces", len(traceIDs(set)))
	}
}

// TestTempoManyTraces: more traces than requests in flight, answering in
// reverse order, decode in the search's order.
func TestTempoManyTraces(t *testing.T) {
	trace, err := os.ReadFile(filepath.Join("..", "testdata", "tempo", "api-traces-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3*parallel + 1
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("%032x", i+1))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/echo":
			w.Write([]byte("echo"))
		case r.URL.Path == "/api/search":
			var b strings.Builder
			b.WriteString(`{"traces":[`)
			for i, id := range ids {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"traceID":%q}`, id)
			}
			b.WriteString(`]}`)
			w.Write([]byte(b.String()))
		case strings.HasPrefix(r.URL.Path, "/api/traces/"):
			id := strings.TrimPrefix(r.URL.Path, "/api/traces/")
			if id == "0badbad" {
				http.Error(w, "block unreadable", http.StatusInternalServerError)
				return
			}
			k := slices.Index(ids, id)
			time.Sleep(time.Duration(n-k) * 2 * time.Millisecond) // later traces answer sooner
			w.Write(trace)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	set := ingest.NewSet()
	var last [2]int
	opts := Options{Progress: func(done, total int) { last = [2]int{done, total} }}
	if err := Fetch(context.Background(), set, srv.URL, Query{Start: since, End: until, Limit: n}, opts); err != nil {
		t.Fatal(err)
	}
	if len(set.Inputs) != n {
		t.Fatalf("%d inputs, want %d", len(set.Inputs), n)
	}
	for i, in := range set.Inputs {
		if want := srv.URL + "/api/traces/" + ids[i]; in.Name != want {
			t.Errorf("input %d is %s, want %s", i, in.Name, want)
		}
	}
	if last != [2]int{n + 1, n + 1} {
		t.Errorf("progress ends at %v, want [%d %d]", last, n+1, n+1)
	}
	// A failing trace fails the fetch, naming it.
	ids[2] = "0badbad"
	err = Fetch(context.Background(), ingest.NewSet(), srv.URL, Query{Start: since, End: until, Limit: n}, Options{})
	if err == nil || err.Error() != "GET "+srv.URL+"/api/traces/0badbad: HTTP 500 Internal Server Error: block unreadable" {
		t.Errorf("error %v", err)
	}
}
