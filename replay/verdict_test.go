package replay

import (
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

// TestVerdictIncidentRecurs: the traces' own incident (every answer fails
// for 12 s) recurs after the trigger when the observed timeline is
// replayed with it. Goodput falls, but nothing queues: that is the
// traces' failure coming back, not a collapse.
func TestVerdictIncidentRecurs(t *testing.T) {
	m := lowRate(1)
	m.Bucket, m.TimelinePeriod = 1, 60
	m.Edges[0].Fail.Incidents = map[int][2]Mix{}
	for b := 25; b < 37; b++ {
		m.Edges[0].Fail.Incidents[b] = [2]Mix{{Fail: 1}, {Fail: 1}}
	}
	for seed := uint64(1); seed <= 20; seed++ {
		r := mustRun(t, m, schedule("observed", "outage:svc=server,at=10s,for=5s"), RunConfig{Seed: seed, Duration: 60})
		if r.Collapsed() {
			t.Errorf("seed %d: verdict %s (%s) with empty queues; want not collapsed", seed, r.Verdict, r.VerdictNote)
		}
	}
}
