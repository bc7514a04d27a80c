package replay

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
)

// TestTimelineArrivals: a model built from a topology sends the root
// requests at the traces' own times and root operations only when asked
// (calibration asks); a what-if replay keeps Poisson at the observed rate
// times the load. Where the timeline cannot be replayed (none kept, or a
// head-sampled one, which is a thinned sample of the traffic), arrivals
// are Poisson and the notes say why.
func TestTimelineArrivals(t *testing.T) {
	base := sampleTopology(t, "cockatiel")
	tl := base.Calibration.Arrivals
	if tl == nil || tl.Requests != base.Calibration.Root.Requests {
		t.Fatalf("cockatiel's topology keeps timeline %+v; want its %d root requests", tl, base.Calibration.Root.Requests)
	}
	want, err := tl.Arrivals()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		edit     func(*graph.Topology)
		o        BuildOptions
		timeline bool
		note     string
	}{
		{name: "what-if replay", o: BuildOptions{Load: 2}, note: "root rate"},
		{name: "asked", o: BuildOptions{Timeline: true}, timeline: true, note: "arrivals: the traces' own timeline, not Poisson: their 75 root requests each at its traced offset"},
		{name: "asked, at load 2", o: BuildOptions{Timeline: true, Load: 2}, timeline: true, note: "load 2 compresses time"},
		{name: "none kept", edit: func(t *graph.Topology) { t.Calibration.Arrivals = nil }, o: BuildOptions{Timeline: true}, note: "the topology carries none"},
		{name: "head-sampled", edit: func(t *graph.Topology) {
			t.Calibration.Sampling = graph.Sampling{Probability: 0.5, Source: "tracestate th", Roots: t.Calibration.Root.Requests}
		}, o: BuildOptions{Timeline: true}, note: "the traces were head-sampled"},
		{name: "inconsistent", edit: func(t *graph.Topology) {
			bad := *t.Calibration.Arrivals
			bad.Requests++
			t.Calibration.Arrivals = &bad
		}, o: BuildOptions{Timeline: true}, note: "not their own timeline: arrival timeline: its 2 entries hold 75 root requests, not the 76"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := *base
			cal := *base.Calibration
			top.Calibration = &cal
			if tc.edit != nil {
				tc.edit(&top)
			}
			m, err := FromTopology(&top, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(m.Assumed, func(s string) bool { return strings.Contains(s, tc.note) }) {
				t.Errorf("no note with %q in %q", tc.note, m.Assumed)
			}
			load := max(tc.o.Load, 1)
			if !tc.timeline {
				if rate := cal.RootRatePerS / cal.Sampling.Probability * load; len(m.Arrivals) > 0 || math.Abs(m.Rate-rate) > 1e-9 {
					t.Fatalf("%d arrival times, rate %g/s: want Poisson at %g/s", len(m.Arrivals), m.Rate, rate)
				}
				return
			}
			if m.Rate != 0 || len(m.Arrivals) != len(want) || math.Abs(m.Period-cal.ArrivalWindowS/load) > 1e-9 {
				t.Fatalf("rate %g/s, %d arrival times every %gs; want the timeline's %d every %gs", m.Rate, len(m.Arrivals), m.Period, len(want), cal.ArrivalWindowS/load)
			}
			for i, a := range m.Arrivals {
				e := m.Entry[a.Entry]
				if math.Abs(a.At-want[i].AtS/load) > 1e-12 || m.Services[e.Service].Name != want[i].Service || m.Services[e.Service].Ops[e.Op].Name != want[i].Operation {
					t.Fatalf("arrival %d at %gs to entry %d; want %gs to %s %s", i, a.At, a.Entry, want[i].AtS/load, want[i].Service, want[i].Operation)
				}
			}
		})
	}
}

// TestCalibrateReplaysTimeline: calibration replays the traces' own
// arrivals and says so; cockatiel's balances came in a burst (38/s for
// 1.2 s, against a mean of 6.5/s) that keeps finding front's breaker open,
// which Poisson arrivals at the mean rate seldom do: its root server
// errors are well above the Poisson replay's. Without a timeline the
// calibration replays Poisson and says why.
func TestCalibrateReplaysTimeline(t *testing.T) {
	top := sampleTopology(t, "cockatiel")
	withTimeline, err := Calibrate(context.Background(), top, CalibrateOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cal := *top.Calibration
	cal.Arrivals = nil
	top.Calibration = &cal
	poisson, err := Calibrate(context.Background(), top, CalibrateOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if withTimeline.Arrivals != ArrivalsTimeline || poisson.Arrivals != ArrivalsPoisson {
		t.Errorf("arrivals %q and, without a timeline, %q; want %q and %q", withTimeline.Arrivals, poisson.Arrivals, ArrivalsTimeline, ArrivalsPoisson)
	}
	if !slices.ContainsFunc(poisson.Notes, func(s string) bool { return strings.Contains(s, "arrivals: Poisson at the traces' mean rate") }) {
		t.Errorf("the Poisson calibration does not say why: %q", poisson.Notes)
	}
	if d := withTimeline.Root.Replayed.ServerErrorRate - poisson.Root.Replayed.ServerErrorRate; d < 0.02 {
		t.Errorf("root server errors %.3f with the traces' arrivals, %.3f with Poisson: want the burst's breaker openings to add 2 points or more",
			withTimeline.Root.Replayed.ServerErrorRate, poisson.Root.Replayed.ServerErrorRate)
	}
}
