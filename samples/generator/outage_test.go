package main

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestOutages: an outage answers every request to its endpoint, whatever
// its key, while its window is under way (timed from the first root
// request); a request's own script comes first.
func TestOutages(t *testing.T) {
	down := Fault{Status: 503, Delay: 4 * ms}
	outages := []Outage{{Target: inventoryStock, From: 100 * ms, For: 50 * ms, Fault: down}}
	cases := []struct {
		name          string
		since         time.Duration // how long ago the first root request left
		service, path string
		script        []Fault // planned for order 1001
		want          Fault
	}{
		{"before the window", 50 * ms, "inventory", routeStock, nil, Fault{}},
		{"inside the window", 120 * ms, "inventory", routeStock, nil, down},
		{"after the window", 200 * ms, "inventory", routeStock, nil, Fault{}},
		{"another endpoint inside the window", 120 * ms, "db", routeDBStock, nil, Fault{}},
		{"a script first", 120 * ms, "inventory", routeStock, []Fault{badRequest}, badRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFaultTable()
			ft.schedule(outages)
			ft.start = time.Now().Add(-tc.since)
			if tc.script != nil {
				ft.plan(inventoryStock, "1001", tc.script)
			}
			if got := ft.next(tc.service, tc.path, skuOf("1001")); got != tc.want {
				t.Errorf("fault %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestBreakerConcurrentRun runs breaker-concurrent end to end: its root
// requests overlap, its breaker opened several times, and every root
// request either called inventory or was failed fast by the breaker, as
// many as truth.json says.
func TestBreakerConcurrentRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the mesh for about 2s")
	}
	sc := breakerConcurrent()
	sc.Name = "short"
	out := t.TempDir()
	if _, _, err := runScenario(context.Background(), sc, out, false); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, sc.Name)
	var tr truth
	readJSON(t, filepath.Join(dir, fileTruth), &tr)
	var b *truthBreaker
	for _, e := range tr.Edges {
		if e.Breaker != nil {
			b = e.Breaker
		}
	}
	if b == nil || b.OpenPeriods < 3 || b.FastFailedCalls < b.OpenPeriods {
		t.Fatalf("breaker truth %+v, want at least 3 open periods, each failing a call fast", b)
	}
	calls := callsInTraces(readJSONL(t, filepath.Join(dir, fileOTLPJSON)))["api inventory GET /inventory/{sku}"]
	if len(calls)+b.FastFailedCalls != sc.rootRequests() {
		t.Errorf("%d inventory calls traced and %d failed fast, want %d root requests", len(calls), b.FastFailedCalls, sc.rootRequests())
	}
	// Overlap: the most calls in flight at once.
	var ends []int64
	most := 0
	slices.SortFunc(calls, func(a, b []tracedAttempt) int { return cmp.Compare(a[0].start, b[0].start) })
	for _, c := range calls {
		ends = slices.DeleteFunc(ends, func(e int64) bool { return e <= int64(c[0].start) })
		ends = append(ends, int64(c[len(c)-1].end))
		most = max(most, len(ends))
	}
	if most < 3 {
		t.Errorf("at most %d inventory calls in flight at once, want several", most)
	}
}
