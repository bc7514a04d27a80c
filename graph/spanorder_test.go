package graph

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestSpanOrderInvariant: a backend's API returns a trace's spans in no
// fixed order (Jaeger's /api/traces did not keep the order they were
// sent in), and the Jaeger JSON's microsecond clock leaves siblings that
// start together (a retry sent at once) tied on their start. Inference
// must read every committed sample's Jaeger file the same with its traces
// and each trace's spans shuffled: before siblings were ordered by span id
// on a tie, superagent-retry's immediate retries grouped into calls by
// the order the spans came in (one call read as hedged), and the live
// Jaeger test failed 3 runs in 10.
func TestSpanOrderInvariant(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "samples", "*", "traces.jaeger.json.gz"))
	if len(files) < 5 {
		t.Fatalf("only %d samples", len(files))
	}
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		t.Run(name, func(t *testing.T) {
			want := topologyJSON(t, f)
			for seed := range uint64(2) {
				shuffled := filepath.Join(t.TempDir(), "traces.jaeger.json.gz")
				shuffleJaeger(t, f, shuffled, seed)
				if got := topologyJSON(t, shuffled); !bytes.Equal(got, want) {
					t.Errorf("seed %d: the topology of the shuffled spans differs:\n%s", seed, firstDiff(got, want))
				}
			}
		})
	}
}

// topologyJSON is the topology of file f as JSON.
func topologyJSON(t *testing.T, f string) []byte {
	t.Helper()
	out, err := json.Marshal(inferFile(t, f))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// shuffleJaeger writes Jaeger JSON file src to dst with its traces, and
// each trace's spans, in an order drawn from seed.
func shuffleJaeger(t *testing.T, src, dst string, seed uint64) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var traces []map[string]json.RawMessage
	if err := json.Unmarshal(doc["data"], &traces); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 7))
	r.Shuffle(len(traces), func(i, j int) { traces[i], traces[j] = traces[j], traces[i] })
	for _, tr := range traces {
		var spans []json.RawMessage
		if err := json.Unmarshal(tr["spans"], &spans); err != nil {
			t.Fatal(err)
		}
		r.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
		tr["spans"] = mustJSON(t, spans)
	}
	doc["data"] = mustJSON(t, traces)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(doc); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
