package audit

import (
	"fmt"
	"math"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
)

// TestBisectLazySeeds pins the search's lazy seeds on hand-built
// outcomes (seed i recovers at utilizations up to th[i]): it gives the
// answer of a bisection that runs every seed at every probe, stopping at
// the first that collapses, always; and in fewer runs where the seeds
// agree (their thresholds within the search's resolution), as they mostly
// do, and the bisection has probes that recover.
func TestBisectLazySeeds(t *testing.T) {
	for _, c := range []struct {
		name  string
		th    []float64
		low   float64
		known bool
		agree bool
	}{
		{"seeds alike", []float64{0.61, 0.61, 0.61, 0.61, 0.61}, SearchLow, false, true},
		{"seeds within the resolution", []float64{0.43, 0.45, 0.44, 0.46, 0.43}, SearchLow, false, true},
		{"the last seed lowest", []float64{0.7, 0.66, 0.8, 0.75, 0.31}, SearchLow, false, false},
		{"spread seeds", []float64{0.5, 0.2, 0.9, 0.12, 0.44}, SearchLow, false, false},
		{"recovers at the top", []float64{1, 1, 1}, SearchLow, false, true},
		{"collapses at the bottom in one seed", []float64{0.5, 0.03, 0.5}, SearchLow, false, false},
		{"today's load known to recover", []float64{0.4, 0.41, 0.4}, 0.3, true, true},
		{"today's load known, seeds apart", []float64{0.4, 0.33, 0.45}, 0.3, true, false},
		{"just above today's load", []float64{0.31, 0.9, 0.9}, 0.3, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs := 0
			pr := newProber(len(c.th), func(u float64, si int) (replay.Result, error) {
				runs++
				r := replay.Result{Verdict: replay.VerdictRecovered, Availability: 1}
				if u > c.th[si] {
					r.Verdict, r.Availability = replay.VerdictCollapsed, 0.2
				}
				return r, nil
			})
			if c.known {
				pr.known(c.low)
			}
			got, err := bisect(pr, c.low)
			if err != nil {
				t.Fatal(err)
			}
			want, wantRuns := eagerBisect(c.th, c.low, c.known)
			if show(got) != show(want) {
				t.Errorf("critical utilization %s, want %s (every seed at every probe)", show(got), show(want))
			}
			recovered := 0
			for _, p := range pr.list() {
				if !p.Collapsed && p.Utilization != c.low {
					recovered++
				}
			}
			if c.agree && (runs > wantRuns || recovered > 1 && runs >= wantRuns) {
				t.Errorf("%d runs, no fewer than every seed at every probe (%d) though %d probes recovered", runs, wantRuns, recovered)
			}
			t.Logf("%s after %d runs (every seed at every probe: %d)", show(got), runs, wantRuns)
		})
	}
}

// eagerBisect is the search as it was: the top in every seed, the bottom
// in every seed unless known, then a bisection running at each probe the
// seeds in order until one collapses.
func eagerBisect(th []float64, low float64, known bool) (*float64, int) {
	runs := 0
	recovers := func(u float64) bool {
		for _, x := range th {
			runs++
			if u > x {
				return false
			}
		}
		return true
	}
	if recovers(SearchHigh) {
		return nil, runs
	}
	if !known && !recovers(low) {
		zero := 0.0
		return &zero, runs
	}
	lo, hi := low, SearchHigh
	for hi-lo > 2*SearchTolerance {
		mid := (lo + hi) / 2
		if recovers(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	u := math.Round(100*(lo+hi)/2) / 100
	return &u, runs
}

func show(u *float64) string {
	if u == nil {
		return "null"
	}
	return fmt.Sprintf("%.2f", *u)
}
