package replay

import (
	"strings"
	"testing"
)

// lowRate is a server with room to spare (20 workers of 10 ms under 10
// requests a second) whose own answers fail with probability fail, as a
// failure mix read from traces does; the edge sends up to attempts tries.
func lowRate(attempts int, fail float64) *Model {
	m := single("server", 20, Exponential{MeanS: 0.01}, 10, 0, Policy{MaxAttempts: attempts})
	m.Edges[0].Fail = &Failures{First: Mix{Fail: fail}, Retry: Mix{Fail: fail}, Propagate: 1}
	return m
}

// TestVerdictLowRate: at 10 requests a second with about half of them
// failing on their own, a second's success count is noise around 5; a
// 5 s outage leaves no backlog, so the run recovers in every seed, with or
// without retries. With seed 000's token bucket (0.1 token a success, 1
// a retry, at most 10) the failure mix itself keeps the bucket near
// empty: goodput after the outage sits at the share of single tries, at
// times under half the pre-trigger share that still spent the bucket's
// first tokens, with empty queues. That is no collapse (the old verdict
// called some of these seeds collapsed).
func TestVerdictLowRate(t *testing.T) {
	for _, tc := range []struct {
		attempts int
		fail     float64
		budget   BudgetSpec
	}{
		{1, 0.5, BudgetSpec{}},
		{2, 0.5, BudgetSpec{}},
		{3, 0.65, tokenBucket},
		{3, 0.7, tokenBucket},
	} {
		m := lowRate(tc.attempts, tc.fail)
		m.Edges[0].Policy.Budget = tc.budget
		for seed := uint64(1); seed <= 20; seed++ {
			r := mustRun(t, m, schedule("outage:svc=server,at=10s,for=5s"), RunConfig{Seed: seed, Duration: 60})
			if r.Verdict != VerdictRecovered || r.Collapsed() {
				t.Errorf("%d attempts, fail %g, budget %q, seed %d: verdict %s (%s), availability %.3f; want recovered",
					tc.attempts, tc.fail, tc.budget.Kind, seed, r.Verdict, r.VerdictNote, r.Availability)
			}
		}
	}
}

// TestVerdictIncidentRecurs: the traces' own incident (every answer
// fails) comes back after the trigger when the observed timeline is
// replayed with it. Goodput falls, but nothing queues: that is the
// traces' failure coming back, not a collapse. An incident that ends
// leaves the run recovered; one that lasts past the horizon leaves it
// not judged, with a note naming the missing backlog.
func TestVerdictIncidentRecurs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to float64 // the incident's span (s), no repetition
		want     string
	}{
		{"ends", 25, 37, VerdictRecovered},
		{"lasts", 15, 400, VerdictNotJudged},
	} {
		m := lowRate(1, 0.5)
		m.Edges[0].Fail.Incidents = []Episode{{Start: tc.from, End: tc.to, First: Mix{Fail: 1}, Retry: Mix{Fail: 1}}}
		for seed := uint64(1); seed <= 20; seed++ {
			r := mustRun(t, m, schedule("observed", "outage:svc=server,at=10s,for=5s"), RunConfig{Seed: seed, Duration: 60})
			if r.Verdict != tc.want || r.Collapsed() || (tc.want == VerdictNotJudged && !strings.Contains(r.VerdictNote, "no backlog")) {
				t.Errorf("incident %s, seed %d: verdict %s (%s) with empty queues; want %s", tc.name, seed, r.Verdict, r.VerdictNote, tc.want)
			}
		}
	}
}
