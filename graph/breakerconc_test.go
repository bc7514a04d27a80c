package graph

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// concTraffic is overlapping traffic to gateway → payments: a request
// starts every gap ms (drawn between gap·(1-spread) and gap·(1+spread)),
// whatever is in flight, for span ms; payments is down (answers 503)
// while a window in down covers the moment a call reaches it. With
// threshold > 0 gateway calls through a breaker that counts failed calls
// in a row in the order their results come in, stays open openMS, then
// lets one probe through; a result of a call made before the breaker last
// changed state is not counted (gobreaker's generations). fastOwn is the
// share of requests gateway answers 503 at once on its own (a shed or a
// validation of its own), breaker or not; with limit > 0 it answers 503 at
// once while limit calls are in flight (a concurrency limiter, which
// sheds while a slow outage holds calls, but lets one through whenever
// one ends).
type concTraffic struct {
	gap, spread, span  float64
	down               [][2]float64
	threshold, limit   int
	openMS, fastOwn    float64
	seed               uint64
	callMS, checkAfter float64 // the call's duration, when after the request's start it is made
	downMS             float64 // a failed call's duration (callMS if 0)
	// instance names the gateway process the requests go to ("" for
	// none named), whose breaker is its own; the first request leaves at
	// from ms.
	instance string
	from     float64
	// flaky are stretches {from, to, p} where the callee fails a call
	// with probability p (drawn from a stream of their own).
	flaky [][3]float64
	// rate, where set, makes the breaker one on a failure rate instead
	// of threshold failures in a row.
	rate *rateConf
}

// rateConf is a breaker that opens on a failed call when, over the
// results of the last window ms, there are at least minCalls calls and
// at least share of them failed; reading says what its window holds:
// ReadingCleared (resilience4j: emptied whenever it opens or closes, and
// results of calls made before that are not counted), ReadingRolling
// (opossum's rolling window: every result counted whenever it comes,
// refusals not) or ReadingRollingRejected (refusals counted too).
type rateConf struct {
	reading       string
	share, window float64
	minCalls      int
}

// concTruth is what the simulated breaker did.
type concTruth struct {
	fastFailed, openPeriods int
	ownFast                 int // answered fast by the handler on its own (or its limiter)
}

// build writes the traffic's spans into b, one trace per request, and
// returns what the breaker did.
func (c concTraffic) build(b *builder) concTruth {
	rng := rand.New(rand.NewPCG(c.seed, c.seed))
	isDown := func(t float64) bool {
		for _, w := range c.down {
			if t >= w[0] && t < w[1] {
				return true
			}
		}
		return false
	}
	type pending struct {
		at     float64
		failed bool
		gen    int
		probe  bool
	}
	flakyRNG := rand.New(rand.NewPCG(c.seed, c.seed+1))
	fails := func(t float64) bool {
		if isDown(t) {
			return true
		}
		for _, f := range c.flaky {
			if t >= f[0] && t < f[1] {
				return flakyRNG.Float64() < f[2]
			}
		}
		return false
	}
	type result struct {
		at             float64
		failed, refuse bool
	}
	var (
		tr         concTruth
		queue      []pending // results to come, in time order
		failures   int
		gen        int
		open       bool
		openedAt   float64
		probing    bool
		rejectedIn bool     // the current open period failed a call fast
		window     []result // a failure-rate breaker's results
		resetAt    = math.Inf(-1)
	)
	trip := func(at float64) {
		open, openedAt, probing, rejectedIn = true, at, false, false
		failures = 0
		gen++
		resetAt = at
	}
	// rateTrips reports whether a failure-rate breaker's window at t
	// opens it.
	rateTrips := func(t float64) bool {
		n, failed := 0, 0
		for _, x := range window {
			if x.at <= t-c.rate.window || x.at > t || c.rate.reading == ReadingCleared && x.at <= resetAt ||
				x.refuse && c.rate.reading != ReadingRollingRejected {
				continue
			}
			n++
			if x.failed {
				failed++
			}
		}
		return n >= c.rate.minCalls && float64(failed) >= c.rate.share*float64(n)
	}
	hear := func(r pending) {
		if c.rate != nil {
			if c.rate.reading != ReadingCleared || r.gen == gen {
				window = append(window, result{at: r.at, failed: r.failed})
			}
			switch {
			case r.gen != gen:
			case r.probe && r.failed:
				trip(r.at)
			case r.probe:
				open, probing = false, false
				gen++
				resetAt = r.at
			case r.failed && !open && rateTrips(r.at):
				trip(r.at)
			}
			return
		}
		if c.threshold == 0 || r.gen != gen {
			return // a call of an earlier state: not counted
		}
		switch {
		case r.probe && r.failed:
			trip(r.at)
		case r.probe:
			open, probing, failures = false, false, 0
			gen++
		case r.failed:
			if failures++; failures >= c.threshold {
				trip(r.at)
			}
		default:
			failures = 0
		}
	}
	var inst []opt
	if c.instance != "" {
		inst = append(inst, instance(c.instance))
	}
	at := c.from
	for n := 0; at < c.span; n++ {
		if n > 0 {
			b.newTrace()
		}
		check := at + c.checkAfter
		for len(queue) > 0 && queue[0].at <= check {
			hear(queue[0])
			queue = queue[1:]
		}
		own := rng.Float64() < c.fastOwn || c.limit > 0 && len(queue) >= c.limit
		fastFail := false
		probe := false
		if (c.threshold > 0 || c.rate != nil) && open {
			switch {
			case !probing && check >= openedAt+c.openMS:
				probing, probe = true, true
			default:
				fastFail = true
			}
		}
		if own {
			tr.ownFast++
		}
		switch {
		case own || fastFail:
			if fastFail && !own && c.rate != nil {
				window = append(window, result{at: check, refuse: true})
			}
			if fastFail && !own {
				tr.fastFailed++
				if !rejectedIn {
					tr.openPeriods++
					rejectedIn = true
				}
			}
			b.server(-1, "gateway", "GET /pay", at, c.checkAfter+0.3, append(inst, httpStatus(503))...)
		default:
			failed := fails(check + 0.5)
			status, d := 200, c.callMS
			if failed {
				status, d = 503, cmp.Or(c.downMS, c.callMS)
			}
			root := b.server(-1, "gateway", "GET /pay", at, c.checkAfter+d+0.5, append(inst, httpStatus(status))...)
			cl := b.client(root, "payments", check, d, append(inst, httpStatus(status))...)
			b.server(cl, "payments", "POST /charge", check+0.5, d-1, httpStatus(status))
			queue = append(queue, pending{at: check + d, failed: failed, gen: gen, probe: probe})
			slices.SortStableFunc(queue, func(a, b pending) int { return cmp.Compare(a.at, b.at) })
		}
		at += c.gap * (1 - c.spread + 2*c.spread*rng.Float64())
	}
	return tr
}

// TestBreakerOverlapping: requests overlap (several in flight), the callee
// goes down for stretches of time, and a breaker around the calls opens
// after failures in a row: the traces read in time give its fast
// failures, open periods, threshold, rule and open time; the same traffic
// without a breaker, or with a handler failing fast on its own, shows
// none.
func TestBreakerOverlapping(t *testing.T) {
	down := [][2]float64{{100, 260}, {400, 490}, {600, 640}}
	cases := []struct {
		name    string
		traffic concTraffic
		// want: a breaker detected with the simulated counts, the
		// threshold, a consecutive rule and an open time within 15% of
		// the configured one; otherwise none detected, and finding says
		// whether failures in a row were long enough for a
		// no-circuit-breaker finding.
		want    bool
		finding bool
	}{
		{"8ms calls, a request every 5ms (two in flight)", concTraffic{gap: 5, span: 800, down: down, threshold: 3, openMS: 30, seed: 1, callMS: 8, checkAfter: 1}, true, false},
		{"8ms calls, a request every 3ms ±50%", concTraffic{gap: 3, spread: 0.5, span: 800, down: down, threshold: 3, openMS: 30, seed: 2, callMS: 8, checkAfter: 1}, true, false},
		{"20ms calls, a request every 2ms ±50% (ten in flight), threshold 5", concTraffic{gap: 2, spread: 0.5, span: 800, down: down, threshold: 5, openMS: 40, seed: 3, callMS: 20, checkAfter: 1}, true, false},
		{"no breaker: every call sent", concTraffic{gap: 3, spread: 0.5, span: 800, down: down, seed: 4, callMS: 8, checkAfter: 1}, false, true},
		{"no breaker, 10% answered fast on the handler's own", concTraffic{gap: 3, spread: 0.5, span: 800, down: down, fastOwn: 0.1, seed: 5, callMS: 8, checkAfter: 1}, false, true},
		{"no breaker, a limit of 4 calls in flight while a slow outage holds them", concTraffic{gap: 3, spread: 0.5, span: 800, down: down, limit: 4, seed: 6, callMS: 8, downMS: 30, checkAfter: 1}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			truth := tc.traffic.build(b)
			tp := b.infer()
			br := edge(t, tp, "gateway", "payments").Breaker
			if !tc.want {
				if (tc.traffic.fastOwn > 0 || tc.traffic.limit > 0) && truth.ownFast < 10 {
					t.Fatalf("the handler answered %d requests fast on its own: the case shows too little", truth.ownFast)
				}
				t.Logf("%d answered fast by the handler on its own; breaker %+v", truth.ownFast, br)
				if br != nil && br.Detected {
					t.Fatalf("breaker %+v detected where there is none", *br)
				}
				if found := slices.Contains(findingIDs(tp), FindingNoBreaker); found != tc.finding {
					t.Errorf("no-circuit-breaker finding %v, want %v (breaker %+v)", found, tc.finding, br)
				}
				return
			}
			if truth.openPeriods < 3 {
				t.Fatalf("the simulated breaker opened %d times: the case shows too little", truth.openPeriods)
			}
			if br == nil || !br.Detected {
				t.Fatalf("breaker %+v, want one detected", br)
			}
			got := [3]int{br.FastFailedCalls, br.OpenPeriods, br.TripAfter}
			want := [3]int{truth.fastFailed, truth.openPeriods, tc.traffic.threshold}
			if got != want || br.TripRule != TripConsecutive {
				t.Errorf("fast failed, open periods, trip after %v (%s), want %v (%s)", got, br.TripRule, want, TripConsecutive)
			}
			if math.Abs(br.OpenMS-tc.traffic.openMS) > 0.15*tc.traffic.openMS {
				t.Errorf("open %.3fms, want %.0fms within 15%%", br.OpenMS, tc.traffic.openMS)
			}
		})
	}
}

// TestFailureRateOverlapping: a breaker on a failure rate under requests
// that overlap (several in flight), a callee flaky and down by stretches
// of time: read in time, its fast failures and open periods are the ones
// it had, its rule is a failure rate, and the fit holds the window, share
// and minimum calls that ran (or says unknown, and why).
func TestFailureRateOverlapping(t *testing.T) {
	flaky := [][3]float64{{100, 350, 0.6}, {500, 650, 0.75}, {800, 900, 1}, {1000, 1250, 0.7}, {1350, 1450, 1}}
	traffic := func(seed uint64, openMS float64, rate rateConf) concTraffic {
		return concTraffic{gap: 3, spread: 0.5, span: 1600, flaky: flaky, openMS: openMS, seed: seed, callMS: 8, checkAfter: 1, rate: &rate}
	}
	for _, tc := range []struct {
		name    string
		traffic concTraffic
	}{
		{"opossum: rolling 200ms counting refusals, half, 6 calls", traffic(1, 60, rateConf{ReadingRollingRejected, 0.5, 200, 6})},
		{"resilience4j: cleared on every change, half of 300ms, 10 calls", traffic(2, 80, rateConf{ReadingCleared, 0.5, 300, 10})},
		{"rolling 150ms not counting refusals, 60%, 4 calls", traffic(3, 50, rateConf{ReadingRolling, 0.6, 150, 4})},
		{"opossum, a request every 2ms and 20ms calls (ten in flight)", concTraffic{gap: 2, spread: 0.5, span: 1600, flaky: flaky, openMS: 60, seed: 4,
			callMS: 20, checkAfter: 1, rate: &rateConf{ReadingRollingRejected, 0.5, 200, 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			truth := tc.traffic.build(b)
			if truth.openPeriods < 3 {
				t.Fatalf("the simulated breaker opened %d times: the case shows too little", truth.openPeriods)
			}
			br := edge(t, b.infer(), "gateway", "payments").Breaker
			if br == nil || !br.Detected {
				t.Fatalf("breaker %+v, want one detected", br)
			}
			t.Logf("breaker %+v fit %+v", *br, br.FailureRate)
			if got, want := [2]int{br.FastFailedCalls, br.OpenPeriods}, [2]int{truth.fastFailed, truth.openPeriods}; got != want || br.TripRule != TripFailureRate {
				t.Errorf("fast failed, open periods %v (%s), want %v (%s)", got, br.TripRule, want, TripFailureRate)
			}
			r := tc.traffic.rate
			if math.Abs(br.OpenMS-tc.traffic.openMS) > 0.15*tc.traffic.openMS {
				t.Errorf("open %.3fms, want %.0fms within 15%%", br.OpenMS, tc.traffic.openMS)
			}
			if f := br.FailureRate; !fitHolds(f, r.share, r.window, r.minCalls) || f.Fit == FitSized && !slices.Contains(f.Readings, r.reading) {
				t.Errorf("fit %+v, want ranges and readings that hold %s, %v over %vms with %d calls, or unknown and why", f, r.reading, r.share, r.window, r.minCalls)
			}
		})
	}
}
