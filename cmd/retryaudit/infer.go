package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/report"
)

type inferOptions struct {
	io     *streams
	inputs []string
	format string
	output string
	in     inputFlags
}

// topologyRenderers maps --format values of infer to renderers.
var topologyRenderers = map[string]func(io.Writer, *graph.Topology) error{
	"table":    report.TopologyTable,
	"markdown": report.TopologyMarkdown,
	"json":     func(w io.Writer, t *graph.Topology) error { return report.JSON(w, t) },
	"dot":      report.TopologyDOT,
	"mermaid":  report.TopologyMermaid,
}

func newInferCmd(io *streams) *cobra.Command {
	opts := &inferOptions{io: io}
	cmd := &cobra.Command{
		Use:   "infer FILE|DIR|- ...",
		Short: "Infer who retries, how, and what it multiplies to",
		Long: `Infer the retry topology of the traces: the service graph, each edge's
retry policy (attempts, backoff, jitter, per-try timeout, retried statuses,
hedging, idempotency keys, deadline propagation), every path from a root with
its worst-case amplification, and findings.

What the traces cannot decide is reported as unknown, with the number of
samples seen; maximum attempts are a lower bound unless some call is seen
giving up. --format json writes the topology that replay reads back.`,
		Example: `  retryaudit infer samples/mixed/traces.otlp.jsonl.gz
  retryaudit infer --format json -o topology.json traces/
  retryaudit infer --format dot traces.json | dot -Tsvg > graph.svg`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.inputs = args
			if err := checkFormat(opts.format, "table", "markdown", "json", "dot", "mermaid"); err != nil {
				return err
			}
			if err := opts.in.validate(); err != nil {
				return err
			}
			return runInfer(cmd, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.format, "format", "table", "output format: table, markdown, json, dot or mermaid")
	f.StringVarP(&opts.output, "output", "o", "", "write the output to `FILE` instead of stdout")
	opts.in.bind(f)
	return cmd
}

func runInfer(cmd *cobra.Command, opts *inferOptions) error {
	set, err := opts.in.read(cmd.Context(), opts.io, opts.inputs, nil)
	if err != nil {
		return err
	}
	restore := inferenceGC()
	top, err := graph.Infer(cmd.Context(), set)
	restore()
	if err != nil {
		return err
	}
	w, closeOut, err := outputFile(opts.io, opts.output)
	if err != nil {
		return err
	}
	err = topologyRenderers[opts.format](w, top)
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	return err
}
