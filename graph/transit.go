package graph

import "math"

// LaterAttempts compares a time of an edge's attempts after the first
// (retries and hedges) with the same time of its first attempts. Two are
// compared:
//
//   - transit (Edge.RetryTransit), the time an attempt spends outside its
//     callee's span. A retry often travels otherwise than a first attempt:
//     the failed attempt's connection was closed (an error answer with
//     Connection: close, a timeout that abandons it) and the retry dials a
//     new one, or it goes to a replica further away; pooled, the retries'
//     times lengthen the first attempts' and with them every request that
//     needed no retry.
//   - the callee's work (Edge.RetryWork), the time the execution an attempt
//     reached worked itself, of the executions that did not fail on their
//     own (those replay draws from the operation's work times). A retry or
//     hedge is often served otherwise: by another replica or connection,
//     after a failure that left a cache cold or a lock held; and a hedge
//     is sent only because the first attempt was slow, so where slowness
//     comes with the request (a large item, a slow shard) the first
//     attempts are slower than the pool and the hedges faster. Pooled, the
//     replay draws first attempts too fast, and hedges too seldom.
//
// The two kinds are compared by the Mann–Whitney statistic: Later is the
// chance that a later attempt's time exceeds a first attempt's (ties
// half), read from the two distributions at WorkLevels, and Deviations how
// far it lies from one half in standard deviations of the statistic were
// the two the same, √((n₁+n₂+1)/(12·n₁·n₂)). Split when that reaches
// TransitDeviations either way; otherwise the data cannot tell them apart
// and replay draws every attempt's time from the pooled times.
type LaterAttempts struct {
	// First and Retries are how many attempts of each kind were measured
	// (transit: reached the callee and were not cut as slow; work: the
	// executions they reached that did not fail on their own).
	First   int     `json:"first"`
	Retries int     `json:"retries"`
	Later   float64 `json:"later"`
	// Deviations is signed: above zero when the later attempts take longer.
	Deviations float64 `json:"deviations"`
	Split      bool    `json:"split"`
}

// TransitDeviations is how many standard deviations from one half the
// Mann–Whitney statistic must lie before the later attempts' times
// (transit or the callee's work) are told from the first attempts': three,
// EpisodeAlpha's bar on each side.
const TransitDeviations = 3.0

// laterAttempts compares the times of first attempts (first) and of later
// ones (later); nil when either has none.
func laterAttempts(first, later *dist) *LaterAttempts {
	n1, n2 := first.n(), later.n()
	if n1 == 0 || n2 == 0 {
		return nil
	}
	qf, qr := first.quantiles(WorkLevels), later.quantiles(WorkLevels)
	p := laterShare(qf, qr)
	se := math.Sqrt(float64(n1+n2+1) / (12 * float64(n1) * float64(n2)))
	rt := &LaterAttempts{First: n1, Retries: n2, Later: round3(p), Deviations: round3((p - 0.5) / se)}
	rt.Split = math.Abs(rt.Deviations) >= TransitDeviations
	return rt
}

// laterShare is the chance that a draw from the quantiles b exceeds one
// from the quantiles a, ties counted half: both taken at the same evenly
// spaced levels, every pair of levels weighed alike.
func laterShare(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0.5
	}
	sum := 0.0
	for _, y := range b {
		for _, x := range a {
			switch {
			case y > x:
				sum++
			case y == x:
				sum += 0.5
			}
		}
	}
	return sum / float64(len(a)*len(b))
}
