package audit

import (
	"fmt"
	"math"
	"slices"
	"strings"

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

// SizedBudget says how the sized budget candidate was sized. Each callee
// gets its own ratio: today's retry share there (retries per logical call
// over every retrying edge into it, as a ratio budget counts them), times
// SizedBudgetHeadroom, rounded up to a multiple of 0.05, and never below
// the standard budget's ratio (a callee retried little keeps the standard
// bound). Ratio, Callee, Retries, Calls and Share are those of the callee
// with the largest share.
type SizedBudget struct {
	Policy string `json:"policy"`
	// Ratio is the largest budget: retries under Ratio × calls over Window
	// seconds, shared by every caller of a callee.
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
	// Callees is every callee's budget, by name.
	Callees []SizedCallee `json:"callees,omitempty"`
	// Path is what the budgets bound along the most amplified path, when
	// two or more of its layers retry: budgets per callee compound.
	Path *SizedPath `json:"path,omitempty"`
}

// SizedCallee is one callee's sized budget and the figures it came from.
type SizedCallee struct {
	Callee  string  `json:"callee"`
	Retries int     `json:"retries"`
	Calls   int     `json:"calls"`
	Share   float64 `json:"share"`
	Ratio   float64 `json:"ratio"`
	// MaxRetries is the most retries one call into the callee may make
	// (max attempts − 1, the largest over its edges): a ratio at or above
	// it does not bound the callee's retries at all.
	MaxRetries int `json:"max_retries"`
}

// SizedPath is the sustained bound the budgets put on the attempts one
// request sends the end of a path: per retrying layer, a ratio budget b
// lets at most 1+b attempts through per call (and no more than the
// layer's max attempts), and the layers multiply.
type SizedPath struct {
	Services []string `json:"services"`
	// Sized, Standard and Unbounded are the attempts per request at the
	// path's end during a sustained fault: under the sized budgets, under
	// the standard budget, and with no budget (the product of the retrying
	// layers' max attempts).
	Sized     float64 `json:"sized"`
	Standard  float64 `json:"standard"`
	Unbounded int     `json:"unbounded"`
}

// Sentence says how the budget was sized, with the figures, and what it
// bounds.
func (s SizedBudget) Sentence() string {
	if len(s.Callees) == 0 {
		return fmt.Sprintf("%s is a retry budget of %.0f%% of calls over %g s, sized to today's retry share: the traces retry %.0f%% of the calls to %s "+
			"(%d retries in %d calls), ×%g headroom, rounded up to 5%%; the standard budget's %.0f%% would refuse retries today's failures need",
			s.Policy, 100*s.Ratio, s.Window, 100*s.Share, s.Callee, s.Retries, s.Calls, s.Headroom, 100*s.Standard)
	}
	var per, loose []string
	for _, c := range s.Callees {
		if c.Ratio > s.Standard {
			per = append(per, fmt.Sprintf("%s %.0f%% (%d retries in %d calls today)", c.Callee, 100*c.Ratio, c.Retries, c.Calls))
			if c.MaxRetries > 0 && c.Ratio >= float64(c.MaxRetries) {
				loose = append(loose, fmt.Sprintf("%s (%.0f%% ≥ the %d retries a call may make)", c.Callee, 100*c.Ratio, c.MaxRetries))
			}
		}
	}
	out := fmt.Sprintf("%s is a retry budget per callee over %g s, sized to today's retry share there ×%g headroom, rounded up to 5%%, at least the standard %.0f%%: %s; "+
		"the standard budget's %.0f%% would refuse retries today's failures need",
		s.Policy, s.Window, s.Headroom, 100*s.Standard, strings.Join(per, ", "), 100*s.Standard)
	if len(loose) > 0 {
		out += "; it does not bound retries to " + strings.Join(loose, ", ")
	}
	if p := s.Path; p != nil {
		out += fmt.Sprintf(". Budgets per layer compound: along %s a request may still send %s up to %.3gx its attempts during a sustained fault (the standard budget %.3gx, no budget %dx); a budget that lets today's retries through can bound no tighter than the retries today's failures already need",
			strings.Join(p.Services, " → "), p.Services[len(p.Services)-1], p.Sized, p.Standard, p.Unbounded)
	}
	return out
}

// sizedBudget returns the candidate of ratio budgets sized per callee to
// today's retry share, built from the standard budget candidate (a shared
// ratio budget on every edge), when some callee's share with headroom
// exceeds the standard ratio; ok is false otherwise, or without the
// traces' figures.
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
	retries, calls, most := map[string]int{}, map[string]int{}, map[string]int{}
	var callees []string
	for _, e := range top.Edges {
		if !slices.Contains(callees, e.Callee) {
			callees = append(callees, e.Callee)
		}
		calls[e.Callee] += e.Calls
		if e.Retries && e.Attempts > e.Calls {
			retries[e.Callee] += e.Attempts - e.Calls
			most[e.Callee] = max(most[e.Callee], e.MaxAttempts-1)
		}
	}
	slices.Sort(callees)
	s := SizedBudget{Policy: SizedBudgetPolicy, Window: std.Window, Headroom: SizedBudgetHeadroom, Standard: std.Ratio, Ratio: std.Ratio}
	ratio := map[string]float64{}
	for _, c := range callees {
		if calls[c] == 0 {
			continue
		}
		share := float64(retries[c]) / float64(calls[c])
		// Rounded up to 0.05, after taking off what floating point adds to
		// an exact multiple.
		r := max(std.Ratio, math.Ceil(share*s.Headroom*20-1e-9)/20)
		ratio[c] = r
		s.Callees = append(s.Callees, SizedCallee{Callee: c, Retries: retries[c], Calls: calls[c], Share: share, Ratio: r, MaxRetries: most[c]})
		if share > s.Share {
			s.Callee, s.Retries, s.Calls, s.Share, s.Ratio = c, retries[c], calls[c], share, r
		}
	}
	if s.Ratio <= std.Ratio {
		return replay.Variant{}, SizedBudget{}, false
	}
	m := *budget
	m.Edges = slices.Clone(budget.Edges)
	for i := range m.Edges {
		if p := &m.Edges[i].Policy; p.Budget == std {
			if r, ok := ratio[m.Services[m.Edges[i].Callee].Name]; ok {
				p.Budget.Ratio = r
			}
		}
	}
	s.Path = sizedPath(top, ratio, std.Ratio)
	return replay.Variant{Policy: s.Policy, Model: &m}, s, true
}

// sizedPath is the bound the budgets put on the most amplified path (the
// topology's first), when two or more of its layers retry (hedges, which
// the budgets do not count, are left out of every figure).
func sizedPath(top *graph.Topology, ratio map[string]float64, std float64) *SizedPath {
	if len(top.Paths) == 0 {
		return nil
	}
	p := top.Paths[0]
	out := &SizedPath{Services: p.Services, Sized: 1, Standard: 1, Unbounded: 1}
	layers := 0
	for i := 0; i+1 < len(p.Services); i++ {
		attempts := 1
		for _, e := range top.Edges {
			if e.Caller == p.Services[i] && e.Callee == p.Services[i+1] && e.Retries {
				attempts = max(attempts, e.MaxAttempts)
			}
		}
		if attempts <= 1 {
			continue
		}
		layers++
		b, ok := ratio[p.Services[i+1]]
		if !ok {
			b = std
		}
		out.Sized *= math.Min(1+b, float64(attempts))
		out.Standard *= math.Min(1+std, float64(attempts))
		out.Unbounded *= attempts
	}
	if layers < 2 {
		return nil
	}
	return out
}
