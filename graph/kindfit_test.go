package graph

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestScheduleKind: the kind claimed fits every step of the schedule,
// whatever the first ratio says (issue 11): linear and Fibonacci
// schedules, which the first ratio read as exponential or constant, are
// read as what they are, or left unknown with the kinds that fit where
// their steps cannot tell them apart; exponential, capped and constant
// schedules stay what they were. Every schedule's waits come up to
// 0.6ms late (timer noise), some also jittered.
func TestScheduleKind(t *testing.T) {
	late := func(rng *rand.Rand) float64 { return 0.6 * rng.Float64() }
	prop := func(rng *rand.Rand, f float64) float64 { return 1 + f*(2*rng.Float64()-1) }
	for _, tc := range []struct {
		name       string
		calls      int
		retries    int
		wait       func(rng *rand.Rand, k int) float64
		kind       BackoffKind
		candidates []BackoffKind
		// increment, where set, must lie in the increment's range.
		increment float64
		// capMS, where set, is the cap the schedule must show.
		capMS float64
		// warning, for an unknown kind, is what the topology's warning
		// about it must say.
		warning string
		// best and over, where set, are the kinds the evidence must
		// compare (several fit jointly), its ratio at least minRatio and
		// below maxRatio (0: no bound); unset, there must be none.
		best, over         BackoffKind
		minRatio, maxRatio float64
	}{
		{name: "linear 20ms + 20ms·k, no jitter (ratios 2, 1.5, 1.33)", calls: 20, retries: 4,
			wait: func(rng *rand.Rand, k int) float64 { return 20*float64(k+1) + late(rng) },
			kind: BackoffLinear, increment: 20},
		{name: "linear 15ms + 10ms·k, ±20%", calls: 40, retries: 4,
			wait: func(rng *rand.Rand, k int) float64 { return (15+10*float64(k))*prop(rng, 0.2) + late(rng) },
			kind: BackoffLinear, increment: 10},
		{name: "go-retryablehttp LinearJitterBackoff k·U[16, 24)ms", calls: 40, retries: 4,
			wait: func(rng *rand.Rand, k int) float64 { return float64(k+1)*(16+8*rng.Float64()) + late(rng) },
			kind: BackoffLinear, increment: 20},
		{name: "fibonacci 10, 20, 30, 50, 80ms (sethvargo/go-retry)", calls: 15, retries: 5,
			wait: func(rng *rand.Rand, k int) float64 { return fibWait(10, 10, k) + late(rng) },
			kind: BackoffFibonacci, increment: 10},
		{name: "fibonacci 10, 10, 20, 30, 50ms (first ratio 1, once read constant)", calls: 15, retries: 5,
			wait: func(rng *rand.Rand, k int) float64 { return fibWait(10, 0, k) + late(rng) },
			kind: BackoffFibonacci, increment: 0},
		{name: "fibonacci 20, 40, 60, 100ms ±10%", calls: 40, retries: 4,
			wait: func(rng *rand.Rand, k int) float64 { return fibWait(20, 20, k)*prop(rng, 0.1) + late(rng) },
			kind: BackoffFibonacci, increment: 20},
		{name: "linear 10ms + 10ms·k capped at 40ms (Polly's and Spring's max delay)", calls: 15, retries: 6,
			wait: func(rng *rand.Rand, k int) float64 { return min(10*float64(k+1), 40) + late(rng) },
			kind: BackoffLinear, increment: 10, capMS: 40},
		{name: "linear 10ms + 10ms·k over 8 steps (last ratio 1.14 is no cap)", calls: 15, retries: 8,
			wait: func(rng *rand.Rand, k int) float64 { return 10*float64(k+1) + late(rng) },
			kind: BackoffLinear, increment: 10},
		{name: "fibonacci capped at 50ms (go-retry's WithCappedDuration)", calls: 15, retries: 6,
			wait: func(rng *rand.Rand, k int) float64 { return min(fibWait(10, 10, k), 50) + late(rng) },
			kind: BackoffFibonacci, increment: 10, capMS: 50},
		{name: "three steps 10, 10, 20ms: only Fibonacci fits, its rule seen once", calls: 15, retries: 3,
			wait: func(rng *rand.Rand, k int) float64 { return fibWait(10, 0, k) + late(rng) },
			kind: BackoffUnknown, candidates: []BackoffKind{BackoffFibonacci}, warning: "fit only fibonacci backoff"},
		{name: "three steps 10, 20, 30ms: linear's and Fibonacci's alike", calls: 15, retries: 3,
			wait: func(rng *rand.Rand, k int) float64 { return 10*float64(k+1) + late(rng) },
			kind: BackoffUnknown, candidates: []BackoffKind{BackoffFibonacci, BackoffLinear}, warning: "fit several backoff kinds (fibonacci, linear)",
			best: BackoffLinear, over: BackoffFibonacci, minRatio: 1, maxRatio: 2},
		{name: "exponential 10·2^k, no jitter", calls: 15, retries: 4,
			wait: func(rng *rand.Rand, k int) float64 { return 10*math.Pow(2, float64(k)) + late(rng) },
			kind: BackoffExponential},
		{name: "exponential 10·2^k, no jitter, three steps: linear's 10, 20, 30 ruled out", calls: 15, retries: 3,
			wait: func(rng *rand.Rand, k int) float64 { return 10*math.Pow(2, float64(k)) + late(rng) },
			kind: BackoffExponential},
		{name: "exponential 20·2^k ±20%, three steps of 11 waits: linear and Fibonacci not ruled out", calls: 11, retries: 3,
			wait: func(rng *rand.Rand, k int) float64 { return 20*math.Pow(2, float64(k))*prop(rng, 0.2) + late(rng) },
			kind: BackoffUnknown, candidates: []BackoffKind{BackoffExponential, BackoffFibonacci, BackoffLinear},
			best: BackoffExponential, over: BackoffLinear, minRatio: 1, maxRatio: kindEvidenceRatio},
		{name: "linear 10ms + 5ms·k over four steps: exponential fits them too, linear better by 30:1 or more", calls: 10, retries: 4,
			wait: func(rng *rand.Rand, k int) float64 { return 10 + 5*float64(k) + late(rng) },
			kind: BackoffLinear, increment: 5, best: BackoffLinear, over: BackoffExponential, minRatio: kindEvidenceRatio},
		{name: "exponential 20·2^k ±20%, three steps of 40 waits: their spread rules linear out", calls: 40, retries: 3,
			wait: func(rng *rand.Rand, k int) float64 { return 20*math.Pow(2, float64(k))*prop(rng, 0.2) + late(rng) },
			kind: BackoffExponential},
		{name: "exponential 20·2^k ±20%, four steps", calls: 40, retries: 4,
			wait: func(rng *rand.Rand, k int) float64 { return 20*math.Pow(2, float64(k))*prop(rng, 0.2) + late(rng) },
			kind: BackoffExponential},
		{name: "exponential 10·2^k capped at 40", calls: 15, retries: 5,
			wait: func(rng *rand.Rand, k int) float64 { return min(10*math.Pow(2, float64(k)), 40) + late(rng) },
			kind: BackoffExponential},
		{name: "constant 25ms", calls: 15, retries: 4,
			wait: func(rng *rand.Rand, k int) float64 { return 25 + late(rng) },
			kind: BackoffConstant},
		{name: "10, 40, 20, 60ms: no kind fits", calls: 15, retries: 4,
			wait: func(rng *rand.Rand, k int) float64 { return []float64{10, 40, 20, 60}[k] + late(rng) },
			kind: BackoffUnknown, warning: "fit no backoff kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			chainOf(b, tc.calls, 21, tc.retries, tc.wait)
			top := b.infer()
			bo := edge(t, top, "api", "backend").Backoff
			if tc.warning != "" && !slices.ContainsFunc(top.Warnings, func(w string) bool { return strings.Contains(w, tc.warning) }) {
				t.Errorf("warnings %q, want one saying %q", top.Warnings, tc.warning)
			}
			if bo.Kind != tc.kind || !slices.Equal(bo.KindCandidates, tc.candidates) {
				t.Fatalf("backoff %s %v, want %s %v: %s", bo.Kind, bo.KindCandidates, tc.kind, tc.candidates, fmtBackoff(bo))
			}
			switch ev := bo.KindEvidence; {
			case tc.best == "" && ev != nil:
				t.Errorf("evidence %+v, want none (at most one kind fits jointly)", *ev)
			case tc.best == "":
			case ev == nil:
				t.Errorf("no evidence, want %s over %s", tc.best, tc.over)
			case ev.Best != tc.best || ev.Over != tc.over || ev.Ratio < tc.minRatio || tc.maxRatio > 0 && ev.Ratio >= tc.maxRatio:
				t.Errorf("evidence %+v, want %s over %s by [%v, %v)", *ev, tc.best, tc.over, tc.minRatio, tc.maxRatio)
			}
			if len(bo.Schedule) != tc.retries {
				t.Errorf("%d steps, want one per retry (%d): the steps stand whatever the kind", len(bo.Schedule), tc.retries)
			}
			switch tc.kind {
			case BackoffLinear, BackoffFibonacci:
				r := bo.IncrementRangeMS
				if bo.IncrementMS == nil || r == nil || r[0] > tc.increment || r[1] < tc.increment || *bo.IncrementMS < r[0] || *bo.IncrementMS > r[1] {
					t.Errorf("increment and its range %s: want a range holding %vms", fmtBackoff(bo), tc.increment)
				}
				if bo.Multiplier != nil || bo.MultiplierFit != nil {
					t.Errorf("%s backoff with a multiplier: %s", tc.kind, fmtBackoff(bo))
				}
				if c := bo.CapMS; tc.capMS == 0 && c != nil || tc.capMS > 0 && (c == nil || math.Abs(*c-tc.capMS) > 1) {
					t.Errorf("cap %v, want %vms (0: none): %s", c, tc.capMS, fmtBackoff(bo))
				}
			default:
				if bo.IncrementMS != nil || bo.IncrementRangeMS != nil {
					t.Errorf("%s backoff with an increment: %s", tc.kind, fmtBackoff(bo))
				}
			}
		})
	}
}

// TestXRange: the range of x over the solutions of lo ≤ p·x + q·y ≤ hi,
// against cases worked by hand.
func TestXRange(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		rows   []fitRow
		lo, hi float64
		ok     bool
	}{
		{"a line through three boxes", []fitRow{{1, 0, 9, 11}, {1, 1, 19, 21}, {1, 2, 29, 31}}, 9, 11, true},
		{"no line through them", []fitRow{{1, 0, 9, 11}, {1, 1, 19, 21}, {1, 2, 39, 41}}, 0, 0, false},
		{"y at least 0 cuts x from above", []fitRow{{0, 1, 0, inf}, {1, 0, 0, 100}, {1, 1, 0, 10}}, 0, 10, true},
		{"an open side", []fitRow{{1, 0, math.Inf(-1), 5}, {1, 1, 7, 8}}, math.Inf(-1), 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi, ok := xRange(tc.rows)
			if ok != tc.ok || ok && (math.Abs(lo-tc.lo) > 1e-9 && lo != tc.lo || math.Abs(hi-tc.hi) > 1e-9) {
				t.Errorf("xRange = [%v, %v] %v, want [%v, %v] %v", lo, hi, ok, tc.lo, tc.hi, tc.ok)
			}
		})
	}
}

// fibWait is step k of a Fibonacci schedule from base and base + inc.
func fibWait(base, inc float64, k int) float64 {
	prev, w := inc, base
	for range k {
		prev, w = w, prev+w
	}
	return w
}

// heldOutSchedules are schedules of other libraries than the samples':
// exponential ×2 and ×1.5, linear with base = increment
// (go-retryablehttp's, Polly's) and 10ms + 5ms·k (tenacity's
// wait_incrementing), Fibonacci from 10, 20 (go-retry) and from 10, 10
// (tokio-retry).
var heldOutSchedules = []struct {
	name  string
	truth BackoffKind
	at    func(k int) float64
}{
	{"exponential ×2", BackoffExponential, func(k int) float64 { return 20 * math.Pow(2, float64(k)) }},
	{"exponential ×1.5", BackoffExponential, func(k int) float64 { return 20 * math.Pow(1.5, float64(k)) }},
	{"linear 20ms·(k+1)", BackoffLinear, func(k int) float64 { return 20 * float64(k+1) }},
	{"linear 10ms + 5ms·k", BackoffLinear, func(k int) float64 { return 10 + 5*float64(k) }},
	{"fibonacci 10, 20", BackoffFibonacci, func(k int) float64 { return fibWait(10, 10, k) }},
	{"fibonacci 10, 10", BackoffFibonacci, func(k int) float64 { return fibWait(10, 0, k) }},
}

// heldOutJitters are the jitters the held-out schedules are drawn with.
var heldOutJitters = []struct {
	name string
	of   func(rng *rand.Rand, d float64) float64
}{
	{"none", func(rng *rand.Rand, d float64) float64 { return d }},
	{"±20%", func(rng *rand.Rand, d float64) float64 { return d * (0.8 + 0.4*rng.Float64()) }},
	{"full", func(rng *rand.Rand, d float64) float64 { return d * rng.Float64() }},
	{"equal", func(rng *rand.Rand, d float64) float64 { return d/2 + d/2*rng.Float64() }},
	{"+U[0,15ms)", func(rng *rand.Rand, d float64) float64 { return d + 15*rng.Float64() }},
}

// TestKindAcrossSchedules holds the kind rule to schedules of other
// libraries than the samples': exponential ×2 and ×1.5, linear (base =
// increment as go-retryablehttp's and Polly's, and 10ms + 5ms·k as
// tenacity's wait_incrementing), Fibonacci from 10, 20 (go-retry) and
// from 10, 10 (tokio-retry); without jitter, ±20%, full, equal and
// +U[0, 15ms); 3 to 5 retries; 10 or 30 calls; six seeds each: 1080
// edges. A wrong kind may be claimed only where the jitter's own reading
// went wrong first (few waits): at most 2% of the edges (19 when
// written); and the rule must decide: the right kind on at least 54% of
// them (604 when written, 603 since the proportional centre and width
// resist late waits, 602 at b884e87; the rest unknown, with
// candidates), which it reaches only by claiming the kind that fits
// best by 30:1 where several fit (586 without: kindEvidenceRatio). The
// first ratio alone claimed a wrong kind on 705. 591 right and 20 wrong
// since an index whose waits spread wider than the noise is no longer
// read as a fixed wait at its 10th percentile (±20% of 10-20ms: a step
// below its schedule with a range that excludes it, on which 12 right
// kinds rested; the jitter is named there instead), and a floor two
// indices share is an overhead only where a floor growing with the
// schedule is ruled out (an equal-jitter linear schedule no longer read
// over an invented overhead: one wrong kind more, while
// TestKindWithOverhead's wrong kinds fell from 62 to 36).
func TestKindAcrossSchedules(t *testing.T) {
	var tally kindTally
	for _, j := range heldOutJitters {
		for _, retries := range []int{3, 4, 5} {
			for _, calls := range []int{10, 30} {
				for _, s := range heldOutSchedules {
					for seed := uint64(1); seed <= 6; seed++ {
						b := newBuilder()
						chainOf(b, calls, seed*31+uint64(retries), retries, func(rng *rand.Rand, k int) float64 {
							return j.of(rng, s.at(k)) + 0.6*rng.Float64()
						})
						bo := edge(t, b.infer(), "api", "backend").Backoff
						if !tally.add(bo.Kind, s.truth) {
							t.Logf("%s, %s jitter, %d retries, %d calls, seed %d: %s", s.name, j.name, retries, calls, seed, fmtBackoff(bo))
						}
					}
				}
			}
		}
	}
	edges, right, wrong := tally.edges, tally.right, tally.wrong
	t.Logf("%d edges: %d the right kind, %d a wrong one, %d unknown", edges, right, wrong, edges-right-wrong)
	if wrong*50 > edges || right*100 < 54*edges {
		t.Errorf("%d edges: %d the right kind, %d a wrong one: want at most 2%% wrong and at least 54%% right", edges, right, wrong)
	}
}

// TestEvidenceOf: the kinds that fit jointly are compared by Akaike's
// criterion, worked by hand: equal parameters compare their sums alone
// (Δχ² = 2·ln 20 is 20:1), a parameter more costs 2, a tie keeps the
// order given, and a ratio too large to matter stops at 1e6.
func TestEvidenceOf(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fits       []kindFit
		best, over BackoffKind
		ratio      float64
	}{
		{"one kind: nothing to compare", []kindFit{{kind: BackoffLinear, ok: true, chi: 1, params: 2}}, "", "", 0},
		{"Δχ² of 2·ln 20 at equal parameters", []kindFit{
			{kind: BackoffLinear, ok: true, chi: 0.5 + 2*math.Log(20), params: 2},
			{kind: BackoffExponential, ok: true, chi: 0.5, params: 2},
		}, BackoffExponential, BackoffLinear, 20},
		{"the next best, not the last, is compared", []kindFit{
			{kind: BackoffExponential, ok: true, chi: 0, params: 2},
			{kind: BackoffFibonacci, ok: true, chi: 6, params: 2},
			{kind: BackoffLinear, ok: true, chi: 2, params: 2},
		}, BackoffExponential, BackoffLinear, math.Round(10*math.E) / 10},
		{"a parameter more costs 2", []kindFit{
			{kind: BackoffConstant, ok: true, chi: 3, params: 1},
			{kind: BackoffLinear, ok: true, chi: 0, params: 2},
		}, BackoffLinear, BackoffConstant, math.Round(10*math.Exp(0.5)) / 10},
		{"a tie keeps the order given", []kindFit{
			{kind: BackoffFibonacci, ok: true, chi: 1, params: 2},
			{kind: BackoffLinear, ok: true, chi: 1, params: 2},
		}, BackoffFibonacci, BackoffLinear, 1},
		{"at most 1e6", []kindFit{
			{kind: BackoffLinear, ok: true, chi: 900, params: 2},
			{kind: BackoffExponential, ok: true, chi: 0, params: 2},
		}, BackoffExponential, BackoffLinear, maxEvidenceRatio},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := evidenceOf(tc.fits)
			switch {
			case tc.best == "" && ev != nil:
				t.Errorf("evidence %+v, want none", *ev)
			case tc.best == "":
			case ev == nil:
				t.Errorf("no evidence, want %s over %s by %v", tc.best, tc.over, tc.ratio)
			case ev.Best != tc.best || ev.Over != tc.over || math.Abs(ev.Ratio-tc.ratio) > 1e-9*tc.ratio:
				t.Errorf("evidence %+v, want %s over %s by %v", *ev, tc.best, tc.over, tc.ratio)
			}
		})
	}
}

// TestJointKindOverhead: an overhead every wait shares is fitted for the
// kinds it does not drop out of, up to what the noise allows, and counted
// as a parameter: an exponential or Fibonacci schedule read 3ms long at
// every step, with errors of a tenth of a millisecond, fits with 4ms of
// overhead allowed (three parameters), not with none or 1ms (two);
// linear growth absorbs it in its base either way.
func TestJointKindOverhead(t *testing.T) {
	fib := []float64{10, 20, 30, 50, 80}
	exp := func(k int) float64 { return 10 * math.Pow(2, float64(k)) }
	for _, tc := range []struct {
		name   string
		kind   BackoffKind
		at     func(k int) float64
		oMax   float64
		ok     bool
		params int
	}{
		{"exponential, no overhead allowed", BackoffExponential, exp, 0, false, 2},
		{"exponential, 1ms allowed", BackoffExponential, exp, 1, false, 3},
		{"exponential, 4ms allowed", BackoffExponential, exp, 4, true, 3},
		{"fibonacci, no overhead allowed", BackoffFibonacci, func(k int) float64 { return fib[k] }, 0, false, 2},
		{"fibonacci, 4ms allowed", BackoffFibonacci, func(k int) float64 { return fib[k] }, 4, true, 3},
		{"linear, no overhead allowed", BackoffLinear, func(k int) float64 { return 10 + 7*float64(k) }, 0, true, 2},
		{"linear, 4ms allowed: its base absorbs it", BackoffLinear, func(k int) float64 { return 10 + 7*float64(k) }, 4, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, se := make([]float64, 5), make([]float64, 5)
			for k := range ms {
				ms[k], se[k] = tc.at(k)+3, 0.1
			}
			f := jointKind(tc.kind, ms, se, se, -1, tc.oMax)
			if f.ok != tc.ok || f.params != tc.params {
				t.Errorf("fits %v with %d parameters (χ² %.2f), want %v with %d", f.ok, f.params, f.chi, tc.ok, tc.params)
			}
		})
	}
}

// TestKindWithOverhead holds the kind rule to the held-out schedules
// where the traces carry network legs that vary (client spans 0.3 to
// 2.3ms longer than their server's) and every wait a fixed 1.5ms of
// overhead on top of its timer: the case that fitting the overhead,
// rather than padding every step's error for it, is about. 3 and 4
// retries, 15 or 40 calls, four seeds: 480 edges. Main before the
// overhead was fitted and kinds compared (e5fcbb5) claimed a wrong kind
// on 69 (14.4%) and the right one on 142; the rule must claim fewer
// wrong ones (62 when written, 12.9%: on 39 of them the jitter itself is
// left unknown, the legs widening the noise the waits are judged
// against) and still the right kind on a quarter (129 when written).
// Since a floor is an overhead only where a floor growing with the
// schedule is ruled out and jittered waits are never read as a fixed
// wait: 36 wrong (7.5%) and 162 right; at most 8% wrong and a third
// right.
func TestKindWithOverhead(t *testing.T) {
	var tally kindTally
	for ji, j := range heldOutJitters {
		for _, retries := range []int{3, 4} {
			for _, calls := range []int{15, 40} {
				for _, s := range heldOutSchedules {
					for seed := uint64(1); seed <= 4; seed++ {
						rng := rand.New(rand.NewPCG(seed*97+uint64(7*retries+ji), 3))
						b := newBuilder()
						sequential(b, calls, "api", func(root, _ int) {
							at := 10.0
							for k := 0; k <= retries; k++ {
								leg := 0.3 + 2*rng.Float64()
								status := httpStatus(503)
								if k == retries {
									status = httpStatus(200)
								}
								c := b.client(root, "backend", at, 5+leg, status)
								b.server(c, "backend", "GET /stock", at+leg/2, 5)
								at += 5 + leg
								if k < retries {
									at += j.of(rng, s.at(k)) + 1.5 + 0.6*rng.Float64()
								}
							}
						})
						tally.add(edge(t, b.infer(), "api", "backend").Backoff.Kind, s.truth)
					}
				}
			}
		}
	}
	edges, right, wrong := tally.edges, tally.right, tally.wrong
	t.Logf("%d edges: %d the right kind, %d a wrong one, %d unknown", edges, right, wrong, edges-right-wrong)
	if wrong*100 > 8*edges || right*3 < edges {
		t.Errorf("%d edges: %d the right kind, %d a wrong one: want at most 8%% wrong and at least a third right", edges, right, wrong)
	}
}

// kindTally counts simulated edges by how their backoff kind was read:
// the configured one, unknown, or another (wrong).
type kindTally struct{ edges, right, wrong int }

// add counts one edge read as got whose schedule is truth, and reports
// whether the reading was not wrong.
func (k *kindTally) add(got, truth BackoffKind) bool {
	k.edges++
	switch got {
	case truth:
		k.right++
	case BackoffUnknown:
	default:
		k.wrong++
		return false
	}
	return true
}

// TestCapAbove: a growing schedule whose waits never stop growing claims
// no cap and says how high any cap must be (the highest low end of its
// steps' ranges: at or below the last step's wait, and above the step
// before it); one whose waits stop at one level claims the cap and no
// such level; a constant schedule neither.
func TestCapAbove(t *testing.T) {
	late := func(rng *rand.Rand) float64 { return 0.6 * rng.Float64() }
	for _, tc := range []struct {
		name           string
		calls, retries int
		wait           func(rng *rand.Rand, k int) float64
		capMS          float64    // the cap claimed; 0 for none
		above          [2]float64 // the range cap_above_ms must fall in; zero for none
		kind           BackoffKind
	}{
		{"exponential 25·2^k ±20% up to its 200ms cap (grpc-pushback's)", 40, 4,
			func(rng *rand.Rand, k int) float64 {
				return min(25*math.Pow(2, float64(k)), 200)*(1+0.2*(2*rng.Float64()-1)) + late(rng)
			}, 0, [2]float64{100, 200}, BackoffExponential},
		{"exponential 10·2^k, no cap", 15, 4,
			func(rng *rand.Rand, k int) float64 { return 10*math.Pow(2, float64(k)) + late(rng) }, 0, [2]float64{40, 80}, BackoffExponential},
		{"exponential 10·2^k capped at 40: three steps at the cap", 15, 5,
			func(rng *rand.Rand, k int) float64 { return min(10*math.Pow(2, float64(k)), 40) + late(rng) }, 40, [2]float64{}, BackoffExponential},
		{"linear 10ms + 10ms·k over 8 steps", 15, 8,
			func(rng *rand.Rand, k int) float64 { return 10*float64(k+1) + late(rng) }, 0, [2]float64{70, 80}, BackoffLinear},
		{"linear capped at 40ms", 15, 6,
			func(rng *rand.Rand, k int) float64 { return min(10*float64(k+1), 40) + late(rng) }, 40, [2]float64{}, BackoffLinear},
		{"constant 25ms", 15, 4,
			func(rng *rand.Rand, k int) float64 { return 25 + late(rng) }, 0, [2]float64{}, BackoffConstant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			chainOf(b, tc.calls, 21, tc.retries, tc.wait)
			bo := edge(t, b.infer(), "api", "backend").Backoff
			if bo.Kind != tc.kind {
				t.Fatalf("backoff %s, want %s: %s", bo.Kind, tc.kind, fmtBackoff(bo))
			}
			if c := bo.CapMS; tc.capMS == 0 && c != nil || tc.capMS > 0 && (c == nil || math.Abs(*c-tc.capMS) > 1) {
				t.Errorf("cap %v, want %vms (0: none): %s", c, tc.capMS, fmtBackoff(bo))
			}
			switch a := bo.CapAboveMS; {
			case tc.above == [2]float64{} && a != nil:
				t.Errorf("any cap at or above %vms, want no such level: %s", *a, fmtBackoff(bo))
			case tc.above != [2]float64{} && (a == nil || *a <= tc.above[0] || *a > tc.above[1]):
				t.Errorf("any cap at or above %v, want above %vms and at most %vms: %s", a, tc.above[0], tc.above[1], fmtBackoff(bo))
			}
		})
	}
}

// TestOffsetGrowth: waits that grow exponentially only once a fixed time
// is added to or taken off every one (retry-axios's ((2ⁿ − 1)/2)·d, no
// one multiplier through its steps) are read as exponential with that
// offset, the multiplier from the differences between steps; a plain
// exponential schedule has no offset, and steps whose differences do not
// grow geometrically, or too few steps to test the three parameters, stay
// unknown.
func TestOffsetGrowth(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int                 // negative: as many on a busy host
		wait    func(k int) float64 // before retry k+1, ms, before timer noise
		kind    BackoffKind
		mult    float64 // 0: none stated
		offset  *float64
	}{
		{"retry-axios: ((2ⁿ − 1)/2)·200ms", 4, func(k int) float64 { return (math.Pow(2, float64(k+1)) - 1) / 2 * 200 }, BackoffExponential, 2, ptr(-100.0)},
		{"a fixed 50ms on every wait of 20ms ×2", 4, func(k int) float64 { return 50 + 20*math.Pow(2, float64(k)) }, BackoffExponential, 2, ptr(50.0)},
		{"×3 less 30ms", 4, func(k int) float64 { return 60*math.Pow(3, float64(k)) - 30 }, BackoffExponential, 3, ptr(-30.0)},
		{"plain exponential: no offset", 4, func(k int) float64 { return 100 * math.Pow(2, float64(k)) }, BackoffExponential, 2, nil},
		{"differences that do not grow by one multiplier", 4, func(k int) float64 { return []float64{100, 300, 350, 1500}[k] }, BackoffUnknown, 0, nil},
		{"three steps: too few to test an offset", 3, func(k int) float64 { return (math.Pow(2, float64(k+1)) - 1) / 2 * 200 }, BackoffUnknown, 0, nil},
		// On a busy host the steps' ranges are wide enough for plain
		// exponential growth, which fits them jointly no better than by
		// chance: growth from the offset fits, its multiplier too
		// uncertain to state.
		{"retry-axios on a busy host", -4, func(k int) float64 { return (math.Pow(2, float64(k+1)) - 1) / 2 * 200 }, BackoffExponential, 0, ptr(-100.0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			if tc.retries < 0 {
				// A busy host: legs and waits late by busyLate.
				busyRetries(b, 30, 7, -tc.retries, func(rng *rand.Rand, _, k int) float64 { return tc.wait(k) + busyLate(rng) }, nil)
			} else {
				// Timer noise: up to 2ms late, never early.
				chainOf(b, 20, 5, tc.retries, func(rng *rand.Rand, k int) float64 { return tc.wait(k) + 2*rng.Float64() })
			}
			bo := edge(t, b.infer(), "api", "backend").Backoff
			wantEq(t, "kind", bo.Kind, tc.kind)
			switch {
			case tc.mult == 0 && bo.Multiplier != nil:
				t.Errorf("multiplier %v, want none", *bo.Multiplier)
			case tc.mult != 0 && (bo.Multiplier == nil || *bo.Multiplier != tc.mult):
				t.Errorf("multiplier %v, want %v", bo.Multiplier, tc.mult)
			}
			switch o := bo.OffsetMS; {
			case tc.offset == nil && o != nil:
				t.Errorf("offset %vms, want none", *o)
			case tc.offset != nil && (o == nil || math.Abs(*o-*tc.offset) > 5):
				t.Errorf("offset %v, want %vms ±5ms", o, *tc.offset)
			}
			if tc.offset != nil {
				// The steps stand as read, the first the base.
				for k, s := range bo.Schedule {
					if want := tc.wait(k); s.RangeMS[0] > want || s.RangeMS[1] < want {
						t.Errorf("step %d: %+v, want its range to hold %vms", k+1, s, want)
					}
				}
				if bo.BaseMS != bo.Schedule[0].MS {
					t.Errorf("base %vms, want the first step's %vms", bo.BaseMS, bo.Schedule[0].MS)
				}
			}
		})
	}
}
