package graph

import (
	"strings"
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
	for _, p := range tp.Paths {
		if p.WorstCaseAmplification != 1 || p.ObservedMaxAmplification > 1 {
			t.Errorf("path %v: worst %d observed %v", p.Services, p.WorstCaseAmplification, p.ObservedMaxAmplification)
		}
	}
	wantFindings(t, tp)
	found := false
	for _, w := range tp.Warnings {
		found = found || strings.Contains(w, "6 client spans (36 spans with what they called) started after their parent span had ended")
	}
	if !found {
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
}
