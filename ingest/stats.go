package ingest

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// DefaultClockSkew is how far a child may start before its parent before
// Summarize warns: spans from different hosts carry their clocks' offsets.
const DefaultClockSkew = 10 * time.Millisecond

// Stats summarises a run of spans: what `retryaudit ingest` prints.
type Stats struct {
	Traces     int       `json:"traces"`
	Spans      int       `json:"spans"`
	Services   int       `json:"services"`
	ErrorSpans int       `json:"error_spans"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Warnings   []Warning `json:"warnings"`
}

// Summarize counts traces, services and error spans in spans and checks
// their structure: parents missing from the input, duplicate span ids,
// children starting before their parent by more than skew, spans that end
// before they start, and cycles in parent references. Decoding warnings are
// not included; callers merge them.
func Summarize(spans []Span, skew time.Duration) Stats {
	st := Stats{Spans: len(spans), Warnings: []Warning{}}
	if len(spans) == 0 {
		return st
	}
	var w warnings
	keys := sortedKeys(spans)

	services := map[Sym]struct{}{}
	lo, hi := spans[0].Start, spans[0].End
	for i := range spans {
		sp := &spans[i]
		services[sp.Service] = struct{}{}
		if sp.Status == StatusError {
			st.ErrorSpans++
		}
		lo, hi = min(lo, sp.Start), max(hi, sp.End)
	}
	st.Services = len(services)
	st.Start, st.End = time.Unix(0, lo).UTC(), time.Unix(0, hi).UTC()

	// One pass over the traces in key order: count them, find duplicate
	// span ids, and resolve every parent inside its own trace's keys.
	const missing = -2
	parent := make([]int32, len(spans))
	for g := 0; g < len(keys); {
		end := g + 1
		for end < len(keys) && keys[end].hi == keys[g].hi && keys[end].lo == keys[g].lo {
			end++
		}
		st.Traces++
		trace := keys[g:end]
		for j := range trace {
			k := &trace[j]
			sp := &spans[k.idx]
			if j > 0 && k.span == trace[j-1].span {
				w.add("duplicate span id", "span %s appears more than once in trace %s", sp.SpanID, sp.TraceID)
			}
			parent[k.idx] = -1
			if sp.ParentID.IsZero() {
				continue
			}
			pid := binary.BigEndian.Uint64(sp.ParentID[:])
			// The first of equal keys is the earliest span with that id.
			at, found := slices.BinarySearchFunc(trace, pid, func(x spanKey, id uint64) int { return cmp.Compare(x.span, id) })
			if found {
				parent[k.idx] = trace[at].idx
			} else {
				parent[k.idx] = missing
			}
		}
		g = end
	}
	// Warnings in input order, so each example is the first such span.
	for i := range spans {
		sp := &spans[i]
		switch p := parent[i]; {
		case p == missing:
			w.add("missing parent", "span %s names parent %s, which is not in the input (trace %s)", sp.SpanID, sp.ParentID, sp.TraceID)
			parent[i] = -1
		case p >= 0:
			if d := spans[p].Start - sp.Start; d > int64(skew) {
				w.add("child starts before parent", "span %s starts %s before its parent %s (clock skew tolerance %s)", sp.SpanID, time.Duration(d), sp.ParentID, skew)
			}
		}
	}
	if n, first := cycles(parent); n > 0 {
		w.add("parent cycle", "%d spans sit on cycles of parent references (first at span %s)", n, spans[first].SpanID)
	}
	for i := range spans {
		if spans[i].End < spans[i].Start {
			w.add("end before start", "span %s ends %s before it starts", spans[i].SpanID, time.Duration(spans[i].Start-spans[i].End))
		}
	}
	st.Warnings = append(st.Warnings, w.list...)
	return st
}

// spanKey is a span's trace and span id packed into integers that order as
// the bytes do, with its index: sorting 32-byte keys in place is several
// times cheaper than sorting indices through the 88-byte spans.
type spanKey struct {
	hi, lo, span uint64
	idx          int32
}

// sortedKeys returns the keys of spans ordered by trace id, span id and
// index. Trace ids are random, so a counting sort on their top bits leaves
// buckets of a few keys each, which are then sorted whole: a third of the
// time of a comparison sort over a million keys. When every span shares
// the top half of its trace id (64-bit ids, right-aligned), the bottom half
// is bucketed instead.
func sortedKeys(spans []Span) []spanKey {
	keys := make([]spanKey, len(spans))
	if len(spans) == 0 {
		return keys
	}
	bits := 8
	for bits < 20 && 1<<(bits+3) < len(spans) {
		bits++
	}
	shift := 64 - bits
	first := binary.BigEndian.Uint64(spans[0].TraceID[:8])
	useLo := true
	for i := range spans {
		if binary.BigEndian.Uint64(spans[i].TraceID[:8]) != first {
			useLo = false
			break
		}
	}
	word := 0
	if useLo {
		word = 8
	}
	start := make([]int32, 1<<bits+1)
	for i := range spans {
		start[binary.BigEndian.Uint64(spans[i].TraceID[word:word+8])>>shift+1]++
	}
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	next := slices.Clone(start[:len(start)-1])
	for i := range spans {
		sp := &spans[i]
		k := spanKey{
			hi:   binary.BigEndian.Uint64(sp.TraceID[:8]),
			lo:   binary.BigEndian.Uint64(sp.TraceID[8:]),
			span: binary.BigEndian.Uint64(sp.SpanID[:]),
			idx:  int32(i),
		}
		w := k.hi
		if useLo {
			w = k.lo
		}
		b := w >> shift
		keys[next[b]] = k
		next[b]++
	}
	for b := 0; b+1 < len(start); b++ {
		bucket := keys[start[b]:start[b+1]]
		if len(bucket) <= 12 {
			insertionSort(bucket)
		} else {
			slices.SortFunc(bucket, compareKeys)
		}
	}
	return keys
}

func compareKeys(a, b spanKey) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	if c := cmp.Compare(a.lo, b.lo); c != 0 {
		return c
	}
	if c := cmp.Compare(a.span, b.span); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

func insertionSort(keys []spanKey) {
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && compareKeys(keys[j], keys[j-1]) < 0; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

// cycles returns how many spans lie on a cycle of parent links and the
// first such span, in linear time: each walk up the parent chain stops at a
// span already settled, and a walk that meets its own path found a cycle.
func cycles(parent []int32) (n int, first int32) {
	const (
		unseen = iota
		onPath
		settled
	)
	state := make([]uint8, len(parent))
	first = -1
	var path []int32
	for i := range parent {
		path = path[:0]
		x := int32(i)
		for x >= 0 && state[x] == unseen {
			state[x] = onPath
			path = append(path, x)
			x = parent[x]
		}
		if x >= 0 && state[x] == onPath {
			for j := len(path) - 1; j >= 0; j-- {
				n++
				if first < 0 || path[j] < first {
					first = path[j]
				}
				if path[j] == x {
					break
				}
			}
		}
		for _, y := range path {
			state[y] = settled
		}
	}
	return n, first
}

// MergeWarnings combines warning lists, adding counts of equal kinds and
// keeping the first example.
func MergeWarnings(lists ...[]Warning) []Warning {
	out := []Warning{}
	for _, l := range lists {
		for _, x := range l {
			found := false
			for i := range out {
				if out[i].Kind == x.Kind {
					out[i].Count += x.Count
					found = true
					break
				}
			}
			if !found {
				out = append(out, x)
			}
		}
	}
	return out
}

// String renders a one-line summary.
func (s Stats) String() string {
	return fmt.Sprintf("%d traces, %d spans, %d services, %d error spans", s.Traces, s.Spans, s.Services, s.ErrorSpans)
}

// InputStats is one input's Stats with where it came from.
type InputStats struct {
	Name        string `json:"name"`
	Format      Format `json:"format"`
	Compression string `json:"compression,omitempty"`
	Bytes       int64  `json:"bytes"`
	Stats
}

// Summary is the per-input and total view of a Set.
type Summary struct {
	Schema  string       `json:"schema"`
	Inputs  []InputStats `json:"inputs"`
	Total   Stats        `json:"total"`
	Skipped []Skip       `json:"skipped"`
}

// SummarySchema versions the JSON form of Summary.
const SummarySchema = "retryaudit.ingest/v1"

// Summary summarises every input of the set and the whole, with decoding
// warnings merged into the structural ones. A trace spread over several
// inputs is whole only in the total, so per-input "missing parent" warnings
// can disappear there.
func (s *Set) Summary(skew time.Duration) Summary {
	sum := Summary{Schema: SummarySchema, Inputs: []InputStats{}, Skipped: append([]Skip{}, s.Skipped...)}
	if len(s.Inputs) == 1 && s.Inputs[0].First == 0 && s.Inputs[0].Count == len(s.Spans) {
		// One input is the whole: summarise it once.
		in := s.Inputs[0]
		st := Summarize(s.Spans, skew)
		st.Warnings = MergeWarnings(in.Warnings, st.Warnings)
		sum.Inputs = append(sum.Inputs, InputStats{Name: in.Name, Format: in.Format, Compression: in.Compression, Bytes: in.Bytes, Stats: st})
		sum.Total = st
		sum.Total.Warnings = append([]Warning{}, st.Warnings...)
		return sum
	}
	var decodeWarnings [][]Warning
	for _, in := range s.Inputs {
		st := Summarize(s.Spans[in.First:in.First+in.Count], skew)
		st.Warnings = MergeWarnings(in.Warnings, st.Warnings)
		decodeWarnings = append(decodeWarnings, in.Warnings)
		sum.Inputs = append(sum.Inputs, InputStats{Name: in.Name, Format: in.Format, Compression: in.Compression, Bytes: in.Bytes, Stats: st})
	}
	sum.Total = Summarize(s.Spans, skew)
	sum.Total.Warnings = MergeWarnings(append(decodeWarnings, sum.Total.Warnings)...)
	return sum
}
