package replay

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/retryaudit/retryaudit/graph"
)

// Capacity is what the traces cannot show about a service: its workers,
// given directly or as a throughput.
type Capacity struct {
	Workers int
	RPS     float64
}

// ParseCapacity reads "svc=N" (workers) or "svc=Xrps" (throughput). The
// name is everything before the last "=": a name is data, even one that
// holds "=".
func ParseCapacity(spec string) (string, Capacity, error) {
	name, val, ok := splitSpec(spec)
	if !ok {
		return "", Capacity{}, fmt.Errorf("capacity %q: want SERVICE=WORKERS or SERVICE=RATErps, e.g. db=8 or db=120rps", spec)
	}
	if r, isRate := strings.CutSuffix(val, "rps"); isRate {
		x, err := strconv.ParseFloat(r, 64)
		if err != nil || x <= 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return "", Capacity{}, fmt.Errorf("capacity %q: %q is not a positive rate; want e.g. %s=120rps", spec, val, name)
		}
		return name, Capacity{RPS: x}, nil
	}
	n, err := strconv.Atoi(val)
	if err != nil || n < 1 || n > 1<<20 {
		return "", Capacity{}, fmt.Errorf("capacity %q: %q is not a worker count from 1 to %d; want e.g. %s=8", spec, val, 1<<20, name)
	}
	return name, Capacity{Workers: n}, nil
}

// ParseInstances reads "svc=N", the process instances service svc runs
// as (each with breakers of its own), split as ParseCapacity splits.
func ParseInstances(spec string) (string, int, error) {
	name, val, ok := splitSpec(spec)
	if !ok {
		return "", 0, fmt.Errorf("instances %q: want SERVICE=COUNT, e.g. api=3", spec)
	}
	n, err := strconv.Atoi(val)
	if err != nil || n < 1 || n > graph.MaxInstances {
		return "", 0, fmt.Errorf("instances %q: %q is not an instance count from 1 to %d; want e.g. %s=3", spec, val, graph.MaxInstances, name)
	}
	return name, n, nil
}

// splitSpec splits "name=value" at the last "=", both parts non-empty.
func splitSpec(spec string) (name, val string, ok bool) {
	i := strings.LastIndexByte(spec, '=')
	if i < 0 {
		return "", "", false
	}
	name, val = spec[:i], spec[i+1:]
	return name, val, name != "" && val != ""
}

// BuildOptions shape the model built from a topology.
type BuildOptions struct {
	// Load multiplies the observed root rate; Rate, when > 0, replaces it.
	// Neither changes capacity, which is derived once at load 1.
	Load, Rate float64
	// SampleRate, when > 0, is the head-sampling probability the traces
	// were kept with, replacing what the traces say (graph.Sampling).
	SampleRate float64
	// Clients > 0: closed-loop arrivals with Think seconds between requests.
	Clients int
	Think   float64
	// ClientDeadline is how long end users wait (seconds).
	ClientDeadline float64
	// Capacity overrides per service; others get Headroom × their observed
	// concurrency (Little's law on the traces), at least MinWorkers.
	Capacity map[string]Capacity
	// Instances overrides how many process instances a service runs as
	// (each with breakers of its own, Service.Instances); others run as
	// many as the traces name (graph.Service.Instances), one where they
	// name none.
	Instances  map[string]int
	Headroom   float64
	MinWorkers int
	// Arrivals, when set, replay the traces' own root requests (graph.
	// InferWithArrivals) instead of a Poisson stream, time compressed by Load.
	Arrivals []graph.Arrival
	// Timeline replays the root requests at the times and to the root
	// operations the topology's arrival timeline holds (graph.Calibration.
	// Arrivals), time compressed by Load, instead of a Poisson stream at
	// their mean rate; where the topology holds none, or the traces were
	// head-sampled (a thinned timeline is not the traffic's), arrivals are
	// Poisson and Model.Assumed says why.
	Timeline bool
}

// Defaults for BuildOptions.
const (
	DefaultHeadroom       = 2.0
	DefaultMinWorkers     = 4
	DefaultClientDeadline = 5.0
)

// FromTopology builds the model of an inferred topology under its observed
// policies: services with the operations seen, service times drawn from each
// operation's self-time quantiles, calls with the observed structure (how
// many calls per execution of the caller's operation) and each edge's
// inferred retry policy. Capacities the traces cannot show are assumed and
// listed in Model.Assumed.
func FromTopology(t *graph.Topology, o BuildOptions) (*Model, error) {
	if o.Load <= 0 {
		o.Load = 1
	}
	if o.SampleRate < 0 || o.SampleRate > 1 {
		return nil, fmt.Errorf("sample rate %g: want a probability in (0,1]", o.SampleRate)
	}
	if o.Headroom <= 0 {
		o.Headroom = DefaultHeadroom
	}
	if o.MinWorkers <= 0 {
		o.MinWorkers = DefaultMinWorkers
	}
	if o.ClientDeadline <= 0 {
		o.ClientDeadline = DefaultClientDeadline
	}
	m := &Model{ClientDeadline: o.ClientDeadline, Clients: o.Clients, Think: o.Think}
	svcIdx := map[string]int{}
	opIdx := map[[2]string]int{}
	counts := map[[2]string]int{}
	calling := map[[2]string]int{}       // executions that went on to make their calls
	slowTimes := map[[2]string][2]Dist{} // work on slow tries and on the others
	addOp := func(svc, op string, d Dist, count int) (int, int) {
		si, ok := svcIdx[svc]
		if !ok {
			si = len(m.Services)
			svcIdx[svc] = si
			m.Services = append(m.Services, Service{Name: svc})
		}
		k := [2]string{svc, op}
		oi, ok := opIdx[k]
		if !ok {
			oi = len(m.Services[si].Ops)
			opIdx[k] = oi
			m.Services[si].Ops = append(m.Services[si].Ops, Op{Name: op, Time: d})
			counts[k] = count
		}
		return si, oi
	}
	for _, s := range t.Services {
		for _, op := range s.Operations {
			d, err := serviceTime(op)
			if err != nil {
				return nil, fmt.Errorf("service %s op %s: %w", s.Name, op.Name, err)
			}
			if len(op.WorkQuantilesMS) > 0 {
				if d, err = quantileDist(graph.WorkLevels, op.WorkQuantilesMS); err != nil {
					return nil, fmt.Errorf("service %s op %s: %w", s.Name, op.Name, err)
				}
			}
			si, oi := addOp(s.Name, op.Name, d, op.Count)
			if len(op.FailedWorkQuantilesMS) > 0 {
				ft, err := quantileDist(graph.WorkLevels, op.FailedWorkQuantilesMS)
				if err != nil {
					return nil, fmt.Errorf("service %s op %s: failed executions: %w", s.Name, op.Name, err)
				}
				m.Services[si].Ops[oi].FailTime = ft
			}
			if len(op.SlowWorkQuantilesMS) > 0 && len(op.AnsweredWorkQuantilesMS) > 0 {
				var st [2]Dist
				for i, q := range [][]float64{op.SlowWorkQuantilesMS, op.AnsweredWorkQuantilesMS} {
					if st[i], err = quantileDist(graph.WorkLevels, q); err != nil {
						return nil, fmt.Errorf("service %s op %s: work of slow and answered tries: %w", s.Name, op.Name, err)
					}
				}
				slowTimes[[2]string{s.Name, op.Name}] = st
			}
			calling[[2]string{s.Name, op.Name}] = op.Count - op.FailedWithoutCalls - op.BreakerFastFails
			if op.OwnFailures > 0 {
				m.Services[si].Ops[oi].FailFast = float64(op.FailedWithoutCalls) / float64(op.OwnFailures)
			}
			if n := op.StoppedAfterFailure + op.ContinuedAfterFailure; n > 0 {
				m.Services[si].Ops[oi].StopOnFailure = float64(op.StoppedAfterFailure) / float64(n)
			}
		}
	}
	instancesFrom := map[string]string{} // where each service's count of instances comes from
	for _, s := range t.Services {
		if si, ok := svcIdx[s.Name]; ok && s.Instances > 0 {
			m.Services[si].Instances, instancesFrom[s.Name] = s.Instances, "seen in the traces"
		}
	}
	for name, n := range o.Instances {
		si, ok := svcIdx[name]
		if !ok {
			return nil, fmt.Errorf("--instances %s: no such service (have %s)", name, strings.Join(serviceNames(m), ", "))
		}
		m.Services[si].Instances, instancesFrom[name] = n, fmt.Sprintf("set by --instances %s=%d", name, n)
	}
	cut := deadlineCuts(t)
	clients := clientEntries(t)
	concurrent, total := map[[2]int]float64{}, map[[2]int]float64{}
	var offset []float64 // per model edge: when the caller makes it
	for _, e := range t.Edges {
		if e.Caller == "user" {
			si, oi := addOp(e.Callee, e.Operation, Constant(e.CalleeP50MS/1000), e.Calls)
			m.Entry = append(m.Entry, Entry{Service: si, Op: oi, Weight: float64(e.Calls), Fail: failuresOf(e.Outcomes, m.Services[si].Ops[oi].FailFast)})
			continue
		}
		ci, coi := addOp(e.Caller, e.CallerOperation, Constant(0), 0)
		ei, eoi := addOp(e.Callee, e.Operation, Constant(e.CalleeP50MS/1000), e.Calls)
		n, ok := calling[[2]string{e.Caller, e.CallerOperation}]
		if !ok {
			n = counts[[2]string{e.Caller, e.CallerOperation}]
		}
		if r, ok := clients[[2]string{e.Caller, e.CallerOperation}]; ok {
			// A client's root request is one call: its operation's
			// executions counted its attempts' spans.
			n = r
		} else if m.Services[ci].Ops[coi].StopOnFailure > 0 {
			// Executions that stopped at an earlier failed call could not
			// make this one.
			n -= e.NotReached
		}
		per := float64(e.Calls) / math.Max(float64(n), 1)
		ed := Edge{Caller: ci, CallerOp: coi, Callee: ei, CalleeOp: eoi, Prob: 1, Repeat: 1,
			Idempotent: idempotentEdge(e),
			CalleeP95:  e.CalleeP95MS / 1000, Policy: observedPolicy(e), Fail: failuresOf(e.Outcomes, m.Services[ei].Ops[eoi].FailFast)}
		if n := cut[[2]string{e.Callee, e.Operation}]; n > 0 {
			// The callee's calls ended with this edge's attempts: the
			// caller sends its attempt's deadline along (gRPC's
			// grpc-timeout), the per-try timeout's where that is sooner.
			ed.Policy.Propagate = true
			m.Assumed = append(m.Assumed, fmt.Sprintf("%s → %s %s: the caller propagates each attempt's deadline (the per-try timeout's, or the call's if sooner) to %s, "+
				"which stops work past it: %d of %s's calls were cut when the attempt that caused them ended", e.Caller, e.Callee, e.Operation, e.Callee, n, e.Callee))
		}
		// Repeat the most calls one execution makes and keep the observed
		// mean with the probability of making them.
		ed.Repeat = max(1, int(math.Ceil(per-1e-9)))
		ed.Prob = math.Min(1, per/float64(ed.Repeat))
		if e.FanOutWidth > 1 {
			ed.Width = min(e.FanOutWidth, ed.Repeat)
		}
		if len(e.WaitQuantilesMS) > 0 && ed.Policy.MaxAttempts > 1 {
			ow := &ObservedWaits{}
			for i, q := range e.WaitQuantilesMS {
				d, err := edgeDist(&e, fmt.Sprintf("waits before retry %d", i+1), q)
				if err != nil {
					return nil, err
				}
				ow.ByRetry = append(ow.ByRetry, d)
			}
			ed.Policy.Backoff.Observed = ow
		}
		if len(e.TransitQuantilesMS) > 0 {
			tr, err := edgeDist(&e, "transit", e.TransitQuantilesMS)
			if err != nil {
				return nil, err
			}
			if tr.Mean() > 0 {
				ed.Transit = tr
			}
		}
		if rt := e.RetryTransit; rt != nil && rt.Split && len(e.FirstTransitQuantilesMS) > 0 && len(e.RetryTransitQuantilesMS) > 0 {
			first, err := edgeDist(&e, "transit of first attempts", e.FirstTransitQuantilesMS)
			if err != nil {
				return nil, err
			}
			retry, err := edgeDist(&e, "transit of retries", e.RetryTransitQuantilesMS)
			if err != nil {
				return nil, err
			}
			if first.Mean() > 0 || retry.Mean() > 0 {
				ed.Transit, ed.RetryTransit = first, retry
				m.Assumed = append(m.Assumed, laterNote(e, "spend other times outside the callee", "", e.RetryTransit, e.FirstTransitQuantilesMS, e.RetryTransitQuantilesMS, drawnApart))
			}
		}
		if e.Evidence == graph.EvidenceBelow && ed.Transit != nil && ed.RetryTransit == nil {
			// The attempts a library sent below the instrumentation share one
			// client span, whose time outside the callee's spans is the
			// call's (the span opening before the first request leaves,
			// closing after the answer): the waits read between the
			// callee's spans already carry each later attempt's way out and
			// back, so they add no transit of their own.
			ed.RetryTransit = Constant(0)
			m.Assumed = append(m.Assumed, fmt.Sprintf("%s → %s %s: attempts after the first were read below the instrumentation (the callee's spans under one client span): "+
				"the transit is drawn once a call, for its first attempt; the waits between the callee's spans carry the later attempts' way out and back",
				e.Caller, e.Callee, e.Operation))
		}
		if br := e.Breaker; br != nil && br.ProxyShed > 0 {
			m.Assumed = append(m.Assumed, fmt.Sprintf("%s → %s %s: the caller's sidecar refused %d attempts at its circuit breaker's limits (Envoy UO): "+
				"a concurrency limit the traces do not size, so it is not simulated as a limit; those fast failures are replayed in the edge's outcome mix",
				e.Caller, e.Callee, e.Operation, br.ProxyShed))
		}
		if n := m.Services[ci].Instances; n > 1 && ed.Policy.Breaker.Enabled() {
			m.Assumed = append(m.Assumed, instancesNote(e, n, instancesFrom[e.Caller]))
		} else if br := e.Breaker; br != nil && br.Detected && br.Instances != nil && (br.Instances.WithBreaker > 1 || br.TripRule == graph.TripUnknown) {
			m.Assumed = append(m.Assumed, oneBreakerNote(e))
		}
		if br := e.Breaker; br != nil && br.Detected && br.RetriedRefusals != nil {
			m.Assumed = append(m.Assumed, retriedRefusalsNote(e))
		}
		if br := e.Breaker; br != nil && br.Unknown {
			m.Assumed = append(m.Assumed, fmt.Sprintf("%s → %s %s: circuit breaker unknown (%s): the replay runs no breaker on the edge",
				e.Caller, e.Callee, e.Operation, br.Evidence))
		}
		if br := e.Breaker; br != nil && br.Detected && br.TripRule == graph.TripFailureRate {
			note, err := failureRateNote(e, ed.Policy.Breaker)
			if err != nil {
				return nil, err
			}
			m.Assumed = append(m.Assumed, note)
		}
		if r := e.ResultRetries; r != nil && r.Retries > 0 {
			m.Assumed = append(m.Assumed, fmt.Sprintf("%s → %s %s: %d answers of %s that the caller retried on their result (in %d calls) are replayed as retryable failures (server_error): "+
				"the replay sends them again as the caller did, extra work for %s, and the failure rate it is held to counts them",
				e.Caller, e.Callee, e.Operation, r.Retries, strings.Join(r.Statuses, ", "), r.Calls, e.Callee))
		}
		if f := ed.Fail; f != nil && len(f.Incidents) > 0 {
			m.Assumed = append(m.Assumed, episodesNote(e))
		}
		if f := ed.Fail; f != nil && f.Runs.AfterFailure.Calls > 0 {
			m.Assumed = append(m.Assumed, runsNote(e, f))
		}
		if n := jitterNote(e, ed.Policy.Backoff, ed.Policy.Backoff.Observed != nil); n != "" {
			m.Assumed = append(m.Assumed, n)
		}
		if n := stepsNote(e, ed.Policy.Backoff.Observed != nil); n != "" {
			m.Assumed = append(m.Assumed, n)
		}
		if n := giveUpNote(e); n != "" {
			m.Assumed = append(m.Assumed, n)
		}
		if f := ed.Fail; f != nil && f.Slow != nil {
			timeout := e.PerTryTimeoutMS != nil && *e.PerTryTimeoutMS > 0
			// Tries cut by the deadline the caller's own caller sent along
			// end with it: no per-try timeout of the edge's own is needed.
			cutByCaller := !timeout && e.DeadlineFromCaller > 0 && propagatedTo(t, cut, e.Caller, e.CallerOperation)
			if !timeout && !cutByCaller {
				// No timeout to place slow times by: they come out of the
				// callee's drawn times, each try's drawn alone.
				f.Slow = nil
				m.Assumed = append(m.Assumed, fmt.Sprintf("%s → %s %s: %s, but the per-try timeout is unknown: each try's callee time is drawn from all of its times, independently of the try before",
					e.Caller, e.Callee, e.Operation, slowCounts(e.Outcomes.SlowTries)))
			} else {
				if timeout {
					f.Slow.Timeout = *e.PerTryTimeoutMS / 1000
				}
				// A slow try's callee works as long as its slow tries did.
				times := slowTimes[[2]string{e.Callee, e.Operation}]
				f.Slow.SlowTime, f.Slow.Time = times[0], times[1]
				m.Assumed = append(m.Assumed, slowNote(e, f.Slow))
			}
		}
		if rw := e.RetryWork; rw != nil && rw.Split && len(e.FirstWorkQuantilesMS) > 0 && len(e.RetryWorkQuantilesMS) > 0 {
			if f := ed.Fail; f != nil && f.Slow != nil && f.Slow.Time != nil {
				// The slow tries' own times (slow and not) stand in for
				// the callee's work on this edge already.
				m.Assumed = append(m.Assumed, laterNote(e, "(retries and hedges) meet other work at the callee", "work ", e.RetryWork,
					e.FirstWorkQuantilesMS, e.RetryWorkQuantilesMS, "not drawn apart: the edge's slow and other tries' own work times are drawn instead"))
			} else {
				first, err := edgeDist(&e, "callee work of first attempts", e.FirstWorkQuantilesMS)
				if err != nil {
					return nil, err
				}
				retry, err := edgeDist(&e, "callee work of later attempts", e.RetryWorkQuantilesMS)
				if err != nil {
					return nil, err
				}
				ed.Work, ed.RetryWork = first, retry
				m.Assumed = append(m.Assumed, laterNote(e, "(retries and hedges) meet other work at the callee", "work ", e.RetryWork,
					e.FirstWorkQuantilesMS, e.RetryWorkQuantilesMS, drawnApart))
			}
		}
		if c := e.WorkCorrelation; c != nil {
			switch {
			case c.Verdict != graph.WorkCorrelated:
				m.Assumed = append(m.Assumed, workCorrelationNote(e, c,
					"the replay draws each attempt's work independently of the attempts before it, as it draws any other"))
			case ed.Fail != nil && ed.Fail.Slow != nil:
				m.Assumed = append(m.Assumed, workCorrelationNote(e, c,
					"not drawn so: the edge's slow tries draw each try slow or not by the try before, and its work from their own times"))
			default:
				w, err := workChainOf(&e, c)
				if err != nil {
					return nil, err
				}
				ed.Slowness = w
				m.Assumed = append(m.Assumed, workCorrelationNote(e, c, workChainHow(w)))
			}
		}
		if e.RetriesUnknown {
			m.Assumed = append(m.Assumed, unknownRetriesNote(e))
		}
		if h := ed.Policy.HedgeAfter; h > 0 {
			m.Assumed = append(m.Assumed, fmt.Sprintf("%s → %s %s: hedged after %.3gms, up to %d hedges (the most requests one call was seen sending at once: a lower bound of its limit)",
				e.Caller, e.Callee, e.Operation, 1000*h, ed.Policy.MaxAttempts-1))
			if note := hedgeFailureNote(e); note != "" {
				m.Assumed = append(m.Assumed, note)
			}
		}
		m.Edges = append(m.Edges, ed)
		offset = append(offset, e.CallOffsetMS)
		m.Services[ci].Ops[coi].Calls = append(m.Services[ci].Ops[coi].Calls, len(m.Edges)-1)
		other := e.ConcurrentOtherShare
		if e.ConcurrentShare > 0 && other == 0 && e.FanOutWidth == 0 {
			// A topology written before fan-out widths were measured:
			// calls that overlapped but neither another edge's nor each
			// other's cannot come out of infer today.
			other = e.ConcurrentShare
		}
		concurrent[[2]int{ci, coi}] += other * float64(e.Calls)
		total[[2]int{ci, coi}] += float64(e.Calls)
	}
	// An operation whose calls mostly overlapped another edge's makes them
	// all at once; otherwise they go in the order the traces show them
	// made, each edge's up to its fan-out width at a time.
	for _, k := range slices.SortedFunc(maps.Keys(concurrent), func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }) {
		c := concurrent[k]
		op := &m.Services[k[0]].Ops[k[1]]
		op.Parallel = c >= 0.5*total[k]
		for _, ei := range op.Calls {
			if ed := &m.Edges[ei]; !op.Parallel && ed.Width > 1 {
				m.Assumed = append(m.Assumed, fmt.Sprintf("%s %s: calls %s %s up to %d at a time (the most one request had in flight, median over the requests that made several), after its calls before them have ended",
					m.Services[k[0]].Name, op.Name, m.Services[ed.Callee].Name, m.Services[ed.Callee].Ops[ed.CalleeOp].Name, ed.Width))
			}
		}
	}
	for si := range m.Services {
		for oi := range m.Services[si].Ops {
			slices.SortStableFunc(m.Services[si].Ops[oi].Calls, func(a, b int) int { return cmp.Compare(offset[a], offset[b]) })
		}
	}
	notes, err := addClientEntries(m, t, svcIdx, opIdx, o.Capacity)
	if err != nil {
		return nil, err
	}
	m.Assumed = append(m.Assumed, notes...)
	if len(m.Entry) == 0 {
		return nil, fmt.Errorf("the topology has no root operation to send requests to (no trace has a root SERVER span nor a root CLIENT span: are the root spans missing from the input?)")
	}
	if err := checkBuildable(m); err != nil {
		return nil, err
	}
	prob, why := sampleRate(t, o.SampleRate)
	m.Assumed = append(m.Assumed, why)
	rootRate := t.Source.RootRatePerS
	if c := t.Calibration; c != nil && c.RootRatePerS > 0 {
		rootRate = c.RootRatePerS
		if c.ArrivalWindowS > 0 {
			m.TimelinePeriod = c.ArrivalWindowS
		}
	}
	rootRate /= prob
	timeline, why := timelineOf(t, o, prob)
	switch {
	case timeline != nil:
		if err := traceArrivals(m, timeline, o.Load); err != nil {
			return nil, fmt.Errorf("topology calibration: %w", err)
		}
		// The arrival window's start is the failure timeline's: a period
		// of the window keeps the two in step.
		m.Period = max(t.Calibration.ArrivalWindowS/o.Load, m.Arrivals[len(m.Arrivals)-1].At)
		m.Assumed = append(m.Assumed, why)
	case len(o.Arrivals) > 0:
		if err := traceArrivals(m, o.Arrivals, o.Load); err != nil {
			return nil, err
		}
		m.Assumed = append(m.Assumed, fmt.Sprintf("arrivals: the traces' %d root requests, repeated every %.3gs (load %g compresses time)", len(m.Arrivals), m.Period, o.Load))
	case o.Rate > 0:
		m.Rate = o.Rate
	case rootRate > 0:
		m.Rate = rootRate * o.Load
		m.Assumed = append(m.Assumed, fmt.Sprintf("root rate %.3g/s: the traces' %.3g/s × load %g", m.Rate, rootRate, o.Load))
		if why != "" {
			m.Assumed = append(m.Assumed, why)
		}
	case o.Clients == 0:
		return nil, fmt.Errorf("the traces show no root rate (window under a millisecond): give --rate")
	}
	for i := range m.Services {
		s := &m.Services[i]
		if c, ok := o.Capacity[s.Name]; ok {
			if s.Workers == clientWorkers && c.RPS > 0 {
				return nil, fmt.Errorf("--capacity %s=%grps: %s is a client (its calls start their own traces) with no work of its own to rate: give it a number of workers", s.Name, c.RPS, s.Name)
			}
			s.Workers = c.Workers
			if c.RPS > 0 {
				s.Workers = max(1, int(math.Ceil(c.RPS*meanTime(m, i))))
			}
			continue
		}
		if s.Workers == clientWorkers {
			continue // a client's calls are never queued (addClientEntries)
		}
		mean, peak := inFlight(t, s.Name)
		busy := mean / prob
		s.Workers = max(o.MinWorkers, int(math.Ceil(o.Headroom*busy)), peak)
		m.Assumed = append(m.Assumed, fmt.Sprintf("%s: %d workers (mean in flight %.2f by Little's law × headroom %g, at least the %d it was seen holding at once and %d; held at any --load); set with --capacity %s=N",
			s.Name, s.Workers, busy, o.Headroom, peak, o.MinWorkers, s.Name))
	}
	for i, s := range m.Services {
		if s.Instances > 1 && slices.ContainsFunc(m.Edges, func(e Edge) bool { return e.Caller == i }) {
			m.Assumed = append(m.Assumed, fmt.Sprintf("%s: %d instances (%s), the requests it serves spread over them round robin by arrival, one pool of workers: "+
				"each instance keeps its own circuit breakers on %s's calls, the traced ones and those a policy adds (breaker); set with --instances %s=N",
				s.Name, s.Instances, instancesFrom[s.Name], s.Name, s.Name))
		}
	}
	m.Assumed = append(m.Assumed, "a worker is a request slot (a thread or connection), not CPU: a request holds it while it waits on its calls and between their attempts, but only its own work counts as work")
	for k := range o.Capacity {
		if _, ok := svcIdx[k]; !ok {
			return nil, fmt.Errorf("--capacity %s: no such service (have %s)", k, strings.Join(serviceNames(m), ", "))
		}
	}
	return m, m.Validate()
}

// ArrivalsTimeline and ArrivalsPoisson name the arrival processes a
// model built from a topology replays (Model.Arrivals set, or not).
const (
	ArrivalsTimeline = "traces' timeline"
	ArrivalsPoisson  = "poisson"
)

// timelineOf is, when o asks for the topology's arrival timeline, the
// root requests it holds and the note that says they are replayed, or nil
// and why they cannot be (Poisson arrivals are replayed instead); nil and
// "" when o does not ask.
func timelineOf(t *graph.Topology, o BuildOptions, prob float64) ([]graph.Arrival, string) {
	if !o.Timeline {
		return nil, ""
	}
	c := t.Calibration
	switch {
	case c == nil || c.Arrivals == nil || c.ArrivalWindowS <= 0:
		return nil, "arrivals: Poisson at the traces' mean rate, not their own timeline: the topology carries none (fewer than two root requests, " +
			"root spans that are neither a SERVER span nor a client's call, or a topology written before timelines were kept)"
	case prob < 1:
		return nil, fmt.Sprintf("arrivals: Poisson at the traces' mean rate scaled by 1/%.3g, not their own timeline: the traces were head-sampled, "+
			"and the kept requests' times are a thinned sample of the traffic's, not its bursts", prob)
	}
	arr, err := c.Arrivals.Arrivals()
	if err != nil {
		return nil, fmt.Sprintf("arrivals: Poisson at the traces' mean rate, not their own timeline: %v", err)
	}
	tl := c.Arrivals
	how := "each at its traced offset and root operation"
	if tl.Binned() {
		how = fmt.Sprintf("counted per %.3gms bin (more than %d to list) and spread evenly over each bin, the root operations by their shares", float64(tl.BinUS)/1000, graph.MaxTimelineArrivals)
	}
	return arr, fmt.Sprintf("arrivals: the traces' own timeline, not Poisson: their %d root requests %s, repeated every %.4gs (the arrival window, in step with the failure timeline; load %g compresses time)",
		tl.Requests, how, c.ArrivalWindowS/o.Load, o.Load)
}

// deadlineCuts counts, per service and operation, the calls it made that
// were cut by the deadline its caller propagated (graph.Edge.
// DeadlineFromCaller): the edges into it propagate their attempts'
// deadlines.
func deadlineCuts(t *graph.Topology) map[[2]string]int {
	cut := map[[2]string]int{}
	for _, e := range t.Edges {
		if e.DeadlineFromCaller > 0 && e.Caller != "user" {
			cut[[2]string{e.Caller, e.CallerOperation}] += e.DeadlineFromCaller
		}
	}
	return cut
}

// propagatedTo reports whether an edge into service svc's operation op
// other than the end user's propagates its deadline (see deadlineCuts):
// the replay then cuts svc's calls when the attempt that caused them ends.
func propagatedTo(t *graph.Topology, cut map[[2]string]int, svc, op string) bool {
	if cut[[2]string{svc, op}] == 0 {
		return false
	}
	for _, e := range t.Edges {
		if e.Callee == svc && e.Operation == op && e.Caller != "user" {
			return true
		}
	}
	return false
}

// traceArrivals schedules the traces' own root requests.
func traceArrivals(m *Model, arr []graph.Arrival, load float64) error {
	entry := map[[2]string]int{}
	for i, e := range m.Entry {
		entry[[2]string{m.Services[e.Service].Name, m.Services[e.Service].Ops[e.Op].Name}] = i
	}
	for _, a := range arr {
		i, ok := entry[[2]string{a.Service, a.Operation}]
		if !ok {
			return fmt.Errorf("arrival for %s %s, which is no root operation of the topology", a.Service, a.Operation)
		}
		m.Arrivals = append(m.Arrivals, Arrival{At: a.AtS / load, Entry: i})
	}
	// One period spans the traces plus one mean gap, so the repeat keeps
	// the traces' rate.
	last := arr[len(arr)-1].AtS
	gap := last / math.Max(float64(len(arr)-1), 1)
	if gap <= 0 {
		gap = 1
	}
	m.Period = (last + gap) / load
	return nil
}

func serviceNames(m *Model) []string {
	var n []string
	for _, s := range m.Services {
		n = append(n, s.Name)
	}
	sort.Strings(n)
	return n
}

// meanTime is the mean service time over a service's operations.
func meanTime(m *Model, i int) float64 {
	s := &m.Services[i]
	t := 0.0
	for _, op := range s.Ops {
		t += op.Time.Mean()
	}
	return t / math.Max(float64(len(s.Ops)), 1)
}

// serviceTime draws from an operation's self-time quantiles.
func serviceTime(op graph.Operation) (Dist, error) {
	if len(op.SelfQuantilesMS) != len(graph.SelfQuantileLevels) {
		return Constant(op.P50MS / 1000), nil
	}
	return quantileDist(graph.SelfQuantileLevels, op.SelfQuantilesMS)
}

// edgeDist reads quantiles q of edge e over graph.WorkLevels
// (quantileDist), an error naming the edge and what q is (what).
func edgeDist(e *graph.Edge, what string, q []float64) (Dist, error) {
	d, err := quantileDist(graph.WorkLevels, q)
	if err != nil {
		return nil, fmt.Errorf("edge %s → %s %s: %s: %w", e.Caller, e.Callee, e.Operation, what, err)
	}
	return d, nil
}

// quantileDist draws from quantiles in milliseconds at the given levels.
func quantileDist(levels, q []float64) (Dist, error) {
	if len(q) != len(levels) {
		return nil, fmt.Errorf("%d quantiles: want %d, at levels from %g to %g", len(q), len(levels), levels[0], levels[len(levels)-1])
	}
	vals := make([]float64, len(q))
	for i, v := range q {
		if !(v >= 0) || math.IsInf(v, 1) {
			return nil, fmt.Errorf("quantile %d is %g ms: want a time of 0 or more", i, v)
		}
		vals[i] = v / 1000
		if i > 0 && vals[i] < vals[i-1] {
			vals[i] = vals[i-1] // rounding in the topology may break monotony by a hair
		}
	}
	if vals[len(vals)-1] == vals[0] {
		return Constant(vals[0]), nil
	}
	return NewEmpirical(levels, vals)
}

// giveUpClassNames are, by a policy's GiveUp class, the graph's outcome
// classes (graph.OutcomeMix's fields) it pools: the replay draws a
// throttled answer and one with a Retry-After apart from other failures,
// and one without an answer apart where giveUpSplit says so (else the
// failure share pools it with the others, noAnswerPooled).
var giveUpClassNames = [giveUpClasses][]string{
	GiveUpFail:       {"server_error", "timeout"},
	GiveUpThrottled:  {"throttled"},
	GiveUpRetryAfter: {"retry_after"},
	GiveUpNoAnswer:   {"transport"},
}

// noAnswerPooled are the classes the failure share pools while failures
// without an answer are not told apart.
var noAnswerPooled = []string{"server_error", "timeout", "transport"}

// giveUpSplit says whether the traces show an edge's caller giving up on
// failures without an answer (transport errors) and on its other failures
// (server errors, timeouts) at different shares beyond chance (rs its
// give-up counts): Fisher's exact test of the 2×2 table (no answer,
// other) × (given up, retried), one-sided in the direction seen, p the
// chance of a split at least as lopsided if both had one share, below
// RunsAlpha (three deviations). With no failure of either, p is 1.
func giveUpSplit(rs []graph.StatusRetries) (split bool, p float64) {
	gn, nn := giveUpCount(rs, giveUpClassNames[GiveUpNoAnswer]...)
	gf, nf := giveUpCount(rs, giveUpClassNames[GiveUpFail]...)
	total, given := nn+nf, gn+gf
	switch {
	case nn == 0 || nf == 0:
		p = 1
	case gn*nf > gf*nn:
		p = graph.HypergeometricTail(total, given, nn, gn)
	case gn*nf < gf*nn:
		p = graph.HypergeometricTail(total, given, nf, gf)
	default:
		p = 1
	}
	return p < RunsAlpha, p
}

// giveUpCount is graph.GiveUpShare's counts: the failures of the classes
// named given up on, of how many.
func giveUpCount(rs []graph.StatusRetries, classes ...string) (given, failures int) {
	_, given, failures = graph.GiveUpShare(rs, classes...)
	return given, failures
}

// giveUpShares are an edge's give-up shares by a policy's class (its
// outcomes' GivenUp), with split: failures without an answer given up on
// apart from the others (giveUpSplit), else both at their pooled share.
func giveUpShares(rs []graph.StatusRetries) (g [giveUpClasses]float64, split bool) {
	split, _ = giveUpSplit(rs)
	for class, names := range giveUpClassNames {
		if !split && (class == GiveUpFail || class == GiveUpNoAnswer) {
			names = noAnswerPooled
		}
		g[class], _, _ = graph.GiveUpShare(rs, names...)
	}
	return g, split
}

// giveUpNote says, for an edge whose caller gave calls up with attempts
// left, on which answers and how often, and what the replay does with it;
// "" when it did not.
func giveUpNote(e graph.Edge) string {
	if e.Outcomes == nil || len(e.Outcomes.GivenUp) == 0 {
		return ""
	}
	var parts []string
	for _, r := range e.Outcomes.GivenUp {
		if r.GivenUp > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s) failures of %d with attempts left (%s)", r.GivenUp, r.Status, r.Class, r.Retried+r.GivenUp, r.Reason))
		}
	}
	var shares []string
	split, p := giveUpSplit(e.Outcomes.GivenUp)
	for class, names := range giveUpClassNames {
		label := giveUpClassLabels[class]
		switch {
		case class == GiveUpNoAnswer && !split:
			continue // pooled with the failures
		case class == GiveUpFail && !split:
			names = noAnswerPooled
		case class == GiveUpFail || class == GiveUpNoAnswer:
			label += " (" + strings.Join(names, ", ") + ")"
		}
		// A class kept apart is shown given up on or not: its share is
		// what tells it from the other.
		if g, given, n := graph.GiveUpShare(e.Outcomes.GivenUp, names...); given > 0 || split && n > 0 && (class == GiveUpFail || class == GiveUpNoAnswer) {
			shares = append(shares, fmt.Sprintf("%s %d of %d (%.3g)", label, given, n, g))
		}
	}
	use := "the observed policy gives a call up on such a failure as often as the traces show: " + strings.Join(shares, ", ")
	if split {
		use += fmt.Sprintf("; failures without an answer apart from the others, the two given up on differently beyond chance (P = %.2g if one share, below %g)", p, RunsAlpha)
	}
	if len(shares) == 0 {
		use = "the traces cannot tell a give-up from a call whose later attempts are elsewhere, so the observed policy retries every retryable failure"
	}
	return fmt.Sprintf("%s → %s %s: the caller gave up on %s; %s", e.Caller, e.Callee, e.Operation, strings.Join(parts, ", "), use)
}

// stepsNote says, for a retrying edge whose backoff kind is unknown
// while its schedule has steps, what the replay waits: the traces' own
// waits where it has them (observed), else the steps as read; "" for
// any other edge.
func stepsNote(e graph.Edge, observed bool) string {
	b := e.Backoff
	if !e.Retries || !replaysSteps(b) {
		return ""
	}
	fits := "no one kind (constant, linear, exponential, fibonacci) fits every step"
	switch {
	case b.OffsetMS != nil:
		fits = fmt.Sprintf("the steps grow exponentially from an offset of %.3gms, which no backoff of the replay has", *b.OffsetMS)
	case len(b.KindCandidates) > 0:
		var c []string
		for _, k := range b.KindCandidates {
			c = append(c, string(k))
		}
		fits = "its steps fit " + strings.Join(c, ", ") + " alike"
	}
	var steps []string
	for _, w := range b.Schedule {
		steps = append(steps, fmt.Sprintf("%.3gms", w.MS))
	}
	how := "the replay waits the steps as read (" + strings.Join(steps, ", ") + "), the last for later retries"
	if observed {
		how = "the replay waits the traces' own waits before each retry, as on every edge that has them (without them, the steps as read: " + strings.Join(steps, ", ") + ", the last for later retries)"
	}
	kind := "the backoff kind is unknown"
	if b.OffsetMS != nil {
		kind = "the backoff is exponential"
	}
	return fmt.Sprintf("%s → %s %s: %s, %s: %s", e.Caller, e.Callee, e.Operation, kind, fits, how)
}

// replaysSteps reports whether the replay waits backoff b's steps as
// read rather than a formula: where its kind is unknown, or its waits
// grow exponentially from an offset (OffsetMS), and it has two steps or
// more.
func replaysSteps(b graph.Backoff) bool {
	return (b.Kind == graph.BackoffUnknown || b.OffsetMS != nil) && len(b.Schedule) > 1
}

// jitterNote says, for a retrying edge whose proportional fraction or
// additive width the traces leave unknown with only its range, what the
// replay spreads its waits by (b, the backoff it replays): the traces'
// own waits where it has them (observed), else the middle of that
// range; "" for any other edge.
func jitterNote(e graph.Edge, b Backoff, observed bool) string {
	bo := e.Backoff
	if !e.Retries {
		return ""
	}
	var what string
	switch r := bo.JitterFractionRange; {
	case bo.Jitter == JitterProportional && bo.JitterFraction == nil && r != nil:
		what = fmt.Sprintf("the proportional jitter's fraction is unknown (its range ±%.3g–%.3g too wide to state one)", r[0], r[1])
	case bo.Jitter == graph.JitterAdditive && bo.JitterAdditiveMS == nil && bo.JitterAdditiveRangeMS != nil:
		r := bo.JitterAdditiveRangeMS
		what = fmt.Sprintf("the additive jitter's width is unknown (late timers' tail as wide as it; its range %.3g–%.3gms)", r[0], r[1])
	default:
		return ""
	}
	how := fmt.Sprintf("the replay spreads the waits by the middle of the range, ±%.3g about the centre", b.Fraction)
	if observed {
		how = "the replay waits the traces' own waits before each retry, as on every edge that has them (without them, it would spread the formula's by the middle of the range, " +
			fmt.Sprintf("±%.3g about the centre)", b.Fraction)
	}
	return fmt.Sprintf("%s → %s %s: %s: %s", e.Caller, e.Callee, e.Operation, what, how)
}

// giveUpClassLabels name a policy's GiveUp classes in notes and JSON.
var giveUpClassLabels = [giveUpClasses]string{GiveUpFail: "failure", GiveUpThrottled: "throttled", GiveUpRetryAfter: "retry-after", GiveUpNoAnswer: "no answer"}

// hedgeOnFailure is the replay's behaviour for each graph.Hedging.OnFailure
// read from the traces; HedgeFailUnknown (and a topology without it)
// replays as HedgeWaits.
var hedgeOnFailure = map[string]HedgeOnFailure{
	graph.HedgeFailEnds:            HedgeEnds,
	graph.HedgeFailSendsNext:       HedgeSendsNext,
	graph.HedgeFailEndsOrSendsNext: HedgeEndsOrSendsNext,
	graph.HedgeFailWaits:           HedgeWaits,
}

// hedgeFailureNote says what the client of hedging edge e does when an
// attempt fails while another is out, from how many calls, and what the
// replay does; "" for a topology that does not say (written before the
// field, or by hand).
func hedgeFailureNote(e graph.Edge) string {
	h := e.Hedging
	if h.OnFailure == "" {
		return ""
	}
	f := h.FailedWhileOut
	seen := fmt.Sprintf("of the hedged calls in which an attempt failed while another was out, %d ended on the failure, %d sent the next attempt at once, %d waited for the attempts out",
		f.Ended, f.SentNext, f.Waited)
	var what string
	switch hedgeOnFailure[h.OnFailure] {
	case HedgeEnds:
		what = "the replay stops waiting for the attempts out on such a failure and goes on as after a failure with none out (gives the call up as often as the traces show, or retries after the backoff)"
	case HedgeSendsNext, HedgeEndsOrSendsNext:
		what = "on such a failure the replay gives the call up with the edge's give-up share for its class (ending it, the attempts out abandoned), and otherwise sends the next attempt at once while attempts are left, keeping those out"
	default:
		what = "the replay waits for the attempts out before it decides on the call"
	}
	if h.OnFailure == graph.HedgeFailUnknown {
		return fmt.Sprintf("%s → %s %s: after a failed attempt with another out: unknown (no hedged call shows one: %s); %s, as for every edge that does not say",
			e.Caller, e.Callee, e.Operation, seen, what)
	}
	return fmt.Sprintf("%s → %s %s: after a failed attempt with another out the client %s (%s): %s",
		e.Caller, e.Callee, e.Operation, strings.ReplaceAll(h.OnFailure, "_", " "), seen, what)
}

// observedPolicy is an edge's inferred policy as a client policy.
func observedPolicy(e graph.Edge) Policy {
	p := Policy{MaxAttempts: max(1, e.MaxAttempts), HonorRetryAfter: e.RetryAfterHonored > 0}
	if e.PerTryTimeoutMS != nil {
		p.PerTryTimeout = *e.PerTryTimeoutMS / 1000
	}
	b := e.Backoff
	p.Backoff = Backoff{Kind: BackoffImmediate, Jitter: JitterNone}
	switch {
	case replaysSteps(b):
		// No one kind fits, or growth from an offset no backoff of the
		// replay has: the schedule's steps as read, the last for later
		// retries (stepsNote).
		st := &Steps{}
		for _, w := range b.Schedule {
			st.ByRetry = append(st.ByRetry, w.MS/1000)
		}
		p.Backoff = Backoff{Kind: BackoffConstant, Base: b.BaseMS / 1000, Jitter: JitterNone, Steps: st}
	case b.Kind == graph.BackoffUnknown:
		if b.BaseMS > 0 {
			p.Backoff = Backoff{Kind: BackoffConstant, Base: b.BaseMS / 1000, Jitter: JitterNone}
		}
	case b.Kind == BackoffConstant:
		if b.BaseMS > 0 {
			p.Backoff = Backoff{Kind: BackoffConstant, Base: b.BaseMS / 1000, Jitter: JitterNone}
		}
	case b.Kind == BackoffLinear || b.Kind == BackoffFibonacci:
		p.Backoff = Backoff{Kind: b.Kind, Base: b.BaseMS / 1000, Jitter: JitterNone}
		if b.IncrementMS != nil {
			p.Backoff.Increment = *b.IncrementMS / 1000
		}
	case b.Kind == BackoffExponential:
		p.Backoff = Backoff{Kind: BackoffExponential, Base: b.BaseMS / 1000, Multiplier: 2, Jitter: JitterNone}
		// A multiplier the waits cannot pin down (null, with its range) is
		// replayed at the fit the range was read around.
		switch {
		case b.Multiplier != nil:
			p.Backoff.Multiplier = *b.Multiplier
		case b.MultiplierFit != nil:
			p.Backoff.Multiplier = *b.MultiplierFit
		}
		if b.CapMS != nil {
			p.Backoff.Cap = *b.CapMS / 1000
		}
	}
	switch b.Jitter {
	case JitterFull, JitterEqual, JitterDecorrelated:
		p.Backoff.Jitter = b.Jitter
	case graph.JitterUnknown:
		// Left between full jitter and decorrelated's timeline form: the
		// schedule is the ceilings of waits both spread from zero, which
		// full jitter replays (a fixed wait at the ceiling would double
		// the mean). Left between additive and proportional jitter, or
		// unnamed: the schedule is the waits' medians, the centre of
		// either, replayed as fixed waits there (the mean wait kept).
		if slices.Contains(b.JitterCandidates, JitterFull) {
			p.Backoff.Jitter = JitterFull
		}
	case JitterProportional:
		// A fraction too uncertain to state is replayed at the middle of
		// its range (jitterNote says so).
		p.Backoff.Jitter = JitterProportional
		switch r := b.JitterFractionRange; {
		case b.JitterFraction != nil:
			p.Backoff.Fraction = *b.JitterFraction
		case r != nil:
			p.Backoff.Fraction = (r[0] + r[1]) / 2
		}
	case graph.JitterAdditive:
		// d + U[0,a] is (d + a/2)·(1 ± a/(2d+a)) at the first wait: the
		// engine's proportional jitter about the centre, exact for a
		// constant schedule and close for a growing one. Where late
		// timers left the width unknown, the middle of its range.
		a := b.JitterAdditiveMS
		if r := b.JitterAdditiveRangeMS; a == nil && r != nil {
			a = new((r[0] + r[1]) / 2)
		}
		if a != nil && p.Backoff.Base > 0 {
			half := *a / 2000
			p.Backoff.Fraction = half / (p.Backoff.Base + half)
			p.Backoff.Base += half
			p.Backoff.Jitter = JitterProportional
		}
	}
	if o := e.Outcomes; o != nil {
		p.GiveUp, _ = giveUpShares(o.GivenUp)
	}
	if br := e.Breaker; br != nil && br.Detected {
		// The breaker the traces show: its trip threshold, and how long it
		// stayed open before a probe (at least a millisecond).
		// The traces show it failing whole calls fast, no attempt made: it
		// wraps the call, retries inside it.
		p.Breaker = BreakerConfig{ConsecutiveFailures: max(br.TripAfter, 1), OpenFor: max(br.OpenMS, 1) / 1000, HalfOpenProbes: 1, PerCall: true}
		if fr := sizedFailureRate(br); fr != nil {
			// A breaker on a failure rate the traces size: the one of
			// their fit it replays.
			p.Breaker.ConsecutiveFailures = 0
			p.Breaker.FailureRate = fr.Share
			p.Breaker.Window = fr.WindowMS / 1000
			p.Breaker.MinRequests = fr.MinCalls
			p.Breaker.KeepWindow = fr.Reading != graph.ReadingCleared
			p.Breaker.CountRejected = fr.Reading == graph.ReadingRollingRejected
		}
	}
	if e.Hedging != nil && e.Hedging.DelayMS > 0 {
		// As many requests as one call was seen sending at once: hedges
		// up to that many, each the delay after the one before.
		p.HedgeAfter = e.Hedging.DelayMS / 1000
		p.MaxAttempts = max(p.MaxAttempts, e.Hedging.MaxRequests, 2)
		p.OnFailureOut = hedgeOnFailure[e.Hedging.OnFailure] // unknown, or none read: HedgeWaits
	}
	return p
}

// instancesNote says how the replay runs the traced breaker of edge e
// whose caller runs as n instances (from: where the count comes from):
// one breaker per instance, each with the setting the instances pooled
// (and, where they disagree on the trip rule, on failures in a row at the
// fewest any instance opened after).
func instancesNote(e graph.Edge, n int, from string) string {
	note := fmt.Sprintf("%s → %s %s: the replay runs one breaker per %s instance (%d instances, %s), requests spread over them round robin by arrival; each %s",
		e.Caller, e.Callee, e.Operation, e.Caller, n, from, breakerSetting(e.Breaker))
	if in := e.Breaker.Instances; in != nil {
		note += fmt.Sprintf("; %d of the %d instances that called showed a breaker of their own", in.WithBreaker, in.Calling)
		if len(in.Unknown) > 0 {
			note += "; unknown: " + strings.Join(in.Unknown, "; ")
		}
	}
	return note
}

// oneBreakerNote says how the replay runs the breaker of edge e, whose
// caller's instances each keep one, where the model runs the caller as
// one instance (--instances SVC=1): as one breaker for the edge, with the
// setting the instances pooled.
func oneBreakerNote(e graph.Edge) string {
	br := e.Breaker
	note := fmt.Sprintf("%s → %s %s: %d of the caller's %d instances showed a circuit breaker of their own; the replay runs one breaker for the edge with their pooled setting (%s), which opens on the failures of all instances' calls together",
		e.Caller, e.Callee, e.Operation, br.Instances.WithBreaker, br.Instances.Calling, breakerSetting(br))
	if len(br.Instances.Unknown) > 0 {
		note += "; unknown: " + strings.Join(br.Instances.Unknown, "; ")
	}
	return note
}

// retriedRefusalsNote says how the replay runs a breaker the traces show
// inside the caller's retry loop (graph.RetriedRefusals): as one around
// the call, which the traces size only in calls.
func retriedRefusalsNote(e graph.Edge) string {
	return fmt.Sprintf("%s → %s %s: the caller's retry loop wraps its circuit breaker (%d calls failed after waiting out the loop's retries, nothing sent): "+
		"the breaker counts tries, some of which the traces do not show, so the replay runs it around the call (%s), failing a call at once where the loop waited and probed",
		e.Caller, e.Callee, e.Operation, e.Breaker.RetriedRefusals.WaitedCalls, breakerSetting(e.Breaker))
}

// breakerSetting is the setting the replay runs a traced breaker with,
// as the notes state it.
func breakerSetting(br *graph.Breaker) string {
	if br.TripRule == graph.TripFailureRate {
		return "the failure-rate breaker the next note describes"
	}
	return fmt.Sprintf("open after %d failures in a row, for %.3gms", max(br.TripAfter, 1), max(br.OpenMS, 1))
}

// sizedFailureRate is the failure-rate breaker a failure-rate breaker's fit
// replays; nil where the trip rule is another or the fit says unknown.
func sizedFailureRate(br *graph.Breaker) *graph.FailureRateBreaker {
	if br.TripRule != graph.TripFailureRate || br.FailureRate == nil || br.FailureRate.Fit != graph.FitSized {
		return nil
	}
	return br.FailureRate.Replay
}

// failureRateNote says how the replay runs edge e's breaker on a failure
// rate (c, its config): the fit's breaker and where its figures come
// from, or, where the traces do not size it, one on failures in a row
// that fails more calls fast than the traced one. It is an error for a
// sized fit (a topology written by hand) to name no breaker to replay or
// an unknown reading of its window.
func failureRateNote(e graph.Edge, c BreakerConfig) (string, error) {
	br := e.Breaker
	at := fmt.Sprintf("%s → %s %s", e.Caller, e.Callee, e.Operation)
	fit := br.FailureRate
	if fit == nil || fit.Fit != graph.FitSized {
		why := "the traces do not size it"
		if fit != nil && fit.Why != "" {
			why = "the traces do not size it: " + fit.Why
		}
		return fmt.Sprintf("%s: the breaker trips on a failure rate (%d calls let through after %d or more failed calls in a row), "+
			"whose window, share and minimum calls are unknown (%s): the replay opens it after %d failures in a row for %.3gms, also where the traced one let calls through, so it fails more calls fast",
			at, br.PassedRuns, br.TripAfter, why, max(br.TripAfter, 1), max(br.OpenMS, 1)), nil
	}
	fr := fit.Replay
	if fr == nil {
		return "", fmt.Errorf("edge %s: breaker.failure_rate: fit %q without a breaker to replay", at, fit.Fit)
	}
	var window string
	switch fr.Reading {
	case graph.ReadingCleared:
		window = "cleared whenever it opens or closes"
	case graph.ReadingRolling:
		window = "rolling on through every state, refused calls not counted"
	case graph.ReadingRollingRejected:
		window = "rolling on through every state, refused calls counted"
	default:
		return "", fmt.Errorf("edge %s: breaker.failure_rate.replay.reading %q: want %s, %s or %s", at, fr.Reading,
			graph.ReadingCleared, graph.ReadingRolling, graph.ReadingRollingRejected)
	}
	kind := "a representative inside the ranges that fit"
	if fit.Estimate {
		kind = "an estimate (the ranges that fit are narrow)"
	}
	rng := func(lo, hi float64) string {
		if lo == hi {
			return fmt.Sprintf("%.3g", lo)
		}
		return fmt.Sprintf("%.3g–%.3g", lo, hi)
	}
	var share, win, calls string
	if len(fit.ShareRange) == 2 && len(fit.WindowMSRange) == 2 && len(fit.MinCallsRange) == 2 {
		share = fmt.Sprintf(" (fit: above %.3g up to %.3g)", fit.ShareRange[0], fit.ShareRange[1])
		win = fmt.Sprintf(" (fit: %sms)", rng(fit.WindowMSRange[0], fit.WindowMSRange[1]))
		calls = fmt.Sprintf(" (fit: %s)", rng(float64(fit.MinCallsRange[0]), float64(fit.MinCallsRange[1])))
	}
	ending := "s"
	if c.MinRequests == 1 {
		ending = ""
	}
	return fmt.Sprintf("%s: the breaker trips on a failure rate; the replay opens it on a failed share of at least %.3g%s over %.4gms%s with at least %d call%s in its window%s, "+
		"its window %s (readings that fit: %s), open for %.3gms: %s, sized from %d trips and %d calls let through after a failure",
		at, c.FailureRate, share, c.Window*1000, win, c.MinRequests, ending, calls, window, strings.Join(fit.Readings, ", "), c.OpenFor*1000, kind, fit.Trips, fit.LetThrough), nil
}

// episodesNote lists edge e's failure episodes: when each was and how its
// first attempts and retries ended, which the observed degradation
// replays in place of every other mix of the edge.
func episodesNote(e graph.Edge) string {
	o := e.Outcomes
	eps := make([]string, len(o.Incidents))
	for i, inc := range o.Incidents {
		eps[i] = fmt.Sprintf("%.1f–%.1fms (%d of %d first attempts failed%s", inc.StartMS, inc.EndMS, inc.First.Failed(), inc.First.Total(), failedClasses(inc.First))
		if n := inc.Retry.Total(); n > 0 {
			eps[i] += fmt.Sprintf(", %d of %d retries%s", inc.Retry.Failed(), n, failedClasses(inc.Retry))
		}
		eps[i] += ")"
	}
	n := o.First.Total()
	for _, inc := range o.Incidents {
		n += inc.First.Total()
	}
	return fmt.Sprintf("%s → %s %s: failure episodes (%d), where the first attempts' failure rate changed (each change point gaining more than ln(n/%g) = %.1f nats of likelihood, n = %d first attempts) "+
		"and at least half of them and three deviations beyond the rest of the edge's failed, each cut again where the retries that started in it changed (ln(m/%[5]g), m of them): %[8]s; "+
		"replaying the traces' timeline, an attempt that starts in an episode draws from its mix alone (no runs on top), and the edge's other mixes and its runs are those of the attempts outside them",
		e.Caller, e.Callee, e.Operation, len(o.Incidents), graph.EpisodeAlpha, math.Log(float64(n)/graph.EpisodeAlpha), n, strings.Join(eps, ", "))
}

// failedClasses names how the failures counted in m ended, by their
// OutcomeMix field names (": 12 server_error, 4 timeout"), or nothing
// when none failed.
func failedClasses(m graph.OutcomeMix) string {
	var by []string
	for _, c := range []struct {
		n    int
		name string
	}{{m.ServerError, "server_error"}, {m.Throttled, "throttled"}, {m.RetryAfter, "retry_after"},
		{m.ClientError, "client_error"}, {m.Timeout, "timeout"}, {m.Transport, "transport"}} {
		if c.n > 0 {
			by = append(by, fmt.Sprintf("%d %s", c.n, c.name))
		}
	}
	if len(by) == 0 {
		return ""
	}
	return ": " + strings.Join(by, ", ")
}

// runsNote says how the failures of edge e come: after a failed call of
// another request on the edge and after a successful one, how often the
// next call failed, the chance of that without runs, and whether the
// replay draws calls by the latest other request's outcome.
func runsNote(e graph.Edge, f *Failures) string {
	r := f.Runs
	rate := func(c graph.CallCount) string {
		if c.Calls == 0 {
			return "no calls"
		}
		return fmt.Sprintf("%d of %d calls failed (%.0f%%)", c.Failed, c.Calls, 100*float64(c.Failed)/float64(c.Calls))
	}
	var how string
	switch {
	case r.Drawn:
		how = fmt.Sprintf("failures come in runs (P = %.2g if independent, below %g): the replay draws each call's attempts by how the latest call of another request on the edge had ended", f.RunsP, RunsAlpha)
	case f.RunsUnknown:
		how = fmt.Sprintf("failures come in runs (P = %.2g if independent) that no call outside the edge's failure episodes is seen to end, so how long they last is unknown: the replay draws those calls as the others", f.RunsP)
	default:
		how = fmt.Sprintf("no runs beyond chance (P = %.2g if independent, not below %g): the replay draws calls independently of the edge's latest", f.RunsP, RunsAlpha)
	}
	where := ""
	if len(f.Incidents) > 0 {
		where = " (calls outside its failure episodes)"
	}
	return fmt.Sprintf("%s → %s %s: after another request's failed call on the edge%s %s, after a successful one %s; %s",
		e.Caller, e.Callee, e.Operation, where, rate(r.AfterFailure), rate(r.AfterSuccess), how)
}

// slowCounts says how many of an edge's tries were slow: first tries,
// retries by attempt, and retries after a slow try and after another
// failure.
func slowCounts(c *graph.SlowTries) string {
	of := func(t graph.TryCount) string { return fmt.Sprintf("%d of %d", t.Slow, t.Tries) }
	var by []string
	var afterSlow, afterFail, retries graph.TryCount
	for i, sl := range c.AfterSlowByAttempt {
		f := c.AfterFailureByAttempt[i]
		t := graph.TryCount{Tries: sl.Tries + f.Tries, Slow: sl.Slow + f.Slow}
		by = append(by, of(t))
		afterSlow.Tries, afterSlow.Slow = afterSlow.Tries+sl.Tries, afterSlow.Slow+sl.Slow
		afterFail.Tries, afterFail.Slow = afterFail.Tries+f.Tries, afterFail.Slow+f.Slow
		retries.Tries, retries.Slow = retries.Tries+t.Tries, retries.Slow+t.Slow
	}
	s := fmt.Sprintf("slow tries (the callee still at work when the caller gave up): %s first tries", of(c.First))
	if retries.Tries > 0 {
		s += fmt.Sprintf(", %s retries (by attempt from the second: %s), %s after a slow try and %s after another failure",
			of(retries), strings.Join(by, ", "), of(afterSlow), of(afterFail))
	}
	return s
}

// slowNote says how an edge's slow tries are replayed: their counts, the
// chance of as many slow tries after slow ones if a try did not depend on
// the one before, and which way the replay draws them.
func slowNote(e graph.Edge, sl *SlowTries) string {
	var how string
	switch {
	case len(sl.Counts.AfterSlowByAttempt) == 0:
		how = "no retries on the edge: the replay draws each try slow with the first tries' share"
	case sl.Unknown:
		how = fmt.Sprintf("whether a try after a slow one is likelier slow is unknown (%d tries after a slow one: even all of them slow would not be below %g): "+
			"the replay draws each try slow by its attempt number alone, independently of the try before", sl.AfterSlow, RunsAlpha)
	case sl.ByPrevious:
		how = fmt.Sprintf("a try after a slow one is slow more often than the other retries (P = %.2g if not, below %g): "+
			"the replay draws each retry slow by its attempt number and whether the try before it was slow", sl.P, RunsAlpha)
	default:
		how = fmt.Sprintf("no more often after a slow try than after another failure beyond chance (P = %.2g, not below %g): "+
			"the replay draws each try slow by its attempt number alone, independently of the try before", sl.P, RunsAlpha)
	}
	from := "its work on the tries its callers gave up on, any other try from its work on the others"
	if sl.SlowTime == nil {
		from = "all of its work times, as any other try"
	}
	if sl.Timeout == 0 {
		return fmt.Sprintf("%s → %s %s: %s, cut by the deadline %s's caller propagated; %s; a slow try's callee works as long as drawn from %s, and the propagated deadline ends the try",
			e.Caller, e.Callee, e.Operation, slowCounts(e.Outcomes.SlowTries), e.Caller, how, from)
	}
	return fmt.Sprintf("%s → %s %s: %s; %s; a slow try's callee works at least the %.4g ms per-try timeout, drawn from %s",
		e.Caller, e.Callee, e.Operation, slowCounts(e.Outcomes.SlowTries), how, 1000*sl.Timeout, from)
}

// drawnApart is laterNote's how where the replay draws each kind's time
// from its own.
const drawnApart = "the replay draws each kind's from its own"

// laterNote says that edge e's attempts after the first differ from its
// first attempts in a time (what; kind names the time before its medians,
// if it needs naming), compared in la with the first attempts' and the
// later ones' quantiles, and how the replay draws them.
func laterNote(e graph.Edge, what, kind string, la *graph.LaterAttempts, first, later []float64, how string) string {
	return fmt.Sprintf("%s → %s %s: the attempts after the first %s than the first attempts (%smedian %.3gms against %.3gms; "+
		"a retry outlasts a first attempt with chance %.2f over %d retries and %d first attempts, %.1f deviations from even): %s",
		e.Caller, e.Callee, e.Operation, what, kind, later[len(later)/2], first[len(first)/2], la.Later, la.Retries, la.First, la.Deviations, how)
}

// clientWorkers is the workers of a client whose calls start their own
// traces (addClientEntries): enough that its calls never queue.
const clientWorkers = 1 << 20

// clientEntries is the topology's root operations that are a client's
// calls (graph.Calibration.ClientRoots), by service and operation, with
// their root requests.
func clientEntries(t *graph.Topology) map[[2]string]int {
	out := map[[2]string]int{}
	if t.Calibration != nil {
		for _, c := range t.Calibration.ClientRoots {
			out[[2]string{c.Service, c.Operation}] = c.Requests
		}
	}
	return out
}

// addClientEntries makes each root operation that is a client's calls an
// entry of m: the end user sends each root request to the client's
// operation, which has no work of its own and makes the call, as the end
// user in front of a served entry sends its one attempt. A client that
// serves nothing the traces show has no pool they show either: its
// workers are clientWorkers unless capacity sets them. It returns the
// model notes that say so.
func addClientEntries(m *Model, t *graph.Topology, svcIdx map[string]int, opIdx map[[2]string]int, capacity map[string]Capacity) ([]string, error) {
	if t.Calibration == nil || len(t.Calibration.ClientRoots) == 0 {
		return nil, nil
	}
	served := map[string]bool{}
	for _, e := range t.Edges {
		served[e.Callee] = true
	}
	var notes []string
	unpooled := map[int]bool{}
	for _, c := range t.Calibration.ClientRoots {
		si, ok := svcIdx[c.Service]
		oi, ok2 := opIdx[[2]string{c.Service, c.Operation}]
		if !ok || !ok2 || c.Requests < 1 {
			return nil, fmt.Errorf("topology calibration: client root %s %s (%d requests): want an operation of the topology with 1 or more", c.Service, c.Operation, c.Requests)
		}
		op := &m.Services[si].Ops[oi]
		if len(op.Calls) == 0 {
			notes = append(notes, fmt.Sprintf("%s %s: a client's root operation that makes no call the topology holds: its %d root requests are replayed as answered at once",
				c.Service, c.Operation, c.Requests))
		}
		// The client span's own time outside its callee is the edge's
		// transit; its failures are its call's.
		op.Time, op.FailTime, op.FailFast, op.StopOnFailure = Constant(0), nil, 0, 0
		m.Entry = append(m.Entry, Entry{Service: si, Op: oi, Weight: float64(c.Requests)})
		note := fmt.Sprintf("%s %s: a client whose calls start their own traces (root CLIENT spans): its %d calls are root requests, each sent by the end user to the client, "+
			"which makes the call with no work of its own; a request's latency runs from its first attempt to its last, its outcome is the last one's", c.Service, c.Operation, c.Requests)
		if n := len(op.Calls); n > 1 {
			note += fmt.Sprintf(" (its calls go to %d callees: each request makes each with the share of the requests it had, drawn apart, not one of them)", n)
		}
		notes = append(notes, note)
		if !served[c.Service] {
			unpooled[si] = true
		}
	}
	for _, si := range slices.Sorted(maps.Keys(unpooled)) {
		name := m.Services[si].Name
		m.Services[si].Workers = clientWorkers // --capacity, where given, replaces it
		if _, ok := capacity[name]; ok {
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: no limit on its calls in flight (a client that serves nothing the traces show, so no pool of its own they show); set with --capacity %s=N", name, name))
	}
	return notes, nil
}

// unknownRetriesNote says that edge e's retries are unknown (its calls
// start their own traces and nothing links a retry to the call it
// repeats) and are replayed as none.
func unknownRetriesNote(e graph.Edge) string {
	return fmt.Sprintf("%s → %s %s: whether the client retries is unknown (its calls start their own traces, and nothing links a retry to the call it repeats): "+
		"replayed with the attempts it was read with, one per call, no retries; so the figures that depend on its retries are lower bounds "+
		"(attempts per call, the load on %s, amplification), and where the client did retry its calls succeed more often and take longer than replayed",
		e.Caller, e.Callee, e.Operation, e.Callee)
}
