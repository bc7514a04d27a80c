package replay

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
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
		i, now := ev.id, ev.time()
		switch ev.kind() {
		case ctRead:
			read[i] = version
			h.push(now+delay(), ctReadReply, i, 0)
		case ctReadReply:
			h.push(now+delay(), ctWrite, i, 0)
			r.Calls++
		case ctWrite:
			ok := read[i] == version
			if ok {
				version++
			}
			h.push(now+delay(), ctWriteReply, i, boolGen(ok))
		case ctWriteReply:
			if ev.gen == 1 {
				done++
				r.CompletionS = max(r.CompletionS, now)
				continue
			}
			tries[i]++
			d := c.Backoff.Delay(tries[i], prev[i], rngBackoff)
			prev[i] = d
			h.push(now+d, ctRetry, i, 0)
		case ctRetry:
			h.push(now+delay(), ctRead, i, 0)
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

// Strategy is a named backoff.
type Strategy struct {
	Name    string
	Backoff Backoff
}

// ContentionStudy is Brooker's experiment: the contention model at each
// of several client counts, every strategy run over Seeds seeds and
// averaged, each compared with the strategy named Reference.
type ContentionStudy struct {
	Clients            []int
	Seeds              int
	Strategies         []Strategy
	Reference          string
	DelayMS, DelaySDMS float64
	// MaxCalls bounds each run (see Contention.Run).
	MaxCalls int
	// Seed is the first seed; the runs use Seed, Seed+1, ….
	Seed uint64
}

// ContentionRow is one strategy at one client count: the mean time until
// the last client's update succeeded, the mean calls (reads and writes:
// the work), and both as multiples of the reference strategy's.
type ContentionRow struct {
	Clients     int     `json:"clients"`
	Strategy    string  `json:"strategy"`
	CompletionS float64 `json:"completion_s"`
	Calls       float64 `json:"calls"`
	TimeVsRef   float64 `json:"time_vs_reference"`
	CallsVsRef  float64 `json:"calls_vs_reference"`
}

// Run runs the study: rows by client count, then in the order of the
// strategies.
func (cs ContentionStudy) Run(ctx context.Context) ([]ContentionRow, error) {
	if cs.Seeds < 1 {
		return nil, fmt.Errorf("contention: %d seeds: want 1 or more", cs.Seeds)
	}
	var rows []ContentionRow
	for _, n := range cs.Clients {
		first := len(rows)
		ref := -1
		for _, st := range cs.Strategies {
			row := ContentionRow{Clients: n, Strategy: st.Name}
			for k := range cs.Seeds {
				r, err := Contention{Clients: n, Backoff: st.Backoff, DelayMS: cs.DelayMS, DelaySDMS: cs.DelaySDMS}.Run(ctx, cs.Seed+uint64(k), cs.MaxCalls)
				if err != nil {
					return nil, fmt.Errorf("%s at %d clients: %w", st.Name, n, err)
				}
				row.CompletionS += r.CompletionS / float64(cs.Seeds)
				row.Calls += float64(r.Calls) / float64(cs.Seeds)
			}
			if st.Name == cs.Reference {
				ref = len(rows)
			}
			rows = append(rows, row)
		}
		if ref < 0 {
			return nil, fmt.Errorf("contention: no strategy named %q to compare with", cs.Reference)
		}
		for i := first; i < len(rows); i++ {
			rows[i].TimeVsRef = rows[i].CompletionS / rows[ref].CompletionS
			rows[i].CallsVsRef = rows[i].Calls / rows[ref].Calls
		}
	}
	return rows, nil
}

// brookerStrategies are the article's: no backoff, exponential backoff
// without jitter and with full, equal and decorrelated jitter, base 5 ms,
// cap 2 s.
var brookerStrategies = []Strategy{
	{"no backoff", Backoff{Kind: BackoffImmediate}},
	{"exponential", Backoff{Kind: BackoffExponential, Base: 0.005, Multiplier: 2, Cap: 2, Jitter: JitterNone}},
	{"full jitter", Backoff{Kind: BackoffExponential, Base: 0.005, Multiplier: 2, Cap: 2, Jitter: JitterFull}},
	{"equal jitter", Backoff{Kind: BackoffExponential, Base: 0.005, Multiplier: 2, Cap: 2, Jitter: JitterEqual}},
	{"decorrelated", Backoff{Kind: BackoffExponential, Base: 0.005, Multiplier: 2, Cap: 2, Jitter: JitterDecorrelated}},
}

// The contention preset's parameters: the article's network delay per
// message (|Normal(10, 2)| ms), its 10–190 clients (here every 30), and 5
// seeds per point.
const (
	contentionDelayMS   = 10
	contentionDelaySDMS = 2
	contentionSeeds     = 5
	contentionMaxCalls  = 10_000_000
)

// contentionPreset is Marc Brooker's "Exponential Backoff And Jitter"
// contention experiment; load scales the client counts.
func contentionPreset(load float64) (*Preset, error) {
	var clients []int
	for n := 10; n <= 190; n += 30 {
		c := int(math.Round(float64(n) * load))
		if c < 1 || c > MaxContentionClients {
			return nil, fmt.Errorf("contention: --load %g makes %d clients: want 1 to %d", load, c, MaxContentionClients)
		}
		clients = append(clients, c)
	}
	return &Preset{
		Name: "contention",
		About: fmt.Sprintf("Brooker, \"Exponential Backoff And Jitter\": N closed-loop clients each make one optimistic-concurrency update of one row "+
			"(read, conditional write; on a conflict back off and start again from the read); |Normal(%d, %d)| ms a message; backoff base 5 ms, cap 2 s; "+
			"%s clients, each point the mean of %d seeds; times and calls compared with full jitter's",
			contentionDelayMS, contentionDelaySDMS, joinInts(clients), contentionSeeds),
		Contention: &ContentionStudy{Clients: clients, Seeds: contentionSeeds, Strategies: brookerStrategies, Reference: "full jitter",
			DelayMS: contentionDelayMS, DelaySDMS: contentionDelaySDMS, MaxCalls: contentionMaxCalls},
	}, nil
}

// joinInts writes 10, 40, 70 for [10 40 70].
func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}
