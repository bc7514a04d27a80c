package replay

import (
	"context"
	"reflect"
	"testing"
)

// instancesModel is a client run as n instances (Service.Instances) whose
// 30 requests, 10 ms apart, call a server over an edge whose breaker
// opens after 3 failures for the rest of the run; perCall: the breaker
// wraps the call (2 attempts), else each attempt (1).
func instancesModel(n int, perCall bool) *Model {
	p := Policy{MaxAttempts: 1, Breaker: BreakerConfig{ConsecutiveFailures: 3, OpenFor: 1000, PerCall: perCall}}
	if perCall {
		p.MaxAttempts = 2
	}
	m := single("server", 1000, Constant(0.001), 0, 0, p)
	m.Services[0].Instances = n
	for k := range 30 {
		m.Arrivals = append(m.Arrivals, Arrival{At: 0.01 * float64(k+1)})
	}
	m.Period = 10
	return m
}

// TestBreakerPerInstance: each instance of a caller keeps its own breaker.
// The server is down for the whole run: a breaker that counted every
// instance's failures would open after the first 3 calls of them all;
// one per instance opens after 3 of its own, while the others still send
// theirs, so 3 calls per instance go out and the rest are refused. With
// the breaker around the call, each call sent makes both its attempts.
// A breaker a policy adds (DefaultBreaker: 5 failures) is one per
// instance too.
func TestBreakerPerInstance(t *testing.T) {
	faults := schedule("outage:svc=server,at=0s,for=100s,mode=error")
	for _, tc := range []struct {
		name      string
		instances int
		perCall   bool
		policy    string // a policy expression applied to the model without its breaker
		calls     int    // calls sent (each opens the breaker one failure nearer)
	}{
		{"not known: one breaker", 0, false, "", 3},
		{"one instance", 1, false, "", 3},
		{"three instances", 3, false, "", 9},
		{"four instances, breaker around the call", 4, true, "", 12},
		{"more instances than three requests each", 12, false, "", 30},
		{"policy breaker, one instance", 1, false, "none+breaker", 5},
		{"policy breaker, three instances", 3, false, "none+breaker", 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := instancesModel(tc.instances, tc.perCall)
			if tc.policy != "" {
				m.Edges[0].Policy.Breaker = BreakerConfig{}
				var err error
				if m, err = ApplyPolicy(m, tc.policy); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Run(m, faults, RunConfig{Seed: 1, Duration: 1})
			if err != nil {
				t.Fatal(err)
			}
			attempts := tc.calls
			if tc.perCall {
				attempts *= 2
			}
			if got := r.Attempts[0].Attempts; got != attempts || r.RefusedByBreaker != 30-tc.calls {
				t.Errorf("%d attempts sent, %d calls refused by the breakers; want %d and %d", got, r.RefusedByBreaker, attempts, 30-tc.calls)
			}
		})
	}
}

// TestOneInstanceAsBefore: a caller of one instance (Instances 1) runs
// exactly as one whose instances are not known (0), jittered breaker and
// all: same draws, same result.
func TestOneInstanceAsBefore(t *testing.T) {
	faults := schedule("outage:svc=server,at=2s,for=3s,mode=error")
	var rs [2]Result
	for n := range rs {
		m := single("server", 8, Exponential{MeanS: 0.01}, 200, 1, Policy{MaxAttempts: 3,
			Breaker: BreakerConfig{ConsecutiveFailures: 5, OpenFor: 0.2, Jitter: 0.3}})
		m.Services[0].Instances = n
		r, err := Run(m, faults, RunConfig{Seed: 7, Duration: 10})
		if err != nil {
			t.Fatal(err)
		}
		rs[n] = r
	}
	if rs[0].RefusedByBreaker == 0 {
		t.Fatal("the breaker never refused a call: the case shows nothing")
	}
	if !reflect.DeepEqual(rs[0], rs[1]) {
		t.Errorf("one instance runs otherwise than instances not known: refused %d vs %d, attempts %+v vs %+v",
			rs[1].RefusedByBreaker, rs[0].RefusedByBreaker, rs[1].Attempts, rs[0].Attempts)
	}
}

// TestCalibrateBreakerInstances: breaker-instances' api runs as three
// instances, each with a gobreaker of its own. Replayed with one breaker
// per instance, api → inventory's attempts per call are within tolerance;
// with one for the edge (--instances api=1) its breaker opens on all three
// instances' failures together, refuses retries, and they miss.
func TestCalibrateBreakerInstances(t *testing.T) {
	top := sampleTopology(t, "breaker-instances")
	for _, tc := range []struct {
		instances map[string]int
		within    bool
	}{{nil, true}, {map[string]int{"api": 1}, false}} {
		c, err := Calibrate(context.Background(), top, CalibrateOptions{Seed: 1, Build: BuildOptions{Instances: tc.instances}})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range c.Edges {
			if e.Caller == "api" && e.Callee == "inventory" {
				found = true
				if e.Within != tc.within {
					t.Errorf("instances %v: api → inventory %.3f attempts per call replayed vs %.3f traced: within %v, want %v",
						tc.instances, e.Replayed.AttemptsPerCall, e.Traced.AttemptsPerCall, e.Within, tc.within)
				}
			}
		}
		if !found {
			t.Fatal("no api → inventory edge calibrated")
		}
	}
}
