package graph

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// rootClient adds a CLIENT span of svc to peer that starts a trace of its
// own: a client with no span around its calls.
func (b *builder) rootClient(svc, peer string, start, dur float64, opts ...opt) int {
	b.newTrace()
	opts = append([]opt{func(s *ingest.Set, sp *ingest.Record) { sp.Peer = s.Intern(peer) }}, opts...)
	return b.add(-1, ingest.KindClient, svc, "GET", start, dur, opts)
}

// requestKey sets the request key (a captured Idempotency-Key).
func requestKey(k string) opt {
	return func(_ *ingest.Set, sp *ingest.Record) {
		h := fnv.New64a()
		h.Write([]byte("idempotency-key " + k))
		sp.RequestKey = h.Sum64()
	}
}

// rootCall adds a root client call from svc's instance inst to api's
// GET /x (URL url) answered code after dur ms.
func (b *builder) rootCall(svc, inst, url string, start, dur float64, code int) int {
	c := b.rootClient(svc, "api", start, dur, httpStatus(code), method("GET"), target(url), instance(inst))
	b.server(c, "api", "GET /x", start+0.5, dur-1, httpStatus(code))
	return c
}

// rootRetries has a client with no span around its calls send n requests
// to one URL, each one after the other: every attempt a root, the first
// two of each request answered 503 and retried after 50 and 100ms.
func rootRetries(b *builder, inst string, n int, every float64) {
	for i := range n {
		t := float64(i) * every
		for k, code := range []int{503, 503, 200} {
			b.rootCall("loadgen", inst, "http://api/x", t, 10, code)
			t += 10 + 50*float64(k+1)
		}
	}
}

// lostContext has front serve n requests, each calling api once under its
// SERVER span; that call fails, and front's client retries it twice from
// a fresh context: roots of their own, while front still waits.
func lostContext(b *builder, inst string, n int, every float64) {
	for i := range n {
		t := float64(i) * every
		b.newTrace()
		s := b.server(-1, "front", "GET /a", t, 200, instance(inst))
		_, srv := b.call(s, "api", "GET /x", t+1, 10, httpStatus(503), method("GET"), target("http://api/x"), instance(inst))
		b.set.Spans[srv].HTTPStatus = 503
		b.rootClient("front", "api", t+31, 10, httpStatus(503), method("GET"), target("http://api/x"), instance(inst))
		b.rootClient("front", "api", t+81, 10, httpStatus(200), method("GET"), target("http://api/x"), instance(inst))
	}
}

func TestRootClientCalls(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	type want struct {
		caller, callerOp string
		shape            shape
		unknown          bool
		roots            *RootCalls
		lost, leftOut    int
	}
	cases := []struct {
		name        string
		build       func(b *builder)
		edges       []want
		rootCalls   int // Source.RootCalls
		lost        int // Source.LostContextRetries
		warnings    []string
		noWarnings  bool
		wantNoEdges []string // callers that must have no edge to api
	}{{
		// A load generator retrying with no span around its calls: each
		// attempt is a call that nothing links to the one it repeats.
		name:  "every attempt a root, one after another",
		build: func(b *builder) { rootRetries(b, "lg-1", 5, 1000) },
		edges: []want{{caller: "loadgen", callerOp: "GET", unknown: true,
			shape: shape{Calls: 15, Attempts: 15, Hist: []int{15}, Max: 1, Retried: []string{}, NotRetry: []string{}},
			roots: &RootCalls{Calls: 15, Failed: 10, Streams: 1, FollowedFailure: 10, FollowedOK: 4, GapAfterFailureP50MS: f(50),
				GapAfterOKP50MS: f(820), MostInFlight: 1}}},
		rootCalls: 15,
		warnings:  []string{"loadgen → api GET /x: 15 calls start their own trace", "10 of them failed", "whether the client retries is unknown"},
	}, {
		// The same from two instances, and requests overlapping on each:
		// still unknown, and the evidence says how many were in flight.
		name: "every attempt a root, concurrent, two instances",
		build: func(b *builder) {
			rootRetries(b, "lg-1", 4, 20)
			rootRetries(b, "lg-2", 4, 20)
		},
		// Per instance, the attempts start at 0, 20, 40, 60 (two: the
		// first request's second attempt and the fourth's first), 80,
		// 100, 120 (all failed), 170, 190, 210, 230 (answered): 7 follow a
		// failure 10ms (40 for the one at 170) after it ended, 3 follow a
		// success, and two run at once at 60. Most of those "follows" are
		// no retry of the one before: why the edge's retries stay unknown.
		edges: []want{{caller: "loadgen", callerOp: "GET", unknown: true,
			shape: shape{Calls: 24, Attempts: 24, Hist: []int{24}, Max: 1, Retried: []string{}, NotRetry: []string{}},
			roots: &RootCalls{Calls: 24, Failed: 16, Streams: 2, FollowedFailure: 14, FollowedOK: 6, GapAfterFailureP50MS: f(10),
				GapAfterOKP50MS: f(10), MostInFlight: 2}}},
		rootCalls: 24,
		warnings:  []string{"whether the client retries is unknown"},
	}, {
		// A batch job's independent calls, all answered: nothing failed, so
		// nothing could have been retried; not unknown, not retried.
		name: "batch of independent roots",
		build: func(b *builder) {
			for i := range 10 {
				b.rootCall("cron", "c-1", "http://api/x", float64(i)*100, 10, 200)
			}
		},
		edges: []want{{caller: "cron", callerOp: "GET",
			shape: shape{Calls: 10, Attempts: 10, Hist: []int{10}, Max: 1, Retried: []string{}, NotRetry: []string{}},
			roots: &RootCalls{Calls: 10, Streams: 1, FollowedOK: 9, GapAfterOKP50MS: f(90), MostInFlight: 1}}},
		rootCalls:  10,
		noWarnings: true,
	}, {
		// A batch that meets a 404 (never retried by a policy): the
		// failure says nothing about retries, and stands as not retried.
		name: "batch with a client error",
		build: func(b *builder) {
			for i := range 6 {
				code := 200
				if i == 2 {
					code = 404
				}
				b.rootCall("cron", "c-1", "http://api/x/"+string(rune('a'+i)), float64(i)*100, 10, code)
			}
		},
		edges: []want{{caller: "cron", callerOp: "GET",
			shape: shape{Calls: 6, Attempts: 6, Hist: []int{6}, Max: 1, Retried: []string{}, NotRetry: []string{"404"}},
			roots: &RootCalls{Calls: 6, Streams: 6, MostInFlight: 1}}},
		rootCalls:  6,
		noWarnings: true,
	}, {
		// Every attempt a root, each retry marked with its resend count
		// (.NET's HttpClient, Java's): the marker links each root to the
		// failed one before it in its stream, as that call's next attempt.
		name: "every attempt a root, resend markers",
		build: func(b *builder) {
			for i := range 5 {
				t := float64(i) * 1000
				for k, code := range []int{503, 503, 200} {
					c := b.rootClient("loadgen", "api", t, 10, httpStatus(code), method("GET"), target("http://api/x"), instance("lg-1"), resend(k))
					b.server(c, "api", "GET /x", t+0.5, 9, httpStatus(code))
					t += 10 + 50*float64(k+1)
				}
			}
		},
		edges: []want{{caller: "loadgen", callerOp: "GET",
			shape: shape{Calls: 5, Attempts: 15, Hist: []int{0, 0, 5}, Retries: true, Max: 3, Evidence: "markers", Retried: []string{"503"}, NotRetry: []string{}},
			roots: &RootCalls{Calls: 5, Failed: 5, Streams: 1, FollowedOK: 4, GapAfterOKP50MS: f(820), MostInFlight: 1, Linked: 10}}},
		rootCalls: 5,
	}, {
		// Every attempt a root, several requests to one URL in flight at
		// once, each sending its Idempotency-Key with every attempt: the
		// key says which root repeats which, concurrency or not.
		name: "every attempt a root, concurrent, request keys",
		build: func(b *builder) {
			for i := range 4 {
				t := float64(i) * 5
				for k, code := range []int{503, 503, 200} {
					c := b.rootClient("loadgen", "api", t, 10, httpStatus(code), method("POST"), target("http://api/x"), instance("lg-1"),
						requestKey(fmt.Sprint("k", i)))
					b.server(c, "api", "GET /x", t+0.5, 9, httpStatus(code))
					t += 10 + 20*float64(k+1)
				}
			}
		},
		// The calls' first roots start at 0, 5, 10 and 15, each while the
		// one before still runs: two at once, none after another ended.
		edges: []want{{caller: "loadgen", callerOp: "GET",
			shape: shape{Calls: 4, Attempts: 12, Hist: []int{0, 0, 4}, Retries: true, Max: 3, Evidence: EvidenceRequestKey, Retried: []string{"503"}, NotRetry: []string{}},
			roots: &RootCalls{Calls: 4, Failed: 4, Streams: 1, MostInFlight: 2, LinkedByKey: 8}}},
		rootCalls: 4,
	}, {
		// One client span around a library's attempts is one call, read
		// below the instrumentation: a root does not change that.
		name: "root wrapping several attempts",
		build: func(b *builder) {
			for i := range 5 {
				t := float64(i) * 1000
				c := b.rootClient("cli", "api", t, 100, httpStatus(200), method("GET"), target("http://api/x"))
				b.server(c, "api", "GET /x", t+1, 9, httpStatus(503))
				b.server(c, "api", "GET /x", t+50, 9, httpStatus(200))
			}
		},
		edges: []want{{caller: "cli", callerOp: "GET",
			shape: shape{Calls: 5, Attempts: 10, Hist: []int{0, 5}, Retries: true, Max: 2, Evidence: EvidenceBelow, Retried: []string{"503"}, NotRetry: []string{}},
			roots: &RootCalls{Calls: 5, Streams: 1, NoInstance: 5, FollowedOK: 4, GapAfterOKP50MS: f(900), MostInFlight: 1}}},
		rootCalls: 5,
	}, {
		// Retries from a fresh context: the first attempt under front's
		// span, the two retries roots of their own while front waits.
		// They are the failed call's, not calls of front's own.
		name:  "lost context",
		build: func(b *builder) { lostContext(b, "f-1", 5, 1000) },
		edges: []want{{caller: "front", callerOp: "GET /a", lost: 10,
			shape: shape{Calls: 5, Attempts: 15, Hist: []int{0, 0, 5}, Retries: true, Max: 3, Evidence: EvidenceLostContext, Retried: []string{"503"}, NotRetry: []string{}}}},
		rootCalls:   5,
		lost:        10,
		warnings:    []string{"10 client spans started their own trace while a caller of the same instance still waited", "10 of them are read as their calls' attempts, 0 are counted"},
		wantNoEdges: []string{"GET"},
	}, {
		// Two requests of one instance fail at once and one root follows:
		// whose retry it is the traces cannot tell; at least 2 attempts.
		name: "lost context, two callers waiting",
		build: func(b *builder) {
			for _, t := range []float64{0, 2} {
				b.newTrace()
				s := b.server(-1, "front", "GET /a", t, 200, instance("f-1"))
				b.call(s, "api", "GET /x", t+1, 10, httpStatus(503), method("GET"), target("http://api/x"), instance("f-1"))
			}
			b.rootClient("front", "api", 40, 10, httpStatus(503), method("GET"), target("http://api/x"), instance("f-1"))
			b.rootClient("front", "api", 90, 10, httpStatus(200), method("GET"), target("http://api/x"), instance("f-1"))
		},
		edges: []want{{caller: "front", callerOp: "GET /a", lost: 2, leftOut: 2,
			shape: shape{Calls: 2, Attempts: 2, Hist: []int{2}, Retries: true, Max: 2, Evidence: EvidenceLostContext, Retried: []string{"503"}, NotRetry: []string{}}}},
		rootCalls: 2,
		lost:      2,
		warnings:  []string{"0 of them are read as their calls' attempts, 2 are counted", "2 of them could be the retry of more than one failed call"},
	}, {
		// Two requests of one instance fail at once, and each retry names
		// its request's key: whose retry each is, the key says.
		name: "lost context, two callers waiting, request keys",
		build: func(b *builder) {
			for i, t := range []float64{0, 2} {
				b.newTrace()
				s := b.server(-1, "front", "GET /a", t, 200, instance("f-1"))
				b.call(s, "api", "GET /x", t+1, 10, httpStatus(503), method("GET"), target("http://api/x"), instance("f-1"), requestKey(fmt.Sprint("k", i)))
			}
			b.rootClient("front", "api", 40, 10, httpStatus(200), method("GET"), target("http://api/x"), instance("f-1"), requestKey("k1"))
			b.rootClient("front", "api", 45, 10, httpStatus(200), method("GET"), target("http://api/x"), instance("f-1"), requestKey("k0"))
		},
		edges: []want{{caller: "front", callerOp: "GET /a", lost: 2,
			shape: shape{Calls: 2, Attempts: 4, Hist: []int{0, 2}, Retries: true, Max: 2, Evidence: EvidenceLostContext, Retried: []string{"503"}, NotRetry: []string{}}}},
		rootCalls: 2,
		lost:      2,
		warnings:  []string{"2 of them are read as their calls' attempts, 0 are counted"},
	}, {
		// The instance also polls the same URL from no span: its roots
		// are no failed call's retries, so which of the stream's roots is
		// a retry is unknown. The one that came while front waited is
		// counted as a lost retry, not read as an attempt.
		name: "lost context beside a poller of the same request",
		build: func(b *builder) {
			for _, t := range []float64{0, 500, 1000} {
				b.rootClient("front", "api", t, 10, httpStatus(200), method("GET"), target("http://api/x"), instance("f-1"))
			}
			b.newTrace()
			s := b.server(-1, "front", "GET /a", 1200, 200, instance("f-1"))
			b.call(s, "api", "GET /x", 1201, 10, httpStatus(503), method("GET"), target("http://api/x"), instance("f-1"))
			b.rootClient("front", "api", 1240, 10, httpStatus(200), method("GET"), target("http://api/x"), instance("f-1"))
		},
		edges: []want{
			{caller: "front", callerOp: "GET /a", lost: 1, leftOut: 1,
				shape: shape{Calls: 1, Attempts: 1, Hist: []int{1}, Retries: true, Max: 2, Evidence: EvidenceLostContext, Retried: []string{"503"}, NotRetry: []string{}}},
			{caller: "front", callerOp: "GET",
				shape: shape{Calls: 3, Attempts: 3, Hist: []int{3}, Max: 1, Retried: []string{}, NotRetry: []string{}},
				roots: &RootCalls{Calls: 3, Streams: 1, FollowedOK: 2, GapAfterOKP50MS: f(490), MostInFlight: 1}},
		},
		rootCalls: 4,
		lost:      1,
		warnings:  []string{"1 of them share their instance and request with roots no failed call was waiting for"},
	}, {
		// A root of another instance, or after the caller stopped waiting,
		// is nobody's lost retry: a call of its own.
		name: "roots that are no lost retry",
		build: func(b *builder) {
			b.newTrace()
			s := b.server(-1, "front", "GET /a", 0, 20, instance("f-1"))
			b.call(s, "api", "GET /x", 1, 10, httpStatus(503), method("GET"), target("http://api/x"), instance("f-1"))
			b.rootClient("front", "api", 15, 10, httpStatus(200), method("GET"), target("http://api/x"), instance("f-2"))
			b.rootClient("front", "api", 60, 10, httpStatus(200), method("GET"), target("http://api/x"), instance("f-1"))
		},
		edges: []want{
			{caller: "front", callerOp: "GET /a",
				shape: shape{Calls: 1, Attempts: 1, Hist: []int{1}, Max: 1, Exact: true, Retried: []string{}, NotRetry: []string{"503"}}},
			{caller: "front", callerOp: "GET",
				shape: shape{Calls: 2, Attempts: 2, Hist: []int{2}, Max: 1, Retried: []string{}, NotRetry: []string{}},
				roots: &RootCalls{Calls: 2, Streams: 2, MostInFlight: 1}},
		},
		rootCalls:  3,
		noWarnings: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			tc.build(b)
			tp := b.infer()
			for _, w := range tc.edges {
				var e *Edge
				for i := range tp.Edges {
					if x := &tp.Edges[i]; x.Caller == w.caller && x.CallerOperation == w.callerOp && x.Callee == "api" {
						e = x
					}
				}
				if e == nil {
					t.Fatalf("no edge %s(%s) → api; edges: %s", w.caller, w.callerOp, edgeList(tp))
				}
				wantShape(t, *e, w.shape)
				wantEq(t, "retries_unknown", e.RetriesUnknown, w.unknown)
				wantEq(t, "lost_context_retries", e.LostContextRetries, w.lost)
				wantEq(t, "lost_context_left_out", e.LostContextLeftOut, w.leftOut)
				if !reflect.DeepEqual(e.RootCalls, w.roots) {
					t.Errorf("root_calls:\n got %s\nwant %s", show(e.RootCalls), show(w.roots))
				}
				if w.unknown && (e.Backoff.Kind != BackoffUnknown || e.PerTryTimeoutMS != nil) {
					t.Errorf("retries unknown, yet backoff %q and per-try timeout %v are claimed", e.Backoff.Kind, e.PerTryTimeoutMS)
				}
				for _, p := range tp.Paths {
					if w.unknown && slices.Contains(p.Services, w.caller) && p.WorstCaseExact {
						t.Errorf("path %v through an edge whose retries are unknown: worst case %dx claimed exact", p.Services, p.WorstCaseAmplification)
					}
				}
			}
			for _, op := range tc.wantNoEdges {
				for _, e := range tp.Edges {
					if e.CallerOperation == op && e.Callee == "api" {
						t.Errorf("lost-context retries read as calls of their own: %s", edgeList(tp))
					}
				}
			}
			wantEq(t, "source.root_calls", tp.Source.RootCalls, tc.rootCalls)
			wantEq(t, "source.lost_context_retries", tp.Source.LostContextRetries, tc.lost)
			all := strings.Join(tp.Warnings, "\n")
			for _, w := range tc.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("no warning says %q:\n%s", w, all)
				}
			}
			if tc.noWarnings && len(tp.Warnings) > 0 {
				t.Errorf("warnings: %q", tp.Warnings)
			}
		})
	}
}

func show(rc *RootCalls) string {
	if rc == nil {
		return "nil"
	}
	deref := func(v *float64) any {
		if v == nil {
			return nil
		}
		return *v
	}
	return fmt.Sprintf("%+v after failure %v, after OK %v", *rc, deref(rc.GapAfterFailureP50MS), deref(rc.GapAfterOKP50MS))
}

// rootShapes is every shape of root client spans at once, for the shard
// test: retries as roots from two instances at once, lost-context retries,
// a root that could be the retry of two failed calls, one beside a poller
// of the same request, and roots linked by resend markers.
func rootShapes(*testing.T) *ingest.Set {
	b := newBuilder()
	rootRetries(b, "lg-1", 4, 20)
	rootRetries(b, "lg-2", 6, 300)
	lostContext(b, "f-1", 5, 1000)
	lostContext(b, "f-2", 3, 10)
	for _, t := range []float64{0, 2} {
		b.newTrace()
		s := b.server(-1, "front", "GET /a", t, 200, instance("f-3"))
		b.call(s, "api", "GET /x", t+1, 10, httpStatus(503), method("GET"), target("http://api/x"), instance("f-3"))
	}
	b.rootClient("front", "api", 40, 10, httpStatus(503), method("GET"), target("http://api/x"), instance("f-3"))
	for _, t := range []float64{0, 500} {
		b.rootClient("front", "api", t, 10, httpStatus(200), method("GET"), target("http://api/x"), instance("f-4"))
	}
	b.newTrace()
	s := b.server(-1, "front", "GET /a", 700, 200, instance("f-4"))
	b.call(s, "api", "GET /x", 701, 10, httpStatus(503), method("GET"), target("http://api/x"), instance("f-4"))
	b.rootClient("front", "api", 740, 10, httpStatus(200), method("GET"), target("http://api/x"), instance("f-4"))
	for i := range 3 {
		t := 3000 + float64(i)*5
		for k, code := range []int{503, 200} {
			b.rootClient("keyed", "api", t, 10, httpStatus(code), method("POST"), target("http://api/z"), instance("k-1"), requestKey(fmt.Sprint("z", i)))
			t += 30 * float64(k+1)
		}
	}
	for i := range 3 {
		t := 2000 + float64(i)*300
		for k, code := range []int{503, 200} {
			c := b.rootClient("batch", "api", t, 10, httpStatus(code), method("GET"), target("http://api/y"), instance("b-1"), resend(k))
			b.server(c, "api", "GET /y", t+0.5, 9, httpStatus(code))
			t += 60
		}
	}
	return b.set
}
