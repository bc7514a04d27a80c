package replay

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A breaker script: at time t, either ask Allow (op "allow", want the
// answer), record a result ("ok", "fail"), or check State ("state").
type brStep struct {
	t     float64
	op    string
	allow bool   // op "allow": the expected answer
	state string // expected State(t) after the step
}

func runBreaker(t *testing.T, b *Breaker, steps []brStep) {
	t.Helper()
	for i, s := range steps {
		switch s.op {
		case "allow":
			if got := b.Allow(s.t); got != s.allow {
				t.Fatalf("step %d (t=%v): Allow = %v, want %v", i, s.t, got, s.allow)
			}
		case "ok", "fail":
			b.Result(s.t, s.op == "ok")
		case "state":
		default:
			t.Fatalf("step %d: bad op %q", i, s.op)
		}
		if got := b.State(s.t); got != s.state {
			t.Fatalf("step %d (t=%v, %s): state %s, want %s", i, s.t, s.op, got, s.state)
		}
	}
}

const (
	stClosed = BreakerClosed
	stOpen   = BreakerOpen
	stHalf   = BreakerHalfOpen
)

func TestBreakerScripts(t *testing.T) {
	tests := []struct {
		name  string
		cfg   BreakerConfig
		steps []brStep
	}{
		{"consecutive failures open it; a probe closes it",
			BreakerConfig{ConsecutiveFailures: 3, OpenFor: 5},
			[]brStep{
				{0, "allow", true, stClosed},
				{0, "fail", false, stClosed},
				{0.1, "fail", false, stClosed},
				{0.2, "ok", false, stClosed}, // resets the run
				{0.3, "fail", false, stClosed},
				{0.4, "fail", false, stClosed},
				{0.5, "fail", false, stOpen},
				{0.6, "allow", false, stOpen},
				{5.49, "allow", false, stOpen},
				{5.5, "state", false, stHalf},
				{5.5, "allow", true, stHalf}, // the probe
				{5.6, "allow", false, stHalf},
				{5.7, "ok", false, stClosed},
				{5.8, "allow", true, stClosed},
				{5.9, "fail", false, stClosed}, // fresh count after closing
				{6.0, "fail", false, stClosed},
			}},
		{"a failed probe reopens it",
			BreakerConfig{ConsecutiveFailures: 1, OpenFor: 2},
			[]brStep{
				{0, "fail", false, stOpen},
				{2, "allow", true, stHalf},
				{3, "fail", false, stOpen},
				{4.9, "allow", false, stOpen},
				{5, "allow", true, stHalf},
				{5.1, "ok", false, stClosed},
			}},
		{"results while open and stale results in half-open are ignored",
			BreakerConfig{ConsecutiveFailures: 1, OpenFor: 2},
			[]brStep{
				{0, "fail", false, stOpen},
				{1, "ok", false, stOpen},
				{1.5, "fail", false, stOpen},
				{2.5, "fail", false, stHalf}, // no probe out: a late answer
				{2.6, "ok", false, stHalf},
				{2.7, "allow", true, stHalf},
				{2.8, "ok", false, stClosed},
			}},
		{"three probes must all succeed",
			BreakerConfig{ConsecutiveFailures: 2, OpenFor: 1, HalfOpenProbes: 3},
			[]brStep{
				{0, "fail", false, stClosed},
				{0, "fail", false, stOpen},
				{1, "allow", true, stHalf},
				{1, "allow", true, stHalf},
				{1, "allow", true, stHalf},
				{1, "allow", false, stHalf},
				{1.1, "ok", false, stHalf},
				{1.2, "ok", false, stHalf},
				{1.3, "fail", false, stOpen},
				{2.3, "allow", true, stHalf},
				{2.3, "allow", true, stHalf},
				{2.3, "allow", true, stHalf},
				{2.4, "ok", false, stHalf},
				{2.4, "ok", false, stHalf},
				{2.4, "ok", false, stClosed},
			}},
		{"failure rate needs MinRequests",
			BreakerConfig{FailureRate: 0.5, Window: 10, MinRequests: 4, OpenFor: 5},
			[]brStep{
				{0, "fail", false, stClosed},
				{1, "fail", false, stClosed},
				{2, "fail", false, stClosed}, // 100% of 3 < 4 requests
				{3, "ok", false, stOpen},     // 75% of 4
			}},
		{"failure rate over a sliding window",
			BreakerConfig{FailureRate: 0.5, Window: 10, MinRequests: 4, OpenFor: 5},
			[]brStep{
				{0, "fail", false, stClosed},
				{1, "fail", false, stClosed},
				{2, "ok", false, stClosed},
				{11, "ok", false, stClosed}, // window (1, 11]: ok ok, the fails expired
				{12, "ok", false, stClosed}, // (2, 12]: ok ok
				{13, "fail", false, stClosed},
				{14, "fail", false, stOpen}, // (4, 14]: ok ok fail fail = 50%
				{19, "allow", true, stHalf},
				{19.5, "ok", false, stClosed},
				{20, "fail", false, stClosed}, // fresh window: 1 of 1 but < 4 requests
			}},
		{"a rolling window (opossum) keeps the failures before it opened",
			BreakerConfig{FailureRate: 0.5, Window: 10, MinRequests: 4, OpenFor: 5, KeepWindow: true},
			[]brStep{
				{0, "ok", false, stClosed},
				{1, "fail", false, stClosed},
				{2, "fail", false, stClosed},
				{3, "ok", false, stOpen}, // 50% of 4
				{8, "allow", true, stHalf},
				{8.5, "ok", false, stClosed}, // [0, 8.5]: 2 of 5 failed
				{9, "fail", false, stOpen},   // 3 of 6: a cleared window would hold 1 of 1
			}},
		{"a rolling window counting refused requests as calls",
			BreakerConfig{FailureRate: 0.5, Window: 10, MinRequests: 4, OpenFor: 5, KeepWindow: true, CountRejected: true},
			[]brStep{
				{0, "ok", false, stClosed},
				{1, "fail", false, stClosed},
				{2, "fail", false, stClosed},
				{3, "ok", false, stOpen},
				{4, "allow", false, stOpen}, // refused: a call that did not fail
				{5, "allow", false, stOpen},
				{8, "allow", true, stHalf},
				{8.5, "ok", false, stClosed}, // 2 of 7
				{9, "fail", false, stClosed}, // 3 of 8 < 50%: it stays closed
				{10, "fail", false, stOpen},  // (0, 10]: 4 of 8
			}},
		{"both conditions",
			BreakerConfig{ConsecutiveFailures: 3, FailureRate: 0.9, Window: 60, MinRequests: 10, OpenFor: 1},
			[]brStep{
				{0, "fail", false, stClosed},
				{0, "fail", false, stClosed},
				{0, "fail", false, stOpen},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			runBreaker(t, NewBreaker(tt.cfg, nil), tt.steps)
		})
	}
}

// The jittered half-open time lies within OpenFor·(1 ± Jitter), and is
// actually spread.
func TestBreakerJitter(t *testing.T) {
	cfg := BreakerConfig{ConsecutiveFailures: 1, OpenFor: 10, Jitter: 0.2}
	b := NewBreaker(cfg, rand.New(rand.NewPCG(7, 8)))
	now := 0.0
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	const n = 2000
	for i := range n {
		b.Result(now, false)
		if b.State(now) != stOpen {
			t.Fatalf("opening %d: not open", i)
		}
		d := b.HalfOpenAt() - now
		if d < 8 || d > 12 {
			t.Fatalf("opening %d: half-open after %v s, outside [8, 12]", i, d)
		}
		if b.State(now+d-1e-9) != stOpen || b.State(now+d) != stHalf {
			t.Fatalf("opening %d: not half-open exactly at %v", i, now+d)
		}
		if !b.Allow(now + d) {
			t.Fatalf("opening %d: probe refused", i)
		}
		lo, hi, sum = min(lo, d), max(hi, d), sum+d
		now += d // the probe fails next round, reopening it
	}
	if lo > 8.1 || hi < 11.9 {
		t.Errorf("half-open delays span [%v, %v], want about [8, 12]", lo, hi)
	}
	if mean := sum / n; math.Abs(mean-10) > 0.1 {
		t.Errorf("mean half-open delay %v, want 10 ±1%%", mean)
	}
	if b.Opens() != n {
		t.Errorf("Opens() = %d, want %d", b.Opens(), n)
	}
}

func TestBreakerValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  BreakerConfig
		ok   bool
	}{
		{"consecutive", BreakerConfig{ConsecutiveFailures: 5, OpenFor: 30}, true},
		{"rate", BreakerConfig{FailureRate: 0.5, Window: 10, MinRequests: 20, OpenFor: 30, Jitter: 0.1, HalfOpenProbes: 3}, true},
		{"never opens", BreakerConfig{OpenFor: 30}, false},
		{"negative consecutive", BreakerConfig{ConsecutiveFailures: -1, OpenFor: 30}, false},
		{"rate above 1", BreakerConfig{FailureRate: 1.5, Window: 10, OpenFor: 30}, false},
		{"rate without window", BreakerConfig{FailureRate: 0.5, OpenFor: 30}, false},
		{"negative min requests", BreakerConfig{ConsecutiveFailures: 1, MinRequests: -1, OpenFor: 30}, false},
		{"no open time", BreakerConfig{ConsecutiveFailures: 1}, false},
		{"rolling window counting refusals", BreakerConfig{FailureRate: 0.5, Window: 10, OpenFor: 30, KeepWindow: true, CountRejected: true}, true},
		{"refusals counted in a cleared window", BreakerConfig{FailureRate: 0.5, Window: 10, OpenFor: 30, CountRejected: true}, false},
		{"jitter 1", BreakerConfig{ConsecutiveFailures: 1, OpenFor: 30, Jitter: 1}, false},
		{"negative probes", BreakerConfig{ConsecutiveFailures: 1, OpenFor: 30, HalfOpenProbes: -1}, false},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
