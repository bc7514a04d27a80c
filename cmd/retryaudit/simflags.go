package main

import (
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/policyfile"
)

// modelFlags shape the model built from a topology: the flags of every
// command that replays one (replay, audit, calibrate).
type modelFlags struct {
	capacity   []string
	instances  []string
	headroom   float64
	deadline   time.Duration
	sampleRate float64
	seed       uint64
	set        *pflag.FlagSet // the flags bound, to tell a value given from the default
}

func (s *modelFlags) bind(f *pflag.FlagSet) {
	f.StringArrayVar(&s.capacity, "capacity", nil, "a service's capacity, `SVC=WORKERS` or SVC=RATErps (repeatable)")
	f.StringArrayVar(&s.instances, "instances", nil, "how many process instances a service runs as, `SVC=N`, each with circuit breakers of its own (repeatable; default: as many as the traces name, else one)")
	f.Float64Var(&s.headroom, "headroom", replay.DefaultHeadroom, "assumed capacity = observed concurrency × this, for services without --capacity")
	f.DurationVar(&s.deadline, "client-deadline", 5*time.Second, "how long end users wait for a root request")
	f.Float64Var(&s.sampleRate, "sample-rate", 0, "head-sampling probability `P` the traces were kept with (default: read from the traces, else 1 and rates are lower bounds)")
	f.Uint64Var(&s.seed, "seed", 1, "random seed: the same inputs and seed give byte-identical output")
	s.set = f
}

// given reports whether flag name was set on the command line: 0 is the
// default of --rate and --sample-rate (the traces' own), and given, a
// number that would otherwise be dropped without a word.
func (s *modelFlags) given(name string) bool { return s.set != nil && s.set.Changed(name) }

func (s *modelFlags) validate() error {
	if !(s.headroom > 0) || math.IsInf(s.headroom, 0) {
		return usageError{fmt.Errorf("--headroom %v: want a finite number > 0, e.g. 1.5", s.headroom)}
	}
	if s.deadline <= 0 {
		return usageError{fmt.Errorf("--client-deadline %v: want a duration > 0, e.g. 5s", s.deadline)}
	}
	if !(s.sampleRate >= 0 && s.sampleRate <= 1) || s.sampleRate == 0 && s.given("sample-rate") {
		return usageError{fmt.Errorf("--sample-rate %v: want a probability in (0,1], e.g. 0.1", s.sampleRate)}
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
	insts := map[string]int{}
	for _, spec := range s.instances {
		name, n, err := replay.ParseInstances(spec)
		if err != nil {
			return o, usageError{fmt.Errorf("--instances: %w", err)}
		}
		insts[name] = n
	}
	o.ClientDeadline, o.Capacity, o.Instances, o.Headroom, o.SampleRate = s.deadline.Seconds(), caps, insts, s.headroom, s.sampleRate
	return o, nil
}

// simFlags are the flags shared by the commands that simulate a topology
// under degradations (replay and audit).
type simFlags struct {
	modelFlags
	load, rate float64
	duration   time.Duration
	policyFile string
	// policyNotes say what the policy file holds that is not simulated and
	// what in it matched no edge, for the report.
	policyNotes   []string
	policy        *policyfile.PolicyFile
	thrash        float64
	cancel        float64
	cancelRunning bool
	maxInflight   int
	openClients   int
	maxEvents     int
	flags         *pflag.FlagSet
}

func (s *simFlags) bind(f *pflag.FlagSet) {
	s.modelFlags.bind(f)
	f.Float64Var(&s.load, "load", 1, "multiply the observed root arrivals (capacity stays what load 1 implies; a preset's offered load)")
	f.Float64Var(&s.rate, "rate", 0, "root requests per second (replaces the observed rate)")
	f.DurationVar(&s.duration, "duration", 60*time.Second, "simulated time during which requests arrive")
	f.StringVar(&s.policyFile, "policy-file", "", "apply a policy `FILE` on top of each policy: retryaudit YAML, a gRPC service config, Envoy route/cluster YAML, Istio VirtualService/DestinationRule, Linkerd HTTPRoute/GRPCRoute/ServiceProfile")
	f.Float64Var(&s.thrash, "thrash", 0, "throughput lost under overload: every service's service time grows by this × queued jobs per worker (at most 4×); a preset's own value unless set")
	f.Float64Var(&s.cancel, "cancel", 0, "probability a service learns that a timed-out caller left and drops its queued work; a preset's own value unless set")
	f.BoolVar(&s.cancelRunning, "cancel-running", false, "services also stop running work when a cancel arrives (they honour cancellation); a preset's own value unless set")
	f.IntVar(&s.maxInflight, "max-inflight", 0, "the client's limit on root requests in flight: one that arrives while `N` are out (retries and backoff included) waits in line; 0: none; a preset's own value unless set")
	f.IntVar(&s.openClients, "open-clients", 0, "split the open-loop arrivals among `N` clients, each arrival from one at random; --max-inflight is then each client's own limit; 0: one client; a preset's own value unless set")
	f.IntVar(&s.maxEvents, "max-events", replay.DefaultMaxEvents, "refuse or stop a run past this many events (the default keeps a run near 1 GiB)")
	s.flags = f
}

func (s *simFlags) validate() error {
	for _, f := range []struct {
		name, want string
		v          float64
		ok         bool
	}{
		{"load", "a finite number > 0, e.g. 2", s.load, s.load > 0},
		{"rate", "a finite rate > 0 in requests a second, e.g. 200", s.rate, s.rate > 0 || s.rate == 0 && !s.given("rate")},
		{"thrash", "a finite number ≥ 0, e.g. 0.1", s.thrash, s.thrash >= 0},
		{"cancel", "a probability from 0 to 1, e.g. 0.5", s.cancel, s.cancel >= 0 && s.cancel <= 1},
	} {
		if !f.ok || math.IsInf(f.v, 0) {
			return usageError{fmt.Errorf("--%s %v: want %s", f.name, f.v, f.want)}
		}
	}
	if s.duration <= 0 {
		return usageError{fmt.Errorf("--duration %v: want a duration > 0, e.g. 30s", s.duration)}
	}
	if s.maxInflight < 0 {
		return usageError{fmt.Errorf("--max-inflight %d: want a count ≥ 0 (0: no limit), e.g. 100", s.maxInflight)}
	}
	if s.openClients < 0 || s.openClients > replay.MaxOpenClients {
		return usageError{fmt.Errorf("--open-clients %d: want a count ≥ 0 (0: one client) and at most %d, e.g. 50", s.openClients, replay.MaxOpenClients)}
	}
	if s.maxEvents < 1 {
		return usageError{fmt.Errorf("--max-events %d: want a count ≥ 1, e.g. %d", s.maxEvents, replay.DefaultMaxEvents)}
	}
	return s.modelFlags.validate()
}

func (s *simFlags) config() replay.RunConfig {
	return replay.RunConfig{Seed: s.seed, Duration: s.duration.Seconds(), MaxEvents: s.maxEvents}
}

// mechanics returns m with its services' thrash and cancellation, its
// client's limit on requests in flight and its count of open-loop clients
// set from the flags that were given (a preset keeps its own values for
// the others).
func (s *simFlags) mechanics(m *replay.Model) *replay.Model {
	thrash, cancel, running := s.flags.Changed("thrash"), s.flags.Changed("cancel"), s.flags.Changed("cancel-running")
	inflight, clients := s.flags.Changed("max-inflight"), s.flags.Changed("open-clients")
	if !thrash && !cancel && !running && !inflight && !clients {
		return m
	}
	c := *m
	if inflight {
		c.MaxInflight = s.maxInflight
	}
	if clients {
		c.OpenClients = s.openClients
	}
	c.Services = slices.Clone(m.Services)
	for k := range c.Services {
		svc := &c.Services[k]
		if thrash {
			svc.Thrash = s.thrash
		}
		if cancel {
			svc.CancelProb = s.cancel
		}
		if running {
			svc.CancelRunning = s.cancelRunning
		}
	}
	return &c
}

// mechanicsNotes lists the mechanics of the runs, each distinct set once.
func mechanicsNotes(results []replay.Result) []string {
	var notes []string
	for _, r := range results {
		if n := r.Mechanics.String(); !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	return notes
}

// model builds the observed model of a topology.
func (s *simFlags) model(top *graph.Topology, o replay.BuildOptions) (*replay.Model, error) {
	o, err := s.build(o)
	if err != nil {
		return nil, err
	}
	o.Load, o.Rate = s.load, s.rate
	m, err := replay.FromTopology(top, o)
	if err != nil {
		return nil, err
	}
	return s.mechanics(m), nil
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
		// The file's idempotency declarations decide which edges the
		// policies may repeat, so they come first.
		if m, err = pf.DeclareIdempotency(m); err != nil {
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

// degradations parses --degrade specs, refusing a fault on a service or
// an edge the model does not have.
func degradations(specs []string, m *replay.Model) ([]replay.Degradation, error) {
	var out []replay.Degradation
	for _, s := range specs {
		d, err := replay.ParseDegradation(s)
		if err != nil {
			return nil, usageError{fmt.Errorf("--degrade: %w", err)}
		}
		if err := d.Check(m); err != nil {
			return nil, usageError{fmt.Errorf("--degrade %q: %w", s, err)}
		}
		out = append(out, d)
	}
	return out, nil
}
