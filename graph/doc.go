// Package graph turns ingested spans into a retry topology: the service
// graph, attempts grouped into logical calls, each edge's inferred retry
// policy, every path from a root with its worst-case and observed
// amplification, and findings. Infer never fails on odd input: what the
// spans cannot decide is reported as unknown with the number of samples
// seen, and what looks wrong is listed in Topology.Warnings.
//
// # Phases
//
// Inference is shaped as map and reduce over traces, so that the same
// extraction can run on shards of the traces (a streaming collector per
// host) and merge. A map step reads the traces of one shard into a partial
// whose merge is associative and does not depend on the order partials
// merge in (counts add, vote tables add, bounded lists keep the first few
// in trace-id order; an edge's value lists keep every value up to
// MaxExactValues and past it a sample by a hash of trace and span id, or a
// quantile sketch: sample.go; the other value lists join and are sorted
// before any fit reads them); a reduce reads the merged partial. Where a span's meaning depends
// on other traces, the dependency is a phase of its own:
//
//  0. Links (newIndex): parents, children, duplicates and parent cycles,
//     trace by trace. Map: the service names the spans carry; reduce: which
//     are services. Apply: spans that name no service are named from their
//     trace (nameUnnamed), and client spans that started after their parent
//     ended are marked as leaked, trace by trace.
//  1. Map: name-resolution votes (the SERVER spans that answered each peer,
//     host and client operation: nameVotes) and, per request, the failures
//     not retried under their parent (unretriedFailures, at most maxOrigins
//     a request). Reduce: the naming table and the origins. Apply: requests
//     repeated under an answered parent are judged against the origins and
//     marked as leaked or kept as polls (markRepeats), trace by trace.
//     Then, only where some trace starts with a CLIENT span (roots.go):
//     map, the services of root client spans (rootClientServices); map
//     again, those services' root client spans and their failed client
//     calls not sent again under their caller (rootStreamEvents, by value:
//     stream, trace and span id, times, outcome); reduce, each stream of
//     one instance and request in time order (readRootStreams): which root
//     is a lost-context retry of which failed call, which a resend marker
//     or a request key links to an earlier root, and what each other root
//     follows.
//     Apply: the verdicts by span (markRootStreams). After phase 2's call
//     extraction, the linked roots are added to the calls they continue
//     (joinRootRetries): the only calls whose attempts span traces.
//  2. Map: the calls the spans made, read with the naming table
//     (extractIn); reduce: the calls in span order, grouped into edges.
//     Per edge, whether its calls overlap their requests (hedge) and the
//     longest transit its calls show decide the calls read below the
//     instrumentation whose only sign of a hedge was a request that
//     reached the callee after an OK answer: a hedge, a retry on the
//     result, or unknown (resolveLateOK). Map again, with the edges: per edge its statistics (edgeStats: counts,
//     histograms, waits, durations, examples), per operation its executions
//     (serverStats), the root requests by value and the spans' time
//     (rootsOf), the calls that overlap another of their request and each
//     edge's fan-out width (concurrencyOf: per-edge counts and width
//     histograms), per chain of edges the highest amplification a root
//     request saw (observedAmplification), and each caller operation's
//     requests (requestsByOp). Reduce: the merged partials, then the fits: each
//     edge's policy, the services (a virtual one timed by the attempts
//     that called it), the user edges (from the root requests), breakers
//     (the requests in time order), the paths.
//  3. Calibration. Map: which spans made calls and had one fail, each
//     edge's first failure per trace, the fast failures of operations with
//     a breaker, the executions that failed on their own, and the ends of
//     each edge's calls (endsOf). Reduce: the sets and the ends in time
//     order. Map again, with those: per edge the attempts whose outcome is
//     the callee's own with their start, and the calls with how the
//     edge's previous call had ended (outcomesOf), per operation its work
//     times (workOf), own failures and breaker fast failures, what follows
//     a failed call (callOrderOf), the user edges' outcomes and the
//     requests each service held (heldBy). Reduce: the failure episodes
//     (episodeSpans, which need every attempt of an edge in time order),
//     the outcome mixes and runs outside them, quantiles, Little's law,
//     and from the root requests the arrival window, sampling and root
//     statistics.
//
// Then the findings, from the edges and paths alone.
//
// Where an order matters, the reduce restores one that no split changes:
// trace and span id, or the order of an edge's calls. Infer runs every map
// step as one shard of all traces; TestShardedInfer deals the traces to
// random shards, merges in a random order, and requires the same topology
// byte for byte.
//
// # What is self-contained, and what is still global
//
// Self-contained (no index into the span table; safe to compute in another
// process), each with a wire form (encodePartial, decodePartial; names the
// partial holds as symbols go as the names): the phase 0 and 1 tables
// (service names, name votes, the leak rule's origins by trace and span
// id; the root client spans' stream events, rootEvents), the edge
// statistics (edgeStats), the operations' statistics
// (opPartial: times as dists), the roots counted by head-sampling
// probability (headSampling, summed in probability order by the reduce),
// and calibration's counts by operation (breakers' fast failures, own
// failures) and work times by operation (four dists each). The per-edge
// partials name their edges by key, not by their place in the one
// grouping of the calls (perEdge; merge and read by key, an edge a partial
// lacks added): the leaked attempts per edge, calibration's first failure
// per edge and trace, the overlaps and fan-out widths (concurrencyOf), the
// user edges' root outcomes, and the per-edge half of the call order
// (callOrders: failed executions that reached the edge, call offsets);
// the observed-amplification trie (chainTrie) names its edges by key too.
// The partials of one edge name it: its outcome records (outcomeStats:
// each attempt's class, start and what came before it, and each call's
// start and how the edge's previous call had ended, by value; the reduce
// sorts them by time),
// and its calls' ends (callEndList: time, outcome and trace id by value).
// The requests each service held (requestsHeld) are their busy time and
// starts and ends. The root requests (rootSet) are, per root operation,
// each request's start, duration and own outcome (joined by a merge; each
// reduce that reads them sorts or counts them: the user edges' latency and
// failure rate, the arrival window and timeline, the root statistics), its best
// examples (failed first, then by trace and span id, the first few kept),
// and the kind and method of its first root span; and the spans' time. The
// map steps that walk down from the roots (observed amplification, the user
// edges' outcomes, sampling) read their own shard's roots (rootSpans), never
// the merged ones. TestShardedInfer sends every shard's partial that has a
// wire form through it, and names the partials that have none, which must
// be the ones below; FuzzDecodePartial fuzzes the decoder, and merges and
// reduces what it decodes.
//
// Two orders in them are the input's span order. A call end's pos, its
// place in its edge's calls (the one grouping's, in span order), orders
// calls that ended at the same instant, as the edge's call order always
// has. A root operation's first, the input position of its first root
// span, picks the span whose kind (a SERVER span or not: a user edge and
// a timeline entry or not) and method name the operation, as the first
// root always has. A collector would need an order of its own (trace and
// span id), which would change which of two simultaneous ends is the
// latest before a call, and the method of an operation whose roots name
// different ones: output changes, not made here.
//
// Still global, each for a stated reason:
//   - The index (newIndex): every span key sorted, parents resolved, cycles
//     cut, duplicates and orphans counted over all spans at once. It is per
//     trace in nature, but a trace's spans may come from any input in any
//     order; a collector would need them grouped by trace first.
//   - The extracted calls (extracted), which groupEdges reorders in place
//     into the edges: every later map step walks an edge's calls, the
//     attempts' spans and their children, so the calls are the map steps'
//     input, not a partial to merge; a collector would keep its own
//     traces' calls and send only the partials made from them.
//   - Breakers' requests per caller operation (requestsByOp, span
//     indices): the reduce puts every request of an operation in time
//     order and reads, per request, its times, its own outcome and what
//     each of its calls did with each callee, choosing the edges to walk
//     by counts known only after the merge; a failure-rate breaker is
//     sized from the same list (breakerfit.go). By value this is a record a
//     SERVER span (times, trace and span id, its own outcome: 56 bytes
//     for a 4-byte index) and an entry a callee it called, alive only in
//     the breakers step; tried, it took inference from 346 to 522 bytes
//     allocated a span at 1M synthetic spans (lists grown by appending),
//     past the 10% the map and reduce shape may cost.
//   - Calibration's span sets (serving, spanSet: a bit a span): the
//     executions that made calls, had one fail, failed on their own, were
//     given up on while they worked, or were failed fast by a breaker.
//     Each marks spans by what happened in their own trace (the breakers'
//     fast failures also by the topology's breakers, a reduce every shard
//     is given), and only map steps over the same traces read them: a
//     collector would keep its shard's marks and merge nothing. Here they
//     are bits over the one table, merged by or.
//   - Reduces that read the merged calls or spans: callsByServer (an index
//     of every call by the server span it was made under, which
//     concurrency, breakers and paths read: within one trace each, but
//     built over the one table), the virtual services' times (from every
//     attempt), and previousCallFailed's lookup
//     of each call's start against the sorted ends (it walks the edge's
//     calls).
package graph
