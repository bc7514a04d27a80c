package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/policyfile"
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
	policyFmt  string
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

--emit-policy FILE writes the recommended policy of every edge in the
vocabulary of --policy-format: an Envoy RouteConfiguration and Clusters, Istio
VirtualServices and DestinationRules, Gateway API routes with Linkerd's
annotations, a gRPC service config per callee (FILE.CALLEE.json when there are
several), or retryaudit's own YAML; what the vocabulary cannot express is a
comment in the file and a note in the report. With --policy-file, findings
also compare the configured policy with what the traces show.

--fail-on makes the command exit 3 after its report when a threshold is
crossed: amplification>N, finding:ID, metastable:POLICY (or metastable:any),
uncalibrated.

Before anything is recommended, the replay of the observed policies under
the traces' own failure timeline must reproduce the traces (as
'retryaudit calibrate' checks): the calibration is the first section after
the worst-case line, and when the model misses, the recommendation is
printed as uncalibrated with the misses listed. The traces' own timeline
(degradation "observed") is the first degradation of the matrix; every
other one applies on top of the healthy part of the traces' failures.`,
		Example: `  retryaudit audit samples/mixed/traces.otlp.jsonl.gz --html report.html --md report.md
  retryaudit audit traces/ --emit-policy policy.yaml --fail-on amplification>10 --fail-on metastable:observed
  retryaudit audit traces/ --emit-policy routes.yaml --policy-format envoy
  retryaudit audit traces/ --policy-file virtualservice.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.inputs = args
			if err := checkFormat(opts.format, "table", "json"); err != nil {
				return err
			}
			if _, err := policyfile.ParseFormat(opts.policyFmt); err != nil {
				return usageError{fmt.Errorf("--policy-format: %w", err)}
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
	f.StringVar(&opts.emitPolicy, "emit-policy", "", "write the recommended policy of every edge to `FILE`, in --policy-format (--policy-file reads it back)")
	f.StringVar(&opts.policyFmt, "policy-format", string(policyfile.FormatNative), "vocabulary of --emit-policy: envoy, istio, linkerd, grpc or native")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress bars")
	f.StringArrayVar(&opts.failOn, "fail-on", nil, "exit 3 when `EXPR` holds: amplification>N, finding:ID, metastable:POLICY, uncalibrated")
	opts.tol.bind(cmd)
	opts.sim.bind(f)
	opts.in.bind(f)
	_ = cmd.RegisterFlagCompletionFunc("policy-format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var names []string
		for _, f := range policyfile.Formats() {
			names = append(names, string(f))
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
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
	notes := slices.Concat(m.Assumed, mechanicsNotes(results), o.sim.policyNotes)
	if o.sim.policy != nil {
		top.Findings = append(top.Findings, policyfile.Compare(o.sim.policy, m, top)...)
	}
	rec := replay.Recommend(results, models, models["observed"])
	if o.emitPolicy != "" && rec.Policy != "" {
		emitted, err := emitPolicy(o.emitPolicy, policyfile.Format(o.policyFmt), models[rec.Policy])
		if err != nil {
			return err
		}
		notes = append(notes, emitted...)
	}
	a := &report.AuditReport{Schema: report.AuditSchema, Topology: top, Calibration: cal,
		Replay:         &report.ReplayReport{Schema: report.ReplaySchema, Baseline: "observed", Notes: notes, Runs: results},
		Recommendation: rec}
	if err := writeAudit(o.io, o.output, o.format, o.html, o.md, a); err != nil {
		return err
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

// writeAudit renders the audit to -o (table or JSON) and the report files.
func writeAudit(st *streams, output, format, html, md string, a *report.AuditReport) error {
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
	if err != nil {
		return err
	}
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
	return nil
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

// emitPolicy writes the policy of every edge of m to name in a vocabulary
// (the gRPC format writes one service config per callee, name.CALLEE.json
// when there are several) and returns the report's lines: the files
// written and what the vocabulary could not express.
func emitPolicy(name string, format policyfile.Format, m *replay.Model) ([]string, error) {
	out, err := policyfile.Emit(format, policyfile.EdgesOf(m))
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, f := range out.Files {
		file := name
		if f.Callee != "" && len(out.Files) > 1 {
			file = strings.TrimSuffix(name, filepath.Ext(name)) + "." + f.Callee + ".json"
		}
		if err := os.WriteFile(file, f.Data, 0o644); err != nil {
			return nil, err
		}
		lines = append(lines, fmt.Sprintf("--emit-policy wrote %s (%s)", file, format))
	}
	for _, n := range out.Notes {
		lines = append(lines, fmt.Sprintf("--policy-format %s: %s", format, n))
	}
	return lines, nil
}
