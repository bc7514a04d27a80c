package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
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

// TestRunCache: a run asked for again, with the same model or an equal
// copy of it, the same faults and configuration, is made once and gives
// the result of making it; a run that differs in any of them is made.
func TestRunCache(t *testing.T) {
	base := func() *replay.Model {
		return oneService(0.5, replay.Policy{MaxAttempts: 3, Backoff: replay.Backoff{Kind: "constant", Base: 0.005, Jitter: "none"}})
	}
	m := base()
	outage := degrade.Schedule{{Kind: degrade.Outage, Service: "server", At: 5, For: 2, Mode: degrade.ModeError}}
	cfg := replay.RunConfig{Seed: 1, Duration: 20}
	type ask struct {
		m      *replay.Model
		faults degrade.Schedule
		cfg    replay.RunConfig
	}
	honor := base()
	honor.Edges[0].Policy.HonorRetryAfter = true
	slower := base()
	slower.Services[1].Ops[0].Time = replay.Exponential{MeanS: 0.06}
	tests := []struct {
		name  string
		again ask
		runs  int
	}{
		{"the same model", ask{m, outage, cfg}, 1},
		{"an equal copy", ask{base(), slices.Clone(outage), cfg}, 1},
		{"another policy", ask{honor, outage, cfg}, 2},
		{"another service time", ask{slower, outage, cfg}, 2},
		{"another seed", ask{m, outage, replay.RunConfig{Seed: 2, Duration: 20}}, 2},
		{"other faults", ask{m, degrade.Schedule{{Kind: degrade.Outage, Service: "server", At: 5, For: 3, Mode: degrade.ModeError}}, cfg}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			made := 0
			p := newPool(func(done int) { made = done })
			p.cache = newRunCache()
			if _, err := p.run(context.Background(), m, outage, cfg); err != nil {
				t.Fatal(err)
			}
			got, err := p.run(context.Background(), tt.again.m, tt.again.faults, tt.again.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if made != tt.runs {
				t.Errorf("%d runs made, want %d", made, tt.runs)
			}
			want, err := replay.Run(tt.again.m, tt.again.faults, tt.again.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the result differs from a run of its own: %d events against %d", got.Events, want.Events)
			}
		})
	}
}

// TestShadowedAudit: an audit whose variants take their via's runs where
// their policies never act in them (planShadows) is the audit that runs
// every variant itself, byte for byte (JSON): on breaker, whose budget,
// budget-sized and none are idle in many runs (fewer runs are made), and
// on mixed, where under these faults every shadow acts and each variant
// runs its own.
func TestShadowedAudit(t *testing.T) {
	tests := []struct {
		sample string
		saves  bool
	}{{"breaker", true}, {"mixed", false}}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			var out [2][]byte
			var runs [2]int
			for k, off := range []bool{false, true} {
				cfg := sampleConfig(t, tt.sample, replay.BuildOptions{})
				target := Targets(cfg.Topology)[0]
				cfg.Degradations = slices.DeleteFunc(cfg.Degradations, func(d replay.Degradation) bool { return d.Faults[0].Service != target })[:2]
				cfg.Seeds, cfg.noShadows = 2, off
				cfg.Progress = func(done, _ int) { runs[k] = done }
				a, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if out[k], err = json.Marshal(a); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(out[0], out[1]) {
				t.Errorf("the audit with shadows differs from the audit without")
			}
			if saves := runs[0] < runs[1]; saves != tt.saves || runs[0] > runs[1] {
				t.Errorf("%d runs with shadows, %d without: want fewer %v", runs[0], runs[1], tt.saves)
			}
		})
	}
}
