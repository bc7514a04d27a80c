package graph

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestBreakerInstances: gateway runs as several instances, each with a
// breaker of its own (or none), whose overlapping requests interleave on
// one edge. Read per instance, the edge's breaker sums what each did and
// says how many instances showed one; where the spans name no instance
// the edge reads as one breaker, as before.
func TestBreakerInstances(t *testing.T) {
	down := [][2]float64{{100, 260}, {400, 490}, {600, 640}}
	downB := [][2]float64{{180, 330}, {520, 600}, {700, 760}}
	// short: long outages and ones of about four calls an instance.
	short := [][2]float64{{100, 260}, {330, 352}, {400, 490}, {550, 572}, {640, 700}, {740, 762}}
	// inst is one instance's traffic: a request every 6ms ±50% for 800ms,
	// 8ms calls; threshold 0 for no breaker.
	inst := func(name string, from float64, threshold int, openMS float64, down [][2]float64, seed uint64) concTraffic {
		return concTraffic{gap: 6, spread: 0.5, span: 800, down: down, threshold: threshold, openMS: openMS, seed: seed,
			callMS: 8, checkAfter: 1, instance: name, from: from}
	}
	for _, tc := range []struct {
		name      string
		instances []concTraffic
		// want: detected; the rule (TripConsecutive, TripUnknown); the
		// instances that showed a breaker and that called (nil: none named);
		// what Unknown must mention.
		want     bool
		rule     string
		inst     *BreakerInstances
		unknowns []string
	}{
		{"two instances, one trips, the other has no breaker",
			[]concTraffic{inst("gw-a", 0, 3, 30, down, 1), inst("gw-b", 3, 0, 0, down, 2)},
			true, TripConsecutive, &BreakerInstances{WithBreaker: 1, Calling: 2}, nil},
		{"two instances trip at different times",
			[]concTraffic{inst("gw-a", 0, 3, 30, down, 3), inst("gw-b", 3, 3, 30, downB, 4)},
			true, TripConsecutive, &BreakerInstances{WithBreaker: 2, Calling: 2}, nil},
		{"three instances, one breaker each, the same outages",
			[]concTraffic{inst("gw-a", 0, 3, 30, down, 5), inst("gw-b", 2, 3, 30, down, 6), inst("gw-c", 4, 3, 30, down, 7)},
			true, TripConsecutive, &BreakerInstances{WithBreaker: 3, Calling: 3}, nil},
		{"two instances without breakers",
			[]concTraffic{inst("gw-a", 0, 0, 0, down, 8), inst("gw-b", 3, 0, 0, down, 9)},
			false, "", &BreakerInstances{WithBreaker: 0, Calling: 2}, nil},
		{"two instances open for 30ms and 120ms",
			[]concTraffic{inst("gw-a", 0, 3, 30, down, 10), inst("gw-b", 3, 3, 120, down, 11)},
			true, TripConsecutive, &BreakerInstances{WithBreaker: 2, Calling: 2}, []string{"open time"}},
		{"two instances trip after 3 and after 6 failures in a row",
			[]concTraffic{inst("gw-a", 0, 3, 30, short, 13), inst("gw-b", 3, 6, 30, short, 14)},
			true, TripUnknown, &BreakerInstances{WithBreaker: 2, Calling: 2}, []string{"trip rule", "3 on gw-a, 6 on gw-b"}},
		{"no instance named: one breaker, read as today",
			[]concTraffic{inst("", 0, 3, 30, down, 12)},
			true, TripConsecutive, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			var truth concTruth
			for i, c := range tc.instances {
				if i > 0 {
					b.newTrace()
				}
				x := c.build(b)
				truth.fastFailed += x.fastFailed
				truth.openPeriods += x.openPeriods
			}
			tp := b.infer()
			br := edge(t, tp, "gateway", "payments").Breaker
			if br == nil {
				t.Fatal("no breaker read")
			}
			if !tc.want {
				if br.Detected {
					t.Fatalf("breaker %+v detected where there is none", *br)
				}
				if !slices.Contains(findingIDs(tp), FindingNoBreaker) {
					t.Errorf("no no-circuit-breaker finding (breaker %+v)", *br)
				}
			} else {
				if truth.openPeriods < 3 {
					t.Fatalf("the simulated breakers opened %d times: the case shows too little", truth.openPeriods)
				}
				got := [3]int{br.FastFailedCalls, br.OpenPeriods, br.TripAfter}
				want := [3]int{truth.fastFailed, truth.openPeriods, 3}
				if !br.Detected || got != want || br.TripRule != tc.rule {
					t.Errorf("detected %v, fast failed, open periods, trip after %v (%s), want %v (%s)", br.Detected, got, br.TripRule, want, tc.rule)
				}
				if open := tc.instances[0].openMS; tc.unknowns == nil && math.Abs(br.OpenMS-open) > 0.15*open {
					t.Errorf("open %.3fms, want %.0fms within 15%%", br.OpenMS, open)
				}
			}
			switch {
			case tc.inst == nil && br.Instances != nil:
				t.Errorf("instances %+v where none is named", *br.Instances)
			case tc.inst == nil:
			case br.Instances == nil:
				t.Errorf("no instances, want %+v", *tc.inst)
			case br.Instances.WithBreaker != tc.inst.WithBreaker || br.Instances.Calling != tc.inst.Calling:
				t.Errorf("instances %+v, want %d with a breaker of %d calling", *br.Instances, tc.inst.WithBreaker, tc.inst.Calling)
			}
			// The service knows its instances whether or not a breaker
			// shows: as many as called, 0 where none is named.
			wantN := 0
			if tc.inst != nil {
				wantN = tc.inst.Calling
			}
			if n := service(t, tp, "gateway").Instances; n != wantN {
				t.Errorf("gateway: %d instances, want %d", n, wantN)
			}
			if br.Instances != nil {
				all := strings.Join(br.Instances.Unknown, "; ")
				for _, u := range tc.unknowns {
					if !strings.Contains(all, u) {
						t.Errorf("unknown %q, want it to name %q", all, u)
					}
				}
				if tc.unknowns == nil && all != "" {
					t.Errorf("unknown %q where the instances agree", all)
				}
			}
		})
	}
}

// service returns the topology's service named name.
func service(t *testing.T, tp *Topology, name string) Service {
	t.Helper()
	for _, s := range tp.Services {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no service %s", name)
	return Service{}
}
