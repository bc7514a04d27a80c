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

// notCalibrated lists the sample scenarios written for inference (issue
// #11) whose traffic the model does not reproduce yet, and why. Each is a
// known gap of the model, not of the traces.
var notCalibrated = map[string]string{
	"breaker": "root requests sent in order 5 ms apart with failures in runs: a breaker's open periods follow " +
		"those runs, which Poisson arrivals with independent outcomes do not make (server-error rate 59% vs 27%)",
	"hedging": "charges answered after 250 ms that hedges race: the replayed hedges win less often than the " +
		"traced ones (1.32 vs 1.47 requests per charge) and the root p90 is off by 2.6x",
	"other-service-name": "captured on a loaded host whose retry waits ran up to 45 ms late: the root p90 is the " +
		"host's lateness, which the observed policy (the schedule's 15 ms) does not replay",
}

// TestCalibrateSamples holds every committed scenario to the default
// tolerances, with default settings: the model built from the traces must
// reproduce them.
func TestCalibrateSamples(t *testing.T) {
	for _, dir := range sampleScenarios(t) {
		t.Run(dir, func(t *testing.T) {
			if why, ok := notCalibrated[dir]; ok {
				t.Skip(why)
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
