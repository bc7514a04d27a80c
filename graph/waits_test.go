package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// chainOf builds n calls whose waits (ms) come from wait(rng, k), each
// attempt failing with fail (a 503 unless given) and the last succeeding.
func chainOf(b *builder, n int, seed uint64, retries int, wait func(rng *rand.Rand, k int) float64, fail ...opt) {
	rng := rand.New(rand.NewPCG(seed, 7))
	sequential(b, n, "api", func(root, _ int) {
		t := 10.0
		for k := 0; k <= retries; k++ {
			opts := fail
			if len(opts) == 0 {
				opts = []opt{httpStatus(503)}
			}
			if k == retries {
				opts = []opt{httpStatus(200)}
			}
			b.client(root, "backend", t, 5, opts...)
			t += 5
			if k < retries {
				t += wait(rng, k)
			}
		}
	})
}

// TestServerDirectedWaits: waits a server asked for are not backoff,
// whether or not a span captured the Retry-After header.
func TestServerDirectedWaits(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "uncaptured Retry-After: 1 among 10-50ms exponential waits",
			build: func(b *builder) {
				chainOf(b, 30, 1, 3, func(rng *rand.Rand, k int) float64 { return 10 * math.Pow(2, float64(k)) })
				// Five calls throttled with a 429 whose Retry-After: 1 no span recorded.
				chainOf(b, 5, 2, 2, func(rng *rand.Rand, k int) float64 {
					if k == 0 {
						return 1000.4 + rng.Float64()
					}
					return 10 * math.Pow(2, float64(k))
				}, httpStatus(429))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantEq(t, "retry-after honoured", e.RetryAfterHonored, 5)
				wantEq(t, "of which uncaptured", e.RetryAfterUncaptured, 5)
				wantEq(t, "kind", e.Backoff.Kind, "exponential")
				wantEq(t, "base", e.Backoff.BaseMS, 10.0)
				wantPtr(t, "multiplier", e.Backoff.Multiplier, 2)
				wantEq(t, "jitter", e.Backoff.Jitter, "none")
				wantNil(t, "jitter fraction", e.Backoff.JitterFraction)
			},
		},
		{
			// got: its own waits are 1000·2^(n-1)ms + U[0,100ms); a 429's
			// Retry-After: 1 before the third attempt waits less than the
			// schedule there (2000-2100ms), which no jitter of those waits
			// reaches.
			name: "uncaptured Retry-After: 1 where the schedule waits 2s",
			build: func(b *builder) {
				got := func(rng *rand.Rand, k int) float64 { return 1000*math.Pow(2, float64(k)) + 100*rng.Float64() }
				chainOf(b, 12, 1, 2, got)
				chainOf(b, 3, 2, 2, func(rng *rand.Rand, k int) float64 {
					if k == 1 {
						return 1000.4 + rng.Float64()
					}
					return got(rng, k)
				}, httpStatus(429))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantEq(t, "retry-after honoured", e.RetryAfterHonored, 3)
				wantEq(t, "kind", e.Backoff.Kind, "exponential")
				wantPtr(t, "multiplier", e.Backoff.Multiplier, 2)
			},
		},
		{
			// ky: 300·2^(n-1)ms up to 800ms, unjittered; a 429's
			// Retry-After: 1 before the third attempt waits 1s where the
			// schedule waits 600ms, less than offScheduleFactor times it
			// but far above the little the schedule's waits spread there.
			name: "uncaptured Retry-After: 1 less than 3x above an unjittered schedule",
			build: func(b *builder) {
				ky := func(rng *rand.Rand, k int) float64 { return min(300*math.Pow(2, float64(k)), 800) + rng.Float64() }
				chainOf(b, 12, 1, 3, ky)
				chainOf(b, 3, 2, 2, func(rng *rand.Rand, k int) float64 {
					if k == 1 {
						return 1000.4 + rng.Float64()
					}
					return ky(rng, k)
				}, httpStatus(429))
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantEq(t, "retry-after honoured", e.RetryAfterHonored, 3)
				wantEq(t, "of which uncaptured", e.RetryAfterUncaptured, 3)
				if s := e.Backoff.Schedule; len(s) < 2 || s[1].Waits != 12 {
					t.Errorf("schedule %+v: want the 12 backoff waits at the second retry, no server's wait among them", s)
				}
			},
		},
		{
			// ky's jitter: true, U[0, 300·2^(n-1)): a 429's Retry-After: 1
			// before the third attempt waits 1s where the schedule's own
			// waits reach up to 600ms; twelve of them show where it stops.
			name: "uncaptured Retry-After: 1 above a full jitter's ceiling",
			build: func(b *builder) {
				full := func(rng *rand.Rand, k int) float64 { return 300 * math.Pow(2, float64(k)) * rng.Float64() }
				chainOf(b, 12, 12, 2, full)
				chainOf(b, 3, 13, 2, func(rng *rand.Rand, k int) float64 {
					if k == 1 {
						return 1000.4 + rng.Float64()
					}
					return full(rng, k)
				}, httpStatus(429))
			},
			check: func(t *testing.T, tp *Topology) {
				wantEq(t, "retry-after honoured", edge(t, tp, "api", "backend").RetryAfterHonored, 3)
			},
		},
		{
			// Four waits spread over 150-480ms do not show that the
			// schedule stops short of 1s (all four would fall that low
			// under a ceiling at 1s with chance 0.023): two 1s waits there
			// stay in it.
			name: "too few waits to show a jittered schedule stops short of 1s",
			build: func(b *builder) {
				spread := []float64{150, 280, 380, 480}
				next := 0
				chainOf(b, 4, 14, 1, func(rng *rand.Rand, k int) float64 { next++; return spread[next-1] })
				chainOf(b, 2, 15, 1, func(rng *rand.Rand, k int) float64 { return 1000.5 }, httpStatus(429))
			},
			check: func(t *testing.T, tp *Topology) {
				wantEq(t, "retry-after honoured", edge(t, tp, "api", "backend").RetryAfterHonored, 0)
			},
		},
		{
			// Proportional jitter of ±25% around 800ms reaches 1000ms: a
			// whole-second wait there is the schedule's ceiling, not above
			// it by the schedule's own spread.
			name: "a whole-second wait at a proportional jitter's ceiling stays in it",
			build: func(b *builder) {
				chainOf(b, 12, 10, 1, func(rng *rand.Rand, k int) float64 { return 800 * (0.75 + 0.5*rng.Float64()) })
				chainOf(b, 2, 11, 1, func(rng *rand.Rand, k int) float64 { return 1000.5 })
			},
			check: func(t *testing.T, tp *Topology) {
				wantEq(t, "retry-after honoured", edge(t, tp, "api", "backend").RetryAfterHonored, 0)
			},
		},
		{
			// A busy host fired one retry's timer 1.6s late: a single wait
			// on a whole second, far off a schedule of 100-350ms, after a
			// 503 as every other. A server directs every caller it refuses
			// alike; one late timer lands on a whole second by chance.
			name: "one late timer on a whole second is not the server's",
			build: func(b *builder) {
				chainOf(b, 30, 8, 2, func(rng *rand.Rand, k int) float64 { return 100*math.Pow(2, float64(k)) + 50*rng.Float64() })
				chainOf(b, 1, 9, 2, func(rng *rand.Rand, k int) float64 {
					if k == 1 {
						return 2014.2
					}
					return 100 + 50*rng.Float64()
				})
			},
			check: func(t *testing.T, tp *Topology) {
				wantEq(t, "retry-after honoured", edge(t, tp, "api", "backend").RetryAfterHonored, 0)
			},
		},
		{
			// Full jitter up to 2s spreads the schedule's own waits down to
			// near zero: a 1s wait after a 503 is one of them.
			name: "a whole-second wait inside a full-jitter schedule stays in it",
			build: func(b *builder) {
				chainOf(b, 12, 6, 1, func(rng *rand.Rand, k int) float64 { return 2000 * rng.Float64() })
				chainOf(b, 2, 7, 1, func(rng *rand.Rand, k int) float64 { return 1000.5 })
			},
			check: func(t *testing.T, tp *Topology) {
				wantEq(t, "retry-after honoured", edge(t, tp, "api", "backend").RetryAfterHonored, 0)
			},
		},
		{
			name: "constant 1s backoff after 503s is the schedule, not the server",
			build: func(b *builder) {
				chainOf(b, 10, 3, 2, func(rng *rand.Rand, k int) float64 { return 1000 + rng.Float64() })
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantEq(t, "retry-after honoured", e.RetryAfterHonored, 0)
				wantEq(t, "kind", e.Backoff.Kind, "constant")
				if math.Abs(e.Backoff.BaseMS-1000.5) > 1 {
					t.Errorf("base %v, want about 1000", e.Backoff.BaseMS)
				}
			},
		},
		{
			name: "a long wait after a 500 is not server-directed: 500 carries no Retry-After",
			build: func(b *builder) {
				chainOf(b, 10, 4, 1, func(rng *rand.Rand, k int) float64 { return 20 })
				chainOf(b, 2, 5, 1, func(rng *rand.Rand, k int) float64 { return 2000 }, httpStatus(500))
			},
			check: func(t *testing.T, tp *Topology) {
				wantEq(t, "retry-after honoured", edge(t, tp, "api", "backend").RetryAfterHonored, 0)
			},
		},
	})
}

// grpcCalls builds n calls to backend, each failing with codes[k] on its
// attempt k and then succeeding, the wait after attempt k drawn by
// wait(rng, k, code).
func grpcCalls(b *builder, n int, seed uint64, codes []int, wait func(rng *rand.Rand, k, code int) float64) {
	rng := rand.New(rand.NewPCG(seed, 9))
	sequential(b, n, "api", func(root, _ int) {
		t := 10.0
		for k, code := range codes {
			b.client(root, "backend", t, 2, grpcCode(code))
			t += 2 + wait(rng, k, code)
		}
		b.client(root, "backend", t, 2, grpcCode(0))
	})
}

// grpcBackoff is grpc-go's retryPolicy wait before retry k+1 counted
// from the last pushback: 25ms·2^k up to 200ms, times 0.8 + 0.4·U.
func grpcBackoff(rng *rand.Rand, k int) float64 {
	return min(25*math.Pow(2, float64(k)), 200) * (0.8 + 0.4*rng.Float64())
}

// TestGRPCPushback: a gRPC server's pushback (grpc-retry-pushback-ms, in
// milliseconds, which no span records) is told from the backoff by
// agreeing with itself where the backoff jitters and grows, and the
// backoff after it is read as starting over (gRFC A6).
func TestGRPCPushback(t *testing.T) {
	const unavailable, exhausted = 14, 8
	schedule := func(b *builder) {
		grpcCalls(b, 12, 1, []int{unavailable}, func(rng *rand.Rand, k, _ int) float64 { return grpcBackoff(rng, k) })
		grpcCalls(b, 10, 2, []int{unavailable, unavailable}, func(rng *rand.Rand, k, _ int) float64 { return grpcBackoff(rng, k) })
		grpcCalls(b, 8, 3, []int{unavailable, unavailable, unavailable}, func(rng *rand.Rand, k, _ int) float64 { return grpcBackoff(rng, k) })
	}
	checkSchedule := func(t *testing.T, e Edge) {
		t.Helper()
		wantEq(t, "kind", e.Backoff.Kind, BackoffExponential)
		wantPtr(t, "multiplier", e.Backoff.Multiplier, 2)
		wantEq(t, "jitter", e.Backoff.Jitter, JitterProportional)
		if f := e.Backoff.JitterFraction; f == nil || math.Abs(*f-0.2) > 0.05 {
			t.Errorf("jitter fraction %v, want 0.2", f)
		}
		if math.Abs(e.Backoff.BaseMS-25) > 2.5 {
			t.Errorf("base %vms, want 25", e.Backoff.BaseMS)
		}
	}
	runCases(t, []inferCase{
		{
			name: "400ms pushbacks after RESOURCE_EXHAUSTED, the backoff starting over after them",
			build: func(b *builder) {
				schedule(b)
				// Pushed back on the first attempt, or on the second and
				// then retried from the initial backoff again.
				grpcCalls(b, 4, 4, []int{exhausted}, func(rng *rand.Rand, _, _ int) float64 { return 400 + rng.Float64() })
				grpcCalls(b, 4, 5, []int{unavailable, exhausted, unavailable, unavailable}, func(rng *rand.Rand, k, code int) float64 {
					switch {
					case code == exhausted:
						return 400 + rng.Float64()
					case k > 1:
						return grpcBackoff(rng, k-2)
					}
					return grpcBackoff(rng, k)
				})
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantEq(t, "pushbacks honoured", e.RetryAfterHonored, 8)
				wantEq(t, "of which uncaptured", e.RetryAfterUncaptured, 8)
				checkSchedule(t, e)
				wantEq(t, "last step", len(e.Backoff.Schedule), 3)
			},
		},
		{
			name: "one long wait after UNAVAILABLE agrees with nothing: the schedule's, or late",
			build: func(b *builder) {
				schedule(b)
				grpcCalls(b, 1, 6, []int{unavailable}, func(*rand.Rand, int, int) float64 { return 400 })
			},
			check: func(t *testing.T, tp *Topology) {
				wantEq(t, "pushbacks honoured", edge(t, tp, "api", "backend").RetryAfterHonored, 0)
			},
		},
		{
			name: "late timers scattered far off the schedule do not agree",
			build: func(b *builder) {
				schedule(b)
				for i, late := range []float64{110, 160, 230, 320} {
					grpcCalls(b, 1, uint64(8+i), []int{unavailable}, func(*rand.Rand, int, int) float64 { return late })
				}
			},
			check: func(t *testing.T, tp *Topology) {
				wantEq(t, "pushbacks honoured", edge(t, tp, "api", "backend").RetryAfterHonored, 0)
			},
		},
		{
			name: "a constant 400ms gRPC backoff is the schedule, not the server",
			build: func(b *builder) {
				grpcCalls(b, 12, 12, []int{unavailable, unavailable}, func(rng *rand.Rand, _, _ int) float64 { return 400 + rng.Float64() })
			},
			check: func(t *testing.T, tp *Topology) {
				e := edge(t, tp, "api", "backend")
				wantEq(t, "pushbacks honoured", e.RetryAfterHonored, 0)
				wantEq(t, "kind", e.Backoff.Kind, BackoffConstant)
			},
		},
	})
}

// TestAdditiveBeforeEqual: avast/retry-go's default delay, base·2^k plus
// U[0,a), pools into the shape of equal jitter; the widths per attempt
// index, the same while the waits double, say additive.
func TestAdditiveBeforeEqual(t *testing.T) {
	runCases(t, []inferCase{{
		name: "20ms ×2 plus U[0,30ms)",
		build: func(b *builder) {
			for i, retries := range []int{1, 2, 3} {
				chainOf(b, 12, uint64(20+i), retries, func(rng *rand.Rand, k int) float64 { return 20*math.Pow(2, float64(k)) + 30*rng.Float64() })
			}
		},
		check: func(t *testing.T, tp *Topology) {
			e := edge(t, tp, "api", "backend")
			wantEq(t, "jitter", e.Backoff.Jitter, JitterAdditive)
			wantEq(t, "kind", e.Backoff.Kind, BackoffExponential)
			if a := e.Backoff.JitterAdditiveMS; a == nil || math.Abs(*a-30) > 6 {
				t.Errorf("additive %v, want 30", a)
			}
		},
	}})
}

// TestLateTopProportional: a busy host wakes some of ±20% waits late,
// which stretches the longest; the mid-range the centre is read from moves up with it, and the
// base range must still hold the configured base (grpc-go's 25ms here).
func TestLateTopProportional(t *testing.T) {
	runCases(t, []inferCase{{
		name: "25ms ±20%, one in seven waits 4-8ms late",
		build: func(b *builder) {
			chainOf(b, 30, 31, 1, func(rng *rand.Rand, k int) float64 {
				w := 25 * (0.8 + 0.4*rng.Float64())
				if rng.Float64() < 0.15 {
					w += 4 + 4*rng.Float64() // a late timer
				}
				return w
			})
		},
		check: func(t *testing.T, tp *Topology) {
			e := edge(t, tp, "api", "backend")
			wantEq(t, "jitter", e.Backoff.Jitter, JitterProportional)
			if r := e.Backoff.BaseRangeMS; r == nil || r[0] > 25 || r[1] < 25 {
				t.Errorf("base %vms, range %v excludes the configured 25ms", e.Backoff.BaseMS, r)
			}
		},
	}})
}

// TestJitterAgainstNoise: timer noise is not jitter, and each jitter kind
// is told apart with the estimator its formula calls for.
func TestJitterAgainstNoise(t *testing.T) {
	type want struct {
		jitter     JitterKind
		base, mult float64 // mult 0: constant
		fraction   float64
		additive   float64
		overhead   float64 // ms; 0: none claimed
	}
	cases := []struct {
		name string
		wait func(rng *rand.Rand, k int) float64
		want want
	}{
		{"constant 20ms with timer noise 0-1.9ms", func(rng *rand.Rand, k int) float64 {
			if rng.IntN(10) == 0 {
				return 20 + 1.9*rng.Float64() // a late timer now and then
			}
			return 20 + 0.4*rng.Float64()
		}, want{jitter: "none", base: 20.2}},
		{"got: exponential 1000ms ×2 plus U[0,100ms]", func(rng *rand.Rand, k int) float64 {
			return 1000*math.Pow(2, float64(k)) + 100*rng.Float64()
		}, want{jitter: "additive", base: 1000, mult: 2, additive: 100}},
		{"full jitter 50ms ×2", func(rng *rand.Rand, k int) float64 {
			return rng.Float64() * 50 * math.Pow(2, float64(k))
		}, want{jitter: "full", base: 50, mult: 2}},
		{"full jitter 20ms ×2", func(rng *rand.Rand, k int) float64 {
			return rng.Float64() * 20 * math.Pow(2, float64(k))
		}, want{jitter: "full", base: 20, mult: 2}},
		{"equal jitter 10ms ×2", func(rng *rand.Rand, k int) float64 {
			d := 10 * math.Pow(2, float64(k))
			return d/2 + rng.Float64()*d/2
		}, want{jitter: "equal", base: 10, mult: 2}},
		{"multiplicative ±20% on 50ms ×1.5", func(rng *rand.Rand, k int) float64 {
			return 50 * math.Pow(1.5, float64(k)) * (0.8 + 0.4*rng.Float64())
		}, want{jitter: "proportional", base: 50, mult: 1.5, fraction: 0.2}},
		// Time the client spends between attempts beyond its sleep lifts
		// every wait alike: full jitter's floor is then that overhead at
		// every attempt, not zero.
		{"full jitter 20ms ×2 plus 4ms of overhead per wait", func(rng *rand.Rand, k int) float64 {
			return 4 + 0.3*rng.Float64() + rng.Float64()*20*math.Pow(2, float64(k))
		}, want{jitter: "full", base: 20, mult: 2, overhead: 4}},
		// grpc-go's ×U[0.8,1.2) on a loaded host: one wait in seven wakes
		// up to 12ms late, past the jitter's bound.
		{"grpc-go ±20% on 20ms ×2 with a tail of late waits", func(rng *rand.Rand, k int) float64 {
			w := 20 * math.Pow(2, float64(k)) * (0.8 + 0.4*rng.Float64())
			if rng.IntN(7) == 0 {
				w += 3 + 9*rng.Float64()
			}
			return w
		}, want{jitter: "proportional", base: 20, mult: 2, fraction: 0.2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				b := newBuilder()
				chainOf(b, 60, seed, 3, tc.wait)
				bo := edge(t, b.infer(), "api", "backend").Backoff
				if bo.Jitter != tc.want.jitter {
					t.Fatalf("seed %d: jitter %s, want %s (%s)", seed, bo.Jitter, tc.want.jitter, fmtBackoff(bo))
				}
				if math.Abs(bo.BaseMS-tc.want.base) > 0.1*tc.want.base {
					t.Errorf("seed %d: base %v, want %v ±10%%", seed, bo.BaseMS, tc.want.base)
				}
				if tc.want.mult == 0 {
					wantEq(t, "kind", bo.Kind, "constant")
				} else {
					wantEq(t, "kind", bo.Kind, "exponential")
					wantPtr(t, fmtBackoff(bo), bo.Multiplier, tc.want.mult)
				}
				if r := bo.MultiplierRange; tc.want.mult != 0 && (r == nil || r[0] > tc.want.mult || r[1] < tc.want.mult) {
					t.Errorf("seed %d: multiplier range %v excludes the true ×%v", seed, r, tc.want.mult)
				}
				if tc.want.fraction > 0 {
					wantPtr(t, "fraction", bo.JitterFraction, tc.want.fraction)
				}
				switch o := bo.OverheadMS; {
				case tc.want.overhead == 0 && o != nil:
					t.Errorf("seed %d: overhead %vms claimed where there is none", seed, *o)
				case tc.want.overhead > 0 && (o == nil || math.Abs(*o-tc.want.overhead) > 1):
					t.Errorf("seed %d: overhead %v, want %vms ±1", seed, o, tc.want.overhead)
				}
				if tc.want.additive > 0 && (bo.JitterAdditiveMS == nil || math.Abs(*bo.JitterAdditiveMS-tc.want.additive) > 0.15*tc.want.additive) {
					t.Errorf("seed %d: additive %v, want %v ±15%%", seed, bo.JitterAdditiveMS, tc.want.additive)
				}
			}
		})
	}
}

// TestNoiseFromTheEdge: an edge whose network legs vary by several
// milliseconds does not call the same spread in its waits jitter.
func TestNoiseFromTheEdge(t *testing.T) {
	b := newBuilder()
	rng := rand.New(rand.NewPCG(9, 9))
	sequential(b, 30, "api", func(root, _ int) {
		at := 10.0
		for k := 0; k < 3; k++ {
			leg := 4 * rng.Float64() // a congested network: 0-4ms each way
			status := 503
			if k == 2 {
				status = 200
			}
			c := b.client(root, "backend", at, 10+2*leg, httpStatus(status))
			b.server(c, "backend", "GET /x", at+leg, 10, httpStatus(status))
			at += 10 + 2*leg + 25 + 3*rng.Float64()
		}
	})
	bo := edge(t, b.infer(), "api", "backend").Backoff
	wantEq(t, "jitter", bo.Jitter, "none")
	if bo.NoiseMS < 3 {
		t.Errorf("noise %v: want the legs' spread, several ms", bo.NoiseMS)
	}
}

// TestMultiplierRange: the multiplier read from few jittered waits is no
// better than the range the waits allow, which holds the true multiplier
// and narrows as waits accumulate; the figure is rounded to a quarter only
// inside it.
func TestMultiplierRange(t *testing.T) {
	// cenkalti/backoff's default shape: 20ms ×2 with ±50% jitter.
	wait := func(rng *rand.Rand, k int) float64 { return 20 * math.Pow(2, float64(k)) * (0.5 + rng.Float64()) }
	width := map[int]float64{}
	wide6 := 0.0
	for _, n := range []int{6, 60} {
		for seed := uint64(1); seed <= 5; seed++ {
			b := newBuilder()
			chainOf(b, n, seed, 2, wait)
			bo := edge(t, b.infer(), "api", "backend").Backoff
			r := bo.MultiplierRange
			if r == nil || r[0] > 2 || r[1] < 2 {
				t.Fatalf("%d calls, seed %d: range %v excludes ×2 (%s)", n, seed, r, fmtBackoff(bo))
			}
			if m := *bo.MultiplierFit; m < r[0] || m > r[1] {
				t.Errorf("%d calls, seed %d: multiplier fit %v outside its own range %v", n, seed, m, *r)
			}
			// A multiplier is stated only where its range is narrow.
			if wide := r[1] > maxMultiplierSpread*r[0]; wide != (bo.Multiplier == nil) {
				t.Errorf("%d calls, seed %d: range %v but multiplier %v", n, seed, *r, bo.Multiplier)
			}
			if n == 6 {
				wide6 += r[1] / r[0]
			}
			width[n] += r[1] - r[0]
		}
	}
	if wide6/5 <= maxMultiplierSpread {
		t.Errorf("ranges from 6 calls span %.2f-fold on average: too narrow to leave the multiplier unknown", wide6/5)
	}
	if width[6] <= 2*width[60] {
		t.Errorf("mean range width %.2f from 6 calls, %.2f from 60: few waits must leave it far wider", width[6]/5, width[60]/5)
	}
	for _, tc := range []struct{ m, lo, hi, want float64 }{
		{1.71, 1.14, 2.43, 1.75}, // quarter allowed
		{1.83, 1.80, 1.85, 1.8},  // quarter ruled out: a tenth
		{2.09, 1.90, 2.56, 2},
		{1.62, 1.55, 1.68, 1.6},
	} {
		if got := roundMultiplier(tc.m, tc.lo, tc.hi); got != tc.want {
			t.Errorf("roundMultiplier(%v, [%v, %v]) = %v, want %v", tc.m, tc.lo, tc.hi, got, tc.want)
		}
	}
}

// TestScheduleSteps: the fit's wait before every retry is exported with
// its range, not only the first (issue 11 item 3): an SRE reading ×2 from
// three retries sees what each of them waited and how sure that is.
func TestScheduleSteps(t *testing.T) {
	b := newBuilder()
	chainOf(b, 40, 11, 3, func(rng *rand.Rand, k int) float64 {
		return 20 * math.Pow(2, float64(k)) * (0.8 + 0.4*rng.Float64()) // ±20%
	})
	chainOf(b, 3, 12, 1, func(rng *rand.Rand, k int) float64 { return 20 * (0.8 + 0.4*rng.Float64()) })
	e := edge(t, b.infer(), "api", "backend")
	wantEq(t, "kind", e.Backoff.Kind, "exponential")
	wantEq(t, "jitter", e.Backoff.Jitter, JitterProportional)
	steps := e.Backoff.Schedule
	if len(steps) != 3 {
		t.Fatalf("schedule %+v, want a step per retry", steps)
	}
	for i, s := range steps {
		want := 20 * math.Pow(2, float64(i))
		waits := 40
		if i == 0 {
			waits = 43
		}
		if s.Retry != i+1 || s.Waits != waits || s.RangeMS[0] > want || s.RangeMS[1] < want || math.Abs(s.MS-want) > 0.15*want {
			t.Errorf("step %d: %+v, want retry %d from %d waits around %vms, its range holding it", i, s, i+1, waits, want)
		}
	}
	if s := steps[0]; s.MS != e.Backoff.BaseMS || s.RangeMS != *e.Backoff.BaseRangeMS {
		t.Errorf("first step %+v, want the base %v %v", s, e.Backoff.BaseMS, *e.Backoff.BaseRangeMS)
	}

	// Immediate retries have no schedule to read.
	b = newBuilder()
	chainOf(b, 10, 13, 2, func(rng *rand.Rand, k int) float64 { return 0.1 })
	if s := edge(t, b.infer(), "api", "backend").Backoff.Schedule; s != nil {
		t.Errorf("immediate retries: schedule %+v, want none", s)
	}
}

// TestNoiseAsLargeAsTheWaits: an edge whose single-attempt calls spend
// tens of milliseconds outside the callee (a loaded host, a gRPC channel
// connecting) cannot show whether 20ms waits are jittered: jitter is left
// unknown, not called absent, while the backoff is still read.
func TestNoiseAsLargeAsTheWaits(t *testing.T) {
	b := newBuilder()
	rng := rand.New(rand.NewPCG(4, 4))
	sequential(b, 30, "api", func(root, i int) {
		if i%2 == 0 {
			// One answered call, the client span 10-90ms past its callee's.
			leg := 10 + 80*rng.Float64()
			c := b.client(root, "backend", 1, 2+leg, httpStatus(200))
			b.server(c, "backend", "GET /x", 1+leg/2, 2, httpStatus(200))
		}
		at := 200.0
		for k := 0; k < 3; k++ {
			status := 503
			if k == 2 {
				status = 200
			}
			b.call(root, "backend", "GET /x", at, 2, httpStatus(status))
			at += 2 + 20*float64(int(1)<<k)*(0.8+0.4*rng.Float64())
		}
	})
	bo := edge(t, b.infer(), "api", "backend").Backoff
	if bo.JitterPresent != nil || bo.Jitter != JitterUnknown {
		t.Errorf("jitter %s (present %v) with noise %vms over 16-48ms waits, want unknown", bo.Jitter, bo.JitterPresent != nil && *bo.JitterPresent, bo.NoiseMS)
	}
	if bo.Kind != BackoffExponential {
		t.Errorf("backoff %s, want exponential", bo.Kind)
	}
}

// TestJitterUnderTheEdgesNoise: axios-retry's exponentialDelay waits
// 2^n·100ms plus U[0, 20%) of it (200, 400, 800ms: a one-sided ±1/11
// around 1.1×) on an edge whose network legs vary by 0-4 or 0-8ms each
// way. At the first retry the jitter's 40ms are within three times the
// legs' noise, so three in five waits lie near their median; at the next
// retries they spread past it, as timer noise never does: the waits are
// not unjittered, whatever the first index shows (jittered, or unknown
// where no index spreads enough to name it). The same edge with fixed
// waits still reads none.
func TestJitterUnderTheEdgesNoise(t *testing.T) {
	axios := func(rng *rand.Rand, k int) float64 { return 200 * math.Pow(2, float64(k)) * (1 + 0.2*rng.Float64()) }
	fixed := func(rng *rand.Rand, k int) float64 { return 200*math.Pow(2, float64(k)) + 0.5*rng.Float64() }
	for _, tc := range []struct {
		name    string
		legMS   float64
		retries int
		wait    func(rng *rand.Rand, k int) float64
		none    bool // want none; else anything but none
	}{
		{"axios, legs 0-4ms, 2 retries", 4, 2, axios, false},
		{"axios, legs 0-4ms, 3 retries", 4, 3, axios, false},
		{"axios, legs 0-8ms, 2 retries", 8, 2, axios, false},
		{"axios, legs 0-8ms, 3 retries", 8, 3, axios, false},
		{"fixed, legs 0-4ms, 2 retries", 4, 2, fixed, true},
		{"fixed, legs 0-8ms, 3 retries", 8, 3, fixed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 5; seed++ {
				b := newBuilder()
				rng := rand.New(rand.NewPCG(seed, 11))
				sequential(b, 40, "api", func(root, _ int) {
					at := 10.0
					for k := 0; k <= tc.retries; k++ {
						leg := tc.legMS * rng.Float64()
						status := 503
						if k == tc.retries {
							status = 200
						}
						c := b.client(root, "backend", at, 10+2*leg, httpStatus(status))
						b.server(c, "backend", "GET /x", at+leg, 10, httpStatus(status))
						at += 10 + 2*leg + tc.wait(rng, k)
					}
				})
				bo := edge(t, b.infer(), "api", "backend").Backoff
				if none := bo.Jitter == JitterNone; none != tc.none {
					t.Errorf("seed %d: jitter %s, want none %v (noise %vms; %s)", seed, bo.Jitter, tc.none, bo.NoiseMS, fmtBackoff(bo))
				}
				if bo.Jitter == JitterUnknown && bo.JitterPresent != nil {
					t.Errorf("seed %d: jitter unknown yet present %v", seed, *bo.JitterPresent)
				}
			}
		})
	}
}

// lagger returns how late a busy host (a Node event loop) delays one
// timing after another: most by 1 to 1+small ms, a fifth by lo to hi ms.
func lagger(rng *rand.Rand, small, lo, hi float64) func() float64 {
	return func() float64 {
		if rng.IntN(5) == 0 {
			return lo + (hi-lo)*rng.Float64()
		}
		return 1 + small*rng.Float64()
	}
}

// busyLate is one timing's lag on a busy host: most by a millisecond or
// two, a fifth by 40-150ms.
func busyLate(rng *rand.Rand) float64 { return lagger(rng, 2, 40, 150)() }

// busyChains builds n calls of three attempts on a busy host (busyRetries
// with two retries).
func busyChains(b *builder, n int, seed uint64, wait func(rng *rand.Rand, call, k int) float64, status func(call int) int) {
	busyRetries(b, n, seed, 2, wait, status)
}

// busyRetries builds n calls of retries+1 attempts on a busy host: each
// attempt's client span outlives its server span by busyLate, all but
// the last fail with status(call) (a 503 unless given) and wait
// wait(rng, call, k) before the next.
func busyRetries(b *builder, n int, seed uint64, retries int, wait func(rng *rand.Rand, call, k int) float64, status func(call int) int) {
	rng := rand.New(rand.NewPCG(seed, 11))
	sequential(b, n, "api", func(root, call int) {
		at := 10.0
		for k := 0; k <= retries; k++ {
			leg := busyLate(rng)
			st := 503
			if status != nil {
				st = status(call)
			}
			if k == retries {
				st = 200
			}
			c := b.client(root, "backend", at, 2+leg, httpStatus(st))
			b.server(c, "backend", "GET /x", at+leg/2, 2, httpStatus(st))
			at += 2 + leg
			if k < retries {
				at += wait(rng, call, k)
			}
		}
	})
}

// TestNoiseWithALateTail: on a busy host most network legs vary by a
// millisecond or two while a fifth of them come 40-150ms late. got's
// +U[0,100ms) on 1s ×2 spreads its waits evenly, leaving the floor bare,
// which late timers do not: it is additive jitter, not waits agreeing
// within the tail's noise; unjittered waits delayed like the legs pile at
// their floor and stay unjittered.
func TestNoiseWithALateTail(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wait     func(rng *rand.Rand, call, k int) float64
		jitter   JitterKind
		additive float64
	}{
		{"got: 1s ×2 plus U[0,100ms)", func(rng *rand.Rand, _, k int) float64 {
			return 1000*math.Pow(2, float64(k)) + 100*rng.Float64() + busyLate(rng)/10
		}, JitterAdditive, 100},
		{"unjittered 1s ×2, late like the legs", func(rng *rand.Rand, _, k int) float64 {
			return 1000*math.Pow(2, float64(k)) + busyLate(rng)
		}, JitterNone, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 3; seed++ {
				b := newBuilder()
				busyChains(b, 24, seed, tc.wait, nil)
				bo := edge(t, b.infer(), "api", "backend").Backoff
				if bo.Jitter != tc.jitter || bo.Kind != BackoffExponential {
					t.Fatalf("seed %d: %s, jitter %s, want exponential, %s (%s)", seed, bo.Kind, bo.Jitter, tc.jitter, fmtBackoff(bo))
				}
				if tc.additive > 0 && (bo.JitterAdditiveMS == nil || math.Abs(*bo.JitterAdditiveMS-tc.additive) > 0.25*tc.additive) {
					t.Errorf("seed %d: additive %v, want %v ±25%%", seed, bo.JitterAdditiveMS, tc.additive)
				}
				if bo.NoiseTailMS == nil || *bo.NoiseTailMS <= bo.NoiseMS {
					t.Errorf("seed %d: noise %v, tail %v: want the tail named, wider", seed, bo.NoiseMS, bo.NoiseTailMS)
				}
			}
		})
	}
}

// TestRetryAfterOnABusyHost: a Retry-After: 1 that no span captured,
// where got's schedule waits 2s, fired 70-100ms late by the busy host: as
// late as the edge's timings vary, it is still the server's.
func TestRetryAfterOnABusyHost(t *testing.T) {
	b := newBuilder()
	busyChains(b, 24, 5, func(rng *rand.Rand, call, k int) float64 {
		if call%8 == 0 && k == 1 {
			return 1070 + 30*rng.Float64()
		}
		return 1000*math.Pow(2, float64(k)) + 100*rng.Float64()
	}, func(call int) int {
		if call%8 == 0 {
			return 429
		}
		return 503
	})
	e := edge(t, b.infer(), "api", "backend")
	wantEq(t, "retry-after honoured", e.RetryAfterHonored, 3)
	wantEq(t, "kind", e.Backoff.Kind, "exponential")
}

// TestEqualJitterOnABusyHost: the waits of the cockatiel capture (its
// halfJitterGenerator, U[d/2, d) with d = 128ms·2^n, on a busy Node host),
// by attempt index. A third of the first index's waits lie within the
// bulk's noise of the shortest, as uniform waits may by chance: a bare
// floor still (late timers would pile half or more there), so the spread
// is jitter, and equal jitter. The waits are listed sorted; each index's
// are dealt to the calls in an order of their own, as the capture's calls
// drew them (taken in their sorted order, one call's waits would rise
// together, as only decorrelated jitter's do).
func TestEqualJitterOnABusyHost(t *testing.T) {
	waits := [][]float64{
		{68.8, 71.9, 75.3, 75.5, 75.9, 76.1, 79.1, 79.8, 83.2, 87.2, 93.3, 95.8, 96.2, 103.0, 107.6, 116.9, 117.0, 120.2, 124.5, 129.4, 130.1, 131.2, 243.1},
		{154.7, 162.0, 183.9, 198.2, 201.2, 203.3, 207.6, 212.4, 216.2, 235.7, 236.1, 238.9, 241.7, 292.4},
		{318.7, 325.5, 355.7, 359.9, 383.0, 405.1, 450.0},
	}
	deal := rand.New(rand.NewPCG(13, 13))
	for _, w := range waits {
		deal.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	}
	b := newBuilder()
	leg := lagger(rand.New(rand.NewPCG(12, 12)), 8, 20, 40)
	sequential(b, len(waits[0]), "front", func(root, call int) {
		at := 10.0
		for k := 0; k < len(waits) && call < len(waits[k]); k++ {
			l := leg()
			c := b.client(root, "stock", at, 2+l, httpStatus(503))
			b.server(c, "stock", "GET /stock/:sku", at+l/2, 2, httpStatus(503))
			at += 2 + l + waits[k][call]
		}
		l := leg()
		c := b.client(root, "stock", at, 2+l, httpStatus(200))
		b.server(c, "stock", "GET /stock/:sku", at+l/2, 2, httpStatus(200))
	})
	bo := edge(t, b.infer(), "front", "stock").Backoff
	// Seven waits at the third index, on a host whose timers fire tens of
	// ms late, cannot rule out linear growth (its ceiling 385ms against
	// waits up to 450ms, late ones among them): the kind is exponential
	// or unknown with exponential among its candidates.
	kindOK := bo.Kind == BackoffExponential || bo.Kind == BackoffUnknown && slices.Contains(bo.KindCandidates, BackoffExponential)
	if !kindOK || bo.Jitter != JitterEqual {
		t.Errorf("%s %v, jitter %s, want exponential (or unknown, exponential a candidate), equal (%s)", bo.Kind, bo.KindCandidates, bo.Jitter, fmtBackoff(bo))
	}
	if r := bo.BaseRangeMS; r == nil || r[0] > 128 || r[1] < 128 {
		t.Errorf("base range %v excludes the configured 128ms", r)
	}
}

// TestAfterServerWait: whether a schedule starts over after a server's
// wait or goes on with it is read from the waits that follow one, each
// weighed at the index either reading gives it against the other calls'
// waits there; where both readings fit alike the waits after a server's
// wait are left out of the fit, and where no call waited again after one
// nothing is said.
func TestAfterServerWait(t *testing.T) {
	const unavailable, exhausted = 14, 8
	// pushed builds calls that fail UNAVAILABLE, are pushed back 400ms
	// after their second attempt, then fail twice more: the waits after
	// the pushback drawn by grpcBackoff from index from(k) (k the
	// attempt).
	pushed := func(b *builder, n int, seed uint64, from func(k int) int) {
		grpcCalls(b, n, seed, []int{unavailable, exhausted, unavailable, unavailable}, func(rng *rand.Rand, k, code int) float64 {
			if code == exhausted {
				return 400 + rng.Float64()
			}
			return grpcBackoff(rng, from(k))
		})
	}
	schedule := func(b *builder) {
		grpcCalls(b, 12, 1, []int{unavailable}, func(rng *rand.Rand, k, _ int) float64 { return grpcBackoff(rng, k) })
		grpcCalls(b, 10, 2, []int{unavailable, unavailable}, func(rng *rand.Rand, k, _ int) float64 { return grpcBackoff(rng, k) })
		grpcCalls(b, 10, 3, []int{unavailable, unavailable, unavailable, unavailable}, func(rng *rand.Rand, k, _ int) float64 { return grpcBackoff(rng, k) })
	}
	// got's rule scaled to fit the test's requests, 100·2^k + U[0,10ms),
	// after a Retry-After: 1 before the second attempt (off the schedule
	// there, 100-110ms).
	got := func(rng *rand.Rand, k int) float64 { return 100*math.Pow(2, float64(k)) + 10*rng.Float64() }
	throttled := func(b *builder, n int, seed uint64, from func(k int) int) {
		chainOf(b, n, seed, 3, func(rng *rand.Rand, k int) float64 {
			if k == 0 {
				return 1000.4 + rng.Float64()
			}
			return got(rng, from(k))
		}, httpStatus(429))
	}
	for _, tc := range []struct {
		name  string
		build func(b *builder)
		want  AfterServerWait // "" for none said
		// base, mult: the schedule the fit must read.
		base, mult float64
	}{
		{"grpc-go: the backoff starts over after a pushback", func(b *builder) {
			schedule(b)
			pushed(b, 5, 4, func(k int) int { return max(k-2, 0) })
		}, ScheduleRestarts, 25, 2},
		{"a gRPC client that goes on with its backoff after a pushback", func(b *builder) {
			schedule(b)
			pushed(b, 5, 4, func(k int) int { return k })
		}, ScheduleContinues, 25, 2},
		{"got: the schedule goes on after a Retry-After", func(b *builder) {
			chainOf(b, 20, 5, 3, got)
			throttled(b, 4, 6, func(k int) int { return k })
		}, ScheduleContinues, 100, 2},
		{"an HTTP client that starts over after a Retry-After", func(b *builder) {
			chainOf(b, 20, 5, 3, got)
			throttled(b, 4, 6, func(k int) int { return k - 1 })
		}, ScheduleRestarts, 100, 2},
		{"a constant schedule: both readings fit alike", func(b *builder) {
			grpcCalls(b, 20, 7, []int{unavailable, unavailable, unavailable}, func(rng *rand.Rand, _, _ int) float64 { return 50 * (0.8 + 0.4*rng.Float64()) })
			grpcCalls(b, 5, 8, []int{unavailable, exhausted, unavailable}, func(rng *rand.Rand, _, code int) float64 {
				if code == exhausted {
					return 400 + rng.Float64()
				}
				return 50 * (0.8 + 0.4*rng.Float64())
			})
		}, ScheduleUnknown, 50, 0},
		{"no wait after a server's wait", func(b *builder) {
			schedule(b)
			grpcCalls(b, 4, 9, []int{exhausted}, func(rng *rand.Rand, _, _ int) float64 { return 400 + rng.Float64() })
		}, "", 25, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			tc.build(b)
			bo := edge(t, b.infer(), "api", "backend").Backoff
			ev := bo.AfterServerWaitEvidence
			switch {
			case bo.AfterServerWait != tc.want:
				t.Errorf("after a server's wait: %q, want %q (%+v)", bo.AfterServerWait, tc.want, ev)
			case tc.want == "" && ev != nil:
				t.Errorf("evidence %+v where no wait followed a server's", *ev)
			case tc.want != "" && (ev == nil || ev.Waits == 0 || ev.Judged > ev.Waits || ev.Restart+ev.Continue > ev.Judged):
				t.Errorf("evidence %+v", ev)
			case tc.want == ScheduleRestarts && ev.Restart <= ev.Continue, tc.want == ScheduleContinues && ev.Continue <= ev.Restart:
				t.Errorf("%s with more waits for the other reading: %+v", tc.want, *ev)
			case tc.want != ScheduleUnknown && tc.want != "" && ev.Ratio < kindEvidenceRatio:
				t.Errorf("%s claimed at a ratio of %v", tc.want, ev.Ratio)
			}
			if math.Abs(bo.BaseMS-tc.base) > 0.15*tc.base {
				t.Errorf("base %vms, want %vms (%s)", bo.BaseMS, tc.base, fmtBackoff(bo))
			}
			if tc.mult > 0 && (bo.MultiplierRange == nil || bo.MultiplierRange[0] > tc.mult || bo.MultiplierRange[1] < tc.mult) {
				t.Errorf("multiplier range %v, want it to hold ×%v (%s)", bo.MultiplierRange, tc.mult, fmtBackoff(bo))
			}
		})
	}
}

// TestAfterServerWaitSweep holds the reading of what a schedule does
// after a server's wait to schedules of other libraries than the
// samples': exponential 20ms ×2 with no, ±20%, full, equal and
// +U[0,15ms) jitter (heldOutJitters), restarting or continuing after a
// 400ms pushback on the second attempt, with 1, 3 or 6 calls pushed back
// among 30 that are not, four seeds each: 120 edges. A wrong reading may
// be claimed on at most 2% of them; the right one must be claimed on at
// least half.
func TestAfterServerWaitSweep(t *testing.T) {
	const unavailable, exhausted = 14, 8
	right, wrong, unknown := 0, 0, 0
	for _, j := range heldOutJitters {
		before := right
		wait := func(rng *rand.Rand, k int) float64 { return j.of(rng, 20*math.Pow(2, float64(k))) + 0.6*rng.Float64() }
		for _, restarts := range []bool{true, false} {
			for _, pushed := range []int{1, 3, 6} {
				for seed := uint64(1); seed <= 4; seed++ {
					b := newBuilder()
					grpcCalls(b, 10, seed*7, []int{unavailable}, func(rng *rand.Rand, k, _ int) float64 { return wait(rng, k) })
					grpcCalls(b, 10, seed*7+1, []int{unavailable, unavailable}, func(rng *rand.Rand, k, _ int) float64 { return wait(rng, k) })
					grpcCalls(b, 10, seed*7+2, []int{unavailable, unavailable, unavailable, unavailable}, func(rng *rand.Rand, k, _ int) float64 { return wait(rng, k) })
					grpcCalls(b, pushed, seed*7+3, []int{unavailable, exhausted, unavailable, unavailable}, func(rng *rand.Rand, k, code int) float64 {
						switch {
						case code == exhausted:
							return 400 + rng.Float64()
						case restarts && k > 1:
							return wait(rng, k-2)
						}
						return wait(rng, k)
					})
					bo := edge(t, b.infer(), "api", "backend").Backoff
					want := ScheduleContinues
					if restarts {
						want = ScheduleRestarts
					}
					switch bo.AfterServerWait {
					case want:
						right++
					case ScheduleUnknown, "":
						unknown++
					default:
						wrong++
						t.Logf("%s jitter, restarts %v, %d pushed, seed %d: %s %+v", j.name, restarts, pushed, seed, bo.AfterServerWait, bo.AfterServerWaitEvidence)
					}
				}
			}
		}
		t.Logf("%s jitter: %d of 24 right", j.name, right-before)
	}
	edges := right + wrong + unknown
	t.Logf("%d edges: %d the right reading, %d a wrong one, %d unknown", edges, right, wrong, unknown)
	if wrong*50 > edges || 2*right < edges {
		t.Errorf("%d edges: %d right, %d wrong: want at most 2%% wrong and at least half right", edges, right, wrong)
	}
}

// TestImmediateWithFewWaits: with few waits two late timers are more than
// the tenth the immediate rule allows; the retries are immediate still
// where every attempt index's median wait is under immediateMS and no wait
// is longer than the edge's noise allows a wait of nothing. A jitter, or a
// later index that waits, keeps them from it.
func TestImmediateWithFewWaits(t *testing.T) {
	for _, tc := range []struct {
		name        string
		gaps        [][]float64
		noise, bulk float64
		immediate   bool
	}{
		{"two late waits of 8 within a noisy edge's tail", [][]float64{{0.1, 0.2, 0, 0.3, 4.5, 0.1}, {0.2, 10.3}}, 7, 1, true},
		{"the same waits on a quiet edge: 10ms is no timer's lateness", [][]float64{{0.1, 0.2, 0, 0.3, 4.5, 0.1}, {0.2, 10.3}}, 0.5, 0.2, false},
		{"immediate first retry, then a wait", [][]float64{{0.1, 0.2, 0, 0.3, 0.4, 0.1}, {100, 102}}, 7, 1, false},
		{"a jitter up to 4ms: its median is past immediateMS", [][]float64{{0.3, 1.2, 2.5, 3.7, 0.8, 2.9}}, 7, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gaps := make([][]float64, len(tc.gaps))
			for k, g := range tc.gaps {
				gaps[k] = slices.Clone(g)
			}
			b := inferBackoff(gaps, nil, tc.noise, tc.bulk, 0)
			if got := b.Kind == BackoffImmediate; got != tc.immediate {
				t.Errorf("backoff %s, immediate %v; want immediate %v", b.Kind, got, tc.immediate)
			}
		})
	}
}

// TestGrowsThroughSteps: a multiplier is stated only where one schedule
// base·m^k passes through every step's range; nice-grpc's equal-jitter
// ceilings 50, 100, 200 and a cap at 300 (ranges as one capture read
// them) fit neither ×1.75, which the first and last steps give, nor ×2.
func TestGrowsThroughSteps(t *testing.T) {
	capped := [][2]float64{{42.2, 58.1}, {83.7, 110.6}, {183.6, 255.3}, {219, 343.4}}
	for _, tc := range []struct {
		name   string
		m      float64
		steps  [][2]float64
		oMax   float64
		passes bool
	}{
		{"×2 through 50, 100, 200, 400", 2, [][2]float64{{45, 55}, {90, 110}, {180, 220}, {360, 440}}, 0, true},
		{"×1.75 misses the third step of a schedule capped at the fourth", 1.75, capped, 0, false},
		{"×2 misses the capped fourth step", 2, capped, 0, false},
		{"an overhead every wait shares lets the steps through", 2, [][2]float64{{55, 60}, {105, 110}, {205, 210}}, 5, true},
		{"without it they grow by less than ×2", 2, [][2]float64{{55, 60}, {105, 110}, {205, 210}}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := make([]float64, len(tc.steps)), make([]float64, len(tc.steps))
			for k, s := range tc.steps {
				lo[k], hi[k] = s[0], s[1]
			}
			wantEq(t, "grows through the steps", growsThroughSteps(tc.m, lo, hi, tc.oMax), tc.passes)
		})
	}
}

// TestBestQuarter: where several quarter multipliers pass through every
// step, the one that fits the steps best is stated, not the one nearest
// the first-to-last growth: nice-grpc's equal-jitter ceilings (×2 from
// 50ms, capped at 300 at the fourth step, as one capture read them) grew
// ×1.83 first to last, rounded to ×1.75.
func TestBestQuarter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fit    float64
		lo, hi float64
		steps  [][3]float64 // the step's reading and its range
		want   float64
	}{
		{"×2 with a cap the last step hides", 1.75, 1.7, 2.23,
			[][3]float64{{51.0, 40.2, 58.3}, {98.8, 83.6, 114.1}, {203.9, 173.0, 249.7}, {314.7, 277.2, 456.0}}, 2},
		{"×1.5 among ranges wide enough for ×1.75", 1.5, 1.4, 1.8,
			[][3]float64{{50, 40, 60}, {75, 60, 95}, {112.5, 90, 150}, {168.8, 130, 230}}, 1.5},
		{"one quarter passes: the fit stands", 2, 1.9, 2.1,
			[][3]float64{{50, 48, 52}, {100, 97, 103}, {200, 195, 205}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sched, lo, hi []float64
			for _, s := range tc.steps {
				sched, lo, hi = append(sched, s[0]), append(lo, s[1]), append(hi, s[2])
			}
			wantEq(t, "multiplier", bestQuarter(tc.fit, tc.lo, tc.hi, sched, lo, hi, 0), tc.want)
		})
	}
}

// TestUndecidedJitterRanges: six calls on a busy host (a late tail in the
// edge's timings) are too few to tell whether their waits are jittered.
// Where they spread beyond the edge's noise, as async-retry's keyed POSTs
// did (U[1,2) times 50·3ⁿ ms: equal jitter under ceilings of 100 and
// 300ms), the steps are read at the waits' median and each range must
// hold the ceiling too, as an unnamed jitter's does (reaching
// 100^(1/6) = 2.15 times past the longest wait; those POSTs read
// 129–191ms for 300); unjittered waits that agree are not read as
// jittered, and their ranges hold the schedule.
func TestUndecidedJitterRanges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		waits   [2][6]float64 // by retry, dealt to the calls in order
		want    [2]float64    // the configured figure at each step
		widened bool
	}{
		{"equal jitter under 100, 300ms", [2][6]float64{{56.1, 88.3, 64.1, 98.0, 73.0, 55.9}, {245.1, 161.4, 201.4, 170.2, 288.0, 166.3}}, [2]float64{100, 300}, true},
		{"unjittered 100, 300ms", [2][6]float64{{100.4, 100.1, 100.9, 100.3, 100.6, 100.2}, {300.2, 300.8, 300.1, 300.5, 300.3, 300.9}}, [2]float64{100, 300}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			busyChains(b, 6, 3, func(_ *rand.Rand, call, k int) float64 { return tc.waits[k][call] }, nil)
			bo := edge(t, b.infer(), "api", "backend").Backoff
			switch {
			case tc.widened && bo.JitterPresent != nil:
				t.Errorf("jitter present %v, want it undecided on six waits a busy host's tail could spread (%s)", *bo.JitterPresent, fmtBackoff(bo))
			case !tc.widened && bo.JitterPresent != nil && *bo.JitterPresent:
				t.Errorf("unjittered waits read as jittered (%s)", fmtBackoff(bo))
			}
			if len(bo.Schedule) != 2 {
				t.Fatalf("schedule %+v, want two steps", bo.Schedule)
			}
			for k, s := range bo.Schedule {
				top := slices.Max(tc.waits[k][:])
				switch {
				case s.RangeMS[0] > tc.want[k] || s.RangeMS[1] < tc.want[k]:
					t.Errorf("step %d range %v excludes %vms (%s)", k+1, s.RangeMS, tc.want[k], fmtBackoff(bo))
				case tc.widened && s.RangeMS[1] < 2*top:
					t.Errorf("step %d range %v: want it widened past twice the longest wait %vms", k+1, s.RangeMS, top)
				}
			}
		})
	}
}
