// Package degrade defines the fault models replay applies while it replays
// traffic through a service graph, and parses their specs.
//
// A fault is written KIND:KEY=VALUE,..., keys in any order, for example
// "outage:svc=db,at=10s,for=3s". Every fault names the degraded service
// (svc=NAME; a packet-loss may name one edge instead, edge=CALLER->CALLEE),
// when it starts (at=) and how long it lasts (for=; for=0s lasts until the
// end of the run). Durations are Go durations in simulated time. The kinds:
//
//	slow-shard     one shard of the service's keyspace is x times slower; a request's
//	               key picks its shard, for every attempt and hedge of it
//	               svc=NAME,at=DURATION,for=DURATION[,shards=N][,shard=I][,x=K]   (8 shards, shard 0, x=10)
//	slow-replica   one replica behind the load balancer is x times slower; each attempt
//	               picks a replica at random, so a retry or hedge may escape it
//	               svc=NAME,at=DURATION,for=DURATION[,replicas=N][,replica=I][,x=K] (4 replicas, replica 0, x=10)
//	hot-partition  keys skew onto shard 0, Zipf with exponent zipf=
//	               svc=NAME,at=DURATION,for=DURATION[,shards=N][,zipf=S]          (8 shards, zipf=1.2)
//	packet-loss    each transmission of an attempt or its response is lost with probability p;
//	               the sender retransmits as TCP does (the simulator's RTO and reset)
//	               svc=NAME|edge=CALLER->CALLEE,at=DURATION,for=DURATION,p=PROB
//	db-pool        the service's concurrency drops to k
//	               svc=NAME,at=DURATION,for=DURATION,k=N
//	outage         the service refuses connections (mode=error, alias fast-fail: the
//	               default, what a crashed process or drained backend gives), never
//	               answers (mode=timeout, alias hang: every packet is lost), or does its
//	               work then answers 5xx (mode=error-after-work: errors cost capacity)
//	               svc=NAME,at=DURATION,for=DURATION[,mode=error|timeout|error-after-work]
//	error-rate     a fraction p of the attempts fail fast, or after their work
//	               svc=NAME,at=DURATION,for=DURATION,p=PROB[,mode=error|error-after-work]
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
// many shards or replicas a service needs ([Schedule.Shards],
// [Schedule.Replicas]); whether the faults fit a model ([Schedule.Check]);
// and when the trigger
// starts and ends ([Schedule.Trigger]), from which recovery and
// metastability are measured. All of it is a pure function of the
// schedule, so a run stays deterministic for a given seed.
package degrade
