package graph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGroupByTrace: dealing span keys to buckets by trace hash and
// sorting the buckets leaves the keys of each trace together, in the
// order one sort gives them, for random trace ids, ids with their top half
// zero (Jaeger's 64-bit ids), few traces, and duplicates (ordered by
// position); at sizes sorted whole, dealt once, and dealt twice.
func TestGroupByTrace(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name   string
		hi, lo func() uint64
	}{
		{"random", r.Uint64, r.Uint64},
		{"64-bit ids", func() uint64 { return 0 }, r.Uint64},
		{"few traces", func() uint64 { return uint64(r.IntN(4)) << 62 }, func() uint64 { return uint64(r.IntN(3)) }},
	} {
		for _, n := range []int{keysPerBucket - 1, keysPerBucket << firstPassBits, 3 << 14} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, n), func(t *testing.T) {
				keys := make([]spanKey, n)
				for i := range keys {
					keys[i] = spanKey{hi: tc.hi(), lo: tc.lo(), sid: uint64(r.IntN(50)), idx: int32(i)}
					if i > 0 && r.IntN(4) == 0 { // a span of the trace before
						keys[i].hi, keys[i].lo = keys[i-1].hi, keys[i-1].lo
					}
				}
				want := slices.Clone(keys)
				slices.SortFunc(want, compareKeys)
				groupByTrace(keys)
				seen := map[[2]uint64]bool{}
				for lo := 0; lo < n; {
					hi := lo + 1
					for hi < n && keys[hi].hi == keys[lo].hi && keys[hi].lo == keys[lo].lo {
						hi++
					}
					id := [2]uint64{keys[lo].hi, keys[lo].lo}
					if seen[id] {
						t.Fatalf("trace %x is in two places", id)
					}
					seen[id] = true
					trace := keys[lo:hi]
					if !slices.IsSortedFunc(trace, compareKeys) {
						t.Fatalf("trace %x is out of order", id)
					}
					from, _ := slices.BinarySearchFunc(want, spanKey{hi: id[0], lo: id[1]}, spanKey.cmpID)
					if !slices.Equal(trace, want[from:from+len(trace)]) || from+len(trace) < n && want[from+len(trace)].hi == id[0] && want[from+len(trace)].lo == id[1] {
						t.Fatalf("trace %x holds other keys than one sort gives it", id)
					}
					lo = hi
				}
			})
		}
	}
}
