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

// inferenceGCPercent is the GC target while inference runs: nearly all it
// allocates (call records, the index) is kept to its end, so a wider
// target mostly holds memory that no collection could free, while the
// span table and the index hold no pointers and cost a collection
// nothing to mark. At 10M spans 10% held 100 MB more than 5% at the
// same CPU time, and 50% about 0.6 GB more (README, "Performance").
const inferenceGCPercent = 5

// inferenceGC sets the GC target for inference, unless GOGC is set, and
// returns what puts the previous target back.
func inferenceGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(inferenceGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// cli runs the process's command line.
func cli() int {
	// A stdout closed early (| head) is an EPIPE error to handle, not a
	// SIGPIPE that kills the process before the report files are written.
	signal.Ignore(syscall.SIGPIPE)
	return run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}
