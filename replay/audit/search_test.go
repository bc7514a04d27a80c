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
			got, floor, err := bisect(pr, c.low)
			if err != nil {
				t.Fatal(err)
			}
			want, wantRuns := eagerBisect(c.th, c.low, c.known)
			if show(got) != show(want) {
				t.Errorf("critical utilization %s, want %s (every seed at every probe)", show(got), show(want))
			}
			searched := runs
			by, err := pr.bySeed(got, c.low, floor)
			if err != nil {
				t.Fatal(err)
			}
			// Each seed's own is its own bisection; the lowest is the answer.
			lowest := ""
			for si, u := range by {
				w, _ := eagerBisect(c.th[si:si+1], c.low, c.known)
				if show(u) != show(w) {
					t.Errorf("seed %d (threshold %g): its own %s, want %s", si, c.th[si], show(u), show(w))
				}
				if lowest == "" || u != nil && (lowest == "null" || show(u) < lowest) {
					lowest = show(u)
				}
			}
			if lowest != show(got) {
				t.Errorf("the lowest of the seeds' own %s, want the answer %s", lowest, show(got))
			}
			t.Logf("each seed's own %v after %d runs more", showAll(by), runs-searched)
			runs = searched
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

// TestBySeedFirstCollapse: a seed near its threshold can collapse at one
// load and recover at a higher one; its own critical utilization counts
// the first collapse, as the search does for every seed together, so the
// lowest of the seeds' own is the search's answer.
func TestBySeedFirstCollapse(t *testing.T) {
	// Seed 0 collapses in a band just above 0.19 and recovers above it up
	// to 0.30; seed 1 recovers up to 0.22, seed 2 up to 0.24.
	pr := newProber(3, func(u float64, si int) (replay.Result, error) {
		r := replay.Result{Verdict: replay.VerdictRecovered, Availability: 1}
		if si == 0 && (u > 0.19 && u < 0.21 || u > 0.30) || si == 1 && u > 0.22 || si == 2 && u > 0.24 {
			r.Verdict = replay.VerdictCollapsed
		}
		return r, nil
	})
	low := 0.0644102460575
	pr.known(low)
	got, floor, err := bisect(pr, low)
	if err != nil {
		t.Fatal(err)
	}
	by, err := pr.bySeed(got, low, floor)
	if err != nil {
		t.Fatal(err)
	}
	if show(got) != "0.19" || show(by[0]) != "0.19" || show(by[1]) != "0.22" || show(by[2]) != "0.24" {
		t.Errorf("answer %s, each seed's own %v: want 0.19 and [0.19 0.22 0.24]", show(got), showAll(by))
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

func showAll(us []*float64) []string {
	var out []string
	for _, u := range us {
		out = append(out, show(u))
	}
	return out
}

func show(u *float64) string {
	if u == nil {
		return "null"
	}
	return fmt.Sprintf("%.2f", *u)
}
