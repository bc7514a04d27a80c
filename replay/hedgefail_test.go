package replay

import (
	"math"
	"testing"
)

// TestHedgeOnFailureOut: what a hedging client does when an attempt fails
// while another is out (Policy.OnFailureOut), by its give-up shares by
// class. A callee answers a success after 50 ms and a failure after 1 ms,
// each attempt failing with chance p = 0.3 (q = 0.7); the client hedges
// after 10 ms, up to 3 attempts, and retries at once. The first attempt
// either fails alone at 1 ms (retried at once, its hedge timer running
// from then) or is out until 50 ms while a hedge goes out at 10 ms, which
// fails at 11 ms with chance p, and, if it did not, a third at 20 ms,
// failing at 21. Per mode (waiting; ending and going on as after a lone
// failure; sending the next at once; giving up by class):
//
//   - waits: a call fails only when all three fail, p³ = 0.027; a call
//     whose hedge failed while the first was out makes 2 attempts (its
//     timer dies with it), q·p = 0.21 of them, every other 3: 2.79.
//   - waits, giving up every failure: the first failing alone ends the
//     call (p = 0.3); one hedge failing while the first is out waits for
//     it (2 attempts), else 3: 0.3 + 0.7·(0.3·2 + 0.7·3) = 2.19.
//   - ends: a failure while another is out abandons it and retries if an
//     attempt is left, else fails: p·(q·p + p·p) + q·p·p + q·q·p = 0.30,
//     every call making 3 attempts.
//   - sends the next at once: every call makes exactly 3 attempts and
//     fails only when all do, 0.027.
//   - ends or sends the next, giving up server errors but not failures
//     without an answer: with no-answer failures, as sending the next;
//     with server errors, every failure ends the call: 1 − q³ = 0.657,
//     2.19 attempts.
func TestHedgeOnFailureOut(t *testing.T) {
	const p = 0.3
	fail := Mix{Fail: p}
	noAnswer := Mix{Fail: p, NoAnswer: p}
	for _, tc := range []struct {
		name     string
		on       HedgeOnFailure
		giveUp   [giveUpClasses]float64
		mix      Mix
		failed   float64 // share of calls that fail
		attempts float64 // per call
		exact    bool    // every call makes exactly that many
	}{
		{"waits", HedgeWaits, [giveUpClasses]float64{}, fail, 0.027, 2.79, false},
		{"waits, giving up every failure", HedgeWaits, [giveUpClasses]float64{GiveUpFail: 1}, fail, 0.3, 2.19, false},
		{"ends", HedgeEnds, [giveUpClasses]float64{}, fail, 0.30, 3, true},
		{"sends the next at once", HedgeSendsNext, [giveUpClasses]float64{}, fail, 0.027, 3, true},
		{"no answer: sends the next", HedgeEndsOrSendsNext, [giveUpClasses]float64{GiveUpFail: 1}, noAnswer, 0.027, 3, true},
		{"server errors: ends", HedgeEndsOrSendsNext, [giveUpClasses]float64{GiveUpFail: 1}, fail, 1 - 0.7*0.7*0.7, 2.19, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := single("db", 1000, Constant(0.05), 100, 0, Policy{MaxAttempts: 3, HedgeAfter: 0.01, GiveUp: tc.giveUp, OnFailureOut: tc.on})
			m.Services[1].Ops[0].FailTime = Constant(0.001)
			m.Edges[0].Fail = &Failures{First: tc.mix, FirstAfterFailure: tc.mix, FirstAfterOtherFailure: tc.mix, FirstAfterEdgeFailure: tc.mix,
				Retry: tc.mix, RetryAfterDownstream: tc.mix, Propagate: 1}
			r := mustRun(t, m, nil, RunConfig{Seed: 1, Duration: 20})
			a := r.Attempts[0]
			calls := float64(a.Attempts - a.Retries)
			// Three binomial deviations of the share over the calls.
			failed := 1 - r.Availability
			if tol := 3 * math.Sqrt(tc.failed*(1-tc.failed)/calls); math.Abs(failed-tc.failed) > tol {
				t.Errorf("%.4f of %.0f calls failed, want %.4f ± %.4f", failed, calls, tc.failed, tol)
			}
			got := float64(a.Attempts) / calls
			switch {
			case tc.exact && got != tc.attempts:
				t.Errorf("%.4f attempts per call, want exactly %g", got, tc.attempts)
			case tc.attempts > 0 && math.Abs(got-tc.attempts) > 0.03*tc.attempts:
				t.Errorf("%.4f attempts per call, want %.3g", got, tc.attempts)
			}
		})
	}
}
