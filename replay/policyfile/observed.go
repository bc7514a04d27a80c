package policyfile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// Finding ids of configured-vs-observed comparisons.
const (
	FindingConfigAttempts   = "config-attempts-exceeded"
	FindingConfigRetryOn    = "config-retry-on-mismatch"
	FindingConfigNoPerTry   = "config-no-per-try-timeout"
	FindingConfigNotRetried = "config-retries-unseen"
)

// FindingIDs lists the ids of configured-vs-observed findings, for help
// texts and completion.
func FindingIDs() []string {
	return []string{FindingConfigAttempts, FindingConfigRetryOn, FindingConfigNoPerTry, FindingConfigNotRetried}
}

// Compare sets the policy the file configures (applied to m, the model
// built from top) against what the traces show, edge by edge: more
// attempts than configured (another layer retries too), statuses retried
// that the configured conditions do not cover, attempts abandoned at a
// timeout no per-try timeout explains. Edges the file does not touch are
// not compared.
func Compare(f *PolicyFile, m *replay.Model, top *graph.Topology) []graph.Finding {
	e := &pfErrs{src: f.src}
	matches := f.matches(m, e)
	var out []graph.Finding
	for _, te := range top.Edges {
		var specs []*PolicySpec
		var conds []string // retry conditions a project's file gives outside the specs (Linkerd)
		if f.Default != nil {
			specs = append(specs, f.Default)
			conds = append(conds, "")
		}
		for _, a := range matches {
			for _, i := range a.edges {
				me := m.Edges[i]
				if m.Services[me.Caller].Name == te.Caller && m.Services[me.Callee].Name == te.Callee && m.Services[me.Callee].Ops[me.CalleeOp].Name == te.Operation {
					ep := &f.Edges[a.entry]
					specs = append(specs, &ep.PolicySpec)
					c := ""
					if ep.to != nil {
						c = ep.to.retryOn
					}
					conds = append(conds, c)
				}
			}
		}
		if len(specs) == 0 {
			continue
		}
		// The policy the file configures, from nothing: only what the
		// file says about attempts and conditions is compared.
		p := replay.Policy{MaxAttempts: 1}
		setsAttempts := false
		var retryOn string
		var codes []int
		for k, s := range specs {
			s.applyTo(&p)
			if conds[k] != "" {
				retryOn, codes = conds[k], nil
			}
			setsAttempts = setsAttempts || s.EnvoyRetryPolicy != nil || s.RetryPolicy != nil || s.MaxAttempts != nil
			if s.EnvoyRetryPolicy != nil {
				retryOn, codes = s.EnvoyRetryPolicy.RetryOn, s.EnvoyRetryPolicy.RetriableStatusCodes
			}
			if s.RetryPolicy != nil {
				retryOn, codes = strings.Join(s.RetryPolicy.RetryableStatusCodes, ","), nil
			}
		}
		if !setsAttempts {
			continue
		}
		loc := fmt.Sprintf("%s → %s %s", te.Caller, te.Callee, te.Operation)
		add := func(id string, sev graph.Severity, format string, args ...any) {
			out = append(out, graph.Finding{ID: id, Severity: sev, Location: loc, Message: fmt.Sprintf(format, args...)})
		}
		if te.MaxAttempts > p.MaxAttempts {
			add(FindingConfigAttempts, graph.SeverityHigh, "config allows %d attempts; traces show up to %d → another layer retries too", p.MaxAttempts, te.MaxAttempts)
		}
		if te.Retries && p.MaxAttempts == 1 {
			add(FindingConfigNotRetried, graph.SeverityMedium, "config does not retry here; traces show retries (%d calls, up to %d attempts) → a client library retries", te.Calls, te.MaxAttempts)
		}
		if retryOn != "" {
			var uncovered []string
			for _, st := range te.RetriedStatus {
				if !retryCovers(retryOn, codes, st) {
					uncovered = append(uncovered, st)
				}
			}
			if len(uncovered) > 0 {
				add(FindingConfigRetryOn, graph.SeverityMedium, "config retries on %s; traces show %s retried", retryOn, strings.Join(uncovered, ", "))
			}
		}
		if p.PerTryTimeout == 0 && te.PerTryTimeoutMS != nil && p.MaxAttempts > 1 {
			add(FindingConfigNoPerTry, graph.SeverityLow, "no per-try timeout configured; attempts are abandoned at %s", fmtMS(*te.PerTryTimeoutMS))
		}
	}
	return out
}

// retryCovers says whether configured retry conditions (Envoy's retry_on
// and retriable_status_codes, or gRPC status names) cover a status the
// traces show retried, as graph labels it: an HTTP code, "grpc NAME",
// "timeout" or "transport error".
func retryCovers(retryOn string, codes []int, status string) bool {
	conds := strings.Split(strings.ReplaceAll(strings.ToLower(retryOn), "_", "-"), ",")
	for i, c := range conds {
		conds[i] = strings.TrimSpace(c)
	}
	has := func(c string) bool { return slices.Contains(conds, c) }
	if n, err := strconv.Atoi(status); err == nil {
		for _, c := range conds { // Linkerd's ranges: "500-504"
			lo, hi, ok := strings.Cut(c, "-")
			l, errL := strconv.Atoi(lo)
			h, errH := strconv.Atoi(hi)
			if ok && errL == nil && errH == nil && n >= l && n <= h {
				return true
			}
		}
		switch {
		case slices.Contains(codes, n) && has("retriable-status-codes"):
			return true
		case n >= 500 && has("5xx"):
			return true
		case (n == 502 || n == 503 || n == 504) && has("gateway-error"):
			return true
		case n == 409 && has("retriable-4xx"):
			return true
		case n == 503 && has("unavailable"):
			return true
		case has(status): // a code listed as such (Linkerd, Istio)
			return true
		}
		return false
	}
	s := strings.ReplaceAll(strings.ToLower(status), "_", "-")
	if code, ok := strings.CutPrefix(s, "grpc "); ok { // graph's "grpc UNAVAILABLE"
		return has(code)
	}
	switch s {
	case "timeout":
		return has("5xx") || has("gateway-error") || has("deadline-exceeded") || has("deadline_exceeded")
	case "transport error":
		return has("reset") || has("connect-failure") || has("refused-stream") || has("unavailable") || has("5xx")
	}
	return has(s)
}

func fmtMS(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
}
