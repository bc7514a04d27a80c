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

// TestTopologyRoundTrip: what infer writes, ReadTopology reads back equal.
func TestTopologyRoundTrip(t *testing.T) {
	top := inferFile(t, filepath.Join("..", "samples", "mixed", "traces.otlp.jsonl.gz"))
	b, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadTopology(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(top, back) {
		t.Error("topology changed through JSON")
	}
}

func TestReadTopologyErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"schema":"retryaudit.topology/v9"}`, `schema "retryaudit.topology/v9"`},
		{"{\n  \"schema\": \"retryaudit.topology/v1\",\n  \"edges\": [{\"caler\": \"x\"}]\n}", `unknown field "caler"`},
		{"{\n  \"schema\": \"retryaudit.topology/v1\",\n  \"edges\": 5\n}", "line 3, column"},
		{`{"schema":"retryaudit.topology/v1","edges":[{"caller":"a","callee":"b","max_attempts":0}]}`, "max_attempts 0"},
		{`{"schema":`, "unexpected EOF"},
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
