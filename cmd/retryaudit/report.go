package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/retryaudit/retryaudit/report"
)

type reportOptions struct {
	io       *streams
	input    string
	format   string
	output   string
	html, md string
}

func newReportCmd(io *streams) *cobra.Command {
	opts := &reportOptions{io: io}
	cmd := &cobra.Command{
		Use:   "report RESULTS.json",
		Short: "Render a saved audit again (table, JSON, HTML, Markdown)",
		Long: `Render the JSON of 'retryaudit audit --format json' again, without
re-running anything: to the terminal, and to --html and --md files.`,
		Example: `  retryaudit audit traces/ --format json -o audit.json
  retryaudit report audit.json --html report.html --md report.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.input = args[0]
			if err := checkFormat(opts.format, "table", "json"); err != nil {
				return err
			}
			return runReport(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.format, "format", "table", "output format: table or json")
	f.StringVarP(&opts.output, "output", "o", "", "write the output to `FILE` instead of stdout")
	f.StringVar(&opts.html, "html", "", "write a self-contained HTML report to `FILE`")
	f.StringVar(&opts.md, "md", "", "write a Markdown report to `FILE`")
	return cmd
}

func runReport(o *reportOptions) error {
	data, err := os.ReadFile(o.input)
	if err != nil {
		return err
	}
	var a report.AuditReport
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return fmt.Errorf("%s: %w", o.input, err)
	}
	if a.Schema != report.AuditSchema {
		return fmt.Errorf("%s: schema %q: want %q (the JSON of retryaudit audit --format json)", o.input, a.Schema, report.AuditSchema)
	}
	if a.Topology == nil || a.Replay == nil {
		return fmt.Errorf("%s: no topology or no replay results", o.input)
	}
	return writeAudit(o.io, o.output, o.format, o.html, o.md, &a)
}
