package audit

import (
	"math"

	"github.com/retryaudit/retryaudit/replay"
)

// Stat is a figure over the seeds: its mean, min and max.
type Stat struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

func statOf(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := Stat{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	return s
}

// Overlaps reports whether the seed ranges of s and o overlap: their
// difference is within the seed noise, which benchstat shows as "~".
func (s Stat) Overlaps(o Stat) bool { return s.Min <= o.Max && o.Min <= s.Max }

// Spread is max − min.
func (s Stat) Spread() float64 { return s.Max - s.Min }

// Verdict is one policy under one degradation, over the seeds: a row of
// the capacity plan.
type Verdict struct {
	Degradation string `json:"degradation"`
	// Service is the degraded dependency (the first fault's service).
	Service        string `json:"service"`
	Policy         string `json:"policy"`
	Seeds          int    `json:"seeds"`
	CollapsedSeeds int    `json:"collapsed_seeds"`
	Availability   Stat   `json:"availability"`
	// AvailabilityBySeed is each seed's availability, in the order of the
	// seeds, of which Availability is the statistics: the ranking pairs
	// two policies' figures seed by seed (the same arrivals and faults).
	AvailabilityBySeed []float64 `json:"availability_by_seed"`
	// ExtraWork is work amplification minus that of policy none on the
	// same degradation and seed.
	ExtraWork Stat `json:"extra_work"`
	P99MS     Stat `json:"p99_ms"`
	// PeakOfferedMultiplier is the load forecast: the most attempts per
	// second offered to the dependency during the trigger ÷ its attempts
	// per second in the 10 s before, mean over the seeds; nil without a
	// trigger or traffic before it.
	PeakOfferedMultiplier *float64 `json:"peak_offered_multiplier"`
	// CriticalUtilization: see Critical; nil when it recovers at SearchHigh
	// (or when not searched: CriticalSearched false, CriticalNote why).
	CriticalUtilization *float64 `json:"critical_utilization"`
	// CriticalBySeed is each seed's own critical utilization, in the order
	// of the seeds (nil: recovered at SearchHigh), of which
	// CriticalUtilization is the lowest: its spread over the seeds, which
	// the ranking reads as its uncertainty. Empty when not searched.
	CriticalBySeed   []*float64 `json:"critical_utilization_by_seed,omitempty"`
	CriticalSearched bool       `json:"critical_utilization_searched"`
	CriticalNote     string     `json:"critical_utilization_note,omitempty"`
	// Probes are the utilizations the search tried, by utilization.
	Probes []Probe `json:"probes"`
	// Utilization is the dependency's utilization the verdict is judged
	// at: the user's (UtilizationGiven) or the model's own today.
	Utilization      float64 `json:"utilization"`
	UtilizationGiven bool    `json:"utilization_given"`
	// Collapses says whether the policy stays collapsed after the trigger
	// at that utilization: above its critical utilization, or, without a
	// search, in some seed at today's load.
	Collapses bool `json:"collapses"`
	// Yield is availability gained per unit of extra work against none on
	// the same seeds, only where the extra work exceeds its seed spread.
	Yield *float64 `json:"yield"`
}

// peakMultiplier is the load forecast of one run at service svc.
func peakMultiplier(r *replay.Result, svc string) *float64 {
	if r.Trigger == nil || r.Trigger.ForS == 0 {
		return nil
	}
	var per []int
	for _, a := range r.Attempts {
		if a.Callee != svc {
			continue
		}
		if per == nil {
			per = make([]int, len(a.PerSecond))
		}
		for i, n := range a.PerSecond {
			per[i] += n
		}
	}
	at := int(r.Trigger.AtS)
	end := min(int(math.Ceil(r.Trigger.AtS+r.Trigger.ForS)), len(per)-1)
	from := max(0, at-10)
	if at >= len(per) || from >= at {
		return nil
	}
	normal := 0
	for _, n := range per[from:at] {
		normal += n
	}
	if normal == 0 {
		return nil
	}
	mean := float64(normal) / float64(at-from)
	peak := 0
	for _, n := range per[at:max(end, at+1)] {
		peak = max(peak, n)
	}
	x := float64(peak) / mean
	return &x
}

// verdicts aggregates the matrix over the seeds: one verdict per
// degradation and variant, degradation-major.
func (mx *matrix) verdicts(vs []variant, noneAt int, ds []replay.Degradation, services []string) []Verdict {
	var out []Verdict
	for d := range ds {
		for v := range vs {
			vd := Verdict{Degradation: ds[d].Name, Service: services[d], Policy: vs[v].policy, Seeds: len(mx.seeds)}
			var avail, extra, p99, peaks []float64
			for s := range mx.seeds {
				r, none := &mx.runs[s][d][v], &mx.runs[s][d][noneAt]
				avail = append(avail, r.Availability)
				extra = append(extra, r.WorkAmplification-none.WorkAmplification)
				p99 = append(p99, r.P99MS)
				if collapsed(r) {
					vd.CollapsedSeeds++
				}
				if p := peakMultiplier(r, services[d]); p != nil {
					peaks = append(peaks, *p)
				}
			}
			vd.Availability, vd.AvailabilityBySeed, vd.ExtraWork, vd.P99MS = statOf(avail), avail, statOf(extra), statOf(p99)
			if len(peaks) == len(mx.seeds) {
				x := statOf(peaks).Mean
				vd.PeakOfferedMultiplier = &x
			}
			out = append(out, vd)
		}
		row := out[len(out)-len(vs):]
		none := row[noneAt].Availability.Mean
		for v := range row {
			if e := row[v].ExtraWork; v != noneAt && e.Mean > 0 && e.Mean > e.Spread() {
				y := (row[v].Availability.Mean - none) / e.Mean
				row[v].Yield = &y
			}
		}
	}
	return out
}
