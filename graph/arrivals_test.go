package graph

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// TestArrivalTimeline: the topology keeps when the root requests of the
// arrival window came and to which root operation, listed one by one up
// to a limit and counted per bin past it, strays left out; nil where a
// root is no root operation of the topology (a CLIENT span).
func TestArrivalTimeline(t *testing.T) {
	// Root requests at these ms, a ledger read between quotes.
	starts := []float64{0, 5, 7, 40, 41, 300}
	build := func(otherRoot bool) *index {
		b := newBuilder()
		for i, ms := range starts {
			b.newTrace()
			op := "GET /quotes"
			if i%3 == 1 {
				op = "GET /ledger"
			}
			root := b.server(-1, "front", op, ms, 2)
			b.client(root, "db", ms+0.5, 1, httpStatus(200))
		}
		if otherRoot {
			// A job's INTERNAL span with no SERVER span above it.
			b.newTrace()
			b.server(b.add(-1, ingest.KindInternal, "cron", "tick", 100, 1, nil), "front", "GET /quotes", 100.2, 0.5)
		}
		ix, err := newIndex(context.Background(), b.set)
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	for _, tc := range []struct {
		name      string
		otherRoot bool
		limit     int
		gaps      []int64
		entry     []int
		binUS     int64
		counts    []int
		nilWant   bool
	}{
		{name: "listed", limit: 10, gaps: []int64{0, 5000, 2000, 33000, 1000, 259000}, entry: []int{1, 0, 1, 1, 0, 1}},
		// 300 ms in at most 4 bins: 75,001 µs each.
		{name: "binned", limit: 4, binUS: 75001, counts: []int{5, 0, 0, 1}},
		{name: "a root that is no root operation", otherRoot: true, limit: 10, nilWant: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := build(tc.otherRoot)
			rs := mapShards(ix, ix.rootsOf, (*rootSet).merge)
			lo, hi, _, _ := arrivalWindow(rootStarts(rs.ops))
			tl := arrivalTimeline(rs.ops, lo, hi, tc.limit)
			if tc.nilWant {
				if tl != nil {
					t.Fatalf("timeline %+v, want none", tl)
				}
				return
			}
			if tl == nil {
				t.Fatal("no timeline")
			}
			wantEntries := []TimelineEntry{{"front", "GET /ledger", 2}, {"front", "GET /quotes", 4}}
			if !slices.Equal(tl.Entries, wantEntries) || tl.Requests != len(starts) {
				t.Errorf("entries %v, %d requests; want %v, %d", tl.Entries, tl.Requests, wantEntries, len(starts))
			}
			if !slices.Equal(tl.GapsUS, tc.gaps) || !slices.Equal(tl.Entry, tc.entry) || tl.BinUS != tc.binUS || !slices.Equal(tl.Counts, tc.counts) {
				t.Errorf("gaps %v entry %v bins %dµs %v; want %v %v %dµs %v", tl.GapsUS, tl.Entry, tl.BinUS, tl.Counts, tc.gaps, tc.entry, tc.binUS, tc.counts)
			}
			arr, err := tl.Arrivals()
			if err != nil {
				t.Fatal(err)
			}
			if len(arr) != len(starts) || !slices.IsSortedFunc(arr, func(a, b Arrival) int { return cmp.Compare(a.AtS, b.AtS) }) {
				t.Fatalf("arrivals %v: want %d in time order", arr, len(starts))
			}
			ledger := 0
			for i, a := range arr {
				if a.Operation == "GET /ledger" {
					ledger++
				}
				if !tl.Binned() && math.Abs(a.AtS-starts[i]/1e3) > 1e-9 {
					t.Errorf("arrival %d at %gs, want %gs", i, a.AtS, starts[i]/1e3)
				}
			}
			if ledger != 2 {
				t.Errorf("%d ledger reads in %v, want 2", ledger, arr)
			}
		})
	}
}

// TestTimelineArrivalsChecked: a timeline read from a file that does not
// add up is an error that says what is wrong, not arrivals made up.
func TestTimelineArrivalsChecked(t *testing.T) {
	one := []TimelineEntry{{"api", "GET /x", 2}}
	two := []TimelineEntry{{"api", "GET /x", 1}, {"api", "GET /y", 1}}
	for _, tc := range []struct {
		name string
		tl   ArrivalTimeline
		want string
	}{
		{"no requests", ArrivalTimeline{Entries: one}, "want 1 to"},
		{"entries disagree", ArrivalTimeline{Entries: one, Requests: 3, GapsUS: []int64{0, 1, 2}}, "hold 2 root requests, not the 3"},
		{"gap missing", ArrivalTimeline{Entries: one, Requests: 2, GapsUS: []int64{0}}, "1 gaps"},
		{"negative gap", ArrivalTimeline{Entries: one, Requests: 2, GapsUS: []int64{0, -5}}, "gap 1 is -5µs"},
		{"entries unnamed", ArrivalTimeline{Entries: two, Requests: 2, GapsUS: []int64{0, 5}}, "an entry each"},
		{"entry out of range", ArrivalTimeline{Entries: two, Requests: 2, GapsUS: []int64{0, 5}, Entry: []int{0, 2}}, "request 1 is of entry 2"},
		{"bins disagree", ArrivalTimeline{Entries: one, Requests: 2, BinUS: 10, Counts: []int{1}}, "count 1 root requests"},
		{"negative bin", ArrivalTimeline{Entries: one, Requests: 2, BinUS: 10, Counts: []int{3, -1}}, "bin 0 counts 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arr, err := tc.tl.Arrivals()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("arrivals %v, error %v; want an error containing %q", arr, err, tc.want)
			}
		})
	}
	// Binned, the entries are dealt by their shares.
	tl := ArrivalTimeline{Entries: []TimelineEntry{{"api", "a", 3}, {"api", "b", 1}}, Requests: 4, BinUS: 1000, Counts: []int{2, 0, 2}}
	arr, err := tl.Arrivals()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range arr {
		got = append(got, a.Operation+"@"+strconv.FormatFloat(a.AtS*1e3, 'f', -1, 64))
	}
	if want := []string{"a@0.25", "a@0.75", "b@2.25", "a@2.75"}; !slices.Equal(got, want) {
		t.Errorf("binned arrivals %v, want %v", got, want)
	}
}
