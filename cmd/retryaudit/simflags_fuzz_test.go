package main

import (
	"io"
	"math"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
	"github.com/spf13/pflag"
)

// FuzzSimFlags feeds arbitrary text to the simulator's numeric flags: the
// parse and the validation never panic, and what validates is finite and
// in range.
func FuzzSimFlags(f *testing.F) {
	for _, v := range []string{"1", "0", "-1", "NaN", "Inf", "-Inf", "1e308", "0x1p-1074", "2", "30s", "-5s", "1e999"} {
		f.Add("thrash", v)
		f.Add("cancel", v)
		f.Add("load", v)
		f.Add("rate", v)
		f.Add("duration", v)
		f.Add("max-events", v)
		f.Add("max-inflight", v)
		f.Add("open-clients", v)
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		var s simFlags
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		s.bind(fs)
		if fs.Lookup(name) == nil || fs.Set(name, value) != nil {
			return
		}
		if s.validate() != nil {
			return
		}
		for _, x := range []float64{s.thrash, s.cancel, s.load, s.rate, s.headroom} {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				t.Fatalf("--%s %q validated to %+v", name, value, s)
			}
		}
		if s.cancel > 1 || s.load <= 0 || s.headroom <= 0 || s.duration <= 0 || s.deadline <= 0 || s.maxEvents < 1 || s.maxInflight < 0 || s.openClients < 0 || s.openClients > replay.MaxOpenClients {
			t.Fatalf("--%s %q validated to %+v", name, value, s)
		}
	})
}
