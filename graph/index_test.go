package graph

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortKeys: the in-place two-core sort orders span keys exactly as one
// sort does, for random trace ids, ids that all fall in one half, and
// duplicates (ordered by position).
func TestSortKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		hi   func() uint64
	}{
		{"random", r.Uint64},
		{"lower half only", func() uint64 { return r.Uint64() >> 1 }},
		{"upper half only", func() uint64 { return r.Uint64() | 1<<63 }},
		{"few traces", func() uint64 { return uint64(r.IntN(4)) << 62 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := make([]spanKey, 3<<14)
			for i := range keys {
				keys[i] = spanKey{hi: tc.hi(), lo: uint64(r.IntN(3)), sid: uint64(r.IntN(50)), idx: int32(i)}
			}
			want := slices.Clone(keys)
			slices.SortFunc(want, compareKeys)
			if got := sortKeys(keys); !slices.Equal(got, want) {
				t.Fatal("sortKeys orders differently from one sort")
			}
		})
	}
}
