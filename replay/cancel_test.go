package replay

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// cancelAfter is a context whose Err is nil for its first n calls and
// context.Canceled from then on: a cancellation that arrives at a known
// point of a run, whatever the machine's speed.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestCancelledRuns: the long calls of the replay stop when their context
// is cancelled mid-run (issue 12 item 15: a replay's matrix took no
// context, so Ctrl-C could only kill the process from outside).
func TestCancelledRuns(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"matrix", func(ctx context.Context) error {
			m := chain()
			none, err := ApplyPolicy(m, "none")
			if err != nil {
				return err
			}
			mx := Matrix{Variants: []Variant{{Policy: "observed", Model: m}, {Policy: "none", Model: none}},
				Degradations: []Degradation{{Name: "none"}}, Config: RunConfig{Seed: 1, Duration: 600}}
			_, err = mx.RunContext(ctx)
			return err
		}},
		{"calibration", func(ctx context.Context) error {
			_, err := Calibrate(ctx, sampleTopology(t, "mixed"), CalibrateOptions{Seed: 1, Seeds: 1})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := &cancelAfter{Context: context.Background()}
			ctx.n.Store(1) // the first check passes: the cancel comes inside a run
			if err := tc.run(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want the context's error", err)
			}
		})
	}
}
