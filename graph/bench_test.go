package graph

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/samples/synth"
)

// BenchmarkInfer measures inference on 100k and 1M synthetic spans. Per
// span figures (ns/span, B/span) that hold steady across the sizes show
// time and memory growing linearly; infer/ingest compares inference with
// decoding the same input (OTLP protobuf stream), timed in the same
// iteration; cpu-ns/span is inference's CPU time (getrusage), the steadier
// figure on a shared machine.
func BenchmarkInfer(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		var data bytes.Buffer
		if err := synth.WriteProtoStream(&data, synth.Requests(n, 7)); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			var tIngest, tInfer time.Duration
			var alloc uint64
			var cpuNS int64
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				set := ingest.NewSet()
				if err := ingest.Decode(context.Background(), set, "bench", bytes.NewReader(data.Bytes()), ingest.Options{}); err != nil {
					b.Fatal(err)
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				t1, c1 := time.Now(), cpuTime(b)
				top, _ := Infer(context.Background(), set)
				tInfer += time.Since(t1)
				cpuNS += cpuTime(b) - c1
				tIngest += t1.Sub(t0)
				runtime.ReadMemStats(&after)
				alloc += after.TotalAlloc - before.TotalAlloc
				if len(top.Edges) == 0 {
					b.Fatal("no edges inferred")
				}
			}
			b.ReportMetric(float64(tInfer.Nanoseconds())/float64(n*b.N), "ns/span")
			b.ReportMetric(float64(cpuNS)/float64(n*b.N), "cpu-ns/span")
			b.ReportMetric(float64(alloc)/float64(n*b.N), "B/span")
			b.ReportMetric(float64(tInfer)/float64(tIngest), "infer/ingest")
		})
	}
}

// BenchmarkEdgeFit measures the per-edge policy inference alone (every
// call read into its edge's statistics, then the fit) on the calls of
// 300k synthetic spans, in wall and CPU time per call: on a shared machine
// the CPU time (getrusage) is the steadier figure.
func BenchmarkEdgeFit(b *testing.B) {
	var data bytes.Buffer
	if err := synth.WriteProtoStream(&data, synth.Requests(300_000, 7)); err != nil {
		b.Fatal(err)
	}
	set := ingest.NewSet()
	if err := ingest.Decode(context.Background(), set, "bench", bytes.NewReader(data.Bytes()), ingest.Options{}); err != nil {
		b.Fatal(err)
	}
	ix, err := newIndex(context.Background(), set)
	if err != nil {
		b.Fatal(err)
	}
	calls, err := extractCalls(context.Background(), ix, newNaming(ix))
	if err != nil {
		b.Fatal(err)
	}
	ecs := groupEdges(ix, calls)
	b.ResetTimer()
	c0 := cpuTime(b)
	for range b.N {
		for _, ec := range ecs {
			if e, _ := inferEdge(ix, ec); e.Calls != len(ec.calls) {
				b.Fatalf("%s: %d calls, want %d", edgeLocation(e), e.Calls, len(ec.calls))
			}
		}
	}
	b.ReportMetric(float64(cpuTime(b)-c0)/float64(b.N*len(calls)), "cpu-ns/call")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(calls)), "ns/call")
}

// cpuTime is the process's CPU time so far (user and system), in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
