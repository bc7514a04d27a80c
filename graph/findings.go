package graph

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Finding ids. They are stable: `--fail-on finding:ID` and users' tooling
// match on them.
const (
	FindingMultiLayer      = "multi-layer-retry"
	FindingNoJitter        = "retry-without-jitter"
	FindingRetry4xx        = "retry-4xx"
	FindingNoIdempotency   = "non-idempotent-retry-without-key"
	FindingTimeoutBelowP99 = "per-try-timeout-below-p99"
	FindingOutlivedCaller  = "retry-after-caller-gave-up"
	FindingRetryAfter      = "retry-after-ignored"
	FindingDependencyDown  = "retry-against-failing-dependency"
	FindingHedgeWrite      = "hedged-non-idempotent"
	FindingHedgeUnknown    = "hedged-idempotency-unknown"
	FindingNoBreaker       = "no-circuit-breaker"
)

// hammerRun is how many consecutive failed calls, all sent, make an edge
// one that hammers a dead dependency for want of a circuit breaker.
const hammerRun = 10

// FindingIDs lists every finding id, for help texts and completion. A new
// id goes here too.
func FindingIDs() []string {
	return []string{FindingMultiLayer, FindingNoJitter, FindingRetry4xx, FindingNoIdempotency,
		FindingTimeoutBelowP99, FindingOutlivedCaller, FindingRetryAfter, FindingDependencyDown,
		FindingHedgeWrite, FindingHedgeUnknown, FindingNoBreaker}
}

// failingShare is the failure rate over all of a callee's attempts above
// which retrying it only adds load: it is failing for everyone.
const failingShare = 0.9

// ms renders milliseconds for messages to a tenth at most (timers and
// exporters are not finer than that): 1001.4 → "1001ms", 100.219 →
// "100ms", 10.203 → "10.2ms", 5.18 → "5.2ms".
func ms(v float64) string {
	prec := 1
	if v >= 100 {
		prec = 0
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + "ms"
}

func edgeLocation(e Edge) string {
	return fmt.Sprintf("%s → %s %s", e.Caller, e.Callee, e.Operation)
}

func findings(edges []Edge, paths []Path, shows findingExamples) []Finding {
	var out []Finding
	add := func(id string, sev Severity, loc string, examples []Example, format string, args ...any) {
		out = append(out, Finding{ID: id, Severity: sev, Location: loc, Message: fmt.Sprintf(format, args...), Examples: examples})
	}
	seenLayers := map[string]bool{}
	for _, p := range paths {
		if len(p.RetryingLayers) < 2 {
			continue
		}
		loc := strings.Join(p.Services, " → ")
		if seenLayers[loc] {
			continue
		}
		seenLayers[loc] = true
		add(FindingMultiLayer, SeverityHigh, loc, p.Examples, "%d layers retry (%s): one request can become %dx attempts at %s",
			len(p.RetryingLayers), strings.Join(p.RetryingLayers, ", "), p.WorstCaseAmplification, p.Services[len(p.Services)-1])
	}
	calleeAttempts, calleeFailed := map[string]int{}, map[string]float64{}
	for _, e := range edges {
		calleeAttempts[e.Callee] += e.Attempts
		calleeFailed[e.Callee] += e.FailureRate * float64(e.Attempts)
	}
	for i, e := range edges {
		if !e.Retries {
			continue
		}
		loc := edgeLocation(e)
		if e.Backoff.JitterPresent != nil && !*e.Backoff.JitterPresent {
			wait := "immediately"
			switch e.Backoff.Kind {
			case BackoffImmediate:
			case BackoffUnknown:
				wait = fmt.Sprintf("after waits from %s", ms(e.Backoff.BaseMS))
			default:
				wait = fmt.Sprintf("after %s waits from %s", e.Backoff.Kind, ms(e.Backoff.BaseMS))
			}
			add(FindingNoJitter, SeverityMedium, loc, e.Examples, "retries %s with no jitter (%d waits): clients that fail together retry together", wait, e.Backoff.Samples)
		}
		var bad []string
		for _, s := range e.RetriedStatus {
			if n, err := strconv.Atoi(s); err == nil && n >= 400 && n < 500 && n != 408 && n != 429 {
				bad = append(bad, s)
			}
		}
		if len(bad) > 0 {
			add(FindingRetry4xx, SeverityHigh, loc, e.Examples, "retries client errors %s, which fail the same way every time", strings.Join(bad, ", "))
		}
		if id := e.Idempotency; id != nil && id.WithKey < id.RetriedCalls {
			add(FindingNoIdempotency, SeverityHigh, loc, shows.of(i, e, FindingNoIdempotency), "%d of %d retried %s calls carry no idempotency key: a retry after a lost response repeats the write",
				id.RetriedCalls-id.WithKey, id.RetriedCalls, e.Method)
		}
		if t := e.PerTryTimeoutMS; t != nil && e.CalleeP99MS > *t {
			add(FindingTimeoutBelowP99, SeverityMedium, loc, e.Examples, "per-try timeout %s is below the callee's p99 of %s: slow answers are abandoned and asked for again",
				ms(*t), ms(e.CalleeP99MS))
		}
		if e.RetryAfterIgnored > 0 {
			add(FindingRetryAfter, SeverityMedium, loc, shows.of(i, e, FindingRetryAfter), "retried sooner than Retry-After asked, %d times", e.RetryAfterIgnored)
		}
		if n := calleeAttempts[e.Callee]; n >= 10 && calleeFailed[e.Callee]/float64(n) >= failingShare {
			add(FindingDependencyDown, SeverityMedium, loc, e.Examples, "%s fails %.0f%% of %d attempts from every caller: retries only add load",
				e.Callee, 100*calleeFailed[e.Callee]/float64(n), n)
		}
	}
	for i, e := range edges {
		// Hedged calls that may be retries on the result instead repeat
		// the request all the same: the finding stands, and says so.
		maybe := ""
		if r := e.ResultRetries; r != nil && r.Unknown > 0 {
			maybe = fmt.Sprintf(" (%d of the edge's hedged calls may be retries on the result instead, which repeat it as well)", r.Unknown)
		}
		if h := e.Hedging; h != nil && h.NonIdempotent > 0 {
			add(FindingHedgeWrite, SeverityHigh, edgeLocation(e), shows.of(i, e, FindingHedgeWrite), "%d hedged calls of %s, which is not idempotent: both requests may apply the write%s",
				h.NonIdempotent, e.Method, maybe)
		}
		if h := e.Hedging; h != nil && h.IdempotencyUnknown > 0 {
			add(FindingHedgeUnknown, SeverityMedium, edgeLocation(e), shows.of(i, e, FindingHedgeUnknown),
				"%d hedged calls of %s, whose idempotency no span shows: each hedge repeats the request, safe only if the operation is idempotent (a gRPC method declared idempotency_level IDEMPOTENT or NO_SIDE_EFFECTS)%s",
				h.IdempotencyUnknown, e.Operation, maybe)
		}
		if b := e.Breaker; b != nil && !b.Detected && !b.Unknown && b.LongestFailureRun >= hammerRun {
			add(FindingNoBreaker, SeverityMedium, edgeLocation(e), e.Examples, "%d calls in a row failed and every next request called again: no circuit breaker sheds load from a dead dependency",
				b.LongestFailureRun)
		}
		if e.OutlivedCaller > 0 {
			add(FindingOutlivedCaller, SeverityHigh, edgeLocation(e), shows.of(i, e, FindingOutlivedCaller), "%d attempts started after the upstream caller had given up: deadlines do not propagate", e.OutlivedCaller)
		}
	}
	rank := map[Severity]int{SeverityHigh: 0, SeverityMedium: 1, SeverityLow: 2}
	sort.SliceStable(out, func(i, j int) bool {
		if rank[out[i].Severity] != rank[out[j].Severity] {
			return rank[out[i].Severity] < rank[out[j].Severity]
		}
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].Location < out[j].Location
	})
	if out == nil {
		out = []Finding{}
	}
	return out
}
