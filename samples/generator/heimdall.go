package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gojek/heimdall/v7"
	heimdallhystrix "github.com/gojek/heimdall/v7/hystrix"
)

// libHeimdall is gojek/heimdall v7's hystrix client: its retry loop wraps
// each try in a hystrix-go command (hystrix.Do; libHystrix), so the
// circuit counts and refuses tries, and a refused try (nothing sent) is
// retried after the backoff like any other failure. After every failed
// try, the last one included, it sleeps its retrier's NextInterval.
const libHeimdall = "github.com/gojek/heimdall/v7"

// heimdallExponential is a caller using heimdall's hystrix client with
// retryCount attempts−1 and heimdall.NewExponentialBackoff(base, cap, 2,
// jitter): before retry n, min(base·2ⁿ⁻¹, cap) plus a whole number of
// milliseconds drawn from 0 to jitter (additive jitter), the tries run as
// commands of a hystrix-go circuit with h's settings.
func heimdallExponential(attempts int, base, cap, jitter time.Duration, h HystrixPolicy) Policy {
	return Policy{Library: libHeimdall, MaxAttempts: attempts,
		Backoff: Backoff{Kind: "exponential", Base: base, Multiplier: 2, Cap: cap, Jitter: "additive", Additive: jitter + time.Millisecond},
		Breaker: &BreakerPolicy{Hystrix: &h, OpenFor: h.SleepWindow, InsideRetries: true}}
}

// heimdallTries is heimdall's retrier for one call: it asks the policy's
// backoff for each wait, and logs each failed try of the call (called
// once per failed try, in order): whether it sent a request (the circuit
// refused it if no request started since the try before), and the wait
// chosen after it.
type heimdallTries struct {
	backoff heimdall.Backoff
	log     *attemptLog
	stats   *edgeStats
	sent    int // requests the call had sent before this try
}

func (r *heimdallTries) NextInterval(retry int) time.Duration {
	d := r.backoff.Next(retry)
	r.log.mu.Lock()
	started := r.log.started
	r.log.mu.Unlock()
	refused := started == r.sent
	r.log.try(refused, d)
	r.sent = started
	if !refused && r.stats.takeProbe() {
		// The circuit's probe was this try, and it failed.
		r.stats.probeFailed()
	}
	return d
}

// sendHeimdall sends r through a heimdall hystrix client made for this
// call (so that its retrier logs this call's tries; every client
// configures the same hystrix command, whose circuit the calls share),
// over c.client (otelhttp: each request a CLIENT span). heimdall returns
// a 5xx after its last try as an answer, and an error for a try that
// sent nothing or got no answer.
func (c *caller) sendHeimdall(ctx context.Context, r request) (result, error) {
	p := c.edge.Policy
	h := p.Breaker.Hystrix
	log, _ := ctx.Value(attemptLogKey{}).(*attemptLog)
	tries := &heimdallTries{backoff: heimdall.NewExponentialBackoff(p.Backoff.Base, p.Backoff.Cap, p.Backoff.Multiplier, p.Backoff.Additive-time.Millisecond), log: log, stats: c.stats}
	hc := heimdallhystrix.NewClient(
		heimdallhystrix.WithCommandName(c.hystrix),
		heimdallhystrix.WithHTTPClient(c.client),
		heimdallhystrix.WithHystrixTimeout(h.Timeout),
		heimdallhystrix.WithMaxConcurrentRequests(h.MaxConcurrent),
		heimdallhystrix.WithRequestVolumeThreshold(h.RequestVolume),
		heimdallhystrix.WithSleepWindow(int(h.SleepWindow/time.Millisecond)),
		heimdallhystrix.WithErrorPercentThreshold(h.ErrorPercent),
		heimdallhystrix.WithRetryCount(p.MaxAttempts-1),
		heimdallhystrix.WithRetrier(tries),
	)
	req, err := r.build(ctx)
	if err != nil {
		return result{}, err
	}
	resp, err := hc.Do(req)
	log.mu.Lock()
	n := len(log.refusedTry)
	log.mu.Unlock()
	if n < p.MaxAttempts && err == nil && resp != nil && resp.StatusCode < http.StatusInternalServerError {
		// The try that succeeded: no wait was asked for after it.
		log.try(false, 0)
		c.stats.takeProbe() // a probe among its tries succeeded
	}
	if err != nil {
		if resp != nil {
			drain(resp)
		}
		return result{}, errors.Join(err, errHeimdallGaveUp)
	}
	return readResult(resp)
}

// errHeimdallGaveUp marks a call heimdall gave up without an answer to
// return (its last try refused or timed out).
var errHeimdallGaveUp = errors.New("heimdall gave up")
