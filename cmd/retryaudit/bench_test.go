package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retryaudit/retryaudit/samples/synth"
)

// BenchmarkIngestVsPdata is the measure of ingest speed, both sides
// whole processes doing their whole job on the same file of a million
// attribute-heavy spans (synth.HTTPRequests): `retryaudit ingest --format
// json` (read, decode, summarise, write) against a process that only reads
// the file, message by message into one buffer, and unmarshals it with
// pdata (the "pdata-unmarshal" command of
// this test binary, see TestMain). Runs are paired and alternate which goes
// first; ingest/pdata is the ratio of their summed wall times, cpu-ratio
// that of their user+system CPU, and peak-RSS-MB the largest resident set
// of the ingest runs. Sizes are read by /usr/bin/time (Debian package
// "time"): Linux carries a process's RSS high water mark across fork and
// exec, so the rusage of a child started from this (large) benchmark
// process would report the parent's memory.
//
//	go test -run '^$' -bench IngestVsPdata -benchtime 3x ./cmd/retryaudit
func BenchmarkIngestVsPdata(b *testing.B) {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		b.Skip("needs /usr/bin/time (apt-get install time)")
	}
	pdataExe, err := exec.LookPath("pdata-unmarshal")
	if err != nil {
		b.Fatalf("the test binary's pdata-unmarshal command: %v", err)
	}
	dir := b.TempDir()
	exe := filepath.Join(dir, "retryaudit")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	const n = 1_000_000
	reqs := synth.HTTPRequests(n, 3)
	for _, f := range []struct {
		name  string
		write func(io.Writer, []ptrace.Traces) error
	}{
		{"otlp-proto-stream", synth.WriteProtoStream},
		{"otlp-jsonl", synth.WriteJSONLines},
	} {
		path := filepath.Join(dir, f.name)
		writeInput(b, path, func(w io.Writer) error { return f.write(w, reqs) })
		b.Run(f.name+"/1M", func(b *testing.B) {
			var ingest, pdata timedRun
			var ratios []float64
			pressure := cpuPressure()
			for i := 0; i < b.N; i++ {
				warm(b, path)
				var in, pd timedRun
				runs := []func(){
					func() { in = timed(b, exe, "ingest", "--format", "json", "-o", os.DevNull, path) },
					func() { pd = timed(b, pdataExe, f.name, path) },
				}
				if i%2 == 1 {
					runs[0], runs[1] = runs[1], runs[0]
				}
				for _, run := range runs {
					run()
				}
				ingest.add(in)
				pdata.add(pd)
				ratios = append(ratios, in.wall/pd.wall)
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "ingest/pdata")
			b.ReportMetric(ingest.cpu/pdata.cpu, "cpu-ratio")
			b.ReportMetric(float64(ingest.peakKB)/1024, "peak-RSS-MB")
			b.ReportMetric(float64(n)*float64(b.N)/ingest.wall, "spans/s")
			if p := cpuPressure(); p >= 0 && pressure >= 0 {
				b.ReportMetric((p+pressure)/2, "cpu-pressure-%")
			}
			b.Logf("%s, 1M spans, %d paired runs: ingest %.2fs wall %.2fs CPU, pdata %.2fs wall %.2fs CPU per run; wall ratios %.2f; peak RSS %d MB",
				f.name, b.N, ingest.wall/float64(b.N), ingest.cpu/float64(b.N), pdata.wall/float64(b.N), pdata.cpu/float64(b.N), ratios, ingest.peakKB/1024)
		})
	}
}

// BenchmarkInferScale runs the real binary's `infer --format json` on 1M
// and 10M attribute-heavy spans (OTLP protobuf stream, generated in
// bounded memory by synth.StreamHTTP) and reports, for 10M, peak RSS and
// the time taken relative to 1M (wall and CPU). It needs about 4.3 GB of
// temporary disk, a few GB of memory and minutes, so it runs only when
// RETRYAUDIT_BENCH_SCALE is set (`make bench-scale`).
func BenchmarkInferScale(b *testing.B) {
	if os.Getenv("RETRYAUDIT_BENCH_SCALE") == "" {
		b.Skip("set RETRYAUDIT_BENCH_SCALE=1 (make bench-scale): needs 4.3 GB of disk and minutes")
	}
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		b.Skip("needs /usr/bin/time (apt-get install time)")
	}
	dir := b.TempDir()
	exe := filepath.Join(dir, "retryaudit")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	sizes := []int{1_000_000, 10_000_000}
	paths := make([]string, len(sizes))
	for i, n := range sizes {
		paths[i] = filepath.Join(dir, fmt.Sprintf("%dm.binpb", n/1_000_000))
		writeInput(b, paths[i], func(w io.Writer) error { return synth.StreamHTTP(w, n, 11, synth.WriteProtoStream) })
	}
	b.ResetTimer()
	var runs [2]timedRun
	for i := 0; i < b.N; i++ {
		for j, p := range paths {
			warm(b, p)
			runs[j].add(timed(b, exe, "infer", "--format", "json", "--max-spans", "20000000", "-o", os.DevNull, p))
		}
	}
	b.ReportMetric(runs[1].wall/runs[0].wall, "10M/1M-wall")
	b.ReportMetric(runs[1].cpu/runs[0].cpu, "10M/1M-cpu")
	b.ReportMetric(float64(runs[0].peakKB)/1024, "1M-peak-RSS-MB")
	b.ReportMetric(float64(runs[1].peakKB)/1024, "10M-peak-RSS-MB")
	b.Logf("infer: 1M %.1fs wall %.1fs CPU %d MB; 10M %.1fs wall %.1fs CPU %d MB (per run, %d runs)",
		runs[0].wall/float64(b.N), runs[0].cpu/float64(b.N), runs[0].peakKB/1024,
		runs[1].wall/float64(b.N), runs[1].cpu/float64(b.N), runs[1].peakKB/1024, b.N)
}

// cpuPressure is the share of the last ten seconds in which some runnable
// task waited for a CPU (Linux PSI), or -1 when the kernel does not say: on
// a shared machine it tells how far wall times can be trusted.
func cpuPressure() float64 {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`some avg10=([0-9.]+)`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// warm reads path through, so that neither of a pair of runs pays for
// reading it from disk (on a shared machine the page cache does not keep
// a large file for long).
func warm(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		b.Fatal(err)
	}
}

// timedRun sums what /usr/bin/time reported over runs of one command.
type timedRun struct {
	wall, cpu float64 // seconds
	peakKB    int64
}

func (t *timedRun) add(r timedRun) {
	t.wall += r.wall
	t.cpu += r.cpu
	t.peakKB = max(t.peakKB, r.peakKB)
}

var timeReport = regexp.MustCompile(`wall=([0-9.]+) user=([0-9.]+) sys=([0-9.]+) maxrss=(\d+)`)

// timed runs a command under /usr/bin/time and returns its wall and CPU
// time and peak resident set.
func timed(b *testing.B, exe string, args ...string) timedRun {
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "wall=%e user=%U sys=%S maxrss=%M", exe}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", exe, err, stderr.Bytes())
	}
	wall := time.Since(t0).Seconds()
	m := timeReport.FindSubmatch(stderr.Bytes())
	if m == nil {
		b.Fatalf("no report from /usr/bin/time in %q", stderr.Bytes())
	}
	user, _ := strconv.ParseFloat(string(m[2]), 64)
	sys, _ := strconv.ParseFloat(string(m[3]), 64)
	kb, _ := strconv.ParseInt(string(m[4]), 10, 64)
	return timedRun{wall: wall, cpu: user + sys, peakKB: kb}
}

// pdataUnmarshal is the floor BenchmarkIngestVsPdata compares against, as a
// process: read the file named by the second argument and unmarshal it
// with pdata, in the layout the first argument names.
func pdataUnmarshal() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: pdata-unmarshal otlp-proto-stream|otlp-jsonl FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[2])
	if err == nil {
		if os.Args[1] == "otlp-jsonl" {
			_, err = synth.UnmarshalJSONLines(f)
		} else {
			_, err = synth.UnmarshalProtoStream(f)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// writeInput writes a benchmark input through a buffer.
func writeInput(b *testing.B, path string, write func(io.Writer) error) {
	err := writeFile(path, func(f io.Writer) error {
		w := bufio.NewWriter(f)
		if err := write(w); err != nil {
			return err
		}
		return w.Flush()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAudit runs the real binary's default audit — every policy and
// degradation over 5 seeds, and every critical-utilization search — on
// each committed sample (samples/NAME; README target: under 30 s each on
// 2 cores) and on a million synthetic spans (target: under 120 s). On the
// samples it also runs the same audit on one core (GOMAXPROCS=1), and
// reports how many times faster every core is: the independent runs go to
// every core. -bench 'Audit/samples/mixed' picks one sample.
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
	writeInput(b, big, func(w io.Writer) error { return synth.WriteProtoStream(w, synth.Requests(1_000_000, 5)) })
	type input struct {
		name  string
		input []string
	}
	var inputs []input
	for _, s := range samples {
		inputs = append(inputs, input{"samples/" + filepath.Base(filepath.Dir(s)), []string{s}})
	}
	for _, tc := range append(inputs, input{"1M-spans", []string{big}}) {
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
				if strings.HasPrefix(tc.name, "samples/") {
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
