package graph

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/retryaudit/retryaudit/ingest"
)

// MaxExactValues is how many values of one kind (an edge's waits, its
// callee's durations, …) a partial keeps whole. Past it, a value list
// keeps a bounded sample and a quantile list a sketch, so that a partial's
// size does not grow with the traffic it read. Every committed sample and
// truth test stays below it (the most any of them holds is 929), so their
// fits read every value.
const MaxExactValues = 4096

// SketchAccuracy is the relative accuracy of the quantile sketches that
// replace a list of more than MaxExactValues values: a quantile read from
// one is within 1% of a value of the population's at that rank.
const SketchAccuracy = 0.01

// sampleKey is the key by which a sample keeps values: a hash of the trace
// and span a value was read from, and of which of that span's values it is
// (nth), so that which values are kept depends on the values' identities
// only, never on the shard that read them or the order partials merged.
func sampleKey(t ingest.TraceID, s ingest.SpanID, nth int) uint64 {
	h := mix64(binary.LittleEndian.Uint64(t[:8]))
	h = mix64(h ^ binary.LittleEndian.Uint64(t[8:]))
	h = mix64(h ^ binary.LittleEndian.Uint64(s[:]))
	return mix64(h ^ uint64(nth))
}

// mix64 is a bijective 64-bit finaliser: every input bit changes about
// half of the output bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// sample is a bounded list of values that merges: it keeps every value
// while it has seen at most MaxExactValues, and beyond that the
// MaxExactValues values of lowest key (sampleKey), a uniform sample that
// no split of the traces and no order of merging changes. Values of the
// same key are told apart by order; a fit reads the kept values in no
// particular order.
type sample[T any] struct {
	seen  int
	kept  []keyed[T]
	order func(a, b T) int
}

type keyed[T any] struct {
	key uint64
	v   T
}

func newSample[T any](order func(a, b T) int) sample[T] { return sample[T]{order: order} }

func (s *sample[T]) add(key uint64, v T) {
	s.seen++
	s.kept = append(s.kept, keyed[T]{key, v})
	if len(s.kept) >= 2*MaxExactValues {
		s.trim()
	}
}

func (s *sample[T]) merge(o *sample[T]) {
	s.seen += o.seen
	s.kept = append(s.kept, o.kept...)
	if len(s.kept) >= 2*MaxExactValues {
		s.trim()
	}
}

// trim keeps the MaxExactValues values of lowest key. A value it drops is
// not among the lowest of any superset either, so trimming early or late
// keeps the same values.
func (s *sample[T]) trim() {
	if len(s.kept) <= MaxExactValues {
		return
	}
	slices.SortFunc(s.kept, func(a, b keyed[T]) int { return cmp.Or(cmp.Compare(a.key, b.key), s.order(a.v, b.v)) })
	s.kept = slices.Clip(s.kept[:MaxExactValues])
}

// values are the kept values, in no particular order.
func (s *sample[T]) values() []T {
	s.trim()
	out := make([]T, len(s.kept))
	for i, k := range s.kept {
		out[i] = k.v
	}
	return out
}

// scale is how many of the values seen n of the kept values stand for:
// n while the sample keeps every value, else n·seen/kept rounded, the
// estimate a uniform sample gives (its standard error is about
// √n·seen/kept, less as kept nears seen).
func (s *sample[T]) scale(n int) int {
	if s.seen <= MaxExactValues {
		return n
	}
	return int(math.Round(float64(n) * float64(s.seen) / MaxExactValues))
}

// summary says how a fit read the values: nil when it read all of them.
func (s *sample[T]) summary() *Summary {
	if s.seen <= MaxExactValues {
		return nil
	}
	return &Summary{Seen: s.seen, Kept: MaxExactValues}
}

// dist is a distribution of values that merges, for the fits that read
// quantiles: every value while there are at most MaxExactValues, then a
// DDSketch (github.com/DataDog/sketches-go) of relative accuracy
// SketchAccuracy holding all of them. Which form a dist has and what it
// holds depend only on the values added, not on their order: the sketch's
// bins are counts that add.
type dist struct {
	exact  []float64
	sorted bool
	sk     *ddsketch.DDSketch // nil while exact
}

func (d *dist) n() int {
	if d.sk != nil {
		return int(d.sk.GetCount())
	}
	return len(d.exact)
}

func (d *dist) add(v float64) {
	if d.sk != nil {
		d.put(v)
		return
	}
	d.exact = append(d.exact, v)
	d.sorted = false
	if len(d.exact) > MaxExactValues {
		d.toSketch()
	}
}

func (d *dist) merge(o *dist) {
	switch {
	case o.sk != nil:
		if d.sk == nil {
			d.toSketch()
		}
		// The mappings are the same (one accuracy): merging cannot fail.
		_ = d.sk.MergeWith(o.sk)
	case d.sk != nil:
		for _, v := range o.exact {
			d.put(v)
		}
	default:
		d.exact = append(d.exact, o.exact...)
		d.sorted = false
		if len(d.exact) > MaxExactValues {
			d.toSketch()
		}
	}
}

func (d *dist) toSketch() {
	// The accuracy is a valid constant: the sketch is always made.
	d.sk, _ = ddsketch.LogUnboundedDenseDDSketch(SketchAccuracy)
	for _, v := range d.exact {
		d.put(v)
	}
	d.exact, d.sorted = nil, false
}

// put adds v to the sketch. Durations in milliseconds are far inside what
// a sketch indexes; a NaN, which no span's times give, is left out.
func (d *dist) put(v float64) { _ = d.sk.Add(v) }

// quantile is the value at p (0..1): interpolated between the values
// while exact, the sketch's value at rank p·(n-1) after; 0 when empty.
func (d *dist) quantile(p float64) float64 {
	if d.sk != nil {
		v, err := d.sk.GetValueAtQuantile(p)
		if err != nil {
			return 0
		}
		return v
	}
	if !d.sorted {
		slices.Sort(d.exact)
		d.sorted = true
	}
	return quantile(d.exact, p)
}

// quantiles are the values at levels, rounded.
func (d *dist) quantiles(levels []float64) []float64 {
	out := make([]float64, len(levels))
	for i, p := range levels {
		out[i] = round3(d.quantile(p))
	}
	return out
}

// clone is an independent copy of d.
func (d *dist) clone() *dist {
	c := &dist{exact: slices.Clone(d.exact), sorted: d.sorted}
	if d.sk != nil {
		c.sk = d.sk.Copy()
	}
	return c
}

// latency is the p50, p95 and p99, rounded.
func (d *dist) latency() (p50, p95, p99 float64) {
	return round3(d.quantile(0.5)), round3(d.quantile(0.95)), round3(d.quantile(0.99))
}

// summary says how a fit read the values: nil when it read all of them.
func (d *dist) summary() *Summary {
	if d.sk == nil {
		return nil
	}
	return &Summary{Seen: d.n(), RelativeAccuracy: SketchAccuracy}
}

// summarized records in m that the list name was read from a summary s;
// nothing when s is nil (the list was read whole).
func summarized(m *map[string]Summary, name string, s *Summary) {
	if s == nil {
		return
	}
	if *m == nil {
		*m = map[string]Summary{}
	}
	(*m)[name] = *s
}

// summarizedList words an edge's summaries, in name order.
func summarizedList(m map[string]Summary) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		s := m[name]
		if s.Kept > 0 {
			parts = append(parts, fmt.Sprintf("%s: a sample of %d of %d", name, s.Kept, s.Seen))
		} else {
			parts = append(parts, fmt.Sprintf("%s: a sketch of %d, ±%g%%", name, s.Seen, 100*s.RelativeAccuracy))
		}
	}
	return strings.Join(parts, "; ")
}
