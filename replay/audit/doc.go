// Package audit turns replay runs into a decision: it runs every policy
// under every degradation over several seeds, searches each policy's
// critical utilization of the degraded dependency, forecasts the load each
// policy sends it during the trigger, applies the safety rules to every
// candidate, ranks them and states the recommendation as structured data
// (per-edge changes) that report words and policy files write.
//
// The decision rule, in order: the safety rules change or remove
// candidates (when today's policies break one, observed+safe is today's
// with the rules applied, and where they stop retries of writes sent
// without an idempotency key, observed+keys keeps those retries with a key
// on every call, and budget-sized+keys the sized budget's); then the ordinary-day gate rules out every candidate whose
// availability on an ordinary day (degradation observed: the traces' own
// failures, with no fault added, always part of the matrix) is below that
// of today's policies (observed, or when observed breaks a safety rule the
// better of observed+safe and observed+keys there) beyond the seed spread,
// because headroom on a bad day does
// not pay for availability lost every day; then the survivors rank by never
// collapsing at the given utilization, or else the largest critical
// utilization (the mean of each seed's own, with its 95% interval, at
// least the audit's typical seed spread, and the search's resolution),
// then availability during the faults, then the least extra work (their
// ranges over the seeds), each key keeping the candidates whose intervals
// link to the top one's, differences within them counting as ties; candidates tied on every key go to the least change from
// today's policies, then to the fewest attempts allowed. A choice that
// some seed set one seed smaller does not make is said to be within the
// seed noise, and today's policies are kept where such a set chooses
// them. Where the
// traces retry more than the standard budget allows, a budget sized to
// today's retry share is a candidate beside it.
package audit
