package audit

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
)

func verdict(policy, deg string, crit *float64, avail, extra Stat, collapses bool) Verdict {
	return Verdict{Policy: policy, Degradation: deg, Seeds: 3, CriticalSearched: true, CriticalUtilization: crit,
		Availability: avail, ExtraWork: extra, Collapses: collapses}
}

func ptr(x float64) *float64 { return &x }

// seeded is v with each seed's own critical utilization (1: recovered at
// SearchHigh), the lowest of which is v's.
func seeded(v Verdict, by ...float64) Verdict {
	v.Seeds, v.CriticalBySeed, v.CriticalUtilization = len(by), nil, nil
	for _, u := range by {
		if u >= 1 {
			v.CriticalBySeed = append(v.CriticalBySeed, nil)
			continue
		}
		v.CriticalBySeed = append(v.CriticalBySeed, ptr(u))
		if v.CriticalUtilization == nil || u < *v.CriticalUtilization {
			v.CriticalUtilization = ptr(u)
		}
	}
	return v
}

// TestRank pins the ranking on hand-built verdicts: critical utilization
// first (ties within the search's resolution), then availability (ties
// within the seed spread), then extra work (likewise), then the order of
// the candidates; with a given utilization, never collapsing comes first.
func TestRank(t *testing.T) {
	good, fine := Stat{0.99, 0.98, 1}, Stat{0.985, 0.97, 0.99}
	poor := Stat{0.90, 0.88, 0.92}
	little, lot := Stat{0.01, 0, 0.02}, Stat{0.5, 0.4, 0.6}
	for _, c := range []struct {
		name     string
		given    bool
		verdicts []Verdict
		want     []string
		key      string
		// The tie-breaks' figures: edges changed, attempts allowed.
		changed, attempts map[string]int
	}{
		{"largest critical utilization wins over availability", false, []Verdict{
			verdict("a", "d1", ptr(0.3), good, little, false),
			verdict("b", "d1", ptr(0.6), poor, lot, false),
		}, []string{"b", "a"}, "critical utilization (the mean of each seed's own under its worst degradation, ±95% confidence and the search's ±0.02: b 0.60 ±0.02, seeds 0.60; the best of the rest a 0.30 ±0.02, seeds 0.30, below beyond both intervals)", nil, nil},
		{"null (recovers at 0.95) beats any value", false, []Verdict{
			verdict("a", "d1", ptr(0.9), good, little, false),
			verdict("b", "d1", nil, poor, little, false),
		}, []string{"b", "a"}, "critical utilization (the mean of each seed's own under its worst degradation, ±95% confidence and the search's ±0.02: b ≥0.95 ±0.02, seeds ≥0.95; the best of the rest a 0.90 ±0.02, seeds 0.90, below beyond both intervals)", nil, nil},
		{"the worst degradation counts", false, []Verdict{
			verdict("a", "d1", nil, good, little, false), verdict("a", "d2", ptr(0.2), good, little, false),
			verdict("b", "d1", ptr(0.5), good, little, false), verdict("b", "d2", ptr(0.5), good, little, false),
		}, []string{"b", "a"}, "critical utilization (the mean of each seed's own under its worst degradation, ±95% confidence and the search's ±0.02: b 0.50 ±0.02, seeds 0.50; the best of the rest a 0.20 ±0.02, seeds 0.20, below beyond both intervals)", nil, nil},
		{"confidence intervals of the seeds' mean that overlap tie; availability decides", false, []Verdict{
			seeded(verdict("a", "d1", nil, poor, little, false), 0.74, 0.80, 0.77),
			seeded(verdict("b", "d1", nil, good, little, false), 0.62, 0.71, 0.68),
		}, []string{"b", "a"}, "availability during the faults", nil, nil},
		{"ties chain: an interval linked to the best through another is in the top group", false, []Verdict{
			// a 0.91 ±0.045, b 0.82 ±0.07, c 0.73 ±0.045 (apart from a), d 0.51
			// ±0.045 (the typical spread, 0.01, is a's, c's and d's own).
			seeded(verdict("a", "d1", nil, poor, little, false), 0.90, 0.92, 0.91),
			seeded(verdict("b", "d1", nil, poor, little, false), 0.80, 0.84, 0.82),
			seeded(verdict("c", "d1", nil, good, little, false), 0.72, 0.74, 0.73),
			seeded(verdict("d", "d1", nil, good, little, false), 0.50, 0.52, 0.51),
		}, []string{"c", "a", "b", "d"}, "availability during the faults", nil, nil},
		{"one seed far above the others does not make a tie", false, []Verdict{
			seeded(verdict("a", "d1", nil, poor, little, false), 1, 1, 1, 1, 1),
			seeded(verdict("b", "d1", nil, good, little, false), 0.28, 0.30, 0.30, 0.30, 1),
		}, []string{"a", "b"}, "critical utilization (the mean of each seed's own under its worst degradation, ±95% confidence and the search's ±0.02: a ≥0.95 ±0.02, seeds ≥0.95; the best of the rest b 0.44 ±0.41, seeds 0.28–≥0.95, below beyond both intervals)", nil, nil},
		{"each seed's worst degradation: per seed, the lowest over the degradations", false, []Verdict{
			seeded(verdict("a", "d1", nil, good, little, false), 0.60, 1, 0.61), seeded(verdict("a", "d2", nil, good, little, false), 1, 0.60, 0.62),
			seeded(verdict("b", "d1", nil, poor, little, false), 0.70, 0.72, 0.71), seeded(verdict("b", "d2", nil, poor, little, false), 0.70, 0.72, 0.71),
		}, []string{"b", "a"}, "critical utilization (the mean of each seed's own under its worst degradation, ±95% confidence and the search's ±0.02: b 0.71 ±0.04, seeds 0.70–0.72; the best of the rest a 0.60 ±0.04, seeds 0.60–0.61, below beyond both intervals)", nil, nil},
		{"critical utilizations within 0.04 tie; availability decides", false, []Verdict{
			verdict("a", "d1", ptr(0.62), poor, little, false),
			verdict("b", "d1", ptr(0.60), good, little, false),
		}, []string{"b", "a"}, "availability during the faults", nil, nil},
		{"availability within the seed spread ties; extra work decides", false, []Verdict{
			verdict("a", "d1", nil, good, lot, false),
			verdict("b", "d1", nil, fine, little, false),
		}, []string{"b", "a"}, "extra work", nil, nil},
		{"everything within the noise, alike in change and attempts: the order of the candidates, said", false, []Verdict{
			verdict("a", "d1", nil, fine, little, false),
			verdict("b", "d1", nil, good, little, false),
		}, []string{"a", "b"}, "the order of the candidates: a, b tied on critical utilization, availability during the faults, extra work (within the seed spread and the search's resolution), and change as many edges and allow as many attempts", nil, nil},
		{"tied on every key: the least change from today's policies, said", false, []Verdict{
			verdict("a", "d1", ptr(0.5), fine, little, false),
			verdict("b", "d1", ptr(0.52), good, little, false),
			verdict("c", "d1", ptr(0.2), good, little, false),
		}, []string{"b", "a", "c"}, "the least change from today's policies: a, b tied on critical utilization, availability during the faults, extra work (within the seed spread and the search's resolution); a 4, b 1 edges changed",
			map[string]int{"a": 4, "b": 1, "c": 0}, nil},
		{"tied on every key and change: the fewest attempts allowed, said", false, []Verdict{
			verdict("a", "d1", nil, fine, little, false),
			verdict("b", "d1", nil, good, little, false),
		}, []string{"b", "a"}, "the fewest attempts allowed, the least extra work at worst: a, b tied on critical utilization, availability during the faults, extra work (within the seed spread and the search's resolution), and change as many edges; a 9, b 6 attempts over every edge at most",
			map[string]int{"a": 2, "b": 2}, map[string]int{"a": 9, "b": 6}},
		{"a clear key is not a tie", false, []Verdict{
			verdict("a", "d1", nil, poor, little, false),
			verdict("b", "d1", nil, good, little, false),
		}, []string{"b", "a"}, "availability during the faults", map[string]int{"a": 0, "b": 5}, nil},
		{"one candidate", false, []Verdict{verdict("a", "d1", nil, poor, little, false)}, []string{"a"}, "being the only candidate left", nil, nil},
		{"given a utilization, never collapsing comes first", true, []Verdict{
			verdict("a", "d1", ptr(0.3), good, little, true),
			verdict("b", "d1", ptr(0.5), poor, lot, false),
		}, []string{"b", "a"}, "never collapsing at the given utilization", nil, nil},
		{"given a utilization, critical utilization no longer ranks", true, []Verdict{
			verdict("a", "d1", ptr(0.5), poor, little, false),
			verdict("b", "d1", ptr(0.9), good, little, false),
			verdict("c", "d1", nil, poor, little, false),
		}, []string{"b", "a", "c"}, "availability during the faults", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var policies []string
			for _, v := range c.verdicts {
				if !slices.Contains(policies, v.Policy) {
					policies = append(policies, v.Policy)
				}
			}
			st := standings(policies, c.verdicts)
			for i := range st {
				st[i].changed, st[i].attempts = c.changed[st[i].policy], c.attempts[st[i].policy]
			}
			order, key, _ := rank(st, c.given)
			var got []string
			for _, s := range order {
				got = append(got, s.policy)
			}
			if !slices.Equal(got, c.want) || key != c.key {
				t.Errorf("rank = %v decided by %q, want %v by %q", got, key, c.want, c.key)
			}
		})
	}
}

// TestRankSameForSeedSets: three candidates over seven seeds, audited as
// first seeds 1, 2 and 3 do (five seeds each). everywhere's critical
// utilization is a seed or two below the others' in some seeds: its
// lowest, the figure of the verdict, is 0.03 below the best with seeds
// 1–5 and 0.06 below with seeds 2–6 and 3–7. A window of 0.04 under the
// best lowest (the rule before) took it in with the first set, where its
// availability won, and left it out with the others, where the least
// change chose observed. The 95% intervals of the mean of its seeds' own
// critical utilizations overlap the others' in every set: the same tie,
// the same winner, on availability.
func TestRankSameForSeedSets(t *testing.T) {
	type cand struct {
		policy          string
		changed         int
		critical, avail []float64 // per seed, seeds 1–7
	}
	cands := []cand{
		{"observed", 0, []float64{0.77, 0.77, 0.74, 0.77, 0.77, 0.74, 0.77}, []float64{0.940, 0.935, 0.945, 0.940, 0.950, 0.930, 0.940}},
		{"everywhere", 3, []float64{0.74, 0.74, 0.77, 0.74, 0.71, 0.68, 0.71}, []float64{0.995, 0.994, 0.995, 0.996, 0.995, 0.994, 0.995}},
		{"budget-sized", 1, []float64{0.80, 0.74, 0.80, 0.77, 0.80, 0.80, 0.77}, []float64{0.938, 0.940, 0.932, 0.945, 0.940, 0.936, 0.940}},
	}
	for first := range 3 {
		var vs []Verdict
		var policies []string
		for _, c := range cands {
			seeds := c.critical[first : first+5]
			vs = append(vs, seeded(verdict(c.policy, "d1", nil, statOf(c.avail[first:first+5]), Stat{0.01, 0, 0.02}, false), seeds...))
			policies = append(policies, c.policy)
		}
		st := standings(policies, vs)
		for i := range st {
			st[i].changed = cands[i].changed
		}
		order, key, _ := rank(st, false)
		if order[0].policy != "everywhere" || key != "availability during the faults" {
			t.Errorf("first seed %d: %s decided by %q, want everywhere by availability during the faults (within the seeds' spread on critical utilization)", first+1, order[0].policy, key)
		}
	}
}

// TestYieldOnlyAboveNoise: yield is reported only where extra work
// exceeds its seed spread, and never for none.
func TestYieldOnlyAboveNoise(t *testing.T) {
	mx := &matrix{seeds: []uint64{1, 2}}
	// Hand-built per-seed runs of none, a (clear extra work) and b (noise).
	type run struct{ avail, wa float64 }
	runs := [][]run{{{0.90, 1}, {0.99, 1.5}, {0.99, 1.1}}, {{0.92, 1}, {0.99, 1.6}, {0.98, 0.9}}}
	for s := range runs {
		row := make([]replay.Result, 3)
		for v, r := range runs[s] {
			row[v].Availability, row[v].WorkAmplification, row[v].Policy = r.avail, r.wa, []string{"none", "a", "b"}[v]
		}
		mx.runs = append(mx.runs, [][]replay.Result{row})
	}
	vs := []variant{{policy: "none"}, {policy: "a"}, {policy: "b"}}
	got := mx.verdicts(vs, 0, []replay.Degradation{{Name: "d"}}, []string{"db"})
	if got[0].Yield != nil || got[2].Yield != nil {
		t.Errorf("yield of none %v, of b (extra work within its spread) %v: want none", got[0].Yield, got[2].Yield)
	}
	if y := got[1].Yield; y == nil || math.Abs(*y-0.08/0.55) > 1e-9 {
		t.Errorf("yield of a = %v, want (0.99-0.91)/0.55", y)
	}
}

// TestOrdinaryDayGate pins the gate before the ranking on hand-built
// verdicts: a candidate with more headroom (a higher critical utilization)
// but availability on an ordinary day below today's policies' beyond the
// seed spread does not win; within the spread it can, unless going back
// from it to today's would cut its unavailability by more than the least
// difference worth a change (its mean unavailability more than a third
// above today's, where today's fail some requests); the baseline is
// observed+safe when observed was ruled out by a safety rule.
func TestOrdinaryDayGate(t *testing.T) {
	today := Stat{0.91, 0.89, 0.93}
	far, near, above := Stat{0.56, 0.52, 0.59}, Stat{0.90, 0.86, 0.92}, Stat{0.97, 0.96, 0.98}
	// Within today's spread, its unavailability 0.14 against 0.09: going
	// back cuts it by 36%.
	nearWorse := Stat{0.86, 0.83, 0.895}
	faults := Stat{0.90, 0.88, 0.92}
	little := Stat{0.01, 0, 0.02}
	day := func(policy string, avail Stat) Verdict {
		return Verdict{Policy: policy, Degradation: "observed", Seeds: 3, Availability: avail, ExtraWork: little}
	}
	for _, c := range []struct {
		name     string
		cands    []string
		verdicts []Verdict
		want     string // the winner
		ruled    []string
	}{
		{"more headroom, far below on an ordinary day: ruled out", []string{"observed", "budget"}, []Verdict{
			verdict("observed", "outage", ptr(0.38), faults, little, false), day("observed", today),
			verdict("budget", "outage", nil, faults, little, false), day("budget", far),
		}, "observed", []string{"budget"}},
		{"more headroom, within the spread on an ordinary day: wins", []string{"observed", "budget"}, []Verdict{
			verdict("observed", "outage", ptr(0.38), faults, little, false), day("observed", today),
			verdict("budget", "outage", nil, faults, little, false), day("budget", near),
		}, "budget", nil},
		{"more headroom, within the spread but worse by the mean beyond the least difference worth a change: ruled out", []string{"observed", "budget"}, []Verdict{
			verdict("observed", "outage", ptr(0.38), faults, little, false), day("observed", today),
			verdict("budget", "outage", nil, faults, little, false), day("budget", nearWorse),
		}, "observed", []string{"budget"}},
		{"today's failing nothing: a loss within the spread is not weighed by the margin", []string{"observed", "budget"}, []Verdict{
			verdict("observed", "outage", ptr(0.38), faults, little, false), day("observed", Stat{1, 1, 1}),
			verdict("budget", "outage", nil, faults, little, false), day("budget", Stat{0.999, 0.995, 1}),
		}, "budget", nil},
		{"above observed on an ordinary day: kept", []string{"observed", "budget"}, []Verdict{
			verdict("observed", "outage", ptr(0.38), faults, little, false), day("observed", today),
			verdict("budget", "outage", nil, faults, little, false), day("budget", above),
		}, "budget", nil},
		{"observed unsafe: observed+safe is the baseline", []string{"observed+safe", "hedge-p95", "budget"}, []Verdict{
			verdict("observed+safe", "outage", ptr(0.38), faults, little, false), day("observed+safe", Stat{0.83, 0.82, 0.85}),
			verdict("hedge-p95", "outage", ptr(0.71), faults, little, false), day("hedge-p95", Stat{0.82, 0.80, 0.84}),
			verdict("budget", "outage", nil, faults, little, false), day("budget", far),
		}, "hedge-p95", []string{"budget"}},
		{"no ordinary day among the verdicts: nothing is ruled out", []string{"observed", "budget"}, []Verdict{
			verdict("observed", "outage", ptr(0.38), faults, little, false),
			verdict("budget", "outage", nil, faults, little, false),
		}, "budget", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			kept, ruled := ordinaryDayGate(c.cands, c.verdicts, "observed")
			var got []string
			for _, r := range ruled {
				got = append(got, r.Policy)
				if !strings.Contains(r.Why, "ordinary day") || !strings.Contains(r.Why, "beyond the seed spread") && !strings.Contains(r.Why, "the least difference worth a change") {
					t.Errorf("ruled out %s with %q: want the reason stated", r.Policy, r.Why)
				}
			}
			if !slices.Equal(got, c.ruled) {
				t.Errorf("ruled out %v, want %v", got, c.ruled)
			}
			order, _, _ := rank(standings(kept, c.verdicts), false)
			if len(order) == 0 || order[0].policy != c.want {
				t.Errorf("winner %v, want %s", order, c.want)
			}
		})
	}
}

// bySeeds is a verdict with each seed's own critical utilization (1:
// recovered at SearchHigh), availability and extra work, its statistics
// those of the seeds.
func bySeeds(policy, deg string, crit, avail, extra []float64) Verdict {
	v := seeded(verdict(policy, deg, nil, statOf(avail), statOf(extra), false), crit...)
	v.AvailabilityBySeed = avail
	return v
}

// TestRankHeldAcrossSeedSets: the critical utilizations of additive-jitter
// under its worst degradation (slow-shard of db) as the audits with first
// seeds 1, 11 and 21 found them, five seeds each; availability and extra
// work hand-built around theirs (everywhere 0.995, today's 0.94). With
// first seed 21 everywhere's five seeds all read 0.71: alone, its interval
// was the search's ±0.02, below observed's, and observed won on critical
// utilization where the other two sets chose everywhere on availability.
// The typical spread of the audit's seeds (here a candidate's and another
// degradation's) is the floor of its interval now: the three sets agree.
// A real difference still decides, and holds without any one seed: with
// everywhere's critical utilization near 0.50 observed wins on it in
// every set.
func TestRankHeldAcrossSeedSets(t *testing.T) {
	sets := []struct {
		first               int
		observed, everywhre []float64
	}{
		{1, []float64{0.77, 0.77, 0.74, 0.74, 0.77}, []float64{0.74, 0.74, 0.71, 0.74, 0.68}},
		{11, []float64{0.77, 0.71, 0.80, 0.74, 0.74}, []float64{0.74, 0.68, 0.74, 0.74, 0.71}},
		{21, []float64{0.77, 0.80, 0.80, 0.77, 0.77}, []float64{0.71, 0.71, 0.71, 0.71, 0.71}},
	}
	availObs, availEvery := []float64{0.937, 0.949, 0.940, 0.932, 0.944}, []float64{0.995, 0.995, 0.994, 0.995, 0.996}
	extra := []float64{0.20, 0.22, 0.21, 0.19, 0.21}
	lower := func(xs []float64, by float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = x - by
		}
		return out
	}
	for _, c := range []struct {
		name    string
		shift   float64 // taken off everywhere's critical utilizations
		want    string
		keyHead string
	}{
		{"a step of the search apart: tied, availability decides", 0, "everywhere", "availability during the faults"},
		{"0.2 apart: critical utilization decides", 0.2, "observed", "critical utilization (the mean of each seed's own"},
	} {
		for _, set := range sets {
			t.Run(fmt.Sprintf("%s, first seed %d", c.name, set.first), func(t *testing.T) {
				vs := []Verdict{
					bySeeds("observed", "slow-shard", set.observed, availObs, extra),
					bySeeds("observed", "outage", []float64{1, 1, 1, 1, 1}, availObs, extra),
					bySeeds("everywhere", "slow-shard", lower(set.everywhre, c.shift), availEvery, extra),
					bySeeds("everywhere", "outage", []float64{0.90, 0.88, 0.90, 0.92, 0.90}, availEvery, extra),
				}
				st := standings([]string{"observed", "everywhere"}, vs)
				st[1].changed = 3
				order, key, _ := rankHeld(st, vs, false, "observed")
				if order[0].policy != c.want || !strings.HasPrefix(key, c.keyHead) {
					t.Errorf("%s decided by %q, want %s by %s…", order[0].policy, key, c.want, c.keyHead)
				}
			})
		}
	}
}

// withCollapse is v judged at a given utilization u with each seed's own
// critical utilization crit.
func withCollapse(v Verdict, u float64, crit ...float64) Verdict {
	v = seeded(v, crit...)
	v.Utilization, v.UtilizationGiven = u, true
	v.Collapses = v.CriticalUtilization != nil && u > *v.CriticalUtilization
	return v
}

// TestRankHeld pins what happens when the choice rests on one seed: the
// ranking is redone without each seed in turn; where a seed set one seed
// smaller chooses today's policies, they are kept, and where none does,
// the choice stands; either way the reason says it is within the seed
// noise and what each seed set chose. A choice every such set makes is
// left as it is.
func TestRankHeld(t *testing.T) {
	one := []float64{1, 1, 1, 1, 1}
	little := []float64{0.01, 0.01, 0.01, 0.01, 0.01}
	for _, c := range []struct {
		name     string
		given    bool
		verdicts []Verdict
		base     string
		want     []string
		key      string
	}{
		{"every seed set one seed smaller agrees: left as it is", false, []Verdict{
			bySeeds("observed", "d1", one, []float64{0.90, 0.91, 0.92, 0.91, 0.90}, little),
			bySeeds("budget", "d1", one, []float64{0.97, 0.98, 0.97, 0.98, 0.97}, little),
		}, "observed", []string{"budget", "observed"}, "availability during the faults"},
		// budget's critical utilizations are 0.08 above observed's seed by
		// seed, 0.14 with the fifth: paired, surely above the least gain
		// worth a change (0.05) with five seeds, not without any of the
		// first four (the four left spread wider), and then the least
		// change keeps observed.
		{"a seed set one seed smaller keeps today's policies: kept", false, []Verdict{
			bySeeds("observed", "d1", []float64{0.595, 0.625, 0.61, 0.595, 0.625}, []float64{0.930, 0.935, 0.930, 0.940, 0.935}, little),
			bySeeds("budget", "d1", []float64{0.675, 0.705, 0.69, 0.675, 0.765}, []float64{0.930, 0.935, 0.930, 0.940, 0.935}, little),
		}, "observed", []string{"observed", "budget"}, "keeping today's policies, the choice being within the seed noise: with all 5 seeds budget (by critical utilization), " +
			"without seed --seed, --seed+1, --seed+2 or --seed+3 observed (by the least change from today's policies); a change is advised only where every seed set one seed smaller makes it, and more seeds (--seeds above 5) may decide it"},
		{"the same, today's policies being observed+keys", false, []Verdict{
			bySeeds("observed+keys", "d1", []float64{0.595, 0.625, 0.61, 0.595, 0.625}, []float64{0.930, 0.935, 0.930, 0.940, 0.935}, little),
			bySeeds("budget", "d1", []float64{0.675, 0.705, 0.69, 0.675, 0.765}, []float64{0.930, 0.935, 0.930, 0.940, 0.935}, little),
		}, "observed+keys", []string{"observed+keys", "budget"}, "keeping today's policies, the choice being within the seed noise: with all 5 seeds budget (by critical utilization), " +
			"without seed --seed, --seed+1, --seed+2 or --seed+3 observed+keys (by the least change from today's policies); a change is advised only where every seed set one seed smaller makes it, and more seeds (--seeds above 5) may decide it"},
		{"a seed set one seed smaller chooses another change: the choice stands, said", false, []Verdict{
			bySeeds("observed", "d1", []float64{0.30, 0.32, 0.31, 0.30, 0.32}, []float64{0.930, 0.935, 0.930, 0.940, 0.935}, little),
			bySeeds("budget", "d1", []float64{0.60, 0.62, 0.61, 0.60, 0.62}, []float64{0.930, 0.935, 0.930, 0.940, 0.935}, little),
			bySeeds("everywhere", "d1", []float64{0.67, 0.69, 0.68, 0.67, 0.69}, []float64{0.930, 0.935, 0.930, 0.940, 0.935}, little),
		}, "observed", []string{"everywhere", "budget", "observed"}, "critical utilization (the mean of each seed's own under its worst degradation, ±95% confidence and the search's ±0.02: " +
			"everywhere 0.68 ±0.03, seeds 0.67–0.69; the best of the rest budget 0.61 ±0.03, seeds 0.60–0.62, below beyond both intervals); the choice is within the seed noise: " +
			"with all 5 seeds everywhere (by critical utilization), without any one seed budget (by the least change from today's policies); more seeds (--seeds above 5) may decide it"},
		{"with a given utilization today's policies collapsing at it are not kept", true, []Verdict{
			withCollapse(bySeeds("observed", "d1", one, []float64{0.930, 0.935, 0.930, 0.940, 0.935}, little), 0.5, 0.45, 0.46, 0.40, 0.55, 0.60),
			withCollapse(bySeeds("budget", "d1", one, []float64{0.940, 0.965, 0.950, 0.940, 0.955}, little), 0.5, 0.70, 0.72, 0.71, 0.70, 0.72),
		}, "observed", []string{"budget", "observed"}, "never collapsing at the given utilization"},
		// Seed --seed+4 alone collapses under observed at 0.5: without it
		// observed would be kept, but with every seed it collapses at the
		// user's utilization, and keeping it would be unsafe advice.
		{"one seed makes today's policies collapse at a given utilization: not kept, said", true, []Verdict{
			withCollapse(bySeeds("observed", "d1", one, []float64{0.930, 0.935, 0.930, 0.940, 0.935}, little), 0.5, 0.55, 0.56, 0.60, 0.55, 0.45),
			withCollapse(bySeeds("budget", "d1", one, []float64{0.940, 0.965, 0.950, 0.940, 0.955}, little), 0.5, 0.70, 0.72, 0.71, 0.70, 0.72),
		}, "observed", []string{"budget", "observed"}, "never collapsing at the given utilization; the choice is within the seed noise: with all 5 seeds budget (by never collapsing at the given utilization), " +
			"without seed --seed+4 observed (by the least change from today's policies); more seeds (--seeds above 5) may decide it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var policies []string
			for _, v := range c.verdicts {
				if !slices.Contains(policies, v.Policy) {
					policies = append(policies, v.Policy)
				}
			}
			st := standings(policies, c.verdicts)
			for i := range st {
				if st[i].policy == "budget" {
					st[i].changed = 1
				}
				if st[i].policy == "everywhere" {
					st[i].changed = 3
				}
			}
			order, key, _ := rankHeld(st, c.verdicts, c.given, c.base)
			var got []string
			for _, s := range order {
				got = append(got, s.policy)
			}
			if !slices.Equal(got, c.want) || key != c.key {
				t.Errorf("rank = %v decided by %q,\nwant %v by %q", got, key, c.want, c.key)
			}
		})
	}
}

// TestWithoutSeed: a verdict without one of its seeds has the critical
// utilizations of the seeds left (its figure their lowest, collapse at a
// given utilization judged again) and its ranges over every seed; the
// verdict it came from is left as it was; one that keeps no critical
// utilizations by seed is left as it is.
func TestWithoutSeed(t *testing.T) {
	avail, extra := Stat{0.9, 0.8, 1}, Stat{0.2, 0.1, 0.3}
	full := seeded(verdict("a", "d1", nil, avail, extra, false), 0.5, 1, 0.4)
	full.Utilization, full.UtilizationGiven, full.Collapses = 0.45, true, true
	bare := verdict("b", "d1", ptr(0.3), avail, extra, false)
	for _, c := range []struct {
		name      string
		in        Verdict
		k         int
		crit      *float64
		collapses bool
		seeds     int
	}{
		{"the lowest left out: the next is the figure, no collapse at 0.45", full, 2, ptr(0.5), false, 2},
		{"the lowest kept", full, 0, ptr(0.4), true, 2},
		{"no critical utilizations by seed: left as it is", bare, 1, ptr(0.3), false, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(c.in.CriticalBySeed)
			got := withoutSeed([]Verdict{c.in}, c.k)[0]
			if (got.CriticalUtilization == nil) != (c.crit == nil) || c.crit != nil && *got.CriticalUtilization != *c.crit ||
				!statNear(got.Availability, avail) || !statNear(got.ExtraWork, extra) || got.Collapses != c.collapses || got.Seeds != c.seeds {
				t.Errorf("got critical %v, availability %v, extra work %v, collapses %v, %d seeds; want %v, %v, %v, %v, %d",
					got.CriticalUtilization, got.Availability, got.ExtraWork, got.Collapses, got.Seeds, c.crit, avail, extra, c.collapses, c.seeds)
			}
			if !slices.Equal(c.in.CriticalBySeed, before) {
				t.Errorf("the verdict it came from changed: %v", c.in)
			}
		})
	}
}

func statNear(a, b Stat) bool {
	return math.Abs(a.Mean-b.Mean) < 1e-12 && math.Abs(a.Min-b.Min) < 1e-12 && math.Abs(a.Max-b.Max) < 1e-12
}

// TestPooledSD: the typical spread is the median of the groups' own
// standard deviations, groups of one left out, so one noisy group does
// not set it.
func TestPooledSD(t *testing.T) {
	for _, c := range []struct {
		name   string
		groups [][]float64
		want   float64
	}{
		{"none", nil, 0},
		{"groups of one say nothing", [][]float64{{0.7}, {0.9}}, 0},
		{"odd: the middle one", [][]float64{{0.7, 0.7, 0.7}, {0.70, 0.74}, {0.3, 0.95, 0.3}}, 0.04 / math.Sqrt2},
		{"even: the middle two's mean", [][]float64{{0.7, 0.7}, {0.70, 0.74}, {0.70, 0.72}, {0.3, 0.95}}, 0.03 / math.Sqrt2},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := pooledSD(c.groups); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("pooledSD = %g, want %g", got, c.want)
			}
		})
	}
}

// TestReasonSaysCollapseToday: a recommendation judged at the model's own
// utilization says so when the chosen policy itself stays collapsed there
// under some degradation (run X must not read as "X keeps you up today"),
// naming the degradation; it says nothing of the kind when the policy
// recovers there, and at a given utilization the sentence that opens the
// reason already says it.
func TestReasonSaysCollapseToday(t *testing.T) {
	const clause = "at the model's own utilization it stays collapsed after the trigger under slow-shard:svc=db"
	w := standing{policy: "budget", critical: 0.29, criticalAt: "slow-shard:svc=db", bySeed: Stat{0.3, 0.29, 0.32},
		avail: Stat{0.8, 0.7, 0.9}, extra: Stat{0.1, 0, 0.2}}
	for _, tc := range []struct {
		name             string
		collapses, given bool
		want             bool
	}{
		{"collapses at the model's utilization", true, false, true},
		{"recovers at the model's utilization", false, false, false},
		{"collapses at the given utilization", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := w
			w.collapses, w.worst = tc.collapses, "slow-shard:svc=db"
			got := reason(w, "", "availability during the faults", tc.given, "")
			if strings.Contains(got, clause) != tc.want {
				t.Errorf("reason %q: contains %q = %v, want %v", got, clause, !tc.want, tc.want)
			}
		})
	}
}

// TestWorthAChange pins the least differences worth a change on
// hand-built verdicts: another candidate beats today's policies on a key
// only where, seed by seed (the seeds paired: the same arrivals and faults
// under both), it surely gains the least worth a change (a cut of
// worthUnavailability in the unavailability during the faults,
// worthCritical of critical utilization): the 95% interval of the paired
// margins above it. Surely less keeps today's, said; an interval across
// the margin keeps today's too, said, and names the candidate (within)
// for more seeds to decide. The shape of caddy-replicas with first seed
// 11: retry-after's availability clear of observed's by a hair, a cut of
// its unavailability by 17%. aws-standard's everywhere, a cut of 24%,
// 31% and 27% of observed's with first seeds 1, 11 and 21, once decided a
// change on the second set alone; its interval across 25% now leaves it
// to more seeds on every set.
func TestWorthAChange(t *testing.T) {
	one := []float64{1, 1, 1, 1, 1}
	little := []float64{0.01, 0.01, 0.01, 0.01, 0.01}
	today := []float64{0.915, 0.920, 0.925, 0.932, 0.9205}
	// cut is today's availability with its unavailability cut by f, seed
	// by seed.
	cut := func(f float64, avail []float64) []float64 {
		out := make([]float64, len(avail))
		for i, a := range avail {
			out[i] = 1 - (1-a)*(1-f)
		}
		return out
	}
	wide := []float64{0.90, 0.93, 0.915, 0.94, 0.905}
	const tie = "the least change from today's policies: observed, %s tied on critical utilization, availability during the faults, extra work " +
		"(within the seed spread and the search's resolution); observed 0, %[1]s 1 edges changed; "
	for _, c := range []struct {
		name     string
		verdicts []Verdict
		want     string
		key      string
		within   []string
	}{
		{"availability clear of today's by a cut of 17%: kept, said", []Verdict{
			bySeeds("observed", "d1", one, today, little),
			bySeeds("retry-after", "d1", one, []float64{0.933, 0.936, 0.940, 0.935, 0.936}, little),
		}, "observed", fmt.Sprintf(tie, "retry-after") + "on availability during the faults retry-after 0.936 (0.933–0.940) above today's observed 0.922 (0.915–0.932) " +
			"beyond the seed spread but by a cut of 17% (10–25%, 95% over the seeds paired) in its unavailability, less than a cut of 25%, the least gain worth a change: keeping it", nil},
		{"kept level on availability by the margin, today's less extra work decides, said", []Verdict{
			bySeeds("observed", "d1", one, today, []float64{0, 0.001, 0.002, 0, 0.001}),
			bySeeds("retry-after", "d1", one, []float64{0.933, 0.936, 0.940, 0.935, 0.936}, []float64{0.007, 0.010, 0.013, 0.009, 0.011}),
		}, "observed", "extra work; on availability during the faults retry-after 0.936 (0.933–0.940) above today's observed 0.922 (0.915–0.932) " +
			"beyond the seed spread but by a cut of 17% (10–25%, 95% over the seeds paired) in its unavailability, less than a cut of 25%, the least gain worth a change: keeping it", nil},
		{"availability clear of today's by a cut of 22%, not surely 25%: kept, more seeds", []Verdict{
			bySeeds("observed", "d1", one, today, little),
			bySeeds("everywhere", "d1", one, []float64{0.933, 0.940, 0.943, 0.940, 0.9425}, little),
		}, "observed", fmt.Sprintf(tie, "everywhere") + "on availability during the faults everywhere 0.940 (0.933–0.943) above today's observed 0.922 (0.915–0.932) " +
			"beyond the seed spread but by a cut of 22% (15–29%, 95% over the seeds paired) in its unavailability, not surely a cut of 25%, the least gain worth a change: keeping it; " +
			"more seeds (--seeds above 5) may decide it", []string{"observed", "everywhere"}},
		{"availability clear of today's by a cut of 31%, 24–38% seed by seed: kept, more seeds", []Verdict{
			bySeeds("observed", "d1", one, today, little),
			bySeeds("everywhere", "d1", one, []float64{0.940, 0.948, 0.950, 0.947, 0.949}, little),
		}, "observed", fmt.Sprintf(tie, "everywhere") + "on availability during the faults everywhere 0.947 (0.940–0.950) above today's observed 0.922 (0.915–0.932) " +
			"beyond the seed spread but by a cut of 31% (24–38%, 95% over the seeds paired) in its unavailability, not surely a cut of 25%, the least gain worth a change: keeping it; " +
			"more seeds (--seeds above 5) may decide it", []string{"observed", "everywhere"}},
		{"availability with today's unavailability halved: decides", []Verdict{
			bySeeds("observed", "d1", one, today, little),
			bySeeds("retry-after", "d1", one, []float64{0.958, 0.962, 0.966, 0.960, 0.964}, little),
		}, "retry-after", "availability during the faults", nil},
		// Seed by seed a cut of 35%: the ranges over the seeds overlap
		// (0.900–0.940 against 0.935–0.961), the paired margins do not.
		{"availability within the spreads but a cut of 35% seed by seed: decides", []Verdict{
			bySeeds("observed", "d1", one, wide, little),
			bySeeds("everywhere", "d1", one, cut(0.35, wide), little),
		}, "everywhere", "availability during the faults", nil},
		{"the same cut of 20% seed by seed: surely less, kept", []Verdict{
			bySeeds("observed", "d1", one, wide, little),
			bySeeds("everywhere", "d1", one, cut(0.20, wide), little),
		}, "observed", strings.TrimSuffix(fmt.Sprintf(tie, "everywhere"), "; "), nil},
		{"critical utilization clear of today's by 0.045: kept, more seeds", []Verdict{
			bySeeds("observed", "d1", []float64{0.60, 0.60, 0.60, 0.60, 0.60}, today, little),
			bySeeds("retry-after", "d1", []float64{0.645, 0.645, 0.645, 0.645, 0.645}, today, little),
		}, "observed", fmt.Sprintf(tie, "retry-after") + "on critical utilization retry-after 0.65 ±0.02 above today's observed 0.60 ±0.02 " +
			"beyond the seed spread but by 0.045 (0.025–0.065, 95% over the seeds paired), not surely 0.05, the least gain worth a change: keeping it; " +
			"more seeds (--seeds above 5) may decide it", []string{"observed", "retry-after"}},
		{"critical utilization 0.2 above today's: decides", []Verdict{
			bySeeds("observed", "d1", []float64{0.60, 0.60, 0.60, 0.60, 0.60}, today, little),
			bySeeds("retry-after", "d1", []float64{0.80, 0.80, 0.80, 0.80, 0.80}, today, little),
		}, "retry-after", "critical utilization (the mean of each seed's own under its worst degradation, ±95% confidence and the search's ±0.02: " +
			"retry-after 0.80 ±0.02, seeds 0.80; the best of the rest observed 0.60 ±0.02, seeds 0.60, below beyond both intervals)", nil},
		{"a candidate not today's is held to no margin against another", []Verdict{
			bySeeds("observed", "d1", []float64{0.30, 0.30, 0.30, 0.30, 0.30}, today, little),
			bySeeds("budget", "d1", []float64{0.60, 0.60, 0.60, 0.60, 0.60}, today, little),
			bySeeds("retry-after", "d1", []float64{0.645, 0.645, 0.645, 0.645, 0.645}, today, little),
		}, "retry-after", "critical utilization (the mean of each seed's own under its worst degradation, ±95% confidence and the search's ±0.02: " +
			"retry-after 0.65 ±0.02, seeds 0.65; the best of the rest budget 0.60 ±0.02, seeds 0.60, below beyond both intervals)", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var policies []string
			for _, v := range c.verdicts {
				if !slices.Contains(policies, v.Policy) {
					policies = append(policies, v.Policy)
				}
			}
			st := standings(policies, c.verdicts)
			for i := range st {
				if st[i].policy != "observed" {
					st[i].changed = 1
				}
			}
			order, key, within := rankHeld(st, c.verdicts, false, "observed")
			if order[0].policy != c.want || key != c.key || !slices.Equal(within, c.within) {
				t.Errorf("%s decided by %q (within the noise of %v),\nwant %s by %q (within %v)", order[0].policy, key, within, c.want, c.key, c.within)
			}
		})
	}
}

// TestRankHeldWithin: where a seed set one seed smaller chooses another
// candidate, rankHeld names the candidates the choice is within the seed
// noise of (the one every seed chose, the others, today's policies); the
// critical utilizations are grpc-deadlines' with first seed 1, where one
// seed of budget-sized+keys collapses at 0.35 under one degradation as
// observed+keys does and the other four recover to 0.50. With the one
// low seed, the five seeds paired choose budget-sized+keys (0.15 above,
// 0.07–0.23), four of them not, and today's are kept: the choice first.
func TestRankHeldWithin(t *testing.T) {
	avail, extra := []float64{0.865, 0.870, 0.880, 0.890, 0.900}, []float64{1.0, 1.05, 1.07, 1.1, 1.2}
	for _, c := range []struct {
		name   string
		budget []float64
		want   string
		within []string
	}{
		{"one seed low: within the noise", []float64{0.50, 0.50, 0.35, 0.50, 0.50}, "observed+keys", []string{"budget-sized+keys", "observed+keys"}},
		{"every seed high: held", []float64{0.50, 0.50, 0.48, 0.50, 0.50}, "budget-sized+keys", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := []Verdict{
				bySeeds("observed+keys", "d1", []float64{0.33, 0.28, 0.31, 0.33, 0.35}, avail, extra),
				bySeeds("budget-sized+keys", "d1", c.budget, avail, extra),
			}
			st := standings([]string{"observed+keys", "budget-sized+keys"}, vs)
			st[0].changed, st[1].changed = 1, 1
			order, _, within := rankHeld(st, vs, false, "observed+keys")
			if order[0].policy != c.want || !slices.Equal(within, c.within) {
				t.Errorf("%s, within the noise of %v; want %s, %v", order[0].policy, within, c.want, c.within)
			}
		})
	}
}
