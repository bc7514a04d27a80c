package replay

import (
	"math"
	"math/bits"
	"slices"
	"sync"
)

// RunConfig is what one run needs besides the model and the faults. Zero
// values take the defaults of the constants below (Run fills them in).
type RunConfig struct {
	Seed uint64
	// Duration is how long root requests arrive, in seconds; Drain is how
	// long the run continues afterwards for work in flight (the figures
	// are taken at Duration + Drain).
	Duration, Drain float64
	// RetryAfter is the Retry-After a service sends with a 503 when it
	// sheds or is down, in seconds.
	RetryAfter float64
	// The verdict (see judge): Share is the share of the pre-trigger
	// success rate goodput must regain to recover, CollapseShare the share
	// it stays under when collapsed; Window is the length of the window
	// that must show a recovery, with the queues drained; Settle is how
	// long after the trigger a collapse may first be declared; MaxJudge
	// is how long after the trigger arrivals may go on while the backlog
	// drains and the verdict is open.
	Share, CollapseShare, Window, Settle, MaxJudge float64
	// The network: RTO is TCP's first retransmission timeout, doubling
	// with each loss; after Retransmits lost retransmissions the
	// connection resets and the attempt fails. CancelDelay is how long a
	// cancel takes to reach the server when the model has no Hop.
	RTO         float64
	Retransmits int
	CancelDelay float64
	// MaxEvents bounds the run's events: Run refuses a run whose estimate
	// exceeds it, and stops one that passes it.
	MaxEvents int
}

// Series is a run's per-second time series, over the seconds with
// arrivals (the last bucket takes the drain). A run whose verdict needed
// more time than its duration has more seconds than its duration.
type Series struct {
	Originals  []int     `json:"originals"`   // root requests offered
	Retries    []int     `json:"retries"`     // retry attempts sent, all layers
	Goodput    []int     `json:"goodput"`     // root requests that succeeded in time
	QueueDepth []int     `json:"queue_depth"` // jobs queued, all services, and root requests waiting for the client's limit on requests in flight, at the second's end
	Wasted     []float64 `json:"wasted_s"`    // service-seconds found wasted in the second
}

// metrics accumulates one run's figures. The figures (all but the series)
// stop at the nominal horizon (frozen) and count only root requests that
// arrived within the run's duration.
type metrics struct {
	roots, ok, failed         int
	clientErrors              int
	edgeFailed, edgeGivenUp   []int
	latencies                 []float64
	firstAttempts, retries    int
	edgeAttempts, edgeRetries []int
	edgeSeries                [][]int // attempts sent per edge per second
	nBudget, nBreaker         int
	nOverflow                 int
	shedN, lateN, hedges      int
	workS, wastedS            float64
	series                    Series
	frozen                    bool
}

func (m *metrics) init(duration float64, edges, expectedRoots int) {
	n := int(math.Ceil(duration)) + 1
	m.series = Series{Originals: make([]int, n), Retries: make([]int, n), Goodput: make([]int, n),
		QueueDepth: make([]int, n), Wasted: make([]float64, n)}
	m.edgeAttempts = make([]int, edges)
	m.latencies = takeFloats(expectedRoots)
	m.edgeRetries = make([]int, edges)
	m.edgeFailed = make([]int, edges)
	m.edgeGivenUp = make([]int, edges)
	m.edgeSeries = make([][]int, edges)
	for i := range m.edgeSeries {
		m.edgeSeries[i] = make([]int, n)
	}
}

// spareFloats holds latency lists of finished runs (*[]float64) for the
// next ones: a long run's is megabytes, which as a new allocation each
// run cost the pages' first touch, their zeroing and the collector's
// work, in every one of an audit's thousand runs.
var spareFloats sync.Pool

// takeFloats returns an empty list with room for n values, a spare one
// if it is large enough.
func takeFloats(n int) []float64 {
	if p, ok := spareFloats.Get().(*[]float64); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]float64, 0, n)
}

// release gives the run's latency list to the next run: the figures are
// taken (result), and nothing refers to it.
func (m *metrics) release() {
	l := m.latencies[:0]
	m.latencies = nil
	spareFloats.Put(&l)
}

// sec is the series bucket of time t (the last bucket takes the drain).
func (m *metrics) sec(t float64) int {
	return min(int(t), len(m.series.Goodput)-1)
}

// rootStarted counts a root request; counted: it arrived within the run's
// duration and counts in the figures.
func (m *metrics) rootStarted(t float64, counted bool) {
	if counted {
		m.roots++
	}
	m.series.Originals[m.sec(t)]++
}

// rootDone records a root request's end. clientErr: it failed with a
// client error (a 4xx), not a loss of availability on the server side.
// counted: it arrived within the run's duration (the figures count only
// those; goodput's series counts every success).
func (m *metrics) rootDone(start, t float64, ok, clientErr, counted bool) {
	if ok {
		m.series.Goodput[m.sec(t)]++
	}
	if !counted || m.frozen {
		return
	}
	m.latencies = append(m.latencies, t-start)
	switch {
	case ok:
		m.ok++
	case clientErr:
		m.failed++
		m.clientErrors++
	default:
		m.failed++
	}
}

func (m *metrics) attemptFailed(edge int32) { m.edgeFailed[edge]++ }

// inFlight counts a root request still waiting at the horizon as failed
// after latency.
func (m *metrics) inFlight(latency float64) {
	m.latencies = append(m.latencies, latency)
	m.failed++
}

func (m *metrics) attemptSent(edge int32, retry bool, t float64) {
	if retry {
		m.series.Retries[m.sec(t)]++
	}
	if m.frozen {
		return
	}
	m.edgeAttempts[edge]++
	m.edgeSeries[edge][m.sec(t)]++
	if retry {
		m.retries++
		m.edgeRetries[edge]++
	} else {
		m.firstAttempts++
	}
}

func (m *metrics) gaveUp(edge int32) {
	if !m.frozen {
		m.edgeGivenUp[edge]++
	}
}

func (m *metrics) refusedBudget(int32, float64) {
	if !m.frozen {
		m.nBudget++
	}
}

func (m *metrics) overflowed(float64) {
	if !m.frozen {
		m.nOverflow++
	}
}

func (m *metrics) refusedBreaker(int32, float64) {
	if !m.frozen {
		m.nBreaker++
	}
}

func (m *metrics) shed(float64) {
	if !m.frozen {
		m.shedN++
	}
}

func (m *metrics) droppedLate(float64) {
	if !m.frozen {
		m.lateN++
	}
}

func (m *metrics) hedged(int32) {
	if !m.frozen {
		m.hedges++
	}
}

// work counts service time done.
func (m *metrics) work(w float64) {
	if !m.frozen {
		m.workS += w
	}
}

// waste counts service time found, at t, not to contribute to a root
// request's success.
func (m *metrics) waste(w, t float64) {
	if w == 0 {
		return
	}
	m.series.Wasted[m.sec(t)] += w
	if !m.frozen {
		m.wastedS += w
	}
}

func (m *metrics) queueDepth(t float64, q int) {
	if s := int(t) - 1; s >= 0 && s < len(m.series.QueueDepth)-1 {
		m.series.QueueDepth[s] = q
	}
}

// trim cuts the series to the seconds with arrivals, folding the later
// buckets' counts into the last one.
func (m *metrics) trim(arrivalEnd float64) {
	n := int(math.Ceil(arrivalEnd)) + 1
	ser := &m.series
	if n >= len(ser.Goodput) {
		return
	}
	last := n - 1
	for k := n; k < len(ser.Goodput); k++ {
		ser.Originals[last] += ser.Originals[k]
		ser.Retries[last] += ser.Retries[k]
		ser.Goodput[last] += ser.Goodput[k]
		ser.Wasted[last] += ser.Wasted[k]
	}
	ser.QueueDepth[last] = 0
	ser.Originals, ser.Retries, ser.Goodput = ser.Originals[:n], ser.Retries[:n], ser.Goodput[:n]
	ser.QueueDepth, ser.Wasted = ser.QueueDepth[:n], ser.Wasted[:n]
}

// EdgeAttempts is how many attempts one edge sent in a run.
type EdgeAttempts struct {
	Edge     string `json:"edge"`
	Attempts int    `json:"attempts"`
	Retries  int    `json:"retries"`
	Failed   int    `json:"failed"`
	// GivenUp counts the calls the client ended on a failure with
	// attempts left, by its policy's GiveUp shares.
	GivenUp int `json:"given_up,omitempty"`
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
	// Overflowed are the attempts an edge's limit on requests out failed
	// at once (Policy.MaxRequests; Envoy's UO), never sent.
	Overflowed int `json:"overflowed,omitempty"`

	// Triggered says the run had a fault that started and ended in time
	// to judge recovery: Verdict is then recovered or collapsed.
	Triggered bool `json:"triggered"`
	// Verdict is the run's verdict (see Judge): recovered, collapsed,
	// not judged (with the reason in VerdictNote), or no trigger.
	Verdict     string `json:"verdict"`
	VerdictNote string `json:"verdict_note,omitempty"`
	// JudgedToS is the last second the verdict looked at; past the run's
	// duration when arrivals went on while the backlog drained.
	JudgedToS float64 `json:"judged_to_s"`
	// Trigger is the span of the faults' windows; nil without a trigger.
	Trigger *Window `json:"trigger,omitempty"`
	// RecoveryS is how long after the trigger ended goodput was back
	// within the share and the queues drained; nil unless recovered.
	RecoveryS *float64 `json:"recovery_s"`
	// Metastable: the run collapsed (exactly when Verdict is collapsed).
	Metastable bool `json:"metastable"`
	// Yield is availability gained per unit of extra work against policy
	// none on the same degradation and seed; nil where undefined.
	Yield *float64 `json:"yield"`

	Events    int       `json:"events"`
	Mechanics Mechanics `json:"mechanics"`
	Series    Series    `json:"series"`
}

// result turns the accumulated metrics into a Result.
func (s *sim) result() Result {
	m := &s.met
	m.trim(s.arrivalEnd)
	r := Result{Seed: s.cfg.Seed, RootRequests: m.roots, Succeeded: m.ok, WorkS: m.workS, WastedS: m.wastedS,
		RefusedByBudget: m.nBudget, RefusedByBreaker: m.nBreaker, Overflowed: m.nOverflow, Shed: m.shedN, DroppedLate: m.lateN,
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
	p50, p90, p95, p99 := percentiles(m.latencies)
	r.P50MS, r.P90MS, r.P95MS, r.P99MS = 1000*p50, 1000*p90, 1000*p95, 1000*p99
	for i, e := range s.m.Edges {
		r.Attempts = append(r.Attempts, EdgeAttempts{Edge: s.m.Services[e.Caller].Name + " → " + s.m.Services[e.Callee].Name,
			Attempts: m.edgeAttempts[i], Retries: m.edgeRetries[i], Failed: m.edgeFailed[i], GivenUp: m.edgeGivenUp[i], Callee: s.m.Services[e.Callee].Name, PerSecond: m.edgeSeries[i]})
	}
	if start, end, ok := s.faults.Trigger(); ok {
		r.Trigger = &Window{AtS: start}
		if !math.IsInf(end, 1) {
			r.Trigger.ForS = end - start
		}
	}
	v := s.verdict
	if v.state == "" {
		upTo := math.Floor(max(s.arrivalEnd, 1))
		v = judge(m.series, s.faults, upTo, s.cfg, true, 0)
	}
	r.Verdict, r.VerdictNote, r.RecoveryS, r.JudgedToS = v.state, v.note, v.recovery, v.upTo
	r.Metastable = v.state == VerdictCollapsed
	r.Triggered = v.state == VerdictCollapsed || v.state == VerdictRecovered
	r.Mechanics = mechanicsOf(s.m, s.faults, s.cfg)
	return r
}

// percentiles returns the nearest-rank p50, p90, p95 and p99 of xs
// (reordering it): the same values a full sort gives, in linear time.
// Latencies are never NaN. A long list is bucketed by the top bits of
// each value's order-preserving bit pattern (sign, exponent and four
// mantissa bits: 16 buckets an octave) in one counting pass, which names
// the bucket that holds each rank; the values of those few buckets are
// moved to the front and the ranks selected among them alone. A short
// one goes straight to selection.
func percentiles(xs []float64) (p50, p90, p95, p99 float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0, 0, 0
	}
	r := [4]int{rank(n, 0.5), rank(n, 0.9), rank(n, 0.95), rank(n, 0.99)}
	if n < pctDirect {
		// Lowest rank first: each selection leaves everything above its
		// rank after it, so the next searches only that tail.
		p50 = selectRank(xs, r[0])
		p90 = selectRank(xs[r[0]:], r[1]-r[0])
		p95 = selectRank(xs[r[1]:], r[2]-r[1])
		p99 = selectRank(xs[r[2]:], r[3]-r[2])
		return p50, p90, p95, p99
	}
	cp := spareCounts.Get().(*[1 << pctBits]int32)
	defer spareCounts.Put(cp)
	cnt := cp[:]
	clear(cnt)
	for _, x := range xs {
		cnt[orderKey(x)>>(64-pctBits)]++
	}
	// The bucket of each rank, and how many values lie in lower buckets.
	var bucket, below [4]int
	acc, k := 0, 0
	for b, c := range cnt {
		for k < len(r) && r[k] < acc+int(c) {
			bucket[k], below[k] = b, acc
			k++
		}
		if k == len(r) {
			break
		}
		acc += int(c)
	}
	// The ranks' buckets, distinct and ascending as the ranks are, become
	// classes 0..nt-1, marked in cnt (its counts are spent) as -1-class.
	var class [4]int      // each rank's
	var start, end [4]int // each class's values go to xs[start:end]
	nt, off := 0, 0
	for k, b := range bucket {
		if nt == 0 || bucket[k-1] != b {
			start[nt], end[nt] = off, off+int(cnt[b])
			off = end[nt]
			cnt[b] = int32(-1 - nt)
			nt++
		}
		class[k] = nt - 1
	}
	classOf := func(x float64) int { return int(-1 - cnt[orderKey(x)>>(64-pctBits)]) }
	// Move the classes' values to the front, then each to its own range
	// (a cycle of swaps per misplaced value).
	w := 0
	for i, x := range xs {
		if classOf(x) >= 0 {
			xs[w], xs[i] = x, xs[w]
			w++
		}
	}
	next := start
	for t := range nt {
		for next[t] < end[t] {
			u := classOf(xs[next[t]])
			if u != t {
				xs[next[t]], xs[next[u]] = xs[next[u]], xs[next[t]]
			}
			next[u]++
		}
	}
	var out [4]float64
	for k, t := range class {
		out[k] = selectRank(xs[start[t]:end[t]], r[k]-below[k])
	}
	return out[0], out[1], out[2], out[3]
}

// spareCounts holds percentiles' bucket counts (256 KB) for the next
// call, for the reason of spareFloats.
var spareCounts = sync.Pool{New: func() any { return new([1 << pctBits]int32) }}

// pctDirect is the length under which percentiles selects directly;
// pctBits the width of its buckets' index.
const (
	pctDirect = 1 << 13
	pctBits   = 16
)

// orderKey maps x to an unsigned integer in the same order as the
// values (negative ones below positive ones, -0 just below +0).
func orderKey(x float64) uint64 {
	b := math.Float64bits(x)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
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
