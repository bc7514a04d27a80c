package replay

// Proofs: each test runs the engine on a model whose behaviour the seeds
// (or queueing theory, or a reference system's semantics) predict, and
// fails if the simulation disagrees. Where one seed could be luck the test
// runs several and asks for k of n; each k is chosen so that, at the
// per-seed rate measured over 200 seeds (taken at the low end of its 95%
// interval), fewer than k successes has a chance under 1%. The measured
// rates are quoted where the k is set.

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
)

// prStorm is seed 000's server without its crutches: 6 workers of
// exponential 100 ms service (μ = 60/s) serving λ = 40/s, every client
// allowing 5 retries (R = 5) after a 0.5 s per-try timeout, retrying at
// once, and no cancellation: λ < μ < (1+R)·λ = 240/s, so both a healthy
// state and a collapsed one (every attempt waits past its timeout and is
// retried, the server working only for callers who left) are stable.
func prStorm(f func(*Policy)) *Model {
	p := Policy{MaxAttempts: 6, PerTryTimeout: 0.5}
	if f != nil {
		f(&p)
	}
	return single("server", 6, Exponential{MeanS: 0.1}, 40, 0, p)
}

func prOutage(d string) degrade.Schedule {
	return schedule("outage:svc=server,at=10s,for=" + d + ",mode=timeout")
}

// prCollapsed: goodput over the last 10 s of arrivals is under 10% of the
// offered 40/s. Collapsed runs sit at exactly 0; recovered ones near 400.
func prCollapsed(r Result) bool {
	g := 0
	for _, x := range r.Series.Goodput[50:60] {
		g += x
	}
	return g < 40
}

func prSum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// prBistability runs model m under faults for seeds 1..n (60 s of
// arrivals, the verdict window widened to 20 s to quiet Poisson noise) and
// counts the metastable verdicts and the collapsed runs.
func prBistability(t *testing.T, m *Model, faults degrade.Schedule, n int) (meta, collapsed int) {
	t.Helper()
	for seed := uint64(1); seed <= uint64(n); seed++ {
		r, err := Run(m, faults, RunConfig{Seed: seed, Duration: 60, Drain: 5, Window: 20})
		if err != nil {
			t.Fatal(err)
		}
		if r.Metastable {
			meta++
		}
		if prCollapsed(r) {
			collapsed++
		}
	}
	return meta, collapsed
}

// TestProofBistability is seed 000's (and 003's) metastable failure, from
// first principles. With immediate retries and no cancellation, a 0.5 s
// outage (mode=timeout) is absorbed and a 2 s one leaves the server
// collapsed for the rest of the run. Over 200 seeds the collapse rate
// against the trigger's length was: 1 ms 1.5% (spontaneous: a Poisson burst
// alone can tip it), 0.5 s 4%, 0.75 s 22%, 1 s 55%, 1.5 s 96.5%, 2 s and
// 10 s 100%. A ratio budget of b = 0.1 caps offered load at (1+b)·λ = 44/s
// < μ, and propagating a 1 s deadline (room for two attempts) lets the
// server drop work whose caller is gone: both recover from the 2 s and from
// a 10 s trigger (0 collapses in 200 seeds each).
//
// Propagating a 2 s deadline does not save it, even though the engine
// propagates each attempt's own deadline (its 0.5 s per-try timeout,
// sooner than the call's 2 s: grpc-timeout, Envoy's expected-timeout
// header) and the server drops work whose deadline has passed before
// starting it. Each call still sends an attempt every 0.5 s for 2 s, 160
// a second against μ = 60: the FIFO queue holds about 80 live attempts,
// and the server, taking the oldest, starts them just before their
// deadline and finishes them after it. Dropping expired work makes the
// collapse cheaper, not shorter; a 1 s deadline (two attempts, 80 a
// second) is what breaks it. The test pins that so a change to it is
// deliberate.
func TestProofBistability(t *testing.T) {
	const n = 20
	ratio := func(p *Policy) { p.Budget = BudgetSpec{Kind: BudgetRatio, Ratio: 0.1, Window: 10} }
	propagate := func(d float64) func(*Policy) {
		return func(p *Policy) { p.Deadline, p.Propagate = d, true }
	}

	// Immediate retries. Short trigger: recovered in 92.5% of 200 seeds
	// (the misses are spontaneous collapses and the verdict's noise);
	// k = 14 of 20. Long trigger: collapsed in 200 of 200; k = 18.
	meta, _ := prBistability(t, prStorm(nil), prOutage("0.5s"), n)
	if n-meta < 14 {
		t.Errorf("immediate retries, 0.5 s outage: recovered in %d of %d seeds, want ≥ 14", n-meta, n)
	}
	meta, collapsed := prBistability(t, prStorm(nil), prOutage("2s"), n)
	if meta < 18 || collapsed < 18 {
		t.Errorf("immediate retries, 2 s outage: metastable in %d and collapsed in %d of %d seeds, want ≥ 18", meta, collapsed, n)
	}

	// Ratio budget and a 1 s propagated deadline: never collapsed (n of
	// n); the verdict, whose 90% threshold is within Poisson noise of a
	// healthy 40/s, says recovered in 95.5% and 96% of 200 seeds; k = 15.
	for _, tc := range []struct {
		name string
		f    func(*Policy)
	}{{"ratio budget 0.1", ratio}, {"1 s deadline propagated", propagate(1)}} {
		for _, d := range []string{"2s", "10s"} {
			meta, collapsed := prBistability(t, prStorm(tc.f), prOutage(d), n)
			if collapsed > 0 || n-meta < 15 {
				t.Errorf("%s, %s outage: collapsed in %d of %d seeds (want 0), verdict recovered in %d (want ≥ 15)", tc.name, d, collapsed, n, n-meta)
			}
		}
	}

	// A 2 s propagated deadline: collapsed in every seed.
	if meta, _ := prBistability(t, prStorm(propagate(2)), prOutage("10s"), n); meta < n {
		t.Errorf("2 s deadline propagated, 10 s outage: metastable in %d of %d seeds, want all (see the comment)", meta, n)
	}
}

// prFlaky is one client calling a fast, roomy server at 100 requests a
// second with up to 3 retries under a budget.
func prFlaky(b BudgetSpec, perTry float64) *Model {
	return single("server", 1000, Constant(0.001), 100, 0, Policy{MaxAttempts: 4, PerTryTimeout: perTry, Budget: b})
}

func prRun(t *testing.T, m *Model, faults degrade.Schedule, seed uint64) Result {
	t.Helper()
	r, err := Run(m, faults, RunConfig{Seed: seed, Duration: 60})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestProofBudgets plugs each budget into a policy and checks end to end
// that it bounds retries during a fault the way its reference says. The
// fault always runs from 10 s to 40 s.
func TestProofBudgets(t *testing.T) {
	outage := schedule("outage:svc=server,at=10s,for=30s,mode=error")
	hang := schedule("outage:svc=server,at=10s,for=30s,mode=timeout")
	errRate := func(p string) degrade.Schedule { return schedule("error-rate:svc=server,at=10s,for=30s,p=" + p) }

	t.Run("grpc", func(t *testing.T) {
		// gRFC A6 (maxTokens 10, tokenRatio 0.1): failures take a token,
		// successes give 0.1 back, retries stop at ≤ 5 tokens. With attempt
		// failure rate p the drift is 0.1·(1−p) − p per attempt: positive
		// below p = 1/11 ≈ 9.1%, negative above. Compared with the same
		// seed unbudgeted, over 12–40 s (after the 10 tokens had 2 s to
		// drain): at p = 3% the budget lets through ≥ 95% of the retries
		// (the least over 200 seeds was 97.7%: a run of failures can still
		// touch the threshold), at p = 15% ≤ 10% (the most was 5.6%; at
		// p = 5% it was 72–100%, at 12% 0–23%: the cliff is at 9.1%).
		grpc := BudgetSpec{Kind: BudgetGRPC, Max: 10, Ratio: 0.1}
		for seed := uint64(1); seed <= 3; seed++ {
			for _, tc := range []struct {
				p        string
				min, max float64
			}{{"0.03", 0.95, 1}, {"0.15", 0, 0.1}} {
				free, budgeted := prRun(t, prFlaky(BudgetSpec{}, 0), errRate(tc.p), seed), prRun(t, prFlaky(grpc, 0), errRate(tc.p), seed)
				got, was := prSum(budgeted.Series.Retries[12:40]), prSum(free.Series.Retries[12:40])
				if share := float64(got) / float64(was); share < tc.min || share > tc.max {
					t.Errorf("seed %d, p=%s: %d retries over 12–40 s against %d unbudgeted (%.1f%%), want %.0f–%.0f%%",
						seed, tc.p, got, was, 100*share, 100*tc.min, 100*tc.max)
				}
			}
		}
	})

	t.Run("token bucket", func(t *testing.T) {
		// Seed 000's bucket (max 10, 0.1 per success, 1 per retry): over
		// the fault, retries ≤ 10 + 0.1 · successes, and with half the
		// attempts failing the bound is what limits them. In this model
		// every successful attempt is a root success at the same instant.
		tb := BudgetSpec{Kind: BudgetTokenBucket, Max: 10, Ratio: 0.1}
		for seed := uint64(1); seed <= 3; seed++ {
			r := prRun(t, prFlaky(tb, 0), errRate("0.5"), seed)
			retries, succ := prSum(r.Series.Retries[10:40]), prSum(r.Series.Goodput[10:40])
			bound := 10 + 0.1*float64(succ)
			if float64(retries) > bound+1e-9 || float64(retries) < 0.9*(bound-10) {
				t.Errorf("seed %d: %d retries for %d successes during the fault; want ≤ %.1f and ≥ 90%% of %.1f", seed, retries, succ, bound, bound-10)
			}
		}
	})

	t.Run("ratio", func(t *testing.T) {
		// Seed 004's mayRetry with lifetime counters (window 0): a retry
		// is sent while the retries so far are < 0.1 · calls, so retries ≤
		// ⌈0.1 · calls⌉, and a 30 s outage spends all of it.
		for seed := uint64(1); seed <= 3; seed++ {
			life := BudgetSpec{Kind: BudgetRatio, Ratio: 0.1}
			r := prRun(t, prFlaky(life, 0), outage, seed)
			// Every retry comes during the outage, the last just before
			// 40 s, when the calls so far are those of 0–40 s.
			retries, calls := r.Attempts[0].Retries, prSum(r.Series.Originals[:40])
			if allowed := 0.1 * float64(calls); float64(retries) > math.Ceil(allowed) || float64(retries) < allowed-2 {
				t.Errorf("seed %d, lifetime: %d retries for %d calls before the outage ended, want all but 2 of the 10%% allowed", seed, retries, calls)
			}
			// Windowed (10 s): a retry at t counts against calls in
			// (t−10, t], so the retries of any 10 s stretch [a, a+10) are
			// at most ⌈10%⌉ of the calls of [a−10, a+10); and the outage
			// spends at least 9% of its own calls.
			win := BudgetSpec{Kind: BudgetRatio, Ratio: 0.1, Window: 10}
			r = prRun(t, prFlaky(win, 0), outage, seed)
			for a := 10; a+10 <= 60; a++ {
				if got, calls := prSum(r.Series.Retries[a:a+10]), prSum(r.Series.Originals[a-10:a+10]); float64(got) > math.Ceil(0.1*float64(calls)) {
					t.Errorf("seed %d, window: %d retries in [%d, %d) s against %d calls in [%d, %d) s", seed, got, a, a+10, calls, a-10, a+10)
				}
			}
			if got, calls := prSum(r.Series.Retries[10:40]), prSum(r.Series.Originals[10:40]); float64(got) < 0.09*float64(calls) {
				t.Errorf("seed %d, window: %d retries for %d calls during the outage, want ≥ 9%%", seed, got, calls)
			}
		}
	})

	t.Run("finagle", func(t *testing.T) {
		// Finagle's default RetryBudget (ttl 10 s, 10 retries/s floor,
		// 20%): in a long outage about 0.2·λ + 10 = 30 retries a second
		// (a sawtooth: withdrawals expire together), against 300 a second
		// unbudgeted.
		fin := BudgetSpec{Kind: BudgetFinagle, Window: FinagleDefaultTTL, Min: FinagleDefaultMinRetriesPerSec, Ratio: FinagleDefaultPercentCanRetry}
		for seed := uint64(1); seed <= 3; seed++ {
			r := prRun(t, prFlaky(fin, 0), outage, seed)
			want := 0.2*float64(prSum(r.Series.Originals[10:40]))/30 + 10
			if got := float64(prSum(r.Series.Retries[10:40])) / 30; got < 0.85*want || got > 1.15*want {
				t.Errorf("seed %d: %.1f retries/s during the outage, want %.1f ±15%%", seed, got, want)
			}
		}
	})

	t.Run("envoy", func(t *testing.T) {
		// Envoy (20%, min 3) bounds retries in flight, not their rate:
		// with attempts hanging for the 0.5 s per-try timeout, λ·0.5 = 50
		// first attempts are in flight and R retries fit while
		// R < ⌊0.2·(50+R)⌋, R ≤ 12, so at most about 0.25·λ = 25 retries a
		// second. Failing fast, nothing is ever in flight and nothing is
		// bounded: every request makes its 3 retries.
		env := BudgetSpec{Kind: BudgetEnvoy, Percent: 20, Min: 3}
		for seed := uint64(1); seed <= 3; seed++ {
			r := prRun(t, prFlaky(env, 0.5), hang, seed)
			lambda := float64(prSum(r.Series.Originals[10:40])) / 30
			if got := float64(prSum(r.Series.Retries[11:40])) / 29; got > 0.25*lambda*1.1 || got < 0.15*lambda {
				t.Errorf("seed %d, hanging: %.1f retries/s, want 15–27.5%% of λ = %.1f/s", seed, got, lambda)
			}
			r = prRun(t, prFlaky(env, 0.5), outage, seed)
			if got, calls := prSum(r.Series.Retries[10:40]), prSum(r.Series.Originals[10:40]); got < 3*calls-3 {
				t.Errorf("seed %d, failing fast: %d retries for %d calls, want all 3 per call", seed, got, calls)
			}
		}
	})

	t.Run("aws", func(t *testing.T) {
		// AWS standard retry quota: 500 capacity, 5 per retry (10 after a
		// timeout), refunds only on success: a total outage gets exactly
		// 100 retries (50 when attempts time out), then none.
		aws := BudgetSpec{Kind: BudgetAWS}
		for seed := uint64(1); seed <= 3; seed++ {
			if got := prSum(prRun(t, prFlaky(aws, 0.5), outage, seed).Series.Retries[10:40]); got != 100 {
				t.Errorf("seed %d, failing fast: %d retries during the outage, want 500/5 = 100", seed, got)
			}
			if got := prSum(prRun(t, prFlaky(aws, 0.5), hang, seed).Series.Retries[10:40]); got != 50 {
				t.Errorf("seed %d, timing out: %d retries during the outage, want 500/10 = 50", seed, got)
			}
		}
	})
}

// TestProofHedging is seed 002's hedged request against a slow replica
// and a slow shard, 64 workers of exponential 10 ms service at 400
// requests a second, one part of 8 ten times slower for the whole run,
// hedging after the p95 latency the callee shows under that degradation
// (measured by a run without hedging).
//
// A slow replica is one instance behind a load balancer: the hedge picks a
// replica at random, lands on a fast one 7 times in 8, and takes the p99
// down by more than half for about 5% more attempts. A slow shard holds
// the request's key: the hedge lands on the same slow shard, so hedging
// buys nothing and costs work (the loser runs to completion: the callee
// does not honour cancellation of running work).
func TestProofHedging(t *testing.T) {
	for _, tc := range []struct {
		fault string
		helps bool
	}{
		{"slow-replica:svc=db,at=0s,for=0s,replicas=8,x=10", true},
		{"slow-shard:svc=db,at=0s,for=0s,x=10", false},
	} {
		faults := schedule(tc.fault)
		for seed := uint64(1); seed <= 3; seed++ {
			plain := prRun(t, single("db", 64, Exponential{MeanS: 0.01}, 400, 0, Policy{MaxAttempts: 1}), faults, seed)
			hedge := plain.P95MS / 1000
			r := prRun(t, single("db", 64, Exponential{MeanS: 0.01}, 400, 0, Policy{MaxAttempts: 2, HedgeAfter: hedge}), faults, seed)
			first := r.Attempts[0].Attempts - r.Attempts[0].Retries
			extra := float64(r.Hedges) / float64(first)
			t.Logf("%s seed %d: hedge after %.1f ms: p99 %.1f → %.1f ms, p50 %.1f → %.1f ms, %.2f%% extra attempts, work %.1f → %.1f s",
				tc.fault, seed, plain.P95MS, plain.P99MS, r.P99MS, plain.P50MS, r.P50MS, 100*extra, plain.WorkS, r.WorkS)
			if tc.helps && r.P99MS > 0.6*plain.P99MS {
				t.Errorf("%s seed %d: p99 %.1f ms hedged against %.1f ms plain, want a cut of at least 40%%", tc.fault, seed, r.P99MS, plain.P99MS)
			}
			if !tc.helps && r.P99MS < 0.9*plain.P99MS {
				t.Errorf("%s seed %d: p99 %.1f ms hedged against %.1f ms plain: a hedge of a request on a slow shard should land on it again", tc.fault, seed, r.P99MS, plain.P99MS)
			}
			if extra < 0.03 || extra > 0.1 {
				t.Errorf("%s seed %d: %.2f%% extra attempts, want 3–10%%", tc.fault, seed, 100*extra)
			}
			if r.WorkS <= plain.WorkS {
				t.Errorf("%s seed %d: work %.1f s hedged against %.1f s plain: hedge duplicates are work", tc.fault, seed, r.WorkS, plain.WorkS)
			}
			if r.Hedges != r.Attempts[0].Retries {
				t.Errorf("%s seed %d: %d hedges but %d second attempts: only hedges should add attempts", tc.fault, seed, r.Hedges, r.Attempts[0].Retries)
			}
			if math.Abs(r.P50MS-plain.P50MS) > 0.05*plain.P50MS {
				t.Errorf("%s seed %d: p50 %.2f ms hedged against %.2f ms plain: hedging at p95 should leave the median alone", tc.fault, seed, r.P50MS, plain.P50MS)
			}
		}
	}
}

// TestProofBreaker: a 10 s fail-fast outage behind a breaker (5
// consecutive failures, open 1 s ±20%, one probe) at 1,000 requests a
// second (at 100 a second the 90% threshold of the recovery time is one
// Poisson standard deviation, and the recovery time jitters by seconds).
// The breaker refuses attempts, spares the server most of the outage's
// attempts, and the system is back within 2 s of the outage's end (the
// breaker's last open spell can run 1.2 s past it) in every seed.
func TestProofBreaker(t *testing.T) {
	br := BreakerConfig{ConsecutiveFailures: 5, OpenFor: 1, Jitter: 0.2}
	faults := schedule("outage:svc=server,at=10s,for=10s,mode=error")
	for seed := uint64(1); seed <= 5; seed++ {
		m := func(b BreakerConfig) *Model {
			return single("server", 100, Exponential{MeanS: 0.05}, 1000, 0, Policy{MaxAttempts: 3, PerTryTimeout: 0.5, Breaker: b})
		}
		cfg := RunConfig{Seed: seed, Duration: 60, Window: 20}
		plain, err := Run(m(BreakerConfig{}), faults, cfg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(m(br), faults, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.RefusedByBreaker == 0 || r.Attempts[0].Attempts > plain.Attempts[0].Attempts*3/4 {
			t.Errorf("seed %d: %d refused, %d attempts against %d without a breaker; want refusals and under 3/4 of the attempts",
				seed, r.RefusedByBreaker, r.Attempts[0].Attempts, plain.Attempts[0].Attempts)
		}
		if r.Metastable || r.RecoveryS == nil || *r.RecoveryS > 2 {
			t.Errorf("seed %d: metastable %v, recovery %s; want recovered within 2 s", seed, r.Metastable, fmtPtr(r.RecoveryS))
		}
	}
}

// TestProofBreakerRefusesHedge: a hedge the open breaker refuses is simply
// not sent; the attempt already out still counts. Requests to a store whose
// shard 0 takes 1 s hedge after 0.5 s; a 50 ms fail-fast outage at 10 s
// opens the breaker (1 failure) for the rest of the run. Every request
// that started before 10 s had its first attempt accepted, so every one of
// them succeeds, including those whose hedge came due after the breaker
// opened; every later one is refused or failed.
func TestProofBreakerRefusesHedge(t *testing.T) {
	m := single("db", 1000, Constant(0.05), 100, 0, Policy{MaxAttempts: 2, HedgeAfter: 0.5,
		Breaker: BreakerConfig{ConsecutiveFailures: 1, OpenFor: 1000}})
	faults := schedule("slow-shard:svc=db,at=0s,for=0s,x=20", "outage:svc=db,at=10s,for=50ms,mode=error")
	for seed := uint64(1); seed <= 3; seed++ {
		r := prRun(t, m, faults, seed)
		before := prSum(r.Series.Originals[:10])
		if r.Succeeded != before || r.RefusedByBreaker == 0 {
			t.Errorf("seed %d: %d succeeded, %d requests started before the breaker opened; %d refused", seed, r.Succeeded, before, r.RefusedByBreaker)
		}
		if r.Hedges != r.Attempts[0].Retries {
			t.Errorf("seed %d: %d hedges counted, %d sent", seed, r.Hedges, r.Attempts[0].Retries)
		}
	}
}

// TestProofShedding is seed 003's shed policy: the collapsing 2 s outage
// of TestProofBistability, with the server rejecting retries (attempt > 1)
// once 10 jobs are queued. First attempts still queue, so they are served
// within their timeout; availability goes from about 0.2 to about 0.97.
func TestProofShedding(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		plain := prRun(t, prStorm(nil), prOutage("2s"), seed)
		m := prStorm(nil)
		m.Services[1].ShedRetriesAt = 10
		r := prRun(t, m, prOutage("2s"), seed)
		if r.Shed == 0 || r.Availability < 0.9 || r.Availability < plain.Availability+0.5 {
			t.Errorf("seed %d: availability %.3f with shedding (%d shed) against %.3f without; want ≥ 0.9 and 0.5 more", seed, r.Availability, r.Shed, plain.Availability)
		}
	}
}

// TestProofCancellation is seed 002's cancellation probability on the
// storm model: a 5 s slowdown (service ×3, capacity 20/s against 40/s
// offered) drives attempts past their timeout. A server that never cancels
// keeps working for callers who left and stays collapsed. One that drops
// the queued work of every caller who left, but finishes what it has
// started, stays collapsed too: its FIFO queue hands workers the oldest
// live attempts, which time out while served. One that also stops running
// work (it honours cancellation) recovers, and wastes the least.
func TestProofCancellation(t *testing.T) {
	faults := schedule("latency:svc=server,at=10s,for=5s,x=3")
	for seed := uint64(1); seed <= 5; seed++ {
		var res [3]Result
		for i, p := range []float64{0, 1, 1} {
			m := prStorm(nil)
			m.Services[1].CancelProb, m.Services[1].CancelRunning = p, i == 2
			res[i] = prRun(t, m, faults, seed)
		}
		never, queued, running := res[0], res[1], res[2]
		if !(running.WastedS < queued.WastedS && queued.WastedS <= never.WastedS) || never.WastedS < 100 {
			t.Errorf("seed %d: wasted work %.1f / %.1f / %.1f s never / queued / running cancelled; want over 100 s, then less, then less", seed, never.WastedS, queued.WastedS, running.WastedS)
		}
		if !(running.WorkS < never.WorkS) || !(running.Availability > never.Availability+0.3) || running.Metastable || !never.Metastable || !queued.Metastable {
			t.Errorf("seed %d: metastable %v / %v / %v, availability %.3f / %.3f / %.3f; want collapsed, collapsed, recovered",
				seed, never.Metastable, queued.Metastable, running.Metastable, never.Availability, queued.Availability, running.Availability)
		}
	}
}

// prEverything is a three-layer model with every feature of the engine on:
// sequential and parallel calls, fan-out loops and optional calls, four
// service-time distributions, every budget kind (one of them shared),
// breakers with jittered half-open, a hedge, every jitter kind, Retry-After
// honoured, deadlines propagated, shedding, a bounded queue, cancellation
// and thrashing, cancellation of running work and a network hop; and a
// fault of every kind and mode, overlapping.
func prEverything() (*Model, degrade.Schedule) {
	emp, err := NewEmpirical([]float64{0, 0.5, 0.9, 1}, []float64{0.001, 0.003, 0.008, 0.05})
	if err != nil {
		panic(err)
	}
	bo := func(j JitterKind) Backoff {
		return Backoff{Kind: BackoffExponential, Base: 0.01, Multiplier: 2, Cap: 0.2, Jitter: j, Fraction: 0.2}
	}
	grpc := BudgetSpec{Kind: BudgetGRPC, Max: 10, Ratio: 0.1}
	tb := BudgetSpec{Kind: BudgetTokenBucket, Max: 10, Ratio: 0.1}
	ratio := BudgetSpec{Kind: BudgetRatio, Ratio: 0.1, Window: 10}
	env := BudgetSpec{Kind: BudgetEnvoy, Percent: 20, Min: 3}
	fin := BudgetSpec{Kind: BudgetFinagle, Window: FinagleDefaultTTL, Min: FinagleDefaultMinRetriesPerSec, Ratio: FinagleDefaultPercentCanRetry}
	aws := BudgetSpec{Kind: BudgetAWS}
	br := BreakerConfig{FailureRate: 0.5, Window: 2, MinRequests: 10, OpenFor: 0.5, Jitter: 0.3, HalfOpenProbes: 2}
	m := &Model{
		Services: []Service{
			{Name: "edge", Workers: 400, Ops: []Op{
				{Name: "page", Time: Exponential{MeanS: 0.002}, Calls: []int{0, 1}, Parallel: true},
				{Name: "search", Time: Constant(0.001), Calls: []int{2, 5}},
			}},
			{Name: "api", Workers: 60, ShedRetriesAt: 20, CancelProb: 0.5, Thrash: 0.1, Ops: []Op{
				{Name: "get", Time: LogNormal{Median: 0.003, Sigma: 0.5, TailProb: 0.02, TailFactor: 10}, Calls: []int{3, 4}},
			}},
			{Name: "cache", Workers: 50, QueueCap: 100, Ops: []Op{{Name: "get", Time: emp}}},
			{Name: "db", Workers: 24, CancelProb: 0.3, CancelRunning: true, ShedRetriesAt: 10, Ops: []Op{
				{Name: "query", Time: Exponential{MeanS: 0.004}},
				{Name: "scan", Time: LogNormal{Median: 0.01, Sigma: 0.3}},
			}},
		},
		Edges: []Edge{
			{Caller: 0, CallerOp: 0, Callee: 1, CalleeOp: 0, Prob: 1, Repeat: 1, Idempotent: true,
				Policy: Policy{MaxAttempts: 3, PerTryTimeout: 0.3, Deadline: 1, Propagate: true, Backoff: bo(JitterFull), Budget: grpc, Breaker: br}},
			{Caller: 0, CallerOp: 0, Callee: 2, CalleeOp: 0, Prob: 0.8, Repeat: 2,
				Policy: Policy{MaxAttempts: 2, PerTryTimeout: 0.05, Backoff: bo(JitterEqual), Budget: env, HonorRetryAfter: true}},
			{Caller: 0, CallerOp: 1, Callee: 3, CalleeOp: 1, Prob: 1, Repeat: 1,
				Policy: Policy{MaxAttempts: 2, HedgeAfter: 0.015, Budget: aws, Propagate: true, Deadline: 0.5}},
			{Caller: 1, CallerOp: 0, Callee: 3, CalleeOp: 0, Prob: 1, Repeat: 3,
				Policy: Policy{MaxAttempts: 4, PerTryTimeout: 0.1, Backoff: bo(JitterDecorrelated), Budget: ratio, SharedBudget: true, Propagate: true, Breaker: br}},
			{Caller: 1, CallerOp: 0, Callee: 2, CalleeOp: 0, Prob: 0.5, Repeat: 1,
				Policy: Policy{MaxAttempts: 3, PerTryTimeout: 0.05, Backoff: bo(JitterProportional), Budget: tb}},
			{Caller: 0, CallerOp: 1, Callee: 2, CalleeOp: 0, Prob: 1, Repeat: 1,
				Policy: Policy{MaxAttempts: 3, PerTryTimeout: 0.05, Backoff: Backoff{Kind: BackoffConstant, Base: 0.02}, Budget: fin}},
		},
		Entry:          []Entry{{Service: 0, Op: 0, Weight: 3}, {Service: 0, Op: 1, Weight: 1}},
		Rate:           300,
		ClientDeadline: 1.5,
		Hop:            Exponential{MeanS: 0.0002},
	}
	faults := schedule(
		"slow-replica:svc=api,at=3s,for=10s,replicas=4,x=5",
		"error-rate:svc=cache,at=22s,for=4s,p=0.1,mode=error-after-work",
		"outage:svc=db,at=30s,for=1s,mode=error-after-work",
		"slow-shard:svc=db,at=5s,for=10s,x=8",
		"hot-partition:svc=db,at=12s,for=8s",
		"packet-loss:edge=api->cache,at=8s,for=6s,p=0.2",
		"db-pool:svc=db,at=20s,for=5s,k=2",
		"outage:svc=cache,at=15s,for=3s,mode=timeout",
		"outage:svc=api,at=26s,for=2s",
		"error-rate:svc=db,at=0s,for=0s,p=0.02",
		"latency:svc=api,at=10s,for=4s,add=20ms,x=2",
	)
	return m, faults
}

// TestProofDeterminism: the same seed gives the same Result, deeply, for
// the model with everything on; run alone or inside a Matrix on every
// core. Another seed gives another result. And every feature did fire.
func TestProofDeterminism(t *testing.T) {
	m, faults := prEverything()
	cfg := RunConfig{Seed: 42, Duration: 40, Drain: 5}
	a, err := Run(m, faults, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(m, faults, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs with seed 42 differ:\n%v\n%v", a, b)
	}
	for name, n := range map[string]int{"hedges": a.Hedges, "refused by budget": a.RefusedByBudget,
		"refused by breaker": a.RefusedByBreaker, "shed": a.Shed, "dropped past deadline": a.DroppedLate} {
		if n == 0 {
			t.Errorf("%s: 0; the model should exercise it", name)
		}
	}
	if a.WastedS == 0 || a.Availability == 1 || a.Availability < 0.3 {
		t.Errorf("wasted %.2f s, availability %.3f: want some of each", a.WastedS, a.Availability)
	}
	t.Logf("%v; %d events, hedges %d, refused %d by budget and %d by breaker, shed %d, dropped late %d, wasted %.1f s",
		a, a.Events, a.Hedges, a.RefusedByBudget, a.RefusedByBreaker, a.Shed, a.DroppedLate, a.WastedS)

	// The same runs through a Matrix, whose runs go in parallel.
	none := m.WithoutRetries()
	mx := Matrix{Variants: []Variant{{Policy: "none", Model: none}, {Policy: "all", Model: m}},
		Degradations: []Degradation{{Name: "all faults", Faults: faults}, {Name: "calm"}}, Config: cfg}
	res, err := mx.Run()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res, func(r Result) bool { return r.Policy == "all" && r.Degradation == "all faults" })
	if i < 0 {
		t.Fatal("the matrix has no run of policy all under all faults")
	}
	got := res[i]
	got.Policy, got.Degradation, got.WorkAmplification, got.Yield = "", "", 0, nil
	if !reflect.DeepEqual(got, a) {
		t.Errorf("the matrix's run of seed 42 differs from Run's:\n%v\n%v", got, a)
	}
	cfg.Seed = 43
	if c, _ := Run(m, faults, cfg); reflect.DeepEqual(c.Series, a.Series) {
		t.Error("seeds 42 and 43 give the same series")
	}
}

// prFan is a front end whose operation calls a (100 ms) and b (300 ms),
// in parallel or in sequence, after its own 10 ms; every time is constant.
func prFan(parallel bool, repeatB int) *Model {
	return &Model{
		Services: []Service{
			{Name: "front", Workers: 1000, Ops: []Op{{Name: "fan", Time: Constant(0.01), Calls: []int{0, 1}, Parallel: parallel}}},
			{Name: "a", Workers: 1000, Ops: []Op{{Name: "x", Time: Constant(0.1)}}},
			{Name: "b", Workers: 1000, Ops: []Op{{Name: "y", Time: Constant(0.3)}}},
		},
		Edges: []Edge{
			{Caller: 0, CallerOp: 0, Callee: 1, CalleeOp: 0, Prob: 1, Repeat: 1, Policy: Policy{MaxAttempts: 1}},
			{Caller: 0, CallerOp: 0, Callee: 2, CalleeOp: 0, Prob: 1, Repeat: repeatB, Policy: Policy{MaxAttempts: 1}},
		},
		Entry: []Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:  100,
	}
}

// TestProofParallelFanOut: with constant service times and room to spare,
// a parallel fan-out ends with its slower call (10 + 300 ms), a sequential
// one after both (10 + 100 + 300 ms), loops of b included; and a parallel
// call that fails at once (a down with mode=error) still leaves the
// operation waiting for its sibling before it fails.
func TestProofParallelFanOut(t *testing.T) {
	down := schedule("outage:svc=a,at=0s,for=0s,mode=error")
	for _, tc := range []struct {
		name     string
		parallel bool
		repeatB  int
		faults   degrade.Schedule
		wantMS   float64
		wantOK   float64
	}{
		{"parallel", true, 1, nil, 310, 1},
		{"sequential", false, 1, nil, 410, 1},
		{"parallel, b three times", true, 3, nil, 310, 1},
		{"sequential, b three times", false, 3, nil, 1010, 1},
		{"parallel, a fails fast", true, 1, down, 310, 0},
		{"sequential, a fails fast", false, 1, down, 310, 0},
	} {
		r, err := Run(prFan(tc.parallel, tc.repeatB), tc.faults, RunConfig{Seed: 5, Duration: 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range []float64{r.MeanMS, r.P50MS, r.P99MS} {
			if math.Abs(got-tc.wantMS) > 1e-6 {
				t.Errorf("%s: mean/p50/p99 %.6f/%.6f/%.6f ms, want %.0f", tc.name, r.MeanMS, r.P50MS, r.P99MS, tc.wantMS)
				break
			}
		}
		if r.Availability != tc.wantOK || r.RootRequests < 1500 {
			t.Errorf("%s: availability %v over %d requests, want %v", tc.name, r.Availability, r.RootRequests, tc.wantOK)
		}
		if tc.repeatB > 1 && r.Attempts[1].Attempts != tc.repeatB*r.RootRequests {
			t.Errorf("%s: %d calls to b for %d requests", tc.name, r.Attempts[1].Attempts, r.RootRequests)
		}
	}
}

// TestSlotReuse: entity slots are recycled (the slabs stay near the peak
// in flight, not the total) and never freed twice, on the model with
// everything on.
func TestSlotReuse(t *testing.T) {
	m, faults := prEverything()
	cfg := RunConfig{Seed: 7, Duration: 40, Drain: 5}.withDefaults()
	s := newSim(m, faults, cfg)
	if err := s.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := s.result()
	attempts := 0
	for _, e := range r.Attempts {
		attempts += e.Attempts
	}
	if len(s.atts) > attempts/10 {
		t.Errorf("%d attempt slots for %d attempts: slots are not reused", len(s.atts), attempts)
	}
	// A slot freed twice would close its list into a loop.
	walk := func(name string, head int32, slots int, next func(int32) int32) {
		seen := map[int32]bool{}
		for i := head; i >= 0; i = next(i) {
			if seen[i] || len(seen) > slots {
				t.Errorf("%s slot %d is on the free list twice", name, i)
				return
			}
			seen[i] = true
		}
	}
	walk("jobs", s.jobFree, len(s.jobs), func(i int32) int32 { return s.jobs[i].nextFree })
	walk("calls", s.callFree, len(s.calls), func(i int32) int32 { return s.calls[i].nextFree })
	walk("attempts", s.attFree, len(s.atts), func(i int32) int32 { return s.atts[i].nextFree })
}

// TestSelectRank: the selection that computes percentiles agrees with a
// sort, on random data, on runs of ties, on sorted input, on values of
// either sign and on one value repeated; lists long enough for the
// bucketed path (pctDirect and up) as well as short ones.
func TestSelectRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 1 + rng.IntN(3000)
		if trial%2 == 1 {
			n = pctDirect + rng.IntN(4*pctDirect)
		}
		xs := make([]float64, n)
		for i := range xs {
			switch trial % 6 {
			case 0:
				xs[i] = rng.ExpFloat64()
			case 1:
				xs[i] = float64(rng.IntN(5)) // many ties
			case 2:
				xs[i] = float64(i) // sorted
			case 3:
				xs[i] = 0.01 * math.Exp(0.25*rng.NormFloat64()) // one narrow cluster
			case 4:
				xs[i] = rng.NormFloat64() * 1e-3 // both signs
			case 5:
				xs[i] = 0.1 // one value
			}
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		for _, p := range []float64{0.99, 0.95, 0.5, 0, 1} {
			k := rank(n, p)
			ys := slices.Clone(xs)
			if got := selectRank(ys, k); got != sorted[k] || got != pct(sorted, p) {
				t.Fatalf("trial %d, n %d, p %v: selected %v, sorted %v", trial, n, p, got, sorted[k])
			}
		}
		p50, p90, p95, p99 := percentiles(slices.Clone(xs))
		if p50 != pct(sorted, 0.5) || p90 != pct(sorted, 0.9) || p95 != pct(sorted, 0.95) || p99 != pct(sorted, 0.99) {
			t.Fatalf("trial %d, n %d: percentiles %v %v %v %v, sorted %v %v %v %v", trial, n, p50, p90, p95, p99,
				pct(sorted, 0.5), pct(sorted, 0.9), pct(sorted, 0.95), pct(sorted, 0.99))
		}
	}
	if selectRank(nil, 0) != 0 {
		t.Error("empty input: want 0")
	}
	if a, b, c, d := percentiles(nil); a != 0 || b != 0 || c != 0 || d != 0 {
		t.Error("no latencies: want 0s")
	}
}

// TestEventHeapOrder: events leave the heap in (time, scheduling order),
// whatever the interleaving of pushes and pops.
func TestEventHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h eventHeap
	now, last := 0.0, event{}
	popped := 0
	for i := range 200_000 {
		if h.len() == 0 || rng.IntN(3) > 0 {
			// Coarse times make ties common.
			h.push(now+float64(rng.IntN(50))/10, evTick, int32(i), 0)
			continue
		}
		ev := h.pop()
		if popped > 0 && (ev.time() < last.time() || ev.time() == last.time() && ev.seq() < last.seq()) {
			t.Fatalf("popped (%v, %d) after (%v, %d)", ev.time(), ev.seq(), last.time(), last.seq())
		}
		last, now = ev, ev.time()
		popped++
	}
}

// pct is the nearest-rank percentile of sorted xs, the reference the
// engine's selection is checked against.
func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[rank(len(sorted), p)]
}
