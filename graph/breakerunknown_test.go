package graph

import (
	"fmt"
	"strings"
	"testing"
)

// TestBreakerUnknown: requests failed fast without calling the callee
// after failed calls, but fewer than a breaker is claimed from, are an
// unknown breaker with their counts, neither a breaker nor its absence
// (no no-circuit-breaker finding however long the failures in a row);
// three or more are a breaker as before; no fast failure, a slow
// failure of the handler's own, or quick failures while the callee was
// healthy too, say nothing of one.
func TestBreakerUnknown(t *testing.T) {
	type want struct {
		null                      bool // no breaker said at all
		detected, unknown         bool
		fastFailed, periods, runs int
		findings                  []string
	}
	cases := []struct {
		name, script string
		want         want
	}{
		{"no fast failure after failed calls: nothing said", "ooooo" + "xxx" + "oooooo",
			want{null: true}},
		{"one fast failure after failed calls: unknown, with its count", "ooooo" + "xxx" + "f" + "o" + "oooo",
			want{unknown: true, fastFailed: 1, periods: 1, runs: 3}},
		{"two fast failures in one run: unknown", "ooooo" + "xxx" + "ff" + "o" + "oooo",
			want{unknown: true, fastFailed: 2, periods: 1, runs: 3}},
		{"two fast failures in two runs: unknown", "ooooo" + "xx" + "f" + "o" + "ooo" + "xxx" + "f" + "o" + "oo",
			want{unknown: true, fastFailed: 2, periods: 2, runs: 3}},
		{"three fast failures: a breaker, as before", "ooooo" + "xxx" + "fff" + "o" + "oooo",
			want{detected: true, fastFailed: 3, periods: 1, runs: 3}},
		{"one fast failure after twelve failed calls in a row: unknown, no absent-breaker finding", "ooo" + strings.Repeat("x", 12) + "f" + "oo",
			want{unknown: true, fastFailed: 1, periods: 1, runs: 12}},
		{"twelve failed calls in a row, none failed fast: no breaker, a finding", "ooo" + strings.Repeat("x", 12) + "oo",
			want{runs: 12, findings: []string{FindingNoBreaker}}},
		{"slow failures without the call after failed calls: the handler's own, nothing said", "ooooo" + "xxx" + "sss" + "o" + "oooo",
			want{null: true}},
		{"a quick failure while healthy as often as after failures: the handler's own, nothing said", "oo" + "f" + "ooo" + "xxx" + "f" + "oooo",
			want{null: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			breakerTraffic(b, tc.script, nil)
			tp := b.infer()
			br := edge(t, tp, "gateway", "payments").Breaker
			if tc.want.null {
				if br != nil {
					t.Fatalf("breaker %+v, want null", *br)
				}
				wantFindings(t, tp)
				return
			}
			if br == nil {
				t.Fatal("breaker null")
			}
			wantEq(t, "detected", br.Detected, tc.want.detected)
			wantEq(t, "unknown", br.Unknown, tc.want.unknown)
			wantEq(t, "fast-failed calls", br.FastFailedCalls, tc.want.fastFailed)
			wantEq(t, "open periods", br.OpenPeriods, tc.want.periods)
			wantEq(t, "longest failure run", br.LongestFailureRun, tc.want.runs)
			if tc.want.unknown {
				wantEq(t, "trip rule", br.TripRule, "")
				wantEq(t, "trip after", br.TripAfter, 0)
				wantEq(t, "open ms", br.OpenMS, 0.0)
				if !strings.Contains(br.Evidence, "cannot tell") || !strings.Contains(br.Evidence, fmt.Sprintf(": %d (runs: %d)", tc.want.fastFailed, tc.want.periods)) {
					t.Errorf("evidence %q, want the counts and why it is unknown", br.Evidence)
				}
			} else if br.Evidence != "" {
				t.Errorf("evidence %q on a breaker not unknown", br.Evidence)
			}
			wantFindings(t, tp, tc.want.findings...)
		})
	}
}

// TestRetryAroundBreakerUnknown: a retry loop around a breaker that
// refused one call whole (after the loop's waits) and others in part is
// too little to claim the breaker: unknown, with the loop's evidence.
func TestRetryAroundBreakerUnknown(t *testing.T) {
	healthy := repeat("o", 6)
	retried := joinCalls(repeat("xo", 5), repeat("xxo", 3), repeat("xxx", 2))
	cases := []struct {
		name                   string
		outage                 []string
		wantNull               bool
		waited, late, earlyEnd int
	}{
		{"one call refused whole, two in part: unknown with the loop's counts", []string{"xxx", "rrr", "rro", "xrr", "o"}, false, 1, 1, 1},
		{"no call refused: nothing said", []string{"xxx", "xxo", "o"}, true, 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			retryBreakerTraffic(b, joinCalls(healthy, retried, tc.outage, healthy), 0, nil)
			tp := b.infer()
			br := edge(t, tp, "gateway", "payments").Breaker
			if tc.wantNull {
				if br != nil {
					t.Errorf("breaker %+v, want null", *br)
				}
				return
			}
			if br == nil || br.Detected || !br.Unknown || br.RetriedRefusals == nil {
				t.Fatalf("breaker %+v, want unknown with its retried refusals", br)
			}
			rr := br.RetriedRefusals
			wantEq(t, "fast-failed calls", br.FastFailedCalls, tc.waited)
			wantEq(t, "waited calls", rr.WaitedCalls, tc.waited)
			wantEq(t, "late-start calls", rr.LateStartCalls, tc.late)
			wantEq(t, "early-end calls", rr.EarlyEndCalls, tc.earlyEnd)
			wantEq(t, "refused tries", rr.RefusedTries, TripUnknown)
			if !strings.Contains(rr.Trip, "too few") {
				t.Errorf("trip %q, want why no breaker is claimed", rr.Trip)
			}
			// The loop's constant waits are a finding of their own.
			wantFindings(t, tp, FindingNoJitter)
		})
	}
}
