package replay

import (
	"math"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
)

// TestObservedPolicyFromInference: what inference found on an edge (its
// breaker, additive jitter) becomes the observed policy replayed.
func TestObservedPolicyFromInference(t *testing.T) {
	add := 100.0
	e := graph.Edge{MaxAttempts: 3, Retries: true,
		Backoff: graph.Backoff{Kind: "constant", BaseMS: 200, Jitter: "additive", JitterAdditiveMS: &add},
		Breaker: &graph.Breaker{Detected: true, FastFailedCalls: 13, OpenPeriods: 3, TripAfter: 3, OpenMS: 45}}
	p := observedPolicy(e)
	if p.Breaker == (BreakerConfig{}) || p.Breaker.ConsecutiveFailures != 3 || p.Breaker.OpenFor != 0.045 || p.Breaker.HalfOpenProbes != 1 {
		t.Errorf("breaker %+v, want 3 failures, 45ms open, one probe", p.Breaker)
	}
	if err := p.Breaker.Validate(); err != nil {
		t.Error(err)
	}
	// 200ms + U[0,100ms] is 250ms ±20%.
	if p.Backoff.Jitter != "proportional" || p.Backoff.Base != 0.25 || p.Backoff.Fraction != 0.2 {
		t.Errorf("backoff %+v, want proportional 250ms ±20%%", p.Backoff)
	}
	e.Breaker = &graph.Breaker{LongestFailureRun: 12} // none seen
	if p := observedPolicy(e); p.Breaker != (BreakerConfig{}) {
		t.Errorf("breaker %+v where the traces show none", p.Breaker)
	}
}

// TestObservedAdditiveWidth: additive jitter is replayed as proportional
// jitter about the first wait's centre, from the width inference read or,
// where late timers left it unknown, from the middle of its range; with
// neither, unjittered.
func TestObservedAdditiveWidth(t *testing.T) {
	w := 100.0
	for _, tc := range []struct {
		name         string
		width        *float64
		widthRange   *[2]float64
		base, spread float64 // s; the fraction
		jitter       JitterKind
	}{
		{"the width read", &w, &[2]float64{60, 160}, 0.25, 0.2, JitterProportional},
		{"the width unknown: the middle of its range", nil, &[2]float64{40, 160}, 0.25, 0.2, JitterProportional},
		{"neither", nil, nil, 0.2, 0, JitterNone},
	} {
		e := graph.Edge{MaxAttempts: 3, Retries: true, Backoff: graph.Backoff{Kind: "constant", BaseMS: 200, Jitter: graph.JitterAdditive,
			JitterAdditiveMS: tc.width, JitterAdditiveRangeMS: tc.widthRange}}
		b := observedPolicy(e).Backoff
		if b.Jitter != tc.jitter || math.Abs(b.Base-tc.base) > 1e-9 || math.Abs(b.Fraction-tc.spread) > 1e-9 {
			t.Errorf("%s: backoff %+v, want %gs ±%g %s", tc.name, b, tc.base, tc.spread, tc.jitter)
		}
	}
}

// TestObservedJitterBetweenKinds: jitter inference left between full and
// decorrelated (the schedule their shared ceilings) is replayed as full
// jitter; left between additive and proportional (the schedule the
// waits' medians, the centre of either) or unknown for want of waits, as
// none.
func TestObservedJitterBetweenKinds(t *testing.T) {
	m := 2.0
	for _, tc := range []struct {
		name       string
		candidates []graph.JitterKind
		want       JitterKind
	}{
		{"between decorrelated and full", []graph.JitterKind{graph.JitterDecorrelated, graph.JitterFull}, JitterFull},
		{"between additive and proportional (the schedule their centres)", []graph.JitterKind{graph.JitterAdditive, graph.JitterProportional}, JitterNone},
		{"unknown, no candidates", nil, JitterNone},
	} {
		e := graph.Edge{MaxAttempts: 4, Retries: true, Backoff: graph.Backoff{Kind: "exponential", BaseMS: 30, Multiplier: &m,
			Jitter: graph.JitterUnknown, JitterCandidates: tc.candidates}}
		if p := observedPolicy(e); p.Backoff.Jitter != tc.want || p.Backoff.Base != 0.03 || p.Backoff.Multiplier != 2 {
			t.Errorf("%s: backoff %+v, want 30ms ×2 with jitter %s", tc.name, p.Backoff, tc.want)
		}
	}
}

// TestFailureRateBreakerIsNoted: a breaker that let calls through after
// as many failures in a row as it opened after (a failure-rate rule) is
// replayed as the failure-rate breaker inference sized, its window read as
// the fit's reading says, and the notes give its figures and where they
// come from; where the traces do not size it, as one counting failures in
// a row, and the notes say what that overstates; a consecutive-failure
// breaker is replayed as one and needs no note; a sized fit naming no
// reading replay knows is an error.
func TestFailureRateBreakerIsNoted(t *testing.T) {
	sized := func(reading string) *graph.FailureRateFit {
		return &graph.FailureRateFit{Fit: graph.FitSized, Trips: 4, LetThrough: 40, Readings: []string{reading},
			ShareRange: []float64{0.45, 0.55}, WindowMSRange: []float64{360, 450}, MinCallsRange: []int{1, 30},
			Replay: &graph.FailureRateBreaker{Reading: reading, Share: 0.51, WindowMS: 400, MinCalls: 6}}
	}
	consecutive := BreakerConfig{ConsecutiveFailures: 3, OpenFor: 0.045, HalfOpenProbes: 1, PerCall: true}
	rate := func(keep, rejected bool) BreakerConfig {
		return BreakerConfig{FailureRate: 0.51, Window: 0.4, MinRequests: 6, OpenFor: 0.045, HalfOpenProbes: 1, PerCall: true, KeepWindow: keep, CountRejected: rejected}
	}
	for _, tc := range []struct {
		name string
		rule string
		fit  *graph.FailureRateFit
		want BreakerConfig
		note string // "" for none
		err  string
	}{
		{"failure rate, sized, rolling with refusals (opossum)", graph.TripFailureRate, sized(graph.ReadingRollingRejected), rate(true, true),
			": the breaker trips on a failure rate; the replay opens it on a failed share of at least 0.51 (fit: above 0.45 up to 0.55) over 400ms (fit: 360–450ms) " +
				"with at least 6 calls in its window (fit: 1–30), its window rolling on through every state, refused calls counted (readings that fit: rolling-with-rejected), " +
				"open for 45ms: a representative inside the ranges that fit, sized from 4 trips and 40 calls let through after a failure", ""},
		{"failure rate, sized, rolling", graph.TripFailureRate, sized(graph.ReadingRolling), rate(true, false),
			"its window rolling on through every state, refused calls not counted", ""},
		{"failure rate, sized narrowly: an estimate", graph.TripFailureRate, func() *graph.FailureRateFit {
			f := sized(graph.ReadingRolling)
			f.Estimate = true
			return f
		}(), rate(true, false), "open for 45ms: an estimate (the ranges that fit are narrow), sized from 4 trips", ""},
		{"failure rate, sized, cleared (resilience4j)", graph.TripFailureRate, sized(graph.ReadingCleared), rate(false, false),
			"its window cleared whenever it opens or closes", ""},
		{"failure rate, unknown", graph.TripFailureRate, &graph.FailureRateFit{Fit: graph.FitUnknown, Trips: 1, LetThrough: 9, Why: "1 trips and 9 calls let through after a failure: too few to size it (at least 2 and 2)"},
			consecutive, ": the breaker trips on a failure rate (21 calls let through after 3 or more failed calls in a row), whose window, share and minimum calls are unknown " +
				"(the traces do not size it: 1 trips and 9 calls let through after a failure: too few to size it (at least 2 and 2)): the replay opens it after 3 failures in a row", ""},
		{"failure rate, no fit (a topology from before fits)", graph.TripFailureRate, nil, consecutive,
			"whose window, share and minimum calls are unknown (the traces do not size it): the replay opens it after 3 failures in a row", ""},
		{"failure rate, a reading replay does not know", graph.TripFailureRate, sized("buckets"), BreakerConfig{}, "",
			`breaker.failure_rate.replay.reading "buckets": want cleared, rolling or rolling-with-rejected`},
		{"failures in a row", graph.TripConsecutive, nil, consecutive, "", ""},
	} {
		top := sampleTopology(t, "retry-everywhere")
		e := &top.Edges[0]
		e.Breaker = &graph.Breaker{Detected: true, FastFailedCalls: 38, OpenPeriods: 4, TripAfter: 3, TripRule: tc.rule, PassedRuns: 21, OpenMS: 45, FailureRate: tc.fit}
		m, err := FromTopology(top, BuildOptions{})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if p := observedPolicy(*e); p.Breaker != tc.want {
			t.Errorf("%s: breaker %+v, want %+v", tc.name, p.Breaker, tc.want)
		}
		notes := strings.Join(m.Assumed, "\n")
		if got := strings.Contains(notes, "the breaker trips on a failure rate"); got != (tc.note != "") || !strings.Contains(notes, tc.note) {
			t.Errorf("%s: notes %q, want %q", tc.name, m.Assumed, tc.note)
		}
	}
}

// TestProxyShedIsNoted: attempts a sidecar's circuit breaker refused at
// its limits (Envoy UO) are a concurrency limit the traces do not size:
// no breaker opening on failures is replayed, and the notes say so.
func TestProxyShedIsNoted(t *testing.T) {
	top := sampleTopology(t, "retry-everywhere")
	e := &top.Edges[0]
	e.Breaker = &graph.Breaker{ProxyShed: 7}
	if p := observedPolicy(*e); p.Breaker != (BreakerConfig{}) {
		t.Errorf("breaker %+v from a proxy's concurrency limit", p.Breaker)
	}
	m, err := FromTopology(top, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := e.Caller + " → " + e.Callee + " " + e.Operation + ": the caller's sidecar refused 7 attempts at its circuit breaker's limits (Envoy UO)"
	if !strings.Contains(strings.Join(m.Assumed, "\n"), want) {
		t.Errorf("notes %q lack %q", m.Assumed, want)
	}
}

// TestRetriedRefusalsAreNoted: a breaker the traces show inside the
// caller's retry loop (its refusals retried) is replayed around the call,
// and the notes say so; one around the loop gets no such note.
func TestRetriedRefusalsAreNoted(t *testing.T) {
	for _, tc := range []struct {
		name string
		rr   *graph.RetriedRefusals
		want bool
	}{
		{"inside the loop", &graph.RetriedRefusals{WaitedCalls: 4, RefusedTries: graph.TripUnknown}, true},
		{"around the loop", nil, false},
	} {
		top := sampleTopology(t, "retry-everywhere")
		e := &top.Edges[0]
		e.Breaker = &graph.Breaker{Detected: true, FastFailedCalls: 4, OpenPeriods: 3, TripRule: graph.TripConsecutive, TripAfter: 2, OpenMS: 20, RetriedRefusals: tc.rr}
		if tc.rr != nil {
			e.Breaker.TripRule, e.Breaker.TripAfter = graph.TripUnknown, 0
		}
		m, err := FromTopology(top, BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		note := e.Caller + " → " + e.Callee + " " + e.Operation + ": the caller's retry loop wraps its circuit breaker (4 calls failed after waiting out the loop's retries"
		if got := strings.Contains(strings.Join(m.Assumed, "\n"), note); got != tc.want {
			t.Errorf("%s: note %v, want %v (notes %q)", tc.name, got, tc.want, m.Assumed)
		}
	}
}

// TestObservedScheduleKinds: a linear or Fibonacci backoff the traces
// show replays as that formula with its increment, jitter on top; a
// schedule no one kind fits, or that grows exponentially from an offset,
// replays its steps as read (the last for later retries), and a note
// says so and why.
func TestObservedScheduleKinds(t *testing.T) {
	inc, frac := 20.0, 0.2
	steps := []graph.WaitStep{{Retry: 1, MS: 10}, {Retry: 2, MS: 40}, {Retry: 3, MS: 20}}
	// retry-axios's ((2ⁿ − 1)/2)·200ms: 100·2ⁿ⁻¹ from an offset of −100ms.
	two, offset := 2.0, -100.0
	grown := []graph.WaitStep{{Retry: 1, MS: 100}, {Retry: 2, MS: 300}, {Retry: 3, MS: 700}, {Retry: 4, MS: 1500}}
	for _, tc := range []struct {
		name  string
		b     graph.Backoff
		waits []float64 // before retries 1 to 5, seconds, unjittered
		note  string    // in stepsNote, "" for none
	}{
		{"linear with proportional jitter",
			graph.Backoff{Kind: graph.BackoffLinear, BaseMS: 20, IncrementMS: &inc, Jitter: graph.JitterProportional, JitterFraction: &frac},
			[]float64{0.02, 0.04, 0.06, 0.08, 0.1}, ""},
		{"fibonacci",
			graph.Backoff{Kind: graph.BackoffFibonacci, BaseMS: 20, IncrementMS: &inc, Jitter: graph.JitterNone},
			[]float64{0.02, 0.04, 0.06, 0.1, 0.16}, ""},
		{"no kind fits: the steps as read",
			graph.Backoff{Kind: graph.BackoffUnknown, BaseMS: 10, Jitter: graph.JitterNone, Schedule: steps},
			[]float64{0.01, 0.04, 0.02, 0.02, 0.02}, "no one kind (constant, linear, exponential, fibonacci) fits every step"},
		{"several kinds fit: the steps as read",
			graph.Backoff{Kind: graph.BackoffUnknown, BaseMS: 10, Jitter: graph.JitterNone, Schedule: steps,
				KindCandidates: []graph.BackoffKind{graph.BackoffFibonacci, graph.BackoffLinear}},
			[]float64{0.01, 0.04, 0.02, 0.02, 0.02}, "its steps fit fibonacci, linear alike"},
		{"exponential from an offset: the steps as read",
			graph.Backoff{Kind: graph.BackoffExponential, BaseMS: 100, Multiplier: &two, OffsetMS: &offset, Jitter: graph.JitterNone, Schedule: grown},
			[]float64{0.1, 0.3, 0.7, 1.5, 1.5}, "the backoff is exponential, the steps grow exponentially from an offset of -100ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := graph.Edge{Caller: "a", Callee: "b", Operation: "GET /x", MaxAttempts: 6, Retries: true, Backoff: tc.b}
			p := observedPolicy(e)
			if err := p.Backoff.Validate(); err != nil {
				t.Fatal(err)
			}
			if tc.b.Jitter == graph.JitterProportional && (p.Backoff.Jitter != JitterProportional || p.Backoff.Fraction != frac) {
				t.Errorf("jitter %s ±%v, want proportional ±%v", p.Backoff.Jitter, p.Backoff.Fraction, frac)
			}
			unjittered := p.Backoff
			unjittered.Jitter = JitterNone
			for n, want := range tc.waits {
				if got := unjittered.Delay(n+1, 0, nil); math.Abs(got-want) > 1e-12 {
					t.Errorf("retry %d waits %vs, want %vs", n+1, got, want)
				}
			}
			got := stepsNote(e, false)
			if tc.note == "" && got != "" || tc.note != "" && !strings.Contains(got, tc.note) {
				t.Errorf("note %q, want one saying %q", got, tc.note)
			}
		})
	}
}

// TestObservedProportionalFraction: proportional jitter is replayed at
// the fraction inference stated or, where its range was too wide to
// state one, at the middle of that range, which the model's notes say
// (and that the traces' own waits come first where the replay has
// them); an additive width left unknown is noted alike, a stated one not.
func TestObservedProportionalFraction(t *testing.T) {
	f, w := 0.2, 100.0
	for _, tc := range []struct {
		name     string
		b        graph.Backoff
		fraction float64
		note     string // a part of the note; "" for none
	}{
		{"the fraction stated", graph.Backoff{Jitter: graph.JitterProportional, JitterFraction: &f, JitterFractionRange: &[2]float64{0.07, 0.28}}, 0.2, ""},
		{"the fraction unknown: the middle of its range", graph.Backoff{Jitter: graph.JitterProportional, JitterFractionRange: &[2]float64{0.11, 0.76}}, 0.435,
			"fraction is unknown (its range ±0.11–0.76 too wide to state one): the replay spreads the waits by the middle of the range, ±0.435"},
		{"neither", graph.Backoff{Jitter: graph.JitterProportional}, 0, ""},
		{"an additive width stated", graph.Backoff{Jitter: graph.JitterAdditive, JitterAdditiveMS: &w, JitterAdditiveRangeMS: &[2]float64{60, 160}}, 0.2, ""},
		{"an additive width unknown", graph.Backoff{Jitter: graph.JitterAdditive, JitterAdditiveRangeMS: &[2]float64{40, 160}}, 0.2,
			"width is unknown (late timers' tail as wide as it; its range 40–160ms): the replay spreads the waits by the middle of the range, ±0.2"},
	} {
		tc.b.Kind, tc.b.BaseMS = "constant", 200
		e := graph.Edge{Caller: "a", Callee: "b", Operation: "GET /x", MaxAttempts: 3, Retries: true, Backoff: tc.b}
		b := observedPolicy(e).Backoff
		if math.Abs(b.Fraction-tc.fraction) > 1e-9 {
			t.Errorf("%s: fraction %g, want %g", tc.name, b.Fraction, tc.fraction)
		}
		switch n := jitterNote(e, b, false); {
		case tc.note == "" && n != "":
			t.Errorf("%s: note %q, want none", tc.name, n)
		case tc.note != "" && !strings.Contains(n, tc.note):
			t.Errorf("%s: note %q, want one saying %q", tc.name, n, tc.note)
		}
		// Where the replay has the traces' own waits it waits those, and
		// says so.
		if n := jitterNote(e, b, true); tc.note != "" && !strings.Contains(n, "the traces' own waits") {
			t.Errorf("%s: note %q with the traces' waits, want one saying it waits them", tc.name, n)
		}
	}
}

// TestUnknownBreakerIsNoted: a breaker the traces leave unknown (too few
// fast failures to claim one) is not replayed, and the notes say it is
// unknown with its evidence; a detected one is replayed and a breaker not
// seen gets no such note.
func TestUnknownBreakerIsNoted(t *testing.T) {
	const evidence = "requests failed fast without calling the callee after failed calls: 2 (runs: 1)"
	for _, tc := range []struct {
		name        string
		br          *graph.Breaker
		replayed    bool
		noteUnknown bool
	}{
		{"unknown", &graph.Breaker{Unknown: true, FastFailedCalls: 2, OpenPeriods: 1, LongestFailureRun: 3, Evidence: evidence}, false, true},
		{"unknown inside a retry loop", &graph.Breaker{Unknown: true, FastFailedCalls: 1, OpenPeriods: 1, Evidence: evidence,
			RetriedRefusals: &graph.RetriedRefusals{WaitedCalls: 1, RefusedTries: graph.TripUnknown}}, false, true},
		{"detected", &graph.Breaker{Detected: true, FastFailedCalls: 4, OpenPeriods: 1, TripRule: graph.TripConsecutive, TripAfter: 3, OpenMS: 20}, true, false},
		{"none seen", &graph.Breaker{LongestFailureRun: 12}, false, false},
	} {
		top := sampleTopology(t, "retry-everywhere")
		e := &top.Edges[0]
		e.Breaker = tc.br
		if got := observedPolicy(*e).Breaker.Enabled(); got != tc.replayed {
			t.Errorf("%s: breaker replayed %v, want %v", tc.name, got, tc.replayed)
		}
		m, err := FromTopology(top, BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(m.Assumed, "\n")
		note := e.Caller + " → " + e.Callee + " " + e.Operation + ": circuit breaker unknown (" + evidence
		if got := strings.Contains(notes, note); got != tc.noteUnknown {
			t.Errorf("%s: unknown note %v, want %v (notes %q)", tc.name, got, tc.noteUnknown, m.Assumed)
		}
		if strings.Contains(notes, "retry loop wraps its circuit breaker") {
			t.Errorf("%s: a retried-refusals note for a breaker not replayed as one (notes %q)", tc.name, m.Assumed)
		}
	}
}
