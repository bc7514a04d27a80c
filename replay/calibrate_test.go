package replay

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
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

// knownMisses are the samples the model does not yet reproduce although
// their traces hold what it would need, with the defect: a model defect,
// not the traces' (those say so in truth.json). TestCalibrateSamples
// requires them to miss still, so that a fix shows.
var knownMisses = map[string]string{
	// Measured on the capture since session 12 reads what a hedged call
	// does after a failure with another attempt out and keeps give-ups
	// by class (root p90 250.7ms → 67.8ms replayed against 43.5ms traced,
	// within 41.6–51.8ms ±25%; 1.676 attempts per call against 1.824).
	// What is left is db's work: the traced calls' first request was slow
	// (≥25ms) in 32 of 68 calls, their second in 18 of those 32 and
	// their third in none of the 6 with two slow, while the replay draws
	// every request's work independently from one pool (40 of its 101
	// quantiles ≥25ms).
	"hedgedhttp-below": "a call's requests are drawn slow at the callee independently of each other, " +
		"where db's script makes at most two of a call's requests slow (a third after two slow ones: 0 of 6): " +
		"so some replayed calls find all three requests slow (~250ms, none traced) and fewer first requests are slow enough to be hedged",
}

// TestCalibrateSamples holds every committed scenario to the default
// tolerances, with default settings: the model built from the traces must
// reproduce them, except where the scenario's truth.json says the traces
// cannot show what happened ("calibration": {"reproducible": false}, e.g.
// retries that ran in other requests' contexts): there the calibration
// must miss, and every miss must say so; knownMisses must still miss.
func TestCalibrateSamples(t *testing.T) {
	for _, dir := range sampleScenarios(t) {
		t.Run(dir, func(t *testing.T) {
			var tr struct {
				Calibration *struct {
					Reproducible bool   `json:"reproducible"`
					Because      string `json:"because"`
				} `json:"calibration"`
			}
			b, err := os.ReadFile(filepath.Join("..", "samples", dir, "truth.json"))
			if err == nil {
				err = json.Unmarshal(b, &tr)
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := Calibrate(context.Background(), sampleTopology(t, dir), CalibrateOptions{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			// Every sample keeps its root requests' timeline, and the
			// calibration replays it rather than Poisson arrivals.
			if c.Arrivals != ArrivalsTimeline {
				t.Errorf("arrivals replayed: %q, want %q (the traces' own)", c.Arrivals, ArrivalsTimeline)
			}
			if why, ok := knownMisses[dir]; ok {
				if c.Pass {
					t.Errorf("calibrates now: remove it from knownMisses (%s)", why)
				}
				for _, m := range c.Misses {
					t.Logf("known miss (%s): %s", why, m)
				}
				return
			}
			if tr.Calibration != nil && !tr.Calibration.Reproducible {
				if c.Pass {
					t.Errorf("calibration passes; the truth says it cannot: %s", tr.Calibration.Because)
				}
				for _, m := range c.Misses {
					if !strings.Contains(m, "other requests' contexts") {
						t.Errorf("miss without its cause (%s): %s", tr.Calibration.Because, m)
					}
				}
				return
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

// TestRunsP: the chance of as many failures after failures if a call's
// outcome did not depend on the edge's latest (Fisher's exact test, the
// hypergeometric upper tail).
func TestRunsP(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs graph.Runs
		want float64
	}{
		{"no call after a failure", graph.Runs{AfterSuccess: graph.CallCount{Calls: 10, Failed: 1}}, 1},
		{"none failed after a failure", graph.Runs{AfterFailure: graph.CallCount{Calls: 3}, AfterSuccess: graph.CallCount{Calls: 10, Failed: 3}}, 1},
		// 2 of 4 calls failed: 1 − P(neither of the 2 after a failure) = 1 − 1/6.
		{"one of two", graph.Runs{AfterFailure: graph.CallCount{Calls: 2, Failed: 1}, AfterSuccess: graph.CallCount{Calls: 2, Failed: 1}}, 5.0 / 6},
		// 4 of 8 failed, all 4 after a failure: 1 / C(8, 4).
		{"all four", graph.Runs{AfterFailure: graph.CallCount{Calls: 4, Failed: 4}, AfterSuccess: graph.CallCount{Calls: 4}}, 1.0 / 70},
		// cockatiel's front → ledger: 14 of 31 failed, 11 of the 14 after
		// a failure; the binomial tail at 14/31 was 0.0118.
		{"outages", graph.Runs{AfterFailure: graph.CallCount{Calls: 14, Failed: 11}, AfterSuccess: graph.CallCount{Calls: 17, Failed: 3}}, 52027.0 / 53036505},
		{"every call failed", graph.Runs{AfterFailure: graph.CallCount{Calls: 4, Failed: 4}, AfterSuccess: graph.CallCount{Calls: 1, Failed: 1}}, 1},
	} {
		if got := runsP(tc.runs); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: runsP %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFailureRunsReplay: an edge whose calls fail 2% of the time after a
// success and 90% after another request's failure fails, as a two-state
// chain does, 0.02 / (0.02 + 0.1) = 1/6 of the time in the long run, in
// runs; drawn independently (Drawn false) it fails 2% of the time.
func TestFailureRunsReplay(t *testing.T) {
	for _, tc := range []struct {
		drawn bool
		want  float64
	}{{true, 1.0 / 6}, {false, 0.02}} {
		m := single("db", 64, Constant(0.001), 20, 0, Policy{MaxAttempts: 1})
		f := &Failures{First: Mix{Fail: 0.02}, Retry: Mix{Fail: 0.02}, FirstAfterFailure: Mix{Fail: 0.02},
			FirstAfterOtherFailure: Mix{Fail: 0.02}, FirstAfterEdgeFailure: Mix{Fail: 0.9}, RetryAfterDownstream: Mix{Fail: 0.02}, Propagate: 1}
		f.Runs.Drawn = tc.drawn
		m.Edges[0].Fail = f
		r, err := Run(m, nil, RunConfig{Seed: 1, Duration: 2000})
		if err != nil {
			t.Fatal(err)
		}
		got := float64(r.ServerErrors) / float64(r.RootRequests)
		if math.Abs(got-tc.want) > 0.15*tc.want {
			t.Errorf("runs drawn %v: %.4f of root requests failed, want %.4f", tc.drawn, got, tc.want)
		}
	}
}

// TestSlowTriesOf: whether a retry's slowness is drawn by the try before
// it follows the binomial tail of the tries after a slow one at the
// retries' slow share, and is unknown where too few tries followed a slow
// one for even all of them slow to clear RunsAlpha.
func TestSlowTriesOf(t *testing.T) {
	tc := func(tries, slow int) graph.TryCount { return graph.TryCount{Tries: tries, Slow: slow} }
	for _, c := range []struct {
		name                 string
		counts               graph.SlowTries
		byPrevious, unknown  bool
		afterSlow, afterFail float64 // prob of a second try after a slow one, after another failure
	}{
		{"runs per request", graph.SlowTries{First: tc(100, 50), AfterSlowByAttempt: []graph.TryCount{tc(50, 45)}, AfterFailureByAttempt: []graph.TryCount{tc(50, 5)}},
			true, false, 0.9, 0.1},
		{"no dependence beyond chance", graph.SlowTries{First: tc(100, 50), AfterSlowByAttempt: []graph.TryCount{tc(50, 26)}, AfterFailureByAttempt: []graph.TryCount{tc(50, 24)}},
			false, false, 0.5, 0.5},
		{"too few tries after a slow one", graph.SlowTries{First: tc(10, 5), AfterSlowByAttempt: []graph.TryCount{tc(3, 3)}, AfterFailureByAttempt: []graph.TryCount{tc(3, 0)}},
			false, true, 0.5, 0.5},
		{"none after a slow one", graph.SlowTries{First: tc(10, 5), AfterSlowByAttempt: []graph.TryCount{{}}, AfterFailureByAttempt: []graph.TryCount{tc(4, 1)}},
			false, true, 0.25, 0.25},
	} {
		sl := slowTriesOf(c.counts)
		if sl.ByPrevious != c.byPrevious || sl.Unknown != c.unknown {
			t.Errorf("%s: by previous %v, unknown %v (P %.3g); want %v, %v", c.name, sl.ByPrevious, sl.Unknown, sl.P, c.byPrevious, c.unknown)
		}
		if got := [2]float64{sl.prob(2, true), sl.prob(2, false)}; math.Abs(got[0]-c.afterSlow) > 1e-9 || math.Abs(got[1]-c.afterFail) > 1e-9 || sl.prob(1, false) != 0.5 {
			t.Errorf("%s: second try slow %.3f after a slow one, %.3f after another failure, first %.3f; want %.3f, %.3f, 0.5", c.name, got[0], got[1], sl.prob(1, false), c.afterSlow, c.afterFail)
		}
	}
}

// TestSlowTriesReplay: a callee answers fast tries in 1 ms and fails half
// of them with a 503; a slow try takes it 300 ms, past the caller's 100 ms
// per-try timeout. No first try is slow; a second try half the time; a
// third 90% of the time after a slow second, 10% after a 503. Of root
// requests 0.5 × (0.5 × (0.9 + 0.1×0.5) + 0.25 × (0.1 + 0.9×0.5)) fail
// when the third try follows the second; drawn by attempt alone (0.5 for
// the third, as the traces would pool it) 0.5 × 0.75 × 0.75.
func TestSlowTriesReplay(t *testing.T) {
	for _, tc := range []struct {
		byPrevious bool
		want       float64
	}{{true, 0.5 * (0.5*(0.9+0.05) + 0.25*(0.1+0.45))}, {false, 0.5 * 0.75 * 0.75}} {
		m := single("db", 64, Constant(0.001), 20, 0, Policy{MaxAttempts: 3, PerTryTimeout: 0.1})
		sl := &SlowTries{First: 0, Retry: 0.5, By: []float64{0.5, 0.5}, AfterSlowBy: []float64{0.5, 0.9}, AfterFailureBy: []float64{0.5, 0.1},
			ByPrevious: tc.byPrevious, Timeout: 0.1, SlowTime: Constant(0.3), Time: Constant(0.001)}
		m.Edges[0].Fail = &Failures{First: Mix{Fail: 0.5}, Retry: Mix{Fail: 0.5}, FirstAfterFailure: Mix{Fail: 0.5}, FirstAfterOtherFailure: Mix{Fail: 0.5},
			FirstAfterEdgeFailure: Mix{Fail: 0.5}, RetryAfterDownstream: Mix{Fail: 0.5}, Propagate: 1, Slow: sl}
		r, err := Run(m, nil, RunConfig{Seed: 1, Duration: 2000})
		if err != nil {
			t.Fatal(err)
		}
		got := float64(r.ServerErrors) / float64(r.RootRequests)
		if math.Abs(got-tc.want) > 0.05*tc.want {
			t.Errorf("by previous try %v: %.4f of root requests failed, want %.4f", tc.byPrevious, got, tc.want)
		}
	}
}

// TestExclusiveFaultsAcrossLayers is a hand-made topology of faults at two
// layers that exclude each other per request (the first grpc-deadlines:
// gateway → orders → warehouse). Of 1,000 requests, orders fails 300 on
// its own on their first try, before it calls warehouse; warehouse fails
// 200 others on their first try, and orders passes that on; every retry
// succeeds: 1.5 attempts a call at gateway. The 200 that failed at
// warehouse got past orders' own failures, which come before its call, so
// orders fails on its own 300 of 1,000 first tries, not 300 of the 500 +
// 300 whose outcome was its own (1 + 0.375 + 0.625 × 2/7 = 1.55 attempts
// a call).
func TestExclusiveFaultsAcrossLayers(t *testing.T) {
	op := func(name string, count, own int) graph.Operation {
		return graph.Operation{Name: name, Count: count, P50MS: 1, OwnFailures: own, FailedWithoutCalls: own}
	}
	tp := &graph.Topology{
		Services: []graph.Service{
			{Name: "gateway", Operations: []graph.Operation{op("GET /o", 1000, 0)}},
			{Name: "orders", Operations: []graph.Operation{op("Get", 1500, 300)}},
			{Name: "warehouse", Operations: []graph.Operation{op("Count", 1200, 200)}},
		},
		Edges: []graph.Edge{
			{Caller: "user", Callee: "gateway", Operation: "GET /o", Calls: 1000, MaxAttempts: 1,
				Outcomes: &graph.Outcomes{First: graph.OutcomeMix{OK: 1000}}},
			{Caller: "gateway", CallerOperation: "GET /o", Callee: "orders", Operation: "Get", Calls: 1000, MaxAttempts: 2,
				Outcomes: &graph.Outcomes{First: graph.OutcomeMix{OK: 500, ServerError: 300}, FirstDownstreamFailed: 200,
					Retry: graph.OutcomeMix{OK: 300}, RetryByAttempt: []graph.OutcomeMix{{OK: 300}},
					RetryAfterDownstream: graph.OutcomeMix{OK: 200}, DownstreamFailed: 200, Propagated: 200}},
			{Caller: "orders", CallerOperation: "Get", Callee: "warehouse", Operation: "Count", Calls: 1200, MaxAttempts: 1,
				Outcomes: &graph.Outcomes{First: graph.OutcomeMix{OK: 1000, ServerError: 200},
					FirstAfterFailure: graph.OutcomeMix{OK: 200}, FirstAfterOtherFailure: graph.OutcomeMix{OK: 300}}},
		},
		Calibration: &graph.Calibration{RootRatePerS: 20, Sampling: graph.Sampling{Probability: 1, Roots: 1}},
	}
	m, err := FromTopology(tp, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(m, nil, RunConfig{Seed: 1, Duration: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range r.Attempts {
		if a.Edge != "gateway → orders" {
			continue
		}
		if got := float64(a.Attempts) / float64(a.Attempts-a.Retries); math.Abs(got-1.5) > 0.02 {
			t.Errorf("gateway → orders: %.3f attempts a call, want 1.5", got)
		}
		return
	}
	t.Fatalf("no gateway → orders attempts in %+v", r.Attempts)
}

// TestGiveUpReplay: a caller retries up to 3 attempts, but the traces show
// it giving up on half of its throttled failures with attempts left, and
// on none of the others. Each attempt is throttled with chance 0.3, fails
// otherwise with 0.2: a call fails with F(n) = 0.3 (½ + ½ F(n−1)) +
// 0.2 F(n−1), F(1) = 0.5, so F(3) = 0.26375 (0.125 retrying every
// failure), and makes 1 + 0.35 (1 + 0.35) = 1.4725 attempts.
func TestGiveUpReplay(t *testing.T) {
	op := func(name string, count int) graph.Operation {
		return graph.Operation{Name: name, Count: count, P50MS: 1}
	}
	mix := graph.OutcomeMix{OK: 50, Throttled: 30, ServerError: 20}
	tp := &graph.Topology{
		Services: []graph.Service{{Name: "gateway", Operations: []graph.Operation{op("GET /o", 1000)}}, {Name: "catalog", Operations: []graph.Operation{op("Lookup", 1500)}}},
		Edges: []graph.Edge{
			{Caller: "user", Callee: "gateway", Operation: "GET /o", Calls: 1000, MaxAttempts: 1, Outcomes: &graph.Outcomes{First: graph.OutcomeMix{OK: 1000}}},
			{Caller: "gateway", CallerOperation: "GET /o", Callee: "catalog", Operation: "Lookup", Calls: 1000, MaxAttempts: 3,
				Outcomes: &graph.Outcomes{First: mix, Retry: mix, RetryByAttempt: []graph.OutcomeMix{mix, mix}, GivenUp: []graph.StatusRetries{
					{Status: "grpc RESOURCE_EXHAUSTED", Class: "throttled", Retried: 40, GivenUp: 40, Reason: "unknown: no span says why"},
					{Status: "grpc UNAVAILABLE", Class: "server_error", Retried: 50}}}},
		},
		Calibration: &graph.Calibration{RootRatePerS: 20, Sampling: graph.Sampling{Probability: 1, Roots: 1}},
	}
	m, err := FromTopology(tp, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := m.Edges[len(m.Edges)-1].Policy.GiveUp; g != [giveUpClasses]float64{GiveUpThrottled: 0.5} {
		t.Fatalf("give-up shares %v, want throttled 0.5", g)
	}
	r, err := Run(m, nil, RunConfig{Seed: 1, Duration: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := float64(r.ServerErrors)/float64(r.RootRequests), 0.26375; math.Abs(got-want) > 0.05*want {
		t.Errorf("%.4f of root requests failed, want %.4f", got, want)
	}
	a := r.Attempts[len(r.Attempts)-1]
	if got, want := float64(a.Attempts)/float64(a.Attempts-a.Retries), 1.4725; math.Abs(got-want) > 0.02*want {
		t.Errorf("%.4f attempts a call, want %.4f", got, want)
	}
	// Half the calls' throttled first or second attempts: 0.3 × 0.5 × 1.35.
	if got, want := float64(a.GivenUp)/float64(a.Attempts-a.Retries), 0.2025; math.Abs(got-want) > 0.05*want {
		t.Errorf("%.4f of calls given up, want %.4f", got, want)
	}
	if len(r.Mechanics.GiveUp) != 1 || r.Mechanics.GiveUp[0].Throttled != 0.5 || !strings.Contains(r.Mechanics.String(), "a throttled one 0.5") {
		t.Errorf("mechanics %+v: %s", r.Mechanics.GiveUp, r.Mechanics.String())
	}
}

// TestRateBand: the server-error rate's one-sigma Clopper–Pearson band,
// and calibration's judgement with it: within the tolerance of the band,
// not only of the traced rate, and a miss beyond it.
func TestRateBand(t *testing.T) {
	for _, tc := range []struct {
		k, n   int
		lo, hi float64 // the exact bounds to 1e-3
	}{
		{0, 70, 0, 0.0259},       // 1 − (α/2)^(1/70)
		{70, 70, 0.9741, 1},      // the mirror
		{3, 70, 0.0201, 0.0826},  // edge-only: 3 of 70
		{33, 75, 0.3770, 0.5041}, // cockatiel: 33 of 75
		{500, 1000, 0.4841, 0.5159},
	} {
		b := rateBand(tc.k, tc.n)
		if math.Abs(b[0]-tc.lo) > 1e-3 || math.Abs(b[1]-tc.hi) > 1e-3 {
			t.Errorf("%d of %d: band %v, want [%v, %v]", tc.k, tc.n, b, tc.lo, tc.hi)
		}
		if p := float64(tc.k) / float64(tc.n); b[0] > p || b[1] < p {
			t.Errorf("%d of %d: band %v does not hold the rate %v", tc.k, tc.n, b, p)
		}
	}
	// Seventy roots, three server errors: 5.9% replayed is inside the
	// band (what the traces cannot tell from 4.3%), as are 9.7% and 0.5%
	// (1.5 points beyond its 2.0–8.3%), while 10% and 0.3% are not.
	top := sampleTopology(t, "edge-only")
	m, err := FromTopology(top, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base, err := Run(m, nil, RunConfig{Seed: 1, Duration: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		replayed float64
		want     bool
	}{{0.043, true}, {0.059, true}, {0.097, true}, {0.10, false}, {0.005, true}, {0.003, false}} {
		top.Calibration.Root.Requests, top.Calibration.Root.ServerErrorRate = 70, 3.0/70
		run := base
		run.RootRequests, run.ServerErrors = 1000, int(math.Round(tc.replayed*1000))
		c := compareRuns(top, m, []Result{run}, CalibrateOptions{Tolerances: &Tolerances{ServerErrorPoints: 0.015, LatencyRel: 0.25, AttemptsRel: 0.05, AttemptsAbs: 0.03}})
		if c.Root.ServerError != tc.want {
			t.Errorf("replayed %.1f%% against 3 of 70 traced (band %v): within %v, want %v", 100*tc.replayed, *c.Root.Traced.ServerErrorBand, c.Root.ServerError, tc.want)
		}
	}
}
