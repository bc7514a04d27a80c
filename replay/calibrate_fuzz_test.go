package replay

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
)

// FuzzFromTopology feeds topology files, as users may edit them, to model
// building and a short replay under the observed degradation: whatever
// the file says about outcomes, incidents, times, concurrency and
// sampling, they return a result or an error, never a panic. (Arrival
// rates above 10k/s are skipped to keep each run short.)
func FuzzFromTopology(f *testing.F) {
	top := sampleTopology(f, "incident")
	b, err := json.Marshal(top)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		top, err := graph.ReadTopology(bytes.NewReader(b))
		if err != nil {
			return
		}
		m, err := FromTopology(top, BuildOptions{})
		if err != nil || m.Rate > 1e4 {
			return
		}
		if _, err := Run(m, degrade.Schedule{{Kind: degrade.Observed}}, RunConfig{Seed: 1, Duration: 1, Drain: -1}); err != nil {
			t.Fatalf("a model FromTopology built does not run: %v", err)
		}
	})
}
