package replay

import (
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
)

// TestLoadHoldsCapacity: --load multiplies arrivals only; the workers are
// what load 1 implies, and the notes say they are held.
func TestLoadHoldsCapacity(t *testing.T) {
	top := sampleTopology(t, "mixed")
	one, err := FromTopology(top, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eight, err := FromTopology(top, BuildOptions{Load: 8})
	if err != nil {
		t.Fatal(err)
	}
	if eight.Rate != 8*one.Rate {
		t.Errorf("rate %g at load 8, want 8 × %g", eight.Rate, one.Rate)
	}
	for i := range one.Services {
		if one.Services[i].Workers != eight.Services[i].Workers {
			t.Errorf("%s: %d workers at load 1, %d at load 8", one.Services[i].Name, one.Services[i].Workers, eight.Services[i].Workers)
		}
	}
	if !strings.Contains(strings.Join(eight.Assumed, "\n"), "held at any --load") {
		t.Errorf("notes do not say capacity is held: %q", eight.Assumed)
	}
}

// TestSamplingScalesRates: a 10% head sample replays ten times the rate
// and ten times the concurrency, and the notes say where 10% came from.
func TestSamplingScalesRates(t *testing.T) {
	top := sampleTopology(t, "incident")
	full, err := FromTopology(top, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tenth, err := FromTopology(top, BuildOptions{SampleRate: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if r := tenth.Rate / full.Rate; r < 9.999 || r > 10.001 {
		t.Errorf("rate ×%g at a 10%% sample, want ×10", r)
	}
	if !strings.Contains(strings.Join(tenth.Assumed, "\n"), "1/0.1, from --sample-rate") {
		t.Errorf("notes: %q", tenth.Assumed)
	}
	if !strings.Contains(strings.Join(full.Assumed, "\n"), "rates are lower bounds") {
		t.Errorf("unsampled traces without a probability should make the rates lower bounds: %q", full.Assumed)
	}
	if _, err := FromTopology(top, BuildOptions{SampleRate: 1.5}); err == nil {
		t.Error("sample rate 1.5 accepted")
	}
	// A topology whose roots carry their probability scales by it.
	top.Calibration.Sampling = graph.Sampling{Probability: 0.5, Source: "tracestate th", Roots: top.Calibration.Root.Requests}
	half, err := FromTopology(top, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := half.Rate / full.Rate; r < 1.999 || r > 2.001 {
		t.Errorf("rate ×%g at a 50%% sample read from the traces, want ×2", r)
	}
}

// TestUnbuildable: topologies no model can be built from are rejected with
// an error naming what is missing.
func TestUnbuildable(t *testing.T) {
	base := func() *graph.Topology {
		return &graph.Topology{Schema: graph.Schema, Source: graph.Source{RootRatePerS: 1, WindowS: 10},
			Services: []graph.Service{
				{Name: "a", Operations: []graph.Operation{{Name: "GET /a", Count: 1, P50MS: 1}}},
				{Name: "b", Operations: []graph.Operation{{Name: "GET /b", Count: 1, P50MS: 1}}},
			},
			Edges: []graph.Edge{
				{Caller: "user", Callee: "a", Operation: "GET /a", Calls: 1, Attempts: 1, MaxAttempts: 1},
				{Caller: "a", CallerOperation: "GET /a", Callee: "b", Operation: "GET /b", Calls: 1, Attempts: 1, MaxAttempts: 1},
			}}
	}
	cycle := base()
	cycle.Edges = append(cycle.Edges, graph.Edge{Caller: "b", CallerOperation: "GET /b", Callee: "a", Operation: "GET /a", Calls: 1, Attempts: 1, MaxAttempts: 1})
	noRoot := base()
	noRoot.Edges = noRoot.Edges[1:]
	zero := base()
	for i := range zero.Services {
		zero.Services[i].Operations[0].P50MS = 0
	}
	for _, c := range []struct {
		name string
		top  *graph.Topology
		want string
	}{
		{"cycle", cycle, "cycle, a GET /a → b GET /b → a GET /a"},
		{"no root", noRoot, "no root operation"},
		{"zero durations", zero, "takes zero time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromTopology(c.top, BuildOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	if _, err := FromTopology(base(), BuildOptions{}); err != nil {
		t.Errorf("the acyclic topology: %v", err)
	}
}

// TestObservedWaits: the observed policy waits as the traces waited (here
// a retry-go 15 ms delay that a busy host stretched up to 64 ms); policy
// everywhere keeps an edge's observed retries, waits included, and gives
// the edges that did not retry its own backoff, without them.
func TestObservedWaits(t *testing.T) {
	m, err := FromTopology(sampleTopology(t, "other-service-name"), BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var db *Edge
	for i := range m.Edges {
		if m.Services[m.Edges[i].Callee].Name == "db" {
			db = &m.Edges[i]
		}
	}
	if db == nil || db.Policy.Backoff.Observed == nil {
		t.Fatal("inventory → db has no observed waits")
	}
	rng := newRNG(1, 1)
	lo, hi := 1.0, 0.0
	for range 1000 {
		d := db.Policy.Backoff.Delay(1, 0, rng)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 0.014 || hi < 0.03 || hi > 0.1 {
		t.Errorf("waits before retry 1 from %gs to %gs; want 15 ms up to the tens of ms the traces show", lo, hi)
	}
	ev, err := ApplyPolicy(m, "everywhere")
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range ev.Edges {
		retried := m.Edges[i].Policy.MaxAttempts > 1
		if (e.Policy.Backoff.Observed != nil) != retried {
			t.Errorf("%s → %s: observed waits %v under everywhere; the edge retried in the traces: %v",
				ev.Services[e.Caller].Name, ev.Services[e.Callee].Name, e.Policy.Backoff.Observed != nil, retried)
		}
	}
}

// TestBreakerPerCall: a breaker around the call (retries inside it) is
// asked once per call and counts calls; one inside the retry loop counts
// attempts. Five calls 100 ms apart to a callee that always fails, three
// attempts each, a breaker that opens after three failures for 10 s.
func TestBreakerPerCall(t *testing.T) {
	for _, c := range []struct {
		perCall  bool
		attempts int
	}{
		{true, 9},  // three whole calls fail, then the breaker refuses the rest
		{false, 3}, // the first call's three attempts open it
	} {
		p := Policy{MaxAttempts: 3, Backoff: Backoff{Kind: "constant", Base: 0.001, Jitter: "none"},
			Breaker: BreakerConfig{ConsecutiveFailures: 3, OpenFor: 10, HalfOpenProbes: 1, PerCall: c.perCall}}
		m := single("db", 10, Constant(0.001), 0, 5, p)
		m.Edges[0].Fail = &Failures{First: Mix{Fail: 1}, Retry: Mix{Fail: 1}, FirstAfterFailure: Mix{Fail: 1},
			FirstAfterOtherFailure: Mix{Fail: 1}, RetryAfterDownstream: Mix{Fail: 1}, Propagate: 1}
		for i := range 5 {
			m.Arrivals = append(m.Arrivals, Arrival{At: 0.1 * float64(i)})
		}
		m.Period = 100
		r, err := Run(m, nil, RunConfig{Seed: 1, Duration: 1})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Attempts[0].Attempts; got != c.attempts {
			t.Errorf("per call %v: %d attempts, want %d", c.perCall, got, c.attempts)
		}
	}
}
