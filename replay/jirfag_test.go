package replay

import (
	"testing"
)

// jirfagOutcome runs one variant of a jirfag preset for seeds 1..n and
// returns how many collapsed, with the first seed's result.
func jirfagOutcome(t *testing.T, p *Preset, policy string, n int) (collapsed int, first Result) {
	t.Helper()
	for _, v := range p.Matrix.Variants {
		if v.Policy != policy {
			continue
		}
		for seed := uint64(1); seed <= uint64(n); seed++ {
			cfg := p.Matrix.Config
			cfg.Seed = seed
			r, err := Run(v.Model, p.Matrix.Degradations[0].Faults, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if r.Metastable {
				collapsed++
			}
			if seed == 1 {
				first = r
			}
		}
		return collapsed, first
	}
	t.Fatalf("no policy %s", policy)
	return 0, Result{}
}

// triggerAmplification is attempts per root request over the trigger:
// the retries sent in its second (5; the failures end at 5.5 s and their
// retries come within the next 100 ms timeout and backoff, or were
// refused) over the root requests that arrived in its half second.
func triggerAmplification(r Result) float64 {
	return 1 + float64(r.Series.Retries[5])/(float64(r.Series.Originals[5])/2)
}

// TestJirfag reproduces the jirfag/simulations matrix ("Good Retry, Bad
// Retry") with the model as its source computes it (see jirfagPreset),
// over seeds 1–20 (1–5 at 41 workers), at the worker counts where the
// source runs each policy. With 41 workers every policy recovers at once.
// With 20 (the source's mfs and jitter_vs_no_jitter_cpu_half: capacity
// 1,938/s against 1,000/s) three retries, three with backoff and three
// with backoff and full jitter collapse in every seed: throughput pinned
// at capacity, the queue in thousands, no success after 8 s. With 22
// (retry_cb_or_budget_vs_exp_backoff: 2,132/s): two retries are bistable
// (collapsed in some seeds, recovered in others); two with backoff and
// full jitter recover in most seeds, and collapse in fewer than two
// without (the article shows one run, recovered; the model at this load
// is bistable for it too); no retries, the 10% retry budget and the 10%
// retry circuit breaker recover at once in every seed, with at most 10%
// more attempts than requests over the trigger (the article's 1.04, 1.09
// and 1.05).
func TestJirfag(t *testing.T) {
	const n = 20
	p41, err := NewPreset("jirfag-c41", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range p41.Matrix.Variants {
		if c, r := jirfagOutcome(t, p41, v.Policy, 5); c > 0 || r.RecoveryS == nil || *r.RecoveryS > 1 {
			t.Errorf("c=41 %s: collapsed in %d of 5 seeds, recovery %s; want recovered at once", v.Policy, c, fmtPtr(r.RecoveryS))
		}
	}
	got := map[string]int{}
	for _, tc := range []struct {
		preset, policy string
		min, max       int // collapses out of n
	}{
		{"jirfag-c20", "retry-3x", n, n},
		{"jirfag-c20", "retry-3x+backoff", n, n},
		{"jirfag-c20", "retry-3x+backoff+jitter", n, n},
		{"jirfag", "retry-2x", 1, n - 1},
		{"jirfag", "retry-2x+backoff+jitter", 0, n/2 - 1},
		{"jirfag", "none", 0, 0},
		{"jirfag", "retry-2x+budget-10%", 0, 0},
		{"jirfag", "retry-2x+breaker-10%", 0, 0},
		// Not in the source at 22 workers (bistable here): logged.
		{"jirfag", "retry-3x+backoff", 0, n},
	} {
		p, err := NewPreset(tc.preset, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		c, r := jirfagOutcome(t, p, tc.policy, n)
		got[tc.preset+" "+tc.policy] = c
		t.Logf("%-10s %-24s collapsed in %2d of %d; seed 1: recovery %s, amplification in the trigger %.2f, queue at 20 s %d, availability %.3f",
			tc.preset, tc.policy, c, n, fmtPtr(r.RecoveryS), triggerAmplification(r), r.Series.QueueDepth[20], r.Availability)
		if c < tc.min || c > tc.max {
			t.Errorf("%s %s: collapsed in %d of %d seeds, want %d to %d", tc.preset, tc.policy, c, n, tc.min, tc.max)
		}
		if tc.max == 0 && (r.RecoveryS == nil || *r.RecoveryS > 1 || triggerAmplification(r) > 1.10) {
			t.Errorf("%s %s: recovery %s, amplification %.3f; want at once, at most 1.10", tc.preset, tc.policy, fmtPtr(r.RecoveryS), triggerAmplification(r))
		}
		if tc.min == n && (r.Series.QueueDepth[20] < 1000 || prSum(r.Series.Goodput[8:30]) > 0) {
			t.Errorf("%s %s: queue %d at 20 s, %d successes after 8 s; want thousands and none", tc.preset, tc.policy, r.Series.QueueDepth[20], prSum(r.Series.Goodput[8:30]))
		}
	}
	if a, b := got["jirfag retry-2x+backoff+jitter"], got["jirfag retry-2x"]; a >= b {
		t.Errorf("22 workers: two retries with backoff and jitter collapsed in %d of %d, two immediate retries in %d: want fewer", a, n, b)
	}
	jitterVsNoJitterCPUHalf(t, n)
}

// jitterVsNoJitterCPUHalf is the source's jitter_vs_no_jitter_cpu_half:
// three retries with backoff, with and without full jitter, on 20 workers
// behind its limit of 100 requests in flight. The limit closes the
// system, so both recover in every seed, where open-loop they collapse in
// every seed. Without jitter the retries of the trigger's failures come in
// lockstep (100, 200 and 400 ms after them): the server's goodput in the
// trigger's second is about half the jittered one, hundreds of requests
// wait in the client's line at its end (none or a few dozen with jitter),
// and the p99 latency is higher.
func jitterVsNoJitterCPUHalf(t *testing.T, n int) {
	p, err := NewPreset("jirfag-c20", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := func(policy string, seed uint64) Result {
		for _, v := range p.Matrix.Variants {
			if v.Policy == policy {
				cfg := p.Matrix.Config
				cfg.Seed = seed
				r, err := Run(v.Model, p.Matrix.Degradations[0].Faults, cfg)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
		}
		t.Fatalf("no policy %s", policy)
		return Result{}
	}
	var good, jgood, line, jline, p99, jp99 float64
	for seed := uint64(1); seed <= uint64(n); seed++ {
		r, j := run("retry-3x+backoff+inflight-100", seed), run("retry-3x+backoff+jitter+inflight-100", seed)
		for _, x := range []Result{r, j} {
			if x.Metastable || x.RecoveryS == nil {
				t.Errorf("20 workers, 100 in flight, seed %d, %s: collapsed %v, recovery %s; want recovered", seed, x.Policy, x.Metastable, fmtPtr(x.RecoveryS))
			}
		}
		if r.Series.QueueDepth[5] < 300 || j.Series.QueueDepth[5] > 100 || r.Series.Goodput[5] > j.Series.Goodput[5]*3/4 || r.P99MS <= j.P99MS {
			t.Errorf("seed %d: backlog at 6 s %d without jitter, %d with; goodput in the trigger's second %d and %d; p99 %.0f and %.0f ms: want the lockstep wave's (over 300 waiting, under 3/4 of the goodput, a higher p99) against the jittered one's (at most 100 waiting)",
				seed, r.Series.QueueDepth[5], j.Series.QueueDepth[5], r.Series.Goodput[5], j.Series.Goodput[5], r.P99MS, j.P99MS)
		}
		good, jgood = good+float64(r.Series.Goodput[5]), jgood+float64(j.Series.Goodput[5])
		line, jline = line+float64(r.Series.QueueDepth[5]), jline+float64(j.Series.QueueDepth[5])
		p99, jp99 = p99+r.P99MS, jp99+j.P99MS
	}
	k := float64(n)
	t.Logf("jirfag-c20, 100 in flight, %d seeds, without / with jitter: recovered in all; goodput in the trigger's second %.0f / %.0f, backlog at 6 s %.0f / %.0f, p99 %.0f / %.0f ms (means)",
		n, good/k, jgood/k, line/k, jline/k, p99/k, jp99/k)
}
