package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/retryaudit/retryaudit/report"
)

// Exit codes.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitThreshold = 3 // --fail-on thresholds crossed
	// An interrupted run exits 128 plus the signal number, as shells
	// report it: 130 for SIGINT, 143 for SIGTERM.
	exitSignal = 128
)

// interruptGrace is how long a run may take to stop cleanly after the
// first interrupt (every long call checks its context) before the process
// exits anyway; a second interrupt exits at once.
const interruptGrace = 800 * time.Millisecond

// streams carries all process I/O so commands are testable in-process.
type streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer

	wide     bool   // --wide: tables keep every column on a terminal too
	traceURL string // --trace-url: example trace ids become links
}

// outWidth is the width tables written to stdout must fit: the terminal's
// ($COLUMNS when set, as shells export it), or 0 — no limit — when stdout
// is no terminal or --wide is set.
func (s *streams) outWidth() int {
	f, ok := s.Out.(*os.File)
	if s.wide || !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if w, _, err := term.GetSize(int(f.Fd())); err == nil {
		return w
	}
	return 0
}

// errIsTTY reports whether progress may be drawn on stderr.
func (s *streams) errIsTTY() bool {
	f, ok := s.Err.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// closedStdoutIsFine drops the error of writing to a pipe its reader
// closed (retryaudit infer | head): the reader has what it wanted.
func closedStdoutIsFine(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
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

// run executes the command line and returns the process exit code. The
// first SIGINT or SIGTERM cancels the command's context and the run exits
// 128+signal within interruptGrace; a second exits at once.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var caught atomic.Int32 // the signal number of the first interrupt
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	defer func() { signal.Stop(sigs); close(done) }()
	go watchInterrupts(sigs, done, cancel, &caught, interruptGrace, func(code int) {
		fmt.Fprintln(stderr, "retryaudit: interrupted")
		os.Exit(code)
	})
	io := &streams{In: stdin, Out: stdout, Err: stderr}
	root := newRootCmd(io)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := closedStdoutIsFine(root.ExecuteContext(ctx))
	if sig := caught.Load(); sig != 0 {
		fmt.Fprintln(stderr, "retryaudit: interrupted")
		return exitSignal + int(sig)
	}
	if err == nil {
		return exitOK
	}
	// Errors quote file names and span data: escaped, never raw.
	fmt.Fprintf(stderr, "retryaudit: %s\n", report.Printable(err.Error()))
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

// watchInterrupts handles the interrupts of one run until done: the first
// records its number in caught and cancels the run, which then has
// graceFor to return; a second interrupt, or the grace running out, calls
// exit with 128+signal.
func watchInterrupts(sigs <-chan os.Signal, done <-chan struct{}, cancel func(), caught *atomic.Int32, graceFor time.Duration, exit func(int)) {
	var first os.Signal
	select {
	case first = <-sigs:
	case <-done:
		return
	}
	code := exitSignal + int(signalNumber(first))
	caught.Store(int32(signalNumber(first)))
	cancel()
	grace := time.NewTimer(graceFor)
	defer grace.Stop()
	select {
	case <-sigs:
		exit(code)
	case <-grace.C:
		exit(code)
	case <-done:
	}
}

// signalNumber is the number of a signal (2 for SIGINT).
func signalNumber(s os.Signal) syscall.Signal {
	if n, ok := s.(syscall.Signal); ok {
		return n
	}
	return syscall.SIGINT
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
JSON or protobuf, Tempo, Zipkin v2 JSON, gzip or zstd), or reads them
straight from a Jaeger or Tempo URL, finds which layers of the service graph
retry and how, and replays degradations under alternative retry policies.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().BoolVar(&io.wide, "wide", false, "tables show every column, however wide the terminal (piped output always does)")
	root.PersistentFlags().StringVar(&io.traceURL, "trace-url", "", "link example trace ids in Markdown and HTML through `TEMPLATE`, e.g. http://jaeger:16686/trace/{trace_id}")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if io.traceURL != "" {
			if err := report.CheckTraceURL(io.traceURL); err != nil {
				return usageError{fmt.Errorf("--trace-url: %w", err)}
			}
		}
		return nil
	}
	root.AddCommand(
		newVersionCmd(io),
		newIngestCmd(io),
		newInferCmd(io),
		newReplayCmd(io),
		newCalibrateCmd(io),
		newAuditCmd(io),
		newReportCmd(io),
	)
	registerCompletions(root)
	return root
}

// outputFile opens -o FILE, or returns stdout when name is empty or "-".
func outputFile(io *streams, name string) (w io.Writer, closeFn func() error, err error) {
	if name == "" || name == "-" {
		return report.With(io.Out, report.Options{Width: io.outWidth(), TraceURL: io.traceURL}), func() error { return nil }, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, err
	}
	return report.With(f, report.Options{TraceURL: io.traceURL}), f.Close, nil
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
