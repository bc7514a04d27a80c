package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/avast/retry-go/v4"
	"github.com/hashicorp/go-retryablehttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The root-clients scenario is calls whose caller is not traced, or whose
// context was lost (issue 11, items 5 and 10): CLIENT spans that start
// their own trace.
//
//	loadgen  --otelhttp, go-retryablehttp x4, no span around its calls-->  api
//	batch    --the same, 3 requests to one URL at once, each with its Idempotency-Key-->  api
//	driver --(not instrumented)-->  front  --otelhttp, retry-go x3, retries from a worker pool with context.Background()-->  api
//
// loadgen is a load generator instrumented with otelhttp under
// go-retryablehttp and no span of its own: every attempt, retries
// included, is the root of a trace. front's handler makes the first
// attempt in its request's context and hands the retries to a worker pool
// that sends them with a fresh context: the first attempt sits under
// front's SERVER span, each retry starts a trace of its own while front
// waits for it. api fails each request as its case's script says (the
// X-Case header, which every attempt of a request carries).
const (
	rootClientsName = "root-clients"
	routeItem       = "GET /items/{id}"
	routeFront      = "GET /front/{id}"
	caseHeader      = "X-Case"
)

// loadgenRetry and frontRetry are the two callers' policies in the
// vocabulary of truth.json. go-retryablehttp's DefaultBackoff waits
// RetryWaitMin·2^n up to RetryWaitMax, unjittered (and honours a
// Retry-After that api never sends); frontRetry's retry-go waits a fixed
// delay.
var (
	loadgenRetry = Policy{Library: libRetryablehttp, MaxAttempts: 4,
		Backoff: Backoff{Kind: "exponential", Base: 20 * ms, Multiplier: 2, Cap: 160 * ms, Jitter: "none"}}
	frontRetry = Policy{Library: "github.com/avast/retry-go/v4", MaxAttempts: 3,
		Backoff: Backoff{Kind: "constant", Base: 25 * ms, Jitter: "none"}}
)

// rootCase is a group of requests that share a fault script: how many
// times api answers 503 before it answers 200.
type rootCase struct {
	count, failures int
}

// rootClients is the committed scenario's traffic: loadgen's requests
// (each to one of a few item URLs, so that a URL's stream holds several
// requests), then front's, one after the other.
type rootClients struct {
	loadgen, batch, front []rootCase
	// loadgenWorkers and batchWorkers send those clients' requests that
	// many at a time (batch's all to one URL).
	loadgenWorkers, batchWorkers int
	// items is how many item URLs loadgen's requests spread over.
	items int
}

func rootClientsScenario() rootClients {
	return rootClients{
		loadgen:        []rootCase{{16, 0}, {7, 1}, {5, 2}, {3, 3}, {3, 4}},
		batch:          []rootCase{{5, 0}, {3, 1}, {2, 2}, {2, 4}},
		batchWorkers:   3,
		front:          []rootCase{{10, 0}, {7, 1}, {4, 2}, {3, 3}},
		loadgenWorkers: 2,
		items:          6,
	}
}

// rootEdgeTruth is an edge of truth.json with what this scenario adds:
// the calls the caller made, and which of its attempts started a trace of
// their own ("every": every attempt; "keyed": every attempt, each naming
// its request's Idempotency-Key; "retries": the retries, not the first
// attempt) and how many.
type rootEdgeTruth struct {
	truthEdge
	Calls         int    `json:"calls"`
	TracedAsRoots string `json:"traced_as_roots"`
	RootAttempts  int    `json:"root_attempts"`
	// FailedRootAttempts counts the root attempts api answered 503.
	FailedRootAttempts int `json:"failed_root_attempts"`
}

type rootTruth struct {
	Scenario     string          `json:"scenario"`
	Description  string          `json:"description"`
	RootRequests int             `json:"root_requests"`
	Edges        []rootEdgeTruth `json:"edges"`
	Paths        []truthPath     `json:"paths"`
}

// rootTally counts what one caller did: its calls and attempts, the
// attempts that started a trace of their own and how many of those
// failed, and the calls whose last attempt failed.
type rootTally struct {
	calls, attempts, exhausted int
	rootAttempts, failedRoots  int
	retried                    bool
}

// apiFaults answers each request as its case's script says, counting the
// attempts per case.
type apiFaults struct {
	mu      sync.Mutex
	scripts map[string]int // case → failures before success
	seen    map[string]int // case → attempts so far
}

func (f *apiFaults) next(c string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.seen[c]
	f.seen[c]++
	if n < f.scripts[c] {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

// runRootClients runs the scenario and writes its files into
// out/root-clients/. With requireInferable, a run in which a caller never
// gave up (no call exhausted its attempts) fails before it writes anything.
func runRootClients(ctx context.Context, sc rootClients, out string, requireInferable bool) (rootTruth, string, error) {
	faults := &apiFaults{scripts: map[string]int{}, seen: map[string]int{}}
	roots, loadgenCalls, loadgenGaveUp, batchCalls, batchGaveUp, frontGaveUp := 0, 0, 0, 0, 0, 0
	for _, c := range sc.front {
		roots += c.count
	}
	var servers []*http.Server
	var tps []*sdktrace.TracerProvider
	requests, sum, err := capture(ctx, roots, func(otlpURL string) (func() (string, error), func(context.Context) error, error) {
		prop := propagation.TraceContext{}
		serve := func(name, route string, h http.HandlerFunc) (string, *sdktrace.TracerProvider, error) {
			tp, err := newProvider(ctx, name, otlpURL, name+"-1")
			if err != nil {
				return "", nil, err
			}
			tps = append(tps, tp)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return "", nil, err
			}
			mux := http.NewServeMux()
			mux.Handle(route, otelhttp.NewHandler(h, route, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop)))
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
			servers = append(servers, srv)
			go srv.Serve(ln)
			return "http://" + ln.Addr().String(), tp, nil
		}
		apiURL, _, err := serve("api", routeItem, func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(2 * time.Millisecond)
			code := faults.next(r.Header.Get(caseHeader))
			writeJSON(w, code, map[string]string{"id": r.PathValue("id")})
		})
		if err != nil {
			return nil, nil, err
		}
		frontTP, err := newProvider(ctx, "front", otlpURL, "front-1")
		if err != nil {
			return nil, nil, err
		}
		tps = append(tps, frontTP)
		frontClient := &http.Client{Transport: otelhttp.NewTransport(&http.Transport{MaxIdleConnsPerHost: 16},
			otelhttp.WithTracerProvider(frontTP), otelhttp.WithPropagators(prop))}
		pool := newRetryPool(2)
		frontURL, _, err := serve("front", routeFront, func(w http.ResponseWriter, r *http.Request) {
			code := frontCall(r.Context(), frontClient, pool, apiURL, r.PathValue("id"))
			writeJSON(w, code, map[string]string{"id": r.PathValue("id")})
		})
		if err != nil {
			return nil, nil, err
		}
		// loadgen and batch: no server, no span of their own; their
		// attempts are otelhttp's CLIENT spans under go-retryablehttp.
		// batch's transport records the Idempotency-Key each of its
		// requests sends with every attempt (captureTransport).
		client := func(name string, base http.RoundTripper) (*retryablehttp.Client, error) {
			tp, err := newProvider(ctx, name, otlpURL, name+"-1")
			if err != nil {
				return nil, err
			}
			tps = append(tps, tp)
			return &retryablehttp.Client{
				HTTPClient:   &http.Client{Transport: otelhttp.NewTransport(base, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop))},
				RetryWaitMin: loadgenRetry.Backoff.Base, RetryWaitMax: loadgenRetry.Backoff.Cap, RetryMax: loadgenRetry.MaxAttempts - 1,
				CheckRetry: retryablehttp.DefaultRetryPolicy, Backoff: retryablehttp.DefaultBackoff,
				ErrorHandler: retryablehttp.PassthroughErrorHandler,
			}, nil
		}
		loadgenRC, err := client("loadgen", &http.Transport{MaxIdleConnsPerHost: 16})
		if err != nil {
			return nil, nil, err
		}
		batchRC, err := client("batch", captureTransport{base: &http.Transport{MaxIdleConnsPerHost: 16}})
		if err != nil {
			return nil, nil, err
		}
		drive := func() (string, error) {
			answers := map[int]int{}
			var errs []error
			var err error
			loadgenCalls, loadgenGaveUp, err = rootClientRun(loadgenRC, faults, apiURL, "L", sc.loadgen, sc.loadgenWorkers,
				func(i int) string { return strconv.Itoa(i % sc.items) }, false)
			errs = append(errs, err)
			batchCalls, batchGaveUp, err = rootClientRun(batchRC, faults, apiURL, "B", sc.batch, sc.batchWorkers,
				func(int) string { return "hot" }, true)
			errs = append(errs, err)
			plain := &http.Client{Timeout: 30 * time.Second} // not instrumented: front's span is the root
			i := 0
			for _, c := range sc.front {
				for range c.count {
					id := fmt.Sprint("F", i)
					faults.mu.Lock()
					faults.scripts[id] = c.failures
					faults.mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					code, err := rootRequest(plain, http.MethodGet, frontURL+"/front/"+id)
					if err != nil {
						return "", fmt.Errorf("root request %s: %w", id, err)
					}
					answers[code]++
					if code >= 500 {
						frontGaveUp++
					}
					i++
				}
			}
			pool.close()
			return answersOf(answers), errors.Join(errs...)
		}
		stop := func(ctx context.Context) error {
			var errs []error
			for _, s := range servers {
				errs = append(errs, s.Shutdown(ctx))
			}
			for _, tp := range tps {
				errs = append(errs, tp.ForceFlush(ctx), tp.Shutdown(ctx))
			}
			return errors.Join(errs...)
		}
		return drive, stop, nil
	})
	if err != nil {
		return rootTruth{}, sum, err
	}
	loadgen, batch := faults.tally("L", loadgenCalls, true, loadgenGaveUp), faults.tally("B", batchCalls, true, batchGaveUp)
	front := faults.tally("F", roots, false, frontGaveUp)
	sum += loadgen.summary("loadgen") + batch.summary("batch") + front.summary("front")
	if requireInferable && (loadgen.exhausted == 0 || batch.exhausted == 0 || front.exhausted == 0 || !loadgen.retried || !batch.retried || !front.retried) {
		return rootTruth{}, sum, fmt.Errorf("a caller never retried or never gave up, nothing written")
	}
	t := rootTruth{Scenario: rootClientsName, RootRequests: roots,
		Description: "loadgen, a load generator with otelhttp under go-retryablehttp (4 attempts, 20ms ×2 up to 160ms, no jitter) and no span " +
			"around its calls, calls api: every attempt is the root of a trace of its own. batch does the same, several requests to one URL " +
			"at once, each with an Idempotency-Key its spans record. front retries api with retry-go (3 attempts, " +
			"25ms apart) and sends the retries from a worker pool with context.Background(): its first attempt is under its SERVER span, " +
			"each retry starts a trace of its own while front waits.",
		Edges: []rootEdgeTruth{loadgen.truth("loadgen", loadgenRetry, "every"), batch.truth("batch", loadgenRetry, "keyed"),
			front.truth("front", frontRetry, "retries")},
		Paths: []truthPath{}}
	return t, sum, writeSample(filepath.Join(out, rootClientsName), requests, t)
}

// rootClientRun sends a client's requests (cases, each the case id prefix
// and a number) through rc, workers at a time, each to the item its
// number names; with keyed, each request sends an Idempotency-Key of its
// own (the same on every attempt). It returns how many requests it sent
// and how many it gave up on (the last attempt failed).
func rootClientRun(rc *retryablehttp.Client, faults *apiFaults, apiURL, prefix string, cases []rootCase, workers int,
	item func(int) string, keyed bool) (calls, gaveUp int, err error) {
	var mu sync.Mutex
	var errs []error
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				id := fmt.Sprint(prefix, i)
				key := ""
				if keyed {
					key = "key-" + id
				}
				failed, err := rootClientCall(rc, apiURL, item(i), id, key)
				mu.Lock()
				errs = append(errs, err)
				if failed {
					gaveUp++
				}
				mu.Unlock()
			}
		}()
	}
	for _, c := range cases {
		for range c.count {
			faults.mu.Lock()
			faults.scripts[fmt.Sprint(prefix, calls)] = c.failures
			faults.mu.Unlock()
			jobs <- calls
			calls++
		}
	}
	close(jobs)
	wg.Wait()
	return calls, gaveUp, errors.Join(errs...)
}

// rootClientCall sends one request (case id) for item through
// go-retryablehttp, in a context with no span: each attempt's CLIENT span
// is a root. A key is sent as the request's Idempotency-Key. It reports
// whether the client gave up (its last attempt failed).
func rootClientCall(rc *retryablehttp.Client, apiURL, item, id, key string) (bool, error) {
	req, err := retryablehttp.NewRequestWithContext(context.Background(), http.MethodGet, apiURL+"/items/"+item, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set(caseHeader, id)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := rc.Do(req)
	if err != nil {
		return false, fmt.Errorf("%s: %w", id, err)
	}
	return drain(resp) >= 500, nil
}

// frontCall is front's call to api for request id: the first attempt in
// the request's context ctx, the retries (retry-go) sent by the worker
// pool with a fresh context, which front waits for. It returns the status
// front answers with.
func frontCall(ctx context.Context, client *http.Client, pool *retryPool, apiURL, id string) int {
	first := true
	code, err := retry.DoWithData(func() (int, error) {
		var code int
		var err error
		if first {
			first = false
			code, err = getItem(ctx, client, apiURL, id)
		} else {
			code, err = pool.retry(func(fresh context.Context) (int, error) { return getItem(fresh, client, apiURL, id) })
		}
		if err == nil && code >= 500 {
			return code, fmt.Errorf("api answered %d", code)
		}
		return code, err
	}, retry.Attempts(uint(frontRetry.MaxAttempts)), retry.Delay(frontRetry.Backoff.Base), retry.DelayType(retry.FixedDelay),
		retry.LastErrorOnly(true), retry.Context(ctx))
	if err != nil {
		return http.StatusBadGateway
	}
	return code
}

// getItem asks api for item id's case, in ctx; the item URL is the case
// id's, so that each request of front's is a stream of its own.
func getItem(ctx context.Context, client *http.Client, apiURL, id string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, apiURL+"/items/"+id, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(caseHeader, id)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	return drain(resp), nil
}

// retryPool runs retries on worker goroutines that know nothing of the
// request they retry: each runs with context.Background(), as a pool
// shared by every request does.
type retryPool struct {
	jobs chan func()
	wg   sync.WaitGroup
}

func newRetryPool(workers int) *retryPool {
	p := &retryPool{jobs: make(chan func())}
	for range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for job := range p.jobs {
				job()
			}
		}()
	}
	return p
}

// retry runs f on a worker, with a fresh context (context.Background():
// the request's span is not in it), and waits for it.
func (p *retryPool) retry(f func(context.Context) (int, error)) (int, error) {
	var code int
	var err error
	done := make(chan struct{})
	p.jobs <- func() {
		code, err = f(context.Background())
		close(done)
	}
	<-done
	return code, err
}

func (p *retryPool) close() {
	close(p.jobs)
	p.wg.Wait()
}

// tally counts a caller's calls from what api saw of each of its cases
// (prefix "L" or "F" and a number), the first attempt of each counted
// as a root where firstIsRoot. gaveUp counts the calls whose last
// attempt failed.
func (f *apiFaults) tally(prefix string, n int, firstIsRoot bool, gaveUp int) *rootTally {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &rootTally{calls: n, exhausted: gaveUp}
	for i := range n {
		c := fmt.Sprint(prefix, i)
		seen, failed := f.seen[c], min(f.seen[c], f.scripts[c])
		t.attempts += seen
		t.retried = t.retried || seen > 1
		if firstIsRoot {
			t.rootAttempts, t.failedRoots = t.rootAttempts+seen, t.failedRoots+failed
			continue
		}
		t.rootAttempts += seen - 1
		if failed > 1 {
			t.failedRoots += failed - 1
		}
	}
	return t
}

func (t *rootTally) summary(name string) string {
	return fmt.Sprintf("  %-9s → api       calls %3d, attempts %3d (%d of them trace roots, %d failed), gave up %d\n",
		name, t.calls, t.attempts, t.rootAttempts, t.failedRoots, t.exhausted)
}

// truth is the tally's edge for truth.json: caller → api GET /items/{id}
// under policy p.
func (t *rootTally) truth(caller string, p Policy, roots string) rootEdgeTruth {
	lib := p.Library
	te := truthEdge{Caller: caller, Callee: "api", Operation: httpRoute(routeItem), Method: http.MethodGet, Library: &lib,
		Retries: true, MaxAttempts: p.MaxAttempts, ExhaustedInTraces: t.exhausted > 0,
		RetriedStatus: []int{http.StatusServiceUnavailable}, NotRetriedStatus: []int{}, RetryAfterCaptured: true, Attempts: t.attempts}
	te.configure(p)
	return rootEdgeTruth{truthEdge: te, Calls: t.calls, TracedAsRoots: roots, RootAttempts: t.rootAttempts, FailedRootAttempts: t.failedRoots}
}
