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
