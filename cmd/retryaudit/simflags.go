package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// modelFlags shape the model built from a topology: the flags of every
// command that replays one (replay, audit, calibrate).
type modelFlags struct {
	capacity   []string
	headroom   float64
	deadline   time.Duration
	sampleRate float64
	seed       uint64
}

func (s *modelFlags) bind(f *pflag.FlagSet) {
	f.StringArrayVar(&s.capacity, "capacity", nil, "a service's capacity, `SVC=WORKERS` or SVC=RATErps (repeatable)")
	f.Float64Var(&s.headroom, "headroom", replay.DefaultHeadroom, "assumed capacity = observed concurrency × this, for services without --capacity")
	f.DurationVar(&s.deadline, "client-deadline", 5*time.Second, "how long end users wait for a root request")
	f.Float64Var(&s.sampleRate, "sample-rate", 0, "head-sampling probability `P` the traces were kept with (default: read from the traces, else 1 and rates are lower bounds)")
	f.Uint64Var(&s.seed, "seed", 1, "random seed: the same inputs and seed give byte-identical output")
}

func (s *modelFlags) validate() error {
	if s.headroom <= 0 || s.deadline <= 0 {
		return usageError{fmt.Errorf("--headroom and --client-deadline must be positive")}
	}
	if s.sampleRate < 0 || s.sampleRate > 1 {
		return usageError{fmt.Errorf("--sample-rate %g: want a probability in (0,1]", s.sampleRate)}
	}
	return nil
}

// build fills the model options the flags set.
func (s *modelFlags) build(o replay.BuildOptions) (replay.BuildOptions, error) {
	caps := map[string]replay.Capacity{}
	for _, c := range s.capacity {
		name, cp, err := replay.ParseCapacity(c)
		if err != nil {
			return o, usageError{fmt.Errorf("--capacity: %w", err)}
		}
		caps[name] = cp
	}
	o.ClientDeadline, o.Capacity, o.Headroom, o.SampleRate = s.deadline.Seconds(), caps, s.headroom, s.sampleRate
	return o, nil
}

// simFlags are the flags shared by the commands that simulate a topology
// under degradations (replay and audit).
type simFlags struct {
	modelFlags
	load, rate float64
	duration   time.Duration
	policyFile string
}

func (s *simFlags) bind(f *pflag.FlagSet) {
	s.modelFlags.bind(f)
	f.Float64Var(&s.load, "load", 1, "multiply the observed root arrivals (capacity stays what load 1 implies; a preset's offered load)")
	f.Float64Var(&s.rate, "rate", 0, "root requests per second (replaces the observed rate)")
	f.DurationVar(&s.duration, "duration", 60*time.Second, "simulated time during which requests arrive")
	f.StringVar(&s.policyFile, "policy-file", "", "apply a YAML policy `FILE` (gRPC retryPolicy, Envoy retry_policy, Finagle budget) on top of each policy")
}

func (s *simFlags) validate() error {
	if s.duration <= 0 || s.load <= 0 || s.rate < 0 {
		return usageError{fmt.Errorf("--duration and --load must be positive; --rate not negative")}
	}
	return s.modelFlags.validate()
}

func (s *simFlags) config() replay.RunConfig {
	return replay.RunConfig{Seed: s.seed, Duration: s.duration.Seconds()}
}

// model builds the observed model of a topology.
func (s *simFlags) model(top *graph.Topology, o replay.BuildOptions) (*replay.Model, error) {
	o, err := s.build(o)
	if err != nil {
		return nil, err
	}
	o.Load, o.Rate = s.load, s.rate
	return replay.FromTopology(top, o)
}

// variants applies each policy expression (duplicates dropped, in order)
// and then the policy file, if any, to every policy but none. It returns
// the variants and their models by policy.
func (s *simFlags) variants(m *replay.Model, exprs []string) ([]replay.Variant, map[string]*replay.Model, error) {
	var pf *replay.PolicyFile
	if s.policyFile != "" {
		data, err := os.ReadFile(s.policyFile)
		if err != nil {
			return nil, nil, err
		}
		if pf, err = replay.ParsePolicyFile(s.policyFile, data); err != nil {
			return nil, nil, err
		}
	}
	var out []replay.Variant
	models := map[string]*replay.Model{}
	for _, e := range exprs {
		if models[e] != nil {
			continue
		}
		pm, err := replay.ApplyPolicy(m, e)
		if err != nil {
			return nil, nil, usageError{fmt.Errorf("--policy: %w", err)}
		}
		if pf != nil && e != "none" {
			if pm, err = pf.Apply(pm); err != nil {
				return nil, nil, err
			}
		}
		models[e] = pm
		out = append(out, replay.Variant{Policy: e, Model: pm})
	}
	return out, models, nil
}

// degradations parses --degrade specs, refusing a fault on a service the
// model does not have.
func degradations(specs []string, m *replay.Model) ([]replay.Degradation, error) {
	have := map[string]bool{}
	var names []string
	for _, s := range m.Services {
		have[s.Name] = true
		names = append(names, s.Name)
	}
	slices.Sort(names)
	var out []replay.Degradation
	for _, s := range specs {
		d, err := replay.ParseDegradation(s)
		if err != nil {
			return nil, usageError{fmt.Errorf("--degrade: %w", err)}
		}
		for _, svc := range d.Faults.Services() {
			if !have[svc] {
				return nil, usageError{fmt.Errorf("--degrade %q: no service %q in the model (have %s)", s, svc, strings.Join(names, ", "))}
			}
		}
		out = append(out, d)
	}
	return out, nil
}
