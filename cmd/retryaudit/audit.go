package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/audit"
	"github.com/retryaudit/retryaudit/replay/policyfile"
	"github.com/retryaudit/retryaudit/report"
)

type auditOptions struct {
	io          *streams
	inputs      []string
	policies    []string
	degrade     []string
	format      string
	json        bool
	output      string
	html, md    string
	emitPolicy  string
	policyFmt   string
	quiet       bool
	failOn      []string
	thresholds  []threshold
	seeds       int
	noSearch    bool
	utilization []string
	util        map[string]float64
	decl        audit.Declarations
	sim         simFlags
	tol         toleranceFlags
	in          inputFlags
}

// auditFormats are audit's --format values.
var auditFormats = []string{"table", "json", "markdown"}

func newAuditCmd(io *streams) *cobra.Command {
	opts := &auditOptions{io: io}
	cmd := &cobra.Command{
		Use:   "audit FILE|DIR|- ...",
		Short: "From trace files to a decision: infer, replay every policy over seeds, state the capacity plan",
		Long: `Ingest the traces, infer the retry topology, and replay every default
degradation (outage, slow-shard, hot-partition, packet-loss, db-pool) of the
dependencies that matter (the deepest retried dependency, the most amplified
one, every database or cache) under the policies observed, none, everywhere,
edge-only, idempotent-only, hedge-p95, budget and retry-after (and, where
today's traces retry more than budget's 10% of calls allows, budget-sized:
the same budget with each callee's ratio sized to today's retry share
there, x1.5, rounded up to 5%, at least 10%), each over --seeds seeds. For every policy and degradation the audit searches the
critical utilization: the highest busy fraction of the degraded dependency
at which the policy still recovers after the trigger in every seed, to
±0.02 between 0.05 and 0.95 (null: it recovers at 0.95). It forecasts the
load each policy sends that dependency during the trigger, applies the
safety rules (no hedge, added or kept retry on a write without idempotency
keys; hedge delays between the callee's p95 and the per-try timeout;
breakers seen are kept; where today's policies break one, observed+safe is
today's with the rules applied and, where that stops retries of writes sent
without a key, observed+keys keeps them with a key on every call, and
budget-sized+keys the sized budget's), rules out every policy whose
availability on an ordinary day (degradation "observed", always replayed)
is below today's policies' (observed, or the better of observed+safe and
observed+keys) beyond the seed spread, or within it but with its
unavailability more than a third above today's, ranks the rest (never
collapsing at the utilization you give with --utilization, or else the
largest critical utilization; then availability; then least extra work,
differences within the seed noise counting as ties, and another policy
beating today's on a key only by the least gain worth a change: 0.05 of
critical utilization, a quarter of the unavailability during the faults;
candidates tied on every key go to the least change from today's
policies, then the fewest attempts allowed, and the sentence says what
tied; a choice that some seed set one seed smaller does not make is
within the seed noise: the candidates it is between and today's policies
run over 5 seeds more and the larger set decides, today's policies kept
where a set one seed smaller still chooses them) and reports the capacity plan,
then the
recommendation as concrete changes edge by edge, then the topology, its
findings and the detail of the first seed.

--emit-policy FILE writes the recommended policy of every edge in the
vocabulary of --policy-format: an Envoy RouteConfiguration and Clusters, Istio
VirtualServices and DestinationRules, Gateway API routes with Linkerd's
annotations, a gRPC service config per callee (FILE.CALLEE.json when there are
several), or retryaudit's own YAML; what the vocabulary cannot express is a
comment in the file and a note in the report. With --policy-file, findings
also compare the configured policy with what the traces show.

--fail-on makes the command exit 3 after its report when a threshold is
crossed: 'amplification>N' (or >=), finding:ID, metastable:POLICY (or
metastable:any), uncalibrated. Quote expressions with > in them: unquoted,
the shell reads > as a redirection and writes a file.

Before anything is recommended, the replay of the observed policies under
the traces' own failure timeline must reproduce the traces (as
'retryaudit calibrate' checks): the calibration is the first section after
the worst-case line, and when the model misses, the recommendation is
printed as uncalibrated with the misses listed. The calibration replays
the traces' own failure timeline (degradation "observed"); every
degradation of the matrix applies on top of the healthy part of the
traces' failures.

Finding ids:
  ` + strings.Join(slices.Concat(graph.FindingIDs(), policyfile.FindingIDs()), "\n  "),
		Example: `  retryaudit audit samples/mixed/traces.otlp.jsonl.gz --html report.html --md report.md
  retryaudit audit traces/ --utilization db=0.4 --emit-policy policy.yaml --fail-on 'amplification>10' --fail-on metastable:observed
  retryaudit audit traces/ --emit-policy routes.yaml --policy-format envoy
  retryaudit audit traces/ --policy-file virtualservice.yaml
  retryaudit audit http://jaeger:16686 --service checkout --lookback 2h --fail-on finding:retry-4xx`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.inputs = args
			if opts.json {
				if cmd.Flags().Changed("format") && opts.format != "json" {
					return usageError{fmt.Errorf("--json and --format %s disagree", opts.format)}
				}
				opts.format = "json"
			}
			if err := checkFormat(opts.format, auditFormats...); err != nil {
				return err
			}
			if opts.seeds < 1 || opts.seeds > 100 {
				return usageError{fmt.Errorf("--seeds %d: want 1 to 100", opts.seeds)}
			}
			var err error
			if opts.util, err = parseUtilizations(opts.utilization); err != nil {
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
	f.StringVar(&opts.format, "format", "table", "output format: table, json (everything, schema retryaudit.audit/v2) or markdown")
	f.BoolVar(&opts.json, "json", false, "shorthand for --format json")
	f.StringVarP(&opts.output, "output", "o", "", "write the output to `FILE` instead of stdout")
	f.StringVar(&opts.html, "html", "", "also write a self-contained HTML report to `FILE`")
	f.StringVar(&opts.md, "md", "", "also write a Markdown report to `FILE`")
	f.StringVar(&opts.emitPolicy, "emit-policy", "", "write the recommended policy of every edge to `FILE`, in --policy-format (--policy-file reads it back)")
	f.StringVar(&opts.policyFmt, "policy-format", string(policyfile.FormatNative), "vocabulary of --emit-policy: envoy, istio, linkerd, grpc or native")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress bars")
	f.StringArrayVar(&opts.failOn, "fail-on", nil, "exit 3 when `EXPR` holds: 'amplification>N' (quoted), finding:ID, metastable:POLICY, uncalibrated")
	opts.tol.bind(cmd)
	f.IntVar(&opts.seeds, "seeds", audit.DefaultSeeds, "run every policy and degradation with `K` seeds: --seed, --seed+1, …")
	f.BoolVar(&opts.noSearch, "no-search", false, "skip the critical-utilization searches (a quicker audit, with no capacity plan beyond today's load)")
	f.StringArrayVar(&opts.utilization, "utilization", nil, "a service's utilization from your metrics, `SVC=U` with U a busy fraction in (0,1) (repeatable)")
	f.StringArrayVar(&opts.decl.Idempotent, "idempotent", nil, "declare an operation or RPC method `NAME` idempotent, so it may be retried (repeatable)")
	f.StringArrayVar(&opts.decl.InflightDedup, "inflight-dedup", nil, "declare that the server of operation or method `NAME` deduplicates concurrent keyed duplicates, so it may be hedged (repeatable)")
	opts.sim.bind(f)
	opts.in.bind(f)
	return cmd
}

// parseUtilizations reads SVC=U; the service name is everything before
// the last "=", so a name that contains "=" is still a name.
func parseUtilizations(specs []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, s := range specs {
		i := strings.LastIndexByte(s, '=')
		if i <= 0 {
			return nil, usageError{fmt.Errorf("--utilization %q: want SVC=U, e.g. db=0.4", s)}
		}
		u, err := strconv.ParseFloat(s[i+1:], 64)
		if err != nil || !(u > 0 && u < 1) || math.IsNaN(u) {
			return nil, usageError{fmt.Errorf("--utilization %q: %q is not a busy fraction between 0 and 1, e.g. %s=0.4", s, s[i+1:], s[:i])}
		}
		out[s[:i]] = u
	}
	return out, nil
}

func runAudit(cmd *cobra.Command, o *auditOptions) error {
	set, err := o.read(cmd)
	if err != nil {
		return err
	}
	restore := inferenceGC()
	top, err := graph.Infer(cmd.Context(), set)
	restore()
	if err != nil {
		return err
	}
	cal, err := calibrate(cmd, top, o.sim.modelFlags, o.tol, replay.DefaultCalibrationSeeds)
	if err != nil {
		return err
	}
	m, err := o.sim.model(top, replay.BuildOptions{})
	if err != nil {
		return err
	}
	for svc := range o.util {
		if !slices.ContainsFunc(m.Services, func(s replay.Service) bool { return s.Name == svc }) {
			return usageError{fmt.Errorf("--utilization %s: no such service in the model", strconv.Quote(svc))}
		}
	}
	exprs := o.policies
	if len(exprs) == 0 {
		exprs = audit.StandardPolicies
	}
	// observed is the baseline of the comparison, none the reference of extra work.
	exprs = append([]string{"observed", "none"}, exprs...)
	variants, _, err := o.sim.variants(m, exprs)
	if err != nil {
		return err
	}
	var degr []replay.Degradation
	if len(o.degrade) > 0 {
		degr, err = degradations(o.degrade, m)
	} else {
		degr = audit.Degradations(audit.Targets(top), m)
	}
	if err != nil {
		return err
	}
	if len(degr) == 0 {
		return usageError{fmt.Errorf("the topology has no dependency to degrade: give --degrade")}
	}
	var bar *progress
	res, err := audit.Run(cmd.Context(), audit.Config{Variants: variants, Degradations: degr, Topology: top,
		Run: o.sim.config(), Seeds: o.seeds, Utilization: o.util, Declarations: o.decl, NoSearch: o.noSearch,
		Progress: func(done, total int) {
			if bar == nil {
				bar = newProgress(o.io, o.quiet, int64(total), "replay", false)
			}
			bar.setTotal(int64(done), int64(total))
		}})
	if bar != nil {
		bar.done()
	}
	if err != nil {
		return err
	}
	notes := slices.Concat(m.Assumed, mechanicsNotes(res.Runs), o.sim.policyNotes)
	if o.sim.policy != nil {
		top.Findings = append(top.Findings, policyfile.Compare(o.sim.policy, m, top)...)
	}
	// The policy file is written first: the report lists it and what its
	// vocabulary could not express.
	if o.emitPolicy != "" && res.Recommended != nil {
		emitted, err := emitPolicy(o.emitPolicy, policyfile.Format(o.policyFmt), res.Recommended, o.sim.capacity)
		if err != nil {
			return err
		}
		notes = append(notes, emitted...)
	}
	a := report.NewAuditReport(top, notes, res)
	a.Calibration = cal
	a.Capacities = capacities(degr, m)
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

// auditRenderers are the renderers of --format.
var auditRenderers = map[string]func(io.Writer, *report.AuditReport) error{
	"table":    report.AuditTable,
	"json":     report.AuditJSON,
	"markdown": report.AuditMarkdown,
}

// writeAudit renders the report files, then the audit to -o in the format
// asked: the files are complete even when stdout is a pipe closed early
// (audit --html r.html | head).
func writeAudit(st *streams, output, format, html, md string, a *report.AuditReport) error {
	for _, f := range []struct {
		name   string
		render func(io.Writer, *report.AuditReport) error
	}{{html, report.AuditHTML}, {md, report.AuditMarkdown}} {
		if f.name == "" {
			continue
		}
		if err := writeFile(f.name, func(w io.Writer) error {
			return f.render(report.With(w, report.Options{TraceURL: st.traceURL}), a)
		}); err != nil {
			return err
		}
	}
	w, closeOut, err := outputFile(st, output)
	if err != nil {
		return err
	}
	err = auditRenderers[format](w, a)
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

// emitPolicy writes the policy of every edge of m to name in a vocabulary
// (the gRPC format writes one service config per callee, name.CALLEE.json
// when there are several) and returns the report's lines: the files
// written and what the vocabulary could not express. The pools of the
// services whose workers --capacity gives (capacity) are stated, the
// others estimated.
func emitPolicy(name string, format policyfile.Format, m *replay.Model, capacity []string) ([]string, error) {
	edges := policyfile.EdgesOf(m)
	for _, spec := range capacity {
		svc, c, err := replay.ParseCapacity(spec)
		if err != nil || c.Workers == 0 {
			continue // validated with the model; a rate states no pool
		}
		for i := range edges {
			if edges[i].Callee == svc {
				edges[i].Pool.Given = true
			}
		}
	}
	out, err := policyfile.Emit(format, edges)
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
