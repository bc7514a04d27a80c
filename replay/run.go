package replay

import (
	"fmt"
	"math"

	"github.com/retryaudit/retryaudit/degrade"
)

// Defaults of RunConfig.
const (
	DefaultDuration   = 60.0
	DefaultDrain      = 10.0
	DefaultRetryAfter = 1.0
	DefaultSettle     = 10.0
	DefaultWindow     = 5.0
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
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.Settle <= 0 {
		c.Settle = DefaultSettle
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	return c
}

// Run simulates the model under the faults. The same model, faults and
// config (seed included) give the same Result, bit for bit.
func Run(m *Model, faults degrade.Schedule, cfg RunConfig) (Result, error) {
	if err := m.Validate(); err != nil {
		return Result{}, err
	}
	cfg = cfg.withDefaults()
	s := newSim(m, faults, cfg)
	s.run()
	return s.result(), nil
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

// verdict reads recovery time and metastability from the series. Goodput
// is judged as a share of the requests offered in the same seconds, so
// Poisson noise in arrivals, which moves both alike, does not pass for a
// collapse: the system is healthy while that share stays at 90% or more of
// what it was before the trigger.
func verdict(ser Series, faults degrade.Schedule, cfg RunConfig) (*float64, bool) {
	start, end, ok := faults.Trigger()
	if !ok || math.IsInf(end, 1) {
		return nil, false
	}
	limit := int(cfg.Duration) // seconds with arrivals
	from, to := max(1, int(start)-10), int(start)
	if to <= from || to > limit {
		return nil, false
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
		return nil, false
	}
	var recovery *float64
	for s := int(math.Ceil(end)); s+2 <= limit; s++ {
		if share(s, s+2) >= 0.9*pre {
			r := float64(s) - end
			recovery = &r
			break
		}
	}
	a, b := int(math.Ceil(end+cfg.Settle)), int(math.Ceil(end+cfg.Settle+cfg.Window))
	if b > limit {
		return recovery, false
	}
	return recovery, share(a, b) < 0.9*pre
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
