package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afex/hystrix-go/hystrix"
)

// libHystrix is afex/hystrix-go, the Go port of Netflix Hystrix: each call
// runs as a hystrix command whose circuit opens when, over its rolling
// window (ten one-second buckets, emptied when the circuit closes), at
// least RequestVolumeThreshold commands ran and at least
// ErrorPercentThreshold percent of them were errors (a run that returned
// an error, a timeout, a rejection for MaxConcurrentRequests; the check
// is made when a command starts, and the command that finds it unhealthy
// is the first one refused). An open circuit refuses commands
// (ErrCircuitOpen) and lets one through SleepWindow after it opened or
// after its last probe; any command that succeeds while it is open closes
// it. A command that runs past Timeout fails with ErrTimeout at once,
// while its run goes on: the request it sent is not cancelled by
// hystrix (only by the caller's own context, here when api's handler has
// answered).
const libHystrix = "github.com/afex/hystrix-go"

// HystrixPolicy is a hystrix-go command's settings (hystrix.CommandConfig).
type HystrixPolicy struct {
	ErrorPercent, RequestVolume, MaxConcurrent int
	SleepWindow, Timeout                       time.Duration
}

// hystrixWindow is hystrix-go's rolling window: ten one-second buckets
// (rolling.Number keeps the buckets of the last 10 seconds).
const hystrixWindow = 10 * time.Second

// hystrixCommand is a caller that sends each call once, as a hystrix-go
// command with h's settings.
func hystrixCommand(h HystrixPolicy) Policy {
	return Policy{MaxAttempts: 1, Backoff: Backoff{Kind: "none", Jitter: "none"},
		Breaker: &BreakerPolicy{Hystrix: &h, OpenFor: h.SleepWindow}}
}

// hystrixCircuits maps a circuit's name to the stats of the edge whose
// calls run as its commands: hystrix-go reports its circuits' changes
// only through its logger, by name.
var (
	hystrixMu       sync.Mutex
	hystrixCircuits = map[string]*edgeStats{}
	hystrixSeq      atomic.Uint64
)

// hystrixLog is the logger hystrix-go writes its circuits' state changes
// to ("opening circuit NAME", "closing circuit NAME", "allowing single
// test to possibly close circuit NAME"): the truth's opens, closes and
// probes, from the library's own state.
type hystrixLog struct{}

func (hystrixLog) Printf(format string, items ...any) {
	if len(items) != 1 {
		return
	}
	name, ok := items[0].(string)
	if !ok {
		return
	}
	hystrixMu.Lock()
	s := hystrixCircuits[name]
	hystrixMu.Unlock()
	if s == nil {
		return
	}
	switch {
	case strings.Contains(format, "opening circuit"):
		s.breakerState(true)
	case strings.Contains(format, "closing circuit"):
		s.breakerState(false)
		s.mu.Lock()
		s.hystrixClosed++
		s.mu.Unlock()
	case strings.Contains(format, "allowing single test"):
		// Logged in the command's goroutine just before it runs: the
		// next command to run is this probe.
		s.mu.Lock()
		s.hystrixProbes++
		s.hystrixProbeNext = true
		s.mu.Unlock()
	}
}

func init() { hystrix.SetLogger(hystrixLog{}) }

// configureHystrix makes c's calls run as hystrix commands of a circuit
// of their own (a new name per caller, so that runs in one process never
// share a circuit's metrics).
func (c *caller) configureHystrix(h *HystrixPolicy) {
	c.hystrix = fmt.Sprintf("%s→%s %s #%d", c.edge.Caller, c.edge.Callee, c.instance, hystrixSeq.Add(1))
	hystrix.ConfigureCommand(c.hystrix, hystrix.CommandConfig{
		Timeout:                int(h.Timeout / time.Millisecond),
		MaxConcurrentRequests:  h.MaxConcurrent,
		RequestVolumeThreshold: h.RequestVolume,
		SleepWindow:            int(h.SleepWindow / time.Millisecond),
		ErrorPercentThreshold:  h.ErrorPercent,
	})
	hystrixMu.Lock()
	hystrixCircuits[c.hystrix] = c.stats
	hystrixMu.Unlock()
}

// sendThroughHystrix makes the call as a hystrix command (hystrix.DoC
// with the request's context, no fallback): a failed result (a 5xx) is
// the run's error, which hystrix counts. A command hystrix refused
// (circuit open, too many running) sent nothing; one it timed out sent
// its request, which goes on until api's handler has answered and its
// context is cancelled.
func (c *caller) sendThroughHystrix(ctx context.Context, r request) (result, error) {
	var res result
	var probe atomic.Bool
	err := hystrix.DoC(ctx, c.hystrix, func(ctx context.Context) error {
		probe.Store(c.stats.takeProbe())
		got, err := c.send(ctx, r)
		var se *statusError
		if err == nil && got.status >= 500 {
			err = &statusError{res: got}
		}
		if errors.As(err, &se) {
			got = se.res
		}
		res = got
		return err
	}, nil)
	if err != nil && probe.Load() {
		c.stats.probeFailed()
	}
	switch {
	case errors.Is(err, hystrix.ErrCircuitOpen):
		c.stats.fastFailed()
	case errors.Is(err, hystrix.ErrMaxConcurrency):
		c.stats.hystrixRejected()
	case errors.Is(err, hystrix.ErrTimeout):
		c.stats.hystrixTimedOut()
		return result{}, err
	}
	return res, err
}

// hystrixRejected counts a command refused for MaxConcurrentRequests.
func (s *edgeStats) hystrixRejected() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hystrixRejects++
}

// hystrixTimedOut counts a command that timed out: its request was sent
// and is still in flight (its answer, or its cancellation, comes after
// the call was recorded, so it is counted here).
func (s *edgeStats) hystrixTimedOut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hystrixTimeouts++
	s.attempts++
}

// takeProbe reports whether the command about to run is the probe the
// circuit just allowed, and clears that.
func (s *edgeStats) takeProbe() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.hystrixProbeNext
	s.hystrixProbeNext = false
	return p
}

// probeFailed records a probe that failed (an error or a timeout): the
// circuit stays open another SleepWindow, and the calls it refuses then
// are an open period of their own (as after a failed half-open probe of
// any other breaker, which opens it again).
func (s *edgeStats) probeFailed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hystrixProbesFailed++
	s.breakerOpen = true
}
