// Package graph turns ingested spans into a retry topology: the service
// graph, attempts grouped into logical calls, each edge's inferred retry
// policy, every path from a root with its worst-case and observed
// amplification, and findings. Infer never fails on odd input: what the
// spans cannot decide is reported as unknown with the number of samples
// seen, and what looks wrong is listed in Topology.Warnings.
package graph
