package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/policyfile"
)

// simFlags are the flags shared by the commands that simulate a topology
// (replay and audit).
type simFlags struct {
	capacity   []string
	headroom   float64
	load, rate float64
	deadline   time.Duration
	seed       uint64
	duration   time.Duration
	policyFile string
	// policyNotes say what the policy file holds that is not simulated and
	// what in it matched no edge, for the report.
	policyNotes []string
	policy      *policyfile.PolicyFile
}

func (s *simFlags) bind(f *pflag.FlagSet) {
	f.StringArrayVar(&s.capacity, "capacity", nil, "a service's capacity, `SVC=WORKERS` or SVC=RATErps (repeatable)")
	f.Float64Var(&s.headroom, "headroom", replay.DefaultHeadroom, "assumed capacity = observed concurrency × this, for services without --capacity")
	f.Float64Var(&s.load, "load", 1, "multiply the observed root rate (a preset's offered load)")
	f.Float64Var(&s.rate, "rate", 0, "root requests per second (replaces the observed rate)")
	f.DurationVar(&s.deadline, "client-deadline", 5*time.Second, "how long end users wait for a root request")
	f.Uint64Var(&s.seed, "seed", 1, "random seed: the same inputs and seed give byte-identical output")
	f.DurationVar(&s.duration, "duration", 60*time.Second, "simulated time during which requests arrive")
	f.StringVar(&s.policyFile, "policy-file", "", "apply a policy `FILE` on top of each policy: retryaudit YAML, a gRPC service config, Envoy route/cluster YAML, Istio VirtualService/DestinationRule, Linkerd HTTPRoute/GRPCRoute/ServiceProfile")
}

func (s *simFlags) validate() error {
	if s.duration <= 0 || s.load <= 0 || s.rate < 0 || s.headroom <= 0 || s.deadline <= 0 {
		return usageError{fmt.Errorf("--duration, --load, --headroom and --client-deadline must be positive; --rate not negative")}
	}
	return nil
}

func (s *simFlags) config() replay.RunConfig {
	return replay.RunConfig{Seed: s.seed, Duration: s.duration.Seconds()}
}

// model builds the observed model of a topology.
func (s *simFlags) model(top *graph.Topology, o replay.BuildOptions) (*replay.Model, error) {
	caps := map[string]replay.Capacity{}
	for _, c := range s.capacity {
		name, cp, err := replay.ParseCapacity(c)
		if err != nil {
			return nil, usageError{fmt.Errorf("--capacity: %w", err)}
		}
		caps[name] = cp
	}
	o.Load, o.Rate, o.ClientDeadline, o.Capacity, o.Headroom = s.load, s.rate, s.deadline.Seconds(), caps, s.headroom
	return replay.FromTopology(top, o)
}

// variants applies each policy expression (duplicates dropped, in order)
// and then the policy file, if any, to every policy but none. It returns
// the variants and their models by policy.
func (s *simFlags) variants(m *replay.Model, exprs []string) ([]replay.Variant, map[string]*replay.Model, error) {
	var pf *policyfile.PolicyFile
	if s.policyFile != "" {
		data, err := os.ReadFile(s.policyFile)
		if err != nil {
			return nil, nil, err
		}
		if pf, err = policyfile.Read(s.policyFile, data); err != nil {
			return nil, nil, err
		}
		s.policy = pf
		s.policyNotes = nil
		for _, n := range append(pf.Notes(), pf.Unmatched(m)...) {
			s.policyNotes = append(s.policyNotes, s.policyFile+": "+n)
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

// degradations parses --degrade specs.
func degradations(specs []string) ([]replay.Degradation, error) {
	var out []replay.Degradation
	for _, s := range specs {
		d, err := replay.ParseDegradation(s)
		if err != nil {
			return nil, usageError{fmt.Errorf("--degrade: %w", err)}
		}
		out = append(out, d)
	}
	return out, nil
}
