package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/retryaudit/retryaudit/degrade"
)

// Defaults of RunConfig.
const (
	DefaultDuration   = 60.0
	DefaultDrain      = 10.0
	DefaultRetryAfter = 1.0
	// The verdict: goodput back to 90% of its pre-trigger success share
	// over a 3 s window with the queues drained is recovered; under 50% of
	// it for 10 s with a backlog (queues above twice their pre-trigger peak
	// plus two) that does not drain is collapsed, declared
	// no sooner than 10 s after the trigger; a run in between goes on up
	// to 120 s after the trigger.
	DefaultShare         = 0.9
	DefaultCollapseShare = 0.5
	DefaultWindow        = 3.0
	DefaultSettle        = 10.0
	DefaultMaxJudge      = 120.0
	// TCP: the first retransmission after 200 ms (Linux's TCP_RTO_MIN),
	// doubling; the connection resets after 3 lost retransmissions, 3 s
	// after the first transmission.
	DefaultRTO         = 0.2
	DefaultRetransmits = 3
	// DefaultCancelDelay is how long a cancel takes to reach the server
	// in a model with no network hop: one LAN round trip.
	DefaultCancelDelay = 0.001
	// DefaultMaxEvents bounds a run's events. A healthy run recycles its
	// entities and holds little; the worst case is a collapse whose queue
	// only grows (every attempt stays in memory), measured at about 140
	// bytes of heap per event, garbage included: 7M events keep such a run
	// near 1 GiB.
	DefaultMaxEvents = 7_000_000
)

func (c RunConfig) withDefaults() RunConfig {
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.Drain < 0 {
		c.Drain = 0
	} else if c.Drain == 0 {
		c.Drain = DefaultDrain
	}
	def := func(x *float64, d float64) {
		if *x <= 0 {
			*x = d
		}
	}
	def(&c.RetryAfter, DefaultRetryAfter)
	def(&c.Share, DefaultShare)
	def(&c.CollapseShare, DefaultCollapseShare)
	def(&c.Window, DefaultWindow)
	def(&c.Settle, DefaultSettle)
	def(&c.MaxJudge, DefaultMaxJudge)
	def(&c.RTO, DefaultRTO)
	def(&c.CancelDelay, DefaultCancelDelay)
	if c.Retransmits <= 0 {
		c.Retransmits = DefaultRetransmits
	}
	if c.MaxEvents <= 0 {
		c.MaxEvents = DefaultMaxEvents
	}
	return c
}

// maxJudgeLimit bounds RunConfig.MaxJudge: a day of simulated time.
const maxJudgeLimit = 86400

// check reports a configuration no run can honour: NaN, infinite or
// negative figures.
func (c RunConfig) check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"duration", c.Duration}, {"drain", c.Drain}, {"retry-after", c.RetryAfter}, {"share", c.Share}, {"collapse share", c.CollapseShare},
		{"window", c.Window}, {"settle", c.Settle}, {"max-judge", c.MaxJudge}, {"rto", c.RTO}, {"cancel delay", c.CancelDelay}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("run config: %s %v: want a finite number of seconds", f.name, f.v)
		}
	}
	if c.Share > 1 || c.CollapseShare > 1 || c.CollapseShare > 0 && c.Share > 0 && c.CollapseShare > c.Share {
		return fmt.Errorf("run config: share %v, collapse share %v: want shares in (0,1], the collapse share no more than the share", c.Share, c.CollapseShare)
	}
	if c.MaxJudge > maxJudgeLimit {
		return fmt.Errorf("run config: max-judge %gs: want at most %gs", c.MaxJudge, float64(maxJudgeLimit))
	}
	return nil
}

// ErrEventBudget is the error of a run refused or stopped for its event
// budget (RunConfig.MaxEvents).
var ErrEventBudget = errors.New("over the event budget")

// Run simulates the model under the faults. The same model, faults and
// config (seed included) give the same Result, bit for bit.
func Run(m *Model, faults degrade.Schedule, cfg RunConfig) (Result, error) {
	return RunContext(context.Background(), m, faults, cfg)
}

// RunContext is Run under a context: the event loop checks it every few
// thousand events and returns its error once it is done.
func RunContext(ctx context.Context, m *Model, faults degrade.Schedule, cfg RunConfig) (Result, error) {
	r, _, err := runWith(ctx, m, faults, cfg, nil)
	return r, err
}

// runWith is RunContext with shadows of the policies alts (see
// RunShadowed): same[k] says whether alts[k] never decided otherwise.
func runWith(ctx context.Context, m *Model, faults degrade.Schedule, cfg RunConfig, alts [][]Policy) (Result, []bool, error) {
	if err := cfg.check(); err != nil {
		return Result{}, nil, err
	}
	if err := m.Validate(); err != nil {
		return Result{}, nil, err
	}
	names := make([]string, len(m.Services))
	for i, svc := range m.Services {
		names[i] = svc.Name
	}
	if err := faults.Check(names); err != nil {
		return Result{}, nil, err
	}
	cfg = cfg.withDefaults()
	if n := EstimateEvents(m, cfg); n > float64(cfg.MaxEvents) {
		return Result{}, nil, fmt.Errorf("%w: the run would take about %.3g events (%.4g root requests a second for %gs, about %.3g events each), over the budget of %d; raise it (--max-events) or lower the rate or the duration",
			ErrEventBudget, n, m.rootRate(), cfg.Duration, n/math.Max(m.rootRate()*cfg.Duration, 1), cfg.MaxEvents)
	}
	s := newSim(m, faults, cfg)
	s.shadowRun(alts)
	if err := s.run(ctx); err != nil {
		return Result{}, nil, err
	}
	r := s.result()
	s.met.release()
	var same []bool
	for _, sh := range s.shadows {
		same = append(same, !sh.acted)
	}
	return r, same, nil
}

// rootRate is the model's root requests a second: its rate, its arrival
// times' rate, or its closed-loop clients' at most (each waits its think
// time, at least a millisecond, between requests).
func (m *Model) rootRate() float64 {
	switch {
	case len(m.Arrivals) > 0:
		return float64(len(m.Arrivals)) / math.Max(m.Period, 1e-9)
	case m.Clients > 0:
		return float64(m.Clients) / math.Max(m.Think, 1e-3)
	}
	return m.Rate
}

// EstimateEvents is how many events a run of m under cfg takes when
// nothing fails: per root request an arrival and an answer, and per
// expected call downstream about five (sent, queued and served, answered,
// a timeout timer), plus a tick a second. A degraded run takes up to its
// retries' multiple of that.
func EstimateEvents(m *Model, cfg RunConfig) float64 {
	calls := 0.0
	for _, e := range m.Entry {
		calls += e.Weight * m.expectedCalls(e.Service, e.Op, 0)
	}
	total := 0.0
	for _, e := range m.Entry {
		total += e.Weight
	}
	if total > 0 {
		calls /= total
	}
	return m.rootRate()*cfg.Duration*(2+5*calls) + cfg.Duration + cfg.Drain + cfg.MaxJudge
}

// expectedCalls is how many calls one execution of op makes, all the way
// down (a model's graph has no cycles; depth bounds a hostile one).
func (m *Model) expectedCalls(svc, op, depth int) float64 {
	if depth > 64 || svc < 0 || svc >= len(m.Services) || op < 0 || op >= len(m.Services[svc].Ops) {
		return 0
	}
	n := 0.0
	for _, ei := range m.Services[svc].Ops[op].Calls {
		if ei < 0 || ei >= len(m.Edges) {
			continue
		}
		e := &m.Edges[ei]
		k := e.Prob * float64(e.Repeat)
		n += k * (1 + m.expectedCalls(e.Callee, e.CalleeOp, depth+1))
	}
	return n
}

// WithoutRetries returns a copy of the model in which every edge makes one
// attempt with no budget, breaker or hedge: policy none.
func (m *Model) WithoutRetries() *Model {
	c := *m
	c.Edges = append([]Edge(nil), m.Edges...)
	for i := range c.Edges {
		p := &c.Edges[i].Policy
		*p = Policy{MaxAttempts: 1, PerTryTimeout: p.PerTryTimeout, Deadline: p.Deadline, Propagate: p.Propagate}
	}
	return &c
}

// Compare fills the work amplification of each result (against the work of
// the same arrivals with no fault and no retries, base) and its yield
// (availability gained per unit of extra work against none, the result of
// policy none on the same degradation and seed).
func Compare(results []Result, base, none Result) {
	for i := range results {
		r := &results[i]
		if base.WorkS > 0 {
			r.WorkAmplification = r.WorkS / base.WorkS
		}
		extra := (r.WorkS - none.WorkS) / math.Max(base.WorkS, 1e-9)
		gain := r.Availability - none.Availability
		switch {
		case r.Policy == none.Policy:
		case extra > 1e-3:
			y := gain / extra
			r.Yield = &y
		case gain > 0:
			// More availability for no extra work: the best possible trade,
			// which a ratio cannot express. Leave it undefined and let the
			// report say so.
		}
	}
}

// Verdicts of a run.
const (
	// VerdictRecovered: after the trigger ended, goodput came back within
	// the share of its pre-trigger level and the queues drained.
	VerdictRecovered = "recovered"
	// VerdictCollapsed: after the trigger ended, goodput stayed below the
	// share and the backlog was not shrinking, or still below at the
	// horizon. This is the metastable failure.
	VerdictCollapsed = "collapsed"
	// VerdictNotJudged: the trigger came too close to the start, never
	// ended, or the horizon came with goodput back but queues not drained.
	VerdictNotJudged = "not judged"
	// VerdictNoTrigger: the run had no fault.
	VerdictNoTrigger = "no trigger"
	// verdictOpen: not decided yet; the run may go on.
	verdictOpen = "open"
)

// preTrigger is how many seconds before the trigger set the healthy
// level, and minPre how many at least.
const (
	preTrigger = 10
	minPre     = 3
)

// judgement is a verdict: its state, the recovery time of a recovered run,
// a note on why a run was not judged, and the second it looked up to.
type judgement struct {
	state    string
	recovery *float64
	note     string
	upTo     float64
}

// judge reads a run's verdict from its series, over the seconds before
// upTo, from the dynamics after the trigger ended:
//
//   - the healthy level is the share of root requests that succeeded in
//     the 10 s before the trigger (3 at least), and the queue depth's peak
//     there;
//   - recovered, at the first second s after the trigger ended from which
//     a window of cfg.Window seconds has goodput at cfg.Share of the
//     healthy share or more, and ends with the queues at most twice their
//     healthy peak (plus two): the recovery time is s minus the trigger's
//     end;
//   - collapsed, when not recovered, at least cfg.Settle seconds after the
//     trigger, with goodput below cfg.CollapseShare of the healthy share
//     over the last Settle seconds and a backlog (queues above the
//     drained bound on average over them) that is not shrinking (its trend over the last
//     2·Settle would not drain it within what is left of the horizon,
//     left seconds); or, at the horizon (final), goodput still that low
//     with a backlog; or recovered, then collapsed so again later. With
//     the queues at their healthy level a run is never collapsed: low
//     goodput without a backlog is the callee's own failures (a failure
//     mix, the traces' incident timeline recurring), which end when they
//     do. The gap between the two shares keeps the noise of a few
//     requests a second, or of a baseline error rate, from passing for
//     either;
//   - open otherwise: the run may go on while its backlog drains.
//
// Judging goodput as a share of the requests offered in the same seconds
// keeps Poisson noise in arrivals, which moves both alike, from passing
// for a collapse.
func judge(ser Series, faults degrade.Schedule, upTo float64, cfg RunConfig, final bool, left float64) judgement {
	T := min(int(upTo), len(ser.Goodput))
	v := judgement{upTo: float64(T)}
	start, end, ok := faults.Trigger()
	switch {
	case !ok:
		v.state = VerdictNoTrigger
		return v
	case math.IsInf(end, 1):
		v.state, v.note = VerdictNotJudged, "the fault lasts to the end of the run"
		return v
	case start >= cfg.Duration:
		v.state, v.note = VerdictNotJudged, "the fault starts after the arrivals end"
		return v
	}
	from, to := max(0, int(start)-preTrigger), int(start)
	if to-from < minPre {
		v.state, v.note = VerdictNotJudged, fmt.Sprintf("the fault starts under %d s into the run: no healthy level to compare with", minPre)
		return v
	}
	share := func(a, b int) float64 {
		offered := sumInts(ser.Originals[a:b])
		if offered == 0 {
			return 1
		}
		return float64(sumInts(ser.Goodput[a:b])) / float64(offered)
	}
	pre := share(from, to)
	if pre <= 0 {
		v.state, v.note = VerdictNotJudged, "nothing succeeded before the fault"
		return v
	}
	thr, low := cfg.Share*pre, cfg.CollapseShare*pre
	drained := 2*slices.Max(ser.QueueDepth[from:to]) + 2
	w := max(1, int(math.Round(cfg.Window)))
	e := int(math.Ceil(end))
	// Collapse is judged over the last Settle seconds: goodput below the
	// share over all of them, and the backlog's trend over twice as many
	// where the run has them (queues swing with the waves of retries).
	k := max(w, int(math.Round(cfg.Settle)))
	// A backlog is queued work beyond the healthy level (the bound a
	// recovery drains to), on average over the same Settle seconds: with
	// none, low goodput is the callee's own failures (the traces' timeline
	// recurring, a failure mix, a retry budget spent by it), not a
	// collapse, however long it lasts.
	backlog := func(u int) bool { return sumInts(ser.QueueDepth[u-k:u]) > drained*k }
	collapsedAt := func(u int) bool {
		return u-k >= e && share(u-k, u) < low && backlog(u) && !shrinking(ser.QueueDepth[max(e, u-2*k):u], left+float64(T-u))
	}
	for s := e; s+w <= T; s++ {
		if share(s, s+w) >= thr && ser.QueueDepth[s+w-1] <= drained {
			r := float64(s) - end
			v.state, v.recovery = VerdictRecovered, &r
			// A system that collapses again later, with no trigger, is
			// bistable and ends collapsed.
			for u := s + w + k; u <= T; u++ {
				if collapsedAt(u) {
					v.state, v.recovery = VerdictCollapsed, nil
					v.note = fmt.Sprintf("recovered %g s after the trigger, collapsed again by %d s", r, u)
					break
				}
			}
			return v
		}
	}
	switch {
	case final && T-k >= e && share(T-k, T) < low && backlog(T):
		v.state = VerdictCollapsed
	case final:
		v.state, v.note = VerdictNotJudged, "the run ended before the fault's effects could be judged"
		switch {
		case T-k >= e && share(T-k, T) < low:
			v.note = fmt.Sprintf("by the horizon goodput was under the collapse share, but with no backlog (queues %.1f on average over the last %d s, healthy bound %d): the callee's own failures, not a collapse", float64(sumInts(ser.QueueDepth[T-k:T]))/float64(k), k, drained)
		case T-k >= e:
			v.note = "by the horizon goodput was neither back within the share with the queues drained, nor collapsed"
		}
	case collapsedAt(T):
		v.state = VerdictCollapsed
	default:
		v.state = verdictOpen
	}
	return v
}

// shrinking reports whether a backlog, sampled once a second, is on its way
// out: its least-squares trend would drain its last level within left
// seconds.
func shrinking(q []int, left float64) bool {
	n := float64(len(q))
	if n < 2 {
		return false
	}
	var sx, sy, sxx, sxy float64
	for i, y := range q {
		x := float64(i)
		sx, sy, sxx, sxy = sx+x, sy+float64(y), sxx+x*x, sxy+x*float64(y)
	}
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	if slope >= 0 {
		return false
	}
	return float64(q[len(q)-1])/-slope <= left
}

func sumInts(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// String renders a one-line summary.
func (r Result) String() string {
	return fmt.Sprintf("%s under %s: availability %.3f, goodput %.1f/s, retries %.1f%%, p99 %.0fms",
		r.Policy, r.Degradation, r.Availability, r.Goodput, 100*r.RetryShare, r.P99MS)
}

// Collapsed reports whether the run collapsed: after its trigger ended,
// goodput stayed below the verdict's share of its healthy level with a
// backlog that was not draining (see RunConfig and the Verdict constants).
// It is the run's Metastable field, and a function of its Verdict alone.
func (r Result) Collapsed() bool { return r.Verdict == VerdictCollapsed }
