package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// rateBreaker is a failure-rate breaker run over breakerTraffic's
// requests (10 ms apart; a call's result comes 8 ms after its request,
// a refusal's 0.5 ms after), written for the test apart from the fit: it
// opens on a failed call when, over the results of the last window ms
// (refusals counted as calls that did not fail under
// ReadingRollingRejected), there are at least minCalls and the failed
// share is at least share; it stays open openMS, then lets one probe
// through, which closes it or opens it again. Under ReadingCleared the
// window is emptied when it opens or closes.
type rateBreaker struct {
	reading          string
	share, window    float64
	minCalls         int
	openMS           float64
	results          []rateResult
	open, probe      bool
	openTill, resetT float64
}

type rateResult struct {
	t      float64
	failed bool
}

// script runs the breaker over the callee's answers (true: it fails)
// and returns breakerTraffic's script: 'o', 'x', or 'f' where it refused.
func (r *rateBreaker) script(fails []bool) string {
	var s strings.Builder
	for i, fail := range fails {
		at := float64(10 * i)
		if r.open && at < r.openTill {
			s.WriteByte('f')
			if r.reading == ReadingRollingRejected {
				r.results = append(r.results, rateResult{at + 0.5, false})
			}
			continue
		}
		end := at + 8
		if fail {
			s.WriteByte('x')
		} else {
			s.WriteByte('o')
		}
		if r.reading != ReadingCleared || !r.open {
			r.results = append(r.results, rateResult{end, fail})
		}
		switch {
		case r.open && fail: // the probe failed
			r.openTill = end + r.openMS
		case r.open: // the probe succeeded
			r.open = false
			r.resetT = end
		case fail && r.trips(end):
			r.open, r.openTill, r.resetT = true, end+r.openMS, end
		}
	}
	return s.String()
}

// trips reports whether the window ending at t opens the breaker.
func (r *rateBreaker) trips(t float64) bool {
	n, failed := 0, 0
	for _, x := range r.results {
		if x.t > t-r.window && x.t <= t && (r.reading != ReadingCleared || x.t > r.resetT) {
			n++
			if x.failed {
				failed++
			}
		}
	}
	return n >= r.minCalls && float64(failed) >= r.share*float64(n)
}

// calleeFails draws the callee's answers phase by phase: each phase is
// n requests failing with probability p.
func calleeFails(seed uint64, phases ...struct {
	n int
	p float64
}) []bool {
	rng := rand.New(rand.NewPCG(seed, seed))
	var out []bool
	for _, ph := range phases {
		for range ph.n {
			out = append(out, rng.Float64() < ph.p)
		}
	}
	return out
}

type phase = struct {
	n int
	p float64
}

// TestFailureRateFit runs known failure-rate breakers over a callee that
// is healthy, flaky and down by turns, infers the traffic, and holds the
// fit to them: ranges that contain the breaker that ran, a reading that is
// its, and a breaker to replay inside the ranges; "unknown" where the
// traces hold too little or nothing fits.
func TestFailureRateFit(t *testing.T) {
	flaky := []phase{{60, 0.02}, {80, 0.6}, {60, 0.02}, {40, 1}, {60, 0.02}, {80, 0.5}, {60, 0.02}, {30, 1}, {60, 0.02}, {80, 0.7}, {60, 0.02}}
	var flaky3 []phase
	for range 3 {
		flaky3 = append(flaky3, flaky...)
	}
	// A lone failure after a long healthy stretch opens it, three times,
	// and then five in a row after as long a stretch are let through,
	// three times: whatever the window, the five had at least as many
	// calls in it and a higher share failed, so no share over a window
	// (nor a minimum of calls) opens on the one and not the other.
	contrary := strings.Repeat(strings.Repeat("o", 60)+"x"+"fff"+"o", 3) + strings.Repeat(strings.Repeat("o", 60)+"xxxxx"+"oooo", 3)
	cases := []struct {
		name    string
		br      rateBreaker
		fails   []bool
		script  string // or a script of breakerTraffic's, for no breaker of the kind
		unknown string // the Why of an unknown fit; "" for sized
		// unbounded: the breaker's window outlasts the longest the
		// traces can test, so the fit must say its top is no bound.
		unbounded bool
	}{
		{name: "opossum: a rolling window of 400ms counting refusals, above half, 6 calls",
			br:    rateBreaker{reading: ReadingRollingRejected, share: 0.501, window: 400, minCalls: 6, openMS: 60},
			fails: calleeFails(1, flaky...)},
		{name: "resilience4j: cleared on every change, half of 1s, 10 calls",
			br:    rateBreaker{reading: ReadingCleared, share: 0.5, window: 1000, minCalls: 10, openMS: 80},
			fails: calleeFails(2, flaky3...)},
		{name: "a rolling window not counting refusals, 60% of 250ms, 4 calls",
			br:    rateBreaker{reading: ReadingRolling, share: 0.6, window: 250, minCalls: 4, openMS: 50},
			fails: calleeFails(3, flaky...)},
		{name: "hystrix-go: a 10s window emptied when it closes, outlasting the 4.5s of traces, half of 5 calls",
			br:        rateBreaker{reading: ReadingCleared, share: 0.5, window: 10000, minCalls: 5, openMS: 80},
			fails:     calleeFails(4, phase{10, 0.02}, phase{40, 1}, phase{30, 0.02}, phase{60, 0.6}, phase{30, 1}, phase{40, 0.02}, phase{80, 0.7}, phase{30, 0.02}, phase{40, 1}, phase{60, 0.5}, phase{30, 0.02}),
			unbounded: true},
		{name: "one trip: too few to size",
			script:  "ooooo" + "xxoo" + "oooooo" + "xoxx" + "fff" + "oooo",
			unknown: "1 trips and 4 calls let through after a failure: too few to size it"},
		{name: "one failure opens it, five in a row do not: nothing fits",
			script:  contrary,
			unknown: "no window on the grid and no reading of it fits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			truth := tc.br
			if tc.script == "" {
				tc.script = truth.script(tc.fails)
			}
			breakerTraffic(b, tc.script, nil)
			br := edge(t, b.infer(), "gateway", "payments").Breaker
			if br == nil || !br.Detected || br.TripRule != TripFailureRate || br.FailureRate == nil {
				t.Fatalf("breaker %+v, want one on a failure rate, sized", br)
			}
			f := br.FailureRate
			t.Logf("fit %+v replay %+v", *f, f.Replay)
			if tc.unknown != "" {
				if f.Fit != FitUnknown || !strings.Contains(f.Why, tc.unknown) || f.Replay != nil || f.ShareRange != nil {
					t.Errorf("fit %q (%s), want %s saying %q", f.Fit, f.Why, FitUnknown, tc.unknown)
				}
				return
			}
			if f.Fit != FitSized {
				t.Fatalf("fit %q: %s", f.Fit, f.Why)
			}
			if !slices.Contains(f.Readings, truth.reading) {
				t.Errorf("readings %v, want %s among them", f.Readings, truth.reading)
			}
			if s := f.ShareRange; !(s[0] <= truth.share && truth.share <= s[1]) {
				t.Errorf("share range %v, want it to hold %v", s, truth.share)
			}
			w := f.WindowMSRange
			switch {
			case tc.unbounded && (!f.WindowUnbounded || f.Estimate || w[0] > truth.window):
				t.Errorf("window range %v ms, unbounded %v, estimate %v: want a top that is no bound, below the %vms that ran, and no estimate",
					w, f.WindowUnbounded, f.Estimate, truth.window)
			case !tc.unbounded && !(w[0] <= truth.window && truth.window <= w[1]):
				t.Errorf("window range %v ms, want it to hold %v", w, truth.window)
			}
			if m := f.MinCallsRange; !(m[0] <= truth.minCalls && truth.minCalls <= m[1]) {
				t.Errorf("min calls range %v, want it to hold %d", m, truth.minCalls)
			}
			r := f.Replay
			if r == nil || !slices.Contains(f.Readings, r.Reading) ||
				r.Share <= f.ShareRange[0] || r.Share > f.ShareRange[1] ||
				r.WindowMS < f.WindowMSRange[0] || r.WindowMS > f.WindowMSRange[1] ||
				r.MinCalls < f.MinCallsRange[0] || r.MinCalls > f.MinCallsRange[1] {
				t.Errorf("replay %+v, want one inside the fit", r)
			}
			// Ranges that held anything would hold the truth too: the
			// breaker replayed must be near it.
			if r != nil && (math.Abs(r.Share-truth.share) > 0.1 || !tc.unbounded && (r.WindowMS > 1.5*truth.window || r.WindowMS < truth.window/1.5)) {
				t.Errorf("replay %+v, want within 0.1 of share %v and a factor 1.5 of window %vms", *r, truth.share, truth.window)
			}
		})
	}
}

// TestFailureRateEvents: which closed-state failures the fit reads as
// trips and as calls let through, on hand-built requests (ms): the next
// request to start once the failure's result was in decides, refused (a
// trip) or calling sooner than half the open time (40ms here); a refusal
// after another call's result came in too is not read as this one's
// trip, and half-open probes are no events.
func TestFailureRateEvents(t *testing.T) {
	ev := func(start, end float64, kind uint8) brEvent {
		return brEvent{int64(start * 1e6), int64(end * 1e6), kind}
	}
	for _, tc := range []struct {
		name        string
		evs         []brEvent
		trips, lets int
	}{
		{"a failure, then a refusal: a trip",
			[]brEvent{ev(0, 8, brOK), ev(10, 18, brFailed), ev(20, 20.5, brRejected)}, 1, 0},
		{"a failure, then a call 2ms later: let through",
			[]brEvent{ev(0, 8, brOK), ev(10, 18, brFailed), ev(20, 28, brOK)}, 0, 1},
		{"a failure, then a call 52ms later (past half the open time): nothing told",
			[]brEvent{ev(0, 8, brOK), ev(10, 18, brFailed), ev(70, 78, brOK)}, 0, 0},
		{"a call that started before the failure ended is no answer, and a refusal after its result too is no trip",
			[]brEvent{ev(10, 18, brFailed), ev(15, 23, brOK), ev(25, 25.5, brRejected)}, 0, 0},
		{"two overlapping failures before a refusal: the later one is the trip",
			[]brEvent{ev(10, 18, brFailed), ev(12, 20, brFailed), ev(25, 25.5, brRejected)}, 1, 0},
		{"a probe's failure is no closed-state event",
			[]brEvent{ev(0, 8, brFailed), ev(10, 10.5, brRejected), ev(60, 68, brProbeBad), ev(70, 70.5, brRejected)}, 1, 0},
	} {
		f := fitFailureRate([][]brEvent{tc.evs}, 80)
		if f.Trips != tc.trips || f.LetThrough != tc.lets {
			t.Errorf("%s: %d trips and %d let through, want %d and %d", tc.name, f.Trips, f.LetThrough, tc.trips, tc.lets)
		}
		if f.Fit != FitUnknown || f.Why == "" {
			t.Errorf("%s: fit %q (%s) from so few, want unknown and why", tc.name, f.Fit, f.Why)
		}
	}
}
