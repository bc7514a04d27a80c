package graph

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// splitInto deals n items to k parts at random and returns the parts in a
// random order, each part's items in a random order.
func splitInto(rng *rand.Rand, n, k int) [][]int {
	parts := make([][]int, k)
	for _, i := range rng.Perm(n) {
		p := rng.IntN(k)
		parts[p] = append(parts[p], i)
	}
	rng.Shuffle(k, func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return parts
}

// TestSampleSplitIndependent: a sample keeps every value up to
// MaxExactValues and beyond it exactly the MaxExactValues of lowest key,
// and the same values however the values are split into partials and in
// whatever order those merge; it never holds more than twice the bound.
func TestSampleSplitIndependent(t *testing.T) {
	for _, n := range []int{0, 7, MaxExactValues, MaxExactValues + 1, 3*MaxExactValues + 17} {
		rng := rand.New(rand.NewPCG(uint64(n), 5))
		keys, vals := make([]uint64, n), make([]float64, n)
		for i := range n {
			var tr ingest.TraceID
			var sp ingest.SpanID
			binary.BigEndian.PutUint64(tr[8:], uint64(i/3)) // three values a trace
			binary.BigEndian.PutUint64(sp[:], uint64(i))
			keys[i] = sampleKey(tr, sp, i%2)
			vals[i] = math.Round(rng.Float64()*1000) / 10 // repeats: ties of value
		}
		one := newSample(cmp.Compare[float64])
		for i := range n {
			one.add(keys[i], vals[i])
		}
		want := one.values()
		slices.Sort(want)
		if n <= MaxExactValues {
			if all := slices.Sorted(slices.Values(vals)); !slices.Equal(want, all) {
				t.Fatalf("n=%d: a sample under the bound dropped values", n)
			}
			if one.summary() != nil {
				t.Fatalf("n=%d: summarized under the bound", n)
			}
		} else {
			order := make([]int, n)
			for i := range order {
				order[i] = i
			}
			slices.SortFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
			var lowest []float64
			for _, i := range order[:MaxExactValues] {
				lowest = append(lowest, vals[i])
			}
			slices.Sort(lowest)
			if !slices.Equal(want, lowest) {
				t.Fatalf("n=%d: the sample is not the values of lowest key", n)
			}
			if s := one.summary(); s == nil || s.Seen != n || s.Kept != MaxExactValues {
				t.Fatalf("n=%d: summary %+v", n, s)
			}
		}
		for _, k := range []int{2, 5, 13} {
			parts := splitInto(rng, n, k)
			samples := make([]sample[float64], k)
			for p, idx := range parts {
				samples[p] = newSample(cmp.Compare[float64])
				for _, i := range idx {
					samples[p].add(keys[i], vals[i])
					if len(samples[p].kept) >= 2*MaxExactValues {
						t.Fatalf("n=%d: a sample holds %d values", n, len(samples[p].kept))
					}
				}
			}
			sum := samples[0]
			for p := 1; p < k; p++ {
				sum.merge(&samples[p])
			}
			got := sum.values()
			slices.Sort(got)
			if !slices.Equal(got, want) || sum.seen != n {
				t.Fatalf("n=%d, %d parts: the merged sample differs from one pass", n, k)
			}
		}
	}
}

// TestDistSplitIndependent: a dist gives the exact quantiles up to
// MaxExactValues values and beyond them a sketch's, within SketchAccuracy
// of the value at the rank and the same however the values are split and
// merged; past the bound it keeps no value list.
func TestDistSplitIndependent(t *testing.T) {
	for _, n := range []int{1, 50, MaxExactValues, MaxExactValues + 1, 5 * MaxExactValues} {
		rng := rand.New(rand.NewPCG(uint64(n), 9))
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = math.Exp(rng.NormFloat64()) * 20 // a long-tailed latency
		}
		vals[0] = 0
		sorted := slices.Sorted(slices.Values(vals))
		var one dist
		for _, v := range vals {
			one.add(v)
		}
		levels := []float64{0, 0.1, 0.5, 0.9, 0.95, 0.99, 1}
		for _, p := range levels {
			got := one.quantile(p)
			if n <= MaxExactValues {
				if want := quantile(sorted, p); got != want {
					t.Fatalf("n=%d p=%v: %v, exact %v", n, p, got, want)
				}
				continue
			}
			at := sorted[int(p*float64(n-1))]
			if math.Abs(got-at) > SketchAccuracy*at*1.0001 {
				t.Fatalf("n=%d p=%v: %v, the value at the rank %v", n, p, got, at)
			}
		}
		if n > MaxExactValues && (one.exact != nil || one.summary() == nil || one.summary().Seen != n) {
			t.Fatalf("n=%d: past the bound the dist keeps %d values, summary %+v", n, len(one.exact), one.summary())
		}
		for _, k := range []int{2, 3, 11} {
			parts := splitInto(rng, n, k)
			ds := make([]dist, k)
			for p, idx := range parts {
				for _, i := range idx {
					ds[p].add(vals[i])
				}
			}
			sum := &ds[0]
			for p := 1; p < k; p++ {
				sum.merge(&ds[p])
			}
			for _, p := range levels {
				if got, want := sum.quantile(p), one.quantile(p); got != want {
					t.Fatalf("n=%d, %d parts, p=%v: %v, one pass %v", n, k, p, got, want)
				}
			}
		}
	}
}

// manyRetries is one edge whose calls give more values of every kind than
// a partial keeps whole: MaxExactValues+500 requests to api, each retried
// once after a 503, with jittered waits and callee durations.
func manyRetries(*testing.T) *ingest.Set {
	b := newBuilder()
	rng := rand.New(rand.NewPCG(3, 4))
	for range MaxExactValues + 500 {
		b.newTrace()
		root := b.server(-1, "web", "GET /", 0, 400)
		d1, d2 := 3+rng.Float64()*20, 3+rng.Float64()*20
		b.call(root, "api", "GET /a", 1, d1, httpStatus(503))
		b.call(root, "api", "GET /a", 1+d1+40+rng.Float64()*20, d2, httpStatus(200))
	}
	return b.set
}

// TestSummarizedEdge: an edge with more values than a partial keeps whole
// says which of its fits read a summary, and how many values it saw; the
// backoff is still read from the sample (constant 40 ms plus up to 20 ms).
func TestSummarizedEdge(t *testing.T) {
	tp, err := Infer(context.Background(), manyRetries(t))
	if err != nil {
		t.Fatal(err)
	}
	var e *Edge
	for i := range tp.Edges {
		if tp.Edges[i].Callee == "api" {
			e = &tp.Edges[i]
		}
	}
	n := MaxExactValues + 500
	if e == nil || e.Calls != n {
		t.Fatalf("no api edge of %d calls: %+v", n, tp.Edges)
	}
	want := map[string]Summary{
		"waits":            {Seen: n, Kept: MaxExactValues},
		"network_legs":     {Seen: 2 * n, Kept: MaxExactValues},
		"callee_durations": {Seen: 2 * n, RelativeAccuracy: SketchAccuracy},
		"transit":          {Seen: 2 * n, RelativeAccuracy: SketchAccuracy},
		"waits_by_retry_1": {Seen: n, RelativeAccuracy: SketchAccuracy},
	}
	if len(e.Summarized) != len(want) {
		t.Fatalf("summarized %+v, want %+v", e.Summarized, want)
	}
	for k, w := range want {
		if e.Summarized[k] != w {
			t.Fatalf("summarized %s: %+v, want %+v", k, e.Summarized[k], w)
		}
	}
	sketch := func(seen int) Summary { return Summary{Seen: seen, RelativeAccuracy: SketchAccuracy} }
	for _, svc := range tp.Services {
		for _, o := range svc.Operations {
			all := map[string]Summary{"durations": sketch(o.Count), "self_times": sketch(o.Count), "work": sketch(o.Count)}
			if !reflect.DeepEqual(o.Summarized, all) {
				t.Fatalf("%s %s summarized %+v, want %+v", svc.Name, o.Name, o.Summarized, all)
			}
		}
	}
	warned := fmt.Sprintf("waits: a sample of %d of %d", MaxExactValues, n)
	if !slices.ContainsFunc(tp.Warnings, func(w string) bool { return strings.Contains(w, warned) }) {
		t.Fatalf("no warning says %q: %q", warned, tp.Warnings)
	}
	if e.Backoff.Samples != MaxExactValues || e.Backoff.BaseMS < 40 || e.Backoff.BaseMS > 61 {
		t.Fatalf("backoff %+v from the sample", e.Backoff)
	}
	// Callee spans last 1 ms less than their clients' 3–23 ms.
	if e.CalleeP50MS < 2 || e.CalleeP99MS > 22*(1+SketchAccuracy) {
		t.Fatalf("callee p50 %v, p99 %v", e.CalleeP50MS, e.CalleeP99MS)
	}
}

// TestScaledCounts: counts a fit picks out of a sample of waits or of
// abandoned attempts stand for every value seen, not for the sample: a
// third of 6000 calls waiting an uncaptured Retry-After of one second
// give about 2000 uncaptured waits (within four standard errors of the
// sample's estimate), and 6000 attempts timing out at two durations
// leave exactly 6000 attempts of unknown timeout (every kept value picked
// stands for every value seen).
func TestScaledCounts(t *testing.T) {
	const n = MaxExactValues + 1904
	b := newBuilder()
	rng := rand.New(rand.NewPCG(5, 6))
	directed := 0
	sequential(b, n, "web", func(root, i int) {
		wait := 40 + rng.Float64()*20
		if i%3 == 0 {
			wait, directed = 1000.4+rng.Float64(), directed+1
		}
		b.client(root, "backend", 10, 5, httpStatus(503))
		b.client(root, "backend", 15+wait, 5, httpStatus(200))
		d := 60.1 + rng.Float64()*0.05
		if i%4 == 0 {
			d = 100.2 + rng.Float64()*0.05
		}
		c := b.client(root, "orders", 10, d, grpcCode(4), method("Get"))
		b.server(c, "orders", "retryaudit.Orders/Get", 10.2, d-0.3, grpcCode(1))
		b.call(root, "orders", "retryaudit.Orders/Get", 20+d, 2, grpcCode(0), method("Get"))
	})
	tp := b.infer()
	e := edge(t, tp, "web", "backend")
	wantEq(t, "waits", e.Summarized["waits"], Summary{Seen: n, Kept: MaxExactValues})
	se := math.Sqrt(float64(directed)) * n / MaxExactValues
	if d := math.Abs(float64(e.RetryAfterUncaptured - directed)); d > 4*se {
		t.Errorf("%d uncaptured Retry-After waits, want %d ± %.0f", e.RetryAfterUncaptured, directed, 4*se)
	}
	wantEq(t, "retry-after honoured", e.RetryAfterHonored, e.RetryAfterUncaptured)
	o := edge(t, tp, "web", "orders")
	wantEq(t, "abandoned attempts", o.Summarized["abandoned_attempts"], Summary{Seen: n, Kept: MaxExactValues})
	wantNil(t, "per-try timeout", o.PerTryTimeoutMS)
	wantEq(t, "timed-out attempts leaving the timeout unknown", o.PerTryTimeoutUnknown, n)
}
