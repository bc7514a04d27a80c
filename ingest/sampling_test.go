package ingest

import (
	"math"
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
