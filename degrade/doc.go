// Package degrade defines the fault models replay applies while it replays
// traffic through a service graph, and parses their specs.
//
// A fault is written KIND:KEY=VALUE,..., keys in any order, for example
// "outage:svc=db,at=10s,for=3s". Every fault names the degraded service
// (svc=NAME; a packet-loss may name one edge instead, edge=CALLER->CALLEE),
// when it starts (at=) and how long it lasts (for=; for=0s lasts until the
// end of the run). Durations are Go durations in simulated time. The kinds:
//
//	slow-shard     one shard of the service is x times slower
//	               svc=NAME,at=DURATION,for=DURATION[,shards=N][,shard=I][,x=K]   (8 shards, shard 0, x=10)
//	hot-partition  keys skew onto shard 0, Zipf with exponent zipf=
//	               svc=NAME,at=DURATION,for=DURATION[,shards=N][,zipf=S]          (8 shards, zipf=1.2)
//	packet-loss    attempts or their responses are lost with probability p
//	               svc=NAME|edge=CALLER->CALLEE,at=DURATION,for=DURATION,p=PROB
//	db-pool        the service's concurrency drops to k
//	               svc=NAME,at=DURATION,for=DURATION,k=N
//	outage         the service fails fast (mode=error, 503) or never answers (mode=timeout)
//	               svc=NAME,at=DURATION,for=DURATION[,mode=error|timeout]        (mode=error)
//	error-rate     a fraction p of the attempts fail fast
//	               svc=NAME,at=DURATION,for=DURATION,p=PROB
//	latency        the service time grows by add= and/or is multiplied by x=
//	               svc=NAME,at=DURATION,for=DURATION[,add=DURATION][,x=K]
//
// [Parse] reads one spec into a [Fault] and [Fault.String] writes the
// canonical spec back; a bad spec is a [*SpecError] whose message shows the
// form the kind expects. A [Schedule] holds every fault of a run.
//
// The package schedules nothing. The simulator asks it, for an attempt from
// a caller to a service at a simulated time, what the active faults do
// ([Schedule.Effect]: fail fast, no answer, error and loss probabilities,
// service-time multiplier and addition, concurrency cap); which shard the
// attempt lands on ([Schedule.PickShard], uniform or, during a
// hot-partition, Zipf, as a deterministic function of a uniform draw); how
// many shards a service needs ([Schedule.Shards]); and when the trigger
// starts and ends ([Schedule.Trigger]), from which recovery and
// metastability are measured. All of it is a pure function of the
// schedule, so a run stays deterministic for a given seed.
package degrade
