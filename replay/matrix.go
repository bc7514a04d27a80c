package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/retryaudit/retryaudit/degrade"
)

// Variant is the model under one named policy.
type Variant struct {
	Policy string
	Model  *Model
}

// Degradation is one named fault schedule ("" and an empty schedule: no fault).
type Degradation struct {
	Name   string
	Faults degrade.Schedule
}

// Check reports a fault of d on a service m does not have, or a
// packet-loss on an edge m does not have (edge=CALLER->CALLEE where the
// caller never calls the callee), naming what m has: such a fault would
// simulate nothing, and a run would compare policies on no degradation.
func (d Degradation) Check(m *Model) error {
	var services []string
	for _, s := range m.Services {
		services = append(services, s.Name)
	}
	slices.Sort(services)
	for _, svc := range d.Faults.Services() {
		if !slices.Contains(services, svc) {
			return fmt.Errorf("no service %q in the model (have %s)", svc, strings.Join(services, ", "))
		}
	}
	for _, f := range d.Faults {
		if f.Caller == "" {
			continue
		}
		var calls []string
		found := false
		for _, e := range m.Edges {
			caller, callee := m.Services[e.Caller].Name, m.Services[e.Callee].Name
			if callee == f.Service {
				found = found || caller == f.Caller
				calls = append(calls, caller)
			}
		}
		if !found {
			slices.Sort(calls)
			have := "nothing calls " + f.Service
			if calls = slices.Compact(calls); len(calls) > 0 {
				have = f.Service + " is called by " + strings.Join(calls, ", ")
			}
			return fmt.Errorf("no edge %s->%s in the model: %s never calls %s (%s)", f.Caller, f.Service, f.Caller, f.Service, have)
		}
	}
	return nil
}

// Matrix is a set of runs: every policy variant under every degradation,
// with the same seed, plus what yields and work amplification are measured
// against. Policy "none" must be among the variants.
type Matrix struct {
	Variants     []Variant
	Degradations []Degradation
	Config       RunConfig
	// Progress, when set, is called after each run with runs done and total.
	Progress func(done, total int)
}

// Run executes the matrix on every core (runs are independent) and returns
// results in degradation-major order (every variant under the first
// degradation, then under the second…), each with its work amplification and
// yield filled in. The output does not depend on scheduling.
func (mx *Matrix) Run() ([]Result, error) {
	return mx.RunContext(context.Background())
}

// RunContext is Run under a context: every run's event loop checks it (see
// RunContext), so a cancelled matrix stops within a few thousand events of
// each run in flight and returns the context's error.
func (mx *Matrix) RunContext(ctx context.Context) ([]Result, error) {
	noneAt := -1
	for i, v := range mx.Variants {
		if err := v.Model.Validate(); err != nil {
			return nil, fmt.Errorf("policy %s: %w", v.Policy, err)
		}
		if v.Policy == "none" {
			noneAt = i
		}
	}
	if noneAt < 0 {
		return nil, fmt.Errorf("the matrix needs policy none to measure yield against")
	}
	for _, d := range mx.Degradations {
		if err := d.Check(mx.Variants[noneAt].Model); err != nil {
			return nil, fmt.Errorf("degradation %s: %w", d.Name, err)
		}
	}
	type job struct {
		v, d int
		base bool
	}
	var jobs []job
	for d := range mx.Degradations {
		for v := range mx.Variants {
			jobs = append(jobs, job{v: v, d: d})
		}
	}
	jobs = append(jobs, job{v: noneAt, base: true})
	results := make([]Result, len(jobs))
	var mu sync.Mutex
	done := 0
	err := parallel(len(jobs), func(i int) error {
		j := jobs[i]
		var faults degrade.Schedule
		name := "baseline"
		if !j.base {
			faults, name = mx.Degradations[j.d].Faults, mx.Degradations[j.d].Name
		}
		r, err := RunContext(ctx, mx.Variants[j.v].Model, faults, mx.Config)
		r.Policy, r.Degradation = mx.Variants[j.v].Policy, name
		results[i] = r
		if mx.Progress != nil {
			mu.Lock()
			done++
			mx.Progress(done, len(jobs))
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	base := results[len(results)-1]
	out := results[:len(results)-1]
	nv := len(mx.Variants)
	for d := range mx.Degradations {
		row := out[d*nv : (d+1)*nv]
		Compare(row, base, row[noneAt])
	}
	return out, nil
}

// ParseDegradation reads one fault spec as a degradation named by its
// canonical form.
func ParseDegradation(spec string) (Degradation, error) {
	f, err := degrade.Parse(spec)
	if err != nil {
		return Degradation{}, err
	}
	return Degradation{Name: f.String(), Faults: degrade.Schedule{f}}, nil
}
