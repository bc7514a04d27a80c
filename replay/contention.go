package replay

import (
	"context"
	"fmt"
	"math"
)

// Contention is the closed-loop contention model of Marc Brooker's
// "Exponential Backoff And Jitter": Clients clients each make one
// optimistic-concurrency update of the same row. An update reads the row
// (a request and a reply), then writes it on condition that its version
// has not changed (another request and reply); on a conflict the client
// waits its backoff and starts again from the read. Every message takes
// |Normal(DelayMS, DelaySDMS)| milliseconds.
type Contention struct {
	Clients            int
	Backoff            Backoff
	DelayMS, DelaySDMS float64
}

// ContentionResult is one contention run: when the last client's update
// succeeded, and how many calls (reads and writes) all of them made.
type ContentionResult struct {
	CompletionS float64
	Calls       int
}

// contention events: a read or a write reaches the row; its reply reaches
// the client; a backoff ends.
const (
	ctRead evKind = iota
	ctReadReply
	ctWrite
	ctWriteReply
	ctRetry
)

// MaxContentionClients bounds Contention.Clients.
const MaxContentionClients = 100_000

// Run simulates the contention once. It stops with the context's error,
// and refuses a run that would not end (more than maxCalls calls).
func (c Contention) Run(ctx context.Context, seed uint64, maxCalls int) (ContentionResult, error) {
	if c.Clients < 1 || c.Clients > MaxContentionClients {
		return ContentionResult{}, fmt.Errorf("contention: %d clients: want 1 to %d", c.Clients, MaxContentionClients)
	}
	if !(c.DelayMS >= 0) || !(c.DelaySDMS >= 0) || math.IsInf(c.DelayMS+c.DelaySDMS, 0) {
		return ContentionResult{}, fmt.Errorf("contention: delay %v ± %v ms: want finite and ≥ 0", c.DelayMS, c.DelaySDMS)
	}
	if err := c.Backoff.Validate(); err != nil {
		return ContentionResult{}, err
	}
	rng, rngBackoff := newRNG(seed, 1), newRNG(seed, 2)
	delay := func() float64 { return math.Abs(c.DelayMS+c.DelaySDMS*rng.NormFloat64()) / 1000 }
	var h eventHeap
	version := int32(0)
	read := make([]int32, c.Clients)   // the version each client read
	tries := make([]int, c.Clients)    // conflicts so far
	prev := make([]float64, c.Clients) // previous backoff (decorrelated jitter)
	var r ContentionResult
	done := 0
	for i := range c.Clients {
		h.push(delay(), ctRead, int32(i), 0)
		r.Calls++
	}
	for h.len() > 0 {
		ev := h.pop()
		if r.Calls%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return ContentionResult{}, err
			}
		}
		if r.Calls > maxCalls {
			return ContentionResult{}, fmt.Errorf("contention: over %d calls with %d of %d clients done: the backoff never lets them through", maxCalls, done, c.Clients)
		}
		i := ev.id
		switch ev.kind() {
		case ctRead:
			read[i] = version
			h.push(ev.t+delay(), ctReadReply, i, 0)
		case ctReadReply:
			h.push(ev.t+delay(), ctWrite, i, 0)
			r.Calls++
		case ctWrite:
			ok := read[i] == version
			if ok {
				version++
			}
			h.push(ev.t+delay(), ctWriteReply, i, boolGen(ok))
		case ctWriteReply:
			if ev.gen == 1 {
				done++
				r.CompletionS = max(r.CompletionS, ev.t)
				continue
			}
			tries[i]++
			d := c.Backoff.Delay(tries[i], prev[i], rngBackoff)
			prev[i] = d
			h.push(ev.t+d, ctRetry, i, 0)
		case ctRetry:
			h.push(ev.t+delay(), ctRead, i, 0)
			r.Calls++
		}
	}
	return r, nil
}

func boolGen(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
