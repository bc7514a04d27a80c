package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// simulate plays a scenario's fault scripts through the mesh's call graph
// and its callers' retry policies without any network, and returns callers
// whose stats hold the attempts each call would make. Because the faults are
// scripted, the real run must see the same attempts: TestShortScenario holds
// the two to each other, and TestScenariosInferable uses the simulation to
// check the full scenarios quickly.
//
// It models the handlers in mesh.go, the shared retry predicate, relay and
// per-try timeouts for slow faults at the endpoint a caller calls directly.
func simulate(sc Scenario) []*caller {
	s := &simMesh{callers: map[string]*caller{}, faults: newFaultTable(), tokens: map[string]uint{}}
	var callers []*caller
	for _, e := range sc.Edges {
		c := newCaller(e, []string{""}, nil)
		s.callers[e.Route] = c
		callers = append(callers, c)
		if q := e.Policy.Quota; q != nil {
			s.tokens[e.Route] = q.Capacity
		}
	}
	i := 0
	for _, c := range sc.Cases {
		for range c.Count {
			order := fmt.Sprint(1001 + i)
			i++
			if c.Script != nil {
				s.faults.plan(c.Target, order, c.Script)
			}
			if c.Pay {
				s.call(routePayment, func(Policy) simResult { return s.payment(order) })
			} else {
				s.call(routeOrder, func(Policy) simResult { return s.order(order) })
			}
		}
	}
	return callers
}

type simMesh struct {
	callers map[string]*caller // by callee route
	faults  *faultTable
	// tokens is what is left of each retry quota, by callee route.
	tokens map[string]uint
}

// simResult is one attempt's or call's outcome as its caller sees it.
type simResult struct {
	status     int // 0 for a transport error
	timeout    bool
	retryAfter bool
	pending    bool // a 200 whose body says "pending" (notReady)
}

func (r simResult) failed() bool { return r.status == 0 || r.status >= 400 }

// call makes a call along the edge to route, attempt by attempt, the way
// every retry adapter in caller.go does, and records it in the edge's stats.
func (s *simMesh) call(route string, serve func(Policy) simResult) simResult {
	c := s.callers[route]
	p := c.edge.Policy
	log := &attemptLog{}
	var r simResult
	var held uint // the retry token the attempt under way holds
	for attempt := 1; attempt <= p.MaxAttempts; attempt++ {
		r = serve(p)
		log.add(r.status, r.retryAfter, r.pending, time.Time{}, time.Time{})
		if q := p.Quota; q != nil && !r.failed() {
			// A success refunds its retry's token, or adds the no-retry
			// increment after a first attempt (never above capacity).
			if attempt == 1 {
				held = q.NoRetryIncrement
			}
			s.tokens[route] = min(s.tokens[route]+held, q.Capacity)
		}
		retried := r.failed() && (r.status == 0 || retryableStatus(r.status)) || r.pending && p.RetryOnResult
		if !retried || attempt == p.MaxAttempts {
			break
		}
		if q := p.Quota; q != nil {
			// The scenarios send no throttling error: every retry costs RetryCost.
			if s.tokens[route] < q.RetryCost {
				c.stats.refused()
				break
			}
			s.tokens[route] -= q.RetryCost
			held = q.RetryCost
		}
	}
	c.stats.record(context.Background(), p, log)
	return r
}

// serveFault consumes the next scripted fault of t for key, as the endpoint
// does on every request it receives, and answers it; without one it answers
// with next.
func (s *simMesh) serveFault(p Policy, t target, key string, next func() simResult) simResult {
	f := s.faults.next(t.service, t.route, key)
	switch {
	case f.Delay > 0 && p.PerTryTimeout > 0 && f.Delay >= p.PerTryTimeout:
		return simResult{timeout: true}
	case f.Status != 0:
		return simResult{status: f.Status, retryAfter: f.RetryAfter > 0}
	case f.Pending:
		return simResult{status: http.StatusOK, pending: true}
	}
	return next()
}

// relayed is relay in mesh.go.
func relayed(r simResult) simResult {
	switch {
	case r.status == 0 && r.timeout:
		return simResult{status: http.StatusGatewayTimeout}
	case r.status == 0:
		return simResult{status: http.StatusBadGateway}
	case r.status >= 400 && !retryableStatus(r.status):
		return simResult{status: r.status}
	case r.status >= 400:
		return simResult{status: http.StatusServiceUnavailable}
	}
	return simResult{status: r.status, pending: r.pending} // a success's body is relayed as it came
}

func ok() simResult { return simResult{status: http.StatusOK} }

func (s *simMesh) order(id string) simResult {
	sku := skuOf(id)
	r := s.call(routeStock, func(p Policy) simResult {
		return s.serveFault(p, inventoryStock, sku, func() simResult {
			return relayed(s.call(routeDBStock, func(p Policy) simResult {
				return s.serveFault(p, dbStock, sku, ok)
			}))
		})
	})
	if r.failed() {
		return relayed(r)
	}
	for range pricedItems {
		s.call(routePrice, func(Policy) simResult { return ok() })
	}
	return ok()
}

func (s *simMesh) payment(id string) simResult {
	created := func(t target) func(Policy) simResult {
		return func(p Policy) simResult {
			return s.serveFault(p, t, orderOf(id), func() simResult { return simResult{status: http.StatusCreated} })
		}
	}
	if r := s.call(routeReserve, created(inventoryReserve)); r.failed() {
		return relayed(r)
	}
	if r := s.call(routeCharge, created(paymentsCharge)); r.failed() {
		return relayed(r)
	}
	return simResult{status: http.StatusCreated}
}

// TestScenariosInferable checks, through the simulation, that every full
// scenario gives every retrying edge enough waits for inference and at least
// one exhausted call; the generator checks the real run the same way. A
// scenario with outages fails requests by when they come, which the
// simulation (no network, no clock) cannot tell: only its real run checks
// it.
func TestScenariosInferable(t *testing.T) {
	for _, sc := range scenarios() {
		if len(sc.Outages) > 0 {
			t.Logf("%s: outages in time, checked by its real run only", sc.Name)
			continue
		}
		callers := simulate(sc)
		if err := checkInferable(callers); err != nil {
			t.Errorf("%s:\n%v", sc.Name, err)
		}
		for _, c := range callers {
			if c.edge.Policy.retries() {
				t.Logf("%s: %s → %s %s: %s", sc.Name, c.edge.Caller, c.edge.Callee, c.edge.Route, describeWaits(c.stats))
			}
		}
	}
}

// TestWaitShortfalls pins the thresholds of the inference check.
func TestWaitShortfalls(t *testing.T) {
	jittered := backoffExponential(3, 20*ms, 2, 200*ms, 0.5)
	for _, tc := range []struct {
		p     Policy
		waits []int
		want  int
	}{
		{single(), []int{0}, 0},
		{jittered, []int{0, 8, 4}, 0},
		{jittered, []int{0, 7, 5}, 1},               // no index with 8 jittered waits
		{jittered, []int{0, 9, 3}, 1},               // 12 in all, but 3 before the third attempt
		{retryGoFixed(3, 20*ms), []int{0, 8, 3}, 2}, // 11 in all, 3 before the third attempt
		{retryGoFixed(3, 20*ms), []int{0, 7, 5}, 0}, // no jitter: no index needs 8
		{retryGoFixed(2, 20*ms), []int{0, 12}, 0},   // two attempts: no third attempt to wait for
		{retryableHTTP(4, 20*ms, 160*ms), []int{0, 6, 4, 2}, 0},
	} {
		if got := waitShortfalls(tc.p, tc.waits); len(got) != tc.want {
			t.Errorf("%s %d attempts, waits %v: shortfalls %q, want %d", tc.p.Library, tc.p.MaxAttempts, tc.waits, got, tc.want)
		}
	}
}

// statsOf renders what the simulation and the real run are compared on.
func statsOf(c *caller) string {
	st := c.stats
	st.mu.Lock()
	defer st.mu.Unlock()
	statuses := make([]int, 0, len(st.statuses))
	for s := range st.statuses {
		statuses = append(statuses, s)
	}
	slices.Sort(statuses)
	return fmt.Sprintf("calls %d, exhausted %d, statuses %v, waits %v, Retry-After waits %d, refused by the quota %d, retried on the result %d in %d calls",
		st.calls, st.exhausted, statuses, st.waits, st.retryAfterWaits, st.quotaRefused, st.resultRetries, st.resultRetriedCalls)
}
