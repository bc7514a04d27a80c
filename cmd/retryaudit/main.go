// Command retryaudit finds which layers of a service graph retry, and how,
// from exported distributed traces, and replays degradations under
// alternative retry policies.
package main

import (
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	// Ingest builds one large, pointer-free span table while decoders make
	// short-lived garbage: a GC target of 50% keeps the peak resident size
	// of a million spans near 230 MB instead of 330 MB at no measured cost
	// in time (README, "Performance"). GOGC set by the user wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	os.Exit(cli())
}

// cli runs the process's command line.
func cli() int {
	// A stdout closed early (| head) is an EPIPE error to handle, not a
	// SIGPIPE that kills the process before the report files are written.
	signal.Ignore(syscall.SIGPIPE)
	return run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}
