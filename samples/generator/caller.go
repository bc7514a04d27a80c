package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/avast/retry-go/v4"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/cenkalti/backoff/v5"
	"github.com/cristalhq/hedgedhttp"
	"github.com/eapache/go-resiliency/retrier"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/go-resty/resty/v2"
	"github.com/hashicorp/go-retryablehttp"
	goretry "github.com/sethvargo/go-retry"
	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// request is one logical call along an edge; every attempt resends it.
type request struct {
	method, url string
	body        []byte
	header      http.Header
}

// result is the response of the last attempt of a call.
type result struct {
	status int
	body   []byte
}

// statusError is an attempt that got an HTTP error status.
type statusError struct{ res result }

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d", e.res.status) }

// HTTPStatusCode is how the AWS SDK's retryables read an error's status
// (awsretry.RetryableHTTPStatusCode).
func (e *statusError) HTTPStatusCode() int { return e.res.status }

// errPermanent marks an attempt's error that must not be retried, for
// go-resiliency's retrier.BlacklistClassifier.
var errPermanent = errors.New("not retryable")

// retryableStatus is the one retry predicate every caller uses: 408, 429 and
// the transient 5xx are retried; every other 4xx is permanent.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryable reports whether a failed attempt should be retried: not once the
// caller's own context is done, then by status, and always after a transport
// error (which includes a per-try timeout).
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var se *statusError
	if errors.As(err, &se) {
		return retryableStatus(se.res.status)
	}
	return true
}

// caller sends calls along one edge through its retry library. Its
// http.Client's transport is otelhttp over captureTransport, so each attempt
// is a CLIENT span under the calling SERVER span.
type caller struct {
	edge   Edge
	method string
	base   string // callee base URL
	client *http.Client
	rc     *retryablehttp.Client // only for libRetryablehttp
	send   func(context.Context, request) (result, error)
	stats  *edgeStats
	cb     *gobreaker.CircuitBreaker[result]       // only with Policy.Breaker
	hedge  hedgepolicy.HedgePolicy[*http.Response] // only for libFailsafe with a Hedge
	// fcb is failsafe-go's circuit breaker inside the retry loop (only
	// with a Breaker InsideRetries).
	fcb circuitbreaker.CircuitBreaker[*http.Response]
	// replicas are the callee's base URLs, one per replica (base is the first).
	replicas []string
	// instance is the service.instance.id of the caller's instance that
	// makes these calls ("" for a caller run as one).
	instance string
	// spread, for a callee run as several instances, is their base URLs:
	// each call goes to the next in turn (next counts the calls), as a
	// round-robin load balancer sends them.
	spread  []string
	next    atomic.Uint64
	resty   *resty.Client      // only for libResty
	retrier *retrier.Retrier   // only for libResiliency
	aws     *awsretry.Standard // only for libAWSRetry
	// hystrix is the name of the hystrix-go circuit the calls run as
	// commands of (only with a Breaker's Hystrix settings).
	hystrix string
}

func newCaller(e Edge, replicas []string, transport http.RoundTripper) *caller {
	p := e.Policy
	c := &caller{
		edge:     e,
		base:     replicas[0],
		replicas: replicas,
		client:   &http.Client{Transport: transport, Timeout: p.PerTryTimeout},
		stats:    newEdgeStats(p),
	}
	c.method, _, _ = strings.Cut(e.Route, " ")
	switch p.Library {
	case libBackoff:
		c.send = c.sendBackoff
	case libRetryGo:
		c.send = c.sendRetryGo
	case libGoRetry:
		c.send = c.sendGoRetry
	case libResty:
		c.resty = resty.NewWithClient(c.client).
			SetRetryCount(p.MaxAttempts - 1).
			SetRetryWaitTime(p.Backoff.Base).
			SetRetryMaxWaitTime(p.Backoff.Cap).
			AddRetryCondition(func(r *resty.Response, err error) bool {
				if r != nil && r.Request != nil && r.Request.Context().Err() != nil {
					return false
				}
				return err != nil || r != nil && retryableStatus(r.StatusCode())
			}).
			OnBeforeRequest(func(_ *resty.Client, req *resty.Request) error {
				// Attempt k (from 1) goes to replica k-1 mod replicas.
				next := c.replicas[(req.Attempt-1)%len(c.replicas)]
				req.URL = next + strings.TrimPrefix(req.URL, c.base)
				return nil
			})
		c.send = c.sendResty
	case libResiliency:
		c.retrier = retrier.New(retrier.ExponentialBackoff(p.MaxAttempts-1, p.Backoff.Base), retrier.BlacklistClassifier{errPermanent})
		c.retrier.SetJitter(p.Backoff.JitterFraction)
		c.send = c.sendResiliency
	case libAWSRetry:
		q := p.Quota
		c.aws = awsretry.NewStandard(func(o *awsretry.StandardOptions) {
			o.MaxAttempts = p.MaxAttempts
			o.BaseDelay = p.Backoff.Base
			o.MaxBackoff = p.Backoff.Cap
			o.RateLimiter = ratelimit.NewTokenRateLimit(q.Capacity)
			o.RetryCost = q.RetryCost
			o.ThrottlingRetryCost = q.ThrottlingRetryCost
			o.NoRetryIncrement = q.NoRetryIncrement
		})
		c.send = c.sendAWS
	case libFailsafe:
		if p.RetryOnResult {
			c.send = c.sendFailsafeResult
			break
		}
		if p.breakerInside() {
			c.fcb = c.failsafeBreaker()
			c.send = c.sendFailsafeRetry
			break
		}
		c.hedge = hedgepolicy.NewBuilderWithDelay[*http.Response](p.Hedge.Delay).WithMaxHedges(p.Hedge.MaxHedges).Build()
		c.send = c.sendHedged
	case libHeimdall:
		c.send = c.sendHeimdall
	case libHedgedhttp:
		// Above the instrumentation: each request hedgedhttp sends goes
		// through otelhttp (transport), a CLIENT span of its own.
		c.client = &http.Client{Transport: hedgedTransport(p, transport), Timeout: p.PerTryTimeout}
		c.send = c.attempt
	case libRetryablehttp:
		minWait, maxWait, backoff := p.Backoff.Base, p.Backoff.Cap, retryablehttp.DefaultBackoff
		if p.Backoff.Kind == "linear" {
			// LinearJitterBackoff draws from [min, max) the wait it
			// multiplies by the retry's number: Base ± JitterFraction.
			f := p.Backoff.JitterFraction
			minWait, maxWait = time.Duration(float64(p.Backoff.Base)*(1-f)), time.Duration(float64(p.Backoff.Base)*(1+f))
			backoff = retryablehttp.LinearJitterBackoff
		}
		c.rc = &retryablehttp.Client{
			HTTPClient:   c.client,
			RetryWaitMin: minWait,
			RetryWaitMax: maxWait,
			RetryMax:     p.MaxAttempts - 1,
			CheckRetry: func(ctx context.Context, resp *http.Response, err error) (bool, error) {
				if ctx.Err() != nil {
					return false, ctx.Err()
				}
				if err == nil && p.RetryOnResult && resp.StatusCode == http.StatusOK {
					// The result predicate: a 200 that says the result
					// is not ready is retried. The body read here is
					// put back for the caller.
					b, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					resp.Body = io.NopCloser(bytes.NewReader(b))
					return rerr != nil || pendingBody(b), nil
				}
				return err != nil || retryableStatus(resp.StatusCode), nil
			},
			Backoff:      backoff,
			ErrorHandler: retryablehttp.PassthroughErrorHandler,
		}
		c.send = c.sendRetryablehttp
	default:
		c.send = c.attempt
	}
	if b := p.Breaker; b != nil && b.Hystrix != nil {
		c.configureHystrix(b.Hystrix)
	} else if b != nil && !b.InsideRetries {
		c.cb = gobreaker.NewCircuitBreaker[result](gobreaker.Settings{
			Name:        e.Caller + "→" + e.Callee,
			MaxRequests: 1,
			Timeout:     b.OpenFor,
			ReadyToTrip: func(counts gobreaker.Counts) bool { return int(counts.ConsecutiveFailures) >= b.ConsecutiveFailures },
			OnStateChange: func(_ string, _, to gobreaker.State) {
				c.stats.breakerState(to == gobreaker.StateOpen)
			},
		})
	}
	return c
}

// failsafeBreaker is failsafe-go's circuit breaker for the edge's
// attempts: a transport error or a 5xx answer is a failure,
// ConsecutiveFailures of them in a row open it for OpenFor ± OpenJitter, after which
// it lets SuccessThreshold probes through (half-open) and closes once
// they all succeeded; a failed probe opens it again. Its listeners write
// the truth's open periods.
func (c *caller) failsafeBreaker() circuitbreaker.CircuitBreaker[*http.Response] {
	b := c.edge.Policy.Breaker
	return circuitbreaker.NewBuilder[*http.Response]().
		HandleIf(func(resp *http.Response, err error) bool { return err != nil || resp != nil && resp.StatusCode >= 500 }).
		WithFailureThreshold(uint(b.ConsecutiveFailures)).
		WithDelay(b.OpenFor).
		WithJitter(b.OpenJitter).
		WithSuccessThreshold(uint(b.SuccessThreshold)).
		OnOpen(func(circuitbreaker.StateChangedEvent) { c.stats.breakerState(true) }).
		OnHalfOpen(func(circuitbreaker.StateChangedEvent) { c.stats.breakerHalfOpen() }).
		OnClose(func(circuitbreaker.StateChangedEvent) { c.stats.breakerState(false) }).
		Build()
}

// sendFailsafeRetry sends r through failsafe-go's HTTP retry policy
// around the edge's circuit breaker (failsafe.With(retryPolicy,
// circuitBreaker) through failsafehttp): every attempt asks the breaker
// first, and one it refuses (circuitbreaker.ErrOpen, nothing sent) is a
// failed attempt the retry policy retries after its delay like any
// other. The retry policy is built for each call, so that its
// OnRetryScheduled listener logs this call's tries: which the breaker
// refused, and the delay chosen after each.
func (c *caller) sendFailsafeRetry(ctx context.Context, r request) (result, error) {
	p := c.edge.Policy
	log, _ := ctx.Value(attemptLogKey{}).(*attemptLog)
	rp := failsafehttp.NewRetryPolicyBuilder().
		WithMaxAttempts(p.MaxAttempts).
		WithDelay(p.Backoff.Base).
		ReturnLastFailure().
		OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[*http.Response]) {
			if resp := e.LastResult(); resp != nil {
				// A failed answer the retry policy drops: read it, so
				// that its connection is reused.
				drain(resp)
			}
			log.try(errors.Is(e.LastError(), circuitbreaker.ErrOpen), e.Delay)
		}).
		Build()
	req, err := r.build(ctx)
	if err != nil {
		return result{}, err
	}
	resp, err := failsafehttp.NewRequest(req, c.client, rp, c.fcb).Do()
	log.try(errors.Is(err, circuitbreaker.ErrOpen), 0)
	if err != nil {
		return result{}, err
	}
	return readResult(resp)
}

// sendFailsafeResult retries r with failsafe-go's generic retry policy,
// whose HandleIf predicate sees each attempt's result and error: a
// failure the shared predicate retries, or a 200 whose body says the
// result is not ready yet. Each attempt is a request of its own through
// otelhttp, so a CLIENT span of its own.
func (c *caller) sendFailsafeResult(ctx context.Context, r request) (result, error) {
	p := c.edge.Policy
	rp := retrypolicy.NewBuilder[result]().
		HandleIf(func(res result, err error) bool {
			if err != nil {
				return retryable(ctx, err)
			}
			return pendingBody(res.body)
		}).
		WithMaxAttempts(p.MaxAttempts).
		WithDelay(p.Backoff.Base).
		ReturnLastFailure().
		Build()
	return failsafe.With[result](rp).Get(func() (result, error) { return c.attempt(ctx, r) })
}

// hedgedTransport is hedgedhttp's round tripper over rt, sending up to
// MaxHedges+1 requests a call, Delay apart. hedgedhttp refuses only
// negative figures, which no scenario's policy holds.
func hedgedTransport(p Policy, rt http.RoundTripper) http.RoundTripper {
	h, err := hedgedhttp.NewRoundTripper(p.Hedge.Delay, p.Hedge.MaxHedges+1, rt)
	if err != nil {
		panic(fmt.Sprintf("hedge policy %+v: %v", *p.Hedge, err))
	}
	return h
}

// retryBelow moves a go-retryablehttp caller's retries, or a hedgedhttp
// caller's hedges, below the instrumentation: the retrying or hedging
// round tripper becomes the one instrument (otelhttp) wraps, so a call is
// one CLIENT span and each attempt only a request on the wire
// (captureTransport still logs each one for the ground truth).
func (c *caller) retryBelow(instrument func(http.RoundTripper) http.RoundTripper) {
	wire := captureTransport{base: &http.Transport{MaxIdleConnsPerHost: 16}}
	p := c.edge.Policy
	if p.Library == libHedgedhttp {
		c.client = &http.Client{Transport: instrument(hedgedTransport(p, wire)), Timeout: p.PerTryTimeout}
	} else {
		c.rc.HTTPClient = &http.Client{Transport: wire, Timeout: p.PerTryTimeout}
		c.client = &http.Client{Transport: instrument(&retryablehttp.RoundTripper{Client: c.rc})}
	}
	c.send = c.attempt
}

// sendThroughBreaker makes the call through the breaker: a failed result
// (an HTTP error status) counts as a failure, and an open breaker answers
// gobreaker.ErrOpenState without sending anything.
func (c *caller) sendThroughBreaker(ctx context.Context, r request) (result, error) {
	res, err := c.cb.Execute(func() (result, error) {
		res, err := c.send(ctx, r)
		var se *statusError
		if err == nil && res.status >= 500 {
			err = &statusError{res: res}
		}
		if errors.As(err, &se) {
			return se.res, err
		}
		return res, err
	})
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		c.stats.fastFailed()
	}
	return res, err
}

// call makes one logical call to path. An HTTP error status after the last
// attempt comes back as a result; err is only a transport failure.
func (c *caller) call(ctx context.Context, path string, body []byte) (result, error) {
	base := c.base
	if len(c.spread) > 0 {
		base = c.spread[(c.next.Add(1)-1)%uint64(len(c.spread))]
	}
	r := request{method: c.method, url: base + path, body: body, header: http.Header{}}
	if body != nil {
		r.header.Set("Content-Type", "application/json")
	}
	if c.edge.Policy.IdempotencyKey {
		r.header.Set("Idempotency-Key", rand.Text())
	}
	log := &attemptLog{hideRetryAfter: c.edge.Policy.HideRetryAfter, results: c.edge.Policy.RetryOnResult}
	send := c.send
	switch {
	case c.cb != nil:
		send = c.sendThroughBreaker
	case c.hystrix != "" && !c.edge.Policy.breakerInside():
		send = c.sendThroughHystrix
	}
	res, err := send(context.WithValue(ctx, attemptLogKey{}, log), r)
	c.stats.record(ctx, c.edge.Policy, log)
	var se *statusError
	if errors.As(err, &se) {
		return se.res, nil
	}
	return res, err
}

// sendHedged sends r through failsafe-go's hedge policy: each hedge is a
// request of its own through otelhttp, so a CLIENT span of its own,
// overlapping the ones before.
func (c *caller) sendHedged(ctx context.Context, r request) (result, error) {
	req, err := r.build(ctx)
	if err != nil {
		return result{}, err
	}
	resp, err := failsafehttp.NewRequest(req, c.client, c.hedge).Do()
	if err != nil {
		return result{}, err
	}
	return readResult(resp)
}

// sendResty sends r through go-resty, each attempt to the next replica.
func (c *caller) sendResty(ctx context.Context, r request) (result, error) {
	req := c.resty.R().SetContext(ctx).SetHeaderMultiValues(r.header)
	if r.body != nil {
		req.SetBody(r.body)
	}
	resp, err := req.Execute(r.method, r.url)
	if err != nil && resp == nil {
		return result{}, err
	}
	res := result{status: resp.StatusCode(), body: resp.Body()}
	if err != nil {
		return res, err
	}
	if res.status >= 400 {
		return res, &statusError{res}
	}
	return res, nil
}

// build makes r an *http.Request (a new body reader each time).
func (r request) build(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return nil, err
	}
	req.Header = r.header.Clone()
	return req, nil
}

// attempt sends r once.
func (c *caller) attempt(ctx context.Context, r request) (result, error) {
	req, err := r.build(ctx)
	if err != nil {
		return result{}, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return result{}, err
	}
	return readResult(resp)
}

func readResult(resp *http.Response) (result, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{}, err
	}
	res := result{status: resp.StatusCode, body: b}
	if res.status >= 400 {
		return res, &statusError{res}
	}
	return res, nil
}

func (c *caller) sendBackoff(ctx context.Context, r request) (result, error) {
	p := c.edge.Policy
	b := &backoff.ExponentialBackOff{
		InitialInterval:     p.Backoff.Base,
		RandomizationFactor: p.Backoff.JitterFraction,
		Multiplier:          p.Backoff.Multiplier,
		MaxInterval:         p.Backoff.Cap,
	}
	return backoff.Retry(ctx, func() (result, error) {
		res, err := c.attempt(ctx, r)
		if err != nil && !retryable(ctx, err) {
			return res, backoff.Permanent(err)
		}
		return res, err
	}, backoff.WithBackOff(b), backoff.WithMaxTries(uint(p.MaxAttempts)))
}

// retryGoDelay configures retry-go's delay from the policy's backoff.
func retryGoDelay(b Backoff) []retry.Option {
	switch b.Jitter {
	case "additive":
		return []retry.Option{retry.Delay(b.Base), retry.MaxJitter(b.Additive), retry.MaxDelay(b.Cap),
			retry.DelayType(retry.CombineDelay(retry.BackOffDelay, retry.RandomDelay))}
	case "full":
		// FullJitterBackoffDelay draws U[0, Delay·2ⁿ) before retry n (n
		// from 1): the first retry's ceiling, the policy's base, is twice
		// Delay.
		return []retry.Option{retry.Delay(b.Base / 2), retry.MaxDelay(b.Cap), retry.DelayType(retry.FullJitterBackoffDelay)}
	}
	return []retry.Option{retry.Delay(b.Base), retry.DelayType(retry.FixedDelay)}
}

func (c *caller) sendRetryGo(ctx context.Context, r request) (result, error) {
	p := c.edge.Policy
	return retry.DoWithData(func() (result, error) { return c.attempt(ctx, r) },
		append(retryGoDelay(p.Backoff), retry.Context(ctx),
			retry.Attempts(uint(p.MaxAttempts)),
			retry.RetryIf(func(err error) bool { return retryable(ctx, err) }),
			retry.LastErrorOnly(true))...)
}

// sendGoRetry retries r with sethvargo/go-retry: a Fibonacci backoff
// from the policy's base, made for each call (its state is the waits so
// far), at most MaxAttempts−1 retries, a failure retried where the
// shared predicate says so (retry.RetryableError).
func (c *caller) sendGoRetry(ctx context.Context, r request) (result, error) {
	p := c.edge.Policy
	b := goretry.WithMaxRetries(uint64(p.MaxAttempts-1), goretry.NewFibonacci(p.Backoff.Base))
	return goretry.DoValue(ctx, b, func(ctx context.Context) (result, error) {
		res, err := c.attempt(ctx, r)
		if err != nil && retryable(ctx, err) {
			return res, goretry.RetryableError(err)
		}
		return res, err
	})
}

// sendResiliency retries r with go-resiliency's retrier, which sleeps
// before retry n the n-th entry of its backoff slice, jittered. An
// attempt the shared predicate does not retry is marked errPermanent, the
// error the retrier's BlacklistClassifier fails fast on.
func (c *caller) sendResiliency(ctx context.Context, r request) (result, error) {
	var res result
	err := c.retrier.RunCtx(ctx, func(ctx context.Context) error {
		var err error
		res, err = c.attempt(ctx, r)
		if err != nil && !retryable(ctx, err) {
			return fmt.Errorf("%w: %w", errPermanent, err)
		}
		return err
	})
	return res, err
}

// sendAWS retries r with the AWS SDK's standard retryer, driven through
// its Retryer interface the way the SDK's retry middleware
// (retry.Attempt.handleAttempt) drives it: the first attempt takes an
// attempt token (later attempts take none: the SDK's retry metadata
// marks them), each attempt's outcome releases the tokens it holds (a
// success refunds the retry token, or adds the no-retry increment after
// a first attempt), a failure is retried if the retryer calls it
// retryable, attempts are left and the quota grants a retry token, after
// the retryer's delay. A refused token ends the call with the attempt's
// error, as the SDK does (it joins the quota error to it).
func (c *caller) sendAWS(ctx context.Context, r request) (result, error) {
	release := func(error) error { return nil }
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return result{}, err
		}
		releaseAttempt := func(error) error { return nil }
		if attempt == 1 {
			var err error
			if releaseAttempt, err = c.aws.GetAttemptToken(ctx); err != nil {
				return result{}, err
			}
		}
		res, err := c.attempt(ctx, r)
		release(err)
		releaseAttempt(err)
		if err == nil || !c.aws.IsErrorRetryable(err) || attempt >= c.aws.MaxAttempts() {
			return res, err
		}
		var tokenErr error
		if release, tokenErr = c.aws.GetRetryToken(ctx, err); tokenErr != nil {
			c.stats.refused()
			return res, err
		}
		delay, derr := c.aws.RetryDelay(attempt, err)
		if derr != nil {
			return res, derr
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, ctx.Err()
		}
	}
}

func (c *caller) sendRetryablehttp(ctx context.Context, r request) (result, error) {
	var body any // a typed nil []byte would make retryablehttp send an empty chunked body
	if r.body != nil {
		body = r.body
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return result{}, err
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	resp, err := c.rc.Do(req)
	if err != nil {
		return result{}, err
	}
	return readResult(resp)
}

// attemptLog collects the outcome of each attempt of one call, as seen by
// captureTransport.
type attemptLog struct {
	mu             sync.Mutex
	statuses       []int  // HTTP status per attempt, 0 for a transport error
	retryAfter     []bool // per attempt: the response carried Retry-After
	hideRetryAfter bool   // leave Retry-After out of the spans
	// results: the caller retries on the result, so each answer's body
	// is read for whether it said "pending" (pending, per attempt).
	results bool
	pending []bool
	// started counts requests sent: hedges the winner cancelled may log
	// their outcome only after the call was recorded.
	started int
	// wonBy is 1 + the index, in the order they were sent, of the first
	// request answered (any status), 0 while none has been.
	wonBy int
	// resent counts the requests net/http's Transport wrote again on a
	// new connection (captureTransport).
	resent int
	// start and end of each attempt's round trip, for how late the waits
	// between them came (scheduling noise on a busy host).
	start, end []time.Time
	// refusedTry, for a retry loop around a breaker, is each try of the
	// call in turn: whether the breaker refused it (nothing sent); delay
	// the wait the retry policy chose after it (0 after the last).
	refusedTry []bool
	delay      []time.Duration
}

// try logs one try of a retry loop around a breaker: whether the breaker
// refused it, and the delay chosen after it.
func (l *attemptLog) try(refused bool, delay time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refusedTry = append(l.refusedTry, refused)
	l.delay = append(l.delay, delay)
}

// add logs one attempt: its status, whether its answer carried
// Retry-After and said "pending", when it was sent and answered.
func (l *attemptLog) add(status int, retryAfter, pending bool, start, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statuses = append(l.statuses, status)
	l.pending = append(l.pending, pending)
	l.retryAfter = append(l.retryAfter, retryAfter)
	l.start, l.end = append(l.start, start), append(l.end, end)
}

type attemptLogKey struct{}

// captureTransport sits under otelhttp's transport, so the request context
// holds the attempt's CLIENT span. It records the captured headers on that
// span as OpenTelemetry's http.request.header.* / http.response.header.*
// string slices, and logs the attempt's outcome for the ground truth.
type captureTransport struct{ base http.RoundTripper }

func (t captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	span := trace.SpanFromContext(req.Context())
	if keys := req.Header.Values("Idempotency-Key"); len(keys) > 0 {
		span.SetAttributes(attribute.StringSlice("http.request.header.idempotency-key", keys))
	}
	log, _ := req.Context().Value(attemptLogKey{}).(*attemptLog)
	idx := 0
	if log != nil {
		log.mu.Lock()
		idx = log.started
		log.started++
		log.mu.Unlock()
	}
	// net/http's Transport writes a request again, on a new connection,
	// when the reused connection it sent a replayable request (a GET
	// without a body) on closes with no answer: a resend below every
	// instrumentation, counted by its writes.
	var writes atomic.Int32
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { writes.Add(1) },
	}))
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	end := time.Now()
	status, retryAfter, pending := 0, false, false
	if log != nil {
		log.mu.Lock()
		if err == nil && log.wonBy == 0 {
			log.wonBy = idx + 1
		}
		log.resent += max(int(writes.Load())-1, 0)
		log.mu.Unlock()
	}
	if err == nil {
		status = resp.StatusCode
		if ra := resp.Header.Values("Retry-After"); len(ra) > 0 {
			if log == nil || !log.hideRetryAfter {
				span.SetAttributes(attribute.StringSlice("http.response.header.retry-after", ra))
			}
			retryAfter = true
		}
		if log != nil && log.results && status == http.StatusOK {
			// Read the answer for the truth: did it say "pending"? The
			// body read is put back for the caller.
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(b))
			pending = rerr == nil && pendingBody(b)
		}
	}
	if log != nil {
		log.add(status, retryAfter, pending, start, end)
	}
	return resp, err
}

// edgeStats is what actually happened on an edge, for truth.json and for
// checking that the traces hold enough retries to infer the policy from.
type edgeStats struct {
	mu        sync.Mutex
	calls     int
	attempts  int             // requests the calls sent (answered or timed out)
	exhausted int             // calls that gave up after MaxAttempts retryable failures
	statuses  map[int]bool    // HTTP error statuses the caller received
	from      map[string]bool // caller routes whose handlers made the calls
	// waits[i] counts the waits before attempt index i (0-based, so
	// waits[0] is always 0) that the caller's own backoff chose: a wait
	// for a Retry-After the policy honours is the server's, counted in
	// retryAfterWaits instead.
	waits           []int
	retryAfterWaits int
	// lateMS is the most a wait of an unjittered policy overran the
	// wait the policy asked for: the timing noise of this capture.
	lateMS float64
	// breakerFastFails counts calls an open breaker failed without an attempt.
	breakerFastFails int
	// breakerOpenPeriods counts the times the breaker opened (gobreaker's
	// state changes) and failed a call fast before it changed state
	// again; breakerOpen is whether it is open and has not yet.
	breakerOpenPeriods int
	breakerOpen        bool
	// breakerOpened counts the breaker's changes to open (OnStateChange).
	breakerOpened int
	// For a breaker inside the retry loop: breakerHalfOpened counts its
	// changes to half-open (OnHalfOpen), refusedTries the tries it
	// refused (nothing sent), partlyRefused the calls that sent some
	// requests and had others refused, joinedWaits the gaps between two
	// requests of a call with refused tries between them (several of
	// the policy's waits joined, counted apart from waits), and
	// triesPerCall[n] the calls that made n tries, sent or refused.
	breakerHalfOpened int
	refusedTries      int
	partlyRefused     int
	joinedWaits       int
	triesPerCall      []int
	// For a hystrix-go circuit: hystrixClosed counts its closes,
	// hystrixProbes the single tests it let through while open,
	// hystrixTimeouts the commands it timed out (their requests still
	// in flight), hystrixRejects those it refused for
	// MaxConcurrentRequests.
	hystrixClosed, hystrixProbes, hystrixTimeouts, hystrixRejects int
	// hystrixProbesFailed counts the probes that failed;
	// hystrixProbeNext is set between the circuit allowing a probe and
	// that command running.
	hystrixProbesFailed int
	hystrixProbeNext    bool
	// instances, on the stats merged from the callers of a caller's
	// instances (add), is each instance's breaker.
	instances []truthInstanceBreaker
	// hedgedCalls counts calls that sent hedges; mostRequests is the most
	// requests one of them sent. wonByAttempt[i] counts the hedging
	// policy's calls that request i (in the order sent) answered first.
	hedgedCalls, mostRequests int
	wonByAttempt              []int
	// transportResends counts the requests net/http resent on a new
	// connection after a reused one closed without an answer.
	transportResends int
	// received, where the scenario counts them at the callee
	// (Scenario.CountAtCallee), is the requests the callee received for
	// each of the edge's calls.
	received [][]visit
	// quotaRefused counts calls that ended with attempts left because
	// the retry quota refused their retry.
	quotaRefused int
	// resultRetries counts the attempts sent after a 200 that said
	// "pending" (retried on the result), resultRetriedCalls the calls
	// that sent one, exhaustedOnResult the calls that ran out of attempts
	// on one (the traces show them ending on a success).
	resultRetries, resultRetriedCalls, exhaustedOnResult int
}

// refused counts a call whose retry the retry quota refused.
func (s *edgeStats) refused() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quotaRefused++
}

func (s *edgeStats) fastFailed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breakerFastFails++
	if s.breakerOpen {
		s.breakerOpenPeriods++
		s.breakerOpen = false
	}
}

// refusedTry counts a try an open breaker inside the retry loop refused,
// and the open period it belongs to.
func (s *edgeStats) refusedTry() {
	s.refusedTries++
	if s.breakerOpen {
		s.breakerOpenPeriods++
		s.breakerOpen = false
	}
}

// breakerHalfOpen records a breaker's change to half-open.
func (s *edgeStats) breakerHalfOpen() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breakerHalfOpened++
	s.breakerOpen = false
}

// breakerState records a breaker's state change: whether it opened.
func (s *edgeStats) breakerState(open bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breakerOpen = open
	if open {
		s.breakerOpened++
	}
}

// add merges o, the stats of the caller of instance inst, into s; with
// breaker it lists that instance's breaker.
func (s *edgeStats) add(o *edgeStats, inst string, breaker bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls += o.calls
	s.attempts += o.attempts
	s.exhausted += o.exhausted
	for st := range o.statuses {
		s.statuses[st] = true
	}
	for f := range o.from {
		s.from[f] = true
	}
	for i, n := range o.waits {
		for len(s.waits) <= i {
			s.waits = append(s.waits, 0)
		}
		s.waits[i] += n
	}
	s.retryAfterWaits += o.retryAfterWaits
	s.lateMS = max(s.lateMS, o.lateMS)
	s.breakerFastFails += o.breakerFastFails
	s.breakerOpenPeriods += o.breakerOpenPeriods
	s.hedgedCalls += o.hedgedCalls
	s.mostRequests = max(s.mostRequests, o.mostRequests)
	for i, n := range o.wonByAttempt {
		s.wonByAttempt = addAt(s.wonByAttempt, i, n)
	}
	s.received = append(s.received, o.received...)
	s.transportResends += o.transportResends
	s.quotaRefused += o.quotaRefused
	s.resultRetries += o.resultRetries
	s.resultRetriedCalls += o.resultRetriedCalls
	s.exhaustedOnResult += o.exhaustedOnResult
	if breaker {
		s.instances = append(s.instances, truthInstanceBreaker{Instance: inst, Opened: o.breakerOpened,
			OpenPeriods: o.breakerOpenPeriods, FastFailedCalls: o.breakerFastFails})
	}
}

func newEdgeStats(p Policy) *edgeStats {
	return &edgeStats{statuses: map[int]bool{}, from: map[string]bool{}, waits: make([]int, p.MaxAttempts)}
}

func (s *edgeStats) calledFrom(route string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.from[route] = true
}

func (s *edgeStats) record(ctx context.Context, p Policy, log *attemptLog) {
	log.mu.Lock()
	defer log.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	for _, st := range log.statuses {
		if st >= 400 {
			s.statuses[st] = true
		}
	}
	n := len(log.statuses)
	s.attempts += n
	s.transportResends += log.resent
	if p.breakerInside() {
		s.recordTries(ctx, p, log)
		return
	}
	if p.Hedge != nil {
		if log.started > 1 {
			s.hedgedCalls++
			s.mostRequests = max(s.mostRequests, log.started)
		}
		if log.wonBy > 0 {
			s.wonByAttempt = addAt(s.wonByAttempt, log.wonBy-1, 1)
		}
		return // hedges overlap: there are no waits between them
	}
	retriedResult := false
	for i := 1; i < n; i++ {
		if log.pending[i-1] {
			s.resultRetries++
			retriedResult = true
		}
		if p.HonoursRetryAfter && log.retryAfter[i-1] {
			s.retryAfterWaits++
			continue
		}
		for len(s.waits) <= i {
			s.waits = append(s.waits, 0)
		}
		s.waits[i]++
		if want, ok := p.intendedWait(i); ok {
			late := float64(log.start[i].Sub(log.end[i-1])-want) / float64(time.Millisecond)
			s.lateMS = max(s.lateMS, late)
		}
	}
	if retriedResult {
		s.resultRetriedCalls++
	}
	if n == p.MaxAttempts && ctx.Err() == nil {
		switch last := log.statuses[n-1]; {
		case last == 0 || retryableStatus(last):
			s.exhausted++
		case p.RetryOnResult && log.pending[n-1]:
			s.exhaustedOnResult++
		}
	}
}

// recordTries records a call of a retry loop around a breaker from its
// tries (log.refusedTry), the requests it sent being the tries the
// breaker let through, in order: a call that sent none was failed fast;
// a wait is the gap between two requests sent by consecutive tries
// (before the later's index), a joined wait one with refused tries
// between them. s.mu and log.mu are held.
func (s *edgeStats) recordTries(ctx context.Context, p Policy, log *attemptLog) {
	sent, refused := len(log.statuses), 0
	prev, j := -1, 0 // the try index of the latest request sent; the next request's index among those sent
	for i, r := range log.refusedTry {
		if r {
			refused++
			s.refusedTry()
			continue
		}
		switch {
		case prev < 0:
		case prev == i-1:
			s.waits = addAt(s.waits, i, 1)
			if want, ok := p.intendedWait(i); ok {
				late := float64(log.start[j].Sub(log.end[j-1])-want) / float64(time.Millisecond)
				s.lateMS = max(s.lateMS, late)
			}
		default:
			s.joinedWaits++
		}
		prev, j = i, j+1
	}
	s.triesPerCall = addAt(s.triesPerCall, len(log.refusedTry), 1)
	switch {
	case sent == 0:
		s.breakerFastFails++
	case refused > 0:
		s.partlyRefused++
	}
	n := len(log.refusedTry)
	if n == p.MaxAttempts && ctx.Err() == nil {
		if log.refusedTry[n-1] || retryableStatus(log.statuses[sent-1]) || log.statuses[sent-1] == 0 {
			s.exhausted++
		}
	}
}

// addAt adds n to xs[i], growing xs with zeros to hold it.
func addAt(xs []int, i, n int) []int {
	for len(xs) <= i {
		xs = append(xs, 0)
	}
	xs[i] += n
	return xs
}
