package audit

import (
	"slices"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/replay"
)

// TestTwinsUnderFaults: policy retry-after replays as observed, and is
// run and searched once with it, under a degradation where no Retry-After
// reaches the one edge that retries (client → edge: a fault on the db
// behind it, the traces' own failures without Retry-After answers, a hang
// at the edge service), and on its own where one may (an outage failing
// fast at the edge service, or the
// shed modifier, which sheds at every service). Policy none is nobody's
// twin: it retries nowhere.
func TestTwinsUnderFaults(t *testing.T) {
	m := threeLayers(0.3, replay.Policy{MaxAttempts: 3, Backoff: replay.Backoff{Kind: "constant", Base: 0.005, Jitter: "none"}})
	m.Edges[1].Policy.MaxAttempts, m.Edges[2].Policy.MaxAttempts = 1, 1
	variants := func(policies ...string) []variant {
		var vs []variant
		for _, p := range policies {
			pm, err := replay.ApplyPolicy(m, p)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, variant{policy: p, model: pm})
		}
		return vs
	}
	outage := func(svc string) degrade.Schedule {
		return degrade.Schedule{{Kind: degrade.Outage, Service: svc, At: 10, For: 5, Mode: degrade.ModeError}}
	}
	tests := []struct {
		name     string
		policies []string
		faults   degrade.Schedule
		want     []int
	}{
		{"a fault behind the retrying edge", []string{"observed", "none", "retry-after"}, outage("db"), []int{0, 1, 0}},
		{"the traces' own failures", []string{"observed", "none", "retry-after"}, degrade.Schedule{{Kind: degrade.Observed}}, []int{0, 1, 0}},
		{"a hang at the retrying edge's callee", []string{"observed", "none", "retry-after"}, degrade.Schedule{{Kind: degrade.Outage, Service: "edge", At: 10, For: 5, Mode: degrade.ModeTimeout}}, []int{0, 1, 0}},
		{"a fault on the retrying edge's callee", []string{"observed", "none", "retry-after"}, outage("edge"), []int{0, 1, 2}},
		{"the callee sheds", []string{"shed", "none", "retry-after+shed"}, outage("db"), []int{0, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := twins(variants(tt.policies...), tt.faults); !slices.Equal(got, tt.want) {
				t.Errorf("twins = %v, want %v", got, tt.want)
			}
		})
	}
}
