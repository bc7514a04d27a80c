package graph

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// calls lays out n calls of an edge: call i starts at startMS(i), lasts
// durMS(i), and fails if failing says so of it (start, answer time, both
// ms). It returns the first attempts as episodeSpans reads them: their
// starts (ns), sorted, and whether each failed.
func calls(n int, startMS, durMS func(i int) float64, failing func(start, answer float64) bool) ([]int64, []bool) {
	type call struct {
		at     int64
		failed bool
	}
	cs := make([]call, n)
	for i := range cs {
		s := startMS(i)
		cs[i] = call{int64(s * 1e6), failing(s, s+durMS(i))}
	}
	slices.SortStableFunc(cs, func(a, b call) int { return cmpInt64(a.at, b.at) })
	at, failed := make([]int64, n), make([]bool, n)
	for i, c := range cs {
		at[i], failed[i] = c.at, c.failed
	}
	return at, failed
}

// down is a callee that fails every call it answers within one of the
// windows [from, to) (ms).
func down(windows ...[2]float64) func(start, answer float64) bool {
	return func(_, answer float64) bool {
		for _, w := range windows {
			if answer >= w[0] && answer < w[1] {
				return true
			}
		}
		return false
	}
}

// TestEpisodeSpans: failure episodes are found at the attempts' own time
// scale, where the failure rate changes. A callee down for 200 ms among
// calls every 3 ms (Poisson) is one episode of about 200 ms whether calls
// overlap or not: with calls of D ms (±50%, so calls that fail and
// calls that succeed interleave near its ends), the calls that fail are
// those that start D earlier, and the episode moves with them. Two
// outages are two episodes; 10% of calls failing independently is none
// (over twenty draws); a slow ramp is an episode only where most calls
// fail, and ends with the sequence.
func TestEpisodeSpans(t *testing.T) {
	type want struct{ start, end, tol float64 } // ms
	poisson := func(seed uint64, meanMS float64) func(int) float64 {
		rng := rand.New(rand.NewPCG(seed, 1))
		at := 0.0
		return func(int) float64 { at += rng.ExpFloat64() * meanMS; return at }
	}
	spread := func(seed uint64, d float64) func(int) float64 {
		rng := rand.New(rand.NewPCG(seed, 2))
		return func(int) float64 { return d * (0.5 + rng.Float64()) }
	}
	every := func(gap float64) func(int) float64 { return func(i int) float64 { return float64(i) * gap } }
	constant := func(d float64) func(int) float64 { return func(int) float64 { return d } }
	for _, tc := range []struct {
		name    string
		n       int
		start   func(int) float64
		dur     func(int) float64
		failing func(start, answer float64) bool
		want    []want
	}{
		{"200 ms outage, calls one after another", 400, every(3), constant(1), down([2]float64{500, 700}), []want{{499, 699, 3}}},
		{"200 ms outage, 5 calls in flight", 400, poisson(1, 3), spread(1, 15), down([2]float64{500, 700}), []want{{485, 685, 10}}},
		{"200 ms outage, 20 calls in flight", 400, poisson(2, 3), spread(2, 60), down([2]float64{500, 700}), []want{{440, 640, 32}}},
		{"two outages: 250 ms and 60 ms", 400, every(3), constant(1), down([2]float64{200, 450}, [2]float64{900, 960}), []want{{199, 449, 3}, {899, 959, 3}}},
		{"an outage of 30 calls amid 10% failures", 1000, every(3), constant(1), func(start, answer float64) bool {
			return answer >= 1500 && answer < 1590 || rand.New(rand.NewPCG(uint64(start), 3)).Float64() < 0.1
		}, []want{{1499, 1589, 3}}},
		{"every call fails", 300, every(3), constant(1), func(float64, float64) bool { return true }, nil},
		{"no call fails", 300, every(3), constant(1), func(float64, float64) bool { return false }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, failed := calls(tc.n, tc.start, tc.dur, tc.failing)
			got := episodeSpans(at, failed, nil, nil)
			if len(got) != len(tc.want) {
				t.Fatalf("%d episodes %v; want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				s, e := float64(got[i].start)/1e6, float64(got[i].end)/1e6
				if math.Abs(s-w.start) > w.tol || math.Abs(e-w.end) > w.tol {
					t.Errorf("episode %d: %.1f–%.1f ms; want %g–%g ms ±%g", i, s, e, w.start, w.end, w.tol)
				}
			}
		})
	}
}

// TestNoEpisodesInNoise: 10% of calls failing independently, and a
// quarter, give no episode in any of twenty draws.
func TestNoEpisodesInNoise(t *testing.T) {
	for _, p := range []float64{0.1, 0.25} {
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 4))
			at, failed := calls(2000, func(i int) float64 { return float64(i) * 3 }, func(int) float64 { return 1 },
				func(float64, float64) bool { return rng.Float64() < p })
			if eps := episodeSpans(at, failed, nil, nil); len(eps) > 0 {
				t.Errorf("%.0f%% failing independently, draw %d: episodes %v; want none", 100*p, seed, eps)
			}
		}
	}
}

// TestEpisodeRamp: a callee failing more and more often, from none of the
// calls to all of them, is a staircase of pieces: the episodes are where
// most calls fail, never before a quarter of them do, and they run to the
// end of the sequence.
func TestEpisodeRamp(t *testing.T) {
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 5))
		const n = 1000
		at, failed := calls(n, func(i int) float64 { return float64(i) }, func(int) float64 { return 1 },
			func(start, _ float64) bool { return rng.Float64() < start/n })
		eps := episodeSpans(at, failed, nil, nil)
		if len(eps) == 0 {
			t.Fatalf("draw %d: no episode on a ramp to every call failing", seed)
		}
		if s := float64(eps[0].start) / 1e6; s < 0.25*n {
			t.Errorf("draw %d: the first episode starts at %.0f ms, where %.0f%% of calls fail; want it where more than a quarter do", seed, s, 100*s/n)
		}
		if e := float64(eps[len(eps)-1].end) / 1e6; e < n-1 {
			t.Errorf("draw %d: the last episode ends at %.0f ms, before the last call at %d ms", seed, e, n-1)
		}
	}
}

// TestSplitByRetries: an episode is cut where the retries that started in
// it change: early retries succeed, later ones fail.
func TestSplitByRetries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		retry  func(i int) bool // retry i (every 10 ms from 100 ms) failed
		pieces []episodeSpan
	}{
		{"retries succeed, then fail", func(i int) bool { return i >= 10 }, []episodeSpan{{100e6, 195e6}, {195e6, 300e6}}},
		{"retries fail throughout", func(int) bool { return true }, []episodeSpan{{100e6, 300e6}}},
	} {
		var rs []int64
		var failed []bool
		// Retries before and after the episode count for nothing in it.
		for i := -5; i < 25; i++ {
			rs = append(rs, int64(100+10*i)*1e6)
			failed = append(failed, i < 0 || i >= 20 || tc.retry(i))
		}
		got := splitByRetries([]episodeSpan{{100e6, 300e6}}, rs, failed)
		if !slices.Equal(got, tc.pieces) {
			t.Errorf("%s: pieces %v; want %v", tc.name, got, tc.pieces)
		}
	}
}

// TestChangePoints: the change points of short hand-made sequences, at
// the penalty ln(n/EpisodeAlpha).
func TestChangePoints(t *testing.T) {
	seq := func(parts ...any) []bool {
		var out []bool
		for i := 0; i < len(parts); i += 2 {
			for range parts[i].(int) {
				out = append(out, parts[i+1].(bool))
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		failed []bool
		want   []int
	}{
		{"20 failures amid 100 successes", seq(50, false, 20, true, 50, false), []int{50, 70}},
		// Three failures together among 103 calls: 101 of the C(103,3) =
		// 176,851 ways to place them are together, 5.7e-4, below
		// EpisodeAlpha; two together among 102: 101 of 5,151, 0.02.
		{"3 failures in a row amid 100 successes", seq(50, false, 3, true, 50, false), []int{50, 53}},
		{"2 failures in a row amid 100 successes: too few to tell", seq(50, false, 2, true, 50, false), nil},
		{"empty", nil, nil},
		{"one attempt", []bool{true}, nil},
	} {
		if got := changePoints(tc.failed); !slices.Equal(got, tc.want) {
			t.Errorf("%s: change points %v; want %v", tc.name, got, tc.want)
		}
	}
	// A flaky stretch, every other call failing, then an outage.
	var flaky []bool
	flaky = append(flaky, seq(40, false)...)
	for i := range 60 {
		flaky = append(flaky, i%2 == 0)
	}
	flaky = append(flaky, seq(40, false, 20, true, 40, false)...)
	if got, want := changePoints(flaky), []int{40, 99, 140, 160}; !slices.Equal(got, want) {
		t.Errorf("flaky stretch then an outage: change points %v; want %v", got, want)
	}
}

// TestEpisodeBoundsFromRetries: an episode's ends are placed between the
// last attempt of any kind that showed the callee failing and the first
// that showed it answering, halfway. First attempts every 10 ms fail from
// 100 to 200 ms (the piece [100, 200]); a breaker then holds them back,
// and the next first attempt comes at 300 ms, a success.
func TestEpisodeBoundsFromRetries(t *testing.T) {
	var at []int64
	var failed []bool
	for ms := 0; ms <= 400; ms += 10 {
		if ms > 200 && ms < 300 {
			continue // held back by the breaker
		}
		at, failed = append(at, int64(ms)*1e6), append(failed, ms >= 100 && ms <= 200)
	}
	type retry struct {
		ms     float64
		failed bool
	}
	for _, tc := range []struct {
		name       string
		retries    []retry
		start, end float64 // ms
	}{
		// Halfway from the last failed first attempt to the next one.
		{"no retries", nil, 95, 250},
		// Retries failing at 220 and 240 ms show the callee still down:
		// the end lies between 240 and the first attempt at 300.
		{"retries failed after the last first attempt", []retry{{220, true}, {240, true}}, 95, 270},
		// A retry answered at 230 bounds it sooner: between 220 and 230.
		{"a retry answered before the next first attempt", []retry{{220, true}, {230, false}, {240, true}}, 95, 225},
		// A retry answered right after the piece: the end is before it.
		{"a retry answered at once", []retry{{205, false}, {240, true}}, 95, 202.5},
		// A retry answered at 96 ms, after the first attempt at 90:
		// the beginning lies between 96 and 100.
		{"a retry answered before the first failure", []retry{{96, false}}, 98, 250},
		// A retry failing at 94 ms, before the piece's first failed
		// first attempt: the callee failed from between 90 and 94 on.
		{"a retry failed before the first failure", []retry{{94, true}}, 92, 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs []int64
			var rFailed []bool
			for _, r := range tc.retries {
				rs, rFailed = append(rs, int64(r.ms*1e6)), append(rFailed, r.failed)
			}
			eps := episodeSpans(at, failed, rs, rFailed)
			if len(eps) != 1 {
				t.Fatalf("episodes %v; want one", eps)
			}
			if got := [2]float64{float64(eps[0].start) / 1e6, float64(eps[0].end) / 1e6}; got != [2]float64{tc.start, tc.end} {
				t.Errorf("episode %v ms; want [%g, %g]", got, tc.start, tc.end)
			}
		})
	}
}

// TestEpisodeFromArrivals: inference places each attempt where it reached
// the callee and ends an episode by the retries too. inventory is down
// (503 after 4 ms) for requests arriving in [100, 200) ms; a request every
// 5 ms until 145 ms, then none until 280 (a breaker held them), each
// call's attempts 30 ms apart; the third attempt of the call of 140 ms is
// sent at 197 ms and queued until 201, after the outage, and succeeds.
// The episode starts between the last first attempt answered (95.05 ms)
// and the first that failed (100.05), and ends between the last failed
// retry (195.05) and that answered retry's arrival (201): 97.55–198.025
// ms. From first attempts alone it ended at 212.55 (halfway to the next
// first attempt at 280.05); from send times, at 196.
func TestEpisodeFromArrivals(t *testing.T) {
	b := newBuilder()
	down := func(arrival float64) bool { return arrival >= 100 && arrival < 200 }
	starts := []float64{}
	for ms := 0.0; ms <= 145; ms += 5 {
		starts = append(starts, ms)
	}
	for ms := 280.0; ms <= 400; ms += 5 {
		starts = append(starts, ms)
	}
	for _, t0 := range starts {
		b.newTrace()
		root := b.server(-1, "api", "GET /orders", t0, 80)
		for k := range 3 {
			sent := t0 + 30*float64(k)
			arrival := sent + 0.05
			if t0 == 140 && k == 2 {
				sent, arrival = 197, 201
			}
			code, dur := 200, 1.0
			if down(arrival) {
				code, dur = 503, 4.0
			}
			c := b.client(root, "inventory", sent, arrival-sent+dur+0.05, httpStatus(code))
			b.server(c, "inventory", "GET /stock", arrival, dur, httpStatus(code))
			if code == 200 {
				break
			}
		}
	}
	top, err := Infer(context.Background(), b.set)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top.Edges {
		if e.Caller != "api" {
			continue
		}
		if e.Outcomes == nil || len(e.Outcomes.Incidents) != 1 {
			t.Fatalf("api → inventory: outcomes %+v; want one episode", e.Outcomes)
		}
		inc := e.Outcomes.Incidents[0]
		if inc.StartMS != 97.55 || inc.EndMS != 198.025 {
			t.Errorf("episode %g–%g ms; want 97.55–198.025", inc.StartMS, inc.EndMS)
		}
		if inc.First.ServerError != 10 || inc.Retry.ServerError != 18 || inc.Retry.OK != 0 {
			t.Errorf("episode's first attempts %+v, retries %+v; want 10 and 18 failed, no retry answered", inc.First, inc.Retry)
		}
		return
	}
	t.Fatal("no api → inventory edge")
}
