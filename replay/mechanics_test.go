package replay

// Tests of the mechanisms issue 9 asked for, each on a model small enough
// that the right answer is known, each one that the old engine failed.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
)

// chain is user → api → svc → db, 20 requests a second, no retries and no
// per-try timeouts anywhere (the retry-everywhere mesh's waits bounded
// only by what the network does), a 5 s end-user deadline.
func chain() *Model {
	p := Policy{MaxAttempts: 1}
	return &Model{
		Services: []Service{
			{Name: "api", Workers: 20, Ops: []Op{{Name: "get", Time: Exponential{MeanS: 0.002}, Calls: []int{0}}}},
			{Name: "svc", Workers: 20, Ops: []Op{{Name: "get", Time: Exponential{MeanS: 0.002}, Calls: []int{1}}}},
			{Name: "db", Workers: 4, Ops: []Op{{Name: "query", Time: Exponential{MeanS: 0.01}}}},
		},
		Edges: []Edge{
			{Caller: 0, CallerOp: 0, Callee: 1, CalleeOp: 0, Prob: 1, Repeat: 1, Policy: p},
			{Caller: 1, CallerOp: 0, Callee: 2, CalleeOp: 0, Prob: 1, Repeat: 1, Policy: p},
		},
		Entry:          []Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:           20,
		ClientDeadline: 5,
	}
}

func mustRun(t *testing.T, m *Model, faults degrade.Schedule, cfg RunConfig) Result {
	t.Helper()
	r, err := Run(m, faults, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestLossDoesNotLeakWorkers (item 1): a 1 s, 5% packet loss at db, or a
// 3 s hang, with no retries and no timeouts: lost packets are resent as
// TCP resends them (200 ms, doubling; a reset after 3), so every wait
// ends, the workers come back and the run recovers. The old engine lost
// the request for good, and the callers waited forever: goodput 0.
func TestLossDoesNotLeakWorkers(t *testing.T) {
	for _, spec := range []string{"packet-loss:svc=db,at=10s,for=1s,p=0.05", "outage:svc=db,at=10s,for=3s,mode=hang"} {
		for seed := uint64(1); seed <= 5; seed++ {
			r := mustRun(t, chain(), schedule(spec), RunConfig{Seed: seed, Duration: 40})
			late := prSum(r.Series.Goodput[25:40])
			if r.Verdict != VerdictRecovered || late < 250 {
				t.Errorf("%s seed %d: verdict %s, %d successes in the last 15 s (offered %d); want recovered", spec, seed, r.Verdict, late, prSum(r.Series.Originals[25:40]))
			}
		}
	}
	// The reset: a hang longer than the retransmissions fails each
	// attempt 0.2+0.4+0.8+1.6 = 3 s after it was sent.
	m := single("db", 1000, Constant(0.001), 100, 0, Policy{MaxAttempts: 1})
	r := mustRun(t, m, schedule("outage:svc=db,at=10s,for=20s,mode=hang"), RunConfig{Seed: 1, Duration: 40})
	if r.P95MS < 2999 || r.P95MS > 3100 {
		t.Errorf("hang: p95 %.1f ms, want the 3 s of TCP's retransmissions before the reset", r.P95MS)
	}
}

// TestShardsByKey (items 2 and 3): a request's key decides its shard for
// every attempt, so retries of a request on a slow shard all land on it;
// and shards split the service's workers rather than adding some.
func TestShardsByKey(t *testing.T) {
	// 4 workers of 100 ms, 100 requests a second offered: 40 a second
	// served, with or without a slow-shard fault that never fires (the old
	// engine gave each of 8 shards a worker: 69.8 a second).
	for _, spec := range []string{"", "slow-shard:svc=server,at=1000s,for=1s"} {
		var faults degrade.Schedule
		if spec != "" {
			faults = schedule(spec)
		}
		r := mustRun(t, single("server", 4, Constant(0.1), 100, 0, Policy{MaxAttempts: 1}), faults, RunConfig{Seed: 1, Duration: 30, Drain: -1})
		if got := float64(r.Succeeded) / 30; got > 41 {
			t.Errorf("%q: %.1f served a second by 4 workers of 100 ms, want at most 40", spec, got)
		}
	}
	// Shard 0 of 8 is down (a slow shard 1e6 times slower, per-try 50 ms,
	// 4 attempts): a request whose key is on it fails all four attempts;
	// the others never fail. Availability is 7/8, not 1-(1/8)^4.
	m := single("db", 64, Constant(0.001), 200, 0, Policy{MaxAttempts: 4, PerTryTimeout: 0.05})
	r := mustRun(t, m, schedule("slow-shard:svc=db,at=0s,for=0s,x=1e6"), RunConfig{Seed: 1, Duration: 30})
	if math.Abs(r.Availability-7.0/8) > 0.02 {
		t.Errorf("slow shard down: availability %.3f, want about 7/8: retries must land on the request's own shard", r.Availability)
	}
	if r.Mechanics.Services[1].Parts != 8 || r.Mechanics.Services[1].Split != "key" {
		t.Errorf("mechanics %+v: want db split into 8 shards by key", r.Mechanics.Services[1])
	}
	// A replica picked at random: retries escape it, availability ≈ 1.
	r = mustRun(t, m, schedule("slow-replica:svc=db,at=0s,for=0s,replicas=8,x=1e6"), RunConfig{Seed: 1, Duration: 30})
	if r.Availability < 0.995 {
		t.Errorf("slow replica down: availability %.4f, want ≈ 1 - (1/8)^4", r.Availability)
	}
}

// TestCancellation (item 4): cancels take time to arrive, queued work is
// dropped when they do, running work completes unless the callee honours
// cancellation. A 50 ms hedge against 200 ms constant service doubles the
// work by default, and leaves it near one service time with CancelRunning.
func TestCancellation(t *testing.T) {
	m := single("db", 1000, Constant(0.2), 50, 0, Policy{MaxAttempts: 2, HedgeAfter: 0.05})
	r := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 20})
	base := mustRun(t, m.WithoutRetries(), nil, RunConfig{Seed: 1, Duration: 20})
	if amp := r.WorkS / base.WorkS; amp < 1.95 || amp > 2.05 {
		t.Errorf("hedge losers running to completion: work ×%.3f, want ×2", amp)
	}
	if r.WastedS < 0.45*r.WorkS {
		t.Errorf("wasted %.1f of %.1f s: the losers' work is wasted", r.WastedS, r.WorkS)
	}
	m.Services[1].CancelRunning = true
	r = mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 20})
	// Each loser ran from 50 ms until the winner's answer plus the cancel's
	// 1 ms: 151 ms of 200 wasted... the winner is the first attempt.
	if amp := r.WorkS / base.WorkS; amp < 1.70 || amp > 1.80 {
		t.Errorf("cancelled losers: work ×%.3f, want ×(1 + 0.151/0.2) = ×1.755", amp)
	}
}

// TestHedgesUpToMaxAttempts: a hedged call sends another request every
// hedge delay while the latest has not answered, up to MaxAttempts in all
// (failsafe-go's max hedges n is n+1 attempts). Against a constant 200 ms
// callee, hedges after 60 ms go out at 60, 120 and 180 ms, so a call
// sends min(MaxAttempts, 4) requests; the first still answers first, and
// every loser is cancelled.
func TestHedgesUpToMaxAttempts(t *testing.T) {
	for _, tc := range []struct {
		max  int
		want float64 // attempts per call
	}{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {6, 4}} {
		t.Run(fmt.Sprint(tc.max), func(t *testing.T) {
			m := single("db", 1000, Constant(0.2), 50, 0, Policy{MaxAttempts: tc.max, HedgeAfter: 0.06})
			r := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 10})
			a := r.Attempts[0]
			calls := float64(a.Attempts - a.Retries)
			if got := float64(a.Attempts) / calls; math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("%.3f attempts per call, want %g", got, tc.want)
			}
			if want := a.Retries; r.Hedges != want {
				t.Errorf("%d hedges counted, want every extra attempt (%d)", r.Hedges, want)
			}
			if r.Availability != 1 || math.Abs(r.P50MS-200) > 1 {
				t.Errorf("availability %v, p50 %.1f ms: want 1 and the first attempt's 200 ms", r.Availability, r.P50MS)
			}
		})
	}
}

// TestHedgeDrawnAsFirst: a hedge goes out before any attempt of its call
// has failed, so the callee's outcome for it is drawn from the first
// attempts' mix (graph counts hedges there), not from the retries'.
// Against a constant 200 ms callee that fails half the first attempts and
// every retry, a call hedged after 60 ms fails only when both its
// requests do (a quarter of them); a call retried after a failure, always.
func TestHedgeDrawnAsFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hedge float64
		want  float64 // availability
	}{{"hedged", 0.06, 0.75}, {"retried", 0, 0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			m := single("db", 1000, Constant(0.2), 100, 0, Policy{MaxAttempts: 2, HedgeAfter: tc.hedge})
			m.Edges[0].Fail = &Failures{First: Mix{Fail: 0.5}, Retry: Mix{Fail: 1}}
			r := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 20})
			if math.Abs(r.Availability-tc.want) > 0.04 {
				t.Errorf("availability %.3f, want %.2f", r.Availability, tc.want)
			}
		})
	}
}

// TestWastedWork (item 5): wasted work is every service-second that did
// not end in a successful root response. A run where nothing succeeds
// wastes all of it; a healthy run without retries wastes none.
func TestWastedWork(t *testing.T) {
	m := chain()
	r := mustRun(t, m, schedule("outage:svc=db,at=0s,for=0s,mode=error-after-work"), RunConfig{Seed: 1, Duration: 20})
	if r.Availability != 0 || r.WorkS == 0 || math.Abs(r.WastedS-r.WorkS) > 1e-9*r.WorkS {
		t.Errorf("nothing succeeds: availability %v, wasted %.3f of %.3f s; want all of it", r.Availability, r.WastedS, r.WorkS)
	}
	r = mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 20})
	if r.Availability != 1 || r.WastedS != 0 {
		t.Errorf("healthy: availability %v, wasted %v s; want 1 and 0", r.Availability, r.WastedS)
	}
}

// TestVerdict (item 6): the verdict comes from the dynamics. A slow drain
// with no retries (λ 57 < μ 60 after an 8 s cut of the pool)
// recovers, later than the old 10–15 s window looked (the pool at 4 of 6
// workers: a backlog of about 136 draining at 3 a second), and is never
// labelled metastable; a trigger at the start is not judged; recovery_s is
// null exactly when the run collapsed.
func TestVerdict(t *testing.T) {
	m := single("server", 6, Exponential{MeanS: 0.1}, 57, 0, Policy{MaxAttempts: 1})
	for seed := uint64(1); seed <= 5; seed++ {
		r := mustRun(t, m, schedule("db-pool:svc=server,at=10s,for=8s,k=4"), RunConfig{Seed: seed, Duration: 40})
		if r.Verdict != VerdictRecovered || r.Metastable || r.RecoveryS == nil || *r.RecoveryS < 10 {
			t.Errorf("slow drain seed %d: verdict %s, recovery %s, judged to %v s; want recovered after 10 s or more", seed, r.Verdict, fmtPtr(r.RecoveryS), r.JudgedToS)
		}
	}
	r := mustRun(t, m, schedule("outage:svc=server,at=1s,for=2s"), RunConfig{Seed: 1, Duration: 40})
	if r.Verdict != VerdictNotJudged || r.Triggered || r.Metastable || r.VerdictNote == "" {
		t.Errorf("trigger at 1 s: verdict %q (%s), triggered %v; want not judged, with a reason", r.Verdict, r.VerdictNote, r.Triggered)
	}
	for _, d := range []string{"0.5s", "3s"} {
		for seed := uint64(1); seed <= 5; seed++ {
			r := mustRun(t, prStorm(nil), prOutage(d), RunConfig{Seed: seed, Duration: 40})
			if r.Metastable != (r.RecoveryS == nil) || r.Metastable != (r.Verdict == VerdictCollapsed) {
				t.Errorf("storm %s seed %d: verdict %s, metastable %v, recovery %s: inconsistent", d, seed, r.Verdict, r.Metastable, fmtPtr(r.RecoveryS))
			}
		}
	}
}

// retryMesh is api → svc → db with retries at both layers (3 attempts,
// per-try 1 s and 0.3 s), db at 6 workers of 10 ms (600/s) under 560 root
// requests a second, a 5 s end-user deadline; prop propagates deadlines.
func retryMesh(prop bool) *Model {
	p := func(per float64) Policy { return Policy{MaxAttempts: 3, PerTryTimeout: per, Propagate: prop} }
	return &Model{
		Services: []Service{
			{Name: "api", Workers: 200, Ops: []Op{{Name: "get", Time: Exponential{MeanS: 0.001}, Calls: []int{0}}}},
			{Name: "svc", Workers: 100, Ops: []Op{{Name: "get", Time: Exponential{MeanS: 0.001}, Calls: []int{1}}}},
			{Name: "db", Workers: 6, Ops: []Op{{Name: "q", Time: Exponential{MeanS: 0.01}}}},
		},
		Edges: []Edge{
			{Caller: 0, CallerOp: 0, Callee: 1, CalleeOp: 0, Prob: 1, Repeat: 1, Policy: p(1)},
			{Caller: 1, CallerOp: 0, Callee: 2, CalleeOp: 0, Prob: 1, Repeat: 1, Policy: p(0.3)},
		},
		Entry: []Entry{{Service: 0, Op: 0, Weight: 1}}, Rate: 560, ClientDeadline: 5, RootPropagate: prop,
	}
}

// TestPropagatedDeadline (item 8): each attempt's own deadline travels with
// it (the per-try timeout when sooner than the call's), the callee's calls
// inherit it, and servers drop expired work before starting it. On a mesh
// that retries at two layers, a 5 s slowdown of db (×3) leaves it
// collapsed without propagation and recovered with it, in every seed.
func TestPropagatedDeadline(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		plain := mustRun(t, retryMesh(false), schedule("latency:svc=db,at=10s,for=5s,x=3"), RunConfig{Seed: seed, Duration: 40})
		prop := mustRun(t, retryMesh(true), schedule("latency:svc=db,at=10s,for=5s,x=3"), RunConfig{Seed: seed, Duration: 40})
		if !plain.Collapsed() || prop.Collapsed() || prop.DroppedLate == 0 || prop.Availability < plain.Availability+0.5 {
			t.Errorf("seed %d: without propagation %s (availability %.3f), with %s (availability %.3f, %d dropped past their deadline); want collapsed, then recovered",
				seed, plain.Verdict, plain.Availability, prop.Verdict, prop.Availability, prop.DroppedLate)
		}
	}
}

// TestOutageModes (item 9): fast-fail costs the server nothing, hang
// costs nothing while it lasts, error-after-work costs the full work.
func TestOutageModes(t *testing.T) {
	work := map[string]float64{}
	for _, mode := range []string{"error", "timeout", "error-after-work"} {
		m := single("server", 10, Constant(0.01), 100, 0, Policy{MaxAttempts: 1})
		r := mustRun(t, m, schedule("outage:svc=server,at=0s,for=0s,mode="+mode), RunConfig{Seed: 1, Duration: 10})
		work[mode] = r.WorkS
		if r.Availability != 0 {
			t.Errorf("%s: availability %v during a whole-run outage", mode, r.Availability)
		}
	}
	if work["error"] != 0 || work["timeout"] != 0 || work["error-after-work"] < 9 {
		t.Errorf("work per mode %v: want 0, 0 and about 1,000 × 10 ms", work)
	}
}

// TestPercentilesCountFailures (item 10): a run at availability 0.5
// reports its failures in its percentiles, at their failure time or the
// deadline: half the requests hang until the 2 s deadline, so p99 is 2 s.
func TestPercentilesCountFailures(t *testing.T) {
	m := single("server", 100, Constant(0.01), 100, 2, Policy{MaxAttempts: 1})
	r := mustRun(t, m, schedule("outage:svc=server,at=15s,for=0s,mode=hang"), RunConfig{Seed: 1, Duration: 30})
	if math.Abs(r.Availability-0.5) > 0.05 || r.P99MS < 1999 || r.P95MS < 1999 {
		t.Errorf("availability %.3f, p95 %.0f ms, p99 %.0f ms; want 0.5 and the 2 s deadline", r.Availability, r.P95MS, r.P99MS)
	}
}

// TestMechanicsReported: every verdict-changing parameter is in the
// result and its note.
func TestMechanicsReported(t *testing.T) {
	m := single("server", 6, Exponential{MeanS: 0.1}, 40, 0, Policy{MaxAttempts: 1})
	m.Services[1].Thrash, m.Services[1].CancelProb, m.Services[1].QueueCap, m.Services[1].ShedRetriesAt = 0.25, 0.5, 30, 12
	m.MaxInflight = 70
	r := mustRun(t, m, schedule("slow-shard:svc=server,at=10s,for=1s,shards=4"), RunConfig{Seed: 1, Duration: 20})
	sm := r.Mechanics.Services[1]
	if sm.Thrash != 0.25 || sm.Cancel != 0.5 || sm.QueueCap != 30 || sm.ShedRetriesAt != 12 || sm.Parts != 4 || r.Mechanics.RTOMS != 200 || r.Mechanics.Retransmits != 3 || r.Mechanics.CancelDelayMS != 1 || r.Mechanics.MaxInflight != 70 {
		t.Errorf("mechanics %+v", r.Mechanics)
	}
	note := r.Mechanics.String()
	for _, want := range []string{"thrash 0.25", "cancel 0.5", "queue bound 30", "retries shed from 12 queued", "4 shards by key", "200 ms", "reset after 3", "cancels arrive after 1 ms", "at most 70 requests in flight"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	m.MaxInflight = 0
	if note := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 5}).Mechanics.String(); !strings.Contains(note, "no client limit on requests in flight") {
		t.Errorf("note %q does not say the client has no limit", note)
	}
	m.MaxInflight, m.OpenClients = 1, 50
	r = mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 5})
	if note, want := r.Mechanics.String(), "the arrivals come from 50 clients, each with one request in flight at a time"; r.Mechanics.OpenClients != 50 || !strings.Contains(note, want) {
		t.Errorf("open clients %d, note %q; want 50 and %q", r.Mechanics.OpenClients, note, want)
	}
}

// TestOpenClients: split among clients, the open-loop arrivals wait in
// their own client's line. 2 requests a second of a constant 1 s each on
// 100 workers: 4 clients with one request in flight each are 4 M/D/1
// queues at utilization 0.5, mean latency S + ρS/(2(1−ρ)) = 1.5 s; one
// client with 4 in flight is M/D/4 at 0.5, under 1.1 s; and with no
// limit every request takes 1 s.
func TestOpenClients(t *testing.T) {
	m := single("server", 100, Constant(1), 2, 0, Policy{MaxAttempts: 1})
	m.OpenClients, m.MaxInflight = 4, 1
	lines := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 4000})
	m.OpenClients, m.MaxInflight = 0, 4
	shared := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 4000})
	m.OpenClients, m.MaxInflight = 4, 0
	open := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 4000})
	if math.Abs(lines.MeanMS-1500)/1500 > 0.05 || shared.MeanMS > 1100 || open.MeanMS != 1000 {
		t.Errorf("mean latency %.0f ms in 4 lines of one, %.0f ms in one line of 4, %.0f ms with no limit; want 1500 (±5%%), under 1100, 1000",
			lines.MeanMS, shared.MeanMS, open.MeanMS)
	}
	if lines.Availability != 1 {
		t.Errorf("availability %v in 4 lines: want every request served", lines.Availability)
	}
}

// TestMaxInflight: the client's limit on requests in flight bounds the
// requests out at once, whole (a request holds its place through its
// retries and backoff); the rest wait in order of arrival, their wait
// counted in their latency, and one whose end user gave up meanwhile
// fails unsent. 50 requests a second of 1 s each on 100 workers: with no
// limit all 50 a second succeed; with 10 in flight exactly 10 a second
// do, once the line has formed, and the line grows by 40 a second.
func TestMaxInflight(t *testing.T) {
	m := single("server", 100, Constant(1), 50, 0, Policy{MaxAttempts: 1})
	open := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 10})
	m.MaxInflight = 10
	limited := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 10})
	for sec := 3; sec < 10; sec++ {
		if g := limited.Series.Goodput[sec]; g != 10 {
			t.Errorf("10 in flight: %d successes in second %d, want 10", g, sec)
		}
		if g := open.Series.Goodput[sec]; g < 30 {
			t.Errorf("no limit: %d successes in second %d, want about 50", g, sec)
		}
	}
	if q := limited.Series.QueueDepth[5]; q < 150 {
		t.Errorf("10 in flight: %d waiting at 6 s, want the line (about 240) in the queue depth", q)
	}
	if limited.P50MS < 2000 || open.P50MS != 1000 {
		t.Errorf("p50 %v ms with the limit, %v without: want the wait counted (over 2 s) and 1 s", limited.P50MS, open.P50MS)
	}
	// A request holds its place through its backoff: a server failing
	// fast for the whole run, two attempts 1 s apart, so a request is out
	// 1 s, and 10 requests a second make 10 retries (50 with no limit).
	m = single("server", 100, Constant(0.01), 50, 0, Policy{MaxAttempts: 2, PerTryTimeout: 0.5,
		Backoff: Backoff{Kind: BackoffConstant, Base: 1, Jitter: JitterNone}})
	m.MaxInflight = 10
	down := mustRun(t, m, schedule("outage:svc=server,at=0s,for=100s,mode=error"), RunConfig{Seed: 1, Duration: 10})
	for sec := 3; sec < 10; sec++ {
		if o := down.Series.Retries[sec]; o != 10 {
			t.Errorf("10 in flight, 1 s a request: %d retries in second %d, want 10", o, sec)
		}
	}
	// End users who wait 3 s: those still in line then fail unsent.
	m = single("server", 100, Constant(1), 50, 3, Policy{MaxAttempts: 1})
	m.MaxInflight = 10
	r := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 10})
	if r.Availability > 0.5 || r.P99MS > 3000.001 {
		t.Errorf("3 s deadline behind 10 in flight: availability %v, p99 %v ms; want most failing, none waiting past 3 s", r.Availability, r.P99MS)
	}
}

// TestHopRoundTrip: a network hop is paid by every message, or, as a
// round trip (the jirfag/simulations model's net_rtt), once by the request
// with the answer back at once; the notes and JSON say which. (A root
// request crosses two hops: user to client, client to server.)
func TestHopRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		roundTrip bool
		wantMS    float64
		note      string
	}{{false, 30, "network hop 5 ms a message"}, {true, 20, "network round trip 5 ms an attempt"}} {
		m := single("server", 100, Constant(0.01), 50, 0, Policy{MaxAttempts: 1})
		m.Hop, m.HopRoundTrip = Constant(0.005), tc.roundTrip
		r := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 10})
		if math.Abs(r.P50MS-tc.wantMS) > 1e-6 || math.Abs(r.P99MS-tc.wantMS) > 1e-6 {
			t.Errorf("round trip %v: p50 %v, p99 %v ms, want %v", tc.roundTrip, r.P50MS, r.P99MS, tc.wantMS)
		}
		if r.Mechanics.HopRoundTrip != tc.roundTrip || !strings.Contains(r.Mechanics.String(), tc.note) {
			t.Errorf("round trip %v: mechanics %+v, note %q", tc.roundTrip, r.Mechanics, r.Mechanics.String())
		}
	}
}

// TestRefusals: hostile parameters are refused with what was expected.
func TestRefusals(t *testing.T) {
	m := single("server", 6, Exponential{MeanS: 0.1}, 40, 0, Policy{MaxAttempts: 1})
	if _, err := Run(m, schedule("outage:svc=dbx,at=1s,for=1s"), RunConfig{}); err == nil || !strings.Contains(err.Error(), "it has client, server") {
		t.Errorf("fault on a missing service: %v", err)
	}
	big := single("server", 6, Exponential{MeanS: 0.1}, 1e9, 0, Policy{MaxAttempts: 1})
	if _, err := Run(big, nil, RunConfig{}); err == nil || !strings.Contains(err.Error(), "--max-events") {
		t.Errorf("a billion requests a second: %v", err)
	}
	for _, cfg := range []RunConfig{{Duration: math.NaN()}, {RTO: math.Inf(1)}, {Share: 2}, {MaxJudge: 1e12}, {Duration: 1e12}} {
		if _, err := Run(m, nil, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	nan := single("server", 6, Exponential{MeanS: 0.1}, math.NaN(), 0, Policy{MaxAttempts: 1})
	if _, err := Run(nan, nil, RunConfig{}); err == nil {
		t.Error("a NaN rate accepted")
	}
	// Model figures that would silently read as "none": a negative queue
	// bound, a NaN deadline, an infinite or negative per-try timeout.
	for name, tc := range map[string]struct {
		edit func(*Model)
		want string
	}{
		"queue bound":     {func(m *Model) { m.Services[1].QueueCap = -5 }, "queue bound -5"},
		"shed":            {func(m *Model) { m.Services[1].ShedRetriesAt = -1 }, "retries shed from -1"},
		"client deadline": {func(m *Model) { m.ClientDeadline = math.NaN() }, "client deadline NaN"},
		"think":           {func(m *Model) { m.Think = -1 }, "think time -1"},
		"hop":             {func(m *Model) { m.Hop = Constant(math.Inf(1)) }, "network hop"},
		"per-try":         {func(m *Model) { m.Edges[0].Policy.PerTryTimeout = math.Inf(1) }, "per-try timeout +Inf"},
		"deadline":        {func(m *Model) { m.Edges[0].Policy.Deadline = -2 }, "deadline -2"},
		"hedge":           {func(m *Model) { m.Edges[0].Policy.HedgeAfter = math.NaN() }, "hedge delay NaN"},
		"max in flight":   {func(m *Model) { m.MaxInflight = -1 }, "-1 root requests in flight"},
		"open clients":    {func(m *Model) { m.OpenClients = -1 }, "-1 open-loop clients"},
		"max requests":    {func(m *Model) { m.Edges[0].Policy.MaxRequests = -1 }, "max requests -1: want 0 (no limit)"},
		"huge clients":    {func(m *Model) { m.OpenClients = 1 << 30 }, "want 0 (one client) to 1048576"},
		"both clients":    {func(m *Model) { m.OpenClients, m.Clients = 3, 2 }, "want one kind"},
	} {
		bad := single("server", 6, Exponential{MeanS: 0.1}, 40, 0, Policy{MaxAttempts: 2})
		tc.edit(bad)
		if _, err := Run(bad, nil, RunConfig{Duration: 5}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunContext(ctx, m, nil, RunConfig{Duration: 600}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

// TestIdempotentEdge (item 11): unknown is not idempotent; HTTP methods
// by their semantics (their tokens are case-sensitive, and ingest records
// them in upper case: "Get" is an RPC's method, grpc-js's Stock/Get);
// keyed retries are safe.
func TestIdempotentEdge(t *testing.T) {
	for _, tc := range []struct {
		e    graph.Edge
		want bool
	}{
		{graph.Edge{Method: "GET"}, true},
		{graph.Edge{Method: "DELETE"}, true},
		{graph.Edge{Method: "Get", Operation: "Get retryaudit.Stock/Get"}, false},
		{graph.Edge{Method: "PUT"}, true},
		{graph.Edge{Method: "POST"}, false},
		{graph.Edge{Method: "PATCH"}, false},
		{graph.Edge{Operation: "INSERT orders"}, false},
		{graph.Edge{Operation: "payments.Payments/Charge"}, false},
		{graph.Edge{Operation: "payments.Payments/Charge", Idempotency: &graph.Idempotency{}}, false},
		{graph.Edge{Method: "POST", Idempotency: &graph.Idempotency{RetriedCalls: 4, WithKey: 4}}, true},
		{graph.Edge{Method: "POST", Idempotency: &graph.Idempotency{RetriedCalls: 4, WithKey: 3}}, false},
	} {
		if got := idempotentEdge(tc.e); got != tc.want {
			t.Errorf("%+v: idempotent %v, want %v", tc.e, got, tc.want)
		}
	}
}

// TestRatioBudgetBistability: a ratio budget b caps the offered load of a
// collapsed system at (1+b)·λ. Against μ = 500/s (50 workers of 100 ms, a
// 0.5 s per-try timeout, 5 retries, a 10% budget, no cancellation), a
// trigger that halves the pool builds a backlog: a 5 s one pushes waits
// past the timeout, a 0.2 s one does not. At λ = 460/s, λ < μ < (1+b)λ
// = 506/s: the long trigger leaves it collapsed (every attempt times
// out, the budget's retries keep the server above capacity) and the short
// one does not. At λ = 420/s, (1+b)λ = 462/s < μ: it drains and recovers
// from the long one too. Over 20 seeds the verdict matches the theory and
// the dynamics in every
// case. (Goodput over the last 3 s judged is the dynamics: a collapsed
// run serves nothing in time, a recovered one nearly everything.)
func TestRatioBudgetBistability(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		trigger  string
		collapse bool
	}{
		{460, "5s", true},
		{460, "200ms", false},
		{420, "5s", false},
	} {
		m := single("server", 50, Exponential{MeanS: 0.1}, tc.rate, 0, Policy{MaxAttempts: 6, PerTryTimeout: 0.5,
			Budget: BudgetSpec{Kind: BudgetRatio, Ratio: 0.1, Window: 10}})
		held := 0
		for seed := uint64(1); seed <= 20; seed++ {
			r := mustRun(t, m, schedule("db-pool:svc=server,at=10s,for="+tc.trigger+",k=25"), RunConfig{Seed: seed, Duration: 40})
			n := len(r.Series.Goodput) - 1
			late, offered := prSum(r.Series.Goodput[n-3:n]), prSum(r.Series.Originals[n-3:n])
			q0, q1 := r.Series.QueueDepth[n-4], r.Series.QueueDepth[n-1]
			dynamicsCollapsed := float64(late) < 0.5*float64(offered)
			if r.Metastable == tc.collapse && dynamicsCollapsed == tc.collapse {
				held++
			} else {
				t.Logf("λ %g, %s trigger, seed %d: verdict %s (%s), judged to %g s; goodput %d of %d offered in the last 3 s, queue %d → %d",
					tc.rate, tc.trigger, seed, r.Verdict, fmtPtr(r.RecoveryS), r.JudgedToS, late, offered, q0, q1)
			}
		}
		if held != 20 {
			t.Errorf("λ %g, %s trigger: the verdict matched the dynamics and the theory (collapse %v) in %d of 20 seeds", tc.rate, tc.trigger, tc.collapse, held)
		}
	}
}

// TestRequestLimit: an edge's limit on requests out (Envoy's
// max_requests) fails the one past it at once instead of queueing it.
// λ 100 on 4 workers of 100 ms (μ 40): with no limit the queue grows
// without bound; with 20 out at most, at most 16 wait and 60% overflow;
// with three attempts allowed none of the overflows is retried.
func TestRequestLimit(t *testing.T) {
	m := single("server", 4, Exponential{MeanS: 0.1}, 100, 0, Policy{MaxAttempts: 3})
	open := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 20})
	m.Edges[0].Policy.MaxRequests = 20
	limited := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 20})
	if q := open.Series.QueueDepth[10]; q < 500 {
		t.Errorf("no limit: %d queued at 11 s, want the queue growing (about 660)", q)
	}
	for sec, q := range limited.Series.QueueDepth {
		if q > 16 {
			t.Errorf("20 out at most on 4 workers: %d queued at %d s, want at most 16", q, sec+1)
		}
	}
	share := float64(limited.Overflowed) / float64(limited.RootRequests)
	if math.Abs(share-0.6) > 0.03 || limited.RetryShare != 0 || open.Overflowed != 0 {
		t.Errorf("overflow share %.3f, retry share %v (no limit: %d overflowed); want 0.6, none retried, none", share, limited.RetryShare, open.Overflowed)
	}
	note := limited.Mechanics.String()
	if want := "client → server serve: at most 20 requests out at once from the caller to the callee, one more failing at once with 503 UO, not retried"; !strings.Contains(note, want) ||
		len(limited.Mechanics.RequestLimits) != 1 || limited.Mechanics.RequestLimits[0].MaxRequests != 20 || len(open.Mechanics.RequestLimits) != 0 {
		t.Errorf("limits %+v, note %q; want the edge's 20 and %q", limited.Mechanics.RequestLimits, note, want)
	}
	// A client that stops waiting frees its place (Envoy resets the
	// stream at the per-try timeout) while the callee still works: 5 out
	// at most, each for the 0.5 s timeout, on a server taking 10 s, is
	// Erlang's loss system at a = 20 × 0.5 (B(5, 10) = 0.564), and the
	// callee's queue still grows.
	m = single("server", 1, Constant(10), 20, 0, Policy{MaxAttempts: 1, PerTryTimeout: 0.5})
	m.Edges[0].Policy.MaxRequests = 5
	r := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 100})
	if share, want := float64(r.Overflowed)/float64(r.RootRequests), mmckBlocking(10, 5, 5); math.Abs(share-want) > 0.02 || r.Series.QueueDepth[20] < 150 {
		t.Errorf("overflow share %.3f, %d queued at 21 s; want %.3f and the callee's queue growing", share, r.Series.QueueDepth[20], want)
	}
	// Every edge from the caller into the callee counts against one
	// limit, as every route into an Envoy cluster does: two operations
	// called at once, 4 out at most on each edge, one worker of 1 s, so
	// at most 3 wait (7 if each edge counted its own).
	m = single("server", 1, Constant(1), 10, 0, Policy{MaxAttempts: 1, MaxRequests: 4})
	m.Services[1].Ops = append(m.Services[1].Ops, Op{Name: "other", Time: Constant(1)})
	m.Edges = append(m.Edges, Edge{Caller: 0, Callee: 1, CalleeOp: 1, Prob: 1, Repeat: 1, Policy: m.Edges[0].Policy})
	m.Services[0].Ops[0].Calls, m.Services[0].Ops[0].Parallel = []int{0, 1}, true
	r = mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 20})
	if q := slices.Max(r.Series.QueueDepth); q != 3 {
		t.Errorf("two edges into one callee, 4 out at most: up to %d queued, want 3", q)
	}
}

// TestRequestLimitBlocking: with Poisson arrivals, exponential service on
// c workers and at most K requests out, the callee is M/M/c/K, and the
// share of requests that overflow is its blocking probability
// P_K = a^K/(c!·c^(K−c))·p0 (a = λ/μ), within 0.01.
func TestRequestLimitBlocking(t *testing.T) {
	for _, tc := range []struct {
		c, k int
		rate float64 // a second, on workers of 100 ms
	}{{2, 2, 15}, {4, 6, 36}, {4, 10, 50}, {8, 8, 60}} {
		m := single("server", tc.c, Exponential{MeanS: 0.1}, tc.rate, 0, Policy{MaxAttempts: 1})
		m.Edges[0].Policy.MaxRequests = tc.k
		r := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 3000})
		got := float64(r.Overflowed) / float64(r.RootRequests)
		if want := mmckBlocking(tc.rate*0.1, tc.c, tc.k); math.Abs(got-want) > 0.01 {
			t.Errorf("c %d, K %d, λ %g: %.4f overflowed, want M/M/c/K's %.4f", tc.c, tc.k, tc.rate, got, want)
		}
	}
}

// mmckBlocking is M/M/c/K's blocking probability at offered load a.
func mmckBlocking(a float64, c, k int) float64 {
	p := make([]float64, k+1) // unnormalised state probabilities
	p[0] = 1
	for n := 1; n <= k; n++ {
		p[n] = p[n-1] * a / float64(min(n, c))
	}
	sum := 0.0
	for _, x := range p {
		sum += x
	}
	return p[k] / sum
}
