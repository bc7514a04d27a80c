package replay

import (
	"slices"
	"strings"
	"testing"
)

// TestEpisodeReplaysItsSpan: an outage of 200 ms on the traces' timeline
// replays as 200 ms, each period of the timeline: requests every
// millisecond (half a millisecond off the episode's ends, so that no start
// falls on one) fail exactly while they start inside the episode, and only
// when the run replays the observed degradation. (With the 0.5 s buckets
// the timeline used to be kept in, it took half a second of failures.)
func TestEpisodeReplaysItsSpan(t *testing.T) {
	for _, tc := range []struct {
		name       string
		start, end float64 // the episode (s)
		observed   bool
		want       int // root server errors over 3 periods of 1 s
	}{
		{"200 ms", 0.4, 0.6, true, 600},
		{"60 ms at the period's start", 0, 0.06, true, 180},
		{"not replayed without the observed degradation", 0.4, 0.6, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := single("server", 1<<10, Constant(0.0001), 0, 0, Policy{MaxAttempts: 1})
			for i := range 1000 {
				m.Arrivals = append(m.Arrivals, Arrival{At: (float64(i) + 0.5) / 1000})
			}
			m.Period, m.TimelinePeriod = 1, 1
			m.Edges[0].Fail = &Failures{Propagate: 1, Incidents: []Episode{{Start: tc.start, End: tc.end, First: Mix{Fail: 1}, Retry: Mix{Fail: 1}}}}
			faults := schedule()
			if tc.observed {
				faults = schedule("observed")
			}
			r := mustRun(t, m, faults, RunConfig{Seed: 1, Duration: 3})
			if r.RootRequests != 3000 || r.ServerErrors != tc.want {
				t.Errorf("%d server errors of %d root requests; want %d of 3000", r.ServerErrors, r.RootRequests, tc.want)
			}
		})
	}
}

// TestEpisodeAt: an attempt belongs to the episode whose span holds its
// start, the end excluded.
func TestEpisodeAt(t *testing.T) {
	eps := []Episode{{Start: 0.1, End: 0.2}, {Start: 0.2, End: 0.25}, {Start: 0.5, End: 0.9}}
	for _, tc := range []struct {
		t    float64
		want int // index, -1 none
	}{{0, -1}, {0.1, 0}, {0.199, 0}, {0.2, 1}, {0.25, -1}, {0.3, -1}, {0.5, 2}, {0.9, -1}, {5, -1}} {
		got := -1
		if ep := episodeAt(eps, tc.t); ep != nil {
			for i := range eps {
				if ep == &eps[i] {
					got = i
				}
			}
		}
		if got != tc.want {
			t.Errorf("at %gs: episode %d, want %d", tc.t, got, tc.want)
		}
	}
}

// TestEpisodesNote: the model notes list every failure episode with what
// sets it (the penalty, the first attempts it was found among) and its
// counts, and the runs note says its calls are those outside episodes;
// breaker-concurrent's inventory was down three times.
func TestEpisodesNote(t *testing.T) {
	m, err := FromTopology(sampleTopology(t, "breaker-concurrent"), BuildOptions{Timeline: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"api → inventory GET /inventory/{sku}: failure episodes (3), where the first attempts' failure rate changed (each change point gaining more than ln(n/0.00135) = 12.2 nats of likelihood, n = 275 first attempts)",
		"204.6–457.4ms (16 of 16 first attempts failed: 16 server_error, 32 of 32 retries: 32 server_error)",
		"949.7–1012.0ms (11 of 11 first attempts failed: 11 server_error, 22 of 22 retries: 22 server_error)",
		"api → inventory GET /inventory/{sku}: after another request's failed call on the edge (calls outside its failure episodes)",
	} {
		if !slices.ContainsFunc(m.Assumed, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no note with %q in %q", want, m.Assumed)
		}
	}
}
