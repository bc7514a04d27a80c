package degrade

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Schedule is every fault of one run. Faults may overlap in time and
// target the same service; their effects then combine (see Schedule.Effect).
type Schedule []Fault

// ParseAll parses every spec of a run. It reports every bad spec, not only
// the first, joined with errors.Join; each is a *SpecError. No specs is an
// empty schedule: a run without faults.
func ParseAll(specs []string) (Schedule, error) {
	s := make(Schedule, 0, len(specs))
	var errs []error
	for _, spec := range specs {
		f, err := Parse(spec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s = append(s, f)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// Effect is what the active faults do to one attempt. The zero Effect but
// for Slow = 1 is "no fault".
type Effect struct {
	// Fail: the attempt fails fast with 503 (outage mode=error).
	Fail bool
	// NoAnswer: every packet to the service is lost (outage mode=timeout):
	// the caller's TCP retransmits until the connection resets. When
	// overlapping outages set both Fail and NoAnswer, NoAnswer is the one
	// that holds: an attempt that gets no answer cannot also be failed
	// fast.
	NoAnswer bool
	// FailAfterWork: a response the service finishes now is a 5xx, after
	// its work (outage mode=error-after-work).
	FailAfterWork bool
	// ErrorRate is the probability the attempt fails fast (error-rate).
	ErrorRate float64
	// ErrorAfterWork is the probability a response the service finishes
	// now is a 5xx (error-rate mode=error-after-work).
	ErrorAfterWork float64
	// Loss is the probability one transmission of the attempt or of its
	// response is lost (packet-loss); the sender retransmits.
	Loss float64
	// Slow multiplies the service time (slow-shard on this shard,
	// slow-replica on this replica, latency x=); ≥ 1.
	Slow float64
	// Add is added to the service time, in seconds (latency add=).
	Add float64
	// Limit > 0 caps the service's concurrency (db-pool): at most Limit
	// attempts are served at once, the rest queue.
	Limit int
}

// None reports whether e changes nothing.
func (e Effect) None() bool {
	return e == Effect{Slow: 1}
}

// Effect returns what the faults active at time t do to an attempt from
// caller to svc that lands on shard (see PickShard; the replica for a
// service with a slow-replica; 0 for an unpartitioned service). Several active faults combine: probabilities as independent
// events (1-(1-a)(1-b)), multipliers multiply, additions add, and Limit is
// the smallest. A hot-partition has no per-attempt effect: it acts through
// PickShard.
func (s Schedule) Effect(caller, svc string, shard int, t float64) Effect {
	e := Effect{Slow: 1}
	for _, f := range s {
		if f.Service != svc || !f.Active(t) {
			continue
		}
		switch f.Kind {
		case Outage:
			switch f.Mode {
			case ModeTimeout:
				e.NoAnswer = true
			case ModeAfterWork:
				e.FailAfterWork = true
			default:
				e.Fail = true
			}
		case ErrorRate:
			if f.Mode == ModeAfterWork {
				e.ErrorAfterWork = orProb(e.ErrorAfterWork, f.Rate)
			} else {
				e.ErrorRate = orProb(e.ErrorRate, f.Rate)
			}
		case PacketLoss:
			if f.Caller == "" || f.Caller == caller {
				e.Loss = orProb(e.Loss, f.Loss)
			}
		case SlowShard, SlowReplica:
			if shard == f.Shard {
				e.Slow *= f.Factor
			}
		case Latency:
			if f.Factor != 0 {
				e.Slow *= f.Factor
			}
			e.Add += f.Add
		case DBPool:
			if e.Limit == 0 || f.Limit < e.Limit {
				e.Limit = f.Limit
			}
		}
	}
	return e
}

// FailsFast reports whether the fault, while active, can make an
// attempt fail on arrival: set Effect's Fail (an outage that is neither
// timeout nor error-after-work) or its ErrorRate (an error-rate that is
// not error-after-work). No other fault kind sets either.
func (f Fault) FailsFast() bool {
	switch f.Kind {
	case Outage:
		return f.Mode != ModeTimeout && f.Mode != ModeAfterWork
	case ErrorRate:
		return f.Mode != ModeAfterWork
	}
	return false
}

// Varies reports whether what the faults on svc active at t do depends on
// the caller or the shard: packet loss on one edge, a slow shard or
// replica. Otherwise Effect(caller, svc, shard, t) is the same for every
// caller and shard.
func (s Schedule) Varies(svc string, t float64) bool {
	for _, f := range s {
		if f.Service != svc || !f.Active(t) {
			continue
		}
		if f.Kind == SlowShard || f.Kind == SlowReplica || f.Kind == PacketLoss && f.Caller != "" {
			return true
		}
	}
	return false
}

// NextChange is the earliest time after t at which a fault on svc starts
// or ends (+Inf for none): the faults active on svc, and so Effect and
// Varies for svc, are the same from t up to then.
func (s Schedule) NextChange(svc string, t float64) float64 {
	next := math.Inf(1)
	for _, f := range s {
		if f.Service != svc {
			continue
		}
		for _, b := range [2]float64{f.At, f.End()} {
			if b > t {
				next = min(next, b)
			}
		}
	}
	return next
}

// orProb is the probability that at least one of two independent events
// with probabilities a and b happens: 1-(1-a)(1-b), written so that it is
// exactly b when a is 0.
func orProb(a, b float64) float64 {
	return a + b - a*b
}

// Shards returns how many shards svc needs: the largest shards= of the
// slow-shard and hot-partition faults on svc, whenever they are active, or
// 1 when there are none.
func (s Schedule) Shards(svc string) int {
	n := 1
	for _, f := range s {
		if f.Service == svc && (f.Kind == SlowShard || f.Kind == HotPartition) {
			n = max(n, f.Shards)
		}
	}
	return n
}

// Replicas returns how many replicas svc needs: the largest replicas= of
// the slow-replica faults on svc, or 1 when there are none.
func (s Schedule) Replicas(svc string) int {
	n := 1
	for _, f := range s {
		if f.Service == svc && f.Kind == SlowReplica {
			n = max(n, f.Shards)
		}
	}
	return n
}

// Check reports faults that cannot apply together: a service split into
// shards by key (slow-shard, hot-partition) and into replicas picked at
// random (slow-replica) at once; every fault names one of services (the
// model's), else the error lists them.
func (s Schedule) Check(services []string) error {
	var errs []error
	for _, f := range s {
		for _, name := range []string{f.Service, f.Caller} {
			if name != "" && !slices.Contains(services, name) {
				errs = append(errs, fmt.Errorf("degrade %q: the model has no service %q; it has %s", f.String(), name, strings.Join(services, ", ")))
			}
		}
		if f.Kind == SlowReplica && s.Shards(f.Service) > 1 {
			errs = append(errs, fmt.Errorf("degrade %q: %s is split into shards by another fault; slow-replica and slow-shard or hot-partition cannot apply to one service together", f.String(), f.Service))
		}
	}
	return errors.Join(errs...)
}

// PickShard maps u, uniform in [0,1), to the shard of svc an attempt at time
// t lands on, in [0, Shards(svc)). Normally the shards are equally likely.
// While a hot-partition on svc is active, the shard is Zipf-distributed over
// all Shards(svc) shards with the fault's exponent, shard 0 the hottest:
// P(k) ∝ (k+1)^-Skew (with several active hot-partitions, the largest Skew).
// The map is an inverse CDF, so the same u always gives the same shard and
// a larger u never a smaller one.
func (s Schedule) PickShard(svc string, t float64, u float64) int {
	n := s.Shards(svc)
	if n == 1 {
		return 0
	}
	if !(u >= 0) { // also NaN
		u = 0
	}
	skew := 0.0
	for _, f := range s {
		if f.Kind == HotPartition && f.Service == svc && f.Active(t) {
			skew = max(skew, f.Skew)
		}
	}
	if skew == 0 {
		return min(int(u*float64(n)), n-1)
	}
	cdf := zipfCDF(n, skew)
	return min(sort.SearchFloat64s(cdf, math.Nextafter(u, 2)), n-1)
}

type zipfKey struct {
	n    int
	skew float64
}

// zipfCDFs caches the CDFs PickShard uses: a run has only a few
// (shard count, exponent) pairs and asks for them once per attempt.
var zipfCDFs sync.Map // zipfKey -> []float64

// zipfCDF returns the CDF of the Zipf distribution over n ranks with
// exponent skew: cdf[k] = P(rank ≤ k), cdf[n-1] = 1 exactly.
func zipfCDF(n int, skew float64) []float64 {
	key := zipfKey{n, skew}
	if c, ok := zipfCDFs.Load(key); ok {
		return c.([]float64)
	}
	cdf := ZipfPMF(n, skew)
	for k := 1; k < n; k++ {
		cdf[k] += cdf[k-1]
	}
	cdf[n-1] = 1
	c, _ := zipfCDFs.LoadOrStore(key, cdf)
	return c.([]float64)
}

// ZipfPMF returns the Zipf probabilities over n ranks with exponent skew:
// pmf[k] = (k+1)^-skew / Σ_{j=1..n} j^-skew. It is the shard distribution
// of PickShard during a hot-partition.
func ZipfPMF(n int, skew float64) []float64 {
	pmf := make([]float64, n)
	total := 0.0
	for k := range pmf {
		pmf[k] = math.Pow(float64(k+1), -skew)
		total += pmf[k]
	}
	for k := range pmf {
		pmf[k] /= total
	}
	return pmf
}

// Trigger returns the span of all the faults' windows: the earliest start
// and the latest end, +Inf when some fault lasts until the end of the run.
// A background fault, one in force for the whole run (at=0s, for=0s), is
// not part of the trigger when other faults are; the observed timeline
// (the traces' own failures) never is. Recovery time and the metastability
// verdict count from end. ok is false for a schedule without a trigger:
// empty, or only the observed timeline.
func (s Schedule) Trigger() (start, end float64, ok bool) {
	background := func(f Fault) bool { return f.At == 0 && f.For == 0 }
	all := !slices.ContainsFunc(s, func(f Fault) bool { return f.Kind != Observed && !background(f) })
	start, end = math.Inf(1), math.Inf(-1)
	for _, f := range s {
		if f.Kind == Observed {
			continue // the traces' own timeline, not a trigger
		}
		if all || !background(f) {
			start = min(start, f.At)
			end = max(end, f.End())
		}
	}
	if math.IsInf(start, 1) {
		return 0, 0, false
	}
	return start, end, true
}

// Services returns the services the faults name, callers of packet-loss
// edges included, sorted and without duplicates.
func (s Schedule) Services() []string {
	var names []string
	for _, f := range s {
		if f.Service != "" {
			names = append(names, f.Service)
		}
		if f.Caller != "" {
			names = append(names, f.Caller)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
