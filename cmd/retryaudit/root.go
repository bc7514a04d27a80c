package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Exit codes.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitThreshold = 3 // --fail-on thresholds crossed
)

// streams carries all process I/O so commands are testable in-process.
type streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// errIsTTY reports whether progress may be drawn on stderr.
func (s *streams) errIsTTY() bool {
	f, ok := s.Err.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// usageError marks errors in how the command was called (exit code 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// exitError carries an exit code other than 1 for an error already reported,
// e.g. thresholds crossed after the report was printed.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }

// run executes the command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	io := &streams{In: stdin, Out: stdout, Err: stderr}
	root := newRootCmd(io)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "retryaudit: %v\n", err)
	var ue usageError
	var ee exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue), isCobraUsage(err):
		fmt.Fprintln(stderr, "Run 'retryaudit --help' for usage.")
		return exitUsage
	}
	return exitFailure
}

// isCobraUsage recognises the usage errors cobra raises itself.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "invalid argument", "flag needs an argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func newRootCmd(io *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "retryaudit",
		Short: "Audit retry behaviour in distributed traces",
		Long: `retryaudit reads exported distributed traces (OTLP protobuf or JSON, Jaeger
JSON or protobuf, gzip or zstd), finds which layers of the service graph
retry and how, and replays degradations under alternative retry policies.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newVersionCmd(io),
		newIngestCmd(io),
		newInferCmd(io),
		newReplayCmd(io),
		newCalibrateCmd(io),
		newAuditCmd(io),
		newReportCmd(io),
	)
	return root
}

// outputFile opens -o FILE, or returns stdout when name is empty or "-".
func outputFile(io *streams, name string) (w io.Writer, closeFn func() error, err error) {
	if name == "" || name == "-" {
		return io.Out, func() error { return nil }, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// checkFormat validates a --format value against the allowed ones.
func checkFormat(got string, allowed ...string) error {
	for _, a := range allowed {
		if got == a {
			return nil
		}
	}
	return usageError{fmt.Errorf("--format %q: want one of %s", got, strings.Join(allowed, ", "))}
}
