package ingest

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// filterSet decodes two Zipkin inputs: three traces (a: frontend→inventory
// at t=1s, b: frontend only at t=2s, c: batch at t=3s, one link) with a
// repeated copy of trace a's root in the second input.
func filterSet(t *testing.T) *Set {
	t.Helper()
	sp := func(trace, id, parent, svc, name string, ts int) string {
		return `{"traceId":"` + trace + `","id":"` + id + `","parentId":"` + parent + `","name":"` + name +
			`","timestamp":` + strconv.Itoa(ts) + `000000,"duration":1000,"localEndpoint":{"serviceName":"` + svc + `"}}`
	}
	set := NewSet()
	for i, doc := range []string{
		"[" + strings.Join([]string{sp("a", "1", "", "frontend", "get /", 1), sp("a", "2", "1", "inventory", "get /items", 1),
			sp("b", "3", "", "frontend", "get /health", 2)}, ",") + "]",
		"[" + strings.Join([]string{sp("c", "4", "", "batch", "nightly", 3), sp("a", "1", "", "frontend", "get /", 1)}, ",") + "]",
	} {
		if err := Decode(context.Background(), set, "in"+strconv.Itoa(i), strings.NewReader(doc), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	set.Links = append(set.Links, Link{TraceID: set.Spans[3].TraceID, SpanID: set.Spans[0].SpanID})
	x := NoExtra
	x.FirstLink, x.NumLinks = 0, 1
	set.extras = append(set.extras, x)
	set.Spans[3].Extra = uint32(len(set.extras))
	return set
}

func TestFilter(t *testing.T) {
	for _, tc := range []struct {
		name          string
		f             Filter
		spans         string // span ids kept, in order
		kept, dropped int
		counts        [2]int
	}{
		{"zero", Filter{}, "1 2 3 4 1", 3, 0, [2]int{3, 2}},
		{"unique", Filter{Unique: true}, "1 2 3 4", 3, 0, [2]int{3, 1}},
		{"service", Filter{Service: "inventory"}, "1 2 1", 1, 2, [2]int{2, 1}},
		{"unknown service", Filter{Service: "nobody"}, "", 0, 3, [2]int{0, 0}},
		{"operation", Filter{Operation: "get /health"}, "3", 1, 2, [2]int{1, 0}},
		{"service and operation", Filter{Service: "inventory", Operation: "get /"}, "", 0, 3, [2]int{0, 0}},
		{"since", Filter{Since: 2e9}, "3 4", 2, 1, [2]int{1, 1}},
		{"until", Filter{Until: 2e9}, "1 2 1", 1, 2, [2]int{2, 1}},
		{"most recent", Filter{MaxTraces: 2}, "3 4", 2, 1, [2]int{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := filterSet(t)
			kept, dropped := set.Apply(tc.f)
			var ids []string
			for _, sp := range set.Spans {
				ids = append(ids, strings.TrimLeft(sp.SpanID.String(), "0"))
			}
			if got := strings.Join(ids, " "); got != tc.spans || kept != tc.kept || dropped != tc.dropped {
				t.Errorf("spans %q kept %d dropped %d, want %q %d %d", got, kept, dropped, tc.spans, tc.kept, tc.dropped)
			}
			if c := [2]int{set.Inputs[0].Count, set.Inputs[1].Count}; c != tc.counts || set.Inputs[1].First != tc.counts[0] {
				t.Errorf("input ranges %+v, want counts %v", set.Inputs, tc.counts)
			}
			for i := range set.Spans {
				sp := &set.Spans[i]
				if len(set.SpanLinks(sp)) > 0 && set.SpanLinks(sp)[0].SpanID.String() != "0000000000000001" {
					t.Errorf("span %s: link lost", sp.SpanID)
				}
			}
		})
	}
}
