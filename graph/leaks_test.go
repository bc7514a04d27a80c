package graph

import (
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// TestContextLeaks: retries that ran in the context of another request
// (their spans under a SERVER span that had already ended) are detected,
// warned about and left out of attempts, amplification and the
// caller-gave-up finding.
func TestContextLeaks(t *testing.T) {
	b := newBuilder()
	for i := 0; i < 3; i++ {
		if i > 0 {
			b.newTrace()
		}
		root := b.server(-1, "web", "GET /", 0, 50)
		_, s := b.call(root, "api", "GET /a", 1, 20, httpStatus(200))
		b.call(s, "db", "SELECT", 2, 5, httpStatus(200))
		// Two retries of some other request, sent on this request's
		// reused connection after it was answered, each with its own
		// downstream work: six spans each, never this request's.
		for k := 0; k < 2; k++ {
			_, ls := b.call(root, "api", "GET /a", 100+float64(40*k), 30, httpStatus(503))
			b.call(ls, "db", "SELECT", 101+float64(40*k), 5, httpStatus(503))
			b.call(ls, "db", "SELECT", 110+float64(40*k), 5, httpStatus(503))
		}
	}
	tp := b.infer()
	api := edge(t, tp, "web", "api")
	wantShape(t, api, shape{Calls: 3, Attempts: 3, Hist: []int{3}, Max: 1, Retried: none, NotRetry: none})
	db := edge(t, tp, "api", "db")
	wantEq(t, "db attempts", db.Attempts, 3)
	wantEq(t, "leaks", tp.Source.ContextLeaks, 6)
	wantEq(t, "leak shapes", *tp.Source.ContextLeakShapes, LeakShapes{Late: 6, Spans: 36})
	wantEq(t, "web → api leaked attempts", api.LeakedAttempts, 6)
	wantEq(t, "api → db leaked attempts", db.LeakedAttempts, 0)
	for _, p := range tp.Paths {
		if p.WorstCaseAmplification != 1 || p.ObservedMaxAmplification > 1 {
			t.Errorf("path %v: worst %d observed %v", p.Services, p.WorstCaseAmplification, p.ObservedMaxAmplification)
		}
	}
	wantFindings(t, tp)
	if !hasWarning(tp, "6 client spans started after their parent span had ended (36 spans with what they called)") {
		t.Errorf("no leak warning in %q", tp.Warnings)
	}
}

// TestAsyncPublishIsNoLeak: a PRODUCER span that publishes after its
// parent answered is ordinary asynchronous work, not a leaked context.
func TestAsyncPublishIsNoLeak(t *testing.T) {
	b := newBuilder()
	root := b.server(-1, "orders", "POST /orders", 0, 20)
	b.add(root, ingest.KindProducer, "orders", "publish order.created", 25, 2, []opt{peer("kafka/orders")})
	tp := b.infer()
	wantEq(t, "leaks", tp.Source.ContextLeaks, 0)
	wantEq(t, "publish calls", edge(t, tp, "orders", "kafka/orders").Calls, 1)
	if tp.Source.ContextLeakShapes != nil {
		t.Errorf("leak shapes %+v, want none", *tp.Source.ContextLeakShapes)
	}
}

// TestRepeatedSubtreeLeak: retries of another request that ran in this
// request's context while it was still running show as the same request
// sent again under one parent after it was answered, each copy with its
// own subtree. They are left out like late leaks; a retry after a failure
// and a second request for another URL stay the parent's own.
func TestRepeatedSubtreeLeak(t *testing.T) {
	b := newBuilder()
	for i := 0; i < 3; i++ {
		if i > 0 {
			b.newTrace()
		}
		root := b.server(-1, "web", "GET /", 0, 300)
		// The parent's own calls: one answered at once, one retried
		// after a 503, one to another URL.
		_, s := b.call(root, "api", "GET /a", 1, 20, httpStatus(200), method("GET"), target("http://api/a/1"))
		b.call(s, "db", "SELECT", 2, 5, httpStatus(200))
		b.call(root, "api", "GET /a", 30, 10, httpStatus(503), method("GET"), target("http://api/a/2"))
		b.call(root, "api", "GET /a", 50, 10, httpStatus(200), method("GET"), target("http://api/a/2"))
		b.call(root, "api", "GET /a", 70, 10, httpStatus(200), method("GET"), target("http://api/a/3"))
		// Another request's retries of /a/1, in this context: the request
		// this parent had answered at 21ms, sent again with a subtree.
		for k := 0; k < 2; k++ {
			_, ls := b.call(root, "api", "GET /a", 100+float64(40*k), 30, httpStatus(503), method("GET"), target("http://api/a/1"))
			b.call(ls, "db", "SELECT", 101+float64(40*k), 5, httpStatus(503))
			b.call(ls, "db", "SELECT", 110+float64(40*k), 5, httpStatus(503))
		}
	}
	tp := b.infer()
	api := edge(t, tp, "web", "api")
	wantShape(t, api, shape{Calls: 9, Attempts: 12, Hist: []int{6, 3}, Retries: true, Max: 2, Retried: s503, NotRetry: none,
		Evidence: "timing"})
	wantEq(t, "db attempts", edge(t, tp, "api", "db").Attempts, 3)
	wantEq(t, "leaks", tp.Source.ContextLeaks, 6)
	wantEq(t, "leak shapes", *tp.Source.ContextLeakShapes, LeakShapes{Repeated: 6, Spans: 36})
	wantEq(t, "web → api leaked attempts", api.LeakedAttempts, 6)
	for _, p := range tp.Paths {
		if p.ObservedMaxAmplification > 2 {
			t.Errorf("path %v: observed %v, want at most 2", p.Services, p.ObservedMaxAmplification)
		}
	}
	if !hasWarning(tp, "6 client spans repeated a request their parent had already had answered (36 spans with what they called)") {
		t.Errorf("no repeat warning in %q", tp.Warnings)
	}
}

// TestPollIsNoLeak: a parent that polls the same URL after a 200 (a job's
// status until it is done) waits for every answer: its repeats are its
// own, not another request's retries, and the warning counts them. Sent
// again at once with nothing between, they are one call retried on the
// result (its answers' content), as a poll loop or a retry library's
// result predicate does: 3 calls of 4 attempts, 9 of them retries of a
// 200.
func TestPollIsNoLeak(t *testing.T) {
	b := newBuilder()
	for i := 0; i < 3; i++ {
		if i > 0 {
			b.newTrace()
		}
		root := b.server(-1, "web", "POST /export", 0, 200)
		for k := 0; k < 4; k++ {
			b.call(root, "jobs", "GET /jobs/{id}", 10+float64(40*k), 5, httpStatus(200), method("GET"), target("http://jobs/jobs/7"))
		}
	}
	tp := b.infer()
	wantEq(t, "leaks", tp.Source.ContextLeaks, 0)
	e := edge(t, tp, "web", "jobs")
	wantEq(t, "poll calls", e.Calls, 3)
	wantEq(t, "poll attempts", e.Attempts, 12)
	if r := e.ResultRetries; r == nil || r.Calls != 3 || r.Retries != 9 {
		t.Errorf("result retries %+v, want 9 in 3 calls", r)
	}
	if !hasWarning(tp, "9 client spans repeated a request their parent had already had answered, with nothing to show another request sent them") {
		t.Errorf("no poll warning in %q", tp.Warnings)
	}
}

// TestLeakedRetryThatSucceeded: another request's retry that succeeded at
// once, sent in this request's context, repeats a request this parent had
// answered; what gives it away is in the other trace: there the same
// request failed and was never tried again while its caller still waited.
// Had that caller stopped waiting before the copy, the copy is a poll.
func TestLeakedRetryThatSucceeded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		otherEnds float64 // when the other request's caller ended (ms)
		leaks     int
	}{
		{"its own trace misses the retry", 200, 1},
		{"its own trace had given up before", 40, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			root := b.server(-1, "web", "GET /", 0, 300)
			b.call(root, "api", "GET /a", 1, 20, httpStatus(200), method("GET"), target("http://api/a/1"))
			_, ls := b.call(root, "api", "GET /a", 60, 10, httpStatus(200), method("GET"), target("http://api/a/1"))
			b.call(ls, "db", "SELECT", 61, 5, httpStatus(200))
			b.newTrace()
			other := b.server(-1, "web", "GET /", 0, tc.otherEnds)
			b.call(other, "api", "GET /a", 1, 10, httpStatus(503), method("GET"), target("http://api/a/1"))
			tp := b.infer()
			wantEq(t, "leaks", tp.Source.ContextLeaks, tc.leaks)
			wantEq(t, "web → api attempts", edge(t, tp, "web", "api").Attempts, 3-tc.leaks)
		})
	}
}

// TestRepeatOutlivingParentLeaks: a repeat of an answered request that
// ends after its parent did was not the parent's: it did not wait for it.
func TestRepeatOutlivingParentLeaks(t *testing.T) {
	b := newBuilder()
	root := b.server(-1, "web", "GET /", 0, 100)
	b.call(root, "api", "GET /a", 1, 20, httpStatus(200), method("GET"), target("http://api/a/1"))
	b.call(root, "api", "GET /a", 90, 30, httpStatus(200), method("GET"), target("http://api/a/1"))
	tp := b.infer()
	wantEq(t, "leaks", tp.Source.ContextLeaks, 1)
}
