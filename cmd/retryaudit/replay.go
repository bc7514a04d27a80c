package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/audit"
	"github.com/retryaudit/retryaudit/report"
)

type replayOptions struct {
	io       *streams
	inputs   []string
	topology string
	scenario string
	policies []string
	degrade  []string
	clients  int
	arrivals string
	think    time.Duration
	format   string
	output   string
	html     string
	sim      simFlags
	in       inputFlags
}

var replayRenderers = map[string]func(io.Writer, *report.ReplayReport) error{
	"table":    report.ReplayTable,
	"markdown": report.ReplayMarkdown,
	"json":     report.ReplayJSON,
}

func newReplayCmd(io *streams) *cobra.Command {
	opts := &replayOptions{io: io}
	cmd := &cobra.Command{
		Use:   "replay [FILE|DIR|- ...]",
		Short: "Simulate degradations under alternative retry policies",
		Long: `Replay the observed traffic through a discrete-event model of the topology
while dependencies degrade, under alternative retry policies, and compare
availability, goodput, work amplification, retry share, yield (availability
gained per unit of extra work against policy none), latency, recovery time
and whether the system stays collapsed after the trigger is gone.

The topology comes from trace files (inferred on the fly) or from
--topology (the JSON of 'retryaudit infer --format json', perhaps edited).
--scenario runs a preset from the articles instead (storm, lab, jirfag
with 22 workers, jirfag-c20, jirfag-c41: their own traffic and
capacities, so --rate, --clients, --think, --headroom, --client-deadline
and --sample-rate are refused; contention is Brooker's
closed-loop jitter study, a table of completion time and calls per
strategy and client count).

Policies (--policy, repeatable): a base (observed, none, everywhere,
edge-only, idempotent-only, hedge-p95) followed by modifiers joined with +
(budget, retry-after, breaker, deadline, shed), e.g. edge-only+budget.
Degradations (--degrade, repeatable), e.g.:
  outage:svc=db,at=10s,for=3s[,mode=error|timeout|error-after-work]
  slow-replica:svc=api,at=10s,for=30s,replicas=4,x=10
  slow-shard:svc=db,at=10s,for=30s,shards=8,x=10
  hot-partition:svc=db,at=10s,for=30s,zipf=1.2
  packet-loss:edge=api->db,at=10s,for=10s,p=0.2
  db-pool:svc=db,at=10s,for=20s,k=2
  error-rate:svc=db,at=10s,for=10s,p=0.3
  latency:svc=db,at=10s,for=10s,add=200ms`,
		Example: `  retryaudit replay samples/retry-everywhere/traces.otlp.jsonl.gz --degrade outage:svc=db,at=10s,for=5s
  retryaudit replay --topology top.json --policy observed --policy edge-only+budget --capacity db=8
  retryaudit replay --scenario storm
  retryaudit replay --scenario storm --html storm.html
  retryaudit replay --scenario contention`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.inputs = args
			if err := opts.validate(); err != nil {
				return err
			}
			return runReplay(cmd, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.topology, "topology", "", "read the topology from `FILE` (infer --format json) instead of traces")
	f.StringVar(&opts.scenario, "scenario", "", "run a preset instead: "+strings.Join(replay.Presets(), ", "))
	f.StringArrayVar(&opts.policies, "policy", nil, "policy `EXPR` to compare (repeatable; default "+strings.Join(audit.StandardPolicies, ", ")+")")
	f.StringArrayVar(&opts.degrade, "degrade", nil, "degradation `SPEC` (repeatable; default an outage of the deepest retried dependency)")
	f.StringVar(&opts.arrivals, "arrivals", "poisson", "root arrivals: poisson (at the observed rate × --load, or --rate) or trace (the traces' own timestamps, repeated; --load compresses time)")
	f.IntVar(&opts.clients, "clients", 0, "closed-loop clients instead of open-loop arrivals")
	f.DurationVar(&opts.think, "think", 100*time.Millisecond, "closed-loop clients' think time")
	f.StringVar(&opts.format, "format", "table", "output format: table, markdown or json")
	f.StringVarP(&opts.output, "output", "o", "", "write the output to `FILE` instead of stdout")
	f.StringVar(&opts.html, "html", "", "also write a self-contained HTML report (tables and per-second charts) to `FILE`")
	opts.sim.bind(f)
	opts.in.bind(f)
	return cmd
}

func (o *replayOptions) validate() error {
	if err := checkFormat(o.format, "table", "markdown", "json"); err != nil {
		return err
	}
	sources := 0
	for _, set := range []bool{len(o.inputs) > 0, o.topology != "", o.scenario != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return usageError{fmt.Errorf("give trace files, --topology FILE, or --scenario NAME (exactly one)")}
	}
	if o.scenario != "" && (len(o.policies) > 0 || len(o.degrade) > 0 || o.sim.policyFile != "" || len(o.sim.capacity) > 0) {
		return usageError{fmt.Errorf("--scenario brings its own policies, degradations and capacities")}
	}
	switch o.arrivals {
	case "poisson":
	case "trace":
		if len(o.inputs) == 0 {
			return usageError{fmt.Errorf("--arrivals trace replays trace files' timestamps: give trace files, not --topology or --scenario")}
		}
		if o.sim.rate > 0 || o.clients > 0 {
			return usageError{fmt.Errorf("--arrivals trace takes its rate from the traces: drop --rate and --clients")}
		}
	default:
		return usageError{fmt.Errorf("--arrivals %q: want poisson or trace", o.arrivals)}
	}
	if o.clients < 0 {
		return usageError{fmt.Errorf("--clients %d: want 0 or more", o.clients)}
	}
	if err := o.sim.validate(); err != nil {
		return err
	}
	return o.in.validate()
}

func runReplay(cmd *cobra.Command, o *replayOptions) error {
	var mx replay.Matrix
	var notes []string
	var model *replay.Model // the model whose capacities the charts draw
	if o.scenario != "" {
		p, err := replay.NewPreset(o.scenario, o.sim.load, o.sim.seed)
		if err != nil {
			return usageError{err}
		}
		if p.Contention != nil {
			return runContention(cmd, o, p)
		}
		mx, notes = p.Matrix, []string{p.About}
		if f := o.sim.flags; f.Changed("thrash") || f.Changed("cancel") || f.Changed("cancel-running") || f.Changed("max-inflight") || f.Changed("open-clients") {
			notes[0] += "; the flags replace the preset's thrash, cancellation, limit on requests in flight or count of clients: the mechanics note has the values run"
		}
		for _, name := range presetFlags {
			if cmd.Flags().Changed(name) {
				return usageError{fmt.Errorf("--%s: the %s scenario brings its own traffic and capacities; it takes --seed, --load, --duration, --thrash, --cancel, --cancel-running, --max-inflight, --open-clients, --max-events and the output flags", name, p.Name)}
			}
		}
		if o.sim.flags.Changed("duration") {
			mx.Config.Duration = o.sim.duration.Seconds()
		}
		mx.Config.MaxEvents = o.sim.maxEvents
		for i := range mx.Variants {
			mx.Variants[i].Model = o.sim.mechanics(mx.Variants[i].Model)
		}
		if len(mx.Variants) > 0 {
			model = mx.Variants[0].Model
		}
	} else {
		top, arrivals, err := o.readTopology(cmd)
		if err != nil {
			return err
		}
		m, err := o.sim.model(top, replay.BuildOptions{Clients: o.clients, Think: o.think.Seconds(), Arrivals: arrivals})
		if err != nil {
			return err
		}
		notes, model = m.Assumed, m
		exprs := o.policies
		if len(exprs) == 0 {
			exprs = audit.StandardPolicies
		}
		if exprs[0] != "none" {
			exprs = append([]string{"none"}, exprs...)
		}
		if mx.Variants, _, err = o.sim.variants(m, exprs); err != nil {
			return err
		}
		notes = append(slices.Clone(notes), o.sim.policyNotes...)
		if len(o.degrade) > 0 {
			if mx.Degradations, err = degradations(o.degrade, m); err != nil {
				return err
			}
		} else {
			// An outage of the deepest retried dependency: the first of
			// the audit's targets (the outage is its first degradation).
			ds := audit.Degradations(audit.Targets(top), m)
			if len(ds) == 0 {
				return usageError{fmt.Errorf("the topology has no dependency to degrade: give --degrade")}
			}
			mx.Degradations = ds[:1]
		}
		mx.Config = o.sim.config()
	}
	results, err := mx.RunContext(cmd.Context())
	if err != nil {
		if errors.Is(err, replay.ErrEventBudget) && o.topology != "" && o.sim.rate == 0 {
			return fmt.Errorf("topology %s: its root_rate_per_s (× --load %g): %w", o.topology, o.sim.load, err)
		}
		return err
	}
	notes = append(notes, mechanicsNotes(results)...)
	rep := &report.ReplayReport{Schema: report.ReplaySchema, Baseline: "none", Notes: notes, Runs: results}
	if model != nil {
		rep.Capacities = capacities(mx.Degradations, model)
	}
	// The HTML file first: it is complete even when stdout is a pipe
	// closed early.
	if o.html != "" {
		if err := writeFile(o.html, func(w io.Writer) error { return report.ReplayHTML(w, rep) }); err != nil {
			return err
		}
	}
	w, closeOut, err := outputFile(o.io, o.output)
	if err != nil {
		return err
	}
	err = replayRenderers[o.format](w, rep)
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	return closedStdoutIsFine(err)
}

// capacities are the capacities of the services the degradations degrade
// (the first fault's service) in model m, for the HTML charts' capacity
// lines; a service whose capacity is unbounded or undefined (a call graph
// with a cycle) gets none.
func capacities(ds []replay.Degradation, m *replay.Model) []report.Capacity {
	var out []report.Capacity
	for _, d := range ds {
		i := slices.IndexFunc(d.Faults, func(f degrade.Fault) bool { return f.Service != "" })
		if i < 0 {
			continue
		}
		svc := d.Faults[i].Service
		if c, err := audit.Capacity(m, svc); err == nil {
			out = append(out, report.Capacity{Degradation: d.Name, Service: svc, AttemptsPerS: c})
		}
	}
	return out
}

var contentionRenderers = map[string]func(io.Writer, *report.ContentionReport) error{
	"table":    report.ContentionTable,
	"markdown": report.ContentionMarkdown,
	"json":     report.ContentionJSON,
}

// contentionFlags are the flags that mean nothing to the contention study
// (it has no services, faults or run length): setting one is an error
// rather than a knob silently ignored.
var contentionFlags = []string{"html", "duration", "rate", "thrash", "cancel", "cancel-running", "max-inflight", "open-clients", "max-events", "headroom", "client-deadline", "sample-rate", "clients", "think", "arrivals"}

// presetFlags are the flags a preset's own traffic and capacities
// replace: setting one with --scenario is an error rather than a knob
// silently ignored.
var presetFlags = []string{"rate", "headroom", "client-deadline", "sample-rate", "clients", "think"}

// runContention runs Brooker's contention study of preset p and prints it.
func runContention(cmd *cobra.Command, o *replayOptions, p *replay.Preset) error {
	for _, name := range contentionFlags {
		if cmd.Flags().Changed(name) {
			return usageError{fmt.Errorf("--%s: the %s scenario is a closed-loop contention study; it takes --seed, --load (which scales its client counts), --format and -o only", name, p.Name)}
		}
	}
	rows, err := p.Contention.Run(cmd.Context())
	if err != nil {
		return err
	}
	rep := &report.ContentionReport{Schema: report.ContentionSchema, Reference: p.Contention.Reference, Seed: p.Contention.Seed,
		Seeds: p.Contention.Seeds, Notes: []string{p.About}, Rows: rows}
	w, closeOut, err := outputFile(o.io, o.output)
	if err != nil {
		return err
	}
	err = contentionRenderers[o.format](w, rep)
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	return closedStdoutIsFine(err)
}

// readTopology infers the topology from the trace files (and lists their
// root arrivals for --arrivals trace) or reads --topology.
func (o *replayOptions) readTopology(cmd *cobra.Command) (*graph.Topology, []graph.Arrival, error) {
	return loadTopology(cmd, o.io, &o.in, o.inputs, o.topology, o.arrivals == "trace")
}

// loadTopology infers the topology of the trace files named by inputs, with
// their root arrivals when asked, or reads the topology file when named.
func loadTopology(cmd *cobra.Command, st *streams, in *inputFlags, inputs []string, file string, arrivals bool) (*graph.Topology, []graph.Arrival, error) {
	if file == "" {
		set, err := in.read(cmd.Context(), st, inputs, nil)
		if err != nil {
			return nil, nil, err
		}
		defer inferenceGC()()
		if arrivals {
			return graph.InferWithArrivals(cmd.Context(), set)
		}
		top, err := graph.Infer(cmd.Context(), set)
		return top, nil, err
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	top, err := graph.ReadTopology(f)
	if err != nil {
		return nil, nil, fmt.Errorf("topology %s: %w", file, err)
	}
	return top, nil, nil
}
