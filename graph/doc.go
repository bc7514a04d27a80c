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
// merge in (counts add, vote tables add, value lists join and are sorted
// before any fit reads them, bounded lists keep the first few in trace-id
// order); a reduce reads the merged partial. Where a span's meaning depends
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
//  2. Calls are extracted trace by trace with the naming table and grouped
//     into edges. Map: per edge its statistics (edgeStats: counts,
//     histograms, waits, durations, examples), per operation its executions
//     (serverStats), the root requests and the spans' time (rootsOf), the
//     calls that overlap another of their request (concurrentShares), and
//     per chain of edges the highest amplification a root request saw
//     (observedAmplification). Reduce: the merged partials, then the fits:
//     each edge's policy, the services, the paths, the findings.
//
// Still read over every trace at once, after phase 2: circuit breakers
// (each caller operation's requests in time order), the calibration
// statistics (outcome mixes by time bucket and by what the previous call
// of another request did, arrival window, self times, concurrency), and the
// user edges' latencies. Infer runs every map step as one shard of all
// traces; TestShardedInfer deals the traces to random shards, merges in a
// random order, and requires the same topology byte for byte.
package graph
