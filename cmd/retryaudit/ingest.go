package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/report"
)

type ingestOptions struct {
	io        *streams
	inputs    []string
	format    string
	output    string
	clockSkew time.Duration
	in        inputFlags
}

func newIngestCmd(io *streams) *cobra.Command {
	opts := &ingestOptions{io: io}
	cmd := &cobra.Command{
		Use:   "ingest FILE|DIR|- ...",
		Short: "Decode trace files and summarise what they hold",
		Long: `Decode trace files and summarise, per input and in total, the detected
format, traces, spans, services, time window, error spans and warnings.

Formats are detected from content: OTLP protobuf (one request, or the
collector file exporter's length-prefixed layout), OTLP JSON (one request or
one per line), Jaeger UI/query JSON, Jaeger api_v3 JSON, the Jaeger
protobuf model, Grafana Tempo JSON or protobuf (/api/traces/ID,
/api/v2/traces/ID) and Zipkin v2 JSON; gzip and zstd are decompressed.
Directories are read recursively; "-" reads stdin.

An input that is a URL reads from a running backend: a Jaeger query service
(api_v3, or /api/traces) or Tempo (/api/search, then each trace), searched
with --service, --operation, --since/--until or --lookback (default: the
last hour) and --limit-traces (default 100 per search). The same flags
filter files, trace by trace.`,
		Example: `  retryaudit ingest samples/mixed/traces.otlp.jsonl.gz
  retryaudit ingest --format json samples/
  zcat traces.json.gz | retryaudit ingest -
  retryaudit ingest http://jaeger:16686 --service checkout --lookback 2h
  retryaudit ingest http://tempo:3200 --service checkout --limit-traces 500`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.inputs = args
			if err := checkFormat(opts.format, "table", "json"); err != nil {
				return err
			}
			if err := opts.in.validate(); err != nil {
				return err
			}
			return runIngest(cmd, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.format, "format", "table", "output format: table or json")
	f.StringVarP(&opts.output, "output", "o", "", "write the output to `FILE` instead of stdout")
	f.DurationVar(&opts.clockSkew, "clock-skew", ingest.DefaultClockSkew, "warn when a child starts this much before its parent")
	opts.in.bind(f)
	return cmd
}

func runIngest(cmd *cobra.Command, opts *ingestOptions) error {
	set, err := opts.in.read(cmd.Context(), opts.io, opts.inputs, nil)
	if err != nil {
		return err
	}
	sum := set.Summary(opts.clockSkew)
	w, closeOut, err := outputFile(opts.io, opts.output)
	if err != nil {
		return err
	}
	if opts.format == "json" {
		err = report.JSON(w, sum)
	} else {
		err = report.IngestTable(w, sum)
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	return err
}
