package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat/distuv"
	"testing"
)

// TestCeilingOf measures ceilingOf's bias and the coverage of its 99%
// range on synthetic full- and equal-jitter waits (ceiling 100), from 5
// to 500 waits, on time and with late timers: one wait, or as many as it
// tolerates (⌈5%⌉), fired late by half to twice the ceiling, far past it.
// On time it is unbiased (within 1%); late, every estimate stays within
// its stated error bound, the mean within x's where the late waits are
// seen apart, and the range still holds the ceiling 99% of the time,
// while the longest wait, the estimate it replaces, is thrown far off
// (the case a loaded host makes). With 5 or 10 waits a late one cannot
// be seen apart from jitter: the estimate may be far off (the test logs
// by how much), the range still holds the ceiling.
func TestCeilingOf(t *testing.T) {
	const ceiling, trials = 100.0, 2000
	type late int
	const (
		onTime late = iota
		oneLate
		toleratedLate // ⌈lateShare·n⌉ waits late
	)
	for _, kind := range []struct {
		name  string
		floor float64 // a: waits uniform over [a·C, C]
	}{{"full", 0}, {"equal", 0.5}} {
		for _, n := range []int{5, 10, 20, 50, 100, 500} {
			for _, l := range []late{onTime, oneLate, toleratedLate} {
				name := map[late]string{onTime: "on time", oneLate: "one late", toleratedLate: "5% late"}[l]
				t.Run(kind.name+"/"+name+"/"+strconv.Itoa(n), func(t *testing.T) {
					j := min(max(1, int(math.Ceil(lateShare*float64(n)))), n-2)
					m := map[late]int{onTime: 0, oneLate: 1, toleratedLate: j}[l]
					rng := rand.New(rand.NewPCG(uint64(n), uint64(l)))
					// The stated bound on any one estimate, up to j late:
					// x's estimate, or the longest wait's where no late
					// one stood apart (within x/t* of the floor).
					a, r := kind.floor, float64(n-j)
					tStar := distuv.Beta{Alpha: r - 1, Beta: float64(j)}.Quantile(lateAlpha)
					worst := max(1/(a+(1-a)*r/float64(n+1)), 1/(tStar*(a+(1-a)*float64(n)/float64(n+1))))
					var sum, sumSq, naive float64
					covered := 0
					g := make([]float64, n)
					for range trials {
						for i := range g {
							g[i] = ceiling * (kind.floor + (1-kind.floor)*rng.Float64())
							if i < m {
								g[i] += ceiling * (0.5 + 1.5*rng.Float64())
							}
						}
						slices.Sort(g)
						c, lo, hi := ceilingOf(g, kind.floor)
						if c < lo || c > hi {
							t.Fatalf("estimate %v outside its own range [%v, %v]", c, lo, hi)
						}
						if c > worst*ceiling {
							t.Fatalf("estimate %v above its error bound %v·C (%v)", c, worst, g)
						}
						if lo <= ceiling && ceiling <= hi {
							covered++
						}
						sum += c / ceiling
						sumSq += (c / ceiling) * (c / ceiling)
						naive += g[n-1] / (kind.floor + (1-kind.floor)*float64(n)/float64(n+1)) / ceiling
					}
					mean := sum / trials
					sd := math.Sqrt(sumSq/trials - mean*mean)
					bias, naiveBias := mean-1, naive/trials-1
					coverage := float64(covered) / trials
					t.Logf("n %3d, %d late: bias %+.3f (sd %.3f), coverage %.4f; the longest wait's bias %+.3f", n, m, bias, sd, coverage, naiveBias)
					// The range holds C at least 99.5% of the time whatever
					// up to j late waits did; 2000 trials err by 0.16%.
					if coverage < 0.985 {
						t.Errorf("coverage %.4f, want 99%%", coverage)
					}
					// On average (3 standard errors of the mean): on time,
					// unbiased but for the one time in 100 (lateAlpha) the
					// longest wait stands apart by chance and x's estimate,
					// lower, is taken; late, where the late waits are seen
					// apart (n ≥ 20 here), within x's worst, (n+1)/(n−j).
					tol := 3 * sd / math.Sqrt(trials)
					switch {
					case m == 0 && math.Abs(bias) > 0.01+tol:
						t.Errorf("on time: bias %+.3f, want within 1%% (±%.3f)", bias, tol)
					case m > 0 && n >= 20 && bias > float64(n+1)/r-1+tol:
						t.Errorf("%d late: bias %+.3f, want at most %.3f (±%.3f)", m, bias, float64(n+1)/r-1, tol)
					}
					if m > 0 && n >= 20 && naiveBias < 0.2 {
						t.Errorf("the longest wait's bias %+.3f with %d late: the case does not test lateness", naiveBias, m)
					}
				})
			}
		}
	}
}

// TestCeilingFromMedian: a ceiling read from the longest waits stands
// unless it lies above what their median reads by more than the median's
// error: four timers fired 2–23ms late at the top of 25 equal-jitter
// waits (a busy host's tail, too gradual to stand apart from the rest)
// would set it a fifth above the configured 50ms, and its range above it.
// Two standing apart are ceilingOf's own to set aside.
func TestCeilingFromMedian(t *testing.T) {
	even := func(n int, lo, hi float64) []float64 {
		g := make([]float64, n)
		for i := range g {
			g[i] = lo + (hi-lo)*(float64(i)+0.5)/float64(n)
		}
		return g
	}
	lateTop, apart := even(25, 25, 50), even(25, 25, 50)
	copy(lateTop[21:], []float64{52, 56, 62, 73})
	apart[23], apart[24] = 58.7, 72.9
	for _, tc := range []struct {
		name     string
		g        []float64
		floor    float64
		late     bool
		min, max float64 // where the ceiling read must lie
	}{
		{"equal jitter, no late waits", even(25, 25, 50), 0.5, false, 48, 52},
		{"equal jitter, a late tail at the top", lateTop, 0.5, true, 45, 55},
		{"equal jitter, two late timers standing apart", apart, 0.5, false, 45, 55},
		{"full jitter, no late waits", even(20, 0, 100), 0, false, 95, 105},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := ceilingOf(tc.g, tc.floor)
			cm, late := ceilingFromMedian(c, quantile(tc.g, 0.5), tc.floor, float64(len(tc.g)))
			wantEq(t, "late", late, tc.late)
			if late {
				c = cm
			}
			if c < tc.min || c > tc.max {
				t.Errorf("ceiling %.1f, want %g–%g", c, tc.min, tc.max)
			}
		})
	}
}
