package ingest

import (
	"context"
	"math"
	"strings"
	"testing"
)

func TestTraceStateProb(t *testing.T) {
	for _, c := range []struct {
		ts   string
		want float64
		ok   bool
	}{
		{"ot=th:0", 1, true},
		{"ot=th:8", 0.5, true},
		{"ot=th:c", 0.25, true},
		{"ot=rv:abcdef12345678;th:e6666666666668", 0.1, true},
		{"vendor=x,ot=th:fd70a3d70a3d71", 0.01, true},
		{"vendor=x", 0, false},
		{"ot=th:zz", 0, false},
		{"ot=th:123456789012345", 0, false},
		{"", 0, false},
	} {
		p, ok := traceStateProb(c.ts)
		if ok != c.ok || math.Abs(p-c.want) > 1e-6 {
			t.Errorf("traceStateProb(%q) = %g, %v; want %g, %v", c.ts, p, ok, c.want, c.ok)
		}
	}
}

func TestSamplerProb(t *testing.T) {
	for _, c := range []struct {
		typ, param string
		want       float64
		ok         bool
	}{
		{"probabilistic", "0.1", 0.1, true},
		{"probabilistic", "1", 1, true},
		{"probabilistic", "0", 0, false},
		{"probabilistic", "1.5", 0, false},
		{"const", "1", 1, true},
		{"const", "0", 0, false},
		{"ratelimiting", "10", 0, false},
		{"lowerbound", "0.1", 0, false},
		{"probabilistic", "x", 0, false},
	} {
		p, ok := samplerProb(c.typ, c.param)
		if ok != c.ok || ok && p != c.want {
			t.Errorf("samplerProb(%q, %q) = %g, %v; want %g, %v", c.typ, c.param, p, ok, c.want, c.ok)
		}
	}
}

// TestSamplingDecoded: the decoders read the head-sampling probability
// from Jaeger process tags, Jaeger span tags and OTLP tracestate.
func TestSamplingDecoded(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      []float64
		source    string
	}{
		{"jaeger process tags", `{"data":[{"traceID":"0000000000000001","spans":[
			{"traceID":"0000000000000001","spanID":"0000000000000001","operationName":"GET /","startTime":1700000000000000,"duration":1000,"processID":"p1","references":[],"tags":[]}],
			"processes":{"p1":{"serviceName":"api","tags":[{"key":"sampler.type","type":"string","value":"probabilistic"},{"key":"sampler.param","type":"float64","value":0.1}]}}}]}`,
			[]float64{0.1}, SampledJaeger},
		{"jaeger span tags", `{"data":[{"traceID":"0000000000000002","spans":[
			{"traceID":"0000000000000002","spanID":"0000000000000001","operationName":"GET /","startTime":1700000000000000,"duration":1000,"processID":"p1","references":[],
			 "tags":[{"key":"sampler.type","type":"string","value":"probabilistic"},{"key":"sampler.param","type":"string","value":"0.5"}]}],
			"processes":{"p1":{"serviceName":"api"}}}]}`,
			[]float64{0.5}, SampledJaeger},
		{"rate limiting says nothing", `{"data":[{"traceID":"0000000000000003","spans":[
			{"traceID":"0000000000000003","spanID":"0000000000000001","operationName":"GET /","startTime":1700000000000000,"duration":1000,"processID":"p1","references":[],"tags":[]}],
			"processes":{"p1":{"serviceName":"api","tags":[{"key":"sampler.type","type":"string","value":"ratelimiting"},{"key":"sampler.param","type":"float64","value":2}]}}}]}`,
			[]float64{0}, SampledRateLimited},
		{"otlp tracestate", `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},"scopeSpans":[{"spans":[
			{"traceId":"00000000000000000000000000000004","spanId":"0000000000000001","name":"GET /","kind":2,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000001000000","traceState":"ot=th:c"}]}]}]}`,
			[]float64{0.25}, SampledTraceState},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := NewSet()
			if err := Decode(context.Background(), set, c.name, strings.NewReader(c.doc), Options{}); err != nil {
				t.Fatal(err)
			}
			if len(set.Spans) != len(c.want) {
				t.Fatalf("%d spans", len(set.Spans))
			}
			for i, sp := range set.Spans {
				if got := set.Sampling(&sp); got.P != c.want[i] || got.Source != c.source {
					t.Errorf("span %d: probability %g from %q, want %g from %q", i, got.P, got.Source, c.want[i], c.source)
				}
			}
		})
	}
}
