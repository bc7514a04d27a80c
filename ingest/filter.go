package ingest

import (
	"cmp"
	"slices"
)

// Filter selects whole traces: a trace is kept or dropped with all its
// spans, so no call loses its attempts. The zero value keeps everything.
type Filter struct {
	// Service keeps traces with a span of this service; Operation, traces
	// with a span of this name (of Service, when both are set).
	Service, Operation string
	// Since and Until (Unix nanoseconds, 0 for unbounded) keep traces whose
	// first span starts in [Since, Until).
	Since, Until int64
	// MaxTraces keeps at most this many traces, the most recent first (by
	// first start, then trace id), as tracing backends answer a limit.
	MaxTraces int
	// Unique drops repeated copies of a span (same trace, id, service,
	// start and end), as queries per service return a trace once per
	// service it crosses.
	Unique bool
}

// IsZero reports whether the filter keeps everything.
func (f Filter) IsZero() bool { return f == Filter{} }

// Apply removes from s the traces f drops, keeping the order of the rest and
// the input records in step, and returns how many traces it kept and dropped.
func (s *Set) Apply(f Filter) (kept, dropped int) {
	type trace struct {
		first int64
		match bool
		keep  bool
	}
	traces := map[TraceID]*trace{}
	var order []TraceID
	svc, op := Sym(0), Sym(0)
	if f.Service != "" {
		svc = s.symOf(f.Service)
	}
	if f.Operation != "" {
		op = s.symOf(f.Operation)
	}
	for i := range s.Spans {
		sp := &s.Spans[i]
		t := traces[sp.TraceID]
		if t == nil {
			t = &trace{first: sp.Start}
			traces[sp.TraceID] = t
			order = append(order, sp.TraceID)
		}
		t.first = min(t.first, sp.Start)
		if (f.Service == "" || sp.Service == svc && svc != 0) && (f.Operation == "" || sp.Name == op && op != 0) {
			t.match = true
		}
	}
	var candidates []TraceID
	for _, id := range order {
		t := traces[id]
		if t.match && (f.Since == 0 || t.first >= f.Since) && (f.Until == 0 || t.first < f.Until) {
			candidates = append(candidates, id)
		}
	}
	if f.MaxTraces > 0 && len(candidates) > f.MaxTraces {
		slices.SortFunc(candidates, func(a, b TraceID) int {
			if c := cmp.Compare(traces[b].first, traces[a].first); c != 0 {
				return c
			}
			return slices.Compare(a[:], b[:])
		})
		candidates = candidates[:f.MaxTraces]
	}
	for _, id := range candidates {
		traces[id].keep = true
	}
	kept, dropped = len(candidates), len(order)-len(candidates)
	if dropped == 0 && !f.Unique {
		return kept, dropped
	}
	s.compact(func(sp *Span) bool { return traces[sp.TraceID].keep }, f.Unique)
	return kept, dropped
}

// symOf returns the Sym of v without interning it (0 when v is unknown).
func (s *Set) symOf(v string) Sym {
	v, _ = clip(v)
	return s.index[v]
}

// compact keeps the spans keep accepts (and, when unique, the first copy
// of each), rebuilding links and each input's span range.
func (s *Set) compact(keep func(*Span) bool, unique bool) {
	type spanKey struct {
		t          TraceID
		s          SpanID
		svc        Sym
		start, end int64
	}
	var seen map[spanKey]bool
	if unique {
		seen = map[spanKey]bool{}
	}
	spans, links, extras := s.Spans[:0], make([]Link, 0, len(s.Links)), make([]SpanExtra, 0, len(s.extras))
	add := func(i int) {
		sp := s.Spans[i]
		if !keep(&sp) {
			return
		}
		if unique {
			k := spanKey{sp.TraceID, sp.SpanID, sp.Service, sp.Start, sp.End}
			if seen[k] {
				return
			}
			seen[k] = true
		}
		if sp.Extra > 0 {
			x := s.extras[sp.Extra-1]
			if x.NumLinks > 0 {
				old := s.Links[x.FirstLink : x.FirstLink+uint32(x.NumLinks)]
				x.FirstLink = uint32(len(links))
				links = append(links, old...)
			}
			extras = append(extras, x)
			sp.Extra = uint32(len(extras))
		}
		spans = append(spans, sp)
	}
	// Inputs hold consecutive, ordered ranges of Spans.
	pos := 0
	for k := range s.Inputs {
		x := &s.Inputs[k]
		for ; pos < x.First; pos++ {
			add(pos)
		}
		first := len(spans)
		for end := x.First + x.Count; pos < end; pos++ {
			add(pos)
		}
		x.First, x.Count = first, len(spans)-first
	}
	for ; pos < len(s.Spans); pos++ {
		add(pos)
	}
	s.Spans, s.Links, s.extras = spans, links, extras
}
