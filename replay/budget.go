package replay

import (
	"fmt"
	"math"
)

// Budget limits a client's retries, with the exact semantics of a reference
// system. Every method takes the simulated time in seconds.
//
// A client calls Request for each original request (first attempt), Retry
// before each retry (and before each hedge), Result and then Done when an
// attempt ends, in that order. When a client gets a retry approved but never
// sends it (the deadline passes during the backoff), it calls Done(t, true)
// so that concurrency budgets release the retry.
//
// A budget may be per caller or shared by caller and callee (or by every
// edge into one callee): sharing is the client's business, which simply
// hands the same instance to every edge that shares it. Budgets are not safe
// for concurrent use; the simulator is single-threaded.
type Budget interface {
	// Request records an original request (a first attempt) sent at time t.
	Request(t float64)
	// Retry asks whether a retry may be sent at time t; if true the retry is
	// counted as sent.
	Retry(t float64) bool
	// Result records the outcome of any attempt at time t: ok, or failed
	// (timeout says whether it timed out).
	Result(t float64, ok, timeout bool)
	// Done records that an attempt (first or retry) finished at time t;
	// retry says which. Concurrency budgets (Envoy) count in-flight work
	// with it, and AWSQuota learns from it whether a success was a retry.
	Done(t float64, retry bool)
}

// PerRequestBudget is implemented by budgets whose accounting is tied to
// the request rather than to the attempt (AWSQuota: a successful retry
// refunds what that request's last retry paid). A client that keeps
// per-request state should prefer these methods over Retry and Result when
// the budget implements them; Request and Done are still called as usual.
type PerRequestBudget interface {
	Budget
	// RetryFor asks for a retry of a request whose last attempt failed
	// (timeout: it timed out). If ok, the client stores cost with the
	// request, replacing any earlier cost.
	RetryFor(t float64, timeout bool) (cost int, ok bool)
	// ResultFor records the outcome of an attempt of a request whose last
	// paid retry cost cost (0 if the request has not retried).
	ResultFor(t float64, ok bool, cost int)
}

// NoBudget allows every retry.
type NoBudget struct{}

// Request does nothing.
func (NoBudget) Request(float64) {}

// Retry always allows the retry.
func (NoBudget) Retry(float64) bool { return true }

// Result does nothing.
func (NoBudget) Result(float64, bool, bool) {}

// Done does nothing.
func (NoBudget) Done(float64, bool) {}

// ---------------------------------------------------------------------------
// Finagle / Linkerd

// Finagle's RetryBudget defaults (com.twitter.finagle.service.RetryBudget
// .apply()), also Linkerd's ServiceProfile retryBudget defaults (retryRatio
// 0.2, minRetriesPerSecond 10, ttl 10s).
const (
	FinagleDefaultTTL              = 10.0 // seconds
	FinagleDefaultMinRetriesPerSec = 10
	FinagleDefaultPercentCanRetry  = 0.2
)

// finagleScale is TokenRetryBudget.ScaleFactor: a deposit is worth 1000
// tokens so that percentCanRetry needs no floating point.
const finagleScale = 1000.0

// FinagleBudget is Finagle's RetryBudget(ttl, minRetriesPerSec,
// percentCanRetry), which Linkerd 1 uses as is (and which Linkerd 2's
// retryBudget and tower's TpsBudget reimplement): about percentCanRetry of
// the original requests of the last ttl may be retried, on top of a reserve
// of minRetriesPerSec·ttl retries per ttl.
//
// It reproduces Finagle's integer arithmetic exactly (RetryBudget.scala and
// util's TokenBucket.newLeakyBucket / WindowedAdder):
//
//   - every original request deposits 1000 tokens (0 if percentCanRetry is 0);
//   - a retry costs w = ⌊1000 / percentCanRetry⌋ tokens (1 if percentCanRetry
//     is 0) and is allowed while balance ≥ w, where balance = reserve + the
//     windowed sum of deposits minus withdrawals, and reserve =
//     minRetriesPerSec · ⌊ttl in whole seconds⌋ · w never drains by itself;
//   - deposits and withdrawals both expire: the windowed sum is a
//     WindowedAdder over ttl split into 10 slices (the current one and 9
//     older). Slices rotate lazily, on the first access at least ttl/10
//     after the previous rotation (skipping idle slices), so an entry lives
//     about ttl, give or take a slice: with ttl 10 s, withdrawals made at
//     0 s with accesses at 5 s and 9.9 s still count at 10.5 s and are gone
//     at 10.9 s.
//
// So retries in the window + 1 ≤ percentCanRetry · requests in the window +
// minRetriesPerSec · ttl, up to the rounding of w: with the defaults, 100
// retries with no traffic, 300 with 1000 requests. Finagle's clock is in
// milliseconds; simulated time is converted to milliseconds by flooring. The
// budget is created at simulated time 0. Only Request and Retry matter:
// Finagle deposits in RequeueFilter/RetryFilter once per request, whatever
// its outcome.
type FinagleBudget struct {
	deposit, withdraw int64 // tokens per request, per retry
	reserve           int64
	// WindowedAdder state, as in com.twitter.util.WindowedAdder.
	slice  int64   // milliseconds per slice (ttl/10)
	buf    []int64 // the 9 older slices
	writer int64   // the current slice
	i      int
	old    int64 // milliseconds: when the current slice started
	never  bool  // minRetriesPerSec and percentCanRetry both 0: RetryBudget.Empty
}

// NewFinagleBudget returns Finagle's RetryBudget(ttl, minRetriesPerSec,
// percentCanRetry), with Finagle's own checks: ttl between 1 and 60 seconds
// (in whole seconds), minRetriesPerSec ≥ 0, percentCanRetry between 0 and
// 1000. Both minRetriesPerSec and percentCanRetry 0 is RetryBudget.Empty,
// which never allows a retry.
func NewFinagleBudget(ttl float64, minRetriesPerSec int, percentCanRetry float64) (*FinagleBudget, error) {
	if !(ttl >= 1 && ttl < 61) {
		return nil, fmt.Errorf("finagle retry budget: ttl %v s: want 1 to 60 seconds", ttl)
	}
	if minRetriesPerSec < 0 {
		return nil, fmt.Errorf("finagle retry budget: minRetriesPerSec %d: want ≥ 0", minRetriesPerSec)
	}
	if !(percentCanRetry >= 0 && percentCanRetry <= finagleScale) {
		return nil, fmt.Errorf("finagle retry budget: percentCanRetry %v: want 0 to 1000", percentCanRetry)
	}
	b := &FinagleBudget{buf: make([]int64, 9)}
	if minRetriesPerSec == 0 && percentCanRetry == 0 {
		b.never = true
		return b, nil
	}
	b.deposit, b.withdraw = int64(finagleScale), int64(finagleScale/percentCanRetry)
	if percentCanRetry == 0 {
		b.deposit, b.withdraw = 0, 1
	}
	b.reserve = int64(minRetriesPerSec) * int64(ttl) * b.withdraw
	b.slice = finagleMsec(ttl) / 10
	return b, nil
}

// DefaultFinagleBudget is Finagle's RetryBudget(): ttl 10 s, 10 retries per
// second, 20% of requests.
func DefaultFinagleBudget() *FinagleBudget {
	b, _ := NewFinagleBudget(FinagleDefaultTTL, FinagleDefaultMinRetriesPerSec, FinagleDefaultPercentCanRetry)
	return b
}

// finagleMsec converts simulated seconds to whole milliseconds, flooring (with a
// little slack for t·1000 landing just below an integer).
func finagleMsec(t float64) int64 { return int64(math.Floor(t*1000 + 1e-6)) }

// Request deposits 1000 tokens.
func (b *FinagleBudget) Request(t float64) {
	if b.never {
		return
	}
	b.add(finagleMsec(t), b.deposit)
}

// Retry withdraws ⌊1000/percentCanRetry⌋ tokens if the balance allows.
func (b *FinagleBudget) Retry(t float64) bool {
	if b.never {
		return false
	}
	now := finagleMsec(t)
	if b.sum(now)+b.reserve < b.withdraw {
		return false
	}
	b.add(now, -b.withdraw)
	return true
}

// Result does nothing: Finagle's budget does not look at outcomes.
func (b *FinagleBudget) Result(float64, bool, bool) {}

// Done does nothing.
func (b *FinagleBudget) Done(float64, bool) {}

// Balance is Finagle's RetryBudget.balance: the number of retries that
// could be made at time t.
func (b *FinagleBudget) Balance(t float64) int64 {
	if b.never {
		return 0
	}
	return (b.sum(finagleMsec(t)) + b.reserve) / b.withdraw
}

// add is WindowedAdder.add.
func (b *FinagleBudget) add(now, x int64) {
	if now-b.old >= b.slice {
		b.expire(now)
	}
	b.writer += x
}

// sum is WindowedAdder.sum.
func (b *FinagleBudget) sum(now int64) int64 {
	if now-b.old >= b.slice {
		b.expire(now)
	}
	s := b.writer
	for _, v := range b.buf {
		s += v
	}
	return s
}

// expire is WindowedAdder.expired: the current slice becomes the newest old
// one (overwriting the oldest), and slices that passed without any access
// are zeroed.
func (b *FinagleBudget) expire(now int64) {
	n := len(b.buf)
	b.buf[b.i] = b.writer
	b.writer = 0
	b.i = (b.i + 1) % n
	nskip := min((now-b.old)/b.slice-1, int64(n))
	if nskip > 0 {
		k := int(nskip)
		r := min(k, n-b.i)
		clear(b.buf[b.i : b.i+r])
		clear(b.buf[:k-r])
		b.i = (b.i + k) % n
	}
	b.old = now
}

// ---------------------------------------------------------------------------
// gRPC

// GRPCThrottle is gRPC retry throttling (gRFC A6, "retryThrottling" in the
// service config): a token count starts at maxTokens and stays within
// [0, maxTokens]; every failed attempt takes 1 token, every successful one
// adds tokenRatio; a retry (or hedge) is allowed only while the count is
// above maxTokens/2. Retries themselves cost nothing. Every failure counts,
// timeouts included (the simulator only fails attempts in ways a client
// would retry, which is what A6 counts).
//
// As in gRPC C-core, tokens are counted in thousandths (tokenRatio has up to
// 3 decimals in A6), so the arithmetic is exact: 10 successes at ratio 0.1
// add exactly 1 token. The steady state is at a failure share of
// tokenRatio/(1+tokenRatio) of attempts (1/11 ≈ 9.1% for the example
// config maxTokens 10, tokenRatio 0.1): above it the count drifts down to
// the threshold and retries stop.
type GRPCThrottle struct {
	milli, max, ratio int64
}

// NewGRPCThrottle returns gRPC retry throttling with maxTokens in (0, 1000]
// and tokenRatio > 0 (grpc-go's service-config checks), both rounded to
// thousandths. A6's example is maxTokens 10, tokenRatio 0.1.
func NewGRPCThrottle(maxTokens, tokenRatio float64) (*GRPCThrottle, error) {
	if !(maxTokens > 0 && maxTokens <= 1000) {
		return nil, fmt.Errorf("grpc retry throttling: maxTokens %v: want (0, 1000]", maxTokens)
	}
	if !(tokenRatio > 0) || math.IsInf(tokenRatio, 0) {
		return nil, fmt.Errorf("grpc retry throttling: tokenRatio %v: want > 0", tokenRatio)
	}
	mx := int64(math.Round(maxTokens * 1000))
	r := int64(math.Round(tokenRatio * 1000))
	if mx < 1 || r < 1 {
		return nil, fmt.Errorf("grpc retry throttling: maxTokens %v, tokenRatio %v: below the 0.001 resolution", maxTokens, tokenRatio)
	}
	return &GRPCThrottle{milli: mx, max: mx, ratio: r}, nil
}

// Request does nothing: the first attempt is always sent.
func (g *GRPCThrottle) Request(float64) {}

// Retry allows a retry while tokens > maxTokens/2.
func (g *GRPCThrottle) Retry(float64) bool { return g.milli > g.max/2 }

// Result takes a token for a failure and adds tokenRatio for a success.
func (g *GRPCThrottle) Result(_ float64, ok, _ bool) {
	if ok {
		g.milli = min(g.max, g.milli+g.ratio)
	} else {
		g.milli = max(0, g.milli-1000)
	}
}

// Done does nothing.
func (g *GRPCThrottle) Done(float64, bool) {}

// Tokens returns the token count.
func (g *GRPCThrottle) Tokens() float64 { return float64(g.milli) / 1000 }

// ---------------------------------------------------------------------------
// AWS SDK

// AWS SDK standard retry mode quota (botocore retries/standard.py
// RetryQuotaChecker and retries/quota.py; the other SDKs use the same
// numbers).
const (
	AWSInitialCapacity  = 500
	AWSRetryCost        = 5
	AWSTimeoutRetryCost = 10
	AWSNoRetryIncrement = 1
)

// AWSQuota is the AWS SDK "standard" retry mode's retry quota: capacity
// starts at 500; a retry costs 5, or 10 when the attempt it follows timed
// out, and is refused when the capacity cannot pay; a successful attempt
// gives back what the request's last retry paid if the request retried, or
// 1 if it is a first attempt, capped at 500. Failed attempts give nothing
// back.
//
// The refund belongs to the request (botocore keeps it in the request's
// context), which the attempt-level Budget interface cannot see, so there
// are two ways to drive it:
//
//   - exact: RetryFor/ResultFor (PerRequestBudget), with the client keeping
//     the returned cost with its request;
//   - Budget interface: Retry charges by whether the last failed Result was a
//     timeout; a successful Result is settled by the Done that follows it,
//     which says whether the attempt was a retry: a retry's success refunds
//     the cost of the most recently paid retry. This is exact when one
//     request is in flight at a time; with interleaved requests the refund
//     is exact as long as the retries in flight paid the same cost.
//
// Do not mix the two on one instance.
type AWSQuota struct {
	capacity, max int
	// Budget-interface bookkeeping.
	lastTimeout bool // the last failed attempt timed out
	lastCost    int  // cost of the most recently paid retry
	pendingOK   bool // a success waiting for its Done
}

// NewAWSQuota returns the standard retry quota with capacity 500.
func NewAWSQuota() *AWSQuota {
	return &AWSQuota{capacity: AWSInitialCapacity, max: AWSInitialCapacity}
}

// Capacity returns the remaining quota.
func (q *AWSQuota) Capacity() int { return q.capacity }

// RetryFor asks for a retry after a failure (timeout: the failed attempt
// timed out) and returns what it cost.
func (q *AWSQuota) RetryFor(_ float64, timeout bool) (cost int, ok bool) {
	cost = AWSRetryCost
	if timeout {
		cost = AWSTimeoutRetryCost
	}
	if q.capacity < cost {
		return 0, false
	}
	q.capacity -= cost
	return cost, true
}

// ResultFor records an attempt's outcome; cost is what the request's last
// retry paid (0 for a request that has not retried).
func (q *AWSQuota) ResultFor(_ float64, ok bool, cost int) {
	if !ok {
		return
	}
	if cost > 0 {
		q.release(cost)
	} else {
		q.release(AWSNoRetryIncrement)
	}
}

func (q *AWSQuota) release(n int) { q.capacity = min(q.max, q.capacity+n) }

// Request does nothing: first attempts are free.
func (q *AWSQuota) Request(float64) {}

// Retry charges 5, or 10 if the last failed attempt timed out.
func (q *AWSQuota) Retry(t float64) bool {
	cost, ok := q.RetryFor(t, q.lastTimeout)
	if ok {
		q.lastCost = cost
	}
	return ok
}

// Result remembers a failure's kind for the next Retry; a success is
// settled by the following Done.
func (q *AWSQuota) Result(_ float64, ok, timeout bool) {
	q.pendingOK = ok
	if !ok {
		q.lastTimeout = timeout
	}
}

// Done settles a success recorded by Result: a retry refunds the last paid
// retry cost, a first attempt adds 1.
func (q *AWSQuota) Done(t float64, retry bool) {
	if !q.pendingOK {
		return
	}
	q.pendingOK = false
	cost := 0
	if retry {
		cost = q.lastCost
	}
	q.ResultFor(t, true, cost)
}

// ---------------------------------------------------------------------------
// Envoy

// Envoy retry budget defaults (cluster circuit_breakers.thresholds
// .retry_budget).
const (
	EnvoyDefaultBudgetPercent       = 20.0
	EnvoyDefaultMinRetryConcurrency = 3
)

// EnvoyBudget is Envoy's cluster retry budget: a retry is allowed while
// retries in flight < max(⌊budgetPercent/100 · active requests⌋,
// minRetryConcurrency), as in Envoy's ResourceManagerImpl::RetryBudgetImpl.
//
// Active requests are Envoy's rq_active (+ rq_pending): every attempt in
// flight, retries included, so each admitted retry also raises the limit a
// little: with 100 original requests in flight and the defaults, 24
// retries fit (24 < ⌊0.2·124⌋ is false, 23 < ⌊0.2·123⌋ = 24 is true).
// A retry is in flight from its approval (Retry) until Done(t, true);
// Envoy counts it in retries from approval but in rq_active only once its
// stream is created after the backoff, so during a backoff this budget is
// more generous than Envoy by budgetPercent of each waiting retry.
type EnvoyBudget struct {
	percent float64
	min     int
	active  int // attempts in flight, retries included
	retries int // retries in flight
}

// NewEnvoyBudget returns Envoy's retry budget with budgetPercent in
// [0, 100] (Envoy's Percent; default 20) and minRetryConcurrency ≥ 0
// (default 3).
func NewEnvoyBudget(budgetPercent float64, minRetryConcurrency int) (*EnvoyBudget, error) {
	if !(budgetPercent >= 0 && budgetPercent <= 100) {
		return nil, fmt.Errorf("envoy retry budget: budget_percent %v: want 0 to 100", budgetPercent)
	}
	if minRetryConcurrency < 0 {
		return nil, fmt.Errorf("envoy retry budget: min_retry_concurrency %d: want ≥ 0", minRetryConcurrency)
	}
	return &EnvoyBudget{percent: budgetPercent, min: minRetryConcurrency}, nil
}

// Request counts an original request as active.
func (e *EnvoyBudget) Request(float64) { e.active++ }

// Retry allows a retry while retries in flight are under the limit, and
// then counts it as active and in flight.
func (e *EnvoyBudget) Retry(float64) bool {
	if e.retries >= e.Limit() {
		return false
	}
	e.retries++
	e.active++
	return true
}

// Result does nothing: Envoy's budget counts concurrency, not outcomes.
func (e *EnvoyBudget) Result(float64, bool, bool) {}

// Done releases a finished attempt (and, for a retry, its retry slot).
func (e *EnvoyBudget) Done(_ float64, retry bool) {
	e.active = max(0, e.active-1)
	if retry {
		e.retries = max(0, e.retries-1)
	}
}

// Limit is the current retry concurrency limit.
func (e *EnvoyBudget) Limit() int {
	return max(int(uint64(e.percent/100.0*float64(e.active))), e.min)
}

// ---------------------------------------------------------------------------
// The seeds' budgets

// Token bucket defaults from seed 000 ("A retry looks like kindness").
const (
	TokenBucketDefaultMax   = 10.0
	TokenBucketDefaultRatio = 0.1
)

// TokenBucket is the retry budget of seed 000's simulation: tokens start at
// max; every successful attempt adds ratio (capped at max); a retry costs 1
// token and needs at least 1. Tokens are counted in millionths so that 10
// successes at ratio 0.1 restore exactly one retry (the seed's JavaScript
// floats would reach 0.9999999999999999 and refuse it); ratio and max are
// rounded to millionths.
type TokenBucket struct {
	micros, max, ratio int64
}

const tokenMicro = 1_000_000

// NewTokenBucket returns seed 000's bucket (defaults: max 10, ratio 0.1).
func NewTokenBucket(maxTokens, ratio float64) (*TokenBucket, error) {
	if !(maxTokens >= 1) || math.IsInf(maxTokens, 0) || maxTokens > 1e9 {
		return nil, fmt.Errorf("token bucket: max %v: want 1 or more", maxTokens)
	}
	if !(ratio >= 0) || ratio > 1e9 {
		return nil, fmt.Errorf("token bucket: ratio %v: want ≥ 0", ratio)
	}
	m := int64(math.Round(maxTokens * tokenMicro))
	return &TokenBucket{micros: m, max: m, ratio: int64(math.Round(ratio * tokenMicro))}, nil
}

// Request does nothing.
func (b *TokenBucket) Request(float64) {}

// Retry takes a token if there is one.
func (b *TokenBucket) Retry(float64) bool {
	if b.micros < tokenMicro {
		return false
	}
	b.micros -= tokenMicro
	return true
}

// Result adds ratio for a success.
func (b *TokenBucket) Result(_ float64, ok, _ bool) {
	if ok {
		b.micros = min(b.max, b.micros+b.ratio)
	}
}

// Done does nothing.
func (b *TokenBucket) Done(float64, bool) {}

// Tokens returns the token count.
func (b *TokenBucket) Tokens() float64 { return float64(b.micros) / tokenMicro }

// RatioBudgetDefaultWindow is the window of RatioBudget (seconds).
const RatioBudgetDefaultWindow = 10.0

// RatioBudget is seed 004's retry budget ("mayRetry"): a retry is allowed
// while retries < ratio · calls, where calls are original requests, and an
// allowed retry is counted. The seed keeps lifetime counters; here both are
// counted over a sliding window of the last window seconds (an event at
// time s counts at time t while t − s < window); window 0 keeps the seed's
// lifetime counters. The comparison tolerates floating-point error in
// ratio · calls (0.1 · 30 is 3.0000000000000004 in floating point, and
// must still allow exactly 3 retries).
type RatioBudget struct {
	ratio, window float64
	calls, rets   timeQueue
}

// NewRatioBudget returns seed 004's budget (defaults: ratio 0.1, window
// 10 s; window 0: lifetime counters).
func NewRatioBudget(ratio, window float64) (*RatioBudget, error) {
	if !(ratio >= 0) || math.IsInf(ratio, 0) {
		return nil, fmt.Errorf("ratio budget: ratio %v: want ≥ 0", ratio)
	}
	if !(window >= 0) || math.IsInf(window, 0) {
		return nil, fmt.Errorf("ratio budget: window %v s: want ≥ 0 (0: no window)", window)
	}
	return &RatioBudget{ratio: ratio, window: window}, nil
}

// Request counts a call.
func (r *RatioBudget) Request(t float64) {
	r.expire(t)
	r.calls.push(t, r.window > 0)
}

// Retry allows a retry while retries < ratio · calls in the window.
func (r *RatioBudget) Retry(t float64) bool {
	r.expire(t)
	keep := r.window > 0
	allowed := r.ratio * float64(r.calls.len(keep))
	if float64(r.rets.len(keep)) >= allowed-1e-9*max(1, allowed) {
		return false
	}
	r.rets.push(t, keep)
	return true
}

// Result does nothing.
func (r *RatioBudget) Result(float64, bool, bool) {}

// Done does nothing.
func (r *RatioBudget) Done(float64, bool) {}

// Counts returns the calls and retries in the window at time t.
func (r *RatioBudget) Counts(t float64) (calls, retries int) {
	r.expire(t)
	return r.calls.len(r.window > 0), r.rets.len(r.window > 0)
}

func (r *RatioBudget) expire(t float64) {
	if r.window <= 0 {
		return
	}
	r.calls.dropUntil(t - r.window)
	r.rets.dropUntil(t - r.window)
}

// timeQueue counts events, keeping their times (nondecreasing in simulated
// time) only when they can expire.
type timeQueue struct {
	ts   []float64
	head int
	n    int // events ever pushed, for lifetime counting
}

func (q *timeQueue) push(t float64, keep bool) {
	q.n++
	if keep {
		q.ts = append(q.ts, t)
	}
}

func (q *timeQueue) len(keep bool) int {
	if !keep {
		return q.n
	}
	return len(q.ts) - q.head
}

// dropUntil removes events at or before cut.
func (q *timeQueue) dropUntil(cut float64) {
	for q.head < len(q.ts) && q.ts[q.head] <= cut {
		q.head++
	}
	if q.head > 1024 && q.head*2 > len(q.ts) {
		n := copy(q.ts, q.ts[q.head:])
		q.ts = q.ts[:n]
		q.head = 0
	}
}

// RetryBreaker is the retry circuit breaker of "Good Retry, Bad Retry"
// (the jirfag/simulations model): retries are allowed while the share of
// attempts that failed over the last window seconds is under threshold,
// and refused above it; first attempts always go. It needs minResults
// results in the window before it refuses anything.
type RetryBreaker struct {
	threshold, window float64
	minResults        int
	all, failed       timeQueue
}

// NewRetryBreaker returns a retry breaker (the model's: threshold 0.1,
// window 1 s).
func NewRetryBreaker(threshold, window float64, minResults int) (*RetryBreaker, error) {
	if !(threshold > 0 && threshold <= 1) {
		return nil, fmt.Errorf("retry breaker: threshold %v: want a share in (0,1]", threshold)
	}
	if !(window > 0) || math.IsInf(window, 0) {
		return nil, fmt.Errorf("retry breaker: window %v s: want > 0", window)
	}
	if minResults < 0 {
		return nil, fmt.Errorf("retry breaker: min results %d: want ≥ 0", minResults)
	}
	return &RetryBreaker{threshold: threshold, window: window, minResults: minResults}, nil
}

// Request does nothing.
func (b *RetryBreaker) Request(float64) {}

// Retry allows a retry while the failure share in the window is under the
// threshold.
func (b *RetryBreaker) Retry(t float64) bool {
	b.expire(t)
	n := b.all.len(true)
	return n < b.minResults || float64(b.failed.len(true)) < b.threshold*float64(n)
}

// Result counts an attempt's outcome.
func (b *RetryBreaker) Result(t float64, ok, _ bool) {
	b.expire(t)
	b.all.push(t, true)
	if !ok {
		b.failed.push(t, true)
	}
}

// Done does nothing.
func (b *RetryBreaker) Done(float64, bool) {}

func (b *RetryBreaker) expire(t float64) {
	b.all.dropUntil(t - b.window)
	b.failed.dropUntil(t - b.window)
}
