package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
)

// erlangC is the mean wait in queue of M/M/c with arrival rate lambda and
// service rate mu per worker.
func erlangC(c int, lambda, mu float64) float64 {
	a := lambda / mu
	rho := a / float64(c)
	sum, term := 0.0, 1.0
	for k := 0; k < c; k++ {
		if k > 0 {
			term *= a / float64(k)
		}
		sum += term
	}
	last := term * a / float64(c) / (1 - rho)
	pWait := last / (sum + last)
	return pWait / (float64(c)*mu - lambda)
}

// mmc is one service of c workers with exponential service times (mean 1)
// fed Poisson arrivals at rate lambda.
func mmc(c int, lambda float64) *Model {
	return &Model{
		Services: []Service{{Name: "server", Workers: c, Ops: []Op{{Name: "serve", Time: Exponential{MeanS: 1}}}}},
		Entry:    []Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:     lambda,
	}
}

// TestQueueing holds the engine to queueing theory: the mean wait of M/M/1
// and M/M/c within 3% of the closed forms.
func TestQueueing(t *testing.T) {
	if testing.Short() {
		t.Skip("long simulations")
	}
	for _, tc := range []struct {
		name      string
		c         int
		lambda    float64
		want      float64
		customers float64
	}{
		{"M/M/3 λ=2", 3, 2, 0.4444, 400_000},
		{"M/M/10 λ=8", 10, 8, 0.2046, 400_000},
		{"M/M/1 ρ=0.5", 1, 0.5, 1.0, 400_000},
		{"M/M/1 ρ=0.9", 1, 0.9, 9.0, 4_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := erlangC(tc.c, tc.lambda, 1); math.Abs(got-tc.want) > 0.001 {
				t.Fatalf("closed form %.4f, want %.4f", got, tc.want)
			}
			r, err := Run(mmc(tc.c, tc.lambda), nil, RunConfig{Seed: 1, Duration: tc.customers / tc.lambda, Drain: -1, MaxEvents: 20_000_000})
			if err != nil {
				t.Fatal(err)
			}
			// Root latency is wait plus service; the mean service time is 1.
			wq := r.MeanMS/1000 - 1
			if math.Abs(wq-tc.want)/tc.want > 0.03 {
				t.Errorf("mean wait %.4f s over %d customers, want %.4f ±3%%", wq, r.RootRequests, tc.want)
			}
		})
	}
}

// failing is one client calling a server that fails each attempt with
// probability f, allowing n attempts.
func failing(f float64, attempts int) (*Model, degrade.Schedule) {
	m := single("server", 1000, Constant(0.001), 100, 0, Policy{MaxAttempts: attempts, Backoff: Backoff{Kind: "immediate", Jitter: "none"}})
	s, err := degrade.ParseAll([]string{"error-rate:svc=server,at=0s,for=0s,p=" + ftoa(f)})
	if err != nil {
		panic(err)
	}
	return m, s
}

func ftoa(f float64) string { b, _ := json.Marshal(f); return string(b) }

// TestIndependentFailures: with attempt failure probability f and N
// retries, attempts per request are Σ f^k (k = 0..N) and success 1−f^(N+1).
func TestIndependentFailures(t *testing.T) {
	for _, tc := range []struct {
		f       float64
		retries int
	}{{0.1, 2}, {0.3, 3}, {0.5, 5}} {
		m, faults := failing(tc.f, tc.retries+1)
		r, err := Run(m, faults, RunConfig{Seed: 2, Duration: 500})
		if err != nil {
			t.Fatal(err)
		}
		n := float64(r.RootRequests)
		wantAtt, wantOK := 0.0, 1-math.Pow(tc.f, float64(tc.retries+1))
		for k := 0; k <= tc.retries; k++ {
			wantAtt += math.Pow(tc.f, float64(k))
		}
		gotAtt := float64(r.Attempts[0].Attempts) / n
		// Three standard errors of a mean of n draws.
		if math.Abs(gotAtt-wantAtt) > 3*math.Sqrt(wantAtt*2/n)+1e-9 {
			t.Errorf("f=%.1f: %.4f attempts per request, want %.4f", tc.f, gotAtt, wantAtt)
		}
		if se := math.Sqrt(wantOK * (1 - wantOK) / n); math.Abs(r.Availability-wantOK) > 3*se+1e-9 {
			t.Errorf("f=%.1f: availability %.4f, want %.4f", tc.f, r.Availability, wantOK)
		}
	}
}

// TestNoneNoFault: policy none with no fault, on a system whose capacity
// no burst exceeds, has availability 1 and does exactly the baseline work.
func TestNoneNoFault(t *testing.T) {
	m := single("server", 1000, Exponential{MeanS: 0.05}, 100, 2, Policy{MaxAttempts: 3, PerTryTimeout: 1})
	mx := Matrix{
		Variants:     []Variant{{Policy: "none", Model: m.WithoutRetries()}, {Policy: "observed", Model: m}},
		Degradations: []Degradation{{Name: "no fault"}},
		Config:       RunConfig{Seed: 3, Duration: 30},
	}
	res, err := mx.Run()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Policy != "none" {
			continue
		}
		if r.WorkAmplification != 1 || r.Availability != 1 {
			t.Errorf("none without fault: work amplification %v, availability %v; want exactly 1 and 1", r.WorkAmplification, r.Availability)
		}
	}
}

// TestStorm reproduces seed 000 over 20 seeds with the article's own
// mechanisms (see stormPreset: the outages hang, the server finishes work
// nobody waits for, no thrash). After the 3 s outage immediate retries,
// backoff and backoff with jitter stay collapsed in all 20 and the token
// bucket recovers in all 20, as in the article; no retries recover from
// both. A hang under half the bound of stormPreset's comment (0.4 s,
// against 0.85 s) is harmless for every policy in at least 19 of 20, as
// the article has its blip (at 0.5 s Poisson bursts already tip immediate
// retries over in about 1 run in 10); one longer than the bound for any server
// (1.5 s, against 1.0 s) leaves immediate retries collapsed in all 20. The
// article's 1 s blip is on that bound, where retries without a budget
// collapse in most seeds: the test logs it and asks only no retries and
// the budget to recover from it. No stated thrash, cancellation or service
// time gets the blip without losing the outage (stormPreset's comment).
func TestStorm(t *testing.T) {
	const seeds = 20
	policies := []string{"none", "immediate", "backoff", "backoff+jitter", "budget"}
	held := map[string]int{}
	for seed := uint64(1); seed <= seeds; seed++ {
		p, err := NewPreset("storm", 1, seed)
		if err != nil {
			t.Fatal(err)
		}
		p.Matrix.Degradations = append(p.Matrix.Degradations,
			Degradation{Name: "hang 0.4s", Faults: schedule("outage:svc=server,at=10s,for=400ms,mode=" + stormMode)},
			Degradation{Name: "hang 1.5s", Faults: schedule("outage:svc=server,at=10s,for=1500ms,mode=" + stormMode)})
		res, err := p.Matrix.Run()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			collapse := r.Degradation == "outage 3s" && r.Policy != "budget" && r.Policy != "none"
			if r.Degradation == "hang 1.5s" {
				// Past the bound for any server (1.0 s): the immediate
				// retries' wave cannot be absorbed.
				collapse = r.Policy == "immediate"
			}
			if r.Metastable == collapse && (collapse || r.RecoveryS != nil) {
				held[r.Policy+" / "+r.Degradation]++
			}
		}
	}
	for _, pol := range policies {
		for _, deg := range []string{"hang 0.4s", "blip 1s", "hang 1.5s", "outage 3s"} {
			key := pol + " / " + deg
			want := 19
			switch {
			case deg == "outage 3s" || deg == "hang 1.5s" && pol == "immediate":
				want = seeds
			case deg == "hang 1.5s" && pol != "none" && pol != "budget":
				want = 0 // backoff spreads the wave: logged
			case deg == "blip 1s" && pol != "none" && pol != "budget":
				want = 0 // on the bound: logged, not asked
			}
			t.Logf("%-28s the expected outcome in %2d of %d seeds", key, held[key], seeds)
			if held[key] < want {
				t.Errorf("%s: the expected outcome (collapsed after the 3 s outage without a budget, and after the 1.5 s hang with immediate retries; recovered otherwise) in %d of %d seeds, want %d", key, held[key], seeds, want)
			}
		}
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "never"
	}
	b, _ := json.Marshal(*p)
	return string(b) + "s"
}

// TestDeterminism: the same seed gives byte-identical JSON.
func TestDeterminism(t *testing.T) {
	run := func() []byte {
		p, _ := NewPreset("storm", 1, 9)
		res, err := p.Matrix.Run()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		return b
	}
	if a, b := run(), run(); string(a) != string(b) {
		t.Error("two runs with one seed differ")
	}
}

// TestPresetBudgets: the presets' budget parameters are valid.
func TestPresetBudgets(t *testing.T) {
	if _, err := NewTokenBucket(10, 0.1); err != nil {
		t.Error(err)
	}
	if _, err := NewRatioBudget(0.1, 10); err != nil {
		t.Error(err)
	}
}

// TestEndUserAttemptWithoutRecord holds the root request whose one
// attempt has no record (no client deadline, nothing between the end user
// and the entry service: see startRoot) to the one that has: the same
// model with a client deadline no run reaches takes the attempt's record
// and its timeout (which never fires), and must give the same result,
// bit for bit. The models answer their end users every way: successes,
// failures drawn by the traces' failure models, sheds, client errors,
// answers after downstream calls, retries and hedges.
func TestEndUserAttemptWithoutRecord(t *testing.T) {
	type model struct {
		name   string
		m      *Model
		faults degrade.Schedule
	}
	var models []model
	for _, sc := range []string{"mixed", "breaker", "hedging"} {
		m, err := FromTopology(sampleTopology(t, sc), BuildOptions{Load: 20})
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, model{sc, m, nil})
	}
	rng := newRNG(1, 1)
	for i := range 40 {
		data := make([]byte, 64)
		for k := range data {
			data[k] = byte(rng.Uint32())
		}
		m := fuzzModel(data)
		m.Hop = nil // the end user's attempt needs its record over a hop
		// A fault on a callee (never the entry service, whose faults need
		// the record too), on every other model.
		var faults degrade.Schedule
		if len(m.Services) > 1 && i%2 == 1 {
			faults = schedule("outage:svc=b,at=3s,for=2s")
		}
		models = append(models, model{fmt.Sprintf("fuzz-%d", i), m, faults})
	}
	ran := 0
	for _, tc := range models {
		t.Run(tc.name, func(t *testing.T) {
			cfg := RunConfig{Seed: 3, Duration: 8, Drain: 2, MaxJudge: 10, MaxEvents: 400_000}
			without := *tc.m
			without.ClientDeadline = 0
			with := without
			with.ClientDeadline = 1e6
			a, errA := Run(&without, tc.faults, cfg)
			b, errB := Run(&with, tc.faults, cfg)
			if errors.Is(errA, ErrEventBudget) && errors.Is(errB, ErrEventBudget) {
				return
			}
			if errA != nil || errB != nil {
				t.Fatalf("without a deadline: %v; with one: %v", errA, errB)
			}
			ran++
			if !reflect.DeepEqual(a, b) {
				t.Errorf("without a deadline:\n%v\n%+v\nwith one no run reaches:\n%v\n%+v", a, a, b, b)
			}
		})
	}
	if ran < len(models)/2 {
		t.Errorf("%d of %d models ran within the event budget", ran, len(models))
	}
}
