package audit

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

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
	si := slices.IndexFunc(m.Services, func(s replay.Service) bool { return s.Name == svc })
	if si < 0 {
		return 0, fmt.Errorf("no service %q in the model", svc)
	}
	rate, weights, err := rootMix(m)
	if err != nil {
		return 0, err
	}
	visits, err := opVisits(m, weights)
	if err != nil {
		return 0, err
	}
	busy := 0.0
	for oi, op := range m.Services[si].Ops {
		busy += visits[si][oi] * op.Time.Mean()
	}
	return rate * busy / float64(m.Services[si].Workers), nil
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
}

// Probe is one utilization a search tried: the mean availability of the
// seeds run there (they stop at the first collapse) and whether one
// collapsed.
type Probe struct {
	Utilization  float64 `json:"utilization"`
	Availability float64 `json:"availability"`
	Collapsed    bool    `json:"collapsed"`
}

// searchCritical bisects on offered load, capacity held, for the highest
// utilization of svc (today u0) at which the model recovers after the
// faults in every seed. A probe runs only as long as the verdict needs.
func searchCritical(ctx context.Context, p *pool, m *replay.Model, svc string, u0 float64, d replay.Degradation, seeds []uint64, cfg replay.RunConfig) (Critical, error) {
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
	probe.Duration = min(probe.Duration, math.Ceil(end+settle+window)+1)
	probe.Drain = -1 // the verdict reads only seconds with arrivals
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
	var probes []Probe
	collapses := func(u float64) (bool, error) {
		sm, _ := atUtilization(m, svc, u0, u, maxScale)
		// Seeds one after another: the first collapse decides, and the
		// searches of the other policies keep every core busy.
		pr := Probe{Utilization: u}
		n := 0
		for _, seed := range seeds {
			c := probe
			c.Seed = seed
			r, err := p.run(ctx, sm, d.Faults, c)
			if err != nil {
				return false, err
			}
			n++
			pr.Availability += r.Availability
			if pr.Collapsed = collapsed(&r); pr.Collapsed {
				break
			}
		}
		pr.Availability /= float64(n)
		probes = append(probes, pr)
		return pr.Collapsed, nil
	}
	var why string
	if _, stretch := atUtilization(m, svc, u0, SearchHigh, maxScale); stretch > 1 {
		why = fmt.Sprintf("%s is %.2g busy today: above %.2g the search holds traffic at %.3gx today's (the event budget's limit, or %gx) and stretches %s's service times (×%.3g at %.2f)",
			svc, u0, u0*maxScale, maxScale, MaxLoadScale, svc, stretch, SearchHigh)
	}
	found := func(u *float64) Critical {
		slices.SortFunc(probes, func(a, b Probe) int { return cmp.Compare(a.Utilization, b.Utilization) })
		return Critical{Utilization: u, Searched: true, Why: why, Probes: probes}
	}
	top, err := collapses(SearchHigh)
	if err != nil || !top {
		return found(nil), err
	}
	bottom, err := collapses(SearchLow)
	if err != nil {
		return Critical{}, err
	}
	if bottom {
		zero := 0.0
		return found(&zero), nil
	}
	lo, hi := SearchLow, SearchHigh
	for hi-lo > 2*SearchTolerance {
		mid := (lo + hi) / 2
		bad, err := collapses(mid)
		if err != nil {
			return Critical{}, err
		}
		if bad {
			hi = mid
		} else {
			lo = mid
		}
	}
	u := math.Round(100*(lo+hi)/2) / 100
	return found(&u), nil
}
