//go:build live && linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/ingest/remote"
)

// The live test (make test-live) runs a real Jaeger v2, built from its Go
// module by scripts/build-jaeger.sh, whose path is in $RETRYAUDIT_JAEGER.
// For each committed sample it starts Jaeger on 127.0.0.1 with in-memory
// storage, sends the sample's OTLP requests to its OTLP/HTTP receiver, and
// infers the topology back through the query URL: through api_v3 it must
// equal the topology of the OTLP file byte for byte, through /api/traces
// (Jaeger JSON, microsecond times) the topology of the sample's Jaeger
// export. With RETRYAUDIT_RECORD set it also records the responses the
// package remote's unit tests replay.

func TestLiveJaeger(t *testing.T) {
	bin := os.Getenv("RETRYAUDIT_JAEGER")
	if bin == "" {
		t.Fatal("RETRYAUDIT_JAEGER is not set: run make test-live, which builds Jaeger first")
	}
	// Every committed scenario with both exports.
	files, _ := filepath.Glob(filepath.Join("..", "..", "samples", "*", "traces.jaeger.json.gz"))
	if len(files) == 0 {
		t.Fatal("no samples/*/traces.jaeger.json.gz")
	}
	for _, f := range files {
		dir := filepath.Dir(f)
		scenario := filepath.Base(dir)
		t.Run(scenario, func(t *testing.T) {
			j := startJaeger(t, bin)
			spans, since, until := sendOTLP(t, j.otlp, filepath.Join(dir, "traces.otlp.jsonl.gz"))
			j.waitForSpans(t, spans, since, until)
			window := []string{"--since", since.Format(time.RFC3339), "--until", until.Format(time.RFC3339), "--limit-traces", "100000"}
			for _, tc := range []struct{ name, url, file string }{
				{"api_v3", j.query, "traces.otlp.jsonl.gz"},
				{"api_traces", j.query + "/api/traces", "traces.jaeger.json.gz"},
			} {
				want := inferJSON(t, filepath.Join(dir, tc.file))
				got := inferJSON(t, append([]string{tc.url}, window...)...)
				if !bytes.Equal(got, want) {
					t.Errorf("%s: the topology read from %s differs from %s's:\n%s", tc.name, tc.url, tc.file, firstDiff(got, want))
				}
			}
			if rec := os.Getenv("RETRYAUDIT_RECORD"); rec != "" && scenario == "mixed" {
				record(t, j.query, rec, since, until)
			}
		})
	}
}

type jaeger struct {
	query, otlp string // base URLs
}

// startJaeger runs bin on free 127.0.0.1 ports with scripts/jaeger-live.yaml
// and stops it when the test ends.
func startJaeger(t *testing.T, bin string) *jaeger {
	t.Helper()
	ports := freePorts(t, 3)
	cfg, err := filepath.Abs(filepath.Join("..", "..", "scripts", "jaeger-live.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(t.TempDir(), "jaeger.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Env = append(os.Environ(),
		"RETRYAUDIT_JAEGER_QUERY_HTTP="+ports[0],
		"RETRYAUDIT_JAEGER_QUERY_GRPC="+ports[1],
		"RETRYAUDIT_JAEGER_OTLP_HTTP="+ports[2])
	cmd.Stdout, cmd.Stderr = logf, logf
	// Jaeger dies with the test process, however that ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("jaeger log:\n%s", b)
		}
	})
	j := &jaeger{query: "http://127.0.0.1:" + ports[0], otlp: "http://127.0.0.1:" + ports[2]}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(j.query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not answer on %s within 60s: %v", j.query, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, fmt.Sprint(l.Addr().(*net.TCPAddr).Port))
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// sendOTLP posts every OTLP JSON request of a JSON Lines file to the
// receiver and returns the number of spans sent and a window holding their
// starts: the whole hours around them.
func sendOTLP(t *testing.T, base, file string) (spans int, since, until time.Time) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		resp, err := http.Post(base+"/v1/traces", "application/json", bytes.NewReader(sc.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("OTLP receiver: HTTP %d: %s", resp.StatusCode, body)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	set, err := ingest.ReadFiles(context.Background(), []string{file}, nil, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, last := set.Spans[0].Start, set.Spans[0].Start
	for _, sp := range set.Spans {
		first, last = min(first, sp.Start), max(last, sp.Start)
	}
	since = time.Unix(0, first).UTC().Truncate(time.Hour)
	until = time.Unix(0, last).UTC().Truncate(time.Hour).Add(time.Hour)
	return len(set.Spans), since, until
}

// waitForSpans waits until the query service returns every span sent (the
// receiver batches before storing).
func (j *jaeger) waitForSpans(t *testing.T, want int, since, until time.Time) {
	t.Helper()
	q := remote.Query{Start: since, End: until, Limit: 100000}
	deadline := time.Now().Add(30 * time.Second)
	for {
		set := ingest.NewSet()
		err := remote.Fetch(context.Background(), set, j.query, q, remote.Options{})
		if err == nil {
			set.Apply(ingest.Filter{Unique: true})
			if len(set.Spans) == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger holds %d of the %d spans sent after 30s (%v)", len(set.Spans), want, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// inferJSON runs retryaudit infer --format json on args in-process.
func inferJSON(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append([]string{"infer", "--format", "json"}, args...), nil, &out, &errb); code != 0 {
		t.Fatalf("infer %v: exit %d: %s", args, code, errb.String())
	}
	return out.Bytes()
}

// firstDiff shows the first differing line of two renderings.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// record saves, under dir, the responses of the requests remote's unit
// tests replay: searches through both APIs, a per-service search, the
// service lists, and the server's own error answers.
func record(t *testing.T, base, dir string, since, until time.Time) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{dir: dir}
	client := &http.Client{Transport: rec}
	for _, c := range []struct {
		url string
		q   remote.Query
	}{
		{base, remote.Query{Service: "payments", Start: since, End: until, Limit: 2}},
		{base + "/api/traces", remote.Query{Service: "payments", Start: since, End: until, Limit: 2}},
		{base, remote.Query{Start: since, End: until, Limit: 1}},
		{base + "/api/traces", remote.Query{Start: since, End: until, Limit: 1}},
		{base + "/api/v3/traces", remote.Query{Service: "nobody", Start: since, End: until, Limit: 2}},
		{base + "/api/traces/00000000000000000000000000000bad", remote.Query{}},
	} {
		set := ingest.NewSet()
		err := remote.Fetch(context.Background(), set, c.url, c.q, remote.Options{Client: client})
		t.Logf("recorded %s: %d spans, %v", c.url, len(set.Spans), err)
	}
	for _, p := range []string{"/api/traces", "/api/v3/traces?query.service_name=payments"} {
		resp, err := client.Get(base + p) // the server's errors for missing parameters
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(recordings{Since: since, Until: until, Responses: rec.index}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recorder is a RoundTripper that saves each response body to a file and
// its request, status and content type to an index.
type recorder struct {
	dir   string
	index []recording
}

// recordings is index.json: the window the searches asked for, and each
// response.
type recordings struct {
	Since     time.Time   `json:"since"`
	Until     time.Time   `json:"until"`
	Responses []recording `json:"responses"`
}

type recording struct {
	Request     string `json:"request"` // path and query
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        string `json:"body"` // file name
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%02d.body", len(r.index)+1)
	if err := os.WriteFile(filepath.Join(r.dir, name), body, 0o644); err != nil {
		return nil, err
	}
	u := url.URL{Path: req.URL.Path, RawQuery: req.URL.RawQuery}
	r.index = append(r.index, recording{Request: u.String(), Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: name})
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}
