package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/report"
)

type calibrateOptions struct {
	io       *streams
	inputs   []string
	topology string
	seeds    int
	format   string
	output   string
	tol      toleranceFlags
	model    modelFlags
	in       inputFlags
}

// toleranceFlags bind the calibration tolerances.
type toleranceFlags struct {
	attemptsRel, attemptsAbs, serverErrorPoints, latencyRel float64
}

func (t *toleranceFlags) bind(cmd *cobra.Command) {
	d := replay.DefaultTolerances()
	f := cmd.Flags()
	f.Float64Var(&t.attemptsRel, "tol-attempts", d.AttemptsRel, "attempts per call within max(this × traced, --tol-attempts-abs)")
	f.Float64Var(&t.attemptsAbs, "tol-attempts-abs", d.AttemptsAbs, "attempts per call within at least this much")
	f.Float64Var(&t.serverErrorPoints, "tol-server-error", 100*d.ServerErrorPoints, "root server-error rate within this many percentage points")
	f.Float64Var(&t.latencyRel, "tol-latency", d.LatencyRel, "root p50 and p90 within this share of the traced ones")
}

func (t *toleranceFlags) tolerances() (replay.Tolerances, error) {
	for _, v := range []float64{t.attemptsRel, t.attemptsAbs, t.serverErrorPoints, t.latencyRel} {
		if !(v >= 0) || v > 1e6 {
			return replay.Tolerances{}, usageError{fmt.Errorf("tolerances must be 0 or more")}
		}
	}
	return replay.Tolerances{AttemptsRel: t.attemptsRel, AttemptsAbs: t.attemptsAbs,
		ServerErrorPoints: t.serverErrorPoints / 100, LatencyRel: t.latencyRel}, nil
}

var calibrationRenderers = map[string]func(io.Writer, *replay.Calibration) error{
	"table":    report.CalibrationTable,
	"markdown": report.CalibrationMarkdown,
	"json":     report.CalibrationJSON,
}

func newCalibrateCmd(io *streams) *cobra.Command {
	opts := &calibrateOptions{io: io}
	cmd := &cobra.Command{
		Use:   "calibrate [FILE|DIR|- ...]",
		Short: "Check that the model built from the traces reproduces them",
		Long: `Replay the observed policies under the traces' own failure timeline (the
observed degradation) over several seeds and print, traced beside replayed:
per edge and operation calls, attempts, attempts per call and failure rate;
for the root requests their number, success rate, server-error rate (5xx or
error status: a 4xx is the client's error), p50, p90 and p99. Each row is
marked within tolerance or not, and a verdict line says whether the model
reproduces the traces. Replayed figures are means over the seeds, scaled to
the traced number of root requests.

The topology comes from trace files or from --topology. The command exits 3
after its report when the model misses.`,
		Example: `  retryaudit calibrate samples/mixed/traces.otlp.jsonl.gz
  retryaudit calibrate traces/ --sample-rate 0.1 --format json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.inputs = args
			if err := checkFormat(opts.format, "table", "markdown", "json"); err != nil {
				return err
			}
			if (len(opts.inputs) > 0) == (opts.topology != "") {
				return usageError{fmt.Errorf("give trace files or --topology FILE (exactly one)")}
			}
			if opts.seeds < 1 || opts.seeds > 1000 {
				return usageError{fmt.Errorf("--seeds %d: want 1 to 1000", opts.seeds)}
			}
			if err := opts.model.validate(); err != nil {
				return err
			}
			if err := opts.in.validate(); err != nil {
				return err
			}
			return runCalibrate(cmd, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.topology, "topology", "", "read the topology from `FILE` (infer --format json) instead of traces")
	f.IntVar(&opts.seeds, "seeds", replay.DefaultCalibrationSeeds, "how many seeds to average over (seeds --seed, --seed+1, …)")
	f.StringVar(&opts.format, "format", "table", "output format: table, markdown or json")
	f.StringVarP(&opts.output, "output", "o", "", "write the output to `FILE` instead of stdout")
	opts.tol.bind(cmd)
	opts.model.bind(f)
	opts.in.bind(f)
	return cmd
}

func runCalibrate(cmd *cobra.Command, o *calibrateOptions) error {
	top, _, err := loadTopology(cmd, o.io, &o.in, o.inputs, o.topology, false)
	if err != nil {
		return err
	}
	c, err := calibrate(cmd, top, o.model, o.tol, o.seeds)
	if err != nil {
		return err
	}
	w, closeOut, err := outputFile(o.io, o.output)
	if err != nil {
		return err
	}
	err = calibrationRenderers[o.format](w, c)
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if !c.Pass {
		return exitError{code: exitThreshold, err: fmt.Errorf("uncalibrated: the model misses %d of the traced figures (see misses)", len(c.Misses))}
	}
	return nil
}

// calibrate runs the calibration of a topology as the flags shape it.
func calibrate(cmd *cobra.Command, top *graph.Topology, mf modelFlags, tf toleranceFlags, seeds int) (*replay.Calibration, error) {
	tol, err := tf.tolerances()
	if err != nil {
		return nil, err
	}
	b, err := mf.build(replay.BuildOptions{})
	if err != nil {
		return nil, err
	}
	return replay.Calibrate(cmd.Context(), top, replay.CalibrateOptions{Seeds: seeds, Seed: mf.seed, Tolerances: &tol, Build: b})
}
