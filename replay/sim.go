package replay

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/retryaudit/retryaudit/degrade"
)

// Event kinds.
const (
	evArrival      evKind = iota // an open-loop root request arrives
	evThink                      // a closed-loop client sends its next request
	evServed                     // a job's service time is over
	evTimeout                    // an attempt's per-try timeout (or deadline) fires
	evHedge                      // a call's hedge delay is over
	evRetry                      // a call's backoff is over: send the next attempt
	evTick                       // once a simulated second: sample the series
	evKick                       // a fault starts or ends: re-check worker limits
	evRequest                    // an attempt's request reaches its callee after the network hop
	evResend                     // a lost request's retransmission timer fires
	evResponse                   // an answer reaches the client after the network hop
	evResendAnswer               // a lost answer's retransmission timer fires
	evCancel                     // a client's cancel reaches the server
	evFreeze                     // the nominal horizon: the run's figures are final
)

type jobState uint8

const (
	jobQueued jobState = iota
	jobRunning
	jobCalling
	jobDone
)

// job is one attempt being served by a service. It holds no pointer (its
// failure model is an index), so the slab is never scanned by the
// garbage collector and writing a job needs no write barrier; the fields
// go by size, 112 bytes with one byte of padding (before inst).
type job struct {
	start    float64 // when a worker took it
	selfEnd  float64 // when its own service time ended (calling and later)
	deadline float64 // absolute; +Inf without propagation
	// useful is the work of its downstream calls that succeeded and was
	// handed to it: it reaches the root with the job's answer, or is wasted.
	useful float64
	ownRA  float64 // the Retry-After of its own outcome (drawn)
	att    int32   // the attempt it answers; -1: its root request's, which has no record (see startRoot)
	svc    int32
	op     int32
	pool   int32 // the pool (node or replica) that serves it: index into sim.pools
	part   int32 // its shard or replica, as the faults see it
	// fail is the failure model of the edge (or root operation) the job
	// answers, an index into sim.fails: 0 for none.
	fail       int32
	nextEdge   int32 // sequential calls: index into the op's Calls
	repeatLeft int32
	pending    int32
	slotHead
	// root and rootGen name the root request's call the job serves.
	root, rootGen int32
	attemptNo     int16
	state         jobState
	failed        bool
	clientErr     bool // failed because a call ended in a client error
	cancelled     bool
	// own is the job's own outcome when drawn before its calls (drawn).
	own   outcome
	drawn bool
	// afterFailure: the request had failed on this edge when this arrived.
	afterFailure bool
	// afterRun: else, the latest call of another request to end on the
	// edge had failed when the call began (failures in runs).
	afterRun bool
	// afterOther: else, it had failed on another edge.
	afterOther bool
	// afterDown: the attempt before it failed because of the callee's calls.
	afterDown bool
	// leaf (set when it starts): its operation calls nothing; faulty:
	// faults name its service (both static, kept here so that the hot
	// path reads only the job).
	leaf, faulty bool
	// slow: the callee is still at work when the caller gives up (drawn
	// by the edge's SlowTries).
	slow bool
	// inst is the instance of its service that serves it (see
	// Service.Instances): its calls go through that instance's breakers.
	inst int32
}

// call is one logical call: a root request, or one caller job's call over
// an edge, with its attempts.
type call struct {
	job    int32 // caller job, -1 for a root request
	jobGen int32 // the caller job's generation: its slot may be reused
	// open is the latest attempt the client still waits for, -1 for
	// none; each open attempt's next is the one sent before it that is
	// still open (hedges keep several out at once). An open attempt's
	// slot is never reused, so the chain needs no generations.
	open    int32
	edge    int32 // -1 for a root request
	svc, op int32 // the callee
	// fail is the failure model of the edge (or root operation) the call
	// is made on, an index into sim.fails (see job.fail).
	fail  int32
	start float64
	// deadline bounds the call (+Inf: none); key in [0,1) is the
	// request's key, which decides its shard on a sharded callee.
	deadline, key float64
	attempts      int16
	inflight      int16
	prevDelay     float64
	done          bool
	// clientErr: an attempt ended in a client error, which is not retried.
	clientErr bool
	// tainted: the call began on a request that had failed on its edge.
	tainted bool
	// run: the latest call of another request to end on the edge had
	// failed when this one began.
	run bool
	// downFailed: the latest attempt failed because the callee's own
	// calls failed (its failure model draws the next one accordingly).
	downFailed bool
	// direct: nothing lies between the client and the callee to lose or
	// delay a request (no fault on the callee, no network hop, no transit
	// time on the edge); directBack: nor an answer (no fault, and no hop
	// back). propagate: the attempts carry their deadline to the callee.
	// All three are static, set when the call begins.
	direct, directBack, propagate bool
	// slow: the latest attempt sent was drawn slow at the callee.
	slow bool
	// worked is what the latest of its attempts that the callee began
	// work on was (prevNone, prevFast, prevSlow by the edge's Slowness).
	worked int8
	// inst is the caller's instance that makes the call (its job's), whose
	// breaker on the edge it goes through.
	inst int32
	// failedEdges (root requests): the edges on which an attempt serving
	// it has failed.
	failedEdges []int32
	gen         int32
	nextFree    int32 // while the slot is free: the next free one (see newJob)
}

// attempt is one try of a call. Its slot is reused once both sides are
// done with it: the client no longer waits (!open) and no server job holds
// it (job < 0).
type attempt struct {
	call int32
	job  int32 // the server job; -1 if none (yet, or any more); -2 once the slot is free
	// deadline is the attempt's own: the call's, or the per-try timeout's
	// if that comes first. Propagation passes it to the callee.
	deadline float64
	// useful is the work an answer on its way carries (see job.useful);
	// whoever stops waiting for the attempt wastes it.
	useful float64
	// next is the call's next older open attempt (see call.open), -1
	// for none.
	next int32
	n    int16
	lost int8 // transmissions of the message in flight lost so far
	open bool
	// afterSlow: the attempt its call sent before it was drawn slow.
	afterSlow bool
	// hedge: sent while an earlier attempt of its call was still out,
	// before any answer: the callee's outcome is drawn as a first
	// attempt's (graph counts hedges so).
	hedge     bool
	ok        bool    // the answer on its way
	throttled bool    // it is a failure the callee throttled (outThrottled)
	noAnswer  bool    // it failed without an answer (outNoAnswer, a reset connection)
	ra        float64 // the Retry-After it carries (seconds), 0 for none
	slotHead
}

// pool is a service's (or one shard's, or replica's) workers and FIFO queue.
// svc and idx name it (the service, and the pool's index among the
// service's); limits is the service's (see svcState).
type pool struct {
	workers, busy int
	queue         []int32
	head          int
	svc, idx      int32
	limits        bool
}

func (p *pool) queued() int { return len(p.queue) - p.head }

func (p *pool) push(j int32) { p.queue = append(p.queue, j) }

func (p *pool) pop() int32 {
	j := p.queue[p.head]
	p.head++
	if p.head > 1024 && p.head*2 > len(p.queue) {
		p.queue = append(p.queue[:0], p.queue[p.head:]...)
		p.head = 0
	}
	return j
}

type svcState struct {
	// pools are the service's, a window of sim.pools from pool0 on.
	pools []pool
	pool0 int32
	name  string
	// faults are the faults that name this service (nil for most): the
	// only ones degrade.Schedule.Effect would look at, so a service
	// without any skips the lookups. limits: some of them is a db-pool.
	faults degrade.Schedule
	limits bool
	// parts is the number of shards (byKey) or replicas the faults split
	// the service into; part p is served by pool p % len(pools).
	parts int
	byKey bool
	// direct and directBack are what the calls to the service have as
	// theirs (see call), but for an edge's transit time.
	direct, directBack bool
	// sheds: the service bounds its queue (QueueCap or ShedRetriesAt).
	sheds bool
	// insts is how many instances the service runs as (at least 1), and
	// nextInst the one the next request it serves goes to.
	insts, nextInst int32
	// eff is what the faults do to every attempt from now until
	// effUntil, when they start or end, unless it varies by caller or
	// part: the effect is computed once per such span, not per attempt.
	eff      degrade.Effect
	effUntil float64
	varies   bool
}

// noEffect is degrade's "no fault".
var noEffect = degrade.Effect{Slow: 1}

// effect is what the faults on service svc do at the current time to an
// attempt from the service caller (-1: the end user, or a question about
// the service alone) landing on part (shard or replica). The effect is
// returned by reference (a 56-byte record), to be read at once: it is
// valid until the next call, and never written through.
func (s *sim) effect(caller, svc, part int32) *degrade.Effect {
	st := &s.svcs[svc]
	if len(st.faults) == 0 {
		return &noEffect
	}
	if s.now >= st.effUntil {
		st.eff = st.faults.Effect("", st.name, 0, s.now)
		st.varies = st.faults.Varies(st.name, s.now)
		st.effUntil = st.faults.NextChange(st.name, s.now)
	}
	if !st.varies {
		return &st.eff
	}
	name := ""
	if caller >= 0 {
		name = s.m.Services[caller].Name
	}
	s.effScratch = st.faults.Effect(name, st.name, int(part), s.now)
	return &s.effScratch
}

// sim is one run: the model, the faults, the clock and every entity.
type sim struct {
	m      *Model
	faults degrade.Schedule
	cfg    RunConfig
	h      agenda
	now    float64

	// One random stream per component, so changing one component's draws
	// leaves the others' sequences alone.
	rngArrival, rngService, rngClient, rngFault *rand.Rand
	rngOutcome                                  *rand.Rand
	// observed: the run replays the traces' own failure timeline.
	observed bool

	svcs       []svcState
	pools      []pool         // every service's pools, service by service
	effScratch degrade.Effect // see effect
	jobs       []job
	calls      []call
	atts       []attempt
	// endUser describes the one attempt of a root request that has no
	// record of its own (see startRoot), for the code written for an
	// attempt's: n 1, open, no deadline, and call the request's, set
	// before each use. It is never in the slab, and never freed.
	endUser attempt
	// The heads of the slabs' free lists, -1 for none (see newJob).
	jobFree, callFree, attFree int32

	budgets []Budget // per edge (shared budgets appear under each of their edges)
	// outstanding counts the attempts out (sent, not yet answered or
	// given up on) from each caller to each callee, when some edge limits
	// them (Policy.MaxRequests), and outSlot is each edge's count: one for
	// every edge between the same two services, as Envoy's cluster
	// circuit breaker counts every route of the caller's proxy into the
	// cluster. Both nil otherwise.
	outstanding []int32
	outSlot     []int32
	// breakers are each edge's circuit breakers, one per instance of its
	// caller (call.inst), nil for an edge without one.
	breakers [][]*Breaker
	// lastEnded: per edge, how its latest calls to end had ended (see
	// edgeRun).
	lastEnded []edgeRun
	// fails are the model's failure models, fails[0] nil for none;
	// entryFail and edgeFail index them per root operation and per edge.
	fails               []*Failures
	entryFail, edgeFail []int32
	entryCDF            []float64
	ends                int // events processed

	// arrivalEnd is when root arrivals stop: the run's duration, or later
	// while the verdict needs more time (see tick), by at most maxExt.
	// judging: the run has a trigger to judge; verdict is the verdict
	// once one is reached; parked are the arrivals that came after
	// arrivalEnd while it was still open.
	arrivalEnd, maxExt float64
	judging            bool
	verdict            judgement
	parked             []event

	// lines are the clients' (one, or Model.OpenClients): each counts
	// its root requests in flight and holds those waiting for its limit
	// on them (Model.MaxInflight). With several, rootLine is the line of
	// each root request's call slot, and rngLine draws each arrival's.
	lines    []clientLine
	rootLine []int32
	rngLine  *rand.Rand

	met metrics

	// shadows are other policies followed through the run (see
	// RunShadowed), nil for none; each edge's budget is then a shadowed
	// one, which feeds theirs.
	shadows []shadow
}

// waitingRoot is a root request that arrived at At for entry Entry and
// waits for the client's limit on requests in flight.
type waitingRoot struct {
	at    float64
	entry int
}

// clientLine is one client's root requests: roots in flight, and those
// waiting, in order of arrival from head on.
type clientLine struct {
	roots   int
	waiting []waitingRoot
	head    int
}

func newRNG(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

func newSim(m *Model, faults degrade.Schedule, cfg RunConfig) *sim {
	s := &sim{m: m, faults: faults, cfg: cfg, arrivalEnd: cfg.Duration,
		rngArrival: newRNG(cfg.Seed, 1), rngService: newRNG(cfg.Seed, 2),
		rngClient: newRNG(cfg.Seed, 3), rngFault: newRNG(cfg.Seed, 4), rngOutcome: newRNG(cfg.Seed, 5),
		observed: faults.Observed(), jobFree: -1, callFree: -1, attFree: -1,
		endUser: attempt{job: -1, n: 1, open: true, deadline: math.Inf(1), next: -1}}
	s.svcs = make([]svcState, len(m.Services))
	for i, svc := range m.Services {
		st := &s.svcs[i]
		st.name = svc.Name
		for _, f := range faults {
			if f.Service == svc.Name {
				st.faults = append(st.faults, f)
				st.limits = st.limits || f.Kind == degrade.DBPool
			}
		}
		st.direct = len(st.faults) == 0 && m.Hop == nil
		st.directBack = len(st.faults) == 0 && (m.Hop == nil || m.HopRoundTrip)
		st.sheds = svc.QueueCap > 0 || svc.ShedRetriesAt > 0
		st.insts = int32(max(svc.Instances, 1))
		st.parts, st.byKey = faults.Shards(svc.Name), true
		if r := faults.Replicas(svc.Name); r > 1 {
			st.parts, st.byKey = r, false
		}
	}
	n := 0
	for i, svc := range m.Services {
		n += min(s.svcs[i].parts, svc.Workers)
	}
	s.pools = make([]pool, 0, n)
	for i, svc := range m.Services {
		// The parts split the service's workers: each pool gets its share,
		// and a service with fewer workers than parts puts several parts
		// on one pool, so partitioning never adds capacity.
		st := &s.svcs[i]
		n := min(st.parts, svc.Workers)
		st.pool0 = int32(len(s.pools))
		for k := range n {
			s.pools = append(s.pools, pool{workers: (svc.Workers + n - 1 - k) / n, svc: int32(i), idx: int32(k), limits: st.limits})
		}
		st.pools = s.pools[st.pool0:len(s.pools):len(s.pools)]
	}
	s.budgets = budgetsOf(len(m.Edges), func(i int) (Policy, int) { return m.Edges[i].Policy, m.Edges[i].Callee })
	s.breakers = make([][]*Breaker, len(m.Edges))
	s.lastEnded = make([]edgeRun, len(m.Edges))
	s.fails = []*Failures{nil}
	failIndex := func(f *Failures) int32 {
		if f == nil {
			return 0
		}
		s.fails = append(s.fails, f)
		return int32(len(s.fails) - 1)
	}
	for _, e := range m.Entry {
		s.entryFail = append(s.entryFail, failIndex(e.Fail))
	}
	for _, e := range m.Edges {
		s.edgeFail = append(s.edgeFail, failIndex(e.Fail))
	}
	for i, e := range m.Edges {
		if e.Policy.Breaker.Enabled() {
			// One breaker per instance of the caller, each made when its
			// instance first calls (see breaker).
			s.breakers[i] = make([]*Breaker, s.svcs[e.Caller].insts)
		}
		if e.Policy.MaxRequests > 0 && s.outSlot == nil {
			s.outSlot = outSlots(m.Edges)
			s.outstanding = make([]int32, len(m.Edges))
		}
	}
	s.lines = make([]clientLine, max(1, m.OpenClients))
	if m.OpenClients > 1 {
		s.rngLine = newRNG(cfg.Seed, 6)
	}
	total := 0.0
	for _, e := range m.Entry {
		total += e.Weight
		s.entryCDF = append(s.entryCDF, total)
	}
	// Room for the expected root requests, and a little more, so the
	// latency list rarely grows.
	expected := m.Rate * cfg.Duration
	if m.Clients > 0 {
		expected = 0
	}
	if start, end, ok := faults.Trigger(); ok && !math.IsInf(end, 1) && start < cfg.Duration {
		s.judging = true
		s.maxExt = max(0, math.Ceil(end)+cfg.MaxJudge-cfg.Duration)
	}
	s.met.init(cfg.Duration+s.maxExt, len(m.Edges), int(min(expected*1.05+64, 1<<26)))
	return s
}

// checkEvery is how many events pass between checks of the context (a
// power of two).
const checkEvery = 4096

func (s *sim) run(ctx context.Context) error {
	m := s.m
	switch {
	case len(m.Arrivals) > 0:
		s.h.push(m.Arrivals[0].At, evArrival, 0, 0)
	case m.Clients > 0:
		for c := range m.Clients {
			// Spread the clients' first requests over one think time.
			s.h.push(s.rngArrival.Float64()*max(m.Think, 0.01), evThink, int32(c), 0)
		}
	default:
		s.h.push(s.rngArrival.ExpFloat64()/m.Rate, evArrival, 0, 0)
	}
	s.h.push(1, evTick, 0, 0)
	for _, f := range s.faults {
		s.h.push(f.At, evKick, 0, 0)
		if f.For > 0 {
			s.h.push(f.At+f.For, evKick, 0, 0)
		}
	}
	nominal := s.cfg.Duration + s.cfg.Drain
	s.h.push(nominal, evFreeze, 0, 0)
	for {
		// agenda.pop, with its commonest cases inlined.
		var ev event
		if !s.h.laneEmpty() {
			ev = s.h.pop()
		} else if s.h.arrivalFirst() {
			ev = s.h.takeArrival()
		} else if len(s.h.ev) > 0 {
			ev = s.h.eventHeap.pop()
		} else {
			break // nothing pending
		}
		t := ev.time()
		if t > nominal && t > s.arrivalEnd && (s.verdict.state != "" || !s.judging) {
			break
		}
		s.now = t
		s.ends++
		if s.ends&(checkEvery-1) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if s.ends > s.cfg.MaxEvents {
				return fmt.Errorf("%w: the run passed %d events at %.1f s simulated (the system is overloaded: each attempt costs a few events); raise the budget (--max-events) or shorten the run", ErrEventBudget, s.cfg.MaxEvents, s.now)
			}
		}
		// The two commonest kinds are tested first, as plain branches: a
		// jump table's indirect jump mispredicted on every change of kind.
		if k := ev.kind(); k == evServed {
			if j := &s.jobs[ev.id]; j.gen == ev.gen && j.state == jobRunning {
				if j.leaf {
					s.complete(ev.id, j) // it calls nothing: done
				} else {
					s.served(ev.id, j)
				}
			}
			continue
		} else if k == evArrival && len(m.Arrivals) == 0 {
			if !s.ended(ev) {
				s.rootRequest(-1)
				s.h.arrival(s.now+s.rngArrival.ExpFloat64()/m.Rate, 0, 0)
			}
			continue
		}
		switch ev.kind() {
		case evArrival:
			if s.ended(ev) {
				break
			}
			// The traces' own arrivals (open-loop ones were handled above): ev.id counts them across repeats.
			k, n := int(ev.id), len(m.Arrivals)
			s.rootRequest(m.Arrivals[k%n].Entry)
			k++
			s.h.push(float64(k/n)*m.Period+m.Arrivals[k%n].At, evArrival, int32(k), 0)
		case evThink:
			if !s.ended(ev) {
				s.rootRequest(-1)
			}
		case evTimeout, evHedge, evRequest, evResend, evResponse, evResendAnswer:
			// Events about an attempt the client still waits for.
			if a := &s.atts[ev.id]; a.gen == ev.gen && a.open {
				attemptEvents[ev.kind()](s, ev.id)
			}
		case evRetry:
			if c := &s.calls[ev.id]; c.gen == ev.gen && !c.done {
				s.send(ev.id, c)
			}
		case evCancel:
			if j := &s.jobs[ev.id]; j.gen == ev.gen && j.state != jobDone {
				s.cancel(ev.id)
			}
		case evTick:
			s.tick()
		case evFreeze:
			s.freeze()
		case evKick:
			for pi := range s.pools {
				s.startQueued(int32(pi))
			}
		}
	}
	if !s.met.frozen {
		s.freeze()
	}
	return nil
}

// attemptEvents handle the events about an open attempt, by kind.
var attemptEvents = [...]func(s *sim, ai int32){
	evTimeout: (*sim).timeout,
	evHedge:   func(s *sim, ai int32) { s.hedge(s.atts[ai].call) },
	evRequest: func(s *sim, ai int32) {
		a := &s.atts[ai]
		s.arrive(ai, a, &s.calls[a.call])
	},
	evResend:       func(s *sim, ai int32) { s.cross(ai, false) },
	evResponse:     (*sim).answer,
	evResendAnswer: func(s *sim, ai int32) { s.cross(ai, true) },
}

// rootRequest sends a root request to entry i, or to one drawn by weight
// when i < 0.
func (s *sim) rootRequest(i int) {
	if i < 0 && len(s.entryCDF) > 1 {
		i = 0
		u := s.rngArrival.Float64() * s.entryCDF[len(s.entryCDF)-1]
		for i < len(s.entryCDF)-1 && u >= s.entryCDF[i] {
			i++
		}
	}
	i = max(i, 0)
	s.met.rootStarted(s.now, s.now < s.cfg.Duration)
	k := 0
	if s.rngLine != nil {
		k = s.rngLine.IntN(len(s.lines)) // the client it comes from
	}
	if lim := s.m.MaxInflight; lim > 0 && s.lines[k].roots >= lim {
		// The client already has its limit of requests in flight: this
		// one waits for one of them to end.
		l := &s.lines[k]
		l.waiting = append(l.waiting, waitingRoot{at: s.now, entry: i})
		return
	}
	s.startRoot(i, s.now, k)
}

// startRoot sends the root request that arrived at the given time from
// client line k to entry i. Its latency and deadline count from its
// arrival: the end user waits for the client's turn too.
func (s *sim) startRoot(i int, arrived float64, k int) {
	e := &s.m.Entry[i]
	deadline := math.Inf(1)
	if s.m.ClientDeadline > 0 {
		deadline = arrived + s.m.ClientDeadline
	}
	key, st := s.key(int32(e.Service)), &s.svcs[e.Service]
	c, cp := s.newCall()
	cp.job, cp.edge, cp.fail, cp.svc, cp.op = -1, -1, s.entryFail[i], int32(e.Service), int32(e.Op)
	cp.start, cp.deadline, cp.key, cp.direct, cp.directBack, cp.propagate = arrived, deadline, key, st.direct, st.directBack, s.m.RootPropagate
	s.lines[k].roots++
	if s.rngLine != nil {
		if int(c) >= len(s.rootLine) {
			s.rootLine = append(s.rootLine, make([]int32, int(c)+1-len(s.rootLine))...)
		}
		s.rootLine[c] = int32(k)
	}
	if cp.direct && cp.directBack && math.IsInf(deadline, 1) {
		// Nothing can happen to the end user's one attempt (rootPolicy)
		// on its way there or back (no fault, no hop) or while it waits
		// (no deadline: no timeout, hence no cancel): it needs no record.
		// Its job answers the request itself (job.att -1, job.root the
		// request), and send's steps for it are these two counts.
		cp.attempts, cp.inflight = 1, 1
		s.endUser.call = c
		s.arrive(-1, &s.endUser, cp)
		return
	}
	s.send(c, cp)
}

// admit starts the root requests waiting for client line k's limit on
// requests in flight, in order of arrival, while it has room; one whose
// end user's deadline passed meanwhile fails without being sent.
func (s *sim) admit(k int) {
	for l := &s.lines[k]; l.head < len(l.waiting) && l.roots < s.m.MaxInflight; {
		w := l.waiting[l.head]
		l.head++
		if l.head > 1024 && l.head*2 > len(l.waiting) {
			l.waiting = append(l.waiting[:0], l.waiting[l.head:]...)
			l.head = 0
		}
		if s.m.ClientDeadline > 0 && s.now >= w.at+s.m.ClientDeadline {
			s.met.rootDone(w.at, s.now, false, false, w.at < s.cfg.Duration)
			continue
		}
		s.startRoot(w.entry, w.at, k)
	}
}

// key draws the key of a request to svc: only a service split into shards
// by key needs one.
func (s *sim) key(svc int32) float64 {
	if st := &s.svcs[svc]; st.parts > 1 && st.byKey {
		return s.drawKey()
	}
	return 0
}

// drawKey is kept out of line so that key, on every call, inlines.
//
//go:noinline
func (s *sim) drawKey() float64 { return s.rngFault.Float64() }

// policy returns the policy of call c (the end user's for a root request).
func (s *sim) policy(c *call) *Policy {
	if c.edge < 0 {
		return &rootPolicy
	}
	return &s.m.Edges[c.edge].Policy
}

// rootPolicy is the end user: one attempt, waiting until its deadline.
var rootPolicy = Policy{MaxAttempts: 1}

// refuse ends an attempt of call ci (c) refused before it was sent (by
// an open breaker, or the proxy's limit on requests out): a retry or hedge
// the budget granted gives its slot back, and the call fails unless an
// attempt of it is still out (a refused hedge).
func (s *sim) refuse(ci int32, c *call) {
	if c.attempts > 0 && s.budgets[c.edge] != nil {
		s.budgets[c.edge].Done(s.now, true)
	}
	if c.inflight > 0 {
		return
	}
	s.finish(ci, false, 0)
}

// outSlots numbers the pairs of caller and callee, giving each edge its
// pair's number (see sim.outSlot).
func outSlots(edges []Edge) []int32 {
	slots, pairs := make([]int32, len(edges)), map[[2]int]int32{}
	for i, e := range edges {
		k := [2]int{e.Caller, e.Callee}
		if _, ok := pairs[k]; !ok {
			pairs[k] = int32(len(pairs))
		}
		slots[i] = pairs[k]
	}
	return slots
}

// unout counts n attempts of call c as no longer out on its edge (the
// answer came, or the client stopped waiting), for the edge's limit on
// requests out.
func (s *sim) unout(c *call, n int16) {
	if s.outstanding != nil && c.edge >= 0 {
		s.outstanding[s.outSlot[c.edge]] -= int32(n)
	}
}

// send makes the next attempt of call ci (c).
func (s *sim) send(ci int32, c *call) {
	p := s.policy(c)
	if c.edge >= 0 {
		if br := s.breaker(c); br != nil && (c.attempts == 0 || !p.Breaker.PerCall) && !br.Allow(s.now) {
			s.met.refusedBreaker(c.edge, s.now)
			s.refuse(ci, c)
			return
		}
		if s.outstanding != nil && p.MaxRequests > 0 && s.outstanding[s.outSlot[c.edge]] >= int32(p.MaxRequests) {
			// The caller's proxy has the edge's limit of requests out
			// (Envoy's max_requests): it fails this one at once, 503 UO,
			// and never retries an overflow.
			s.met.overflowed(s.now)
			s.refuse(ci, c)
			return
		}
	}
	hedge := c.inflight > 0
	c.attempts++
	c.inflight++
	n := c.attempts
	if c.edge >= 0 {
		if s.outstanding != nil {
			s.outstanding[s.outSlot[c.edge]]++
		}
		if b := s.budgets[c.edge]; b != nil && n == 1 {
			b.Request(s.now)
		}
		s.met.attemptSent(c.edge, n > 1, s.now)
	}
	// The client waits for the per-try timeout or what is left of the
	// deadline, whichever comes first: the attempt's own deadline.
	deadline := c.deadline
	if p.PerTryTimeout > 0 {
		deadline = min(deadline, s.now+p.PerTryTimeout)
	}
	a, ap := s.newAttempt()
	ap.call, ap.job, ap.n, ap.open, ap.deadline, ap.next = ci, -1, n, true, deadline, c.open
	ap.afterSlow, c.slow = c.slow, false
	ap.hedge = hedge
	c.open = a
	if !math.IsInf(deadline, 1) {
		s.h.push(deadline, evTimeout, a, ap.gen)
	}
	if p.HedgeAfter > 0 && int(n) < p.MaxAttempts {
		// The next hedge, if this attempt has not answered by then.
		s.h.later(s.now+p.HedgeAfter, evHedge, a, ap.gen)
	}
	if c.direct {
		// Nothing on the way to lose or delay the request (see cross):
		// it reaches the callee now.
		s.arrive(a, ap, c)
		return
	}
	s.cross(a, false)
}

// breaker is the circuit breaker call c (of an edge) goes through, its
// caller instance's on its edge; nil for none.
func (s *sim) breaker(c *call) *Breaker {
	brs := s.breakers[c.edge]
	if brs == nil {
		return nil
	}
	if br := brs[c.inst]; br != nil {
		return br
	}
	return s.newBreaker(c.edge, c.inst)
}

// newBreaker makes instance k's breaker on edge e, with a random stream
// of its own: instance 0's is the edge's stream of a caller that runs as
// one, and none depends on when it is made. Made on first use, an
// instance that never calls costs its slot only.
func (s *sim) newBreaker(e, k int32) *Breaker {
	br := NewBreaker(s.m.Edges[e].Policy.Breaker, newRNG(s.cfg.Seed, uint64(k)<<32|(100+uint64(e))))
	s.breakers[e][k] = br
	return br
}

// caller is the service that makes call c (-1 for the end user). The
// edge names it: c.job's slot may have been reused.
func (s *sim) caller(c *call) int32 {
	if c.edge < 0 {
		return -1
	}
	return int32(s.m.Edges[c.edge].Caller)
}

// lossOf reports whether one transmission between call c's client and its
// callee is lost now: a packet-loss draw, or an outage that hangs.
func (s *sim) lossOf(c *call) bool {
	if len(s.svcs[c.svc].faults) == 0 {
		return false // the common case, inlined
	}
	return s.lossOfFaults(c)
}

func (s *sim) lossOfFaults(c *call) bool {
	eff := s.effect(s.caller(c), c.svc, 0)
	return eff.NoAnswer || eff.Loss > 0 && s.rngFault.Float64() < eff.Loss
}

// lose schedules the retransmission of attempt ai's lost message (kind
// evResend for the request, evResendAnswer for the answer) after TCP's
// retransmission timeout, which starts at RTO and doubles with every loss.
func (s *sim) lose(ai int32, kind evKind) {
	a := &s.atts[ai]
	s.h.later(s.now+s.cfg.RTO*math.Ldexp(1, int(a.lost)), kind, ai, a.gen)
	a.lost++
}

// reset reports whether the connection of attempt ai gave up: its message
// was lost on the first transmission and every retransmission.
func (s *sim) reset(ai int32) bool {
	return int(s.atts[ai].lost) > s.cfg.Retransmits
}

// cross carries attempt ai's request, or its answer, over the network.
// A lost one is resent (see lose); one that gets through arrives after the
// network hop, or at once. A connection that gave up fails the attempt,
// and an answer on its way is wasted.
func (s *sim) cross(ai int32, answer bool) {
	a := &s.atts[ai]
	if s.reset(ai) {
		s.met.waste(a.useful, s.now)
		a.ok, a.ra, a.useful, a.noAnswer = false, 0, 0, true
		s.answer(ai)
		return
	}
	resend, arrival := evResend, evRequest
	if answer {
		resend, arrival = evResendAnswer, evResponse
	}
	if s.lossOf(&s.calls[a.call]) {
		s.lose(ai, resend)
		return
	}
	a.lost = 0
	c := &s.calls[a.call]
	switch {
	case !answer && c.edge >= 0 && s.m.Edges[c.edge].Transit != nil:
		// The traces' own network time and client overhead on this edge:
		// the attempt reaches the callee that much later and holds no
		// callee worker meanwhile. A retry's is its own where the traces
		// tell it from a first attempt's.
		ed := &s.m.Edges[c.edge]
		tr := ed.Transit
		if a.n > 1 && ed.RetryTransit != nil {
			tr = ed.RetryTransit
		}
		s.h.later(s.now+sample(tr, s.rngOutcome), arrival, ai, a.gen)
	case s.m.Hop != nil && !(answer && s.m.HopRoundTrip):
		s.h.later(s.now+sample(s.m.Hop, s.rngFault), arrival, ai, a.gen)
	case answer:
		s.answer(ai)
	default:
		s.arrive(ai, a, c)
	}
}

// arrive delivers attempt ai (a, of call c) to its callee, where faults,
// shedding and the queue decide its fate.
func (s *sim) arrive(ai int32, a *attempt, c *call) {
	st := &s.svcs[c.svc]
	part := int32(0)
	if st.parts > 1 {
		if st.byKey {
			part = int32(st.faults.PickShard(st.name, s.now, c.key))
		} else {
			part = int32(s.rngFault.IntN(st.parts))
		}
	}
	if len(st.faults) > 0 {
		if eff := s.effect(s.caller(c), c.svc, part); eff.Fail || eff.ErrorRate > 0 && s.rngFault.Float64() < eff.ErrorRate {
			s.reply(ai, a, false, s.cfg.RetryAfter, 0)
			return
		}
	}
	pi := part
	if n := int32(len(st.pools)); pi >= n {
		pi %= n // several parts to a pool (the division only then)
	}
	p := &st.pools[pi]
	pi += st.pool0 // the pool's index in sim.pools
	if st.sheds && s.shed(c.svc, p, a.n) {
		s.met.shed(s.now)
		s.reply(ai, a, false, s.cfg.RetryAfter, 0)
		return
	}
	deadline := math.Inf(1)
	if c.propagate {
		// The attempt's own deadline travels with it (grpc-timeout,
		// x-envoy-expected-rq-timeout-ms): the per-try timeout's if that
		// is sooner than the call's.
		deadline = a.deadline
	}
	fail := c.fail
	var root, rootGen int32
	var same, other bool
	if c.job < 0 {
		// A root request is its own root, and has failed on no edge of
		// its own: other is whether it failed on any (rootOf and tainted,
		// without the lookups).
		root, rootGen, other = a.call, c.gen, len(c.failedEdges) > 0
	} else {
		root, rootGen = s.rootOf(a.call)
		same, other = s.tainted(a.call)
	}
	if a.n == 1 {
		c.tainted = same
	} else {
		// A retry's question is whether its call began on a request that
		// had already failed on this edge.
		same, other = c.tainted, false
	}
	no := a.n
	if a.hedge {
		no = 1
	}
	j, jp := s.newJob()
	jp.att, jp.svc, jp.op, jp.pool, jp.part, jp.deadline, jp.attemptNo = ai, c.svc, c.op, pi, part, deadline, no
	jp.fail, jp.afterFailure, jp.afterRun, jp.afterOther, jp.afterDown, jp.root, jp.rootGen = fail, same, c.run, other, c.downFailed, root, rootGen
	jp.faulty = len(st.faults) > 0
	if st.insts > 1 {
		// The service's instances take the requests it serves in turn
		// (round robin by arrival).
		jp.inst = st.nextInst
		if st.nextInst++; st.nextInst == st.insts {
			st.nextInst = 0
		}
	}
	if fail != 0 && s.fails[fail].Slow != nil { // fails[0] is nil: no failure model
		jp.slow = s.rngOutcome.Float64() < s.fails[fail].Slow.prob(a.n, a.afterSlow)
		c.slow = jp.slow
	}
	a.job = j
	if p.queued() == 0 && p.busy < s.limit(p) {
		s.begin(j, jp, p) // what queueing it and startQueued would do
		return
	}
	p.push(j)
	s.startQueued(pi)
}

// shed reports whether service svc sheds attempt number n, which would
// join pool p's queue: the queue is full, or a retry finds it as long
// as the service's bound for retries.
func (s *sim) shed(svc int32, p *pool, n int16) bool {
	sv := &s.m.Services[svc]
	return sv.QueueCap > 0 && p.queued() >= sv.QueueCap ||
		sv.ShedRetriesAt > 0 && n > 1 && p.queued() >= sv.ShedRetriesAt
}

// limit is the pool's worker count under active faults.
func (s *sim) limit(p *pool) int {
	if !p.limits {
		return p.workers // the common case, inlined
	}
	return s.limitFaults(p)
}

func (s *sim) limitFaults(p *pool) int {
	if eff := s.effect(-1, p.svc, p.idx); eff.Limit > 0 {
		return min(p.workers, max(1, eff.Limit/len(s.svcs[p.svc].pools)))
	}
	return p.workers
}

// startQueued gives free workers of pool pi (an index into sim.pools) to
// its queued jobs.
func (s *sim) startQueued(pi int32) {
	if p := &s.pools[pi]; p.head < len(p.queue) { // none queued, the common case, inlined
		s.startJobs(p)
	}
}

func (s *sim) startJobs(p *pool) {
	for limit := s.limit(p); p.busy < limit && p.queued() > 0; {
		ji := p.pop()
		s.begin(ji, &s.jobs[ji], p)
	}
}

// begin gives job ji (j), off the queue of its pool p, a worker, unless
// it was cancelled or its deadline has passed.
func (s *sim) begin(ji int32, j *job, p *pool) {
	if j.cancelled {
		s.freeJob(ji, j)
		return
	}
	if s.now >= j.deadline {
		// The deadline the request carried has passed while it waited:
		// the server drops it before starting it.
		s.met.droppedLate(s.now)
		ai, a := j.att, s.attemptOf(j)
		s.freeJob(ji, j)
		s.reply(ai, a, false, 0, 0)
		return
	}
	sv := &s.m.Services[j.svc]
	p.busy++
	j.state = jobRunning
	j.start = s.now
	op := &sv.Ops[j.op]
	j.leaf = len(op.Calls) == 0
	dist := op.Time
	var chain *WorkChain
	var a *attempt
	if j.att >= 0 {
		// An edge whose later attempts meet other work at the callee than
		// its first attempts: each kind's own.
		a = &s.atts[j.att]
		if e := s.calls[a.call].edge; e >= 0 && s.m.Edges[e].Work != nil {
			dist = s.m.Edges[e].Work
			if a.n > 1 {
				dist = s.m.Edges[e].RetryWork
			}
		}
		if e := s.calls[a.call].edge; e >= 0 {
			chain = s.m.Edges[e].Slowness
		}
	}
	var slow *SlowTries
	if j.fail != 0 {
		slow = s.fails[j.fail].Slow
	}
	failWork := false
	if j.fail != 0 && (op.FailTime != nil || op.FailFast > 0) {
		// The job's own outcome decides how long it works (an error is
		// often answered fast) and whether it calls anything; a slow
		// try's time is slow whatever its outcome.
		j.own, j.ownRA = s.drawOwn(j)
		j.drawn = true
		if j.own != outOK && op.FailTime != nil && !j.slow {
			dist, slow, failWork = op.FailTime, nil, true
		}
	}
	var t float64
	switch {
	case slow != nil:
		t = slow.work(dist, j.slow, s.rngService)
	case chain != nil && !failWork:
		// Slowness that comes with the request: drawn by the attempt
		// before, while the call still waits for this one (a call
		// that ended, or gave the attempt up, has no attempt after it).
		prev := prevNone
		if a.open {
			prev = s.calls[a.call].worked
		}
		t = chain.work(a.n, prev, s.rngService)
	default:
		t = sample(dist, s.rngService)
	}
	if chain != nil && a.open {
		s.calls[a.call].worked = prevFast
		if t > chain.Above {
			s.calls[a.call].worked = prevSlow
		}
	}
	add := 0.0
	if j.faulty {
		eff := s.effect(-1, j.svc, j.part)
		t, add = t*eff.Slow, eff.Add
	}
	if sv.Thrash > 0 {
		t *= 1 + sv.Thrash*min(float64(p.queued())/float64(p.workers), 4)
	}
	s.h.later(s.now+(t+add), evServed, ji, j.gen)
}

// served: job ji's (j's) own work is done, and its operation calls
// others (a leaf's job completes at once); make its downstream calls.
func (s *sim) served(ji int32, j *job) {
	op := &s.m.Services[j.svc].Ops[j.op]
	if j.drawn && j.own != outOK && op.FailFast > 0 && s.rngOutcome.Float64() < op.FailFast {
		// A request the service rejects fails before it calls anything.
		s.complete(ji, j)
		return
	}
	j.state = jobCalling
	j.selfEnd = s.now
	if op.Parallel {
		// pending holds one extra count while the calls are started, so a
		// call that ends at once (a fast failure) cannot complete the job
		// before its siblings are sent.
		j.pending = 1
		for _, e := range op.Calls {
			for range s.repeats(e) {
				s.jobs[ji].pending++
				s.startCall(ji, int32(e))
			}
		}
		j = &s.jobs[ji] // the calls may have grown the slab
		if j.pending--; j.pending == 0 {
			s.complete(ji, j)
		}
		return
	}
	j.nextEdge = -1
	s.nextCall(ji)
}

// repeats draws how many calls one execution makes over edge e.
func (s *sim) repeats(e int) int {
	ed := &s.m.Edges[e]
	if ed.Prob < 1 && s.rngService.Float64() >= ed.Prob {
		return 0
	}
	return ed.Repeat
}

// nextCall makes a sequential job's next call (those of its edge's Width
// still to make), or, once the calls of every edge have ended, completes
// it.
func (s *sim) nextCall(ji int32) {
	j := &s.jobs[ji]
	op := &s.m.Services[j.svc].Ops[j.op]
	for j.repeatLeft == 0 {
		if j.pending > 0 {
			return // the edge's other calls are still out
		}
		j.nextEdge++
		if int(j.nextEdge) >= len(op.Calls) {
			s.complete(ji, j)
			return
		}
		j.repeatLeft = int32(s.repeats(op.Calls[j.nextEdge]))
	}
	e, at, gen := int32(op.Calls[j.nextEdge]), j.nextEdge, j.gen
	j.repeatLeft--
	j.pending++
	s.startCall(ji, e)
	// A pool of Width: the rest of its first calls. startCall may end a
	// call at once (and make the next through callDone, or end the job),
	// and may grow the job slab: read the job again each time.
	for w := int32(s.m.Edges[e].Width); w > 1; {
		j = &s.jobs[ji]
		if j.gen != gen || j.state != jobCalling || j.nextEdge != at || j.repeatLeft == 0 || j.pending >= w {
			return
		}
		j.repeatLeft--
		j.pending++
		s.startCall(ji, e)
	}
}

func (s *sim) startCall(ji, e int32) {
	j := &s.jobs[ji]
	ed := &s.m.Edges[e]
	deadline := j.deadline
	if d := ed.Policy.Deadline; d > 0 {
		deadline = min(deadline, s.now+d)
	}
	key, run, st := s.key(int32(ed.Callee)), s.lastEnded[e].failedFor(j.root, j.rootGen), &s.svcs[ed.Callee]
	c, cp := s.newCall()
	cp.job, cp.jobGen, cp.edge, cp.fail, cp.svc, cp.op = ji, j.gen, e, s.edgeFail[e], int32(ed.Callee), int32(ed.CalleeOp)
	cp.start, cp.deadline, cp.key, cp.run, cp.inst = s.now, deadline, key, run, j.inst
	cp.direct, cp.directBack, cp.propagate = st.direct && ed.Transit == nil, st.directBack, ed.Policy.Propagate
	s.send(c, cp)
}

// complete ends job ji (j): its worker is freed and its attempt answered with
// the outcome the failure model gives. An error-after-work fault decides
// here, with the work done, that the answer is a 5xx.
func (s *sim) complete(ji int32, j *job) {
	o, retryAfter := outOK, 0.0
	if j.failed || j.fail != 0 { // else it succeeds: no failure model
		o, retryAfter = s.ownOutcome(ji)
		j = &s.jobs[ji]
	}
	if o == outOK && j.faulty {
		eff := s.effect(-1, j.svc, j.part)
		if eff.FailAfterWork || eff.ErrorAfterWork > 0 && s.rngFault.Float64() < eff.ErrorAfterWork {
			o = outFail
		}
	}
	ai, pi := j.att, j.pool
	a := s.attemptOf(j)
	if a.open {
		c := &s.calls[a.call]
		c.downFailed = j.failed
		c.clientErr = c.clientErr || o == outClientError
	}
	work := s.release(ji, j)
	if o == outOK {
		s.reply(ai, a, true, 0, work)
	} else {
		// A failed answer's work is wasted; only a server error that asks
		// for it carries a Retry-After (the outcome gives 0 otherwise).
		s.met.waste(work, s.now)
		a.throttled, a.noAnswer = o == outThrottled, o == outNoAnswer
		s.reply(ai, a, false, retryAfter, 0)
	}
	s.startQueued(pi)
}

// release frees running job ji's (j's) worker, accounts its work and
// returns it with the useful work of its calls (what its answer would
// carry).
func (s *sim) release(ji int32, j *job) float64 {
	carried := 0.0
	if j.state == jobRunning || j.state == jobCalling {
		s.pools[j.pool].busy--
		// Work is the job's own service time: while it waits for its
		// downstream calls it holds a worker but does no work (the callees'
		// work is counted where it is done).
		end := s.now
		if j.state == jobCalling {
			end = j.selfEnd
		}
		work := end - j.start
		s.met.work(work)
		carried = work + j.useful
	}
	s.freeJob(ji, j)
	return carried
}

// reply sends the server's answer to attempt ai (a) back over the
// network: ok or not, with a Retry-After (seconds, 0 for none), carrying
// useful work. ai -1 is the end user's attempt without a record (a is
// s.endUser, see startRoot).
func (s *sim) reply(ai int32, a *attempt, ok bool, retryAfter, useful float64) {
	if !a.open {
		s.met.waste(useful, s.now) // the client left: nobody reads this answer
		return
	}
	if c := &s.calls[a.call]; ok && c.edge < 0 && c.directBack {
		// A root request's success with nothing between it and the end
		// user: no fault to lose it, no hop back, no budget or breaker to
		// tell, and no other attempt out (the end user sends one). The
		// request ends here, as cross, answer and finish would end it.
		if ai >= 0 {
			s.close(ai, a, c)
			s.freeAttempt(ai, a)
		}
		c.done, c.inflight = true, 0
		s.rootEnded(a.call, c, true, useful)
		return
	}
	if ai < 0 {
		// The end user's attempt without a record failed: with nothing on
		// the way back, answer would read it at once, and with no attempt
		// left (rootPolicy) retryOrFail would end the request so.
		s.finish(a.call, false, 0)
		return
	}
	a.ok, a.ra, a.useful, a.lost = ok, retryAfter, useful, 0
	s.cross(ai, true)
}

// answer: the client of attempt ai reads its answer.
func (s *sim) answer(ai int32) {
	a := &s.atts[ai]
	ci, retry, ok, useful, retryAfter := a.call, a.n > 1, a.ok, a.useful, a.ra
	class := GiveUpFail
	switch {
	case retryAfter > 0:
		class = GiveUpRetryAfter
	case a.throttled:
		class = GiveUpThrottled
	case a.noAnswer:
		class = GiveUpNoAnswer
	}
	c := &s.calls[ci]
	s.close(ai, a, c)
	a.useful = 0
	s.freeAttempt(ai, a) // unless a server job still holds it
	c.inflight--
	s.unout(c, 1)
	s.settle(c, ok, false, retry)
	if ok {
		s.finish(ci, true, useful)
		return
	}
	if c.edge >= 0 {
		s.met.attemptFailed(c.edge)
		s.taint(ci)
	}
	if c := &s.calls[ci]; c.inflight > 0 && !c.done && s.policy(c).OnFailureOut != HedgeWaits {
		s.actAtOnce(ci, c, retryAfter, class)
		return
	}
	s.retryOrFail(ci, retryAfter, class)
}

// actAtOnce acts on a failed answer of hedged call ci (c) while other
// attempts of it are out, as a client whose policy's OnFailureOut is not
// HedgeWaits does: a client error or a passed deadline ends the call;
// HedgeEnds stops waiting for the attempts out and goes on as after a
// failure with none out (retryOrFail: give up, or retry after the
// backoff); otherwise the call is given up with its policy's share for
// the failure's class (then it ends, the attempts out abandoned), or the
// next attempt goes out now while attempts are left (a hedge's budget
// and breaker apply), the attempts out kept.
func (s *sim) actAtOnce(ci int32, c *call, retryAfter float64, class int) {
	p := s.policy(c)
	if c.clientErr || s.now >= c.deadline {
		s.finish(ci, false, 0)
		return
	}
	if p.OnFailureOut == HedgeEnds {
		s.abandonOpen(c)
		s.retryOrFail(ci, retryAfter, class)
		return
	}
	if g := p.GiveUp[class]; g > 0 && s.rngClient.Float64() < g {
		s.met.gaveUp(c.edge)
		s.finish(ci, false, 0)
		return
	}
	s.hedge(ci) // nothing while no attempt is left: the call waits for those out
}

// settle tells the edge's budget and breaker how an attempt ended.
func (s *sim) settle(c *call, ok, timeout, retry bool) {
	if c.edge >= 0 { // a root request has neither: the check inlined
		s.settleEdge(c, ok, timeout, retry)
	}
}

func (s *sim) settleEdge(c *call, ok, timeout, retry bool) {
	if b := s.budgets[c.edge]; b != nil {
		b.Result(s.now, ok, timeout)
		b.Done(s.now, retry)
	}
	if br := s.breaker(c); br != nil && !s.m.Edges[c.edge].Policy.Breaker.PerCall {
		br.Result(s.now, ok)
	}
}

// timeout: the client stops waiting for attempt ai.
func (s *sim) timeout(ai int32) {
	a := &s.atts[ai]
	ci, retry := a.call, a.n > 1
	c := &s.calls[ci]
	s.close(ai, a, c)
	c.inflight--
	s.unout(c, 1)
	if c.edge >= 0 {
		s.met.attemptFailed(c.edge)
		s.taint(ci)
	}
	s.abandon(ai, false)
	s.freeAttempt(ai, a) // unless a server job still holds it
	s.settle(c, false, true, retry)
	s.retryOrFail(ci, 0, GiveUpFail)
}

// abandon records that the client no longer waits for attempt ai: the
// answer on its way, if any, is wasted, and a cancel goes to the server,
// always for a hedge loser (hedging clients cancel), with the callee's
// CancelProb for a timed-out attempt (the share of clients whose stack
// tells the server: a closed connection it notices, an RST_STREAM). The
// cancel takes the network's time to arrive.
func (s *sim) abandon(ai int32, always bool) {
	a := &s.atts[ai]
	s.met.waste(a.useful, s.now)
	a.useful = 0
	ji := a.job
	if ji < 0 {
		return // not at the server: in flight, or answered
	}
	j := &s.jobs[ji]
	if !always {
		if p := s.m.Services[j.svc].CancelProb; p <= 0 || s.rngFault.Float64() >= p {
			return
		}
	}
	delay := s.cfg.CancelDelay
	if s.m.Hop != nil {
		delay = sample(s.m.Hop, s.rngFault)
	}
	s.h.later(s.now+delay, evCancel, ji, j.gen)
}

// cancel: a cancel reaches job ji. Queued work is dropped; running work
// stops only on a service that honours cancellation (CancelRunning), and
// otherwise runs to completion for nobody.
func (s *sim) cancel(ji int32) {
	j := &s.jobs[ji]
	switch {
	case j.state == jobQueued:
		j.cancelled = true // skipped when it reaches the head of the queue
	case s.m.Services[j.svc].CancelRunning:
		pi := j.pool
		s.met.waste(s.release(ji, j), s.now)
		s.startQueued(pi)
	}
}

// retryOrFail decides what follows a failed attempt of call ci, whose
// answer carried retryAfter (seconds) and is of class (GiveUpFail, …).
func (s *sim) retryOrFail(ci int32, retryAfter float64, class int) {
	c := &s.calls[ci]
	if c.done || c.inflight > 0 {
		return // a hedged attempt is still out
	}
	p := s.policy(c)
	if s.shadows != nil {
		s.shadowCap(c, p)
	}
	if c.clientErr || int(c.attempts) >= p.MaxAttempts || s.now >= c.deadline {
		s.finish(ci, false, 0)
		return
	}
	if g := p.GiveUp[class]; g > 0 && s.rngClient.Float64() < g {
		// The client gives the call up with attempts left, as often as
		// the traces show it doing on such an answer.
		if c.edge >= 0 {
			s.met.gaveUp(c.edge)
		}
		s.finish(ci, false, 0)
		return
	}
	if c.edge >= 0 {
		if b := s.budgets[c.edge]; b != nil && !b.Retry(s.now) {
			s.met.refusedBudget(c.edge, s.now)
			s.finish(ci, false, 0)
			return
		}
	}
	delay := p.Backoff.Delay(int(c.attempts), c.prevDelay, s.rngClient)
	c.prevDelay = delay
	if p.HonorRetryAfter && retryAfter > delay {
		delay = retryAfter
	}
	if s.now+delay >= c.deadline {
		// The retry was granted but will never be sent: give the slot back.
		if c.edge >= 0 && s.budgets[c.edge] != nil {
			s.budgets[c.edge].Done(s.now, true)
		}
		s.finish(ci, false, 0)
		return
	}
	s.h.later(s.now+delay, evRetry, ci, c.gen)
}

// hedge sends a second attempt of call ci while the first is out.
func (s *sim) hedge(ci int32) {
	c := &s.calls[ci]
	if c.done || c.edge < 0 || int(c.attempts) >= s.policy(c).MaxAttempts {
		return
	}
	if b := s.budgets[c.edge]; b != nil && !b.Retry(s.now) {
		s.met.refusedBudget(c.edge, s.now)
		return
	}
	edge, gen, n := c.edge, c.gen, c.attempts
	s.send(ci, c)
	// Count the hedge only if it went out (an open breaker refuses it).
	if c := &s.calls[ci]; c.gen == gen && c.attempts > n {
		s.met.hedged(edge)
	}
}

// close records that the client of attempt ai (a, of call c) no longer
// waits for it and takes it off its call's chain of open attempts.
func (s *sim) close(ai int32, a *attempt, c *call) {
	a.open = false
	for p := &c.open; *p >= 0; p = &s.atts[*p].next {
		if *p == ai {
			*p = a.next
			break
		}
	}
	a.next = -1
}

// finish ends call ci: its open attempts are abandoned (hedge losers), and
// its caller learns the outcome, with the useful work of a success.
func (s *sim) finish(ci int32, ok bool, useful float64) {
	c := &s.calls[ci]
	c.done = true
	if c.edge >= 0 && c.attempts > 0 {
		// A call refused whole by an open breaker made no attempt: the
		// traces hold no such call on the edge either.
		r, gen := s.rootOf(ci)
		s.lastEnded[c.edge].ended(r, gen, !ok)
		if br := s.breaker(c); br != nil && s.m.Edges[c.edge].Policy.Breaker.PerCall {
			br.Result(s.now, ok) // a breaker around the call hears its outcome once
		}
	}
	s.abandonOpen(c)
	if c.job < 0 {
		s.rootEnded(ci, c, ok, useful)
		return
	}
	ji, gen, clientErr := c.job, c.jobGen, c.clientErr
	s.freeCall(ci, c)
	j := &s.jobs[ji]
	if j.gen != gen || j.state != jobCalling {
		s.met.waste(useful, s.now) // the caller's own work was cancelled meanwhile
		return
	}
	j.pending--
	op := &s.m.Services[j.svc].Ops[j.op]
	if ok {
		j.useful += useful
	} else {
		j.failed = true
		j.clientErr = j.clientErr || clientErr
		if !op.Parallel && op.StopOnFailure > 0 && s.rngOutcome.Float64() < op.StopOnFailure {
			// The handler returns its error: no further calls.
			j.repeatLeft, j.nextEdge = 0, int32(len(op.Calls))
		}
	}
	if op.Parallel {
		if j.pending == 0 {
			s.complete(ji, j)
		}
		return
	}
	s.nextCall(ji)
}

// abandonOpen stops call c's client waiting for its open attempts (hedge
// losers, or the attempts out when a hedging client acts on a failure):
// each is abandoned, its cancel sent, and its budget slot given back.
func (s *sim) abandonOpen(c *call) {
	for ai := c.open; ai >= 0; {
		a := &s.atts[ai]
		next, retry := a.next, a.n > 1
		a.open, a.next = false, -1
		s.abandon(ai, true)
		s.freeAttempt(ai, a)
		if c.edge >= 0 && s.budgets[c.edge] != nil {
			s.budgets[c.edge].Done(s.now, retry)
		}
		ai = next
	}
	s.unout(c, c.inflight)
	c.open, c.inflight = -1, 0
}

// rootEnded ends root request ci (c), ok or not, with the useful work of
// a success: a success past the end user's deadline fails.
func (s *sim) rootEnded(ci int32, c *call, ok bool, useful float64) {
	ok = ok && s.now <= c.deadline
	if !ok {
		s.met.waste(useful, s.now)
	}
	s.met.rootDone(c.start, s.now, ok, !ok && c.clientErr, c.start < s.cfg.Duration)
	if s.m.Clients > 0 {
		s.h.push(s.now+s.m.Think, evThink, 0, 0)
	}
	k := 0
	if s.rngLine != nil {
		k = int(s.rootLine[ci])
	}
	s.freeCall(ci, c)
	l := &s.lines[k]
	if l.roots--; l.head < len(l.waiting) {
		s.admit(k)
	}
}

// tick samples the queues at the end of each simulated second and, once
// arrivals are due to end, judges the run: while the verdict is still
// open (the system has not recovered, yet its backlog is draining),
// arrivals go on one more second, up to MaxJudge seconds after the trigger
// ended.
func (s *sim) tick() {
	// The backlog: jobs queued at every service, and root requests
	// waiting for their client's limit on requests in flight.
	q := 0
	for k := range s.lines {
		q += len(s.lines[k].waiting) - s.lines[k].head
	}
	for k := range s.pools {
		q += s.pools[k].queued()
	}
	s.met.queueDepth(s.now, q)
	if s.judging && s.verdict.state == "" && s.now >= s.arrivalEnd {
		limit := s.cfg.Duration + s.maxExt
		v := judge(s.met.series, s.faults, s.now, s.cfg, s.now >= limit, limit-s.now)
		if v.state != verdictOpen {
			s.verdict = v
			s.parked = s.parked[:0]
		} else {
			s.arrivalEnd = s.now + 1
			for _, ev := range s.parked {
				s.h.push(s.now, ev.kind(), ev.id, ev.gen)
			}
			s.parked = s.parked[:0]
		}
	}
	if s.now+1 <= max(s.cfg.Duration, s.arrivalEnd)+s.cfg.Drain {
		s.h.push(s.now+1, evTick, 0, 0)
	}
}

// ended reports whether arrivals are over at the current time. An
// arrival that comes while the verdict may still extend the run is parked
// until the next tick decides.
func (s *sim) ended(ev event) bool {
	if s.now < s.arrivalEnd {
		return false
	}
	if s.judging && s.verdict.state == "" {
		s.parked = append(s.parked, ev)
	}
	return true
}

// freeze makes the run's figures final at its nominal horizon (duration
// plus drain): root requests still in flight count as failed, at their
// deadline or the horizon, whichever is sooner.
func (s *sim) freeze() {
	for ci := range s.calls {
		if c := &s.calls[ci]; c.job < 0 && !c.done && c.start < s.cfg.Duration {
			s.met.inFlight(min(c.deadline, s.now) - c.start)
		}
	}
	for k := range s.lines {
		s.inFlightWaiting(s.lines[k].waiting[s.lines[k].head:])
	}
	s.met.frozen = true
}

// inFlightWaiting counts root requests still waiting in a client's line
// at the horizon as failed, at their deadline or the horizon.
func (s *sim) inFlightWaiting(waiting []waitingRoot) {
	for _, w := range waiting {
		if w.at < s.cfg.Duration {
			deadline := math.Inf(1)
			if s.m.ClientDeadline > 0 {
				deadline = w.at + s.m.ClientDeadline
			}
			s.met.inFlight(min(deadline, s.now) - w.at)
		}
	}
}

// Entity slabs with free lists. A freed slot goes on its slab's list,
// which is linked through the free slots themselves (nextFree, from the
// head in sim, -1 for none), and the slot freed last is reused first; a
// new slot is added, as a free one, when none is. A generation counter
// per slot makes events for a freed entity stale: a slot is cleared but
// for the next generation (a new one's first is 0). The caller writes the
// entity in place through the pointer, which is valid until the slab
// grows again: building a record on the stack and copying it in cost a
// stalled 100-byte copy per entity (see newJob).

func (s *sim) newJob() (int32, *job) {
	i, p := slot(&s.jobs, s.jobFree, job{slotHead: freeEnd})
	*p, p.slotHead = job{}, p.reuse(&s.jobFree) // cleared, then the head set
	return i, p
}

// freeJob frees job i's (j's) slot.
func (s *sim) freeJob(i int32, j *job) {
	j.state = jobDone
	j.nextFree, s.jobFree = s.jobFree, i
	if j.att < 0 {
		return // the end user's attempt, without a record (see startRoot)
	}
	if a := &s.atts[j.att]; a.job == i {
		a.job = -1
		s.freeAttempt(j.att, a) // unless its client still waits
	}
}

// attemptOf returns the attempt job j answers: its record, or the end
// user's (s.endUser) for a root request's job without one (see startRoot).
func (s *sim) attemptOf(j *job) *attempt {
	if j.att < 0 {
		s.endUser.call = j.root
		return &s.endUser
	}
	return &s.atts[j.att]
}

// freeAttempt frees attempt i's slot (a) if both sides are done with it.
func (s *sim) freeAttempt(i int32, a *attempt) {
	if !a.open && a.job == -1 {
		a.job = -2
		a.nextFree, s.attFree = s.attFree, i
	}
}

// newCall returns a slot for a new call, open -1 and every other field
// zero but its generation. A root request's list of failed edges keeps
// its storage from the slot's last occupant, emptied.
func (s *sim) newCall() (int32, *call) {
	i := s.callFree
	if i < 0 {
		i = int32(len(s.calls))
		s.calls = append(s.calls, call{gen: -1, nextFree: -1})
	}
	p := &s.calls[i]
	s.callFree = p.nextFree
	g, failed := p.gen, p.failedEdges[:0]
	*p = call{}
	p.open, p.gen, p.failedEdges = -1, g+1, failed
	return i, p
}

// freeCall frees call i's (c's) slot.
func (s *sim) freeCall(i int32, c *call) {
	c.nextFree, s.callFree = s.callFree, i
}

func (s *sim) newAttempt() (int32, *attempt) {
	i, p := slot(&s.atts, s.attFree, attempt{slotHead: freeEnd})
	*p, p.slotHead = attempt{}, p.reuse(&s.attFree) // as in newJob
	return i, p
}

// slotHead is what the free list of a slab keeps in each record: the
// slot's generation, and while it is free the next free one (-1: none).
type slotHead struct{ gen, nextFree int32 }

// freeEnd is a new slot's head: the last free one, of generation -1.
var freeEnd = slotHead{gen: -1, nextFree: -1}

// reuse takes the slot off the free list headed by *free, which it
// heads, and returns its head for its next occupant.
func (h *slotHead) reuse(free *int32) slotHead {
	*free = h.nextFree
	return slotHead{gen: h.gen + 1, nextFree: -1}
}

// slot returns slot i of items, the head of its free list, or when the
// list is empty (-1) a new slot at the end, fresh (a free slot, of
// generation -1, that ends the list).
func slot[T any](items *[]T, i int32, fresh T) (int32, *T) {
	if i < 0 {
		i = int32(len(*items))
		*items = append(*items, fresh)
	}
	return i, &(*items)[i]
}
