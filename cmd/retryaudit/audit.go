package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/report"
)

type auditOptions struct {
	io         *streams
	inputs     []string
	policies   []string
	degrade    []string
	format     string
	output     string
	html, md   string
	emitPolicy string
	quiet      bool
	failOn     []string
	thresholds []threshold
	sim        simFlags
	tol        toleranceFlags
	in         inputFlags
}

func newAuditCmd(io *streams) *cobra.Command {
	opts := &auditOptions{io: io}
	cmd := &cobra.Command{
		Use:   "audit FILE|DIR|- ...",
		Short: "From trace files to a decision: infer, replay the standard matrix, recommend",
		Long: `Ingest the traces, infer the retry topology, replay every default
degradation (outage, slow-shard, hot-partition, packet-loss, db-pool) of the
dependencies that matter (the deepest retried dependency, the most amplified
one, every database or cache) under the policies observed, none, everywhere,
edge-only, idempotent-only, hedge-p95, budget and retry-after, and report:
the worst-case amplification, the topology and its findings, per degradation
a comparison against the observed policies, and a recommendation — the
policy with the best yield that never stays collapsed, and what it changes
edge by edge.

--fail-on makes the command exit 3 after its report when a threshold is
crossed: 'amplification>N' (or >=), finding:ID, metastable:POLICY (or
metastable:any), uncalibrated. Quote expressions with > in them: unquoted,
the shell reads > as a redirection and writes a file.

Before anything is recommended, the replay of the observed policies under
the traces' own failure timeline must reproduce the traces (as
'retryaudit calibrate' checks): the calibration is the first section after
the worst-case line, and when the model misses, the recommendation is
printed as uncalibrated with the misses listed. The traces' own timeline
(degradation "observed") is the first degradation of the matrix; every
other one applies on top of the healthy part of the traces' failures.

Finding ids:
  ` + strings.Join(graph.FindingIDs(), "\n  "),
		Example: `  retryaudit audit samples/mixed/traces.otlp.jsonl.gz --html report.html --md report.md
  retryaudit audit traces/ --emit-policy policy.yaml --fail-on 'amplification>10' --fail-on metastable:observed
  retryaudit audit http://jaeger:16686 --service checkout --lookback 2h --fail-on finding:retry-4xx`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.inputs = args
			if err := checkFormat(opts.format, "table", "json"); err != nil {
				return err
			}
			for _, e := range opts.failOn {
				t, err := parseThreshold(e)
				if err != nil {
					return usageError{err}
				}
				opts.thresholds = append(opts.thresholds, t)
			}
			if err := opts.sim.validate(); err != nil {
				return err
			}
			if err := opts.in.validate(); err != nil {
				return err
			}
			return runAudit(cmd, opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.policies, "policy", nil, "policy `EXPR` to compare (repeatable; replaces the default set)")
	f.StringArrayVar(&opts.degrade, "degrade", nil, "degradation `SPEC` (repeatable; replaces the default matrix)")
	f.StringVar(&opts.format, "format", "table", "output format: table or json (the topology and all results)")
	f.StringVarP(&opts.output, "output", "o", "", "write the output to `FILE` instead of stdout")
	f.StringVar(&opts.html, "html", "", "also write a self-contained HTML report to `FILE`")
	f.StringVar(&opts.md, "md", "", "also write a Markdown report to `FILE`")
	f.StringVar(&opts.emitPolicy, "emit-policy", "", "write the recommended change as a YAML policy `FILE` (replay --policy-file reads it)")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress bars")
	f.StringArrayVar(&opts.failOn, "fail-on", nil, "exit 3 when `EXPR` holds: 'amplification>N' (quoted), finding:ID, metastable:POLICY, uncalibrated")
	opts.tol.bind(cmd)
	opts.sim.bind(f)
	opts.in.bind(f)
	return cmd
}

func runAudit(cmd *cobra.Command, o *auditOptions) error {
	set, err := o.read(cmd)
	if err != nil {
		return err
	}
	top := graph.Infer(set)
	cal, err := calibrate(cmd, top, o.sim.modelFlags, o.tol, replay.DefaultCalibrationSeeds)
	if err != nil {
		return err
	}
	m, err := o.sim.model(top, replay.BuildOptions{})
	if err != nil {
		return err
	}
	exprs := o.policies
	if len(exprs) == 0 {
		exprs = replay.StandardPolicies
	}
	// observed is the baseline of the comparison, none the reference of yield.
	exprs = append([]string{"observed", "none"}, exprs...)
	variants, models, err := o.sim.variants(m, exprs)
	if err != nil {
		return err
	}
	var degr []replay.Degradation
	if len(o.degrade) > 0 {
		degr, err = degradations(o.degrade)
	} else {
		degr, err = replay.AuditDegradations(replay.AuditTargets(top), m)
	}
	if err != nil {
		return err
	}
	if len(degr) == 0 {
		return usageError{fmt.Errorf("the topology has no dependency to degrade: give --degrade")}
	}
	// The traces' own failure timeline is the first degradation.
	degr = append([]replay.Degradation{{Name: string(degrade.Observed), Faults: degrade.Schedule{{Kind: degrade.Observed}}}}, degr...)
	bar := newProgress(o.io, o.quiet, int64(len(variants)*len(degr)+1), "replay", false)
	mx := replay.Matrix{Variants: variants, Degradations: degr, Config: o.sim.config(),
		Progress: func(done, _ int) { bar.set(int64(done)) }}
	results, err := mx.Run()
	bar.done()
	if err != nil {
		return err
	}
	a := &report.AuditReport{Schema: report.AuditSchema, Topology: top, Calibration: cal,
		Replay:         &report.ReplayReport{Schema: report.ReplaySchema, Baseline: "observed", Notes: slices.Concat(m.Assumed, mechanicsNotes(results)), Runs: results},
		Recommendation: replay.Recommend(results, models, models["observed"])}
	if err := writeAudit(o.io, o.output, o.format, o.html, o.md, a); err != nil {
		return err
	}
	if o.emitPolicy != "" && a.Recommendation.Policy != "" {
		data, err := replay.EmitPolicyFile(models["observed"], models[a.Recommendation.Policy]).Marshal()
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.emitPolicy, data, 0o644); err != nil {
			return err
		}
	}
	return crossed(o.thresholds, a)
}

// read ingests the inputs with a progress bar of bytes read.
func (o *auditOptions) read(cmd *cobra.Command) (*ingest.Set, error) {
	bar := newProgress(o.io, o.quiet, inputBytes(o.inputs), "ingest", true)
	set, err := o.in.read(cmd.Context(), o.io, o.inputs, bar.set)
	bar.done()
	return set, err
}

// writeAudit renders the report files, then the audit to -o (table or
// JSON): the files are complete even when stdout is a pipe closed early
// (audit --html r.html | head).
func writeAudit(st *streams, output, format, html, md string, a *report.AuditReport) error {
	for _, f := range []struct {
		name   string
		render func(io.Writer, *report.AuditReport) error
	}{{html, report.AuditHTML}, {md, report.AuditMarkdown}} {
		if f.name == "" {
			continue
		}
		if err := writeFile(f.name, func(w io.Writer) error { return f.render(w, a) }); err != nil {
			return err
		}
	}
	w, closeOut, err := outputFile(st, output)
	if err != nil {
		return err
	}
	if format == "json" {
		err = report.JSON(w, a)
	} else {
		err = report.AuditTable(w, a)
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	return closedStdoutIsFine(err)
}

func writeFile(name string, render func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := render(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
