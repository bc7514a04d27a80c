package audit

import (
	"math"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
)

func TestCapacity(t *testing.T) {
	storm, err := replay.NewPreset("storm", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Two operations of db visited once each per root request (one call,
	// and half the time two): the mean attempt takes 55 ms.
	mix := &replay.Model{
		Services: []replay.Service{
			{Name: "api", Workers: 100, Ops: []replay.Op{{Name: "h", Time: replay.Constant(0.001), Calls: []int{0, 1}}}},
			{Name: "db", Workers: 4, Ops: []replay.Op{{Name: "read", Time: replay.Constant(0.01)}, {Name: "scan", Time: replay.Constant(0.1)}}},
		},
		Edges: []replay.Edge{{Caller: 0, Callee: 1, CalleeOp: 0, Prob: 1, Repeat: 1}, {Caller: 0, Callee: 1, CalleeOp: 1, Prob: 0.5, Repeat: 2}},
		Entry: []replay.Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:  10,
	}
	closed := *mix
	closed.Clients, closed.Rate = 8, 0
	idle := *mix
	idle.Services = []replay.Service{{Name: "api", Workers: 100, Ops: []replay.Op{{Name: "h", Time: replay.Constant(0.001), Calls: []int{0}}}}, {Name: "db", Workers: 4, Ops: []replay.Op{{Name: "read", Time: replay.Constant(0)}}}}
	idle.Edges = mix.Edges[:1]
	for _, c := range []struct {
		name  string
		m     *replay.Model
		svc   string
		want  float64
		error string
	}{
		{"storm: 6 workers at 100 ms", storm.Matrix.Variants[0].Model, "server", 60, ""},
		{"operations weighted by visits", mix, "db", 4 / 0.055, ""},
		{"closed loop: the same mix", &closed, "db", 4 / 0.055, ""},
		{"no such service", mix, "cache", 0, `no service "cache"`},
		{"no time taken", &idle, "db", 0, "unbounded"},
	} {
		got, err := Capacity(c.m, c.svc)
		switch {
		case c.error != "" && (err == nil || !strings.Contains(err.Error(), c.error)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.error)
		case c.error == "" && (err != nil || math.Abs(got-c.want) > 1e-9*c.want):
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
