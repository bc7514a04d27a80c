package replay

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// empiricalLevels are level lists an Empirical may carry: the topology's
// self-time levels (graph.SelfQuantileLevels, copied: replay does not
// import graph), short ones, repeated levels and uneven ones.
var empiricalLevels = []struct {
	name   string
	levels []float64
}{
	{"self-time", []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1}},
	{"two", []float64{0, 1}},
	{"three", []float64{0, 0.5, 1}},
	{"repeated", []float64{0, 0.25, 0.25, 0.25, 0.7, 1, 1}},
	{"uneven", []float64{0, 1e-9, 0.001, 0.5, 0.999999, 1}},
}

// referenceQuantile is Empirical's inverse CDF as it was computed before
// the levels were indexed: through slices.BinarySearch.
func referenceQuantile(e *Empirical, u float64) float64 {
	i, _ := slices.BinarySearch(e.Levels, u)
	if i == 0 {
		return e.Values[0]
	}
	lo, hi := e.Levels[i-1], e.Levels[i]
	f := (u - lo) / (hi - lo)
	return e.Values[i-1] + f*(e.Values[i]-e.Values[i-1])
}

// TestEmpiricalQuantile holds Empirical's draws to the reference, bit for
// bit, on every level list: at every level and bucket start and just
// either side of them, at random levels, and through Sample on one
// stream (an Empirical built as a literal, without the index, too).
func TestEmpiricalQuantile(t *testing.T) {
	for _, tc := range empiricalLevels {
		t.Run(tc.name, func(t *testing.T) {
			values := make([]float64, len(tc.levels))
			for i := range values {
				values[i] = 0.001 * math.Pow(1.7, float64(i))
			}
			e, err := NewEmpirical(tc.levels, values)
			if err != nil {
				t.Fatal(err)
			}
			if len(e.from) < 2*len(tc.levels) {
				t.Fatalf("%d buckets for %d levels: want at least two a level", len(e.from), len(tc.levels))
			}
			var us []float64
			edges := slices.Clone(tc.levels)
			for b := range e.from {
				edges = append(edges, float64(b)/float64(len(e.from)))
			}
			for _, l := range edges {
				us = append(us, l, math.Nextafter(l, -1), math.Nextafter(l, 2))
			}
			us = slices.DeleteFunc(us, func(u float64) bool { return u < 0 || u >= 1 })
			rng := rand.New(rand.NewPCG(1, 2))
			for range 10_000 {
				us = append(us, rng.Float64())
			}
			literal := &Empirical{Levels: e.Levels, Values: e.Values}
			for _, u := range us {
				want := math.Float64bits(referenceQuantile(e, u))
				if got := math.Float64bits(e.quantile(u)); got != want {
					t.Fatalf("quantile(%v) = %v, want %v", u, e.quantile(u), referenceQuantile(e, u))
				}
				if got := math.Float64bits(literal.quantile(u)); got != want {
					t.Fatalf("without the index: quantile(%v) = %v, want %v", u, literal.quantile(u), referenceQuantile(e, u))
				}
			}
			got, want := rand.New(rand.NewPCG(7, 8)), rand.New(rand.NewPCG(7, 8))
			for n := range 100_000 {
				g, w := e.Sample(got), referenceQuantile(e, want.Float64())
				if math.Float64bits(g) != math.Float64bits(w) {
					t.Fatalf("draw %d: %v, want %v", n, g, w)
				}
			}
		})
	}
}

// BenchmarkEmpiricalSample is one service-time draw from the topology's
// self-time quantiles, which the simulator makes for every job it runs
// (README, "Performance": the search for the level was a fifth of an
// audit's CPU).
func BenchmarkEmpiricalSample(b *testing.B) {
	levels := empiricalLevels[0].levels
	values := make([]float64, len(levels))
	for i := range values {
		values[i] = 0.001 * math.Pow(1.7, float64(i))
	}
	e, err := NewEmpirical(levels, values)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sum := 0.0
	for b.Loop() {
		sum += e.Sample(rng)
	}
	if sum <= 0 {
		b.Fatal("no draws")
	}
}
