package graph

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestClientRoots: a client with no span around its calls (root CLIENT
// spans) is an entry of the topology: its calls are root requests, in
// Calibration.ClientRoots, on the arrival timeline and in the arrivals
// --arrivals trace replays; a call whose retries are joined from other
// traces lasts from its first attempt to its last and ends as the last
// did.
func TestClientRoots(t *testing.T) {
	// linked sends n requests from loadgen, each attempt a root marked
	// with its resend count, answered with codes in turn: 10 ms each, the
	// next attempt 50 ms and then 100 ms after one ends.
	linked := func(b *builder, n int, codes ...int) {
		for i := range n {
			t := float64(i) * 1000
			for k, code := range codes {
				c := b.rootClient("loadgen", "api", t, 10, httpStatus(code), method("GET"), target("http://api/x"), instance("lg-1"), resend(k))
				b.server(c, "api", "GET /x", t+0.5, 9, httpStatus(code))
				t += 10 + 50*float64(k+1)
			}
		}
	}
	type rootFigures struct {
		requests          int
		ok, serverErrors  float64
		p50, p90, p99     float64
		clientRoots       []ClientRoot
		timeline          []TimelineEntry // nil: no timeline
		arrivals          map[string]int  // by service and operation
		firstArrivalEntry string
	}
	for _, tc := range []struct {
		name  string
		build func(b *builder)
		want  rootFigures
	}{{
		// Every attempt a root, nothing links them: each is a call and
		// a root request of its own, 10 ms long.
		name:  "every attempt a root",
		build: func(b *builder) { rootRetries(b, "lg-1", 3, 1000) },
		want: rootFigures{requests: 9, ok: 3.0 / 9, serverErrors: 6.0 / 9, p50: 10, p90: 10, p99: 10,
			clientRoots: []ClientRoot{{"loadgen", "GET", 9}}, timeline: []TimelineEntry{{"loadgen", "GET", 9}},
			arrivals: map[string]int{"loadgen GET": 9}, firstArrivalEntry: "loadgen GET"},
	}, {
		// Resend markers link each request's three roots: one root
		// request each, from 0 to the third's end at 180 ms, answered.
		name:  "linked retries, answered",
		build: func(b *builder) { linked(b, 3, 503, 503, 200) },
		want: rootFigures{requests: 3, ok: 1, p50: 180, p90: 180, p99: 180,
			clientRoots: []ClientRoot{{"loadgen", "GET", 3}}, timeline: []TimelineEntry{{"loadgen", "GET", 3}},
			arrivals: map[string]int{"loadgen GET": 3}, firstArrivalEntry: "loadgen GET"},
	}, {
		// Given up after two failed attempts: the request failed, as its
		// last attempt did, 70 ms after it started.
		name:  "linked retries, given up",
		build: func(b *builder) { linked(b, 2, 503, 503) },
		want: rootFigures{requests: 2, serverErrors: 1, p50: 70, p90: 70, p99: 70,
			clientRoots: []ClientRoot{{"loadgen", "GET", 2}}, timeline: []TimelineEntry{{"loadgen", "GET", 2}},
			arrivals: map[string]int{"loadgen GET": 2}, firstArrivalEntry: "loadgen GET"},
	}, {
		// A served entry beside a client's calls: both on the timeline,
		// only the client's in ClientRoots.
		name: "served requests and a client's calls",
		build: func(b *builder) {
			for i := range 3 {
				b.newTrace()
				s := b.server(-1, "front", "GET /a", float64(i)*100+5, 40)
				b.call(s, "api", "GET /x", float64(i)*100+6, 20, httpStatus(200))
			}
			for i := range 2 {
				b.rootCall("cron", "c-1", "http://api/x", float64(i)*100, 10, 200)
			}
		},
		want: rootFigures{requests: 5, ok: 1, p50: 40, p90: 40, p99: 40,
			clientRoots: []ClientRoot{{"cron", "GET", 2}}, timeline: []TimelineEntry{{"cron", "GET", 2}, {"front", "GET /a", 3}},
			arrivals: map[string]int{"cron GET": 2, "front GET /a": 3}, firstArrivalEntry: "cron GET"},
	}, {
		// No client root: none listed, and the JSON names none.
		name: "served requests only",
		build: func(b *builder) {
			for i := range 2 {
				b.newTrace()
				s := b.server(-1, "front", "GET /a", float64(i)*100, 40)
				b.call(s, "api", "GET /x", float64(i)*100+1, 20, httpStatus(200))
			}
		},
		want: rootFigures{requests: 2, ok: 1, p50: 40, p90: 40, p99: 40,
			timeline: []TimelineEntry{{"front", "GET /a", 2}}, arrivals: map[string]int{"front GET /a": 2}, firstArrivalEntry: "front GET /a"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			tc.build(b)
			tp, arr, err := InferWithArrivals(context.Background(), b.set)
			if err != nil {
				t.Fatal(err)
			}
			c := tp.Calibration
			if c == nil {
				t.Fatal("no calibration")
			}
			r := c.Root
			near := func(a, b float64) bool { return a-b < 1e-3 && b-a < 1e-3 }
			if r.Requests != tc.want.requests || !near(r.SuccessRate, tc.want.ok) || !near(r.ServerErrorRate, tc.want.serverErrors) ||
				!near(r.P50MS, tc.want.p50) || !near(r.P90MS, tc.want.p90) || !near(r.P99MS, tc.want.p99) {
				t.Errorf("root: %d requests, success %.3f, server errors %.3f, p50/90/99 %g/%g/%g ms; want %d, %.3f, %.3f, %g/%g/%g",
					r.Requests, r.SuccessRate, r.ServerErrorRate, r.P50MS, r.P90MS, r.P99MS,
					tc.want.requests, tc.want.ok, tc.want.serverErrors, tc.want.p50, tc.want.p90, tc.want.p99)
			}
			if !reflect.DeepEqual(c.ClientRoots, tc.want.clientRoots) {
				t.Errorf("client roots %v, want %v", c.ClientRoots, tc.want.clientRoots)
			}
			js, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(js), `"client_roots"`); got != (tc.want.clientRoots != nil) {
				t.Errorf("client_roots in the JSON: %v, want %v: %s", got, tc.want.clientRoots != nil, js)
			}
			switch {
			case c.Arrivals == nil:
				t.Errorf("no arrival timeline, want %v", tc.want.timeline)
			case !slices.Equal(c.Arrivals.Entries, tc.want.timeline):
				t.Errorf("timeline entries %v, want %v", c.Arrivals.Entries, tc.want.timeline)
			}
			got := map[string]int{}
			for _, a := range arr {
				got[a.Service+" "+a.Operation]++
			}
			if !reflect.DeepEqual(got, tc.want.arrivals) || len(arr) == 0 || arr[0].Service+" "+arr[0].Operation != tc.want.firstArrivalEntry {
				t.Errorf("arrivals %v (first %v), want %v, the first to %s", got, arr[:min(1, len(arr))], tc.want.arrivals, tc.want.firstArrivalEntry)
			}
		})
	}
}
