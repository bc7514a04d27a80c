package main

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/avast/retry-go/v4"
	"github.com/hashicorp/go-retryablehttp"
	goretry "github.com/sethvargo/go-retry"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestShortScenario runs the mixed scenario with one root request per case
// end to end, then checks that the three trace files parse and agree, that
// the retries visible in the traces match truth.json and the generator's own
// counts, and that those counts are the ones the fault scripts imply.
func TestShortScenario(t *testing.T) {
	checkShortRun(t, mixed())
}

// TestShortRetryBelowOtelhttp does the same for retry-below-otelhttp,
// whose inventory → db attempts are SERVER spans under one CLIENT span.
func TestShortRetryBelowOtelhttp(t *testing.T) {
	checkShortRun(t, retryBelowOtelhttp())
}

// TestShortResultRetry runs the result-retry scenarios with one root
// request per case: a 200 that says "pending" is retried by
// go-retryablehttp's CheckRetry (below otelhttp and above it) and by
// failsafe-go's HandleIf as the simulation predicts, and the truth counts
// those retries on the result.
func TestShortResultRetry(t *testing.T) {
	for _, sc := range []Scenario{resultRetryBelow(), resultRetryAbove()} {
		t.Run(sc.Name, func(t *testing.T) {
			_, tr := checkShortRun(t, sc)
			for _, e := range tr.Edges {
				if e.RetriesOnResult && (e.ResultRetriedCalls == 0 || e.ResultRetries < e.ResultRetriedCalls) {
					t.Errorf("%s → %s: retries on the result, %d calls retried %d times", e.Caller, e.Callee, e.ResultRetriedCalls, e.ResultRetries)
				}
				if !e.RetriesOnResult && e.ResultRetries > 0 {
					t.Errorf("%s → %s: %d retries on the result by a caller that has no result predicate", e.Caller, e.Callee, e.ResultRetries)
				}
			}
		})
	}
}

// TestShortGoResiliency does the same for go-resiliency: its retrier's
// attempts, per-try timeouts included, are the simulation's.
func TestShortGoResiliency(t *testing.T) {
	checkShortRun(t, goResiliency())
}

// TestShortLinearAndFibonacci runs linear-jitter and fibonacci with one
// root request per case: go-retryablehttp's LinearJitterBackoff and
// go-retry's Fibonacci backoff make the attempts the simulation
// predicts, and the files agree with the truth.
func TestShortLinearAndFibonacci(t *testing.T) {
	for _, sc := range []Scenario{linearJitter(), fibonacci()} {
		t.Run(sc.Name, func(t *testing.T) { checkShortRun(t, sc) })
	}
}

// TestShortAWSStandard runs aws-standard with one root request per case
// and a quota of 28 tokens, two retries' worth, so that the short run
// drains it too: the calls the real SDK bucket refused a retry are the
// ones the simulation's refused, and the truth counts them.
func TestShortAWSStandard(t *testing.T) {
	sc := awsStandardQuota()
	var quota *QuotaPolicy
	for _, e := range sc.Edges {
		if e.Policy.Quota != nil {
			quota = e.Policy.Quota
		}
	}
	quota.Capacity = 2 * quota.RetryCost
	callers, tr := checkShortRun(t, sc)
	for i, c := range callers {
		if c.edge.Policy.Quota == nil {
			continue
		}
		c.stats.mu.Lock()
		refused := c.stats.quotaRefused
		c.stats.mu.Unlock()
		if q := tr.Edges[i].RetryQuota; refused == 0 || q == nil || q.RefusedCalls != refused || q.Capacity != quota.Capacity {
			t.Errorf("%s → %s: %d calls refused a retry, truth %+v", c.edge.Caller, c.edge.Callee, refused, q)
		}
	}
}

// checkShortRun runs sc with one root request per case and holds its
// files, its truth and the generator's counts to each other and to the
// simulation. It returns the run's callers and truth.
func checkShortRun(t *testing.T, sc Scenario) ([]*caller, truth) {
	sc.Name = "short"
	for i := range sc.Cases {
		sc.Cases[i].Count = 1
	}
	out := t.TempDir()
	callers, _, err := runScenario(context.Background(), sc, out, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, sc.Name)

	jsonl := readJSONL(t, filepath.Join(dir, fileOTLPJSON))
	binpb := readBinpb(t, filepath.Join(dir, fileOTLPProto))
	jaegerSpans := readJaeger(t, filepath.Join(dir, fileJaeger))
	nJSON, nProto := spanCount(jsonl), spanCount(binpb)
	if nJSON == 0 || nJSON != nProto || nJSON != jaegerSpans {
		t.Fatalf("span counts differ: jsonl %d, binpb %d, jaeger %d", nJSON, nProto, jaegerSpans)
	}

	var tr truth
	readJSON(t, filepath.Join(dir, fileTruth), &tr)
	if tr.RootRequests != sc.rootRequests() || len(tr.Edges) != len(sc.Edges) {
		t.Fatalf("truth has %d root requests and %d edges, want %d and %d",
			tr.RootRequests, len(tr.Edges), sc.rootRequests(), len(sc.Edges))
	}
	calls := callsInTraces(jsonl)
	for i, e := range tr.Edges {
		key := e.Caller + " " + e.Callee + " " + e.Method + " " + e.Operation
		traced := calls[key]
		if len(traced) == 0 {
			t.Errorf("%s: no calls in the traces", key)
			continue
		}
		sizes := make([]int, len(traced))
		for j, c := range traced {
			sizes[j] = len(c)
		}
		if e.Attempts != sumInts(sizes) {
			t.Errorf("%s: traces hold %d attempts, truth.json %d", key, sumInts(sizes), e.Attempts)
		}
		most := slices.Max(sizes)
		if most > e.MaxAttempts {
			t.Errorf("%s: a call made %d attempts, max_attempts is %d", key, most, e.MaxAttempts)
		}
		if e.Retries && e.ExhaustedInTraces && most != e.MaxAttempts {
			t.Errorf("%s: exhausted_in_traces but no call made %d attempts (most %d)", key, e.MaxAttempts, most)
		}
		// The waits the generator counted are the ones in the traces.
		c := callers[i]
		waits, raWaits := waitsInTraces(traced, e.MaxAttempts, e.HonoursRetryAfter)
		c.stats.mu.Lock()
		if len(traced) != c.stats.calls || !slices.Equal(waits, c.stats.waits) || raWaits != c.stats.retryAfterWaits {
			t.Errorf("%s: traces hold %d calls, waits %v and %d Retry-After waits; the generator counted %d, %v and %d",
				key, len(traced), waits, raWaits, c.stats.calls, c.stats.waits, c.stats.retryAfterWaits)
		}
		c.stats.mu.Unlock()
	}
	// The N+1 loop: every pricing call is a distinct single-attempt request.
	if got := calls["api pricing GET /prices/{item}"]; len(got) < pricedItems || slices.ContainsFunc(got, func(c []tracedAttempt) bool { return len(c) != 1 }) {
		t.Errorf("pricing calls %v, want several of 1 attempt", got)
	}
	// The fault scripts decide every attempt: the simulation predicts them.
	for i, sim := range simulate(sc) {
		if got, want := statsOf(callers[i]), statsOf(sim); got != want {
			t.Errorf("%s → %s %s: run %s; simulation %s", sim.edge.Caller, sim.edge.Callee, sim.edge.Route, got, want)
		}
	}
	return callers, tr
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// tracedAttempt is one CLIENT span of a logical call, or, where a
// retrying client sits below the instrumentation, one SERVER span under
// the call's CLIENT span.
type tracedAttempt struct {
	start, end pcommon.Timestamp
	retryAfter bool // the response carried Retry-After
}

// waitsInTraces counts the waits between the attempts of calls by the index
// of the attempt they precede, as edgeStats does; with honoursRetryAfter a
// wait after a response with Retry-After is counted apart.
func waitsInTraces(calls [][]tracedAttempt, maxAttempts int, honoursRetryAfter bool) (waits []int, retryAfter int) {
	waits = make([]int, maxAttempts)
	for _, c := range calls {
		for i := 1; i < len(c); i++ {
			if c[i].start < c[i-1].end {
				continue // overlapping attempts are not waits; the callers here never hedge
			}
			if honoursRetryAfter && c[i-1].retryAfter {
				retryAfter++
				continue
			}
			waits[i]++
		}
	}
	return waits, retryAfter
}

// callsInTraces groups CLIENT spans into logical calls, the attempts of one
// call being siblings with the same url.full, and returns each call's
// attempts in start order by "caller callee method http.route". A CLIENT
// span with several SERVER spans under it is one call whose attempts are
// those SERVER spans (the retries happened below the instrumentation).
func callsInTraces(requests []ptrace.Traces) map[string][][]tracedAttempt {
	type info struct {
		service, route, method, url string
		kind                        ptrace.SpanKind
		parent                      pcommon.SpanID
		attempt                     tracedAttempt
	}
	spans := map[pcommon.SpanID]info{}
	for _, td := range requests {
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get("service.name")
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					a := sp.Attributes()
					get := func(k string) string {
						if v, ok := a.Get(k); ok {
							return v.AsString()
						}
						return ""
					}
					_, ra := a.Get("http.response.header.retry-after")
					spans[sp.SpanID()] = info{service: svc.Str(), route: get("http.route"),
						method: get("http.request.method"), url: get("url.full"), kind: sp.Kind(), parent: sp.ParentSpanID(),
						attempt: tracedAttempt{start: sp.StartTimestamp(), end: sp.EndTimestamp(), retryAfter: ra}}
				}
			}
		}
	}
	callee := map[pcommon.SpanID][]info{} // client span → the server spans it caused
	for _, s := range spans {
		if s.kind == ptrace.SpanKindServer {
			callee[s.parent] = append(callee[s.parent], s)
		}
	}
	type callKey struct {
		parent pcommon.SpanID
		url    string
	}
	attempts := map[callKey][]tracedAttempt{}
	edgeOf := map[callKey]string{}
	for id, s := range spans {
		if s.kind != ptrace.SpanKindClient {
			continue
		}
		srv := callee[id]
		if len(srv) > 1 {
			// Retries below the instrumentation: a call of its own.
			k := callKey{id, s.url}
			for _, a := range srv {
				attempts[k] = append(attempts[k], a.attempt)
			}
			edgeOf[k] = s.service + " " + srv[0].service + " " + s.method + " " + srv[0].route
			continue
		}
		k := callKey{s.parent, s.url}
		attempts[k] = append(attempts[k], s.attempt)
		if len(srv) == 1 {
			edgeOf[k] = s.service + " " + srv[0].service + " " + s.method + " " + srv[0].route
		}
	}
	out := map[string][][]tracedAttempt{}
	for k, c := range attempts {
		slices.SortFunc(c, func(a, b tracedAttempt) int { return cmp.Compare(a.start, b.start) })
		out[edgeOf[k]] = append(out[edgeOf[k]], c)
	}
	return out
}

// readGzip returns the decompressed content of a gzip file.
func readGzip(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

func readJSONL(t *testing.T, path string) []ptrace.Traces {
	t.Helper()
	var out []ptrace.Traces
	sc := bufio.NewScanner(bytes.NewReader(readGzip(t, path)))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(sc.Bytes())
		if err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, td)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readBinpb(t *testing.T, path string) []ptrace.Traces {
	t.Helper()
	r := bytes.NewReader(readGzip(t, path))
	var out []ptrace.Traces
	for {
		var n uint32
		if err := binary.Read(r, binary.BigEndian, &n); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(r, msg); err != nil {
			t.Fatalf("%s message %d: %v", path, len(out)+1, err)
		}
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(msg)
		if err != nil {
			t.Fatalf("%s message %d: %v", path, len(out)+1, err)
		}
		out = append(out, td)
	}
}

// readJaeger parses the Jaeger UI JSON and returns its number of spans.
func readJaeger(t *testing.T, path string) int {
	t.Helper()
	var resp jaegerResponse
	if err := json.Unmarshal(readGzip(t, path), &resp); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	n := 0
	for _, tr := range resp.Data {
		for _, sp := range tr.Spans {
			if _, ok := tr.Processes[sp.ProcessID]; !ok || sp.TraceID != tr.TraceID {
				t.Fatalf("span %s: process %q or trace %s not in its trace %s", sp.SpanID, sp.ProcessID, sp.TraceID, tr.TraceID)
			}
		}
		n += len(tr.Spans)
	}
	return n
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestShortFullJitter runs full-jitter end to end the same way: both
// edges retry through retry-go's FullJitterBackoffDelay.
func TestShortFullJitter(t *testing.T) {
	checkShortRun(t, fullJitter())
}

// recordingTimer is a retry-go timer that records each delay asked for
// and fires at once.
type recordingTimer struct{ delays []time.Duration }

func (r *recordingTimer) After(d time.Duration) <-chan time.Time {
	r.delays = append(r.delays, d)
	c := make(chan time.Time, 1)
	c <- time.Time{}
	return c
}

// TestRetryGoDelay holds what truth.json says of a retry-go policy to
// the delays the library itself asks for: before retry n, FixedDelay
// waits the base; the default delay base·2ⁿ⁻¹ plus U[0, a); the full
// jitter delay U[0, base·2ⁿ⁻¹), the base (the first retry's ceiling)
// being twice the Delay the library is given. Over 4000 calls the draws
// must fill their range: the mean within 3% of its centre, the extremes
// within 1% of its bounds.
func TestRetryGoDelay(t *testing.T) {
	const calls = 4000
	for _, tc := range []struct {
		name   string
		p      Policy
		lo, hi func(n int) time.Duration // bounds before retry n
	}{
		{"fixed", retryGoFixed(4, 20*ms),
			func(int) time.Duration { return 20 * ms }, func(int) time.Duration { return 20 * ms }},
		{"additive", retryGoBackoffJitter(4, 20*ms, 30*ms, time.Second),
			func(n int) time.Duration { return 20 * ms << (n - 1) }, func(n int) time.Duration { return 20*ms<<(n-1) + 30*ms }},
		{"full", retryGoFullJitter(4, 30*ms, time.Second),
			func(int) time.Duration { return 0 }, func(n int) time.Duration { return 30 * ms << (n - 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			draws := make([][]time.Duration, tc.p.MaxAttempts)
			for range calls {
				timer := &recordingTimer{}
				err := retry.Do(func() error { return errors.New("fail") },
					append(retryGoDelay(tc.p.Backoff), retry.Attempts(uint(tc.p.MaxAttempts)), retry.WithTimer(timer))...)
				if err == nil || len(timer.delays) != tc.p.MaxAttempts-1 {
					t.Fatalf("%d delays (error %v), want %d", len(timer.delays), err, tc.p.MaxAttempts-1)
				}
				for i, d := range timer.delays {
					draws[i+1] = append(draws[i+1], d)
				}
			}
			for n := 1; n < tc.p.MaxAttempts; n++ {
				lo, hi := tc.lo(n), tc.hi(n)
				var sum time.Duration
				for _, d := range draws[n] {
					if d < lo || d > hi || d == hi && hi > lo {
						t.Fatalf("retry %d: delay %v outside [%v, %v)", n, d, lo, hi)
					}
					sum += d
				}
				mean, centre, width := sum/calls, (lo+hi)/2, hi-lo
				if diff := mean - centre; diff > width*3/100 || -diff > width*3/100 {
					t.Errorf("retry %d: mean delay %v, want %v ±3%% of %v", n, mean, centre, width)
				}
				if width > 0 && (slices.Min(draws[n])-lo > width/100 || hi-slices.Max(draws[n]) > width/100) {
					t.Errorf("retry %d: delays %v to %v do not fill [%v, %v)", n, slices.Min(draws[n]), slices.Max(draws[n]), lo, hi)
				}
			}
		})
	}
}

// TestLinearAndFibonacciDelays holds what truth.json says of the
// linear-jitter and fibonacci scenarios' policies to the waits the
// libraries themselves compute: go-retryablehttp's LinearJitterBackoff
// before retry n draws n·U[min, max), whose centre must be the truth's
// base + (n−1)·increment and whose bounds its ±jitter_fraction (4000
// draws: the mean within 3% of the width of its centre, the extremes
// within 1% of it of the bounds); go-retry's NewFibonacci waits what
// intendedWait says, retry by retry.
func TestLinearAndFibonacciDelays(t *testing.T) {
	lin := retryableHTTPLinear(5, 16*ms, 24*ms)
	b := lin.Backoff
	minWait, maxWait := time.Duration(float64(b.Base)*(1-b.JitterFraction)), time.Duration(float64(b.Base)*(1+b.JitterFraction))
	if minWait != 16*ms || maxWait != 24*ms {
		t.Fatalf("linear policy draws from [%v, %v), want [16ms, 24ms)", minWait, maxWait)
	}
	for n := 1; n < lin.MaxAttempts; n++ {
		centre := b.Base + time.Duration(n-1)*b.Increment
		lo, hi := time.Duration(float64(centre)*(1-b.JitterFraction)), time.Duration(float64(centre)*(1+b.JitterFraction))
		var sum, least, most time.Duration
		least = hi
		const draws = 4000
		for range draws {
			d := retryablehttp.LinearJitterBackoff(minWait, maxWait, n-1, nil)
			if d < lo || d >= hi {
				t.Fatalf("retry %d: wait %v outside [%v, %v)", n, d, lo, hi)
			}
			sum, least, most = sum+d, min(least, d), max(most, d)
		}
		width := hi - lo
		if diff := sum/draws - centre; diff > width*3/100 || -diff > width*3/100 {
			t.Errorf("retry %d: mean wait %v, want %v ±3%% of %v", n, sum/draws, centre, width)
		}
		if least-lo > width/100 || hi-most > width/100 {
			t.Errorf("retry %d: waits %v to %v do not fill [%v, %v)", n, least, most, lo, hi)
		}
	}
	for _, base := range []time.Duration{10 * ms, 7 * ms} {
		fib := goRetryFibonacci(6, base)
		bo := goretry.WithMaxRetries(uint64(fib.MaxAttempts-1), goretry.NewFibonacci(base))
		for n := 1; ; n++ {
			d, stop := bo.Next()
			if stop {
				if n != fib.MaxAttempts {
					t.Errorf("base %v: stopped before retry %d, want after %d retries", base, n, fib.MaxAttempts-1)
				}
				break
			}
			if want, ok := fib.intendedWait(n); !ok || d != want {
				t.Errorf("base %v: retry %d waits %v, truth says %v", base, n, d, want)
			}
		}
	}
}
