package replay

import (
	"container/heap"
	"context"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// benchLoopModel is the one-service model of BenchmarkEventLoop: M/M/100
// at 80% load, 10,000 root requests a second for 50 simulated seconds
// (about a million events: an arrival and a completion per request, plus
// the per-second ticks).
func benchLoopModel() (*Model, RunConfig) {
	m := &Model{
		Services: []Service{{Name: "server", Workers: 100, Ops: []Op{{Name: "serve", Time: Exponential{MeanS: 0.008}}}}},
		Entry:    []Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:     10_000,
	}
	return m, RunConfig{Seed: 1, Duration: 50, Drain: -1}
}

// BenchmarkEventLoop measures the engine's event rate on one service,
// against a bare loop over the same 4-ary heap doing as many events with
// as many pending, timed in the same iterations. Run it on one core:
// go test -run '^$' -bench EventLoop -cpu 1 ./replay/
//
// The figures are the process's CPU time (user and system, garbage
// collection included): on a shared machine wall time mostly measures the
// scheduler, and CPU time on one core (-cpu 1) is what "events a second on
// one core" means. x-bare-heap is the engine's CPU time over the bare
// loop's; the wall-clock ratio is x-bare-heap-wall. x-bare-heap-min
// divides the fastest iteration of each (CPU time): on a machine shared
// with other work, which slows some iterations of either at random, it
// is the steadier figure.
func BenchmarkEventLoop(b *testing.B) {
	for _, bc := range []struct {
		name  string
		model func() (*Model, RunConfig)
	}{
		{"mmc", benchLoopModel},
		// The same load with service times drawn from self-time quantiles
		// at the topology's levels, as every model inferred from traces
		// draws them (Empirical: mean 8 ms, as mmc's, with a long tail).
		{"empirical", func() (*Model, RunConfig) {
			m, cfg := benchLoopModel()
			levels := []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1}
			shape := []float64{0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 8, 10, 14, 18, 30, 60}
			emp, err := NewEmpirical(levels, shape)
			if err != nil {
				panic(err)
			}
			s := make([]float64, len(shape))
			for i, v := range shape {
				s[i] = v * 0.008 / emp.Mean()
			}
			if emp, err = NewEmpirical(levels, s); err != nil {
				panic(err)
			}
			m.Services[0].Ops[0].Time = emp
			return m, cfg
		}},
		// The same load through a client edge with a per-try timeout and
		// retries: attempts, timeouts and the policy code on the path.
		{"client-edge", func() (*Model, RunConfig) {
			m := single("server", 100, Exponential{MeanS: 0.008}, 10_000, 0,
				Policy{MaxAttempts: 3, PerTryTimeout: 0.1, Backoff: Backoff{Kind: "exponential", Base: 0.01, Cap: 0.1, Jitter: "full"}})
			return m, RunConfig{Seed: 1, Duration: 50, Drain: -1}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, cfg := bc.model()
			pending := pendingEvents(b, m, cfg)
			events := 0
			var engine, bare, engineWall, bareWall time.Duration
			engineMin, bareMin := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
			b.ReportAllocs()
			for b.Loop() {
				c, w := cpuTime(), time.Now()
				r, err := Run(m, nil, cfg)
				if err != nil {
					b.Fatal(err)
				}
				e := cpuTime() - c
				engine += e
				engineMin = min(engineMin, e)
				engineWall += time.Since(w)
				events += r.Events
				// The reference: as many events through the bare heap, each
				// a pop and a push, with as many pending as the engine had.
				c, w = cpuTime(), time.Now()
				bareLoop(r.Events, pending)
				e = cpuTime() - c
				bare += e
				bareMin = min(bareMin, e)
				bareWall += time.Since(w)
			}
			b.ReportMetric(float64(events)/engineWall.Seconds(), "events/s")
			b.ReportMetric(float64(events)/engine.Seconds(), "events/cpu-s")
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
			b.ReportMetric(float64(pending), "pending")
			b.ReportMetric(engine.Seconds()/bare.Seconds(), "x-bare-heap")
			b.ReportMetric(engineWall.Seconds()/bareWall.Seconds(), "x-bare-heap-wall")
			b.ReportMetric(engineMin.Seconds()/bareMin.Seconds(), "x-bare-heap-min")
		})
	}
}

// loopEvents and loopPending are what BenchmarkEventLoop/mmc's run does:
// its events (Result.Events) and the events it holds pending
// (pendingEvents). TestLoopCounts checks them.
const (
	loopEvents  = 997_510
	loopPending = 77
)

// BenchmarkLoopOnce does one of BenchmarkEventLoop/mmc's two halves per
// op, for an instruction counter: "engine" one Run of benchLoopModel,
// "bare" one bareLoop with as many events and as many pending, "none"
// nothing (the process's own start and end). Under callgrind, with one op
// (-test.benchtime 1x), a half's instructions are its process's total less
// none's:
//
//	go test -c -o /tmp/replay.test ./replay
//	GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind /tmp/replay.test \
//	    -test.run '^$' -test.bench 'LoopOnce/engine' -test.benchtime 1x -test.cpu 1
//
// (and LoopOnce/bare, LoopOnce/none). Instruction counts hold still on a
// shared machine, where the timed ratio of BenchmarkEventLoop moves by a
// third between runs.
func BenchmarkLoopOnce(b *testing.B) {
	b.Run("engine", func(b *testing.B) {
		m, cfg := benchLoopModel()
		for b.Loop() {
			if _, err := Run(m, nil, cfg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			bareLoop(loopEvents, loopPending)
		}
	})
	b.Run("none", func(b *testing.B) {
		for b.Loop() {
		}
	})
}

// TestLoopCounts checks that the bare loop of BenchmarkLoopOnce does as
// many events, with as many pending, as the engine's run it is set
// against.
func TestLoopCounts(t *testing.T) {
	m, cfg := benchLoopModel()
	r, err := Run(m, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Events != loopEvents {
		t.Errorf("the run took %d events, want loopEvents %d", r.Events, loopEvents)
	}
	if p := pendingEvents(t, m, cfg); p != loopPending {
		t.Errorf("the run left %d events pending, want loopPending %d", p, loopPending)
	}
}

// pendingEvents is how many events the engine has pending in a steady run
// of the model: those left when the run stops, which for these models (no
// fault, the same load throughout, no drain) is what it holds all along.
// The bare loop keeps as many, so its heap is as deep as the engine's:
// the mmc run holds about 80 (the jobs in service, the next arrival, the
// next tick), the client-edge run about 1,100 (each attempt's timeout).
func pendingEvents(tb testing.TB, m *Model, cfg RunConfig) int {
	s := newSim(m, nil, cfg.withDefaults())
	if err := s.run(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s.h.len()
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err) // Getrusage(RUSAGE_SELF) fails only on a bad pointer
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareEvents is how many events BenchmarkBareHeap processes per op: about
// what one BenchmarkEventLoop/mmc run does (Result.Events), so that ns/op of
// the two compare directly.
const bareEvents = 1_000_000

// barePending is how many events BenchmarkBareHeap keeps pending, about
// the engine's in BenchmarkEventLoop/mmc (see pendingEvents).
const barePending = 82

// BenchmarkBareHeap is the floor under the engine: a loop that pops the
// earliest event and schedules the next one at an exponential delay, with
// nothing else to do. "eventHeap" uses the engine's own heap, "container"
// container/heap.
func BenchmarkBareHeap(b *testing.B) {
	b.Run("eventHeap", func(b *testing.B) {
		c, start := cpuTime(), time.Now()
		for b.Loop() {
			bareLoop(bareEvents, barePending)
		}
		b.ReportMetric(float64(b.N)*bareEvents/time.Since(start).Seconds(), "events/s")
		b.ReportMetric(float64(b.N)*bareEvents/(cpuTime()-c).Seconds(), "events/cpu-s")
	})
	b.Run("container", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 1))
		c, start := cpuTime(), time.Now()
		for b.Loop() {
			h := &stdHeap{}
			for i := range barePending {
				heap.Push(h, event{at: timeKey(rng.ExpFloat64() * barePending / 10_000), key: uint64(i) << kindBits, id: int32(i)})
			}
			seq := uint64(barePending)
			for range bareEvents {
				ev := heap.Pop(h).(event)
				seq++
				heap.Push(h, event{at: timeKey(ev.time() + rng.ExpFloat64()*barePending/10_000), key: seq << kindBits, id: ev.id})
			}
		}
		b.ReportMetric(float64(b.N)*bareEvents/time.Since(start).Seconds(), "events/s")
		b.ReportMetric(float64(b.N)*bareEvents/(cpuTime()-c).Seconds(), "events/cpu-s")
	})
}

// bareLoop pops events from the engine's heap and schedules each one's
// successor at an exponential delay (10,000 events a second over the
// pending ones), with nothing else to do: events pops and as many pushes,
// with pending events in the heap throughout.
func bareLoop(events, pending int) {
	rng := rand.New(rand.NewPCG(1, 1))
	var h eventHeap
	for i := range pending {
		h.push(rng.ExpFloat64()*float64(pending)/10_000, evServed, int32(i), 0)
	}
	for range events {
		ev := h.pop()
		h.push(ev.time()+rng.ExpFloat64()*float64(pending)/10_000, ev.kind(), ev.id, ev.gen+1)
	}
}

// BenchmarkJirfag is the jirfag/simulations scenario: 30 simulated seconds
// at 1,000 requests a second on 41 workers with a 5 ms network hop, the
// 0.5 s trigger and three retries. The SimPy model takes about 3.5 s of
// wall time; x-simpy divides that by the run's wall time, x-simpy-cpu by
// its CPU time (on one core, -cpu 1, the two agree on a quiet machine).
func BenchmarkJirfag(b *testing.B) {
	p, err := NewPreset("jirfag-c41", 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	var v Variant
	for _, v = range p.Matrix.Variants {
		if v.Policy == "retry-3x" {
			break
		}
	}
	events := 0
	b.ReportAllocs()
	c, start := cpuTime(), time.Now()
	for b.Loop() {
		r, err := Run(v.Model, p.Matrix.Degradations[0].Faults, p.Matrix.Config)
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	el, cpu := time.Since(start).Seconds(), (cpuTime() - c).Seconds()
	b.ReportMetric(1000*el/float64(b.N), "ms/run")
	b.ReportMetric(1000*cpu/float64(b.N), "cpu-ms/run")
	b.ReportMetric(3.5/(el/float64(b.N)), "x-simpy")
	b.ReportMetric(3.5/(cpu/float64(b.N)), "x-simpy-cpu")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// stdHeap is the event heap through container/heap's interface.
type stdHeap []event

func (h stdHeap) Len() int { return len(h) }
func (h stdHeap) Less(i, j int) bool {
	return h[i].before(&h[j])
}
func (h stdHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *stdHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *stdHeap) Pop() any {
	old := *h
	n := len(old)
	x := old[n-1]
	*h = old[:n-1]
	return x
}

// fourLayer is the topology of BenchmarkMatrix: edge → api → inventory →
// db, 1,000 root requests a second with a 2 s client deadline, under one
// of eight policies. Workers are sized from Little's law with room to
// spare (a caller holds its worker while it waits for its callee), the db
// being the tight one: 16 workers (2 a shard when sharded) for about 2.5
// busy at 2.5 ms a query.
func fourLayer(policy string) *Model {
	ln := func(median float64) Dist { return LogNormal{Median: median, Sigma: 0.5, TailProb: 0.01, TailFactor: 5} }
	m := &Model{
		Services: []Service{
			{Name: "edge", Workers: 2000, Ops: []Op{{Name: "GET /order", Time: ln(0.001), Calls: []int{0}}}},
			{Name: "api", Workers: 1000, Ops: []Op{{Name: "GetOrder", Time: ln(0.003), Calls: []int{1}}}},
			{Name: "inventory", Workers: 500, Ops: []Op{{Name: "Reserve", Time: ln(0.004), Calls: []int{2}}}},
			{Name: "db", Workers: 16, Ops: []Op{{Name: "SELECT", Time: ln(0.002)}}},
		},
		Edges: []Edge{
			{Caller: 0, CallerOp: 0, Callee: 1, CalleeOp: 0, Prob: 1, Repeat: 1, Idempotent: true},
			{Caller: 1, CallerOp: 0, Callee: 2, CalleeOp: 0, Prob: 1, Repeat: 1},
			{Caller: 2, CallerOp: 0, Callee: 3, CalleeOp: 0, Prob: 1, Repeat: 1, Idempotent: true},
		},
		Entry:          []Entry{{Service: 0, Op: 0, Weight: 1}},
		Rate:           1000,
		ClientDeadline: 2,
	}
	timeouts := []float64{1, 0.5, 0.2}
	retry := func(i int) Policy {
		return Policy{MaxAttempts: 3, PerTryTimeout: timeouts[i],
			Backoff: Backoff{Kind: BackoffExponential, Base: 0.025, Multiplier: 2, Cap: 0.5, Jitter: JitterFull}}
	}
	ratio := BudgetSpec{Kind: BudgetRatio, Ratio: 0.1, Window: 10}
	for i := range m.Edges {
		p := Policy{MaxAttempts: 1, PerTryTimeout: timeouts[i]}
		switch policy {
		case "none":
		case "everywhere":
			p = retry(i)
		case "edge-only":
			if i == 0 {
				p = retry(i)
			}
		case "idempotent-only":
			if m.Edges[i].Idempotent && i > 0 {
				p = retry(i)
			}
		case "hedge-p95":
			if i == 2 {
				p.MaxAttempts, p.HedgeAfter = 2, 0.006
			}
		case "budget":
			p = retry(i)
			p.Budget, p.SharedBudget = ratio, true
		case "retry-after":
			p = retry(i)
			p.HonorRetryAfter = true
		case "breaker+deadline":
			p = retry(i)
			p.Breaker = BreakerConfig{FailureRate: 0.5, Window: 5, MinRequests: 20, OpenFor: 2, Jitter: 0.2, HalfOpenProbes: 3}
			p.Propagate = true
			if i == 0 {
				p.Deadline = 2
			}
		default:
			panic("unknown policy " + policy)
		}
		m.Edges[i].Policy = p
	}
	return m
}

// benchPolicies and benchDegradations are BenchmarkMatrix's matrix.
var benchPolicies = []string{"none", "everywhere", "edge-only", "idempotent-only", "hedge-p95", "budget", "retry-after", "breaker+deadline"}

func benchDegradations() []Degradation {
	return []Degradation{
		{Name: "slow-shard", Faults: schedule("slow-shard:svc=db,at=20s,for=20s,x=10")},
		{Name: "hot-partition", Faults: schedule("hot-partition:svc=db,at=20s,for=20s")},
		{Name: "packet-loss", Faults: schedule("packet-loss:svc=db,at=20s,for=20s,p=0.1")},
		{Name: "db-pool", Faults: schedule("db-pool:svc=db,at=20s,for=20s,k=2")},
		{Name: "outage", Faults: schedule("outage:svc=db,at=20s,for=10s")},
	}
}

func benchMatrix() *Matrix {
	mx := &Matrix{Degradations: benchDegradations(), Config: RunConfig{Seed: 1, Duration: 60, Drain: 10}}
	for _, p := range benchPolicies {
		mx.Variants = append(mx.Variants, Variant{Policy: p, Model: fourLayer(p)})
	}
	return mx
}

// BenchmarkMatrix runs the 8 policies × 5 degradations (+ the baseline run)
// of the four-layer topology through Matrix.Run, which uses every core:
// go test -run '^$' -bench Matrix ./replay/
func BenchmarkMatrix(b *testing.B) {
	mx := benchMatrix()
	events := 0
	start := time.Now()
	for b.Loop() {
		res, err := mx.Run()
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			events += r.Events
		}
	}
	el := time.Since(start).Seconds()
	b.ReportMetric(el/float64(b.N), "s/matrix")
	b.ReportMetric(float64(events)/el, "events/s")
}
