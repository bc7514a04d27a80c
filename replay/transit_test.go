package replay

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
)

// TestRetryTransit: an attempt after the first travels with the edge's
// RetryTransit where it has one, a first attempt with Transit. A callee of
// 1 ms whose first attempts all fail, retried once 5 ms later: the
// request takes transit + 1 + 5 + retry transit + 1 ms.
func TestRetryTransit(t *testing.T) {
	for _, tc := range []struct {
		name           string
		transit, retry Dist
		firstFails     bool
		wantMS         float64
	}{
		{"a retry dials anew", Constant(0.0001), Constant(0.0004), true, 0.1 + 1 + 5 + 0.4 + 1},
		{"no retry transit of its own", Constant(0.0001), nil, true, 0.1 + 1 + 5 + 0.1 + 1},
		{"no retry", Constant(0.0001), Constant(0.0004), false, 0.1 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := single("server", 64, Constant(0.001), 0, 0, Policy{MaxAttempts: 2, Backoff: Backoff{Kind: BackoffConstant, Base: 0.005}})
			m.Edges[0].Transit, m.Edges[0].RetryTransit = tc.transit, tc.retry
			wantLatency(t, m, tc.firstFails, tc.wantMS)
		})
	}
}

// TestRetryWork: the callee works an edge's Work for a first attempt and
// its RetryWork for a later one (a retry, a hedge) where the edge has
// them, the callee operation's Time where not; an execution that fails on
// its own works its FailTime whatever the attempt. A callee that works
// 1 ms, retried once 5 ms after a failed first attempt, or hedged after
// 3 ms.
func TestRetryWork(t *testing.T) {
	retry := Policy{MaxAttempts: 2, Backoff: Backoff{Kind: BackoffConstant, Base: 0.005}}
	hedge := Policy{MaxAttempts: 2, HedgeAfter: 0.003}
	for _, tc := range []struct {
		name            string
		policy          Policy
		work, retryWork Dist
		failTime        Dist
		firstFails      bool
		wantMS          float64
	}{
		{"a retry served by a cold replica", retry, Constant(0.002), Constant(0.004), nil, true, 2 + 5 + 4},
		{"no work of the edge's own", retry, nil, nil, nil, true, 1 + 5 + 1},
		{"no retry", retry, Constant(0.002), Constant(0.004), nil, false, 2},
		{"a failure works its fail time", retry, Constant(0.002), Constant(0.004), Constant(0.0005), true, 0.5 + 5 + 4},
		{"a hedge answered first", hedge, Constant(0.010), Constant(0.001), nil, false, 3 + 1},
		{"a hedge of the operation's time", hedge, nil, nil, nil, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := single("server", 64, Constant(0.001), 0, 0, tc.policy)
			m.Edges[0].Work, m.Edges[0].RetryWork = tc.work, tc.retryWork
			m.Services[1].Ops[0].FailTime = tc.failTime
			wantLatency(t, m, tc.firstFails, tc.wantMS)
		})
	}
}

// TestRetryWorkFromTopology: a model built from a topology draws an
// edge's later attempts' callee work apart from its first attempts' where
// the topology splits them, with a note; not where it does not, and not
// where the edge's slow tries have work times of their own, which stand
// (the note says so).
func TestRetryWorkFromTopology(t *testing.T) {
	for _, tc := range []struct {
		name, scenario, caller, callee string
		unsplit                        bool // clear the split in the topology
		apart                          bool
		note                           string // in the model's notes, "" for no note on the edge's work
	}{
		{"split", "edge-only", "edge", "api", false, true, "the replay draws each kind's from its own"},
		{"not split", "edge-only", "edge", "api", true, false, ""},
		{"slow tries' own times stand", "go-resiliency", "inventory", "db", false, false, "not drawn apart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := sampleTopology(t, tc.scenario)
			var te *graph.Edge
			for i := range top.Edges {
				if e := &top.Edges[i]; e.Caller == tc.caller && e.Callee == tc.callee {
					te = e
				}
			}
			if te == nil || te.RetryWork == nil || !te.RetryWork.Split {
				t.Fatalf("%s → %s: no split retry work in the topology: %+v", tc.caller, tc.callee, te)
			}
			if tc.unsplit {
				te.RetryWork.Split, te.FirstWorkQuantilesMS, te.RetryWorkQuantilesMS = false, nil, nil
			}
			m, err := FromTopology(top, BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var ed *Edge
			for i := range m.Edges {
				if e := &m.Edges[i]; m.Services[e.Caller].Name == tc.caller && m.Services[e.Callee].Name == tc.callee {
					ed = e
				}
			}
			if ed == nil {
				t.Fatalf("no model edge %s → %s", tc.caller, tc.callee)
			}
			if got := ed.Work != nil && ed.RetryWork != nil; got != tc.apart || (ed.Work == nil) != (ed.RetryWork == nil) {
				t.Fatalf("work %v, retry work %v; want drawn apart %v", ed.Work, ed.RetryWork, tc.apart)
			}
			if tc.apart {
				for _, w := range []struct {
					d Dist
					q []float64
				}{{ed.Work, te.FirstWorkQuantilesMS}, {ed.RetryWork, te.RetryWorkQuantilesMS}} {
					want, err := quantileDist(graph.WorkLevels, w.q)
					if err != nil {
						t.Fatal(err)
					}
					if math.Abs(w.d.Mean()-want.Mean()) > 1e-12 {
						t.Errorf("mean work %g s, want the topology's %g", w.d.Mean(), want.Mean())
					}
				}
			}
			var notes []string
			for _, n := range m.Assumed {
				if strings.HasPrefix(n, tc.caller+" → "+tc.callee) && strings.Contains(n, "meet other work at the callee") {
					notes = append(notes, n)
				}
			}
			switch {
			case tc.note == "" && len(notes) > 0:
				t.Errorf("notes on the edge's work: %q, want none", notes)
			case tc.note != "" && (len(notes) != 1 || !strings.Contains(notes[0], tc.note)):
				t.Errorf("notes on the edge's work: %q, want one saying %q", notes, tc.note)
			}
		})
	}
}

// wantLatency runs model m (one caller edge, constant times) under 100
// root requests 10 ms apart, the edge's first attempts failing where
// firstFails, and requires every request to succeed in exactly wantMS.
func wantLatency(t *testing.T, m *Model, firstFails bool, wantMS float64) {
	t.Helper()
	for i := range 100 {
		m.Arrivals = append(m.Arrivals, Arrival{At: float64(i) / 100})
	}
	m.Period = 1
	if firstFails {
		m.Edges[0].Fail = &Failures{First: Mix{Fail: 1}, FirstAfterFailure: Mix{Fail: 1}, FirstAfterOtherFailure: Mix{Fail: 1}}
	}
	r := mustRun(t, m, schedule(), RunConfig{Seed: 1, Duration: 1})
	if r.RootRequests != 100 || r.ServerErrors != 0 {
		t.Fatalf("%d server errors of %d root requests; want none of 100", r.ServerErrors, r.RootRequests)
	}
	for _, got := range []float64{r.P50MS, r.P99MS} {
		if math.Abs(got-wantMS) > 1e-6 {
			t.Errorf("latency %.6f ms (p50 %.6f, p99 %.6f), want %.6f", got, r.P50MS, r.P99MS, wantMS)
		}
	}
}

// TestTransitOnceBelowInstrumentation: where an edge's attempts were read
// below the instrumentation (the callee's spans under one client span),
// the model draws the edge's transit for a call's first attempt only
// (later attempts add none, with a note), since the waits between the
// callee's spans carry their way out and back; an edge whose attempts
// each have a client span of their own keeps drawing it for every
// attempt, without the note.
func TestTransitOnceBelowInstrumentation(t *testing.T) {
	for _, tc := range []struct {
		scenario, caller, callee string
		once                     bool
	}{
		{"grpc-js-retry", "front", "stock", true},
		{"retry-below-otelhttp", "inventory", "db", true},
		{"fibonacci", "inventory", "db", false},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			m, err := FromTopology(sampleTopology(t, tc.scenario), BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var ed *Edge
			for i := range m.Edges {
				if e := &m.Edges[i]; m.Services[e.Caller].Name == tc.caller && m.Services[e.Callee].Name == tc.callee {
					ed = e
				}
			}
			if ed == nil || ed.Transit == nil {
				t.Fatalf("no model edge %s → %s with a transit: %+v", tc.caller, tc.callee, ed)
			}
			once := ed.RetryTransit != nil && ed.RetryTransit.Mean() == 0
			if once != tc.once {
				t.Errorf("later attempts' transit %v, want none of their own %v", ed.RetryTransit, tc.once)
			}
			noted := slices.ContainsFunc(m.Assumed, func(n string) bool {
				return strings.HasPrefix(n, tc.caller+" → "+tc.callee) && strings.Contains(n, "the transit is drawn once a call")
			})
			if noted != tc.once {
				t.Errorf("note on the transit drawn once: %v, want %v", noted, tc.once)
			}
		})
	}
}
