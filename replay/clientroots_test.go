package replay

import (
	"fmt"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
)

// clientTopology is a client with no span around its calls (loadgen: 12
// calls to api, 25 attempt spans, each its own root) beside a served
// entry (front, 10 requests calling api once each).
func clientTopology() *graph.Topology {
	q := func(ms float64) []float64 {
		out := make([]float64, 13)
		for i := range out {
			out[i] = ms
		}
		return out
	}
	two := 2.0
	return &graph.Topology{Schema: graph.Schema, Source: graph.Source{RootRatePerS: 22, WindowS: 1},
		Services: []graph.Service{
			// The client's executions are its 25 attempt spans; its self
			// time is the client spans' time outside api (transit).
			{Name: "loadgen", Operations: []graph.Operation{{Name: "GET", Count: 25, P50MS: 2, P95MS: 2, SelfQuantilesMS: q(0.2), StoppedAfterFailure: 13}}},
			{Name: "front", Operations: []graph.Operation{{Name: "GET /a", Count: 10, P50MS: 5, P95MS: 5, SelfQuantilesMS: q(3)}}},
			{Name: "api", Operations: []graph.Operation{{Name: "GET /x", Count: 35, P50MS: 2, P95MS: 2, SelfQuantilesMS: q(2)}}},
		},
		Edges: []graph.Edge{
			{Caller: "front", CallerOperation: "GET /a", Callee: "api", Operation: "GET /x", Calls: 10, Attempts: 10, MaxAttempts: 1, Method: "GET"},
			{Caller: "loadgen", CallerOperation: "GET", Callee: "api", Operation: "GET /x", Calls: 12, Attempts: 25, Retries: true, MaxAttempts: 4, Method: "GET",
				Backoff: graph.Backoff{Kind: graph.BackoffExponential, BaseMS: 20, Multiplier: &two, Jitter: graph.JitterNone}},
			{Caller: "user", Callee: "front", Operation: "GET /a", Calls: 10, Attempts: 10, MaxAttempts: 1, CalleeP50MS: 5},
		},
		Calibration: &graph.Calibration{ArrivalWindowS: 1, RootRatePerS: 22, Sampling: graph.Sampling{Probability: 1},
			ClientRoots: []graph.ClientRoot{{Service: "loadgen", Operation: "GET", Requests: 12}}},
	}
}

// TestClientEntries: a client's root operation (graph.Calibration.
// ClientRoots) is an entry: the end user sends each root request to the
// client, which has no work of its own and makes one call, with no pool
// limit unless --capacity sets one; its arrivals follow the timeline; an
// edge whose retries are unknown is replayed with none, and says so.
func TestClientEntries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		edit      func(tp *graph.Topology)
		opts      BuildOptions
		workers   int // loadgen's
		notes     []string
		notNotes  []string
		err       string
		arrivals  int // model arrivals to loadgen's entry (timeline)
		maxAttemp int // loadgen → api's policy
	}{{
		name:    "a client's calls",
		workers: clientWorkers, maxAttemp: 4,
		notes: []string{"loadgen GET: a client whose calls start their own traces (root CLIENT spans): its 12 calls are root requests",
			"loadgen: no limit on its calls in flight", "root rate 22/s"},
		notNotes: []string{"whether the client retries is unknown", "loadgen: 4 workers"},
	}, {
		name: "retries unknown",
		edit: func(tp *graph.Topology) {
			e := &tp.Edges[1]
			e.Calls, e.Attempts, e.Retries, e.RetriesUnknown, e.MaxAttempts = 25, 25, false, true, 1
			e.Backoff = graph.Backoff{Kind: graph.BackoffUnknown, Jitter: graph.JitterUnknown}
			tp.Calibration.ClientRoots[0].Requests = 25
		},
		workers: clientWorkers, maxAttemp: 1,
		notes: []string{"loadgen → api GET /x: whether the client retries is unknown", "replayed with the attempts it was read with, one per call, no retries",
			"are lower bounds"},
	}, {
		name:    "workers set",
		opts:    BuildOptions{Capacity: map[string]Capacity{"loadgen": {Workers: 3}}},
		workers: 3, maxAttemp: 4,
		notNotes: []string{"loadgen: no limit"},
	}, {
		name: "a throughput for a client",
		opts: BuildOptions{Capacity: map[string]Capacity{"loadgen": {RPS: 50}}},
		err:  "--capacity loadgen=50rps: loadgen is a client",
	}, {
		// A client that also serves requests keeps the pool its served
		// requests show.
		name: "a client that serves",
		edit: func(tp *graph.Topology) {
			tp.Edges = append(tp.Edges, graph.Edge{Caller: "user", Callee: "loadgen", Operation: "POST /run", Calls: 1, Attempts: 1, MaxAttempts: 1, CalleeP50MS: 1})
		},
		workers: DefaultMinWorkers, maxAttemp: 4,
		notes:    []string{"loadgen GET: a client whose calls start their own traces", "loadgen: 4 workers"},
		notNotes: []string{"loadgen: no limit"},
	}, {
		name: "a client root the topology does not hold",
		edit: func(tp *graph.Topology) {
			tp.Calibration.ClientRoots = append(tp.Calibration.ClientRoots, graph.ClientRoot{Service: "cron", Operation: "GET", Requests: 3})
		},
		err: "client root cron GET (3 requests)",
	}, {
		// An operation of the client that calls nothing the topology
		// holds is still an entry, answered at once, and said so.
		name: "a client root that calls nothing",
		edit: func(tp *graph.Topology) {
			tp.Services[0].Operations = append(tp.Services[0].Operations, graph.Operation{Name: "HEAD", Count: 2, SelfQuantilesMS: tp.Services[0].Operations[0].SelfQuantilesMS})
			tp.Calibration.ClientRoots = append(tp.Calibration.ClientRoots, graph.ClientRoot{Service: "loadgen", Operation: "HEAD", Requests: 2})
		},
		workers: clientWorkers, maxAttemp: 4,
		notes: []string{"loadgen HEAD: a client's root operation that makes no call the topology holds: its 2 root requests are replayed as answered at once"},
	}, {
		name: "the traces' timeline",
		edit: func(tp *graph.Topology) {
			tl := &graph.ArrivalTimeline{Entries: []graph.TimelineEntry{{Service: "front", Operation: "GET /a", Requests: 10}, {Service: "loadgen", Operation: "GET", Requests: 12}},
				Requests: 22}
			// Every 40 ms; twelve to loadgen, ten to front: the odd ones
			// and the last two.
			tl.GapsUS, tl.Entry = make([]int64, 22), make([]int, 22)
			for i := range tl.Entry {
				tl.GapsUS[i] = 40_000
				if i%2 == 1 || i >= 20 {
					tl.Entry[i] = 1
				}
			}
			tp.Calibration.Arrivals = tl
		},
		opts:    BuildOptions{Timeline: true},
		workers: clientWorkers, maxAttemp: 4, arrivals: 12,
		notes:    []string{"arrivals: the traces' own timeline, not Poisson: their 22 root requests"},
		notNotes: []string{"root rate"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tp := clientTopology()
			if tc.edit != nil {
				tc.edit(tp)
			}
			m, err := FromTopology(tp, tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var lg, front = -1, -1
			for i, e := range m.Entry {
				switch m.Services[e.Service].Name + " " + m.Services[e.Service].Ops[e.Op].Name {
				case "loadgen GET":
					lg = i
				case "front GET /a":
					front = i
				}
			}
			if lg < 0 || front < 0 {
				t.Fatalf("entries %+v: want front's and loadgen's", m.Entry)
			}
			e := m.Entry[lg]
			op := m.Services[e.Service].Ops[e.Op]
			if op.Name != "GET" || e.Fail != nil || op.Time.Mean() != 0 || op.StopOnFailure != 0 {
				t.Errorf("loadgen's entry %+v op %q: time %g, stop on failure %g; want GET with no failures, work or stops of its own", e, op.Name, op.Time.Mean(), op.StopOnFailure)
			}
			if w := float64(tp.Calibration.ClientRoots[0].Requests); e.Weight != w {
				t.Errorf("loadgen's entry weight %g, want its %g calls", e.Weight, w)
			}
			if len(op.Calls) != 1 {
				t.Fatalf("loadgen GET makes %d calls, want 1", len(op.Calls))
			}
			if ed := m.Edges[op.Calls[0]]; ed.Repeat != 1 || ed.Prob != 1 || ed.Policy.MaxAttempts != tc.maxAttemp {
				t.Errorf("loadgen → api: %d calls with probability %g, up to %d attempts; want one call a request, up to %d", ed.Repeat, ed.Prob, ed.Policy.MaxAttempts, tc.maxAttemp)
			}
			if got := m.Services[e.Service].Workers; got != tc.workers {
				t.Errorf("loadgen: %d workers, want %d", got, tc.workers)
			}
			notes := strings.Join(m.Assumed, "\n")
			for _, n := range tc.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("no note says %q:\n%s", n, notes)
				}
			}
			for _, n := range tc.notNotes {
				if strings.Contains(notes, n) {
					t.Errorf("a note says %q:\n%s", n, notes)
				}
			}
			got := 0
			for _, a := range m.Arrivals {
				if a.Entry == lg {
					got++
				}
			}
			if got != tc.arrivals {
				t.Errorf("%d arrivals to loadgen's entry, want %d", got, tc.arrivals)
			}
			// Replayed, each root request to the client is one call.
			r, err := Run(m, nil, RunConfig{Seed: 1, Duration: 20})
			if err != nil {
				t.Fatal(err)
			}
			wantMech := "loadgen no limit on workers (a client's calls)"
			if tc.workers != clientWorkers {
				wantMech = fmt.Sprintf("loadgen %d workers,", tc.workers)
			}
			if note := r.Mechanics.String(); !strings.Contains(note, wantMech) {
				t.Errorf("mechanics %q, want %q", note, wantMech)
			}
			for _, a := range r.Attempts {
				if a.Edge == "loadgen→api" || strings.HasPrefix(a.Edge, "loadgen") {
					if calls := a.Attempts - a.Retries; calls == 0 || tc.maxAttemp == 1 && a.Retries != 0 {
						t.Errorf("%s: %d calls, %d retries replayed; want calls, and no retries where they are unknown", a.Edge, calls, a.Retries)
					}
				}
			}
		})
	}
}
