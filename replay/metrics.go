package replay

import (
	"math"
	"math/bits"
	"slices"
)

// RunConfig is what one run needs besides the model and the faults.
type RunConfig struct {
	Seed uint64
	// Duration is how long root requests arrive, in seconds; Drain is how
	// long the run continues afterwards for work in flight.
	Duration, Drain float64
	// RetryAfter is the Retry-After a service sends with a 503 when it
	// sheds or is down, in seconds.
	RetryAfter float64
	// Settle and Window place the metastability verdict: goodput over
	// [trigger end + Settle, + Window] against before the trigger.
	Settle, Window float64
}

// Series is a run's per-second time series.
type Series struct {
	Originals  []int     `json:"originals"`   // root requests offered
	Retries    []int     `json:"retries"`     // retry attempts sent, all layers
	Goodput    []int     `json:"goodput"`     // root requests that succeeded in time
	QueueDepth []int     `json:"queue_depth"` // jobs queued, all services, at the second's end
	Wasted     []float64 `json:"wasted_s"`    // service-seconds spent for callers who left
}

// metrics accumulates one run's figures.
type metrics struct {
	roots, ok, failed         int
	clientErrors              int
	edgeFailed                []int
	latencies                 []float64
	firstAttempts, retries    int
	edgeAttempts, edgeRetries []int
	edgeSeries                [][]int // attempts sent per edge per second
	nBudget, nBreaker         int
	shedN, lateN, hedges      int
	workS, wastedS            float64
	series                    Series
}

func (m *metrics) init(duration float64, edges, expectedRoots int) {
	n := int(math.Ceil(duration)) + 1
	m.series = Series{Originals: make([]int, n), Retries: make([]int, n), Goodput: make([]int, n),
		QueueDepth: make([]int, n), Wasted: make([]float64, n)}
	m.edgeAttempts = make([]int, edges)
	m.latencies = make([]float64, 0, expectedRoots)
	m.edgeRetries = make([]int, edges)
	m.edgeFailed = make([]int, edges)
	m.edgeSeries = make([][]int, edges)
	for i := range m.edgeSeries {
		m.edgeSeries[i] = make([]int, n)
	}
}

// sec is the series bucket of time t (the last bucket takes the drain).
func (m *metrics) sec(t float64) int {
	return min(int(t), len(m.series.Goodput)-1)
}

func (m *metrics) rootStarted(t float64) {
	m.roots++
	m.series.Originals[m.sec(t)]++
}

// rootDone records a root request's end; clientErr: it failed with a
// client error (a 4xx), not a loss of availability on the server side.
func (m *metrics) rootDone(start, t float64, ok, clientErr bool) {
	m.latencies = append(m.latencies, t-start)
	switch {
	case ok:
		m.ok++
		m.series.Goodput[m.sec(t)]++
	case clientErr:
		m.failed++
		m.clientErrors++
	default:
		m.failed++
	}
}

func (m *metrics) attemptFailed(edge int32) { m.edgeFailed[edge]++ }

func (m *metrics) attemptSent(edge int32, retry bool, t float64) {
	m.edgeAttempts[edge]++
	m.edgeSeries[edge][m.sec(t)]++
	if retry {
		m.retries++
		m.edgeRetries[edge]++
		m.series.Retries[m.sec(t)]++
	} else {
		m.firstAttempts++
	}
}

func (m *metrics) refusedBudget(int32, float64)  { m.nBudget++ }
func (m *metrics) refusedBreaker(int32, float64) { m.nBreaker++ }
func (m *metrics) shed(float64)                  { m.shedN++ }
func (m *metrics) droppedLate(float64)           { m.lateN++ }
func (m *metrics) hedged(int32)                  { m.hedges++ }

func (m *metrics) work(_ int32, work, wasted, t float64) {
	m.workS += work
	m.wastedS += wasted
	m.series.Wasted[m.sec(t)] += wasted
}

func (m *metrics) queueDepth(t float64, q int) {
	if s := int(t) - 1; s >= 0 && s < len(m.series.QueueDepth) {
		m.series.QueueDepth[s] = q
	}
}

// EdgeAttempts is how many attempts one edge sent in a run.
type EdgeAttempts struct {
	Edge     string `json:"edge"`
	Attempts int    `json:"attempts"`
	Retries  int    `json:"retries"`
	Failed   int    `json:"failed"`
	// Callee names the service the attempts went to; PerSecond counts
	// them by the second they were sent in (the audit's load forecast).
	Callee    string `json:"-"`
	PerSecond []int  `json:"-"`
}

// Window is when a run's faults were in force: from AtS for ForS seconds
// (ForS 0: until the end of the run).
type Window struct {
	AtS  float64 `json:"at_s"`
	ForS float64 `json:"for_s"`
}

// Result is one run's figures.
type Result struct {
	Policy      string `json:"policy"`
	Degradation string `json:"degradation"`
	Seed        uint64 `json:"seed"`

	RootRequests int `json:"root_requests"`
	Succeeded    int `json:"succeeded"`
	// ServerErrors are root requests that failed other than with a
	// client error (5xx, error status, past the end user's deadline).
	ServerErrors int     `json:"server_errors"`
	Availability float64 `json:"availability"`
	// Goodput is root successes per second over the arrival window.
	Goodput float64 `json:"goodput_per_s"`
	// WorkS is service-seconds consumed; WorkAmplification divides it by
	// the work of the same arrivals with no fault and no retries.
	WorkS             float64 `json:"work_s"`
	WorkAmplification float64 `json:"work_amplification"`
	RetryShare        float64 `json:"retry_share"`
	WastedS           float64 `json:"wasted_work_s"`
	MeanMS            float64 `json:"mean_ms"`
	P50MS             float64 `json:"p50_ms"`
	P90MS             float64 `json:"p90_ms"`
	P95MS             float64 `json:"p95_ms"`
	P99MS             float64 `json:"p99_ms"`

	Attempts         []EdgeAttempts `json:"attempts_per_layer"`
	RefusedByBudget  int            `json:"retries_refused_by_budget"`
	RefusedByBreaker int            `json:"attempts_refused_by_breaker"`
	Shed             int            `json:"shed"`
	DroppedLate      int            `json:"dropped_past_deadline"`
	Hedges           int            `json:"hedges"`

	// Triggered says the run had a fault that started and ended within it,
	// so recovery and metastability were judged.
	Triggered bool `json:"triggered"`
	// Trigger is the span of the faults' windows; nil without faults.
	Trigger *Window `json:"trigger,omitempty"`
	// RecoveryS is how long after the trigger ended goodput came back to
	// 90% of its level before the trigger; nil if it never did in the run.
	RecoveryS *float64 `json:"recovery_s"`
	// Metastable: goodput still under 90% of its pre-trigger level Settle
	// seconds after the trigger ended.
	Metastable bool `json:"metastable"`
	// Yield is availability gained per unit of extra work against policy
	// none on the same degradation and seed; nil where undefined.
	Yield *float64 `json:"yield"`

	Events int    `json:"events"`
	Series Series `json:"series"`
}

// result turns the accumulated metrics into a Result.
func (s *sim) result() Result {
	m := &s.met
	r := Result{Seed: s.cfg.Seed, RootRequests: m.roots, Succeeded: m.ok, WorkS: m.workS, WastedS: m.wastedS,
		RefusedByBudget: m.nBudget, RefusedByBreaker: m.nBreaker, Shed: m.shedN, DroppedLate: m.lateN,
		Hedges: m.hedges, Events: s.ends, Series: m.series, ServerErrors: m.failed - m.clientErrors}
	if m.roots > 0 {
		r.Availability = float64(m.ok) / float64(m.roots)
	}
	r.Goodput = float64(m.ok) / s.cfg.Duration
	if all := m.firstAttempts + m.retries; all > 0 {
		r.RetryShare = float64(m.retries) / float64(all)
	}
	if len(m.latencies) > 0 {
		sum := 0.0
		for _, l := range m.latencies {
			sum += l
		}
		r.MeanMS = 1000 * sum / float64(len(m.latencies))
	}
	// Nearest-rank percentiles by selection, highest first so that each
	// selection narrows the next: the same values a full sort gives, in
	// linear time.
	if n := len(m.latencies); n > 0 {
		r.P99MS = 1000 * selectRank(m.latencies, rank(n, 0.99))
		r.P95MS = 1000 * selectRank(m.latencies[:rank(n, 0.99)+1], rank(n, 0.95))
		r.P90MS = 1000 * selectRank(m.latencies[:rank(n, 0.95)+1], rank(n, 0.9))
		r.P50MS = 1000 * selectRank(m.latencies[:rank(n, 0.9)+1], rank(n, 0.5))
	}
	for i, e := range s.m.Edges {
		r.Attempts = append(r.Attempts, EdgeAttempts{Edge: s.m.Services[e.Caller].Name + " → " + s.m.Services[e.Callee].Name,
			Attempts: m.edgeAttempts[i], Retries: m.edgeRetries[i], Failed: m.edgeFailed[i],
			Callee: s.m.Services[e.Callee].Name, PerSecond: m.edgeSeries[i]})
	}
	r.RecoveryS, r.Metastable = verdict(m.series, s.faults, s.cfg)
	if start, end, ok := s.faults.Trigger(); ok {
		r.Trigger = &Window{AtS: start}
		if !math.IsInf(end, 1) {
			r.Trigger.ForS = end - start
			r.Triggered = start < s.cfg.Duration
		}
	}
	return r
}

// rank is the index of the nearest-rank p-th percentile among n sorted
// values (0 when n is 0).
func rank(n int, p float64) int {
	return max(int(math.Ceil(p*float64(n)))-1, 0)
}

// selectRank reorders xs so that xs[k] is the value a sort would put
// there, everything before it ≤ and everything after it ≥, and returns it
// (0 for an empty xs). It is quickselect with a median-of-three pivot and
// three-way partitioning (runs of equal latencies are common), falling
// back to a sort if the partitions stop shrinking.
func selectRank(xs []float64, k int) float64 {
	if len(xs) == 0 {
		return 0
	}
	lo, hi := 0, len(xs) // the answer is in xs[lo:hi]
	for budget := 2 * bits.Len(uint(len(xs))); hi-lo > 16; budget-- {
		if budget == 0 {
			slices.Sort(xs[lo:hi])
			return xs[k]
		}
		a, b, c := xs[lo], xs[lo+(hi-lo)/2], xs[hi-1]
		pivot := max(min(a, b), min(max(a, b), c))
		// xs[lo:lt] < pivot, xs[lt:i] == pivot, xs[gt:hi] > pivot.
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch x := xs[i]; {
			case x < pivot:
				xs[lt], xs[i] = xs[i], xs[lt]
				lt++
				i++
			case x > pivot:
				gt--
				xs[gt], xs[i] = xs[i], xs[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return pivot
		}
	}
	slices.Sort(xs[lo:hi])
	return xs[k]
}
