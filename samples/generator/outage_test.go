package main

import (
	"cmp"
	"context"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
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
	dir, b := runBreakerScenario(t, sc)
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

// TestBreakerInstancesRun runs breaker-instances end to end: api runs as
// three instances, each named by its resource's service.instance.id,
// edge spreads the orders over them in turn, and each instance's own
// breaker opened and failed calls fast, its truth listed apart and
// summed on the edge.
func TestBreakerInstancesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the mesh for about 2s")
	}
	sc := breakerInstances()
	dir, b := runBreakerScenario(t, sc)
	if b == nil || len(b.Instances) != 3 {
		t.Fatalf("breaker truth %+v, want one listing 3 instances", b)
	}
	var fast, periods int
	for _, in := range b.Instances {
		if in.OpenPeriods < 2 || in.FastFailedCalls < in.OpenPeriods || in.Opened < in.OpenPeriods {
			t.Errorf("instance %+v: want at least 2 open periods, each failing a call fast", in)
		}
		fast, periods = fast+in.FastFailedCalls, periods+in.OpenPeriods
	}
	if fast != b.FastFailedCalls || periods != b.OpenPeriods {
		t.Errorf("edge breaker %d fast failures in %d periods, the instances' sum %d in %d", b.FastFailedCalls, b.OpenPeriods, fast, periods)
	}
	// The orders api served, by the instance its resource names.
	served := map[string]int{}
	for _, td := range readJSONL(t, filepath.Join(dir, fileOTLPJSON)) {
		for _, rs := range td.ResourceSpans().All() {
			attrs := rs.Resource().Attributes()
			if svc, _ := attrs.Get("service.name"); svc.AsString() != "api" {
				continue
			}
			id, _ := attrs.Get("service.instance.id")
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					if sp.Kind() == ptrace.SpanKindServer {
						served[id.AsString()]++
					}
				}
			}
		}
	}
	want := map[string]int{"api-1": 150, "api-2": 150, "api-3": 150}
	if !maps.Equal(served, want) {
		t.Errorf("api served %v by instance, want %v", served, want)
	}
}

// TestRetryAroundBreakerRun runs retry-around-breaker end to end: the
// breaker inside failsafe-go's retry loop refused tries, failing some
// calls whole (no request traced) and others in part; every try is a
// request sent or one refused, as the truth's tries per call count them,
// and the calls traced are those that sent a request.
func TestRetryAroundBreakerRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the mesh for about 2s")
	}
	sc := retryAroundBreaker()
	dir, b := runBreakerScenario(t, sc)
	if b == nil || !b.InsideRetries || b.Opened < 3 || b.FastFailedCalls == 0 || b.PartlyRefusedCalls == 0 {
		t.Fatalf("breaker truth %+v, want one inside the retry loop that opened at least 3 times, failing calls whole and in part", b)
	}
	te := breakerEdge(t, dir)
	tries, calls := 0, 0
	for n, k := range b.TriesPerCall {
		tries, calls = tries+n*k, calls+k
		if n > te.MaxAttempts && k > 0 {
			t.Errorf("%d calls made %d tries, more than the policy's %d", k, n, te.MaxAttempts)
		}
	}
	if tries != te.Attempts+b.RefusedTries || calls != sc.rootRequests() {
		t.Errorf("%d tries in %d calls, want the %d requests sent and %d refused in %d calls", tries, calls, te.Attempts, b.RefusedTries, sc.rootRequests())
	}
	if b.RefusedTries < te.MaxAttempts*b.FastFailedCalls {
		t.Errorf("%d tries refused, fewer than the %d tries of the %d calls failed whole", b.RefusedTries, te.MaxAttempts*b.FastFailedCalls, b.FastFailedCalls)
	}
	traced := callsInTraces(readJSONL(t, filepath.Join(dir, fileOTLPJSON)))["api inventory GET /inventory/{sku}"]
	if len(traced)+b.FastFailedCalls != sc.rootRequests() {
		t.Errorf("%d inventory calls traced and %d failed whole, want %d root requests", len(traced), b.FastFailedCalls, sc.rootRequests())
	}
}

// runBreakerScenario runs sc, renamed short, into a temporary directory,
// and returns the directory of its run and the breaker its truth.json
// records (nil: none).
func runBreakerScenario(t *testing.T, sc Scenario) (string, *truthBreaker) {
	t.Helper()
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
	return dir, b
}

// TestHystrixRun runs hystrix end to end: the hystrix-go circuit opened
// (by errors and by timeouts), failed calls fast that sent nothing, and
// timed out commands whose requests the callee still served to the end;
// every root request's call either went out (a traced inventory call) or
// was refused, and the truth's counts agree with each other.
func TestHystrixRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the mesh for about 2s")
	}
	sc := hystrixBreaker()
	dir, b := runBreakerScenario(t, sc)
	if b == nil || b.Library != libHystrix || b.Opened < 2 || b.Closed == 0 || b.FastFailedCalls == 0 || b.TimedOutCalls == 0 {
		t.Fatalf("breaker truth %+v, want a hystrix-go circuit that opened at least twice, closed, failed calls fast and timed some out", b)
	}
	if b.OpenPeriods < b.Opened || b.OpenPeriods > b.Opened+b.ProbesFailed {
		t.Errorf("%d open periods, want from the %d opens to those plus the %d failed probes", b.OpenPeriods, b.Opened, b.ProbesFailed)
	}
	if b.CalleeServedPastTimeout != b.TimedOutCalls {
		t.Errorf("the callee served %d requests past the %dms timeout, want the %d calls timed out", b.CalleeServedPastTimeout, b.TimeoutMS, b.TimedOutCalls)
	}
	traced := callsInTraces(readJSONL(t, filepath.Join(dir, fileOTLPJSON)))["api inventory GET /inventory/{sku}"]
	if len(traced)+b.FastFailedCalls+b.RejectedCalls != sc.rootRequests() || b.CalleeReceived != len(traced) {
		t.Errorf("%d inventory calls traced (%d received), %d failed fast and %d rejected, want %d root requests",
			len(traced), b.CalleeReceived, b.FastFailedCalls, b.RejectedCalls, sc.rootRequests())
	}
}

// TestHeimdallHystrixRun runs heimdall-hystrix end to end: heimdall's
// retry loop ran every try as a hystrix-go command, the circuit opened
// and refused tries, failing some calls whole (no request traced) and
// others in part; every try is a request sent or one refused, and the
// open periods are the openings plus the failed probes.
func TestHeimdallHystrixRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the mesh for about 2s")
	}
	sc := heimdallHystrix()
	dir, b := runBreakerScenario(t, sc)
	if b == nil || b.Library != libHystrix || !b.InsideRetries || b.Opened < 2 || b.RefusedTries == 0 || b.FastFailedCalls == 0 || b.PartlyRefusedCalls == 0 {
		t.Fatalf("breaker truth %+v, want a hystrix-go circuit inside heimdall's retry loop that opened at least twice, failing calls whole and in part", b)
	}
	te := breakerEdge(t, dir)
	tries, calls := 0, 0
	for n, k := range b.TriesPerCall {
		tries, calls = tries+n*k, calls+k
	}
	if tries != te.Attempts+b.RefusedTries || calls != sc.rootRequests() || b.CalleeReceived != te.Attempts {
		t.Errorf("%d tries in %d calls, the callee received %d; want the %d requests sent and %d refused in %d calls",
			tries, calls, b.CalleeReceived, te.Attempts, b.RefusedTries, sc.rootRequests())
	}
	if b.OpenPeriods < b.Opened || b.OpenPeriods > b.Opened+b.ProbesFailed {
		t.Errorf("%d open periods, want from the %d opens to those plus the %d failed probes", b.OpenPeriods, b.Opened, b.ProbesFailed)
	}
	traced := callsInTraces(readJSONL(t, filepath.Join(dir, fileOTLPJSON)))["api inventory GET /inventory/{sku}"]
	if len(traced)+b.FastFailedCalls != sc.rootRequests() {
		t.Errorf("%d inventory calls traced and %d failed whole, want %d root requests", len(traced), b.FastFailedCalls, sc.rootRequests())
	}
}

// breakerEdge is the edge of the truth written in dir that carries a
// breaker (the last, where several do).
func breakerEdge(t *testing.T, dir string) truthEdge {
	t.Helper()
	var tr truth
	readJSON(t, filepath.Join(dir, fileTruth), &tr)
	var te truthEdge
	for _, e := range tr.Edges {
		if e.Breaker != nil {
			te = e
		}
	}
	return te
}
