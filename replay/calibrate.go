package replay

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
	"gonum.org/v1/gonum/stat/distuv"
)

// Tolerances bound how far a replay of the traces may land from them and
// still count as reproducing them.
type Tolerances struct {
	// AttemptsRel and AttemptsAbs: an edge's attempts per call must lie
	// within max(AttemptsRel × traced, AttemptsAbs) of the traced figure.
	AttemptsRel, AttemptsAbs float64
	// ServerErrorPoints bounds the root server-error rate's difference
	// (a share: 0.015 is 1.5 points).
	ServerErrorPoints float64
	// LatencyRel bounds the root p50 and p90, relative to the traced ones,
	// or to the band the traces know them within (graph.RootStats).
	LatencyRel float64
}

// DefaultTolerances are the tolerances calibrate and audit use unless told
// otherwise: attempts per call within max(5%, 0.03), root server-error
// rate within 1.5 points, root p50 and p90 within 25%.
func DefaultTolerances() Tolerances {
	return Tolerances{AttemptsRel: 0.05, AttemptsAbs: 0.03, ServerErrorPoints: 0.015, LatencyRel: 0.25}
}

// DefaultCalibrationSeeds is how many seeds a calibration averages over.
const DefaultCalibrationSeeds = 5

// A calibration run covers at least minCalibrationS of simulated time and
// minCalibrationRoots root requests: short traces are replayed period
// after period until then, so that the replay's own noise (over the five
// seeds, twenty thousand requests) stays well inside the tolerances.
const (
	minCalibrationS     = 60.0
	minCalibrationRoots = 4000
	// maxCalibrationRoots bounds the root requests of one calibration run.
	maxCalibrationRoots = 1e6
)

// CalibrateOptions shape a calibration.
type CalibrateOptions struct {
	// Seeds is how many runs are averaged (default 5), with seeds Seed,
	// Seed+1, …
	Seeds int
	Seed  uint64
	// Tolerances; nil means DefaultTolerances.
	Tolerances *Tolerances
	// Build shapes the model as for any replay; Load and Rate are ignored:
	// calibration replays the traffic the traces saw.
	Build BuildOptions
}

// Calibration compares the traces with a replay of their observed policies
// under their own failure timeline (the observed degradation).
type Calibration struct {
	Seeds      int               `json:"seeds"`
	Tolerances Tolerances        `json:"tolerances"`
	Root       RootCalibration   `json:"root"`
	Edges      []EdgeCalibration `json:"edges"`
	// Arrivals is the arrival process replayed: ArrivalsTimeline (the
	// traces' own root requests, at their times) or ArrivalsPoisson (at
	// the traces' mean rate); the notes say why.
	Arrivals string `json:"arrivals"`
	Pass     bool   `json:"pass"`
	// Misses say, one line each, which figure lies outside its tolerance.
	Misses []string `json:"misses"`
	// Notes are the model's assumptions (capacities, sampling, rate).
	Notes []string `json:"notes"`
}

// RootCalibration is the root requests, traced and replayed, and which
// toleranced figures are within.
type RootCalibration struct {
	Traced      RootFigures `json:"traced"`
	Replayed    RootFigures `json:"replayed"`
	ServerError bool        `json:"server_error_within"`
	P50         bool        `json:"p50_within"`
	P90         bool        `json:"p90_within"`
}

// RootFigures are the root requests' outcomes and latency.
type RootFigures struct {
	Requests        float64 `json:"requests"`
	SuccessRate     float64 `json:"success_rate"`
	ServerErrorRate float64 `json:"server_error_rate"`
	P50MS           float64 `json:"p50_ms"`
	P90MS           float64 `json:"p90_ms"`
	P99MS           float64 `json:"p99_ms"`
	// P50BandMS and P90BandMS (traced only) are the percentiles'
	// distribution-free one-sigma confidence intervals (graph.RootStats).
	P50BandMS *[2]float64 `json:"p50_band_ms,omitempty"`
	P90BandMS *[2]float64 `json:"p90_band_ms,omitempty"`
	// ServerErrorBand (traced only) is the server-error rate's exact
	// one-sigma confidence interval (Clopper–Pearson, from the traced
	// count of root server errors among the roots): how precisely the
	// traces know the rate.
	ServerErrorBand *[2]float64 `json:"server_error_band,omitempty"`
}

// rateBand is the Clopper–Pearson interval of a rate seen k times in n,
// at confidence 1−graph.PercentileBandAlpha (one sigma): it covers the
// true rate with at least that probability whatever it is.
func rateBand(k, n int) [2]float64 {
	if n <= 0 {
		return [2]float64{0, 1}
	}
	a := graph.PercentileBandAlpha / 2
	lo, hi := 0.0, 1.0
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(a)
	}
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - a)
	}
	return [2]float64{math.Round(lo*1e6) / 1e6, math.Round(hi*1e6) / 1e6}
}

// EdgeCalibration is one edge and operation, traced and replayed.
type EdgeCalibration struct {
	Caller    string      `json:"caller"`
	Callee    string      `json:"callee"`
	Operation string      `json:"operation"`
	Traced    EdgeFigures `json:"traced"`
	Replayed  EdgeFigures `json:"replayed"`
	Within    bool        `json:"within"`
}

// EdgeFigures are an edge's calls and attempts.
type EdgeFigures struct {
	Calls           float64 `json:"calls"`
	Attempts        float64 `json:"attempts"`
	AttemptsPerCall float64 `json:"attempts_per_call"`
	FailureRate     float64 `json:"failure_rate"`
}

// Calibrate replays the observed policies of t under the observed
// degradation over several seeds and compares the replay with the traces:
// per edge and operation calls, attempts, attempts per call and failure
// rate; for the roots requests, success and server-error rates, p50, p90
// and p99. Replayed figures are means over the seeds, scaled to the traced
// number of root requests.
func Calibrate(ctx context.Context, t *graph.Topology, o CalibrateOptions) (*Calibration, error) {
	if t.Calibration == nil || t.Calibration.Root.Requests == 0 {
		return nil, fmt.Errorf("the topology carries no traced root requests to calibrate against (written by an older version, or no root spans): infer it again from the traces")
	}
	if o.Seeds <= 0 {
		o.Seeds = DefaultCalibrationSeeds
	}
	if o.Tolerances == nil {
		d := DefaultTolerances()
		o.Tolerances = &d
	}
	b := o.Build
	// The traces' own arrivals where the topology keeps them: a breaker,
	// a budget or a queue answers to bursts a Poisson stream at the mean
	// rate does not have.
	b.Load, b.Rate, b.Arrivals, b.Clients, b.Timeline = 1, 0, nil, 0, true
	unknownRate := t.Calibration.RootRatePerS <= 0 && t.Source.RootRatePerS <= 0
	if unknownRate {
		// One root request, or all within a millisecond: no rate to read.
		// Requests a second apart hardly meet, which is what the traces,
		// with nothing concurrent in them, can be compared with.
		b.Rate = 1
	}
	m, err := FromTopology(t, b)
	if err != nil {
		return nil, err
	}
	if unknownRate {
		m.Assumed = append(m.Assumed, "arrival rate unknown (one root request, or all within a millisecond): replayed at 1 root request/s, so requests hardly meet and capacity is not put to the test")
	}
	rate := m.rootRate()
	duration := max(minCalibrationS, minCalibrationRoots/rate)
	if p := m.TimelinePeriod; p > 0 {
		duration = p * math.Ceil(duration/p)
	}
	if rate*duration > maxCalibrationRoots {
		// A topology claiming an enormous rate (an edited or hostile file)
		// is replayed for as long as a bounded number of requests takes.
		duration = maxCalibrationRoots / rate
		m.Assumed = append(m.Assumed, fmt.Sprintf("replayed for %.3gs only: %.3g root requests/s would make more than %d requests in a minute", duration, rate, int(maxCalibrationRoots)))
	}
	results := make([]Result, o.Seeds)
	err = parallel(o.Seeds, func(i int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		results[i], err = RunContext(ctx, m, degrade.Schedule{{Kind: degrade.Observed}}, RunConfig{Seed: o.Seed + uint64(i), Duration: duration})
		return err
	})
	if err != nil {
		return nil, err
	}
	return compareRuns(t, m, results, o), nil
}

// compareRuns averages the runs, scales them to the traced root requests
// and holds every figure to its tolerance.
func compareRuns(t *graph.Topology, m *Model, runs []Result, o CalibrateOptions) *Calibration {
	tol := *o.Tolerances
	c := &Calibration{Seeds: len(runs), Tolerances: tol, Edges: []EdgeCalibration{}, Misses: []string{}, Notes: m.Assumed, Arrivals: ArrivalsPoisson}
	if len(m.Arrivals) > 0 {
		c.Arrivals = ArrivalsTimeline
	}
	tr := t.Calibration.Root
	c.Root.Traced = RootFigures{Requests: float64(tr.Requests), SuccessRate: tr.SuccessRate, ServerErrorRate: tr.ServerErrorRate,
		P50MS: tr.P50MS, P90MS: tr.P90MS, P99MS: tr.P99MS, P50BandMS: &tr.P50BandMS, P90BandMS: &tr.P90BandMS}
	n := float64(len(runs))
	rep := &c.Root.Replayed
	roots := 0.0
	for _, r := range runs {
		roots += float64(r.RootRequests)
		if r.RootRequests > 0 {
			rep.SuccessRate += r.Availability / n
			rep.ServerErrorRate += float64(r.ServerErrors) / float64(r.RootRequests) / n
		}
		rep.P50MS += r.P50MS / n
		rep.P90MS += r.P90MS / n
		rep.P99MS += r.P99MS / n
	}
	rep.Requests = float64(tr.Requests)
	scale := 0.0
	if roots > 0 {
		scale = float64(tr.Requests) / (roots / n)
	}
	within := func(traced, replayed, rel, abs float64) bool {
		return math.Abs(replayed-traced) <= math.Max(rel*traced, abs)+1e-9
	}
	// The server-error rate is within ServerErrorPoints of the traced
	// one, or of a rate in its confidence interval: a few dozen roots
	// cannot place it more precisely (3 errors in 70 roots: 2.0–8.3%), as
	// the percentiles' bands say for latency.
	band := rateBand(int(math.Round(tr.ServerErrorRate*float64(tr.Requests))), tr.Requests)
	c.Root.Traced.ServerErrorBand = &band
	c.Root.ServerError = within(tr.ServerErrorRate, rep.ServerErrorRate, 0, tol.ServerErrorPoints) ||
		rep.ServerErrorRate >= band[0]-tol.ServerErrorPoints-1e-9 && rep.ServerErrorRate <= band[1]+tol.ServerErrorPoints+1e-9
	// A percentile is within when it is within LatencyRel of the traced one,
	// or of a value in the traced percentile's confidence interval: the
	// traces cannot place the percentile more precisely than that (where
	// it falls in a gap between clusters, the interval spans the gap).
	inBand := func(traced, replayed float64, band [2]float64) bool {
		return within(traced, replayed, tol.LatencyRel, 0) ||
			band[1] > 0 && replayed >= band[0]*(1-tol.LatencyRel)-1e-9 && replayed <= band[1]*(1+tol.LatencyRel)+1e-9
	}
	c.Root.P50 = inBand(tr.P50MS, rep.P50MS, tr.P50BandMS)
	c.Root.P90 = inBand(tr.P90MS, rep.P90MS, tr.P90BandMS)
	// Attempts that ran in another request's context are left out of the
	// calls the model is built from (graph's context leaks): those calls
	// show fewer attempts than they made, and a miss may be theirs.
	leaked := 0
	for _, e := range t.Edges {
		leaked += e.LeakedAttempts
	}
	leakNote := ""
	if leaked > 0 {
		leakNote = fmt.Sprintf(" — %d attempts ran in other requests' contexts (context leaks) and are missing from the calls the model is built from", leaked)
		c.Notes = append(slices.Clip(c.Notes), fmt.Sprintf("%d attempts ran in other requests' contexts (context leaks): the traced calls they belong to show fewer attempts than they made, so the replay is held to incomplete calls", leaked))
	}
	if !c.Root.ServerError {
		c.Misses = append(c.Misses, fmt.Sprintf("root server-error rate %.1f%% replayed vs %.1f%% traced (the traces place it within %.1f–%.1f%%; tolerance %.1f points)",
			100*rep.ServerErrorRate, 100*tr.ServerErrorRate, 100*band[0], 100*band[1], 100*tol.ServerErrorPoints)+leakNote)
	}
	for _, q := range []struct {
		name             string
		ok               bool
		traced, replayed float64
		band             [2]float64
	}{{"p50", c.Root.P50, tr.P50MS, rep.P50MS, tr.P50BandMS}, {"p90", c.Root.P90, tr.P90MS, rep.P90MS, tr.P90BandMS}} {
		if !q.ok {
			c.Misses = append(c.Misses, fmt.Sprintf("root %s %.1fms replayed vs %.1fms traced (%+.0f%%; the traces place it within %.1f–%.1fms; tolerance %.0f%%)",
				q.name, q.replayed, q.traced, 100*(q.replayed/q.traced-1), q.band[0], q.band[1], 100*tol.LatencyRel)+leakNote)
		}
	}
	k := 0
	for _, e := range t.Edges {
		if e.Caller == "user" {
			continue
		}
		ec := EdgeCalibration{Caller: e.Caller, Callee: e.Callee, Operation: e.Operation,
			Traced: EdgeFigures{Calls: float64(e.Calls), Attempts: float64(e.Attempts), FailureRate: tracedFailureRate(e)}}
		if e.Calls > 0 {
			ec.Traced.AttemptsPerCall = float64(e.Attempts) / float64(e.Calls)
		}
		attempts, retries, failed := 0.0, 0.0, 0.0
		for _, r := range runs {
			a := r.Attempts[k]
			attempts += float64(a.Attempts)
			retries += float64(a.Retries)
			failed += float64(a.Failed)
		}
		k++
		calls := attempts - retries
		ec.Replayed = EdgeFigures{Calls: calls / n * scale, Attempts: attempts / n * scale}
		if calls > 0 {
			ec.Replayed.AttemptsPerCall = attempts / calls
		}
		if attempts > 0 {
			ec.Replayed.FailureRate = failed / attempts
		}
		ec.Within = within(ec.Traced.AttemptsPerCall, ec.Replayed.AttemptsPerCall, tol.AttemptsRel, tol.AttemptsAbs)
		if !ec.Within {
			miss := fmt.Sprintf("%s → %s %s: %.3f attempts per call replayed vs %.3f traced (tolerance ±%.3f)",
				e.Caller, e.Callee, e.Operation, ec.Replayed.AttemptsPerCall, ec.Traced.AttemptsPerCall,
				math.Max(tol.AttemptsRel*ec.Traced.AttemptsPerCall, tol.AttemptsAbs))
			if e.LeakedAttempts > 0 {
				miss += fmt.Sprintf(" — %d of its attempts ran in other requests' contexts (context leaks): its traced calls show fewer attempts than they made", e.LeakedAttempts)
			} else {
				miss += leakNote
			}
			c.Misses = append(c.Misses, miss)
		}
		c.Edges = append(c.Edges, ec)
	}
	c.Pass = len(c.Misses) == 0
	return c
}

// tracedFailureRate is the share of edge e's attempts the replay draws
// failed: those that failed, and the answers its caller retried on their
// result, which the replay draws as retryable failures (graph.Edge.FailureRate
// counts only the callee's failures).
func tracedFailureRate(e graph.Edge) float64 {
	r := e.ResultRetries
	if r == nil || e.Attempts == 0 {
		return e.FailureRate
	}
	return math.Round((e.FailureRate+float64(r.Retries)/float64(e.Attempts))*1000) / 1000
}
