package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Breaker states, as State returns them.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
)

// BreakerConfig configures a circuit breaker. Either trip condition (or
// both) may be used; at least one is required.
type BreakerConfig struct {
	ConsecutiveFailures int     // open after this many consecutive failures (0: unused)
	FailureRate         float64 // or: open when the failure rate over Window is ≥ this, with at least MinRequests
	Window              float64 // seconds
	MinRequests         int
	OpenFor             float64 // seconds in open before half-open
	Jitter              float64 // half-open time jittered by ±Jitter fraction (seed 003's jittered half-open)
	HalfOpenProbes      int     // trial requests allowed in half-open; all must succeed to close (0 means 1)
	// PerCall: the breaker wraps the whole call, retries inside it (a
	// gobreaker around a retry loop): it is asked once, before the first
	// attempt, and told how the call ended; otherwise every attempt asks
	// and reports.
	PerCall bool
	// KeepWindow: the failure-rate window is never cleared, neither when
	// the breaker opens nor when it closes, and counts every result,
	// probes' and late answers' too (opossum's rolling buckets); otherwise
	// it holds only results that came in while closed since it last
	// closed (resilience4j). CountRejected: a request refused while open
	// (or in half-open beyond its probes) counts in the window as a call
	// that did not fail (opossum counts them as fired); only with
	// KeepWindow, since a cleared window never sees them.
	KeepWindow, CountRejected bool
}

// Validate reports the first inconsistency in the configuration.
func (c BreakerConfig) Validate() error {
	if c.ConsecutiveFailures < 0 {
		return fmt.Errorf("breaker: consecutive failures %d: want ≥ 0", c.ConsecutiveFailures)
	}
	if !(c.FailureRate >= 0 && c.FailureRate <= 1) {
		return fmt.Errorf("breaker: failure rate %v: want 0 to 1", c.FailureRate)
	}
	if c.ConsecutiveFailures == 0 && c.FailureRate == 0 {
		return fmt.Errorf("breaker: neither consecutive failures nor a failure rate: it would never open")
	}
	if c.FailureRate > 0 && (!(c.Window > 0) || math.IsInf(c.Window, 0)) {
		return fmt.Errorf("breaker: failure rate %v needs a window > 0 s, have %v", c.FailureRate, c.Window)
	}
	if c.MinRequests < 0 {
		return fmt.Errorf("breaker: min requests %d: want ≥ 0", c.MinRequests)
	}
	if !(c.OpenFor > 0) || math.IsInf(c.OpenFor, 0) {
		return fmt.Errorf("breaker: open for %v s: want > 0", c.OpenFor)
	}
	if !(c.Jitter >= 0 && c.Jitter < 1) {
		return fmt.Errorf("breaker: jitter %v: want 0 to 1 (exclusive)", c.Jitter)
	}
	if c.CountRejected && !c.KeepWindow {
		return fmt.Errorf("breaker: rejected requests counted in a window cleared on opening: it would never see them")
	}
	if c.HalfOpenProbes < 0 {
		return fmt.Errorf("breaker: half-open probes %d: want ≥ 0 (0 means 1)", c.HalfOpenProbes)
	}
	return nil
}

// Breaker is a client-side circuit breaker, closed / open / half-open, in
// the common form of Hystrix, resilience4j and sony/gobreaker:
//
//   - closed: every request is allowed. It opens after ConsecutiveFailures
//     failures in a row, or when, over the results of the last Window
//     seconds, there are at least MinRequests (and at least 1) and the share
//     of failures is ≥ FailureRate (resilience4j's time-based sliding window,
//     evaluated on every result).
//   - open: nothing is allowed until OpenFor·(1 + U(−Jitter, +Jitter))
//     seconds after it opened. The jitter is seed 003's fix for every
//     client's breaker going half-open at once; it draws one Float64 per
//     opening, and none when Jitter is 0.
//   - half-open: HalfOpenProbes trial requests are allowed, no more until
//     they answer; if all succeed it closes with fresh statistics, and the
//     first failure reopens it (with a new jittered open time).
//
// With KeepWindow the failure-rate window rolls on through every state
// instead (opossum): statistics are never fresh, and with CountRejected
// the requests it refused count in it too.
//
// Results that arrive while open are ignored (requests sent before it
// opened), and so are results in half-open while no probe is outstanding.
// A late answer to a request sent before the breaker opened, arriving while
// probes are outstanding, is taken for a probe's (the breaker does not
// identify requests). Transitions happen lazily at the time passed in.
type Breaker struct {
	cfg BreakerConfig
	rng *rand.Rand

	state    string
	openTill float64 // open: when it becomes half-open

	consecutive int
	window      []breakerResult // closed: results of the last Window seconds
	head, fails int             // window[head:] is live; failures among them

	probes, probeOK int // half-open: probes allowed so far, and succeeded
	opens           int
}

type breakerResult struct {
	t  float64
	ok bool
}

// NewBreaker returns a closed breaker. cfg must satisfy Validate (NewBreaker
// does not check it); rng may be nil only when cfg.Jitter is 0.
func NewBreaker(cfg BreakerConfig, rng *rand.Rand) *Breaker {
	if cfg.HalfOpenProbes == 0 {
		cfg.HalfOpenProbes = 1
	}
	return &Breaker{cfg: cfg, rng: rng, state: BreakerClosed}
}

// Allow reports whether a request may be sent at time t; in half-open it
// counts the request as a probe.
func (b *Breaker) Allow(t float64) bool {
	switch b.advance(t) {
	case BreakerOpen:
		b.rejected(t)
		return false
	case BreakerHalfOpen:
		if b.probes >= b.cfg.HalfOpenProbes {
			b.rejected(t)
			return false
		}
		b.probes++
	}
	return true
}

// rejected counts a refused request in a window that counts them.
func (b *Breaker) rejected(t float64) {
	if b.cfg.CountRejected && b.cfg.FailureRate > 0 {
		b.push(t, true)
	}
}

// Result records the outcome of a request at time t.
func (b *Breaker) Result(t float64, ok bool) {
	st := b.advance(t)
	if b.cfg.KeepWindow && st != BreakerClosed && b.cfg.FailureRate > 0 {
		b.push(t, ok) // the rolling window counts it whatever the state
	}
	switch st {
	case BreakerClosed:
		b.record(t, ok)
	case BreakerHalfOpen:
		if b.probeOK >= b.probes {
			return // no probe outstanding: a late answer from before it opened
		}
		if !ok {
			b.open(t)
			return
		}
		b.probeOK++
		if b.probeOK >= b.cfg.HalfOpenProbes {
			b.close()
		}
	}
}

// State returns the state at time t: "closed", "open" or "half-open".
func (b *Breaker) State(t float64) string { return b.advance(t) }

// Opens returns how many times the breaker has opened.
func (b *Breaker) Opens() int { return b.opens }

// HalfOpenAt returns when an open breaker goes half-open (meaningless in
// other states).
func (b *Breaker) HalfOpenAt() float64 { return b.openTill }

func (b *Breaker) advance(t float64) string {
	if b.state == BreakerOpen && t >= b.openTill {
		b.state = BreakerHalfOpen
		b.probes, b.probeOK = 0, 0
	}
	return b.state
}

func (b *Breaker) record(t float64, ok bool) {
	if ok {
		b.consecutive = 0
	} else {
		b.consecutive++
		if b.cfg.ConsecutiveFailures > 0 && b.consecutive >= b.cfg.ConsecutiveFailures {
			b.open(t)
			return
		}
	}
	if b.cfg.FailureRate <= 0 {
		return
	}
	b.push(t, ok)
	n := len(b.window) - b.head
	if n >= max(1, b.cfg.MinRequests) && float64(b.fails) >= b.cfg.FailureRate*float64(n)*(1-1e-12) {
		b.open(t)
	}
}

// push adds a result to the failure-rate window and drops those older
// than Window.
func (b *Breaker) push(t float64, ok bool) {
	b.window = append(b.window, breakerResult{t, ok})
	if !ok {
		b.fails++
	}
	for b.head < len(b.window) && b.window[b.head].t <= t-b.cfg.Window {
		if !b.window[b.head].ok {
			b.fails--
		}
		b.head++
	}
	if b.head > 1024 && b.head*2 > len(b.window) {
		n := copy(b.window, b.window[b.head:])
		b.window = b.window[:n]
		b.head = 0
	}
}

func (b *Breaker) open(t float64) {
	b.state = BreakerOpen
	b.opens++
	d := b.cfg.OpenFor
	if b.cfg.Jitter > 0 {
		d *= 1 + b.cfg.Jitter*(2*b.rng.Float64()-1)
	}
	b.openTill = t + d
	b.reset()
}

func (b *Breaker) close() {
	b.state = BreakerClosed
	b.reset()
}

func (b *Breaker) reset() {
	b.consecutive = 0
	if !b.cfg.KeepWindow {
		b.window, b.head, b.fails = b.window[:0], 0, 0
	}
	b.probes, b.probeOK = 0, 0
}
