package policyfile

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/parser"
)

// TestPrecheckBoundsMemory: a 200 KB file nested deeply (flow brackets,
// block mappings, block sequences) is refused before the YAML library
// builds it, in a few kilobytes; files nested within the limit, and
// brackets inside quotes and comments, are not refused.
func TestPrecheckBoundsMemory(t *testing.T) {
	const size = 200 << 10
	var block strings.Builder
	for i := 0; block.Len() < size; i++ {
		block.WriteString(strings.Repeat(" ", i%2000) + "a:\n")
	}
	deep := map[string]string{
		"flow":      "default: " + strings.Repeat("[", size),
		"flow-maps": strings.Repeat("{a: ", size/4),
		"block":     block.String(),
		"sequences": strings.Repeat("- ", size/2) + "x\n",
	}
	for name, data := range deep {
		t.Run(name, func(t *testing.T) {
			// TotalAlloc counts the whole process (the runtime and the
			// test framework allocate now and then too), so the figure
			// is the least of a few refusals: noise only ever adds.
			var got uint64
			for run := 0; run < 5; run++ {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				_, err := Read(name+".yaml", []byte(data))
				runtime.ReadMemStats(&after)
				var pe *PolicyFileError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), "nested more than") {
					t.Fatalf("error %v, want a nesting error", err)
				}
				if pe.Line == 0 {
					t.Fatalf("the error has no line: %v", err)
				}
				if n := after.TotalAlloc - before.TotalAlloc; run == 0 || n < got {
					got = n
				}
			}
			if got > 8<<10 {
				t.Errorf("refusing a %d-byte file allocated %d bytes", len(data), got)
			}
			t.Logf("%d-byte file refused after allocating %d bytes", len(data), got)
		})
	}
	ok := map[string]string{
		"within the limit": "default: {breaker: {openFor: 1s}}\nedges: []\n# " + strings.Repeat("[", 100) + "\n",
		"quoted brackets":  "edges:\n  - {caller: \"" + strings.Repeat("[{", 100) + "\", callee: b}\n",
	}
	for name, data := range ok {
		if err := pfPrecheck(name, []byte(data)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := pfPrecheck("big.yaml", make([]byte, pfMaxBytes+1)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("a file over the size limit: %v", err)
	}
}

// FuzzRead checks that reading any file, in any vocabulary, never panics,
// errs with a *PolicyFileError, and applies to a model as a valid model.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"grpc-service-config.json", "envoy-route.yaml", "envoy-bootstrap.yaml", "istio.yaml", "linkerd.yaml"} {
		if data, err := os.ReadFile("testdata/real/" + name); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.1s"}}]}`))
	f.Add([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: inventory, annotations: {retry.linkerd.io/limit: \"2\"}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := Read("fuzz", data)
		if err != nil {
			var pe *PolicyFileError
			if !errors.As(err, &pe) {
				t.Fatalf("error is %T, not a *PolicyFileError: %v", err, err)
			}
			return
		}
		m := readModel()
		_ = pf.Unmatched(m)
		if got, err := pf.Apply(m); err == nil {
			if err := got.Validate(); err != nil {
				t.Fatalf("applied model is invalid: %v\n%s", err, data)
			}
		}
	})
}

// BenchmarkNestedYAML compares reading a 4 KB file nested 4000 brackets
// deep through Read (refused by the depth check) with handing it straight
// to the YAML parser, whose cost grows with the square of the depth: the
// ratio of B/op is what the check saves (go test -bench NestedYAML
// -benchmem ./replay/policyfile).
func BenchmarkNestedYAML(b *testing.B) {
	data := []byte("default: " + strings.Repeat("[", 4000))
	b.Run("Read", func(b *testing.B) {
		for b.Loop() {
			if _, err := Read("deep.yaml", data); err == nil {
				b.Fatal("accepted")
			}
		}
	})
	b.Run("parser-only", func(b *testing.B) {
		for b.Loop() {
			_, _ = parser.ParseBytes(data, 0)
		}
	})
}
