package audit

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/retryaudit/retryaudit/replay"
)

// The critical-utilization search: utilizations from SearchLow to
// SearchHigh, to within ±SearchTolerance.
const (
	SearchLow       = 0.05
	SearchHigh      = 0.95
	SearchTolerance = 0.02
	// MaxLoadScale bounds how many times today's traffic a probe offers,
	// which bounds what a probe costs. Beyond it the dependency's service
	// times are stretched instead (see atUtilization).
	MaxLoadScale = 100.0
	// ProbeEvents is about how many events a healthy probe of the search
	// may take: traffic is scaled up to it, service times stretched past.
	ProbeEvents = 200_000.0
)

// Utilization is the busy fraction of service svc in model m with no
// fault and no retries: root arrivals per second × the service time its
// operations are visited for per root request ÷ its workers. It is the
// share of the service's trigger-free capacity today's traffic mix uses.
func Utilization(m *replay.Model, svc string) (float64, error) {
	w, err := workOf(m, svc)
	if err != nil {
		return 0, err
	}
	return w.rate * w.busy / float64(m.Services[w.si].Workers), nil
}

// serviceWork is what one root request asks of one service: visits to
// its operations and the service time they take, both per root request,
// at the model's root arrival rate.
type serviceWork struct {
	si                 int
	rate, visits, busy float64
}

// workOf finds service svc and what each root request asks of it with no
// fault and no retries.
func workOf(m *replay.Model, svc string) (serviceWork, error) {
	si := slices.IndexFunc(m.Services, func(s replay.Service) bool { return s.Name == svc })
	if si < 0 {
		return serviceWork{}, fmt.Errorf("no service %q in the model", svc)
	}
	rate, weights, err := rootMix(m)
	if err != nil {
		return serviceWork{}, err
	}
	visits, err := opVisits(m, weights)
	if err != nil {
		return serviceWork{}, err
	}
	w := serviceWork{si: si, rate: rate}
	for oi, op := range m.Services[si].Ops {
		w.visits += visits[si][oi]
		w.busy += visits[si][oi] * op.Time.Mean()
	}
	return w, nil
}

// rootMix is the root arrival rate and each entry's share of it.
func rootMix(m *replay.Model) (float64, []float64, error) {
	w := make([]float64, len(m.Entry))
	switch {
	case m.Clients > 0:
		return 0, nil, fmt.Errorf("closed-loop arrivals have no fixed rate to scale")
	case len(m.Arrivals) > 0:
		for _, a := range m.Arrivals {
			w[a.Entry]++
		}
		for i := range w {
			w[i] /= float64(len(m.Arrivals))
		}
		return float64(len(m.Arrivals)) / m.Period, w, nil
	}
	total := 0.0
	for _, e := range m.Entry {
		total += e.Weight
	}
	for i, e := range m.Entry {
		w[i] = e.Weight / total
	}
	return m.Rate, w, nil
}

// opVisits is how many times one root request visits each operation,
// first attempts only, in topological order of the call graph.
func opVisits(m *replay.Model, weights []float64) ([][]float64, error) {
	visits := make([][]float64, len(m.Services))
	indeg := make([][]int, len(m.Services))
	for i, s := range m.Services {
		visits[i] = make([]float64, len(s.Ops))
		indeg[i] = make([]int, len(s.Ops))
	}
	for _, e := range m.Edges {
		indeg[e.Callee][e.CalleeOp]++
	}
	for i, e := range m.Entry {
		visits[e.Service][e.Op] += weights[i]
	}
	var queue [][2]int
	for i := range indeg {
		for j, n := range indeg[i] {
			if n == 0 {
				queue = append(queue, [2]int{i, j})
			}
		}
	}
	seen := 0
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		seen++
		for _, ei := range m.Services[n[0]].Ops[n[1]].Calls {
			e := m.Edges[ei]
			visits[e.Callee][e.CalleeOp] += visits[n[0]][n[1]] * e.Prob * float64(e.Repeat)
			if indeg[e.Callee][e.CalleeOp]--; indeg[e.Callee][e.CalleeOp] == 0 {
				queue = append(queue, [2]int{e.Callee, e.CalleeOp})
			}
		}
	}
	total := 0
	for i := range indeg {
		total += len(indeg[i])
	}
	if seen < total {
		return nil, fmt.Errorf("the call graph has a cycle: a utilization is undefined")
	}
	return visits, nil
}

// atUtilization returns a copy of m in which service svc, today at
// utilization u0, runs at utilization u: root traffic scaled by k = u/u0,
// with every other service given k times its workers (never fewer) so
// that only svc's utilization moves. Where k would exceed maxScale,
// traffic is scaled by maxScale and svc's service times are stretched
// by the rest (stretch > 1), which a dependency doing almost no work per
// request needs before any traffic the model can carry loads it.
func atUtilization(m *replay.Model, svc string, u0, u, maxScale float64) (c *replay.Model, stretch float64) {
	k := u / u0
	stretch = 1
	if k > maxScale {
		k, stretch = maxScale, k/maxScale
	}
	cm := *m
	cm.Services = slices.Clone(m.Services)
	for i := range cm.Services {
		s := &cm.Services[i]
		if s.Name != svc {
			s.Workers = max(s.Workers, int(math.Ceil(float64(s.Workers)*k)))
			continue
		}
		if stretch > 1 {
			s.Ops = slices.Clone(s.Ops)
			for j := range s.Ops {
				s.Ops[j].Time = stretched{s.Ops[j].Time, stretch}
			}
		}
	}
	switch {
	case len(m.Arrivals) > 0:
		cm.Arrivals = slices.Clone(m.Arrivals)
		for i := range cm.Arrivals {
			cm.Arrivals[i].At /= k
		}
		cm.Period /= k
	default:
		cm.Rate *= k
	}
	return &cm, stretch
}

// stretched is a service-time distribution made f times slower.
type stretched struct {
	d replay.Dist
	f float64
}

func (s stretched) Sample(rng *rand.Rand) float64 { return s.f * s.d.Sample(rng) }
func (s stretched) Mean() float64                 { return s.f * s.d.Mean() }

// Critical is the outcome of one critical-utilization search.
type Critical struct {
	// Utilization is the highest utilization of the degraded dependency
	// at which the policy recovered after the trigger in every seed, to
	// ±SearchTolerance; nil when it recovered even at SearchHigh, 0 when
	// it collapsed even at SearchLow.
	Utilization *float64
	// Searched is false when no search could run (no trigger that ends
	// within the run, no work at the dependency, closed-loop arrivals);
	// Why says why.
	Searched bool
	Why      string
	// Probes are the utilizations tried, in order.
	Probes []Probe
	// BySeed is each seed's own critical utilization, in the order of the
	// seeds, nil where that seed recovered at SearchHigh: the seeds'
	// spread, of which Utilization is the lowest. The ranking reads the
	// uncertainty of Utilization from it.
	BySeed []*float64
}

// Probe is one utilization a search tried: the mean availability of the
// seeds run there (a probe stops at the first seed that did not recover,
// and a probe between the search's ends runs only the seeds that did not
// recover somewhere) and whether one did not: it collapsed, or was still
// not back when the verdict's horizon came.
type Probe struct {
	Utilization  float64 `json:"utilization"`
	Availability float64 `json:"availability"`
	Collapsed    bool    `json:"collapsed"`
}

// searchCritical bisects on offered load, capacity held, for the highest
// utilization of svc (today u0) at which the model recovers after the
// faults in every seed. A probe runs as long as the matrix's runs.
//
// upToday says the model recovered at today's utilization u0 in every
// seed (the matrix ran it): the search then takes u0 as its lower end
// when u0 is in range, so a collapse at one probe below today's load,
// which the matrix contradicts, cannot put the answer under it.
//
// The search of a variant with a via (planShadows) reads the via's probes
// at the same load and seed where the via's search makes them (logs.via),
// and logs its own for the variants whose via it is (logs.own).
func searchCritical(ctx context.Context, p *pool, v *variant, logs probeLogs, svc string, u0 float64, upToday bool, d replay.Degradation, seeds []uint64, cfg replay.RunConfig) (Critical, error) {
	m := v.model
	start, end, ok := d.Faults.Trigger()
	if !ok || math.IsInf(end, 1) {
		return Critical{Why: "the fault does not end within the run"}, nil
	}
	if u0 <= 0 {
		return Critical{Why: svc + " does no work in the model"}, nil
	}
	probe := cfg
	if probe.Duration <= 0 {
		probe.Duration = replay.DefaultDuration
	}
	settle, window := cfg.Settle, cfg.Window
	if settle <= 0 {
		settle = replay.DefaultSettle
	}
	if window <= 0 {
		window = replay.DefaultWindow
	}
	// Probes run as long as the matrix's runs: a system that recovers and
	// collapses again later (bistable) must read the same at every load.
	if start >= probe.Duration || end+settle+window > probe.Duration {
		return Critical{Why: "the run ends before the verdict window after the trigger"}, nil
	}
	// Traffic grows no further than a probe of about ProbeEvents healthy
	// events (and a third of the event budget) allows; service times
	// stretch beyond. A search makes dozens of probes per policy.
	maxScale := MaxLoadScale
	if est := replay.EstimateEvents(m, probe); est > 0 {
		budget := min(float64(cmp.Or(probe.MaxEvents, replay.DefaultMaxEvents))/3, ProbeEvents)
		maxScale = math.Max(1, math.Min(MaxLoadScale, budget/est))
	}
	why := ""
	if _, stretch := atUtilization(m, svc, u0, SearchHigh, maxScale); stretch > 1 {
		why = fmt.Sprintf("%s is %.2g busy today: above %.2g the search holds traffic at %.3gx today's (the event budget's limit, or %gx) and stretches %s's service times (×%.3g at %.2f)",
			svc, u0, u0*maxScale, maxScale, MaxLoadScale, svc, stretch, SearchHigh)
	}
	pr := newProber(len(seeds), func(u float64, si int) (replay.Result, error) {
		sm, _ := atUtilization(m, svc, u0, u, maxScale)
		logs.own.add(u, si)
		made, err := logs.via.makes(ctx, u, si)
		if err != nil {
			return replay.Result{}, err
		}
		var bm *replay.Model
		if made {
			// The via's model at the same load: it and the variant's
			// differ in policies alone, which no step of atUtilization
			// (nor maxScale's estimate) reads.
			bm, _ = atUtilization(v.via.model, svc, u0, u, maxScale)
		}
		c := probe
		c.Seed = seeds[si]
		return p.runVariant(ctx, v, sm, bm, d.Faults, c)
	})
	found := func(u *float64) Critical {
		return Critical{Utilization: u, Searched: true, Why: why, Probes: pr.list()}
	}
	low := SearchLow
	if upToday && u0 >= SearchLow && u0 < SearchHigh {
		// The matrix ran today's load in every seed: it recovered.
		low = u0
		pr.known(u0)
	}
	u, floor, err := bisect(pr, low)
	if err != nil {
		return Critical{}, err
	}
	by, err := pr.bySeed(u, low, floor)
	if err != nil {
		return Critical{}, err
	}
	c := found(u)
	c.BySeed = by
	return c, nil
}

// bisect searches the highest utilization in [low, SearchHigh] at which
// every seed recovers, to ±SearchTolerance: nil when they all recover at
// SearchHigh, 0 when one collapses at low (which only a SearchLow not
// known to recover can). floor is the load at or below the answer where
// every seed ran and recovered (SearchHigh for nil; −Inf for 0).
//
// The top first. Then a bisection whose seeds are taken lazily: the
// probes between the ends run only the seeds that have collapsed
// somewhere (the first to collapse at the top, at first), and the lower
// end found is then run in every seed. A seed that collapses there joins
// them and the bisection starts again, through the same midpoints, whose
// outcomes are kept: only the seeds not yet run at a midpoint run there.
// The answer is the one a bisection running every seed at every probe
// gives (the same midpoints decide the same way, as long as each seed's
// outcome is monotonic in the load, which any bisection assumes). Where
// the seeds agree, as they mostly do, most probes cost one run instead of
// one per seed; seeds far apart can cost a few runs more.
func bisect(pr *prober, low float64) (u *float64, floor float64, err error) {
	top, err := pr.recovers(SearchHigh, nil)
	if err != nil || top {
		return nil, SearchHigh, err
	}
	active := func(u float64) (bool, error) { return pr.recovers(u, pr.active) }
	for {
		lo, hi, err := halve(low, active)
		if err != nil {
			return nil, 0, err
		}
		ok, err := pr.recovers(lo, nil)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			return middle(lo, hi), lo, nil
		}
		if lo == low {
			zero := 0.0
			return &zero, math.Inf(-1), nil
		}
	}
}

// halve is the bisection from [low, SearchHigh] down to an interval of
// at most twice SearchTolerance, by whether the model recovers at each
// midpoint: the highest midpoint found to recover (or low) and the lowest
// found not to (or SearchHigh).
func halve(low float64, recovers func(u float64) (bool, error)) (lo, hi float64, err error) {
	lo, hi = low, SearchHigh
	for hi-lo > 2*SearchTolerance {
		mid := (lo + hi) / 2
		ok, err := recovers(mid)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, hi, nil
}

// middle is the answer of a bisection that ended at [lo, hi]: its middle,
// to a hundredth.
func middle(lo, hi float64) *float64 {
	x := math.Round(100*(lo+hi)/2) / 100
	return &x
}

// bySeed is each seed's own critical utilization, given u and floor, the
// answer of bisect from low and the load up to which it found every seed
// to recover: the bisection of one seed through the same midpoints, each
// seed's outcome at a probe read from the runs made where it can be
// (seedRecovers). As bisect, it takes each seed's outcome to be monotonic
// in the load: every seed recovered at floor (bisect ran it there), so at
// every load below it; a seed that collapsed at some load collapses above
// it, and one that recovered there recovered below. So the lowest of the
// seeds' answers is u, the seed that decided u having the bisection's
// path, and a seed that recovers further up runs only the probes above
// floor on its own path (and the top, if it never collapsed on the way).
// Without a floor (u is 0: a seed collapsed at low), floor is −Inf.
func (p *prober) bySeed(u *float64, low, floor float64) ([]*float64, error) {
	out := make([]*float64, p.seeds)
	if u == nil {
		return out, nil // every seed recovered at the top
	}
	for si := range p.seeds {
		recovers := func(x float64) (bool, error) {
			if x <= floor {
				return true, nil
			}
			return p.seedRecovers(x, si)
		}
		lo, hi, err := halve(low, recovers)
		if err != nil {
			return nil, err
		}
		if lo == low {
			ok, err := recovers(low)
			if err != nil {
				return nil, err
			}
			if !ok {
				zero := 0.0
				out[si] = &zero
				continue
			}
		}
		if hi == SearchHigh {
			ok, err := recovers(SearchHigh)
			if err != nil {
				return nil, err
			}
			if ok {
				continue
			}
		}
		out[si] = middle(lo, hi)
	}
	return out, nil
}

// seedRecovers reports whether seed si recovers at u: not where it
// collapsed at u or at a load below (a seed near its threshold can
// collapse at one load and recover at a higher one; the first collapse
// counts, as it does for every seed together), else from its run at u,
// else from a load above u where it recovered, else from a run made now.
func (p *prober) seedRecovers(u float64, si int) (bool, error) {
	above := false
	for x, out := range p.at {
		if x <= u && out[si] == 2 {
			return false, nil
		}
		above = above || x >= u && out[si] == 1
	}
	if above {
		return true, nil
	}
	return p.runSeed(u, si)
}

// prober runs a search's probes: seed si of the audit at utilization u,
// each at most once, in an order that tries first the seeds that have
// collapsed, since one collapse decides a probe.
type prober struct {
	run func(u float64, si int) (replay.Result, error)
	// at is, per utilization tried, each seed's outcome: 0 not run,
	// 1 recovered, 2 did not recover; avail sums the availability of the
	// seeds run there.
	at    map[float64][]int8
	avail map[float64]float64
	runs  map[float64]int
	// active are the seeds that have collapsed somewhere, most recent
	// first; order is every seed, the active ones first.
	active []int
	seeds  int
}

func newProber(seeds int, run func(u float64, si int) (replay.Result, error)) *prober {
	return &prober{run: run, at: map[float64][]int8{}, avail: map[float64]float64{}, runs: map[float64]int{}, seeds: seeds}
}

// known records that every seed recovered at u without running it.
func (p *prober) known(u float64) {
	p.at[u] = slices.Repeat([]int8{1}, p.seeds)
}

// recovers reports whether every seed of set (nil: every seed) recovers
// at u, running those not run there yet, the active seeds first, and
// stopping at the first that does not.
func (p *prober) recovers(u float64, set []int) (bool, error) {
	out := p.at[u]
	if out == nil {
		out = make([]int8, p.seeds)
		p.at[u] = out
	}
	order := slices.Clone(p.active)
	for si := range p.seeds {
		if !slices.Contains(order, si) && (set == nil || slices.Contains(set, si)) {
			order = append(order, si)
		}
	}
	for _, si := range order {
		if out[si] == 0 {
			if _, err := p.runSeed(u, si); err != nil {
				return false, err
			}
		}
		if out[si] == 2 {
			p.active = slices.Insert(slices.DeleteFunc(p.active, func(a int) bool { return a == si }), 0, si)
			return false, nil
		}
	}
	return true, nil
}

// runSeed runs seed si at u and records the outcome: whether it
// recovered.
func (p *prober) runSeed(u float64, si int) (bool, error) {
	r, err := p.run(u, si)
	if err != nil {
		return false, err
	}
	out := p.at[u]
	if out == nil {
		out = make([]int8, p.seeds)
		p.at[u] = out
	}
	out[si] = 1
	if r.Verdict != replay.VerdictRecovered {
		out[si] = 2
	}
	p.avail[u] += r.Availability
	p.runs[u]++
	return out[si] == 1, nil
}

// list is the probes run, by utilization: the mean availability of the
// seeds run at each and whether one did not recover (the load the matrix
// ran, known without a run, is not listed).
func (p *prober) list() []Probe {
	var out []Probe
	for u, res := range p.at {
		if p.runs[u] == 0 {
			continue
		}
		out = append(out, Probe{Utilization: u, Availability: p.avail[u] / float64(p.runs[u]), Collapsed: slices.Contains(res, 2)})
	}
	slices.SortFunc(out, func(a, b Probe) int { return cmp.Compare(a.Utilization, b.Utilization) })
	return out
}

// probeLogs are the probe logs a search keeps (own) and reads (via, its
// via's under the same degradation; nil for none).
type probeLogs struct{ own, via *probeLog }

// probeLog is which probes, by load and seed, a search has made so far,
// and whether it is over: the search of a variant with a via makes its
// probes alongside its via's, and takes the via's run, where its own
// policies never act in it, at each load and seed the via's search makes;
// where the via's search is over without it, it runs its own. So the
// runs made do not depend on which search gets ahead, and none is made
// for a variant alone that its own run could have been.
type probeLog struct {
	mu   sync.Mutex
	more chan struct{} // closed and renewed at each change
	made map[probeAt]bool
	over bool
}

type probeAt struct {
	u    float64
	seed int
}

func newProbeLog() *probeLog {
	return &probeLog{more: make(chan struct{}), made: map[probeAt]bool{}}
}

// add logs the probe at load u with seed si as made (or being made).
func (l *probeLog) add(u float64, si int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.made[probeAt{u, si}] = true
	l.changed()
}

// end logs that the search is over.
func (l *probeLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.over = true
	l.changed()
}

// changed wakes every makes waiting on the log; l.mu is held.
func (l *probeLog) changed() {
	close(l.more)
	l.more = make(chan struct{})
}

// makes waits until the search has made the probe at load u with seed
// si (true) or is over without it (false); a nil log makes none.
func (l *probeLog) makes(ctx context.Context, u float64, si int) (bool, error) {
	if l == nil {
		return false, nil
	}
	for {
		l.mu.Lock()
		made, over, more := l.made[probeAt{u, si}], l.over, l.more
		l.mu.Unlock()
		if made || over {
			return made, nil
		}
		select {
		case <-more:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}
