package main

import (
	"errors"
	"fmt"
	"strings"
)

// What retryaudit's retry inference needs on every retrying edge to tell
// the backoff and the jitter apart from "unknown": enough waits between
// attempts in all, enough of them before the third attempt to see how the
// wait grows, and, where the waits are jittered, enough at one attempt index
// to tell the jitter formula. Waits for an honoured Retry-After do not count:
// they are the server's, not the backoff's.
const (
	minWaits                = 12
	minWaitsBeforeThird     = 4 // before attempt index 2, where max_attempts ≥ 3
	minJitteredWaitsAtIndex = 8 // at one attempt index, where the backoff is jittered
)

// waitShortfalls lists what the waits seen on a retrying edge lack for
// inference; nothing for an edge that does not retry.
func waitShortfalls(p Policy, waits []int) []string {
	if !p.retries() {
		return nil
	}
	var out []string
	total, most := 0, 0
	for _, n := range waits {
		total += n
		most = max(most, n)
	}
	if total < minWaits {
		out = append(out, fmt.Sprintf("%d waits between attempts, want ≥ %d", total, minWaits))
	}
	if p.MaxAttempts >= 3 {
		if n := at(waits, 2); n < minWaitsBeforeThird {
			out = append(out, fmt.Sprintf("%d waits before attempt index 2, want ≥ %d", n, minWaitsBeforeThird))
		}
	}
	if p.Backoff.Jitter != "none" && most < minJitteredWaitsAtIndex {
		out = append(out, fmt.Sprintf("at most %d jittered waits at one attempt index, want ≥ %d", most, minJitteredWaitsAtIndex))
	}
	return out
}

func at(s []int, i int) int {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// checkInferable fails unless every retrying edge has enough waits for
// inference and at least one call that exhausted all its attempts.
func checkInferable(callers []*caller) error {
	var errs []error
	for _, c := range callers {
		p := c.edge.Policy
		if p.Hedge != nil {
			// A hedging policy sends its requests at once after a
			// failure, or a delay after the one before: no backoff to
			// infer, and no attempt count to exhaust by design.
			continue
		}
		c.stats.mu.Lock()
		short := waitShortfalls(p, c.stats.waits)
		if p.retries() && c.stats.exhausted == 0 {
			short = append(short, "no call exhausted its attempts")
		}
		c.stats.mu.Unlock()
		for _, s := range short {
			errs = append(errs, fmt.Errorf("%s → %s %s: %s", c.edge.Caller, c.edge.Callee, c.edge.Route, s))
		}
	}
	return errors.Join(errs...)
}

// describeWaits renders an edge's waits for the summary, e.g.
// "waits 19 (before attempt index 1: 13, 2: 6), 2 for Retry-After", attempt
// index 1 being the second attempt.
func describeWaits(s *edgeStats) string {
	total := 0
	var parts []string
	for i, n := range s.waits {
		if i == 0 {
			continue
		}
		total += n
		if len(parts) == 0 {
			parts = append(parts, fmt.Sprintf("before attempt index %d: %d", i, n))
		} else {
			parts = append(parts, fmt.Sprintf("%d: %d", i, n))
		}
	}
	out := fmt.Sprintf("waits %d (%s)", total, strings.Join(parts, ", "))
	if s.retryAfterWaits > 0 {
		out += fmt.Sprintf(", %d for Retry-After", s.retryAfterWaits)
	}
	return out
}
