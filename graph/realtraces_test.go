package graph

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func realtracePath(t *testing.T, name string) string {
	p := filepath.Join("..", "..", "shared", "realtraces", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("realtraces not available: %v", err)
	}
	return p
}

// TestPetclinicNPlusOne: 14 sibling queries from one request, all
// successful, are a loop, not retries.
func TestPetclinicNPlusOne(t *testing.T) {
	top := inferFile(t, realtracePath(t, "jaegerui__petclinic-nplus1.jaegerui-trace.json"))
	for _, e := range top.Edges {
		if e.Retries || e.MaxAttempts != 1 {
			t.Errorf("%s: retries %v, max attempts %d", edgeLocation(e), e.Retries, e.MaxAttempts)
		}
	}
	for _, f := range top.Findings {
		t.Errorf("finding on an N+1 loop: %+v", f)
	}
}

// TestRealPairsAgree: the OTLP files and Jaeger's own conversion of them
// give the same topology.
func TestRealPairsAgree(t *testing.T) {
	for _, pair := range [][2]string{
		{"jaeger__otlp2jaeger-in.otlp.json", "jaeger__otlp2jaeger-out.jaegerui.json"},
		{"jaegerui__otlp2jaeger-multi-in.otlp.jsonl", "jaegerui__otlp2jaeger-multi-out.jaegerui.json"},
	} {
		a := asJSON(t, inferFile(t, realtracePath(t, pair[0])))
		b := asJSON(t, inferFile(t, realtracePath(t, pair[1])))
		for _, d := range diffJSON("", a, b) {
			t.Errorf("%s vs %s: %s", pair[0], pair[1], d)
		}
	}
}

// TestTopologyRoundTrip: what infer writes, ReadTopology reads back equal,
// failure episodes included (breaker-concurrent has three), and the
// services' instances (breaker-instances runs api as three; the others
// name none).
func TestTopologyRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		sample    string
		incidents int
		instances map[string]int
	}{{"mixed", 0, nil}, {"breaker-concurrent", 3, nil}, {"breaker-instances", 3, map[string]int{"api": 3}}} {
		top := inferFile(t, filepath.Join("..", "samples", tc.sample, "traces.otlp.jsonl.gz"))
		n := 0
		for _, e := range top.Edges {
			if e.Outcomes != nil {
				n += len(e.Outcomes.Incidents)
			}
		}
		if n != tc.incidents {
			t.Errorf("%s: %d failure episodes, want %d", tc.sample, n, tc.incidents)
		}
		for _, s := range top.Services {
			if s.Instances != tc.instances[s.Name] {
				t.Errorf("%s: %s has %d instances, want %d", tc.sample, s.Name, s.Instances, tc.instances[s.Name])
			}
		}
		b, err := json.MarshalIndent(top, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(`"bucket`)) {
			t.Errorf("%s: the topology still writes time buckets", tc.sample)
		}
		back, err := ReadTopology(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(top, back) {
			t.Errorf("%s: topology changed through JSON", tc.sample)
		}
	}
}

// TestReadLegacyIncidents: a topology written before failure episodes,
// its incidents in time buckets of bucket_s, reads as spans of time.
func TestReadLegacyIncidents(t *testing.T) {
	for _, tc := range []struct {
		name, cal  string
		start, end float64
	}{
		{"bucket_s given", `,"calibration":{"arrival_window_s":5,"root_rate_per_s":1,"bucket_s":0.25,"sampling":{"probability":1,"source":"none seen","lower_bound":true,"roots":0},"root":{"requests":1,"success_rate":1,"server_error_rate":0,"p50_ms":1,"p90_ms":1,"p99_ms":1,"p50_band_ms":[1,1],"p90_band_ms":[1,1]},"in_flight":[]}`, 750, 1000},
		{"no calibration: 0.5 s buckets", "", 1500, 2000},
	} {
		in := `{"schema":"retryaudit.topology/v1","edges":[{"caller":"a","callee":"b","max_attempts":1,"outcomes":{"incidents":[{"bucket":3,"first":{"server_error":2},"retry":{}}]}}]` + tc.cal + `}`
		top, err := ReadTopology(strings.NewReader(in))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		incs := top.Edges[0].Outcomes.Incidents
		if len(incs) != 1 || incs[0].StartMS != tc.start || incs[0].EndMS != tc.end || incs[0].Bucket != nil || incs[0].First.ServerError != 2 {
			t.Errorf("%s: incidents %+v, want one from %g to %g ms", tc.name, incs, tc.start, tc.end)
		}
		if c := top.Calibration; c != nil && c.BucketS != 0 {
			t.Errorf("%s: bucket_s %g kept; want it read into the incidents", tc.name, c.BucketS)
		}
	}
}

func TestReadTopologyErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"schema":"retryaudit.topology/v9"}`, `schema "retryaudit.topology/v9"`},
		{"{\n  \"schema\": \"retryaudit.topology/v1\",\n  \"edges\": [{\"caler\": \"x\"}]\n}", `unknown field "caler"`},
		{"{\n  \"schema\": \"retryaudit.topology/v1\",\n  \"edges\": 5\n}", "line 3, column"},
		{`{"schema":"retryaudit.topology/v1","edges":[{"caller":"a","callee":"b","max_attempts":0}]}`, "max_attempts 0"},
		{`{"schema":`, "unexpected EOF"},
		{`{"schema":"retryaudit.topology/v1","services":[{"name":"api","virtual":false,"instances":-1,"operations":[]}]}`, "services[0] (api): instances -1"},
		{`{"schema":"retryaudit.topology/v1","edges":[{"caller":"a","callee":"b","max_attempts":1,"outcomes":{"incidents":[{"start_ms":5,"end_ms":5}]}}]}`, "incidents[0]: from 5ms to 5ms"},
		{`{"schema":"retryaudit.topology/v1","edges":[{"caller":"a","callee":"b","max_attempts":1,"outcomes":{"incidents":[{"bucket":-1}]}}]}`, "bucket -1"},
	} {
		_, err := ReadTopology(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadTopology(%q) = %v, want error containing %q", tc.in, err, tc.want)
		}
	}
}

// FuzzReadTopology: the topology decoder never panics, and what it accepts
// encodes again.
func FuzzReadTopology(f *testing.F) {
	top := inferFile(f, filepath.Join("..", "samples", "mixed", "traces.otlp.jsonl.gz"))
	b, _ := json.Marshal(top)
	f.Add(b)
	f.Add([]byte(`{"schema":"retryaudit.topology/v1","edges":[{"caller":"a","callee":"b","max_attempts":3}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ReadTopology(bytes.NewReader(b))
		if err != nil {
			return
		}
		if _, err := json.Marshal(got); err != nil {
			t.Fatalf("accepted topology does not encode: %v", err)
		}
	})
}
