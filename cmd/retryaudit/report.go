package main

import (
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
re-running anything: to the terminal, and to --html and --md files. Reads
schema retryaudit.audit/v2 and the older v1 (one seed, no capacity plan).`,
		Example: `  retryaudit audit traces/ --format json -o audit.json
  retryaudit report audit.json --html report.html --md report.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.input = args[0]
			if err := checkFormat(opts.format, auditFormats...); err != nil {
				return err
			}
			return runReport(opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.format, "format", "table", "output format: table, json or markdown")
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
	a, err := report.ReadAudit(o.input, data)
	if err != nil {
		return err
	}
	return writeAudit(o.io, o.output, o.format, o.html, o.md, a)
}
