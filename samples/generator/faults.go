package main

import (
	"bytes"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault is what a faulting endpoint does with one request. The zero Fault
// answers normally.
type Fault struct {
	// Status, when non-zero, is answered instead of the normal response.
	Status int
	// RetryAfter, in seconds, is sent as a Retry-After header with Status.
	RetryAfter int
	// Delay is spent before answering and ignores cancellation, like a
	// blocking query that keeps running after its caller gave up.
	Delay time.Duration
	// Pushback, at a gRPC endpoint, is sent with Status as the
	// grpc-retry-pushback-ms trailer ("" for none): the milliseconds the
	// client is to wait before its retry, or a negative number telling it
	// not to retry.
	Pushback string
	// Abort, after Delay, ends the request without an answer: the handler
	// aborts (http.ErrAbortHandler) and the server closes the connection,
	// as a crashed worker does. The client's request fails in transport
	// and the callee's SERVER span ends without a status code.
	Abort bool
	// Pending answers 200 OK with a body that says the result is not
	// ready yet ({"status":"pending"}): a success to every status check,
	// which only a caller's result predicate (pendingBody) retries.
	Pending bool
}

// The faults the scenarios inject.
var (
	unavailable = Fault{Status: http.StatusServiceUnavailable}
	throttled   = Fault{Status: http.StatusTooManyRequests, RetryAfter: 1}
	badRequest  = Fault{Status: http.StatusBadRequest}
	slow        = Fault{Delay: 250 * time.Millisecond}
	// slowUnavailable is a 503 answered after a fixed 30ms: an error
	// that takes time, not a timeout.
	slowUnavailable = Fault{Status: http.StatusServiceUnavailable, Delay: 30 * time.Millisecond}
	// aborted is a connection closed without an answer.
	aborted = Fault{Abort: true}
	// notReady is a 200 whose body says "pending": polled again by a
	// caller that retries on the result.
	notReady = Fault{Pending: true}
)

// pendingBody reports whether an answer's body says its result is not
// ready yet: what a notReady fault answers, and what the result
// predicates of the callers that retry on the result look for.
func pendingBody(b []byte) bool { return bytes.Contains(b, []byte(`"status":"pending"`)) }

// times returns a script of n copies of f.
func times(n int, f Fault) []Fault {
	s := make([]Fault, n)
	for i := range s {
		s[i] = f
	}
	return s
}

// target names a faulting endpoint and how its fault key derives from the
// root request's order id.
type target struct {
	service string
	route   string
	key     func(order string) string
}

// The endpoints that inject faults.
var (
	dbStock          = target{"db", routeDBStock, skuOf}
	inventoryStock   = target{"inventory", routeStock, skuOf}
	inventoryReserve = target{"inventory", routeReserve, orderOf}
	paymentsCharge   = target{"payments", routeCharge, orderOf}
)

func skuOf(order string) string   { return "sku-" + order }
func orderOf(order string) string { return order }

// Outage is a fault in time: every request to Target's endpoint (any key)
// that arrives between From and From+For after the first root request was
// sent is answered with Fault, whatever request it belongs to. Under
// overlapping traffic that is what a dependency going down looks like: the
// requests in flight then fail together, not one script at a time.
type Outage struct {
	Target    target
	From, For time.Duration
	Fault     Fault
}

// faultTable hands out scripted faults. Each endpoint and key (a sku or an
// order id) has a script consumed one request at a time; past its end, or
// without one, requests succeed unless an outage window covers them.
// Retries at any layer therefore walk through the script in order, which
// makes the outcome of every root request deterministic where only
// scripts are used; outages make it a function of time.
type faultTable struct {
	mu      sync.Mutex
	scripts map[string][]Fault
	outages []Outage
	start   time.Time // when the first root request was sent (outages' zero)
	// received holds the requests each endpoint and key received, when
	// each came and was done with: what the callee saw of a call's
	// attempts and hedges, whatever the caller cancelled on their way.
	received map[string][]visit
}

// visit is one request an endpoint received: when it arrived, when its
// handler was done with it, and whether it was answered (not aborted by
// its fault: an answer, whatever its status).
type visit struct {
	from, to time.Time
	answered bool
}

func newFaultTable() *faultTable {
	return &faultTable{scripts: map[string][]Fault{}, received: map[string][]visit{}}
}

// arrived records a request to service's route with key and returns the
// function that records it done with, answered or not.
func (ft *faultTable) arrived(service, route, key string) func(answered bool) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	k := faultKey(service, route, key)
	ft.received[k] = append(ft.received[k], visit{from: time.Now()})
	i := len(ft.received[k]) - 1
	return func(answered bool) {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		ft.received[k][i].to, ft.received[k][i].answered = time.Now(), answered
	}
}

// receivedBy returns, for each key service's route received requests
// for, those requests in the order they arrived; the keys in their order.
func (ft *faultTable) receivedBy(service, route string) [][]visit {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	prefix := faultKey(service, route, "")
	var out [][]visit
	for _, k := range slices.Sorted(maps.Keys(ft.received)) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, slices.Clone(ft.received[k]))
		}
	}
	return out
}

func faultKey(service, route, key string) string { return service + " " + route + " " + key }

// plan installs script for the root request with the given order id.
func (ft *faultTable) plan(t target, order string, script []Fault) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.scripts[faultKey(t.service, t.route, t.key(order))] = script
}

// schedule installs outages timed from now.
func (ft *faultTable) schedule(outages []Outage) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.outages, ft.start = outages, time.Now()
}

// next pops the fault for one request to service's route with key: its
// script's next fault, or else an outage's under way, or none.
func (ft *faultTable) next(service, route, key string) Fault {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	k := faultKey(service, route, key)
	if s := ft.scripts[k]; len(s) > 0 {
		ft.scripts[k] = s[1:]
		return s[0]
	}
	at := time.Since(ft.start)
	for _, o := range ft.outages {
		if o.Target.service == service && o.Target.route == route && at >= o.From && at < o.From+o.For {
			return o.Fault
		}
	}
	return Fault{}
}

// apply serves f: it sleeps for f.Delay, then aborts the request if
// f.Abort, or answers f.Status if set and reports whether it answered.
func (f Fault) apply(w http.ResponseWriter) bool {
	if f.Delay > 0 {
		time.Sleep(f.Delay)
	}
	if f.Abort {
		panic(http.ErrAbortHandler) // net/http closes the connection and logs nothing
	}
	if f.Pending {
		writeJSON(w, http.StatusOK, map[string]string{"status": "pending"})
		return true
	}
	if f.Status == 0 {
		return false
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	http.Error(w, http.StatusText(f.Status), f.Status)
	return true
}
