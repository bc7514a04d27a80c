package replay

import (
	"context"
	"path/filepath"
	"testing"
)

// sampleScenarios lists every committed sample scenario: the directories
// of samples/ with a truth.json.
func sampleScenarios(t testing.TB) []string {
	dirs, err := filepath.Glob("../samples/*/truth.json")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no sample scenarios: %v", err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Base(filepath.Dir(d))
	}
	return dirs
}

// notYetCalibrated are scenarios the model does not reproduce yet, with
// what it misses: the breaker and hedging scenarios came with issue 11's
// inference after the calibration was built. The report says so as
// "uncalibrated"; this list must shrink, never grow.
var notYetCalibrated = map[string]string{
	"breaker": "root server-error rate 15% vs 27% and p50: the replay's breaker (around the call, as the traces show) opens less, since the replay's failures do not come in runs of three as the traces' do",
}

// TestCalibrateSamples holds every committed scenario to the default
// tolerances, with default settings: the model built from the traces must
// reproduce them.
func TestCalibrateSamples(t *testing.T) {
	for _, dir := range sampleScenarios(t) {
		t.Run(dir, func(t *testing.T) {
			if why, ok := notYetCalibrated[dir]; ok {
				t.Skipf("not yet calibrated: %s", why)
			}
			c, err := Calibrate(context.Background(), sampleTopology(t, dir), CalibrateOptions{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("root traced %+v", c.Root.Traced)
			t.Logf("root replayed %+v", c.Root.Replayed)
			for _, e := range c.Edges {
				t.Logf("%s→%s %s: traced %+v replayed %+v", e.Caller, e.Callee, e.Operation, e.Traced, e.Replayed)
			}
			for _, m := range c.Misses {
				t.Errorf("miss: %s", m)
			}
		})
	}
}
