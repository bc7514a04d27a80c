package graph

import (
	"context"
	"math"
	"testing"
)

// distOf is a dist holding vs.
func distOf(vs ...float64) *dist {
	d := &dist{}
	for _, v := range vs {
		d.add(v)
	}
	return d
}

// evenTimes is n values evenly from lo to hi.
func evenTimes(n int, lo, hi float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = lo + (hi-lo)*float64(i)/float64(max(n-1, 1))
	}
	return out
}

// TestRetryTransit: the retries' transit times are told from the first
// attempts' only when the rank-sum statistic lies three deviations from
// even, either way.
func TestRetryTransit(t *testing.T) {
	for _, tc := range []struct {
		name         string
		first, later []float64
		want         *LaterAttempts
	}{
		{"no retries", evenTimes(30, 0.05, 0.07), nil, nil},
		{"no first attempts reached the callee", nil, evenTimes(5, 0.2, 0.3), nil},
		{"the same times", evenTimes(30, 0.05, 0.07), evenTimes(30, 0.05, 0.07),
			&LaterAttempts{First: 30, Retries: 30, Later: 0.5, Deviations: 0}},
		// Every retry slower than every first attempt: Later 1, and
		// (1 − 0.5)/√(51/(12·30·20)) = 5.94 deviations.
		{"retries on new connections", evenTimes(30, 0.05, 0.07), evenTimes(20, 0.2, 0.25),
			&LaterAttempts{First: 30, Retries: 20, Later: 1, Deviations: 5.941, Split: true}},
		{"retries faster", evenTimes(30, 0.2, 0.25), evenTimes(20, 0.05, 0.07),
			&LaterAttempts{First: 30, Retries: 20, Later: 0, Deviations: -5.941, Split: true}},
		// As far apart, but 3 and 2 attempts: 0.5/√(6/72) = 1.73
		// deviations, which chance gives one time in 24.
		{"too few to tell", evenTimes(3, 0.05, 0.07), evenTimes(2, 0.2, 0.25),
			&LaterAttempts{First: 3, Retries: 2, Later: 1, Deviations: 1.732}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := laterAttempts(distOf(tc.first...), distOf(tc.later...))
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("got %+v, want nil", *got)
			case tc.want == nil:
			case got == nil:
				t.Fatalf("got nil, want %+v", *tc.want)
			case *got != *tc.want:
				t.Errorf("got %+v, want %+v", *got, *tc.want)
			}
		})
	}
}

// TestRetryTransitInferred: on hand-built traces whose retries spend
// 0.4 ms outside the callee's span and whose first attempts 0.1 ms (a new
// connection dialled after each failure), inference keeps each kind's
// transit apart; with the same transit for both it keeps them pooled.
func TestRetryTransitInferred(t *testing.T) {
	for _, tc := range []struct {
		name           string
		retryTransit   float64
		split          bool
		firstP50, rP50 float64
	}{
		{"retries dial anew", 0.4, true, 0.1, 0.4},
		{"retries reuse the connection", 0.1, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			for i := range 40 {
				b.newTrace()
				start := float64(i) * 100
				root := b.server(-1, "api", "GET /orders", start, 50)
				at := start + 1
				if i%2 == 0 {
					// A failed first attempt, then a retry 5 ms later.
					c := b.client(root, "inventory", at, 2.1, httpStatus(503))
					b.server(c, "inventory", "GET /stock", at+0.05, 2, httpStatus(503))
					at += 2.1 + 5
					c = b.client(root, "inventory", at, 1+tc.retryTransit, httpStatus(200))
					b.server(c, "inventory", "GET /stock", at+tc.retryTransit/2, 1, httpStatus(200))
					continue
				}
				c := b.client(root, "inventory", at, 1.1, httpStatus(200))
				b.server(c, "inventory", "GET /stock", at+0.05, 1, httpStatus(200))
			}
			top, err := Infer(context.Background(), b.set)
			if err != nil {
				t.Fatal(err)
			}
			var e *Edge
			for i := range top.Edges {
				if top.Edges[i].Caller == "api" {
					e = &top.Edges[i]
				}
			}
			if e == nil || e.RetryTransit == nil {
				t.Fatalf("no api edge with retry transit: %+v", top.Edges)
			}
			if e.RetryTransit.First != 40 || e.RetryTransit.Retries != 20 || e.RetryTransit.Split != tc.split {
				t.Errorf("retry transit %+v, want 40 first attempts, 20 retries, split %v", *e.RetryTransit, tc.split)
			}
			if !tc.split {
				if e.FirstTransitQuantilesMS != nil || e.RetryTransitQuantilesMS != nil {
					t.Errorf("split quantiles set for times that do not differ")
				}
				return
			}
			if got := e.FirstTransitQuantilesMS[50]; got != tc.firstP50 {
				t.Errorf("first attempts' median transit %g, want %g", got, tc.firstP50)
			}
			if got := e.RetryTransitQuantilesMS[50]; got != tc.rP50 {
				t.Errorf("retries' median transit %g, want %g", got, tc.rP50)
			}
		})
	}
}

// TestRetryWorkInferred: on hand-built traces, the callee's own work is
// compared between the executions an edge's first attempts reached and
// those its later attempts (retries, hedges) reached, by the same test as
// transit. A retry served by a cold replica (3 ms of work against 1 ms)
// is told apart, its callee's 5 ms call to db and the failed first
// attempts' fast errors left out (the operation's work times leave them
// out too); a retry served alike is not. Hedges below the instrumentation
// (grpc-js's hedgingPolicy): a first attempt that takes 60 ms half the
// time, each hedged after 30 ms by one answered in 0.5 ms, are told apart
// the other way.
func TestRetryWorkInferred(t *testing.T) {
	retries := func(retryWork float64) func(b *builder) {
		return func(b *builder) {
			sequential(b, 40, "api", func(root, i int) {
				at := 1.0
				if i%2 == 0 {
					// A first attempt failing fast, then a retry 5 ms later.
					c := b.client(root, "inventory", at, 1.2, httpStatus(503))
					b.server(c, "inventory", "GET /stock", at+0.1, 1, httpStatus(503))
					at += 1.2 + 5
					c = b.client(root, "inventory", at, retryWork+5.2, httpStatus(200))
					s := b.server(c, "inventory", "GET /stock", at+0.1, retryWork+5, httpStatus(200))
					b.call(s, "db", "SELECT", at+0.1+retryWork, 5)
					return
				}
				c := b.client(root, "inventory", at, 6.2, httpStatus(200))
				s := b.server(c, "inventory", "GET /stock", at+0.1, 6, httpStatus(200))
				b.call(s, "db", "SELECT", at+1.1, 5)
			})
		}
	}
	hedges := func(b *builder) {
		sequential(b, 40, "front", func(root, i int) {
			if i%2 == 0 {
				belowCall(b, root, 1, []below{{0, 60, false}, {30, 0.5, false}})
				return
			}
			belowCall(b, root, 1, []below{{0, 1, false}})
		})
	}
	for _, tc := range []struct {
		name               string
		build              func(b *builder)
		caller, callee     string
		first, later       int
		split              bool
		firstP50, laterP50 float64
	}{
		{"retries served by a cold replica", retries(3), "api", "inventory", 20, 20, true, 1, 3},
		{"retries served alike", retries(1), "api", "inventory", 20, 20, false, 0, 0},
		{"hedges answered fast after slow first attempts", hedges, "front", "stock", 40, 20, true, 1, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			tc.build(b)
			e := edge(t, b.infer(), tc.caller, tc.callee)
			rw := e.RetryWork
			if rw == nil || rw.First != tc.first || rw.Retries != tc.later || rw.Split != tc.split {
				t.Fatalf("retry work %+v, want %d first attempts, %d later, split %v", rw, tc.first, tc.later, tc.split)
			}
			if !tc.split {
				if e.FirstWorkQuantilesMS != nil || e.RetryWorkQuantilesMS != nil {
					t.Errorf("split work quantiles set for times that do not differ")
				}
				return
			}
			if got := e.FirstWorkQuantilesMS[50]; got != tc.firstP50 {
				t.Errorf("first attempts' median callee work %g ms, want %g", got, tc.firstP50)
			}
			if got := e.RetryWorkQuantilesMS[50]; got != tc.laterP50 {
				t.Errorf("later attempts' median callee work %g ms, want %g", got, tc.laterP50)
			}
		})
	}
}

// TestTransitBelowInstrumentation: attempts a library below the
// instrumentation sent (the callee's spans under one client span) have no
// transit of their own; each such call gives one, its first request's way
// out and its answer's way back, so an edge whose every call spends 1 ms
// outside the callee's spans (0.5 ms each way) has a transit of 1 ms at
// every level, whether its calls were hedged, retried or made once.
func TestTransitBelowInstrumentation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		multi []below // every other call's attempts; the rest make one
	}{
		{"hedged", []below{{0, 60, false}, {30, 1, false}}},
		{"retried after UNAVAILABLE", []below{{0, 1, true}, {1.2, 2, false}}},
		{"three hedges, the first answering", []below{{0, 40, false}, {30, 40, false}, {60, 40, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			sequential(b, 40, "front", func(root, i int) {
				if i%2 == 0 {
					belowCall(b, root, 1, tc.multi)
					return
				}
				belowCall(b, root, 1, []below{{0, 1, false}})
			})
			e := edge(t, b.infer(), "front", "stock")
			if len(e.TransitQuantilesMS) == 0 {
				t.Fatal("no transit quantiles")
			}
			for i, q := range e.TransitQuantilesMS {
				if math.Abs(q-1) > 1e-6 {
					t.Fatalf("transit at level %g %g ms, want 1 (quantiles %v)", WorkLevels[i], q, e.TransitQuantilesMS)
				}
			}
		})
	}
}
