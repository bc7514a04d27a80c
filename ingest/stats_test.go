package ingest

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/retryaudit/retryaudit/samples/synth"
)

// refSummarize is Summarize written the obvious way, with maps: the
// reference the packed-key implementation must match.
func refSummarize(spans []Span, skew time.Duration) Stats {
	st := Stats{Spans: len(spans), Warnings: []Warning{}}
	if len(spans) == 0 {
		return st
	}
	type id struct {
		t TraceID
		s SpanID
	}
	first := map[id]int{}
	count := map[id]int{}
	traces := map[TraceID]bool{}
	services := map[Sym]bool{}
	lo, hi := spans[0].Start, spans[0].End
	for i, sp := range spans {
		k := id{sp.TraceID, sp.SpanID}
		if _, ok := first[k]; !ok {
			first[k] = i
		}
		count[k]++
		traces[sp.TraceID] = true
		services[sp.Service] = true
		if sp.Status == StatusError {
			st.ErrorSpans++
		}
		lo, hi = min(lo, sp.Start), max(hi, sp.End)
	}
	st.Traces, st.Services = len(traces), len(services)
	st.Start, st.End = time.Unix(0, lo).UTC(), time.Unix(0, hi).UTC()
	var w warnings
	var dups []id
	for k, n := range count {
		for range n - 1 {
			dups = append(dups, k)
		}
	}
	sort.Slice(dups, func(i, j int) bool {
		if c := bytes.Compare(dups[i].t[:], dups[j].t[:]); c != 0 {
			return c < 0
		}
		return bytes.Compare(dups[i].s[:], dups[j].s[:]) < 0
	})
	for _, k := range dups {
		w.add("duplicate span id", "span %s appears more than once in trace %s", k.s, k.t)
	}
	parent := make([]int32, len(spans))
	for i, sp := range spans {
		parent[i] = -1
		if sp.ParentID.IsZero() {
			continue
		}
		p, ok := first[id{sp.TraceID, sp.ParentID}]
		if !ok {
			w.add("missing parent", "span %s names parent %s, which is not in the input (trace %s)", sp.SpanID, sp.ParentID, sp.TraceID)
			continue
		}
		parent[i] = int32(p)
		if d := spans[p].Start - sp.Start; d > int64(skew) {
			w.add("child starts before parent", "span %s starts %s before its parent %s (clock skew tolerance %s)", sp.SpanID, time.Duration(d), sp.ParentID, skew)
		}
	}
	if n, f := cycles(parent); n > 0 {
		w.add("parent cycle", "%d spans sit on cycles of parent references (first at span %s)", n, spans[f].SpanID)
	}
	for _, sp := range spans {
		if sp.End < sp.Start {
			w.add("end before start", "span %s ends %s before it starts", sp.SpanID, time.Duration(sp.Start-sp.End))
		}
	}
	st.Warnings = append(st.Warnings, w.list...)
	return st
}

// TestSummarizeMatchesReference compares Summarize with refSummarize on
// random span sets dense in the structures it checks: duplicate ids,
// missing parents, children starting early, cycles, spans ending early.
func TestSummarizeMatchesReference(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := 1 + rng.IntN(60)
		spans := make([]Span, n)
		for i := range spans {
			sp := &spans[i]
			sp.TraceID[15] = byte(rng.IntN(4))
			sp.TraceID[0] = byte(rng.IntN(2))
			sp.SpanID[7] = byte(1 + rng.IntN(12))
			if rng.IntN(4) > 0 {
				sp.ParentID[7] = byte(rng.IntN(14))
			}
			sp.Start = rng.Int64N(100) * int64(time.Millisecond)
			sp.End = sp.Start + rng.Int64N(50)*int64(time.Millisecond) - 5*int64(time.Millisecond)
			sp.Service = Sym(rng.IntN(3))
			sp.Status = Status(rng.IntN(3))
		}
		got, want := Summarize(spans, DefaultClockSkew), refSummarize(spans, DefaultClockSkew)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d:\n got  %+v\n want %+v", seed, got, want)
		}
	}
}

// TestSummaryOneInput checks that the one-input shortcut gives the total
// that summarising the whole separately gives.
func TestSummaryOneInput(t *testing.T) {
	set := mustDecode(t, "one", []byte(request(span("3", ""), span("2", ""))))
	sum := set.Summary(DefaultClockSkew)
	want := Summarize(set.Spans, DefaultClockSkew)
	want.Warnings = MergeWarnings(set.Inputs[0].Warnings, want.Warnings)
	if !reflect.DeepEqual(sum.Total, want) || !reflect.DeepEqual(sum.Inputs[0].Stats, want) {
		t.Fatalf("total %+v, input %+v, want %+v", sum.Total, sum.Inputs[0].Stats, want)
	}
	if len(sum.Total.Warnings) > 0 && &sum.Total.Warnings[0] == &sum.Inputs[0].Warnings[0] {
		t.Fatal("the total shares its warnings with the input")
	}
}

// TestSpanTablePresized checks that a large input, plain or compressed,
// read from a file fills a span table sized once from the file's size:
// within a few percent of the span count, never doubled.
func TestSpanTablePresized(t *testing.T) {
	if testing.Short() {
		t.Skip("writes tens of MB")
	}
	reqs := synth.HTTPRequests(60_000, 5)
	var proto, jsonl bytes.Buffer
	if err := synth.WriteProtoStream(&proto, reqs); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteJSONLines(&jsonl, reqs[:len(reqs)/2]); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(proto.Bytes())
	zw.Close()
	// The synthetic spans compress twentyfold: let a 3 MB file count as
	// large.
	defer func(v int64) { presizeAfter = v }(presizeAfter)
	presizeAfter = 1 << 20
	dir := t.TempDir()
	for name, data := range map[string][]byte{"proto": proto.Bytes(), "jsonl": jsonl.Bytes(), "proto.gz": gz.Bytes()} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		set, err := ReadFiles(context.Background(), []string{path}, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		n, c := len(set.Spans), cap(set.Spans)
		if float64(c) > 1.12*float64(n) || !set.reserved {
			t.Errorf("%s (%d bytes): %d spans in a table of %d (reserved %v)", name, len(data), n, c, set.reserved)
		}
	}
}

// TestSortedKeys checks the bucketed sort against a comparison sort on
// random ids, on ids that share their top half, and on few spans.
func TestSortedKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		n       int
		topZero bool
	}{{0, false}, {1, false}, {7, false}, {5000, false}, {5000, true}, {70000, false}} {
		spans := make([]Span, tc.n)
		for i := range spans {
			for j := range spans[i].TraceID {
				spans[i].TraceID[j] = byte(rng.IntN(256))
			}
			if tc.topZero {
				clear(spans[i].TraceID[:8])
			}
			if i > 0 && rng.IntN(5) == 0 {
				spans[i].TraceID = spans[rng.IntN(i)].TraceID
			}
			spans[i].SpanID[7] = byte(rng.IntN(4))
		}
		got := sortedKeys(spans)
		want := slices.Clone(got)
		slices.SortFunc(want, compareKeys)
		if !slices.Equal(got, want) || len(got) != tc.n {
			t.Errorf("%d spans (top half zero %v): keys out of order", tc.n, tc.topZero)
		}
		seen := make([]bool, tc.n)
		for _, k := range got {
			seen[k.idx] = true
		}
		if slices.Contains(seen, false) {
			t.Errorf("%d spans: an index is missing", tc.n)
		}
	}
}
