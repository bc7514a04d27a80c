package ingest

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// spanView is a Span with its interned strings resolved, ids in hex and
// links inlined, so spans from different Sets (or decoders) compare with ==
// and print readably in test failures.
type spanView struct {
	TraceID, SpanID, ParentID string
	Start, End                int64
	Service, Name, Peer       string
	Method, Route             string
	StatusMessage, ErrorType  string
	Target                    uint64
	Kind, Status              string
	Flags                     uint8
	GRPCStatus                int8
	HTTPStatus                uint16
	ResendCount, PrevAttempts int16
	RetryCount                int16
	RetryAfterMS              int32
	RequestKey                uint64
	// Origin is Span.Origin: the sampling and the instance it indexes.
	Origin struct {
		Sampling
		Instance string
	}
	Links string // "trace/span" pairs, comma-separated, for FirstLink/NumLinks
}

// viewSpan renders sp, whose strings and links live in set.
func viewSpan(set *Set, sp *Span) spanView {
	x := set.Extra(sp)
	var links []string
	for _, l := range set.SpanLinks(sp) {
		links = append(links, l.TraceID.String()+"/"+l.SpanID.String())
	}
	v := spanView{
		TraceID: sp.TraceID.String(), SpanID: sp.SpanID.String(), ParentID: sp.ParentID.String(),
		Start: sp.Start, End: sp.End,
		Service: set.Str(sp.Service), Name: set.Str(sp.Name), Peer: set.Str(sp.Peer),
		Method: set.Str(sp.Method), Route: set.Str(sp.Route),
		StatusMessage: set.Str(x.StatusMessage), ErrorType: set.Str(x.ErrorType),
		Target: sp.Target, Kind: sp.Kind.String(), Status: sp.Status.String(), Flags: sp.Flags,
		GRPCStatus: sp.GRPCStatus, HTTPStatus: sp.HTTPStatus,
		ResendCount: x.ResendCount, PrevAttempts: x.PrevAttempts, RetryCount: x.RetryCount,
		RetryAfterMS: x.RetryAfterMS, RequestKey: x.RequestKey, Links: strings.Join(links, ","),
	}
	v.Origin.Sampling, v.Origin.Instance = set.Sampling(sp), set.Str(set.Instance(sp))
	return v
}

// viewSpans renders every span of set, sorted by trace id, span id and
// start (stable, so duplicates keep their decoding order).
func viewSpans(set *Set) []spanView {
	out := make([]spanView, len(set.Spans))
	for i := range set.Spans {
		out[i] = viewSpan(set, &set.Spans[i])
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.TraceID != b.TraceID {
			return a.TraceID < b.TraceID
		}
		if a.SpanID != b.SpanID {
			return a.SpanID < b.SpanID
		}
		return a.Start < b.Start
	})
	return out
}

// atMicros truncates the times the way Jaeger stores them: the start to
// whole microseconds, the duration (not the end) likewise.
func (v spanView) atMicros() spanView {
	dur := (v.End - v.Start) / 1000 * 1000
	v.Start = v.Start / 1000 * 1000
	v.End = v.Start + dur
	return v
}

// diffSpanViews reports the first differences between two span lists, or
// "" when they are equal.
func diffSpanViews(got, want []spanView) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d spans, want %d", len(got), len(want))
	}
	var b strings.Builder
	for i := range got {
		if got[i] != want[i] {
			fmt.Fprintf(&b, "span %d:\n got  %+v\n want %+v\n", i, got[i], want[i])
		}
	}
	return b.String()
}

// TestSpanViewCoversSpan fails when Span or SpanExtra gains a field
// spanView does not render, so comparisons built on it never silently
// ignore one. Span.Extra is rendered as the SpanExtra it indexes.
func TestSpanViewCoversSpan(t *testing.T) {
	view := reflect.TypeFor[spanView]()
	for _, st := range []reflect.Type{reflect.TypeFor[Span](), reflect.TypeFor[SpanExtra]()} {
		for i := 0; i < st.NumField(); i++ {
			name := st.Field(i).Name
			switch name {
			case "Extra":
				continue
			case "FirstLink", "NumLinks":
				name = "Links"
			}
			if _, ok := view.FieldByName(name); !ok {
				t.Errorf("spanView does not render %s.%s", st.Name(), st.Field(i).Name)
			}
		}
	}
}
