package replay

import (
	"strings"
	"testing"
)

// lowRate is a server with room to spare (20 workers of 10 ms under 10
// requests a second) whose own answers fail half the time, as a failure
// mix read from traces does; the edge retries up to attempts times.
func lowRate(attempts int) *Model {
	m := single("server", 20, Exponential{MeanS: 0.01}, 10, 0, Policy{MaxAttempts: attempts})
	m.Edges[0].Fail = &Failures{First: Mix{Fail: 0.5}, Retry: Mix{Fail: 0.5}, Propagate: 1}
	return m
}

// TestVerdictLowRate: at 10 requests a second with half of them failing
// on their own, a second-by-second success count is Poisson noise around
// 5; a short outage leaves no backlog, so the run recovers in every seed
// and is never collapsed, with or without retries.
func TestVerdictLowRate(t *testing.T) {
	for _, attempts := range []int{1, 2} {
		for seed := uint64(1); seed <= 20; seed++ {
			r := mustRun(t, lowRate(attempts), schedule("outage:svc=server,at=10s,for=5s"), RunConfig{Seed: seed, Duration: 60})
			if r.Verdict != VerdictRecovered || r.Collapsed() {
				t.Errorf("%d attempts, seed %d: verdict %s (%s), availability %.3f; want recovered", attempts, seed, r.Verdict, r.VerdictNote, r.Availability)
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
		from, to int // the incident's buckets (1 s each), no repetition
		want     string
	}{
		{"ends", 25, 37, VerdictRecovered},
		{"lasts", 15, 400, VerdictNotJudged},
	} {
		m := lowRate(1)
		m.Bucket = 1
		m.Edges[0].Fail.Incidents = map[int][2]Mix{}
		for b := tc.from; b < tc.to; b++ {
			m.Edges[0].Fail.Incidents[b] = [2]Mix{{Fail: 1}, {Fail: 1}}
		}
		for seed := uint64(1); seed <= 20; seed++ {
			r := mustRun(t, m, schedule("observed", "outage:svc=server,at=10s,for=5s"), RunConfig{Seed: seed, Duration: 60})
			if r.Verdict != tc.want || r.Collapsed() || (tc.want == VerdictNotJudged && !strings.Contains(r.VerdictNote, "no backlog")) {
				t.Errorf("incident %s, seed %d: verdict %s (%s) with empty queues; want %s", tc.name, seed, r.Verdict, r.VerdictNote, tc.want)
			}
		}
	}
}
