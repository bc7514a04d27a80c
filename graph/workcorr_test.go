package graph

import (
	"math"
	"path/filepath"
	"testing"
)

func TestSlowSplit(t *testing.T) {
	// levels builds 101 quantiles from groups of (count, value).
	levels := func(groups ...[2]float64) []float64 {
		var q []float64
		for _, g := range groups {
			for range int(g[0]) {
				q = append(q, g[1])
			}
		}
		return q
	}
	cases := []struct {
		name   string
		q      []float64
		ok     bool
		lo, hi float64 // above must lie in (lo, hi)
	}{
		{"fast and slow modes", levels([2]float64{70, 0.05}, [2]float64{31, 250}), true, 0.05, 250},
		{"fast tens of microseconds, a 40ms and a 250ms mode", levels([2]float64{30, 0.01}, [2]float64{30, 0.08}, [2]float64{10, 40}, [2]float64{31, 250}), true, 0.08, 40},
		{"a slow mode of a tenth", levels([2]float64{91, 2}, [2]float64{10, 100}), true, 2, 100},
		{"all alike", levels([2]float64{101, 3}), false, 0, 0},
		{"even spread splits inside it", func() []float64 {
			q := make([]float64, 101)
			for i := range q {
				q[i] = math.Exp(float64(i) / 20)
			}
			return q
		}(), true, math.Exp(1), math.Exp(4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			above, ok := slowSplit(c.q)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v", ok, c.ok)
			}
			if ok && !(above > c.lo && above < c.hi) {
				t.Errorf("split above %g, want between %g and %g", above, c.lo, c.hi)
			}
		})
	}
}

func TestWorkCorrelationVerdict(t *testing.T) {
	// pairs counts n calls of each shape: a first attempt slow or not,
	// then a second after it slow or not.
	type shape struct {
		n                     int
		firstSlow, secondSlow bool
		second                bool
	}
	type counted struct {
		wp *workPairs
		w  *attemptWork
	}
	pairs := func(shapes ...shape) counted {
		c := counted{&workPairs{}, &attemptWork{}}
		work := func(slow bool) float64 {
			if slow {
				return 50
			}
			return 1
		}
		for _, s := range shapes {
			for range s.n {
				c.w[0].add(work(s.firstSlow))
				if s.second {
					c.wp.tries.count(1, s.firstSlow, s.secondSlow)
					c.w[1].add(work(s.secondSlow))
				}
			}
		}
		return c
	}
	cases := []struct {
		name    string
		c       counted
		verdict string // "" for nil
		pBelow  float64
	}{
		{"per request: slow stays slow", pairs(shape{20, true, true, true}, shape{20, false, false, true}, shape{40, false, false, false}),
			WorkCorrelated, CorrelationAlpha},
		{"per attempt: the next escapes it", pairs(shape{10, true, true, true}, shape{10, true, false, true}, shape{10, false, true, true}, shape{10, false, false, true}),
			WorkIndependent, 2},
		{"the next is never slow", pairs(shape{20, true, false, true}, shape{20, false, false, true}),
			WorkIndependent, 2},
		{"too few after a slow one", pairs(shape{2, true, true, true}, shape{20, false, false, true}),
			WorkUnknown, 2},
		{"none after a fast one (hedges only)", pairs(shape{30, true, true, true}, shape{50, false, false, false}),
			WorkUnknown, 2},
		{"no attempt after the first", pairs(shape{30, true, false, false}, shape{30, false, false, false}),
			"", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wc := workCorrelation(10, c.c.wp, c.c.w)
			if c.verdict == "" {
				if wc != nil {
					t.Fatalf("got %+v, want none", wc)
				}
				return
			}
			if wc == nil {
				t.Fatal("got none")
			}
			if wc.Verdict != c.verdict || !(wc.P < c.pBelow) {
				t.Errorf("verdict %s P %g, want %s and P below %g (%+v)", wc.Verdict, wc.P, c.verdict, c.pBelow, wc)
			}
			s, f := wc.AfterSlow, wc.AfterFast
			if s.Tries+f.Tries+wc.First.Tries != wc.Attempts || s.Slow+f.Slow+wc.First.Slow != wc.SlowAttempts {
				t.Errorf("counts do not add up: %+v", wc)
			}
			// The slow attempts work 50ms, the others 1ms.
			for _, q := range [][]float64{wc.SlowWorkQuantilesMS, wc.FastWorkQuantilesMS} {
				if len(q) != len(WorkLevels) {
					t.Fatalf("%d quantiles, want %d", len(q), len(WorkLevels))
				}
			}
			if wc.SlowWorkQuantilesMS[0] != 50 || wc.FastWorkQuantilesMS[100] != 1 {
				t.Errorf("slow work from %gms, fast up to %gms: want 50 and 1", wc.SlowWorkQuantilesMS[0], wc.FastWorkQuantilesMS[100])
			}
		})
	}
}

func TestHypergeometricTail(t *testing.T) {
	cases := []struct {
		total, marked, n, k int
		want                float64
	}{
		{31, 14, 14, 11, 0.000981},  // 11 of 14 after a failure, 3 of 17 after a success (runsP's doc)
		{55, 18, 38, 18, 0.0002331}, // 18 of 38 after a slow attempt, 0 of 17 after a fast one
		{10, 5, 5, 0, 1},
		{10, 5, 0, 0, 1},
		{10, 5, 5, 5, 1.0 / 252},
	}
	for _, c := range cases {
		if got := HypergeometricTail(c.total, c.marked, c.n, c.k); math.Abs(got-c.want) > 1e-3*c.want+1e-7 {
			t.Errorf("HypergeometricTail(%d, %d, %d, %d) = %g, want %g", c.total, c.marked, c.n, c.k, got, c.want)
		}
	}
}

// TestWorkCorrelationInferred builds retried calls whose callee works
// slow on both attempts of some requests and fast on both of others (per
// request), and calls whose second attempt is slow or fast whatever the
// first was (per attempt): the first edge reads correlated, the second
// independent.
func TestWorkCorrelationInferred(t *testing.T) {
	cases := []struct {
		name    string
		second  func(i int, firstSlow bool) bool
		verdict string
	}{
		{"per request", func(_ int, firstSlow bool) bool { return firstSlow }, WorkCorrelated},
		{"per attempt", func(i int, _ bool) bool { return i%4 < 2 }, WorkIndependent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder()
			for i := range 60 {
				b.newTrace()
				start := float64(i) * 1000
				root := b.server(-1, "api", "GET /x", start, 500)
				firstSlow := i%2 == 0
				work := func(slow bool) float64 {
					if slow {
						return 80
					}
					return 2
				}
				w1, w2 := work(firstSlow), work(c.second(i, firstSlow))
				cl := b.client(root, "db", start+1, w1+1, httpStatus(503))
				b.server(cl, "db", "GET /db", start+1.5, w1, httpStatus(503))
				t2 := start + w1 + 12
				cl = b.client(root, "db", t2, w2+1, httpStatus(200))
				b.server(cl, "db", "GET /db", t2+0.5, w2, httpStatus(200))
			}
			e := edge(t, b.infer(), "api", "db")
			wc := e.WorkCorrelation
			if wc == nil {
				t.Fatalf("no work correlation on %+v", shapeOf(e))
			}
			if wc.Verdict != c.verdict || !(wc.SlowAboveMS > 2 && wc.SlowAboveMS < 80) {
				t.Errorf("verdict %s above %gms, want %s between 2 and 80ms (%+v)", wc.Verdict, wc.SlowAboveMS, c.verdict, wc)
			}
		})
	}
}

// TestWorkCorrelationCaptures reads both sides of the rule from real
// captures of hedgedhttp below otelhttp (samples/generator): db slow per
// call in hedgedhttp-below (two slow requests in a row scripted for some
// calls, none after a request that got no answer), and slow per request
// drawn independently (chance 0.4) in hedgedhttp-per-attempt
// (graph/testdata; its generator-truth.json is the generator's truth, not
// held by TestHeldOutTruth, which wants a backoff decided).
func TestWorkCorrelationCaptures(t *testing.T) {
	for _, tc := range []struct {
		path, verdict string
	}{
		{filepath.Join("..", "samples", "hedgedhttp-below", "traces.otlp.jsonl.gz"), WorkCorrelated},
		{filepath.Join("testdata", "hedgedhttp-per-attempt", "traces.otlp.jsonl.gz"), WorkIndependent},
	} {
		t.Run(filepath.Base(filepath.Dir(tc.path)), func(t *testing.T) {
			e := edge(t, inferFile(t, tc.path), "inventory", "db")
			wc := e.WorkCorrelation
			if wc == nil || wc.Verdict != tc.verdict {
				t.Fatalf("work correlation %+v, want %s", wc, tc.verdict)
			}
			// db's slow requests take 250ms (and 40ms), its others well
			// under a millisecond: the split lies between.
			if wc.SlowAboveMS < 0.5 || wc.SlowAboveMS > 40 {
				t.Errorf("slow above %gms, want between db's fast and slow times", wc.SlowAboveMS)
			}
		})
	}
}

// TestDistAbove splits work times at a value, exact and from a sketch:
// 700 fast times (1–7ms) and 300 slow ones (100–400ms), split at 20ms.
func TestDistAbove(t *testing.T) {
	for _, sketch := range []bool{false, true} {
		d := &dist{}
		for i := range 700 {
			d.add(1 + float64(i%7))
		}
		for i := range 300 {
			d.add(100 + float64(i))
		}
		if sketch {
			d.toSketch()
		}
		n, slow, fast := d.above(20, WorkLevels)
		tol := 0.0
		if sketch {
			tol = 2 * SketchAccuracy // a sketch's quantile is within its relative accuracy
		}
		for _, c := range []struct {
			what      string
			got, want float64
		}{
			{"slow count", float64(n), 300},
			{"slowest fast time", fast[len(fast)-1], 7},
			{"fastest fast time", fast[0], 1},
			{"fastest slow time", slow[0], 100},
			{"slowest slow time", slow[len(slow)-1], 399},
		} {
			if math.Abs(c.got-c.want) > tol*c.want+1e-9 && !(sketch && c.what == "slow count" && math.Abs(c.got-c.want) <= 3) {
				t.Errorf("sketch %v: %s %g, want %g", sketch, c.what, c.got, c.want)
			}
		}
		if n, _, _ := d.above(1000, nil); n != 0 {
			t.Errorf("sketch %v: %d above the longest time", sketch, n)
		}
		if n, _, fast := d.above(0.5, WorkLevels); n != 1000 || len(fast) != 0 {
			t.Errorf("sketch %v: %d above the shortest time (want all), %d fast quantiles (want none)", sketch, n, len(fast))
		}
	}
}
