// Package graph will turn ingested spans into a retry topology: the service
// graph, attempt chains grouped into logical calls, each edge's inferred
// retry policy, paths with their worst-case amplification, and findings.
package graph
