package graph

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// breakerTraffic sends requests to gateway one after another, 10ms
// apart (or 2ms after the one before ended, where a busy host made it
// end later: one at a time), each in its own trace: script[i] is what
// request i does:
// 'o' calls payments, which answers 200; 'x' calls it and it fails with a
// 503; 'f' answers 503 in 0.5ms without calling it (a breaker open); 's'
// answers 503 after 20ms without calling it (the handler's own slow
// failure, no breaker). lag
// (nil: none) is what a busy host adds to each request and to each call's
// client span beyond its callee's.
func breakerTraffic(b *builder, script string, lag func() float64) {
	if lag == nil {
		lag = func() float64 { return 0 }
	}
	at, ended := 0.0, 0.0
	for i, r := range script {
		if i > 0 {
			b.newTrace()
			at = max(at+10, ended+2)
		}
		switch r {
		case 'o', 'x':
			status := 200
			if r == 'x' {
				status = 503
			}
			leg := lag()
			d := 8 + leg + lag()
			root := b.server(-1, "gateway", "GET /pay", at, d, httpStatus(status))
			c := b.client(root, "payments", at+1, 6+leg, httpStatus(status))
			b.server(c, "payments", "POST /charge", at+1.5+leg/2, 5, httpStatus(status))
			ended = at + d
		case 'f', 's':
			d := 0.5 + lag()
			if r == 's' {
				d += 19.5
			}
			b.server(-1, "gateway", "GET /pay", at, d, httpStatus(503))
			ended = at + d
		}
	}
}

func TestBreaker(t *testing.T) {
	runCases(t, []inferCase{
		{
			name: "fast failures after consecutive failures, ended by a probe: a breaker",
			build: func(b *builder) {
				breakerTraffic(b, "ooooo"+"xxx"+"ffffff"+"o"+"oooo"+"xxx"+"ffff"+"x"+"fff"+"oo", nil)
			},
			check: func(t *testing.T, tp *Topology) {
				br := edge(t, tp, "gateway", "payments").Breaker
				if br == nil {
					t.Fatal("no breaker")
				}
				want := Breaker{Detected: true, FastFailedCalls: 13, OpenPeriods: 3, TripAfter: 3, TripRule: TripConsecutive, OpenMS: 32, LongestFailureRun: 4}
				if *br != want {
					t.Errorf("breaker\n got %+v\nwant %+v", *br, want)
				}
				wantFindings(t, tp)
			},
		},
		{
			// opossum, resilience4j, Hystrix: open when the share of failed
			// calls over a window passes a threshold. Single failures among
			// successes are let through, then one opens it; after a good
			// probe, one failure opens it again (the window still holds the
			// failures before). No threshold of failures in a row explains
			// both: a failure rate.
			name: "fast failures after failures mixed with successes: a breaker on a failure rate",
			build: func(b *builder) {
				breakerTraffic(b, "ooooo"+"xoxoxx"+"fff"+"o"+"x"+"ffff"+"oo"+"ooo", nil)
			},
			check: func(t *testing.T, tp *Topology) {
				br := edge(t, tp, "gateway", "payments").Breaker
				if br == nil {
					t.Fatal("no breaker")
				}
				// Two trips and three failures let through size it
				// loosely: a share above 0.375 up to all of them (the first
				// trip came on two failures in a row), over 9.8 to 73.4ms.
				got, fit := *br, br.FailureRate
				got.FailureRate = nil
				want := Breaker{Detected: true, FastFailedCalls: 7, OpenPeriods: 2, TripAfter: 1, TripRule: TripFailureRate, PassedRuns: 3, OpenMS: 27, LongestFailureRun: 2}
				if got != want {
					t.Errorf("breaker\n got %+v\nwant %+v", got, want)
				}
				if fit == nil || fit.Fit != FitSized || fit.Estimate || fit.Trips != 2 || fit.LetThrough != 3 ||
					!slices.Equal(fit.ShareRange, []float64{0.375, 1}) || !slices.Equal(fit.WindowMSRange, []float64{9.814, 73.361}) {
					t.Errorf("failure-rate fit %+v, want sized from 2 trips and 3 let through: share 0.375-1, window 9.814-73.361ms, no estimate", fit)
				}
			},
		},
		{
			name: "twelve failed calls in a row, every one sent: no breaker, a finding",
			build: func(b *builder) {
				breakerTraffic(b, "ooo"+"xxxxxxxxxxxx"+"oo", nil)
			},
			check: func(t *testing.T, tp *Topology) {
				br := edge(t, tp, "gateway", "payments").Breaker
				if br == nil || br.Detected || br.LongestFailureRun != 12 {
					t.Fatalf("breaker %+v", br)
				}
				wantEq(t, "finding", finding(t, tp, FindingNoBreaker).Location, "gateway → payments POST /charge")
			},
		},
		{
			name: "no failures in a row: the traces cannot tell",
			build: func(b *builder) {
				breakerTraffic(b, "oooxoooxoo", nil)
			},
			check: func(t *testing.T, tp *Topology) {
				if br := edge(t, tp, "gateway", "payments").Breaker; br != nil {
					t.Errorf("breaker %+v, want null (unknown)", *br)
				}
			},
		},
	})
}

// TestBreakerOnABusyHost: on a busy host (a Node event loop) every
// answer comes late by what the loop adds, most by 1-3ms, a fifth by
// 20-40ms, the fast failures of an open breaker too, and the calls'
// client spans outlive their callee's by as much: fast failures are fast
// within that noise.
func TestBreakerOnABusyHost(t *testing.T) {
	b := newBuilder()
	breakerTraffic(b, "ooooo"+"xxx"+"ffffff"+"o"+"oooo"+"xxx"+"ffff"+"x"+"fff"+"oo", lagger(rand.New(rand.NewPCG(8, 8)), 2, 20, 40))
	br := edge(t, b.infer(), "gateway", "payments").Breaker
	if br == nil || !br.Detected || br.FastFailedCalls != 13 || br.TripAfter != 3 {
		t.Errorf("breaker %+v, want 13 fast failures after 3 failed calls", br)
	}
}

// TestBreakerInsideTheClient: a breaker below the instrumentation (a
// RoundTripper under otelhttp) leaves a CLIENT span that fails at once
// saying the circuit is open: that call made no request.
func TestBreakerInsideTheClient(t *testing.T) {
	b := newBuilder()
	for i, r := range "ooooxxx" + "rrrrr" + "o" + "oo" {
		if i > 0 {
			b.newTrace()
		}
		at := float64(10 * i)
		switch r {
		case 'o', 'x':
			status := map[rune]int{'o': 200, 'x': 503}[r]
			root := b.server(-1, "gateway", "GET /pay", at, 8, httpStatus(status))
			b.call(root, "payments", "POST /charge", at+1, 6, httpStatus(status))
		case 'r':
			root := b.server(-1, "gateway", "GET /pay", at, 0.6, httpStatus(503))
			b.client(root, "payments", at+0.1, 0.05, failed("circuit breaker is open"))
		}
	}
	br := edge(t, b.infer(), "gateway", "payments").Breaker
	if br == nil || !br.Detected || br.FastFailedCalls != 5 || br.OpenPeriods != 1 || br.TripAfter != 3 {
		t.Errorf("breaker %+v, want 5 calls refused in one open period after 3 failures", br)
	}
}

// TestQuick4xxIsNoBreaker: requests rejected quickly with a 400 after
// failures are the requests' own fault, not an open breaker.
func TestQuick4xxIsNoBreaker(t *testing.T) {
	b := newBuilder()
	for i, r := range "ooooxxx" + "bbbbb" + "oo" {
		if i > 0 {
			b.newTrace()
		}
		at := float64(10 * i)
		if r == 'b' {
			b.server(-1, "gateway", "GET /pay", at, 0.5, httpStatus(400))
			continue
		}
		status := map[rune]int{'o': 200, 'x': 503}[r]
		root := b.server(-1, "gateway", "GET /pay", at, 8, httpStatus(status))
		b.call(root, "payments", "POST /charge", at+1, 6, httpStatus(status))
	}
	// Three failed calls in a row neither show a breaker nor rule one out.
	if br := edge(t, b.infer(), "gateway", "payments").Breaker; br != nil {
		t.Errorf("breaker %+v, want null (unknown)", *br)
	}
}

// TestBreakerFastFailsAreNotTheRootsOwn: a root request whose call a
// breaker failed fast failed below the root, as one whose call failed did;
// the root's own outcome mix (what the replay draws the root's own
// failures from) must not count it, or the replay fails it twice: once by
// its breaker, once by the root's own mix.
func TestBreakerFastFailsAreNotTheRootsOwn(t *testing.T) {
	b := newBuilder()
	breakerTraffic(b, "ooooo"+"xxx"+"ffffff"+"o"+"oooo"+"xxx"+"ffff"+"x"+"fff"+"oo", nil)
	o := edge(t, b.infer(), "user", "gateway").Outcomes
	if o == nil {
		t.Fatal("no outcomes on the user edge")
	}
	// 13 roots failed fast and 7 failed because payments did: 20 failed
	// below the root, none on its own; the 12 others succeeded.
	if got := (OutcomeMix{OK: 12}); o.First != got {
		t.Errorf("root's own outcomes %+v, want %+v", o.First, got)
	}
	if o.DownstreamFailed != 20 || o.Propagated != 20 || o.FirstDownstreamFailed != 20 {
		t.Errorf("failed below the root %d (propagated %d, first %d), want 20", o.DownstreamFailed, o.Propagated, o.FirstDownstreamFailed)
	}
}
