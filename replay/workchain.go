package replay

import (
	"fmt"
	"math/rand/v2"

	"github.com/retryaudit/retryaudit/graph"
)

// WorkChain is an edge's model of slowness that comes with the request
// (graph.WorkCorrelation, where the traces decide "correlated"): the
// callee's work on each attempt of a call is drawn slow or fast, a first
// attempt with probability First, a later one by whether the latest
// earlier attempt of its call that reached the callee was slow
// (AfterSlowBy, AfterFastBy by attempt number, index 0 the second), and
// then from the slow or the fast work times. An attempt whose number the
// traces never reached draws at the pooled rate after a slow or a fast
// attempt (AfterSlow, AfterFast): a policy that makes more attempts than
// the traces show keeps the dependence on the attempt before, not a
// schedule by attempt number it never showed. An attempt that fails on
// its own still works its failed work; whether that work was slow sets
// what the next attempt draws after.
type WorkChain struct {
	// Above is the split between fast and slow work (seconds).
	Above                    float64
	First                    float64
	AfterSlow, AfterFast     float64
	AfterSlowBy, AfterFastBy []float64
	Slow, Fast               Dist
}

// workChainOf builds e's work chain from its correlation c (verdict
// correlated, with slow and fast work times).
func workChainOf(e *graph.Edge, c *graph.WorkCorrelation) (*WorkChain, error) {
	rate := func(t graph.TryCount, fallback float64) float64 {
		if t.Tries == 0 {
			return fallback
		}
		return float64(t.Slow) / float64(t.Tries)
	}
	marginal := rate(graph.TryCount{Tries: c.Attempts, Slow: c.SlowAttempts}, 0)
	w := &WorkChain{Above: c.SlowAboveMS / 1000, First: rate(c.First, marginal)}
	w.AfterSlow, w.AfterFast = rate(c.AfterSlow, marginal), rate(c.AfterFast, marginal)
	for i, t := range c.AfterSlowByAttempt {
		w.AfterSlowBy = append(w.AfterSlowBy, rate(t, w.AfterSlow))
		var f graph.TryCount
		if i < len(c.AfterFastByAttempt) {
			f = c.AfterFastByAttempt[i]
		}
		w.AfterFastBy = append(w.AfterFastBy, rate(f, w.AfterFast))
	}
	var err error
	if w.Slow, err = edgeDist(e, "slow work of the work correlation", c.SlowWorkQuantilesMS); err != nil {
		return nil, err
	}
	if w.Fast, err = edgeDist(e, "fast work of the work correlation", c.FastWorkQuantilesMS); err != nil {
		return nil, err
	}
	return w, nil
}

// prob is the chance that attempt n (1: the first) is slow, after
// prev: the latest earlier attempt of its call that the callee worked
// on (prevNone, prevFast, prevSlow).
func (w *WorkChain) prob(n int16, prev int8) float64 {
	i := int(n) - 2
	switch {
	case n <= 1 || prev == prevNone:
		return w.First
	case i >= len(w.AfterSlowBy) && prev == prevSlow:
		return w.AfterSlow
	case i >= len(w.AfterSlowBy):
		return w.AfterFast
	case prev == prevSlow:
		return w.AfterSlowBy[i]
	}
	return w.AfterFastBy[i]
}

// work draws the callee's work on attempt n after prev.
func (w *WorkChain) work(n int16, prev int8, rng *rand.Rand) float64 {
	if rng.Float64() < w.prob(n, prev) {
		return sample(w.Slow, rng)
	}
	return sample(w.Fast, rng)
}

// What a call's latest attempt that the callee worked on was (call.worked).
const (
	prevNone int8 = iota
	prevFast
	prevSlow
)

// workCorrelationNote says what the traces show of how the callee's work
// on one call's attempts relate, and how the replay draws it (how).
func workCorrelationNote(e graph.Edge, c *graph.WorkCorrelation, how string) string {
	rate := func(t graph.TryCount) string {
		if t.Tries == 0 {
			return "0 of 0"
		}
		return fmt.Sprintf("%d of %d (%.0f%%)", t.Slow, t.Tries, 100*float64(t.Slow)/float64(t.Tries))
	}
	by := ""
	for i, t := range c.AfterSlowByAttempt {
		if i > 0 {
			by += ", "
		}
		by += fmt.Sprintf("%d of %d", t.Slow, t.Tries)
	}
	verdict := c.Verdict
	if c.Verdict == graph.WorkUnknown {
		// Say why the traces cannot decide.
		verdict = "unknown (too few attempts followed a slow one for even all of them slow to tell it from chance)"
		if c.AfterFast.Tries == 0 {
			verdict = "unknown (no attempt followed a fast one to compare with)"
		}
	}
	return fmt.Sprintf("%s → %s %s: the callee's work on one call's attempts is %s: of the attempts that reached it, %d of %d slow (above %.3gms, "+
		"the split of its work times), first attempts %s; after a slow attempt %s (by attempt from the second: %s), after a fast one %s "+
		"(P = %.2g if an attempt's slowness did not depend on the one before, %s 0.00135): %s",
		e.Caller, e.Callee, e.Operation, verdict, c.SlowAttempts, c.Attempts, c.SlowAboveMS, rate(c.First),
		rate(c.AfterSlow), by, rate(c.AfterFast), c.P, map[bool]string{true: "below", false: "not below"}[c.P < graph.CorrelationAlpha], how)
}

// workChainHow says how the replay draws an edge's work by w.
func workChainHow(w *WorkChain) string {
	rates := func(rs []float64) string {
		out := ""
		for i, r := range rs {
			if i > 0 {
				out += ", "
			}
			out += fmt.Sprintf("%.2f", r)
		}
		return out
	}
	return fmt.Sprintf("the replay draws each attempt's work slow or fast, a first attempt slow with chance %.2f, a later one by the attempt before it "+
		"that reached the callee (after a slow one %s, after a fast one %s, by attempt from the second; beyond, %.2f and %.2f), "+
		"then from the slow or the fast work times, in place of the callee's pooled work (a failure of its own still works its failed work)",
		w.First, rates(w.AfterSlowBy), rates(w.AfterFastBy), w.AfterSlow, w.AfterFast)
}
