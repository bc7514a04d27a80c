// Package audit turns replay runs into a decision: it runs every policy
// under every degradation over several seeds, searches each policy's
// critical utilization of the degraded dependency, forecasts the load each
// policy sends it during the trigger, applies the safety rules to every
// candidate, ranks them and states the recommendation as structured data
// (per-edge changes) that report words and policy files write.
package audit
