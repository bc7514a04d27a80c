package replay

import (
	"fmt"
	"strings"

	"github.com/retryaudit/retryaudit/degrade"
)

// Mechanics are the parameters of a run that can change its verdict and
// that traces do not show: each is in the run's JSON and its notes.
type Mechanics struct {
	Services []ServiceMechanics `json:"services"`
	// HopMS is the mean network delay of a message (0: none).
	HopMS float64 `json:"network_hop_ms"`
	// HopRoundTrip: the hop is an attempt's whole round trip, paid by the
	// request (see Model.HopRoundTrip).
	HopRoundTrip bool `json:"network_hop_round_trip"`
	// MaxInflight is the client's limit on root requests in flight (see
	// Model.MaxInflight; 0: none).
	MaxInflight int `json:"max_inflight"`
	// OpenClients is how many clients the open-loop arrivals are split
	// among, MaxInflight then being each one's limit (see
	// Model.OpenClients; absent: one client).
	OpenClients int `json:"open_clients,omitempty"`
	// CancelDelayMS is how long a cancel takes to reach the server.
	CancelDelayMS float64 `json:"cancel_delay_ms"`
	// RTOMS is TCP's first retransmission timeout (doubling), and
	// Retransmits how many lost retransmissions reset the connection.
	RTOMS       float64 `json:"rto_ms"`
	Retransmits int     `json:"retransmits_before_reset"`
	// The verdict's parameters (see RunConfig).
	Share         float64 `json:"verdict_share"`
	CollapseShare float64 `json:"verdict_collapse_share"`
	WindowS       float64 `json:"verdict_window_s"`
	SettleS       float64 `json:"verdict_settle_s"`
	MaxJudgeS     float64 `json:"verdict_max_judge_s"`
	// SlowTries are the edges whose tries are drawn slow (the callee
	// still at work when the caller gives up) with the shares the traces
	// show (see SlowTries); the model notes give their counts.
	SlowTries []EdgeSlowTries `json:"slow_tries,omitempty"`
	// RequestLimits are the edges whose caller's proxy bounds the
	// attempts out (Policy.MaxRequests).
	RequestLimits []EdgeRequestLimit `json:"request_limits,omitempty"`
	// GiveUp are the edges whose client gives calls up on a failure with
	// attempts left, with the chance it does by the failure's class
	// (Policy.GiveUp); the model notes give the traces' counts.
	GiveUp []EdgeGiveUp `json:"give_up,omitempty"`
	// WorkSlowness are the edges whose callee's work on a call's later
	// attempts is drawn by the attempt before (Edge.Slowness: the traces
	// show slowness that comes with the request), with the chances drawn;
	// the model notes give the traces' counts.
	WorkSlowness []EdgeWorkSlowness `json:"work_slowness,omitempty"`
}

// EdgeWorkSlowness is one edge's WorkChain: the split between slow and
// fast work, the chance a first attempt is slow, and a later one's after
// a slow and after a fast attempt, by attempt number from the second,
// and beyond those the traces show.
type EdgeWorkSlowness struct {
	Edge               string    `json:"edge"`
	SlowAboveMS        float64   `json:"slow_above_ms"`
	First              float64   `json:"first"`
	AfterSlowByAttempt []float64 `json:"after_slow_by_attempt"`
	AfterFastByAttempt []float64 `json:"after_fast_by_attempt"`
	AfterSlow          float64   `json:"after_slow"`
	AfterFast          float64   `json:"after_fast"`
}

// EdgeRequestLimit is one edge's limit on attempts out: one more fails
// at once with 503 UO and is not retried (Envoy's max_requests).
type EdgeRequestLimit struct {
	Edge        string `json:"edge"`
	MaxRequests int    `json:"max_requests"`
}

// EdgeGiveUp is one edge's Policy.GiveUp: the chance its client ends a
// call on a failed answer of each class although attempts are left.
type EdgeGiveUp struct {
	Edge       string  `json:"edge"`
	Failure    float64 `json:"failure"`
	Throttled  float64 `json:"throttled"`
	RetryAfter float64 `json:"retry_after"`
	// NoAnswer is the chance for a failure without an answer where the
	// traces show it given up on apart from the other failures (nil: at
	// Failure's).
	NoAnswer *float64 `json:"no_answer,omitempty"`
}

// EdgeSlowTries is one edge's slow-try model: the chance a first try is
// slow, a retry by its attempt number (from the second) and, where the
// traces show a try's slowness depending on the try before it beyond
// chance (ByPreviousTry, with P), after a slow try and after another
// failure; Unknown: too few tries after a slow one to tell.
type EdgeSlowTries struct {
	Edge                  string    `json:"edge"`
	TimeoutMS             float64   `json:"per_try_timeout_ms"`
	First                 float64   `json:"first"`
	RetryByAttempt        []float64 `json:"retry_by_attempt"`
	ByPreviousTry         bool      `json:"by_previous_try"`
	AfterSlowByAttempt    []float64 `json:"after_slow_by_attempt,omitempty"`
	AfterFailureByAttempt []float64 `json:"after_failure_by_attempt,omitempty"`
	P                     float64   `json:"p_if_independent"`
	Unknown               bool      `json:"unknown"`
}

// ServiceMechanics are one service's.
type ServiceMechanics struct {
	Service string `json:"service"`
	Workers int    `json:"workers"`
	// QueueCap bounds the queue (0: unbounded).
	QueueCap      int     `json:"queue_cap"`
	Thrash        float64 `json:"thrash"`
	Cancel        float64 `json:"cancel"`
	CancelRunning bool    `json:"cancel_running"`
	// ShedRetriesAt is the queue depth from which the service turns
	// retries away (policy modifier shed; 0: never).
	ShedRetriesAt int `json:"shed_retries_at"`
	// Parts is how many shards (by key) or replicas (at random, Split
	// "replica") the faults split the service into, and Pools how many
	// worker pools serve them (fewer than the parts when the service has
	// fewer workers); 1 and "" for an unsplit service.
	Parts int    `json:"parts"`
	Split string `json:"split,omitempty"`
	Pools int    `json:"pools"`
}

func mechanicsOf(m *Model, faults degrade.Schedule, cfg RunConfig) Mechanics {
	mc := Mechanics{MaxInflight: m.MaxInflight, OpenClients: m.OpenClients, CancelDelayMS: 1000 * cfg.CancelDelay, RTOMS: 1000 * cfg.RTO, Retransmits: cfg.Retransmits,
		Share: cfg.Share, CollapseShare: cfg.CollapseShare, WindowS: cfg.Window, SettleS: cfg.Settle, MaxJudgeS: cfg.MaxJudge}
	if m.Hop != nil {
		mc.HopMS, mc.HopRoundTrip = 1000*m.Hop.Mean(), m.HopRoundTrip
		mc.CancelDelayMS = mc.HopMS
	}
	for _, s := range m.Services {
		sm := ServiceMechanics{Service: s.Name, Workers: s.Workers, QueueCap: s.QueueCap, Thrash: s.Thrash,
			Cancel: s.CancelProb, CancelRunning: s.CancelRunning, ShedRetriesAt: s.ShedRetriesAt, Parts: 1}
		if n := faults.Shards(s.Name); n > 1 {
			sm.Parts, sm.Split = n, "key"
		} else if n := faults.Replicas(s.Name); n > 1 {
			sm.Parts, sm.Split = n, "replica"
		}
		sm.Pools = min(sm.Parts, s.Workers)
		mc.Services = append(mc.Services, sm)
	}
	for _, e := range m.Edges {
		name := fmt.Sprintf("%s → %s %s", m.Services[e.Caller].Name, m.Services[e.Callee].Name, m.Services[e.Callee].Ops[e.CalleeOp].Name)
		if e.Policy.MaxRequests > 0 {
			mc.RequestLimits = append(mc.RequestLimits, EdgeRequestLimit{Edge: name, MaxRequests: e.Policy.MaxRequests})
		}
		if g := e.Policy.GiveUp; g != [giveUpClasses]float64{} {
			eg := EdgeGiveUp{Edge: name, Failure: g[GiveUpFail], Throttled: g[GiveUpThrottled], RetryAfter: g[GiveUpRetryAfter]}
			if g[GiveUpNoAnswer] != g[GiveUpFail] {
				eg.NoAnswer = new(g[GiveUpNoAnswer])
			}
			mc.GiveUp = append(mc.GiveUp, eg)
		}
		if w := e.Slowness; w != nil {
			mc.WorkSlowness = append(mc.WorkSlowness, EdgeWorkSlowness{Edge: name, SlowAboveMS: 1000 * w.Above, First: w.First,
				AfterSlowByAttempt: w.AfterSlowBy, AfterFastByAttempt: w.AfterFastBy, AfterSlow: w.AfterSlow, AfterFast: w.AfterFast})
		}
		if e.Fail == nil || e.Fail.Slow == nil {
			continue
		}
		sl := e.Fail.Slow
		es := EdgeSlowTries{Edge: name,
			TimeoutMS: 1000 * sl.Timeout, First: sl.First, RetryByAttempt: sl.By, ByPreviousTry: sl.ByPrevious, P: sl.P, Unknown: sl.Unknown}
		if sl.ByPrevious {
			es.AfterSlowByAttempt, es.AfterFailureByAttempt = sl.AfterSlowBy, sl.AfterFailureBy
		}
		mc.SlowTries = append(mc.SlowTries, es)
	}
	return mc
}

// String renders the mechanics as a note, e.g. "mechanics: server 6
// workers, unbounded queue, thrash 0.5, cancel 0 (running work completes);
// ...".
func (mc Mechanics) String() string {
	var b strings.Builder
	b.WriteString("mechanics:")
	for i, s := range mc.Services {
		if i > 0 {
			b.WriteByte(';')
		}
		queue := "unbounded queue"
		if s.QueueCap > 0 {
			queue = fmt.Sprintf("queue bound %d", s.QueueCap)
		}
		running := "running work completes"
		if s.CancelRunning {
			running = "running work stops"
		}
		workers := fmt.Sprintf("%d workers", s.Workers)
		if s.Workers >= clientWorkers {
			workers = "no limit on workers (a client's calls)"
		}
		fmt.Fprintf(&b, " %s %s, %s, thrash %g, cancel %g (%s)", s.Service, workers, queue, s.Thrash, s.Cancel, running)
		if s.ShedRetriesAt > 0 {
			fmt.Fprintf(&b, ", retries shed from %d queued", s.ShedRetriesAt)
		}
		switch s.Split {
		case "key":
			fmt.Fprintf(&b, ", %d shards by key on %d pools", s.Parts, s.Pools)
		case "replica":
			fmt.Fprintf(&b, ", %d replicas on %d pools", s.Parts, s.Pools)
		}
	}
	switch {
	case mc.OpenClients > 1 && mc.MaxInflight == 1:
		fmt.Fprintf(&b, "; the arrivals come from %d clients, each with one request in flight at a time, the rest waiting in its own line in order of arrival", mc.OpenClients)
	case mc.OpenClients > 1 && mc.MaxInflight > 0:
		fmt.Fprintf(&b, "; the arrivals come from %d clients, each with at most %d requests in flight, the rest waiting in its own line in order of arrival", mc.OpenClients, mc.MaxInflight)
	case mc.OpenClients > 1:
		fmt.Fprintf(&b, "; the arrivals come from %d clients, with no limit on requests in flight", mc.OpenClients)
	case mc.MaxInflight > 0:
		fmt.Fprintf(&b, "; the client has at most %d requests in flight, the rest wait in order of arrival", mc.MaxInflight)
	default:
		b.WriteString("; no client limit on requests in flight")
	}
	for _, l := range mc.RequestLimits {
		out := fmt.Sprintf("at most %d requests out at once", l.MaxRequests)
		if l.MaxRequests == 1 {
			out = "one request out at a time"
		}
		fmt.Fprintf(&b, "; %s: %s from the caller to the callee, one more failing at once with 503 UO, not retried (Envoy max_requests)", l.Edge, out)
	}
	switch {
	case mc.HopMS > 0 && mc.HopRoundTrip:
		fmt.Fprintf(&b, "; network round trip %g ms an attempt, paid before the callee sees it", mc.HopMS)
	case mc.HopMS > 0:
		fmt.Fprintf(&b, "; network hop %g ms a message", mc.HopMS)
	}
	for _, g := range mc.GiveUp {
		fmt.Fprintf(&b, "; %s gives a call up with attempts left on a failure with chance %.3g, a throttled one %.3g, one with a Retry-After %.3g",
			g.Edge, g.Failure, g.Throttled, g.RetryAfter)
		if g.NoAnswer != nil {
			fmt.Fprintf(&b, ", one without an answer %.3g", *g.NoAnswer)
		}
	}
	fmt.Fprintf(&b, "; cancels arrive after %g ms; lost packets resent after %g ms, doubling, reset after %d retransmissions", mc.CancelDelayMS, mc.RTOMS, mc.Retransmits)
	fmt.Fprintf(&b, "; recovered = goodput ≥ %g of its pre-trigger share over %g s with queues drained (queued work at most twice its pre-trigger peak plus 2), collapsed = under %g of it for %g s with a backlog above that bound not draining (with none, low goodput is the callee's own failures, never a collapse), judged up to %g s after the trigger",
		mc.Share, mc.WindowS, mc.CollapseShare, mc.SettleS, mc.MaxJudgeS)
	return b.String()
}
