package graph

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/samples/synth"
)

// BenchmarkInfer measures inference on 100k and 1M synthetic spans. Per
// span figures (ns/span, B/span) that hold steady across the sizes show
// time and memory growing linearly; infer/ingest compares inference with
// decoding the same input (OTLP protobuf stream), timed in the same
// iteration.
func BenchmarkInfer(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		var data bytes.Buffer
		if err := synth.WriteProtoStream(&data, synth.Requests(n, 7)); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			var tIngest, tInfer time.Duration
			var alloc uint64
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				set := ingest.NewSet()
				if err := ingest.Decode(context.Background(), set, "bench", bytes.NewReader(data.Bytes()), ingest.Options{}); err != nil {
					b.Fatal(err)
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				t1 := time.Now()
				top, _ := Infer(context.Background(), set)
				tInfer += time.Since(t1)
				tIngest += t1.Sub(t0)
				runtime.ReadMemStats(&after)
				alloc += after.TotalAlloc - before.TotalAlloc
				if len(top.Edges) == 0 {
					b.Fatal("no edges inferred")
				}
			}
			b.ReportMetric(float64(tInfer.Nanoseconds())/float64(n*b.N), "ns/span")
			b.ReportMetric(float64(alloc)/float64(n*b.N), "B/span")
			b.ReportMetric(float64(tInfer)/float64(tIngest), "infer/ingest")
		})
	}
}
