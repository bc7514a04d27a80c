package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestAbsurdParameters gives the simulating commands numbers no run can
// honour (issue 12 item 4): NaN, infinities, negatives, zeros that would
// stand for the default without a word, and runs whose estimated events
// would exhaust the machine. Each is refused before a run starts, with the
// expected form or the flag that raises the budget; none panics, runs for
// minutes or silently takes another value.
func TestAbsurdParameters(t *testing.T) {
	sample := filepath.Join("..", "..", "samples", "mixed", "traces.otlp.jsonl.gz")
	dir := t.TempDir()
	top := filepath.Join(dir, "top.json")
	var out, errb bytes.Buffer
	if code := run([]string{"infer", "--format", "json", "-o", top, sample}, strings.NewReader(""), &out, &errb); code != exitOK {
		t.Fatalf("infer: %d %s", code, errb.Bytes())
	}
	b, err := os.ReadFile(top)
	if err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json") // every root rate it states at 1e12 a second
	if err := os.WriteFile(huge, regexp.MustCompile(`"root_rate_per_s": [0-9.e+-]+`).ReplaceAll(b, []byte(`"root_rate_per_s": 1e12`)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"replay", "--rate", "Inf", sample}, exitUsage, "--rate +Inf: want a finite rate > 0"},
		{[]string{"replay", "--rate", "NaN", sample}, exitUsage, "--rate NaN: want a finite rate"},
		{[]string{"replay", "--rate", "-1", sample}, exitUsage, "--rate -1: want a finite rate"},
		{[]string{"replay", "--rate", "0", sample}, exitUsage, "--rate 0: want a finite rate > 0"},
		{[]string{"replay", "--load", "NaN", sample}, exitUsage, "--load NaN: want a finite number > 0"},
		{[]string{"replay", "--load", "0", sample}, exitUsage, "--load 0: want a finite number > 0"},
		{[]string{"replay", "--headroom", "Inf", sample}, exitUsage, "--headroom +Inf: want a finite number > 0"},
		{[]string{"replay", "--thrash", "NaN", sample}, exitUsage, "--thrash NaN"},
		{[]string{"replay", "--cancel", "2", sample}, exitUsage, "--cancel 2: want a probability"},
		{[]string{"replay", "--max-inflight", "-3", sample}, exitUsage, "--max-inflight -3: want a count ≥ 0"},
		{[]string{"audit", "--max-inflight", "-3", sample}, exitUsage, "--max-inflight -3: want a count ≥ 0"},
		{[]string{"replay", "--open-clients", "-1", sample}, exitUsage, "--open-clients -1: want a count ≥ 0"},
		{[]string{"replay", "--duration", "-5s", sample}, exitUsage, "--duration -5s: want a duration > 0"},
		{[]string{"replay", "--client-deadline", "0s", sample}, exitUsage, "--client-deadline 0s"},
		{[]string{"replay", "--max-events", "0", sample}, exitUsage, "--max-events 0"},
		{[]string{"replay", "--clients", "-1", sample}, exitUsage, "--clients -1"},
		{[]string{"replay", "--sample-rate", "NaN", sample}, exitUsage, "--sample-rate NaN: want a probability in (0,1]"},
		{[]string{"replay", "--sample-rate", "0", sample}, exitUsage, "--sample-rate 0: want a probability in (0,1]"},
		{[]string{"calibrate", "--sample-rate", "0", sample}, exitUsage, "--sample-rate 0: want a probability in (0,1]"},
		{[]string{"replay", "--capacity", "db=NaN", sample}, exitUsage, "is not a worker count"},
		{[]string{"replay", "--instances", "api=0", sample}, exitUsage, "--instances: instances \"api=0\": \"0\" is not an instance count"},
		{[]string{"calibrate", "--instances", "api", sample}, exitUsage, "want SERVICE=COUNT"},
		{[]string{"replay", "--max-spans", "0", sample}, exitUsage, "--max-spans 0"},
		{[]string{"replay", "--max-document", "100000000000", sample}, exitUsage, "--max-document 100000000000"},
		{[]string{"audit", "--seeds", "1000000000", sample}, exitUsage, "--seeds 1000000000: want 1 to 100"},
		{[]string{"audit", "--utilization", "db=1", sample}, exitUsage, "not a busy fraction"},
		{[]string{"audit", "--tol-latency", "NaN", sample}, exitUsage, "tolerances"},
		// Runs that would exhaust the machine: refused by their estimate.
		{[]string{"replay", "--rate", "1e7", sample}, exitFailure, "raise it (--max-events)"},
		{[]string{"replay", "--load", "1e6", sample}, exitFailure, "raise it (--max-events)"},
		{[]string{"replay", "--clients", "10000000", sample}, exitFailure, "raise it (--max-events)"},
		{[]string{"replay", "--duration", "1000h", sample}, exitFailure, "raise it (--max-events)"},
		{[]string{"audit", "-q", "--rate", "1e7", sample}, exitFailure, "raise it (--max-events)"},
		{[]string{"replay", "--topology", huge}, exitFailure, "its root_rate_per_s"},
	} {
		t.Run(strings.Join(tc.args[:3], " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, want %d with %q; stderr:\n%s", code, tc.code, tc.want, errb.Bytes())
			}
		})
	}
}
