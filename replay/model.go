package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/retryaudit/retryaudit/graph"
)

// Model is what replay simulates: services with workers and FIFO queues,
// the operations they serve with their service-time distributions and the
// calls each operation makes, and the client policy of every edge.
type Model struct {
	Services []Service
	Edges    []Edge
	// Entry are the root operations, with their share of arrivals.
	Entry []Entry
	// Rate is the open-loop arrival rate of root requests per second.
	Rate float64
	// Arrivals, when set, replace the Poisson stream: root requests come at
	// these times (seconds, increasing) to these entries, repeated end to
	// end until the run's duration, every Period seconds.
	Arrivals []Arrival
	Period   float64
	// Clients > 0 makes arrivals closed-loop instead: that many clients,
	// each sending its next request Think seconds after the last one ended.
	Clients int
	Think   float64
	// MaxInflight > 0 is the client's limit on root requests in flight:
	// a request that arrives while that many are out (each from its first
	// attempt to its last answer, its retries and backoff included) waits
	// for one to end, in order of arrival (jirfag/simulations'
	// max_inflight_requests, a semaphore around each logical request).
	// 0: no limit, a fully open system.
	MaxInflight int
	// OpenClients > 1 splits the open-loop arrivals among that many
	// clients, each arrival from one drawn uniformly at random (so with
	// Poisson arrivals each client sends a Poisson stream at
	// Rate/OpenClients), and makes
	// MaxInflight each client's own limit: a request waits in its own
	// client's line, even while other clients have room (seed 000's
	// "fifty clients", each with one request and its retries in flight
	// at a time under MaxInflight 1). 0 or 1: one client.
	OpenClients int
	// ClientDeadline is how long the end user waits for a root request;
	// a success after it counts as a failure. 0: no deadline.
	ClientDeadline float64
	// RootPropagate passes the end user's deadline to the entry services.
	RootPropagate bool
	// TimelinePeriod is how often (seconds) the edges' failure episodes
	// (Failures.Incidents) repeat when the observed degradation is
	// replayed; 0: they happen once.
	TimelinePeriod float64
	// Assumed lists capacities and other figures the traces could not show,
	// for the report's footnotes.
	Assumed []string
	// Hop, when set, is the network delay of every message: request,
	// answer and cancel. nil: messages arrive at once (cancels after the
	// run's CancelDelay).
	Hop Dist
	// HopRoundTrip makes Hop the whole round trip of an attempt, drawn
	// once as the request travels, the answer arriving at once: the
	// jirfag/simulations model's net_rtt, which waits one exponential RTT
	// before handling. Cancels still take one Hop.
	HopRoundTrip bool
}

// Service is a pool of identical workers in front of one FIFO queue.
type Service struct {
	Name    string
	Workers int
	// QueueCap bounds the queue (0: unbounded); arrivals beyond it are
	// rejected with 503.
	QueueCap int
	// ShedRetriesAt > 0 makes the service reject retries (attempt number
	// > 1) once its queue holds that many jobs, keeping room for first
	// attempts.
	ShedRetriesAt int
	// CancelProb is the probability that a client that times out tells
	// the service (it notices the closed connection, or gets a gRPC
	// cancel); hedge losers are always cancelled. A cancel drops the work
	// from the queue when it arrives; running work completes unless
	// CancelRunning. 0: servers keep working for callers who left.
	CancelProb float64
	// CancelRunning: the service honours cancellation of work it is
	// already serving (it checks its context), and stops it.
	CancelRunning bool
	// Thrash models what seed 000 calls overloaded servers doing less
	// useful work: each job's service time grows by Thrash × (queued jobs
	// per worker), capped at 4× that, as lock contention, pool thrashing
	// and GC pressure do. 0: service times do not depend on load.
	Thrash float64
	// Instances is how many process instances the service runs as (the
	// traces' graph.Service.Instances, or --instances): each keeps its own
	// circuit breaker on every edge it calls over with one, as gobreaker,
	// resilience4j, opossum and Polly hold their state in the process.
	// The requests the service serves go to its instances in turn, round
	// robin by arrival: which instance a load balancer picked is not in
	// the traces, and round robin spreads them evenly (as the common
	// balancers' default does) without a random draw, so no other
	// stream's sequence moves. Workers and queues stay the service's, one
	// pool. 0 or 1: one instance.
	Instances int
	Ops       []Op
}

// Op is one operation a service serves.
type Op struct {
	Name string
	Time Dist
	// FailTime, when set, is the service time of executions that fail on
	// their own (the failure model draws which), Time that of the others.
	FailTime Dist
	// Calls are edge indices, made in order after the service time (or
	// all at once when Parallel).
	Calls    []int
	Parallel bool
	// FailFast is the probability that an execution failing on its own
	// fails before making its calls (a rejected request calls nothing).
	FailFast float64
	// StopOnFailure is the probability that a sequential execution makes
	// no further calls once one has failed (a handler returning its error).
	StopOnFailure float64
}

// Edge is a caller operation calling a callee operation under a policy.
type Edge struct {
	Caller, CallerOp int
	Callee, CalleeOp int
	// Prob is the chance one execution of the caller op makes these calls.
	Prob float64
	// Repeat is how many calls one execution makes (a fan-out loop), ≥ 1.
	Repeat int
	// Width is how many of them a sequential operation makes at once (a
	// pool of Width workers); 0 or 1: one after another. An operation
	// whose calls are Parallel makes them all at once.
	Width      int
	Idempotent bool
	// Fail is the callee's own failure model as the caller saw it; nil:
	// the callee fails only under faults.
	Fail *Failures
	// Transit, when set, is the time an attempt takes to reach the callee
	// beyond the callee's own time (network, connection set-up).
	Transit Dist
	// RetryTransit, when set, is the transit of the attempts after the
	// first (retries and hedges), Transit then the first attempts'.
	RetryTransit Dist
	// Work, when set, is the callee's work for this edge's first attempts,
	// RetryWork for its later ones (retries and hedges), both in place of
	// the callee operation's Time (not of its FailTime, nor of the slow
	// tries' own times): set together, where the traces tell the two
	// apart.
	Work, RetryWork Dist
	// Slowness, when set, draws the callee's work on each attempt of a
	// call slow or fast by the attempt before it (the traces show
	// slowness that comes with the request), in place of Work, RetryWork
	// and the operation's Time (not of its FailTime, nor of the slow
	// tries' own times).
	Slowness *WorkChain
	// CalleeP95 is the callee's observed p95 latency (seconds), for hedging.
	CalleeP95 float64
	Policy    Policy
}

// Arrival is one scheduled root request.
type Arrival struct {
	At    float64
	Entry int
}

// Entry is a root operation and its share of root arrivals.
type Entry struct {
	Service, Op int
	Weight      float64
	Fail        *Failures // the root operation's own failure model, or nil
}

// Dist is a service-time distribution in seconds.
type Dist interface {
	Sample(rng *rand.Rand) float64
	Mean() float64
}

// sample draws from d: the same draw as d.Sample, with the engine's
// usual distributions called directly (inlined) rather than through the
// interface.
func sample(d Dist, rng *rand.Rand) float64 {
	switch d := d.(type) {
	case Exponential:
		return rng.ExpFloat64() * d.MeanS
	case LogNormal:
		return d.Sample(rng)
	case *Empirical:
		return d.Sample(rng)
	}
	return d.Sample(rng)
}

// Exponential service times, the M in M/M/c.
type Exponential struct{ MeanS float64 }

// Sample draws a service time.
func (d Exponential) Sample(rng *rand.Rand) float64 { return rng.ExpFloat64() * d.MeanS }

// Mean returns the mean service time.
func (d Exponential) Mean() float64 { return d.MeanS }

// Constant service times.
type Constant float64

// Sample returns the constant.
func (d Constant) Sample(*rand.Rand) float64 { return float64(d) }

// Mean returns the constant.
func (d Constant) Mean() float64 { return float64(d) }

// LogNormal service times with an optional slow tail (seed 002's lab):
// with probability TailProb a draw is TailFactor times longer.
type LogNormal struct {
	Median, Sigma        float64
	TailProb, TailFactor float64
}

// Sample draws a service time.
func (d LogNormal) Sample(rng *rand.Rand) float64 {
	x := d.Median * math.Exp(d.Sigma*rng.NormFloat64())
	if d.TailProb > 0 && rng.Float64() < d.TailProb {
		x *= d.TailFactor
	}
	return x
}

// Mean returns the mean service time.
func (d LogNormal) Mean() float64 {
	m := d.Median * math.Exp(d.Sigma*d.Sigma/2)
	return m * (1 + d.TailProb*(d.TailFactor-1))
}

// Empirical draws from observed quantiles by inverse CDF, interpolating
// linearly between them (the topology carries self-time quantiles).
type Empirical struct {
	// Levels are increasing in [0,1], Values their quantiles (seconds);
	// neither changes after NewEmpirical, which indexes the levels.
	Levels, Values []float64
	mean           float64
	// from indexes the levels for a draw: from[b] is the first level at
	// or above b/len(from), where the search for the level of a draw in
	// [b/len(from), (b+1)/len(from)) starts (see quantile).
	from []int32
}

// NewEmpirical checks and builds an empirical distribution.
func NewEmpirical(levels, values []float64) (*Empirical, error) {
	if len(levels) != len(values) || len(levels) < 2 || levels[0] != 0 || levels[len(levels)-1] != 1 {
		return nil, fmt.Errorf("empirical distribution needs quantiles from level 0 to 1, got %d levels for %d values", len(levels), len(values))
	}
	if !slices.IsSorted(levels) || !slices.IsSorted(values) {
		return nil, fmt.Errorf("empirical quantiles must increase")
	}
	e := &Empirical{Levels: levels, Values: values}
	for i := 1; i < len(levels); i++ {
		e.mean += (levels[i] - levels[i-1]) * (values[i] + values[i-1]) / 2
	}
	// A power of two of buckets, at least two per level: u×len(from) is
	// then exact, so a draw's bucket never starts past its level, and a
	// draw passes about one level beyond its bucket's first.
	n := 16
	for n < 2*len(levels) && n < 1<<12 {
		n *= 2
	}
	e.from = make([]int32, n)
	i := 0
	for b := range e.from {
		for i < len(levels) && levels[i] < float64(b)/float64(n) {
			i++
		}
		e.from[b] = int32(i)
	}
	return e, nil
}

// Sample draws a service time: the quantile at a uniform level.
func (e *Empirical) Sample(rng *rand.Rand) float64 { return e.quantile(rng.Float64()) }

// quantile is the quantile at level u in [0, 1), interpolated linearly
// between the levels around it: from the first level at or above u, the
// index slices.BinarySearch finds. The search starts at the first level
// at or above the start of u's bucket (every level before it is below
// u) and walks forward, about one level at most: a generic binary search
// over the topology's thirteen levels, with its NaN handling and a
// mispredicted branch at each step, was a fifth of an audit's CPU (README,
// "Performance"). Neither u nor a level is NaN (NewEmpirical rejects
// one: it compares below every number), so the plain comparison orders
// them as cmp.Compare does.
func (e *Empirical) quantile(u float64) float64 {
	i := 0
	if len(e.from) > 0 { // built by NewEmpirical
		i = int(e.from[int(u*float64(len(e.from)))])
	}
	for i < len(e.Levels) && e.Levels[i] < u {
		i++
	}
	if i == 0 {
		return e.Values[0]
	}
	lo, hi := e.Levels[i-1], e.Levels[i]
	f := (u - lo) / (hi - lo)
	return e.Values[i-1] + f*(e.Values[i]-e.Values[i-1])
}

// Mean returns the mean service time.
func (e *Empirical) Mean() float64 { return e.mean }

// Policy is a client's retry policy on one edge.
type Policy struct {
	MaxAttempts   int     // ≥ 1
	PerTryTimeout float64 // seconds; 0: none
	// Deadline bounds the whole call including retries (seconds from its
	// start); 0: the caller's own deadline, if it propagates.
	Deadline float64
	// Propagate passes the deadline to the callee, which drops work whose
	// deadline has passed instead of doing it.
	Propagate       bool
	Backoff         Backoff
	HonorRetryAfter bool
	// Budget limits retries; the zero spec: unlimited. SharedBudget shares
	// one budget between every edge into the same callee (caller and callee
	// share it), otherwise each edge has its own.
	Budget       BudgetSpec
	SharedBudget bool
	// Breaker is the client's circuit breaker; the zero config: none.
	Breaker BreakerConfig
	// MaxRequests > 0 bounds the attempts out on the edge at once, from
	// their sending to their answer or the client's giving up (a per-try
	// timeout resets the stream): the caller's proxy fails one more at
	// once with 503, response flag UO, and does not retry it, as Envoy's
	// cluster circuit breaker max_requests does (Envoy never retries an
	// overflow). The attempts out are counted over every edge from the
	// same caller to the same callee (the caller's proxy, the callee's
	// cluster), each edge comparing the count with its own limit. 0: no
	// limit.
	MaxRequests int
	// HedgeAfter > 0 hedges: while the latest attempt has not answered
	// after that many seconds, another is sent, up to MaxAttempts in all
	// (gRPC's hedgingPolicy counts the same way; failsafe-go's max hedges
	// n is MaxAttempts n+1). The first success wins and the losers are
	// cancelled.
	HedgeAfter float64
	// GiveUp is, by the class of a failed attempt's answer (GiveUpFail,
	// GiveUpThrottled, GiveUpRetryAfter), the chance that the client ends
	// the call on it although attempts are left: the share of such
	// failures the traces show it giving up on (graph.Outcomes.GivenUp:
	// the answer asked not to be retried, a status it retries only
	// sometimes, a refusal no span shows). Zero: it retries every one.
	GiveUp [giveUpClasses]float64
	// OnFailureOut is what a hedging client does when an attempt fails
	// while another is still out (HedgeWaits, the zero value: it waits
	// for them before it acts; HedgeEnds, HedgeSendsNext,
	// HedgeEndsOrSendsNext: it acts at once; see sim.actAtOnce).
	OnFailureOut HedgeOnFailure
}

// HedgeOnFailure is what a hedging client does when an attempt answers
// with a failure while another of its call is still out
// (graph.Hedging.OnFailure).
type HedgeOnFailure uint8

const (
	// HedgeWaits: it waits for the attempts out (and its hedge timer), and
	// decides on the call once none is out.
	HedgeWaits HedgeOnFailure = iota
	// HedgeEnds: it stops waiting for the attempts out, then goes on as
	// after a failure with none out: it gives the call up, or retries
	// after its backoff.
	HedgeEnds
	// HedgeSendsNext: it keeps the attempts out and, unless it gives the
	// call up on the failure (GiveUp by its class; then the call ends),
	// sends the next attempt at once while attempts are left.
	HedgeSendsNext
	// HedgeEndsOrSendsNext is HedgeSendsNext where the traces show calls
	// of both kinds: which one a failure makes is its class's give-up
	// share (hedgedhttp ends on a 503, sends the next after no answer).
	HedgeEndsOrSendsNext
)

// The classes of failed answers a policy's GiveUp tells apart: throttled
// (429, RESOURCE_EXHAUSTED without a Retry-After), with a Retry-After, no
// answer (a transport error: an aborted or reset connection), and every
// other failure (5xx, error statuses, timeouts). A model built from traces
// gives no answer the share of the other failures unless the traces show
// the two given up on differently beyond chance (giveUpShares).
const (
	GiveUpFail = iota
	GiveUpThrottled
	GiveUpRetryAfter
	GiveUpNoAnswer
	giveUpClasses
)

// Enabled says whether the config is a breaker: the zero config is none.
func (c BreakerConfig) Enabled() bool { return c != BreakerConfig{} }

// MaxOpenClients bounds Model.OpenClients: each client keeps a line, so
// the bound keeps a hostile count from allocating without limit.
const MaxOpenClients = 1 << 20

// Validate reports the first inconsistency in the model.
func (m *Model) Validate() error {
	if len(m.Entry) == 0 {
		return fmt.Errorf("model has no entry operation")
	}
	if m.Rate <= 0 && m.Clients <= 0 && len(m.Arrivals) == 0 {
		return fmt.Errorf("model needs an arrival rate, arrival times or closed-loop clients")
	}
	if math.IsNaN(m.Rate) || math.IsInf(m.Rate, 0) || m.Rate < 0 {
		return fmt.Errorf("model arrival rate %v: want a finite rate ≥ 0", m.Rate)
	}
	for i, a := range m.Arrivals {
		if a.Entry < 0 || a.Entry >= len(m.Entry) || a.At < 0 || i > 0 && a.At < m.Arrivals[i-1].At || a.At > m.Period {
			return fmt.Errorf("arrival %d (at %gs, entry %d): want increasing times within the period %gs and a known entry", i, a.At, a.Entry, m.Period)
		}
	}
	if len(m.Arrivals) > 0 && !(m.Period > 0 && !math.IsInf(m.Period, 1)) {
		return fmt.Errorf("arrival times need a positive, finite period")
	}
	if m.MaxInflight < 0 {
		return fmt.Errorf("model limit of %d root requests in flight: want 0 (none) or more", m.MaxInflight)
	}
	if m.OpenClients < 0 || m.OpenClients > MaxOpenClients {
		return fmt.Errorf("model of %d open-loop clients: want 0 (one client) to %d", m.OpenClients, MaxOpenClients)
	}
	if m.OpenClients > 1 && m.Clients > 0 {
		return fmt.Errorf("model of %d open-loop clients and %d closed-loop ones: want one kind", m.OpenClients, m.Clients)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"client deadline", m.ClientDeadline}, {"think time", m.Think}} {
		if !(f.v >= 0) || math.IsInf(f.v, 1) {
			return fmt.Errorf("model %s %v: want a finite number of seconds ≥ 0", f.name, f.v)
		}
	}
	if m.Hop != nil {
		if h := m.Hop.Mean(); !(h >= 0) || math.IsInf(h, 1) {
			return fmt.Errorf("model network hop of mean %v s: want a finite number of seconds ≥ 0", h)
		}
	}
	for i, s := range m.Services {
		if s.Workers < 1 {
			return fmt.Errorf("service %s: %d workers: want 1 or more", s.Name, s.Workers)
		}
		if !(s.CancelProb >= 0 && s.CancelProb <= 1) {
			return fmt.Errorf("service %s: cancel probability %v: want 0 to 1", s.Name, s.CancelProb)
		}
		if !(s.Thrash >= 0) || math.IsInf(s.Thrash, 0) {
			return fmt.Errorf("service %s: thrash %v: want a finite number ≥ 0", s.Name, s.Thrash)
		}
		if s.Instances < 0 || s.Instances > graph.MaxInstances {
			return fmt.Errorf("service %s: %d instances: want 0 (one) to %d", s.Name, s.Instances, graph.MaxInstances)
		}
		if s.QueueCap < 0 || s.ShedRetriesAt < 0 {
			return fmt.Errorf("service %s: queue bound %d, retries shed from %d queued: want 0 (none) or more", s.Name, s.QueueCap, s.ShedRetriesAt)
		}
		for j, op := range s.Ops {
			if op.Time == nil {
				return fmt.Errorf("service %s op %s: no service-time distribution", s.Name, op.Name)
			}
			for _, e := range op.Calls {
				if e < 0 || e >= len(m.Edges) || m.Edges[e].Caller != i || m.Edges[e].CallerOp != j {
					return fmt.Errorf("service %s op %s: call to edge %d that is not its own", s.Name, op.Name, e)
				}
			}
		}
	}
	for i, e := range m.Edges {
		if e.Callee < 0 || e.Callee >= len(m.Services) || e.CalleeOp < 0 || e.CalleeOp >= len(m.Services[e.Callee].Ops) {
			return fmt.Errorf("edge %d: callee out of range", i)
		}
		if e.Policy.MaxAttempts < 1 {
			return fmt.Errorf("edge %d (%s → %s): max attempts %d: want 1 or more", i, m.Services[e.Caller].Name, m.Services[e.Callee].Name, e.Policy.MaxAttempts)
		}
		if e.Width < 0 {
			return fmt.Errorf("edge %d: width %d: want 0 or more", i, e.Width)
		}
		if e.Repeat < 1 {
			return fmt.Errorf("edge %d: repeat %d: want 1 or more", i, e.Repeat)
		}
		if e.Policy.MaxRequests < 0 || e.Policy.MaxRequests > math.MaxInt32 {
			return fmt.Errorf("edge %d (%s → %s): max requests %d: want 0 (no limit) to %d", i, m.Services[e.Caller].Name, m.Services[e.Callee].Name, e.Policy.MaxRequests, math.MaxInt32)
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"per-try timeout", e.Policy.PerTryTimeout}, {"deadline", e.Policy.Deadline}, {"hedge delay", e.Policy.HedgeAfter}} {
			if !(f.v >= 0) || math.IsInf(f.v, 1) {
				return fmt.Errorf("edge %d (%s → %s): %s %v: want a finite number of seconds ≥ 0 (0: none)", i, m.Services[e.Caller].Name, m.Services[e.Callee].Name, f.name, f.v)
			}
		}
		if e.Policy.Breaker.Enabled() {
			if err := e.Policy.Breaker.Validate(); err != nil {
				return fmt.Errorf("edge %d (%s → %s): %w", i, m.Services[e.Caller].Name, m.Services[e.Callee].Name, err)
			}
		}
		if err := e.Policy.Budget.Validate(); err != nil {
			return fmt.Errorf("edge %d (%s → %s): %w", i, m.Services[e.Caller].Name, m.Services[e.Callee].Name, err)
		}
		for _, g := range e.Policy.GiveUp {
			if !(g >= 0 && g <= 1) {
				return fmt.Errorf("edge %d (%s → %s): give-up share %v: want a probability in [0, 1]", i, m.Services[e.Caller].Name, m.Services[e.Callee].Name, g)
			}
		}
	}
	return nil
}
