package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/retryaudit/retryaudit/report"
)

// threshold is one --fail-on expression.
type threshold struct {
	expr  string
	check func(*report.AuditReport) (crossed bool, why string)
}

// parseThreshold reads amplification>N (also >=), finding:ID,
// metastable:POLICY (or metastable:any) and uncalibrated.
func parseThreshold(expr string) (threshold, error) {
	bad := fmt.Errorf("--fail-on %q: want amplification>N, amplification>=N, finding:ID, metastable:POLICY or uncalibrated", expr)
	switch {
	case expr == "uncalibrated":
		return threshold{expr, func(a *report.AuditReport) (bool, string) {
			if a.Calibration == nil || a.Calibration.Pass {
				return false, ""
			}
			return true, fmt.Sprintf("the model misses %d of the traced figures: %s", len(a.Calibration.Misses), strings.Join(a.Calibration.Misses, "; "))
		}}, nil
	case strings.HasPrefix(expr, "amplification>"):
		rest := strings.TrimPrefix(expr, "amplification>")
		orEqual := strings.HasPrefix(rest, "=")
		n, err := strconv.ParseFloat(strings.TrimPrefix(rest, "="), 64)
		if err != nil {
			return threshold{}, bad
		}
		return threshold{expr, func(a *report.AuditReport) (bool, string) {
			if a.Topology == nil || len(a.Topology.Paths) == 0 {
				return false, ""
			}
			p := a.Topology.Paths[0]
			got := float64(p.WorstCaseAmplification)
			if got > n || orEqual && got == n {
				return true, fmt.Sprintf("worst-case amplification %gx on %s", got, strings.Join(p.Services, " → "))
			}
			return false, ""
		}}, nil
	case strings.HasPrefix(expr, "finding:") && len(expr) > len("finding:"):
		id := strings.TrimPrefix(expr, "finding:")
		return threshold{expr, func(a *report.AuditReport) (bool, string) {
			if a.Topology == nil {
				return false, ""
			}
			for _, f := range a.Topology.Findings {
				if f.ID == id {
					return true, fmt.Sprintf("finding %s at %s", f.ID, f.Location)
				}
			}
			return false, ""
		}}, nil
	case strings.HasPrefix(expr, "metastable:") && len(expr) > len("metastable:"):
		policy := strings.TrimPrefix(expr, "metastable:")
		return threshold{expr, func(a *report.AuditReport) (bool, string) {
			for _, v := range a.Verdicts {
				if policy != "any" && v.Policy != policy {
					continue
				}
				switch {
				case v.CollapsedSeeds > 0:
					return true, fmt.Sprintf("policy %s stays collapsed after %s in %d of %d seeds", v.Policy, v.Degradation, v.CollapsedSeeds, v.Seeds)
				case v.Collapses:
					return true, fmt.Sprintf("policy %s collapses after %s at %s utilization %.2f", v.Policy, v.Degradation, v.Service, v.Utilization)
				}
			}
			return false, ""
		}}, nil
	}
	return threshold{}, bad
}

// crossed evaluates every threshold and returns the exit error for those
// crossed, or nil.
func crossed(ts []threshold, a *report.AuditReport) error {
	var why []string
	for _, t := range ts {
		if ok, w := t.check(a); ok {
			why = append(why, t.expr+": "+w)
		}
	}
	if len(why) == 0 {
		return nil
	}
	return exitError{code: exitThreshold, err: fmt.Errorf("thresholds crossed:\n  %s", strings.Join(why, "\n  "))}
}
