package replay

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/samples/synth"
)

// BenchmarkBuildModel measures building the model from spans: inference
// with its calibration statistics, then FromTopology, on 100k and 1M
// synthetic spans. ns/span that holds steady across the sizes shows the
// build linear in spans; build/ingest compares it with decoding the same
// input, timed in the same iteration.
func BenchmarkBuildModel(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		var data bytes.Buffer
		if err := synth.WriteProtoStream(&data, synth.Requests(n, 7)); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			var tIngest, tBuild time.Duration
			for b.Loop() {
				t0 := time.Now()
				set := ingest.NewSet()
				if err := ingest.Decode(context.Background(), set, "bench", bytes.NewReader(data.Bytes()), ingest.Options{}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				top, err := graph.Infer(context.Background(), set)
				if err != nil {
					b.Fatal(err)
				}
				m, err := FromTopology(top, BuildOptions{})
				if err != nil {
					b.Fatal(err)
				}
				tBuild += time.Since(t1)
				tIngest += t1.Sub(t0)
				if len(m.Edges) == 0 {
					b.Fatal("no edges")
				}
			}
			b.ReportMetric(float64(tBuild.Nanoseconds())/float64(n*b.N), "ns/span")
			b.ReportMetric(float64(tBuild)/float64(tIngest), "build/ingest")
		})
	}
}

// BenchmarkCalibrateSamples is `retryaudit calibrate` on every committed
// sample scenario, one after the other: reading the OTLP file, inference,
// and the calibration's five replays. s/samples is the time for all of
// them; calibrate/infer compares the replays with reading and inference.
func BenchmarkCalibrateSamples(b *testing.B) {
	dirs := sampleScenarios(b)
	var tRead, tCal time.Duration
	for b.Loop() {
		for _, d := range dirs {
			t0 := time.Now()
			set, err := ingest.ReadFiles(context.Background(), []string{filepath.Join("..", "samples", d, "traces.otlp.jsonl.gz")}, nil, ingest.Options{})
			if err != nil {
				b.Fatal(err)
			}
			top, err := graph.Infer(context.Background(), set)
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := Calibrate(context.Background(), top, CalibrateOptions{Seed: 1}); err != nil {
				b.Fatal(err)
			}
			tCal += time.Since(t1)
			tRead += t1.Sub(t0)
		}
	}
	b.ReportMetric((tRead+tCal).Seconds()/float64(b.N), "s/samples")
	b.ReportMetric(float64(tCal)/float64(tRead), "calibrate/infer")
}
