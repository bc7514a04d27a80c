package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retryaudit/retryaudit/samples/synth"
)

// BenchmarkIngestPeakRSS builds the real binary, runs `retryaudit ingest`
// on a million synthetic spans in each streamed format, and reports its peak
// resident set size: the README's memory figure. The size is read by
// /usr/bin/time (Debian package "time"): Linux carries a process's RSS high
// water mark across fork and exec, so the rusage of a child started from
// this (large) benchmark process would report the parent's memory.
func BenchmarkIngestPeakRSS(b *testing.B) {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		b.Skip("needs /usr/bin/time (apt-get install time)")
	}
	dir := b.TempDir()
	exe := filepath.Join(dir, "retryaudit")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	const n = 1_000_000
	reqs := synth.Requests(n, 3)
	for _, f := range []struct {
		name  string
		write func(io.Writer, []ptrace.Traces) error
	}{
		{"otlp-proto-stream", synth.WriteProtoStream},
		{"otlp-jsonl", synth.WriteJSONLines},
	} {
		path := filepath.Join(dir, f.name)
		file, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(file)
		if err := f.write(w, reqs); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		file.Close()
		b.Run(f.name+"/1M", func(b *testing.B) {
			var peakKB int64
			for i := 0; i < b.N; i++ {
				cmd := exec.Command("/usr/bin/time", "-f", "maxrss=%M", exe, "ingest", "--format", "json", path)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Run(); err != nil {
					b.Fatalf("%v\n%s", err, stderr.Bytes())
				}
				m := regexp.MustCompile(`maxrss=(\d+)`).FindSubmatch(stderr.Bytes())
				if m == nil {
					b.Fatalf("no maxrss in %q", stderr.Bytes())
				}
				kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
				peakKB = max(peakKB, kb)
			}
			b.ReportMetric(float64(peakKB)/1024, "peak-RSS-MB")
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}

// BenchmarkAudit runs the real binary's default audit — every policy and
// degradation over 5 seeds, and every critical-utilization search — on the
// committed samples (README target: under 30 s on 2 cores) and on a
// million synthetic spans (target: under 120 s). On the samples it also
// runs the same audit on one core (GOMAXPROCS=1), and reports how many
// times faster every core is: the independent runs go to every core.
func BenchmarkAudit(b *testing.B) {
	dir := b.TempDir()
	exe := filepath.Join(dir, "retryaudit")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	samples, err := filepath.Glob(filepath.Join("..", "..", "samples", "*", "traces.otlp.jsonl.gz"))
	if err != nil || len(samples) == 0 {
		b.Fatalf("no samples: %v", err)
	}
	big := filepath.Join(dir, "1m.binpb")
	file, err := os.Create(big)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(file)
	if err := synth.WriteProtoStream(w, synth.Requests(1_000_000, 5)); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	file.Close()
	for _, tc := range []struct {
		name  string
		input []string
	}{{"samples", samples}, {"1M-spans", []string{big}}} {
		// run returns the wall time and the CPU time of one audit: on a
		// machine shared with other work, CPU time ÷ cores bounds the wall
		// time the audit alone would take.
		run := func(b *testing.B, env ...string) (wall, cpu time.Duration) {
			start := time.Now()
			cmd := exec.Command(exe, append([]string{"audit", "-q", "--format", "json", "-o", os.DevNull}, tc.input...)...)
			cmd.Env = append(os.Environ(), env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		b.Run(tc.name, func(b *testing.B) {
			var all, one, cpu time.Duration
			for i := 0; i < b.N; i++ {
				w, c := run(b)
				all, cpu = all+w, cpu+c
				if tc.name == "samples" {
					w, _ := run(b, "GOMAXPROCS=1")
					one += w
				}
			}
			b.ReportMetric(all.Seconds()/float64(b.N), "s/audit")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/audit")
			if one > 0 {
				b.ReportMetric(one.Seconds()/all.Seconds(), "1-core/all-cores")
			}
		})
	}
}
