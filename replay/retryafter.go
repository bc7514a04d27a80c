package replay

import "github.com/retryaudit/retryaudit/degrade"

// RetryAfterReaches reports whether an answer to an attempt on edge e of
// m can carry a Retry-After when m is run under faults. Where it cannot,
// the edge's HonorRetryAfter never acts: the client reads the header in
// one place only (retryOrFail), and reading it draws nothing, so a run of
// the model with the edge's HonorRetryAfter flipped is the same run, event
// for event.
//
// An attempt's answer carries a Retry-After from three places, all at the
// callee (a callee never passes on one its own calls received):
//   - a fault on the callee service fails the attempt on arrival (one
//     that FailsFast: an error-after-work fault's answer carries the
//     callee's own outcome's Retry-After, and the other kinds fail
//     nothing);
//   - the callee sheds it (its QueueCap or ShedRetriesAt);
//   - the edge's own failure model draws a Retry-After answer, which needs
//     a Retry-After to send and some outcome mix that gives one.
//
// Every other answer (a success, a failure of the callee's own calls, a
// deadline passed in the queue, a per-try timeout) carries none.
func (m *Model) RetryAfterReaches(e int, faults degrade.Schedule) bool {
	ed := &m.Edges[e]
	callee := &m.Services[ed.Callee]
	for _, f := range faults {
		if f.Service == callee.Name && f.FailsFast() {
			return true
		}
	}
	return callee.QueueCap > 0 || callee.ShedRetriesAt > 0 || ed.Fail.sendsRetryAfter()
}

// sendsRetryAfter reports whether the failure model can draw an answer
// that carries a Retry-After: it has one to send (RetryAfter, which
// drawOwn attaches to such an answer and to no other) and some mix it
// draws from, an episode's included, gives such answers a chance.
func (f *Failures) sendsRetryAfter() bool {
	if f == nil || !(f.RetryAfter > 0) {
		return false
	}
	mixes := []Mix{f.First, f.FirstAfterFailure, f.Retry, f.FirstAfterOtherFailure, f.FirstAfterEdgeFailure, f.RetryAfterDownstream}
	mixes = append(mixes, f.RetryBy...)
	mixes = append(mixes, f.RetryAfterFailureBy...)
	mixes = append(mixes, f.RetryAfterEdgeFailureBy...)
	for _, ep := range f.Incidents {
		mixes = append(mixes, ep.First, ep.Retry)
	}
	for _, m := range mixes {
		// Mix.draw gives a Retry-After answer only for u in
		// [Fail, Fail+RetryAfter): never unless RetryAfter > 0.
		if m.RetryAfter > 0 {
			return true
		}
	}
	return false
}
