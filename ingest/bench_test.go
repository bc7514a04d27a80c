package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/retryaudit/retryaudit/samples/synth"
)

// benchSizes are the sizes the README promises figures for.
var benchSizes = []int{100_000, 1_000_000}

// BenchmarkOTLP measures ingest (Decode alone, with the allocations it
// makes per span) of OTLP protobuf (file
// exporter layout) and OTLP JSON lines in synth.HTTPRequests' shape against
// pdata alone unmarshalling the same bytes. Both run
// inside each iteration, interleaved, so the reported ratio
// (ingest-ns / pdata-ns) is robust to machine noise.
func BenchmarkOTLP(b *testing.B) {
	for _, n := range benchSizes {
		reqs := synth.HTTPRequests(n, 1)
		var proto, jsonl bytes.Buffer
		if err := synth.WriteProtoStream(&proto, reqs); err != nil {
			b.Fatal(err)
		}
		if err := synth.WriteJSONLines(&jsonl, reqs); err != nil {
			b.Fatal(err)
		}
		reqs = nil
		b.Run(fmt.Sprintf("proto/%dk", n/1000), func(b *testing.B) {
			benchRatio(b, n, proto.Bytes(), pdataProtoStream)
		})
		b.Run(fmt.Sprintf("jsonl/%dk", n/1000), func(b *testing.B) {
			benchRatio(b, n, jsonl.Bytes(), pdataJSONLines)
		})
	}
}

func benchRatio(b *testing.B, n int, data []byte, pdataOnly func([]byte) int) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var tPdata, tIngest time.Duration
	var mallocs, bytesAlloc uint64
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if got := pdataOnly(data); got != n {
			b.Fatalf("pdata decoded %d spans, want %d", got, n)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t1 := time.Now()
		set := NewSet()
		if err := Decode(context.Background(), set, "bench", bytes.NewReader(data), Options{}); err != nil {
			b.Fatal(err)
		}
		tIngest += time.Since(t1)
		runtime.ReadMemStats(&after)
		mallocs += after.Mallocs - before.Mallocs
		bytesAlloc += after.TotalAlloc - before.TotalAlloc
		if len(set.Spans) != n {
			b.Fatalf("ingest decoded %d spans, want %d", len(set.Spans), n)
		}
		tPdata += t1.Sub(t0)
	}
	b.ReportMetric(float64(tIngest)/float64(tPdata), "ingest/pdata")
	b.ReportMetric(float64(mallocs)/float64(n*b.N), "ingest-allocs/span")
	b.ReportMetric(float64(bytesAlloc)/float64(n*b.N), "ingest-B/span")
	b.ReportMetric(float64(n)*float64(b.N)/tIngest.Seconds(), "spans/s")
}

func pdataProtoStream(data []byte) int {
	n, err := synth.UnmarshalProtoStream(bytes.NewReader(data))
	if err != nil {
		panic(err)
	}
	return n
}

func pdataJSONLines(data []byte) int {
	n, err := synth.UnmarshalJSONLines(bytes.NewReader(data))
	if err != nil {
		panic(err)
	}
	return n
}

// BenchmarkSetMemory reports the live heap a decoded Set of a million spans
// holds (after a GC), the figure behind the README's memory claim; peak RSS
// of the whole command is measured by `make bench` with /usr/bin/time.
func BenchmarkSetMemory(b *testing.B) {
	const n = 1_000_000
	var proto bytes.Buffer
	if err := synth.WriteProtoStream(&proto, synth.HTTPRequests(n, 2)); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		set := NewSet()
		if err := Decode(context.Background(), set, "bench", bytes.NewReader(proto.Bytes()), Options{}); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "live-MB")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/span")
		runtime.KeepAlive(set)
	}
}

// BenchmarkShapeChecks measures the checks that run before pdata sees a
// document (checkOTLPProtoShape, splitJSON) against pdata unmarshalling
// the same 100k spans, interleaved in each iteration: the "check/pdata"
// ratio is what the limits add to decoding.
func BenchmarkShapeChecks(b *testing.B) {
	reqs := synth.Requests(100_000, 1)
	var proto, jsonl bytes.Buffer
	if err := synth.WriteProtoStream(&proto, reqs); err != nil {
		b.Fatal(err)
	}
	if err := synth.WriteJSONLines(&jsonl, reqs); err != nil {
		b.Fatal(err)
	}
	lim := Limits{}.withDefaults()
	for _, tc := range []struct {
		name  string
		data  []byte
		check func([]byte)
		pdata func([]byte) int
	}{
		{"proto", proto.Bytes(), func(data []byte) {
			for len(data) >= 4 {
				size := binary.BigEndian.Uint32(data)
				if e := checkOTLPProtoShape(data[4:4+size], &lim); e != nil {
					b.Fatal(e.err)
				}
				data = data[4+size:]
			}
		}, pdataProtoStream},
		{"jsonl", jsonl.Bytes(), func(data []byte) {
			for _, line := range bytes.Split(data, []byte{'\n'}) {
				if _, _, e := splitJSON(line, &lim); e != nil {
					b.Fatal(e.err)
				}
			}
		}, pdataJSONLines},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			var tCheck, tPdata time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				tc.check(tc.data)
				t1 := time.Now()
				tc.pdata(tc.data)
				tCheck += t1.Sub(t0)
				tPdata += time.Since(t1)
			}
			b.ReportMetric(float64(tCheck)/float64(tPdata), "check/pdata")
		})
	}
}
