package audit

import (
	"fmt"
	"math"
	"slices"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// SizedBudgetPolicy names the candidate whose retry budget is sized to
// the retry share the traces show today.
const SizedBudgetPolicy = "budget-sized"

// SizedBudgetHeadroom is what the sized budget allows beyond today's
// busiest retry share: the share over the whole trace is an average, and
// a budget's window sees its bursts.
const SizedBudgetHeadroom = 1.5

// SizedBudget says how the sized budget candidate was sized: today's
// retry share at the callee that retries most (retries per logical call,
// as a ratio budget counts them), times SizedBudgetHeadroom, rounded up
// to a multiple of 0.05.
type SizedBudget struct {
	Policy string `json:"policy"`
	// Ratio is the budget: retries under Ratio × calls over Window seconds,
	// shared by every caller of a callee.
	Ratio  float64 `json:"ratio"`
	Window float64 `json:"window_s"`
	// Callee is the callee with the largest retry share today; Retries and
	// Calls are the traces' figures for it (every retrying edge into it).
	Callee   string  `json:"callee"`
	Retries  int     `json:"retries"`
	Calls    int     `json:"calls"`
	Share    float64 `json:"share"`
	Headroom float64 `json:"headroom"`
	// Standard is the ratio of the standard budget candidate it stands
	// beside.
	Standard float64 `json:"standard"`
}

// Sentence says how the budget was sized, with the figures.
func (s SizedBudget) Sentence() string {
	return fmt.Sprintf("%s is a retry budget of %.0f%% of calls over %g s, sized to today's retry share: the traces retry %.0f%% of the calls to %s "+
		"(%d retries in %d calls), ×%g headroom, rounded up to 5%%; the standard budget's %.0f%% would refuse retries today's failures need",
		s.Policy, 100*s.Ratio, s.Window, 100*s.Share, s.Callee, s.Retries, s.Calls, s.Headroom, 100*s.Standard)
}

// sizedBudget returns the candidate of a ratio budget sized to today's
// retry share, built from the standard budget candidate (a shared ratio
// budget on every edge), when today's share with headroom exceeds the
// standard ratio; ok is false otherwise, or without the traces' figures.
func sizedBudget(top *graph.Topology, budget *replay.Model) (replay.Variant, SizedBudget, bool) {
	if top == nil || budget == nil {
		return replay.Variant{}, SizedBudget{}, false
	}
	std := replay.BudgetSpec{}
	for _, e := range budget.Edges {
		if e.Policy.Budget.Kind == replay.BudgetRatio && e.Policy.SharedBudget {
			std = e.Policy.Budget
			break
		}
	}
	if std.Kind != replay.BudgetRatio {
		return replay.Variant{}, SizedBudget{}, false
	}
	retries, calls := map[string]int{}, map[string]int{}
	var callees []string
	for _, e := range top.Edges {
		if !slices.Contains(callees, e.Callee) {
			callees = append(callees, e.Callee)
		}
		calls[e.Callee] += e.Calls
		if e.Retries && e.Attempts > e.Calls {
			retries[e.Callee] += e.Attempts - e.Calls
		}
	}
	slices.Sort(callees)
	s := SizedBudget{Policy: SizedBudgetPolicy, Window: std.Window, Headroom: SizedBudgetHeadroom, Standard: std.Ratio}
	for _, c := range callees {
		if calls[c] == 0 {
			continue
		}
		if share := float64(retries[c]) / float64(calls[c]); share > s.Share {
			s.Callee, s.Retries, s.Calls, s.Share = c, retries[c], calls[c], share
		}
	}
	// Rounded up to 0.05, after taking off what floating point adds to an
	// exact multiple.
	s.Ratio = math.Ceil(s.Share*s.Headroom*20-1e-9) / 20
	if s.Ratio <= std.Ratio {
		return replay.Variant{}, SizedBudget{}, false
	}
	m := *budget
	m.Edges = slices.Clone(budget.Edges)
	for i := range m.Edges {
		if p := &m.Edges[i].Policy; p.Budget == std {
			p.Budget.Ratio = s.Ratio
		}
	}
	return replay.Variant{Policy: s.Policy, Model: &m}, s, true
}
