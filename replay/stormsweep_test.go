package replay

import (
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
)

// TestStormSweep reproduces the rows of the README's "The storm's
// mechanisms swept" table that name one setting: the storm preset with its
// server's service time, thrash and cancellation (or the triggers' outage
// mode, or its clients' lines) replaced, seeds 1–20, and
// for immediate, backoff and backoff+jitter how many seeds recover after
// the 1 s blip and stay collapsed after the 3 s outage (`go test ./replay
// -run TestStormSweep -v` prints them).
func TestStormSweep(t *testing.T) {
	policies := []string{"immediate", "backoff", "backoff+jitter"}
	for _, row := range []struct {
		name    string
		service Dist
		thrash  float64
		cancel  float64
		running bool
		// blipMode and outageMode replace the triggers' outage mode
		// (empty: the preset's, which hangs).
		blipMode, outageMode string
		recovered            [3]int // after the 1 s blip, of 20
		collapsed            [3]int // after the 3 s outage, of 20
		// clients and inflight replace the model's OpenClients and
		// MaxInflight (0, 0: the preset's, one client with no limit).
		clients, inflight int
	}{
		{"constant (the preset)", Constant(stormService), 0, 0, false, "", "", [3]int{2, 11, 9}, [3]int{20, 20, 20}, 0, 0},
		{"constant, cancel 1 running stops", Constant(stormService), 0, 1, true, "", "", [3]int{10, 15, 13}, [3]int{20, 20, 20}, 0, 0},
		{"exponential, cancel 0.5 stops", Exponential{MeanS: stormService}, 0, 0.5, true, "", "", [3]int{10, 20, 20}, [3]int{20, 20, 20}, 0, 0},
		{"exponential, cancel 0.7 stops", Exponential{MeanS: stormService}, 0, 0.7, true, "", "", [3]int{20, 20, 20}, [3]int{17, 8, 16}, 0, 0},
		{"exponential, thrash 0.02, cancel 0.7 stops", Exponential{MeanS: stormService}, 0.02, 0.7, true, "", "", [3]int{18, 20, 20}, [3]int{20, 17, 20}, 0, 0},
		{"exponential, thrash 0.035, cancel 0.76 stops", Exponential{MeanS: stormService}, 0.035, 0.76, true, "", "", [3]int{19, 20, 20}, [3]int{18, 17, 19}, 0, 0},
		{"exponential, thrash 0.05, cancel 0.8 stops", Exponential{MeanS: stormService}, 0.05, 0.8, true, "", "", [3]int{19, 20, 19}, [3]int{16, 15, 18}, 0, 0},
		{"exponential, thrash 0.05, cancel 0.85 stops", Exponential{MeanS: stormService}, 0.05, 0.85, true, "", "", [3]int{20, 20, 20}, [3]int{1, 1, 1}, 0, 0},
		// The triggers' mode: a blip that fails fast is absorbed, but an
		// outage that fails fast lets immediate retries spend all six
		// attempts inside it, so no one mode gives both halves.
		{"constant, the blip fails fast", Constant(stormService), 0, 0, false, degrade.ModeError, "", [3]int{20, 17, 18}, [3]int{20, 20, 20}, 0, 0},
		{"constant, both fail fast", Constant(stormService), 0, 0, false, degrade.ModeError, degrade.ModeError, [3]int{20, 17, 18}, [3]int{0, 20, 20}, 0, 0},
		// "Fifty clients": one line of 50 in flight never binds; 50
		// clients with one request (and its retries) in flight each make
		// the blip recover, but close the loop, so backoff slows the
		// clients and the outage no longer holds them collapsed (the
		// article's own point: backoff helps in closed systems).
		{"constant, one client, 50 in flight", Constant(stormService), 0, 0, false, "", "", [3]int{2, 11, 9}, [3]int{20, 20, 20}, 0, 50},
		{"constant, 50 clients, one in flight each", Constant(stormService), 0, 0, false, "", "", [3]int{18, 20, 20}, [3]int{20, 13, 16}, 50, 1},
	} {
		t.Run(row.name, func(t *testing.T) {
			var recovered, collapsed [3]int
			for seed := uint64(1); seed <= 20; seed++ {
				p, err := NewPreset("storm", 1, seed)
				if err != nil {
					t.Fatal(err)
				}
				for i := range p.Matrix.Variants {
					m := p.Matrix.Variants[i].Model
					s := &m.Services[1]
					s.Ops[0].Time, s.Thrash, s.CancelProb, s.CancelRunning = row.service, row.thrash, row.cancel, row.running
					m.OpenClients, m.MaxInflight = row.clients, row.inflight
				}
				for i, mode := range []string{row.blipMode, row.outageMode} {
					if mode != "" {
						p.Matrix.Degradations[i].Faults = schedule("outage:svc=server,at=10s,for=" + []string{"1s", "3s"}[i] + ",mode=" + mode)
					}
				}
				res, err := p.Matrix.Run()
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					for k, pol := range policies {
						switch {
						case r.Policy != pol:
						case r.Degradation == "blip 1s" && !r.Metastable && r.RecoveryS != nil:
							recovered[k]++
						case r.Degradation == "outage 3s" && r.Metastable:
							collapsed[k]++
						}
					}
				}
			}
			t.Logf("blip 1 s recovered %v, outage 3 s collapsed %v (immediate, backoff, backoff+jitter; of 20)", recovered, collapsed)
			if recovered != row.recovered || collapsed != row.collapsed {
				t.Errorf("recovered %v, collapsed %v; the README says %v, %v", recovered, collapsed, row.recovered, row.collapsed)
			}
		})
	}
}
