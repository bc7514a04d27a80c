package replay

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBackoffExact(t *testing.T) {
	tests := []struct {
		name string
		b    Backoff
		n    int
		want float64
	}{
		{"zero value", Backoff{}, 3, 0},
		{"immediate", Backoff{Kind: "immediate", Base: 1}, 1, 0},
		{"immediate ignores jitter", Backoff{Kind: "immediate", Base: 1, Jitter: "full"}, 2, 0},
		{"constant", Backoff{Kind: "constant", Base: 0.5}, 1, 0.5},
		{"constant n=7", Backoff{Kind: "constant", Base: 0.5, Jitter: "none"}, 7, 0.5},
		{"constant capped", Backoff{Kind: "constant", Base: 0.5, Cap: 0.3}, 2, 0.3},
		{"exponential n=1", Backoff{Kind: "exponential", Base: 0.25}, 1, 0.25},
		{"exponential n=0 is n=1", Backoff{Kind: "exponential", Base: 0.25}, 0, 0.25},
		{"exponential n=2", Backoff{Kind: "exponential", Base: 0.25}, 2, 0.5},
		{"exponential n=4", Backoff{Kind: "exponential", Base: 0.25}, 4, 2},
		{"exponential multiplier 3", Backoff{Kind: "exponential", Base: 0.1, Multiplier: 3}, 3, 0.9},
		{"exponential multiplier 1.5", Backoff{Kind: "exponential", Base: 1, Multiplier: 1.5}, 3, 2.25},
		{"exponential below cap", Backoff{Kind: "exponential", Base: 0.25, Cap: 2}, 4, 2},
		{"exponential at cap", Backoff{Kind: "exponential", Base: 0.25, Cap: 2}, 5, 2},
		{"exponential capped", Backoff{Kind: "exponential", Base: 0.25, Cap: 1.5}, 10, 1.5},
		{"exponential huge n, no cap", Backoff{Kind: "exponential", Base: 1}, 5000, math.MaxFloat64},
		{"linear n=1", Backoff{Kind: "linear", Base: 0.02, Increment: 0.01}, 1, 0.02},
		{"linear n=4", Backoff{Kind: "linear", Base: 0.02, Increment: 0.01}, 4, 0.05},
		{"linear capped", Backoff{Kind: "linear", Base: 0.02, Increment: 0.01, Cap: 0.035}, 4, 0.035},
		{"linear no increment is constant", Backoff{Kind: "linear", Base: 0.02}, 6, 0.02},
		// sethvargo/go-retry's NewFibonacci(10ms): 10, 20, 30, 50, 80ms.
		{"fibonacci n=1", Backoff{Kind: "fibonacci", Base: 0.01, Increment: 0.01}, 1, 0.01},
		{"fibonacci n=2", Backoff{Kind: "fibonacci", Base: 0.01, Increment: 0.01}, 2, 0.02},
		{"fibonacci n=5", Backoff{Kind: "fibonacci", Base: 0.01, Increment: 0.01}, 5, 0.08},
		// tokio-retry's: 10, 10, 20, 30, 50ms.
		{"fibonacci from equal waits n=5", Backoff{Kind: "fibonacci", Base: 0.01}, 5, 0.05},
		{"fibonacci capped", Backoff{Kind: "fibonacci", Base: 0.01, Increment: 0.01, Cap: 0.04}, 5, 0.04},
		{"fibonacci huge n, no cap", Backoff{Kind: "fibonacci", Base: 1, Increment: 1}, 5000, math.MaxFloat64},
		{"steps as read", Backoff{Kind: "constant", Base: 0.01, Steps: &Steps{ByRetry: []float64{0.01, 0.04, 0.02}}}, 2, 0.04},
		{"steps: later retries wait the last", Backoff{Kind: "constant", Base: 0.01, Steps: &Steps{ByRetry: []float64{0.01, 0.04, 0.02}}}, 7, 0.02},
		{"steps capped", Backoff{Kind: "constant", Base: 0.01, Cap: 0.03, Steps: &Steps{ByRetry: []float64{0.01, 0.04}}}, 2, 0.03},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.b.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			// Un-jittered delays must not touch the rng: pass nil.
			got := tt.b.Delay(tt.n, 0, nil)
			if math.Abs(got-tt.want) > 1e-12*max(1, tt.want) {
				t.Errorf("Delay(%d) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}

func TestBackoffJitterDistribution(t *testing.T) {
	const draws = 10000
	exp := Backoff{Kind: "exponential", Base: 1, Cap: 10} // n=3: d = 4
	with := func(b Backoff, jitter JitterKind, f float64) Backoff {
		b.Jitter, b.Fraction = jitter, f
		return b
	}
	tests := []struct {
		name       string
		b          Backoff
		n          int
		prev       float64
		lo, hi     float64
		mean       float64
		equalsLoHi bool // draws may reach hi exactly (a cap)
	}{
		{"full", with(exp, "full", 0), 3, 0, 0, 4, 2, false},
		{"full capped", with(exp, "full", 0), 8, 0, 0, 10, 5, false},
		{"equal", with(exp, "equal", 0), 3, 0, 2, 4, 3, false},
		{"proportional 0.2", with(exp, "proportional", 0.2), 3, 0, 3.2, 4.8, 4, false},
		{"proportional past cap", with(exp, "proportional", 0.2), 9, 0, 8, 12, 10, false},
		{"constant full", Backoff{Kind: "constant", Base: 0.6, Jitter: "full"}, 5, 0, 0, 0.6, 0.3, false},
		// go-retryablehttp's LinearJitterBackoff(16ms, 24ms) before retry 3.
		{"linear proportional", Backoff{Kind: "linear", Base: 0.02, Increment: 0.02, Jitter: "proportional", Fraction: 0.2}, 3, 0, 0.048, 0.072, 0.06, false},
		{"fibonacci full", Backoff{Kind: "fibonacci", Base: 0.01, Increment: 0.01, Jitter: "full"}, 4, 0, 0, 0.05, 0.025, false},
		// min(cap, U(base, 3·prev)).
		{"decorrelated first retry", with(exp, "decorrelated", 0), 1, 0, 1, 3, 2, false},
		{"decorrelated prev 2", with(exp, "decorrelated", 0), 4, 2, 1, 6, 3.5, false},
		// E[min(4, U(1,6))] = 3/5·2.5 + 2/5·4 = 3.1
		{"decorrelated capped", Backoff{Kind: "exponential", Base: 1, Cap: 4, Jitter: "decorrelated"}, 4, 2, 1, 4, 3.1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.b.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			sum := 0.0
			for range draws {
				d := tt.b.Delay(tt.n, tt.prev, rng)
				if d < tt.lo || d > tt.hi || (d == tt.hi && !tt.equalsLoHi) {
					t.Fatalf("Delay = %v, outside [%v, %v)", d, tt.lo, tt.hi)
				}
				sum += d
			}
			if mean := sum / draws; math.Abs(mean-tt.mean) > 0.02*tt.mean {
				t.Errorf("mean %v, want %v ±2%%", mean, tt.mean)
			}
		})
	}
}

// Decorrelated jitter chained through prev stays within [base, cap].
func TestBackoffDecorrelatedChain(t *testing.T) {
	b := Backoff{Kind: "exponential", Base: 0.1, Cap: 5, Jitter: "decorrelated"}
	rng := rand.New(rand.NewPCG(3, 4))
	prev, reachedCap := 0.0, false
	for n := 1; n <= 1000; n++ {
		d := b.Delay(n, prev, rng)
		if d < 0.1 || d > 5 {
			t.Fatalf("retry %d: Delay = %v, outside [0.1, 5]", n, d)
		}
		if prev > 0 && d > 3*prev {
			t.Fatalf("retry %d: Delay = %v > 3·prev = %v", n, d, 3*prev)
		}
		reachedCap = reachedCap || d == 5
		prev = d
	}
	if !reachedCap {
		t.Errorf("1000 chained decorrelated delays never reached the cap")
	}
}

// A jittered Delay draws exactly one number; an un-jittered one draws none.
func TestBackoffDraws(t *testing.T) {
	for _, j := range []JitterKind{JitterFull, JitterEqual, JitterDecorrelated, JitterProportional} {
		b := Backoff{Kind: "exponential", Base: 1, Jitter: j, Fraction: 0.2}
		r1, r2 := rand.New(rand.NewPCG(5, 6)), rand.New(rand.NewPCG(5, 6))
		b.Delay(2, 1, r1)
		r2.Float64()
		if r1.Uint64() != r2.Uint64() {
			t.Errorf("%s: Delay did not draw exactly one Float64", j)
		}
	}
}

func TestBackoffValidate(t *testing.T) {
	tests := []struct {
		name string
		b    Backoff
		ok   bool
	}{
		{"zero", Backoff{}, true},
		{"exponential full", Backoff{Kind: "exponential", Base: 0.1, Cap: 10, Jitter: "full"}, true},
		{"proportional", Backoff{Kind: "constant", Base: 1, Jitter: "proportional", Fraction: 0.2}, true},
		{"bad kind", Backoff{Kind: "polynomial", Base: 1}, false},
		{"linear", Backoff{Kind: "linear", Base: 1, Increment: 0.5}, true},
		{"fibonacci", Backoff{Kind: "fibonacci", Base: 1, Increment: 1}, true},
		{"negative increment", Backoff{Kind: "linear", Base: 1, Increment: -1}, false},
		{"infinite increment", Backoff{Kind: "fibonacci", Base: 1, Increment: math.Inf(1)}, false},
		{"negative step", Backoff{Kind: "constant", Base: 1, Steps: &Steps{ByRetry: []float64{0.1, -0.2}}}, false},
		{"bad jitter", Backoff{Kind: "constant", Base: 1, Jitter: "half"}, false},
		{"negative base", Backoff{Kind: "constant", Base: -1}, false},
		{"NaN base", Backoff{Kind: "constant", Base: math.NaN()}, false},
		{"negative multiplier", Backoff{Kind: "exponential", Base: 1, Multiplier: -2}, false},
		{"negative cap", Backoff{Kind: "exponential", Base: 1, Cap: -1}, false},
		{"decorrelated zero base", Backoff{Kind: "exponential", Jitter: "decorrelated"}, false},
		{"fraction too big", Backoff{Kind: "constant", Base: 1, Jitter: "proportional", Fraction: 1.5}, false},
	}
	for _, tt := range tests {
		if err := tt.b.Validate(); (err == nil) != tt.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
