package graph

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// TestCalibrationStats checks the statistics replay is built from on a
// hand-made trace set: outcome mixes split by first attempt and retry,
// self time without the waits between attempts, Little's law over the
// arrival window, the peak in flight, and sampling.
func TestCalibrationStats(t *testing.T) {
	b := newBuilder()
	// Ten roots 100 ms apart, each 20 ms, calling db once; the first three
	// fail once with 503 and are retried after a 50 ms wait, which the
	// caller spends waiting, not working.
	for i := range 10 {
		b.newTrace()
		start := float64(100 * i)
		root := b.server(-1, "api", "GET /x", start, 20, func(s *ingest.Set, sp *ingest.Record) {
			s.SetSampling(&sp.Span, ingest.Sampling{P: 0.25, Source: ingest.SampledTraceState})
		})
		if i < 3 {
			b.set.Spans[root].End = at(start + 80)
			b.client(root, "db", start+2, 5, httpStatus(503))
			b.client(root, "db", start+57, 5, httpStatus(200))
		} else {
			b.client(root, "db", start+2, 5, httpStatus(200))
		}
	}
	tp := b.infer()
	c := tp.Calibration
	if c == nil {
		t.Fatal("no calibration")
	}
	// Roots start 0..900 ms: window 0.9 s plus one mean gap of 0.1 s.
	if math.Abs(c.ArrivalWindowS-1) > 1e-9 || math.Abs(c.RootRatePerS-10) > 1e-9 {
		t.Errorf("arrival window %gs, rate %g/s; want 1s, 10/s", c.ArrivalWindowS, c.RootRatePerS)
	}
	if c.Sampling.Probability != 0.25 || c.Sampling.LowerBound || c.Sampling.Roots != 10 {
		t.Errorf("sampling %+v, want 0.25 from every root", c.Sampling)
	}
	if c.Root.Requests != 10 || c.Root.SuccessRate != 1 || c.Root.ServerErrorRate != 0 {
		t.Errorf("root %+v", c.Root)
	}
	var api ServiceLoad
	for _, l := range c.InFlight {
		if l.Service == "api" {
			api = l
		}
	}
	// Σ durations = 3×80 + 7×20 = 380 ms over 1 s; never two at once.
	if math.Abs(api.InFlight-0.38) > 1e-9 || api.PeakInFlight != 1 {
		t.Errorf("api in flight %+v, want 0.38 mean, peak 1", api)
	}
	e := edge(t, tp, "api", "db")
	o := e.Outcomes
	if o == nil || o.First.OK != 7 || o.First.ServerError != 3 || o.Retry.OK != 3 || o.Retry.Failed() != 0 {
		t.Fatalf("outcomes %+v", o)
	}
	if len(o.RetryByAttempt) != 1 || o.RetryByAttempt[0].OK != 3 {
		t.Errorf("retry by attempt %+v", o.RetryByAttempt)
	}
	var op Operation
	for _, s := range tp.Services {
		for _, x := range s.Operations {
			if s.Name == "api" {
				op = x
			}
		}
	}
	// The retried roots spend 80 ms: 10 ms in db calls, 50 ms waiting
	// between attempts, 20 ms of their own work; the others 15 ms.
	if n := len(op.WorkQuantilesMS); n != len(WorkLevels) || op.WorkQuantilesMS[n-1] > 20.001 || op.WorkQuantilesMS[0] < 14.999 {
		t.Errorf("api work quantiles %v: want 15 to 20 ms, waits excluded", op.WorkQuantilesMS)
	}
}

// TestIncidentTimeline: a dependency down for a stretch of time shows up
// as one failure episode of that length, and the healthy mix leaves it
// out: two seconds among requests every 50 ms, and 200 ms among
// overlapping requests every 3 ms (each 10 ms long), which 0.5 s buckets
// diluted. Calls start 1 ms after their roots; an episode starts and ends
// halfway between its first (last) failed call and the success beside it.
func TestIncidentTimeline(t *testing.T) {
	for _, tc := range []struct {
		name               string
		n                  int
		gap, from, to      float64 // ms: roots every gap, failing while from <= start < to
		startMS, endMS     float64
		failed, healthyOKs int
	}{
		{"2 s, a request every 50 ms", 100, 50, 2000, 4000, 1976, 3976, 40, 60},
		{"200 ms, a request every 3 ms, overlapping", 400, 3, 500, 700, 500.5, 701.5, 67, 333},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			for i := range tc.n {
				b.newTrace()
				start := tc.gap * float64(i)
				root := b.server(-1, "api", "GET /x", start, 10)
				status := 200
				if start >= tc.from && start < tc.to {
					status = 503
				}
				b.client(root, "db", start+1, 2, httpStatus(status))
			}
			o := edge(t, b.infer(), "api", "db").Outcomes
			if len(o.Incidents) != 1 || o.Incidents[0].StartMS != tc.startMS || o.Incidents[0].EndMS != tc.endMS ||
				o.Incidents[0].First.ServerError != tc.failed || o.Incidents[0].First.Total() != tc.failed {
				t.Fatalf("incidents %+v, want one from %g to %g ms, its %d first attempts failed", o.Incidents, tc.startMS, tc.endMS, tc.failed)
			}
			if o.First.Failed() != 0 || o.First.OK != tc.healthyOKs {
				t.Errorf("healthy first attempts %+v, want %d ok", o.First, tc.healthyOKs)
			}
		})
	}
}

// TestFailureRuns: calls are counted by how the latest call of another
// request to end on the edge had ended. Requests 10 ms apart, one call
// each: "ooxxxoooxxoo" has failed calls after failed calls (3 of 3 after
// the first x of each run but the last) and after successes; a request's
// own retry is not another request's call.
func TestFailureRuns(t *testing.T) {
	for _, tc := range []struct {
		name           string
		script         string
		after, afterOK CallCount
		firstRun       OutcomeMix // first attempts after another request's failure
	}{
		{"runs", "ooxxxoooxxoo", CallCount{Calls: 5, Failed: 3}, CallCount{Calls: 6, Failed: 2},
			OutcomeMix{OK: 2, ServerError: 3}},
		{"alternating", "oxoxoxox", CallCount{Calls: 3, Failed: 0}, CallCount{Calls: 4, Failed: 4},
			OutcomeMix{OK: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			for i, r := range tc.script {
				b.newTrace()
				start := float64(10 * i)
				root := b.server(-1, "api", "GET /x", start, 5)
				status := 200
				if r == 'x' {
					status = 503
				}
				b.client(root, "db", start+1, 2, httpStatus(status))
			}
			o := edge(t, b.infer(), "api", "db").Outcomes
			if o.Runs.AfterFailure != tc.after || o.Runs.AfterSuccess != tc.afterOK {
				t.Errorf("runs %+v, want after failure %+v, after success %+v", o.Runs, tc.after, tc.afterOK)
			}
			if o.FirstAfterEdgeFailure != tc.firstRun {
				t.Errorf("first attempts after a failure %+v, want %+v", o.FirstAfterEdgeFailure, tc.firstRun)
			}
		})
	}
	// A request's own retry follows its own failure: not a run.
	b := newBuilder()
	for i := range 4 {
		b.newTrace()
		start := float64(100 * i)
		root := b.server(-1, "api", "GET /x", start, 50)
		b.client(root, "db", start+1, 2, httpStatus(503))
		b.client(root, "db", start+10, 2, httpStatus(200))
	}
	o := edge(t, b.infer(), "api", "db").Outcomes
	if o.Runs.AfterFailure.Calls != 0 || o.Runs.AfterSuccess.Calls != 3 || o.FirstAfterEdgeFailure.Total() != 0 {
		t.Errorf("runs %+v, first after failure %+v: want 3 calls after another request's success, none after a failure", o.Runs, o.FirstAfterEdgeFailure)
	}
	// A request's own earlier calls, however many, are passed over: each
	// of its three calls follows the other request's failure.
	b = newBuilder()
	b.newTrace()
	b.client(b.server(-1, "api", "GET /x", 0, 5), "db", 1, 2, httpStatus(503))
	b.newTrace()
	root := b.server(-1, "api", "GET /x", 10, 40)
	for _, at := range []float64{11, 21, 31} {
		b.client(root, "db", at, 2, httpStatus(200))
	}
	o = edge(t, b.infer(), "api", "db").Outcomes
	if want := (CallCount{Calls: 3}); o.Runs.AfterFailure != want || o.Runs.AfterSuccess.Calls != 0 {
		t.Errorf("runs %+v: want the three calls of the second request after the first one's failure", o.Runs)
	}
}

// TestSamplingWeights: roots kept at different probabilities weigh by
// their own; roots that say nothing make the rate a lower bound.
func TestSamplingWeights(t *testing.T) {
	for _, c := range []struct {
		name   string
		probs  []float64
		source string
		want   Sampling
	}{
		{"mixed probabilities", []float64{0.5, 0.5, 0.25, 0.25}, ingest.SampledTraceState,
			Sampling{Probability: round6(4.0 / 12), Source: ingest.SampledTraceState, Roots: 4}},
		{"some roots silent", []float64{0.5, 0}, ingest.SampledJaeger,
			Sampling{Probability: round6(2.0 / 3), Source: ingest.SampledJaeger, LowerBound: true, Roots: 1}},
		{"rate limited", []float64{0, 0}, ingest.SampledRateLimited,
			Sampling{Probability: 1, Source: ingest.SampledRateLimited + " (probability unknown)", LowerBound: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder()
			for i, p := range c.probs {
				b.newTrace()
				b.server(-1, "api", "GET /", float64(10*i), 1, func(s *ingest.Set, sp *ingest.Record) {
					if p > 0 || c.source == ingest.SampledRateLimited {
						s.SetSampling(&sp.Span, ingest.Sampling{P: p, Source: c.source})
					}
				})
			}
			if got := b.infer().Calibration.Sampling; got != c.want {
				t.Errorf("sampling %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestQuantileBand: the order-statistic ranks of a percentile's
// distribution-free confidence interval. Bin(10, 1/2): P(B < 3) = 0.055
// and P(B < 4) = 0.17 put the lower rank at 3, P(B ≥ 8) = 0.055 and
// P(B ≥ 7) = 0.17 the upper at 8, for the one-sigma band; and every band
// covers at least 1-alpha of the binomial's mass between its ranks.
func TestQuantileBand(t *testing.T) {
	for _, tc := range []struct {
		n      int
		p      float64
		lo, hi int
	}{{1, 0.5, 1, 1}, {1, 0.9, 1, 1}, {10, 0.5, 3, 8}, {2, 0.9, 1, 2}} {
		if lo, hi := quantileBand(tc.n, tc.p, PercentileBandAlpha); lo != tc.lo || hi != tc.hi {
			t.Errorf("n %d p %g: ranks %d–%d, want %d–%d", tc.n, tc.p, lo, hi, tc.lo, tc.hi)
		}
	}
	for _, n := range []int{20, 41, 101, 1000} {
		for _, p := range []float64{0.5, 0.9} {
			lo, hi := quantileBand(n, p, PercentileBandAlpha)
			// P(lo ≤ B < hi): the quantile lies between X(lo) and X(hi).
			cover := 0.0
			for i := lo; i < hi; i++ {
				lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
				cover += math.Exp(lg(n) - lg(i) - lg(n-i) + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
			}
			if cover < 1-PercentileBandAlpha-1e-9 || lo < 1 || hi > n || lo > hi {
				t.Errorf("n %d p %g: ranks %d–%d cover %.4f, want ≥ %.4f", n, p, lo, hi, cover, 1-PercentileBandAlpha)
			}
		}
	}
}

// TestStrayRootClock: one root whose clock is decades off (a start of
// 1 µs after the epoch) among requests 100 ms apart is left out of the
// arrival window and the rate, with a warning; traffic that pauses for a
// day in two halves of the roots is traffic, and kept.
func TestStrayRootClock(t *testing.T) {
	roots := func(b *builder, n int, from, step float64) {
		for i := range n {
			b.newTrace()
			root := b.server(-1, "api", "GET /x", from+step*float64(i), 20)
			b.client(root, "db", from+step*float64(i)+2, 5, httpStatus(200))
		}
	}
	b := newBuilder()
	roots(b, 10, 0, 100)
	b.newTrace()
	stray := b.server(-1, "api", "GET /x", 0, 20)
	b.set.Spans[stray].Start, b.set.Spans[stray].End = 1000, 21000
	tp := b.infer()
	if c := tp.Calibration; math.Abs(c.ArrivalWindowS-1) > 1e-9 || math.Abs(c.RootRatePerS-10) > 1e-9 {
		t.Errorf("with a stray root: arrival window %gs, rate %g/s; want 1s, 10/s", c.ArrivalWindowS, c.RootRatePerS)
	}
	if math.Abs(tp.Source.RootRatePerS-10) > 1e-9 {
		t.Errorf("source rate %g/s, want the calibration's 10/s", tp.Source.RootRatePerS)
	}
	if !hasWarning(tp, "1 root requests start more than a day") {
		t.Errorf("no stray warning in %q", tp.Warnings)
	}

	b = newBuilder()
	day := 24 * 3600 * 1e3 // ms
	roots(b, 5, 0, 100)
	roots(b, 5, 2*day, 100)
	tp = b.infer()
	if c := tp.Calibration; c.ArrivalWindowS < 2*day/1e3 || hasWarning(tp, "root requests start more than a day") {
		t.Errorf("two halves a day apart: arrival window %gs, warnings %q; want both halves kept", c.ArrivalWindowS, tp.Warnings)
	}
}

// hasWarning reports whether a warning of tp contains text.
func hasWarning(tp *Topology, text string) bool {
	return slices.ContainsFunc(tp.Warnings, func(w string) bool { return strings.Contains(w, text) })
}

// TestCancelledIsAbandoned: a gRPC attempt its client cancelled (its own
// caller gave up and the cancellation reached it) was not answered: the
// outcome mix counts it with the timeouts, as an HTTP client's "context
// canceled" already is, not as an error the callee chose to answer with.
func TestCancelledIsAbandoned(t *testing.T) {
	b := newBuilder()
	sequential(b, 4, "orders", func(root, i int) {
		b.client(root, "warehouse", 10, 60, grpcCode(1), method("Count"))
		b.client(root, "warehouse", 100, 60, failed("context canceled"), method("GET"))
		b.client(root, "warehouse", 200, 2, grpcCode(5), method("Count"))
	})
	timeouts, clientErrors := 0, 0
	for _, e := range b.infer().Edges {
		if e.Caller == "orders" && e.Outcomes != nil {
			for _, m := range []OutcomeMix{e.Outcomes.First, e.Outcomes.Retry} {
				timeouts += m.Timeout
				clientErrors += m.ClientError
			}
		}
	}
	if timeouts != 8 || clientErrors != 4 {
		t.Errorf("%d attempts counted as timeouts and %d as client errors, want the 8 cancelled ones and the 4 NOT_FOUND", timeouts, clientErrors)
	}
}

// TestSlowTries: tries the callee was still working on when the caller
// gave up are counted by what came before them in their call, kept out of
// the outcome mixes (the replay draws them slow instead), and their work
// kept apart from the callee's work on answered tries. The callee here
// starts serving 5 ms after the client sent the try and ends its span 3
// ms after the client gave up (a Node http server ends it at the hang-up):
// shorter than the client's span, yet still at work.
func TestSlowTries(t *testing.T) {
	b := newBuilder()
	spaced(b, 10, 400, "front", "GET /q", 300, func(root int, start float64, i int) {
		if i < 6 {
			c := b.client(root, "pricing", start+1, 150, method("GET"), target("http://pricing/p/1"))
			b.server(c, "pricing", "GET /p", start+6, 148, httpStatus(200))
			b.call(root, "pricing", "GET /p", start+180, 10, httpStatus(200), method("GET"), target("http://pricing/p/1"))
			return
		}
		b.call(root, "pricing", "GET /p", start+1, 10, httpStatus(200), method("GET"), target("http://pricing/p/1"))
	})
	tp := b.infer()
	o := edge(t, tp, "front", "pricing").Outcomes
	if o == nil || o.SlowTries == nil {
		t.Fatalf("no slow tries: %+v", o)
	}
	want := SlowTries{First: TryCount{Tries: 10, Slow: 6}, AfterSlowByAttempt: []TryCount{{Tries: 6}}, AfterFailureByAttempt: []TryCount{{}}}
	if got := *o.SlowTries; !slices.Equal(got.AfterSlowByAttempt, want.AfterSlowByAttempt) || got.First != want.First ||
		!slices.Equal(got.AfterFailureByAttempt, want.AfterFailureByAttempt) {
		t.Errorf("slow tries %+v, want %+v", got, want)
	}
	if o.First.Failed() != 0 || o.First.OK != 4 || o.Retry.OK != 6 {
		t.Errorf("outcome mixes %+v / %+v: the slow tries counted as failures too", o.First, o.Retry)
	}
	var op Operation
	for _, s := range tp.Services {
		for _, x := range s.Operations {
			if s.Name == "pricing" {
				op = x
			}
		}
	}
	if len(op.SlowWorkQuantilesMS) != len(WorkLevels) || op.SlowWorkQuantilesMS[0] != 148 ||
		len(op.AnsweredWorkQuantilesMS) != len(WorkLevels) || op.AnsweredWorkQuantilesMS[len(WorkLevels)-1] != 9 {
		t.Errorf("pricing work on slow tries %v, on answered ones %v: want 148 ms and 9 ms", op.SlowWorkQuantilesMS, op.AnsweredWorkQuantilesMS)
	}
}

// TestFirstDownstreamFailed: first attempts whose callee failed because
// its own call failed are counted apart (they passed whatever the callee
// fails on before it calls anything); retries are not.
func TestFirstDownstreamFailed(t *testing.T) {
	b := newBuilder()
	spaced(b, 9, 100, "gateway", "GET /o", 60, func(root int, start float64, i int) {
		switch i % 3 {
		case 0: // orders fails on its own, calling nothing; the retry succeeds
			b.call(root, "orders", "Get", start+1, 5, httpStatus(503), method("GET"), target("http://orders/1"))
			_, srv := b.call(root, "orders", "Get", start+10, 5, httpStatus(200), method("GET"), target("http://orders/1"))
			b.call(srv, "warehouse", "Count", start+11, 2, httpStatus(200))
		case 1: // warehouse fails and orders passes it on; then both fail again, then succeed
			for k, at := range []float64{1, 10, 20} {
				code := 503
				if k == 2 {
					code = 200
				}
				_, srv := b.call(root, "orders", "Get", start+at, 5, httpStatus(code), method("GET"), target("http://orders/1"))
				b.set.Spans[srv].HTTPStatus = uint16(code)
				b.call(srv, "warehouse", "Count", start+at+1, 2, httpStatus(code))
			}
		default:
			_, srv := b.call(root, "orders", "Get", start+1, 5, httpStatus(200), method("GET"), target("http://orders/1"))
			b.call(srv, "warehouse", "Count", start+2, 2, httpStatus(200))
		}
	})
	o := edge(t, b.infer(), "gateway", "orders").Outcomes
	if o == nil || o.DownstreamFailed != 6 || o.FirstDownstreamFailed != 3 {
		t.Fatalf("downstream failed %d, of them first attempts %d: want 6 and 3 (%+v)", o.DownstreamFailed, o.FirstDownstreamFailed, o)
	}
}

// spaced adds n traces whose root SERVER spans of svc serving op last dur
// ms and start gap ms apart, each filled in by build.
func spaced(b *builder, n int, gap float64, svc, op string, dur float64, build func(root int, start float64, i int)) {
	for i := range n {
		if i > 0 {
			b.newTrace()
		}
		start := gap * float64(i)
		build(b.server(-1, svc, op, start, dur), start, i)
	}
}

// TestGivenUpWithAttemptsLeft: a gRPC caller that retries
// RESOURCE_EXHAUSTED and UNAVAILABLE up to 3 attempts, but ends 3 calls on
// a RESOURCE_EXHAUSTED at the first attempt, 2 of whose answers asked not
// to be retried (grpc-retry-pushback-ms -1): the edge's outcomes count,
// per status, the failures retried and the calls given up with attempts
// left (not those that ran out of attempts), with the reason where a span
// shows it.
func TestGivenUpWithAttemptsLeft(t *testing.T) {
	b := newBuilder()
	calls := [][]opt{}
	for range 4 {
		calls = append(calls, []opt{grpcCode(8), grpcCode(8), grpcCode(0)})
	}
	for range 2 {
		calls = append(calls, []opt{grpcCode(14), grpcCode(14), grpcCode(14)})
	}
	calls = append(calls, []opt{grpcCode(8)})
	for range 2 {
		calls = append(calls, []opt{func(s *ingest.Set, sp *ingest.Record) { grpcCode(8)(s, sp); retryAfter(ingest.NoRetry)(s, sp) }})
	}
	for range 3 {
		calls = append(calls, []opt{grpcCode(0)})
	}
	for i, as := range calls {
		if i > 0 {
			b.newTrace()
		}
		at := float64(1000 * i)
		root := b.server(-1, "gateway", "GET /order", at, 200)
		for k, o := range as {
			b.call(root, "catalog", "Lookup", at+1+30*float64(k), 3, o)
		}
	}
	e := edge(t, b.infer(), "gateway", "catalog")
	if e.MaxAttempts != 3 {
		t.Fatalf("max attempts %d, want 3", e.MaxAttempts)
	}
	want := []StatusRetries{
		{Status: "grpc RESOURCE_EXHAUSTED", Class: "throttled", Retried: 8, GivenUp: 3, StopAsked: 2,
			Reason: "2 of the answers asked not to retry (grpc-retry-pushback-ms < 0); for the others no span says why"},
		{Status: "grpc UNAVAILABLE", Class: "server_error", Retried: 4},
	}
	if e.Outcomes == nil || !slices.Equal(e.Outcomes.GivenUp, want) {
		t.Fatalf("given up\n got %+v\nwant %+v", e.Outcomes.GivenUp, want)
	}
	if g, given, n := GiveUpShare(e.Outcomes.GivenUp, "throttled"); given != 3 || n != 11 || g != 3.0/11 {
		t.Errorf("throttled share %v (%d of %d), want 3 of 11", g, given, n)
	}
	if _, given, n := GiveUpShare(e.Outcomes.GivenUp, "server_error", "timeout", "transport"); given != 0 || n != 4 {
		t.Errorf("failures given up %d of %d, want 0 of 4", given, n)
	}
}

// TestGivenUpUnknownWithLeaks: where attempts of the edge ran in other
// requests' contexts, a call that shows fewer attempts may have made more:
// the give-ups are unknown, and no share is read from them.
func TestGivenUpUnknownWithLeaks(t *testing.T) {
	d := map[statusClass]*statusRetries{{httpLabel(503), classServerError}: {retried: 5, ended: []int{2, 0, 1}, stop: []int{0, 0, 0}}}
	rs := givenUp(d, 3, 4)
	if len(rs) != 1 || !rs[0].Unknown || rs[0].GivenUp != 2 || rs[0].Retried != 5 {
		t.Fatalf("given up %+v, want 2 of 7 unknown", rs)
	}
	if _, given, n := GiveUpShare(rs, "server_error"); given != 0 || n != 0 {
		t.Errorf("share of %d of %d, want none", given, n)
	}
	if rs := givenUp(d, 3, 0); len(rs) != 1 || rs[0].Unknown || rs[0].Reason != "unknown: no span says why" {
		t.Errorf("without leaks %+v", rs)
	}
}

// TestDeadlineCutTries: tries cut by the deadline the caller's own caller
// propagated (gRPC's grpc-timeout: gateway's 60 ms per-try timeout ends
// orders' call to warehouse at the same moment) are slow tries, as those
// a per-try timeout of the edge's own cuts, where warehouse was still at
// work: kept out of the outcome mix, so that a replay which cuts them by
// the propagated deadline does not also draw them as warehouse's own
// failures, and warehouse's work on them kept apart from its failures'.
// Where warehouse stopped at the deadline too, it answered
// DEADLINE_EXCEEDED itself: a failure of its own, in the mix.
func TestDeadlineCutTries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cutWork   float64 // warehouse's span on a cut try (ms)
		first     OutcomeMix
		slow      *TryCount
		slowWork  bool // the cut tries' time is warehouse's slow work, not its failures'
		failedMax float64
	}{
		{"callee at work past the deadline", 150, OutcomeMix{OK: 6}, &TryCount{Tries: 9, Slow: 3}, true, 0},
		{"callee stopped at the deadline", 59.1, OutcomeMix{OK: 6, Timeout: 3}, nil, false, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			spaced(b, 6, 400, "gateway", "GET /order", 150, func(root int, start float64, i int) {
				at := start + 1
				if i < 3 {
					c := b.client(root, "orders", at, 60, grpcCode(4), method("Get"))
					o := b.server(c, "orders", "Get", at+0.2, 59.9, grpcCode(4))
					w := b.client(o, "warehouse", at+0.5, 59.5, grpcCode(4), method("Count"))
					b.server(w, "warehouse", "Count", at+0.7, tc.cutWork, grpcCode(4))
					at += 80
				}
				c := b.client(root, "orders", at, 3, grpcCode(0), method("Get"))
				o := b.server(c, "orders", "Get", at+0.2, 2.6, grpcCode(0))
				b.call(o, "warehouse", "Count", at+0.5, 2, grpcCode(0), method("Count"))
			})
			tp := b.infer()
			e := edge(t, tp, "orders", "warehouse")
			o := e.Outcomes
			if e.DeadlineFromCaller != 3 || o == nil {
				t.Fatalf("deadline_from_caller %d, outcomes %+v: want 3 tries cut by gateway's deadline", e.DeadlineFromCaller, o)
			}
			if o.First != tc.first {
				t.Errorf("first tries %+v, want %+v", o.First, tc.first)
			}
			switch {
			case tc.slow == nil && o.SlowTries != nil:
				t.Errorf("slow tries %+v, want none: warehouse ended with the try", *o.SlowTries)
			case tc.slow != nil && (o.SlowTries == nil || o.SlowTries.First != *tc.slow || o.SlowTries.AfterSlowByAttempt == nil || o.SlowTries.AfterFailureByAttempt == nil):
				t.Errorf("slow tries %+v, want first %+v and empty (not null) lists on an edge without retries", o.SlowTries, *tc.slow)
			}
			for _, s := range tp.Services {
				if s.Name != "warehouse" {
					continue
				}
				for _, op := range s.Operations {
					slow := len(op.SlowWorkQuantilesMS) > 0 && op.SlowWorkQuantilesMS[0] >= 149
					failed := slices.Max(append([]float64{0}, op.FailedWorkQuantilesMS...))
					if slow != tc.slowWork || failed > tc.failedMax+1 || tc.failedMax > 0 && failed < tc.failedMax-1 {
						t.Errorf("warehouse work: slow %v, failed %v; want the cut tries' time as slow work %v, failures' up to %v ms", op.SlowWorkQuantilesMS, op.FailedWorkQuantilesMS, tc.slowWork, tc.failedMax)
					}
				}
			}
		})
	}
}
