package audit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// standing is one candidate policy across every degradation: what the
// ranking compares.
type standing struct {
	policy string
	// critical is the lowest critical utilization over the degradations
	// searched (1 where it recovers at SearchHigh or nothing was searched).
	critical   float64
	criticalAt string // the degradation it is lowest under
	// collapses: above its critical utilization somewhere, at the user's
	// utilization; worst names where.
	collapses bool
	worst     string
	avail     Stat // mean over degradations of each seed statistic
	extra     Stat
	// changed counts the edges and services whose policy differs from
	// today's; attempts is the most attempts its edges allow, summed over
	// them: the tie-breaks, least change first, then least extra work at
	// worst.
	changed, attempts int
}

func standings(policies []string, vs []Verdict) []standing {
	var out []standing
	for _, p := range policies {
		s := standing{policy: p, critical: 1}
		n := 0.0
		for _, v := range vs {
			if v.Policy != p {
				continue
			}
			n++
			if v.CriticalSearched && v.CriticalUtilization != nil && *v.CriticalUtilization < s.critical {
				s.critical, s.criticalAt = *v.CriticalUtilization, v.Degradation
			}
			if v.Collapses && !s.collapses {
				s.collapses, s.worst = true, v.Degradation
			}
			s.avail.Mean += v.Availability.Mean
			s.avail.Min += v.Availability.Min
			s.avail.Max += v.Availability.Max
			s.extra.Mean += v.ExtraWork.Mean
			s.extra.Min += v.ExtraWork.Min
			s.extra.Max += v.ExtraWork.Max
		}
		if n > 0 {
			s.avail = Stat{s.avail.Mean / n, s.avail.Min / n, s.avail.Max / n}
			s.extra = Stat{s.extra.Mean / n, s.extra.Min / n, s.extra.Max / n}
		}
		out = append(out, s)
	}
	return out
}

// criticalTie is how close two critical utilizations must be to count as
// equal: the search's resolution, both ways.
const criticalTie = 2 * SearchTolerance

// rank orders the candidates: first those that never collapse at the
// user's utilization (given: whether any was) or else by the largest
// critical utilization, within the search's resolution; then by
// availability during the faults, differences within the seed spread
// counting as ties; then by the least extra work, likewise. Candidates
// still tied are told apart by the least change from today's policies
// (edges changed), then by the fewest attempts their edges allow, and
// only then by the order they were given in. It returns the order and,
// for the winner, the key that decided against the runner-up.
func rank(cands []standing, given bool) ([]standing, string) {
	left := slices.Clone(cands)
	var out []standing
	decided := ""
	for len(left) > 0 {
		pool, key := best(left, given)
		if len(out) == 0 {
			decided = key
		}
		out = append(out, pool[0])
		left = slices.DeleteFunc(left, func(s standing) bool { return s.policy == pool[0].policy })
	}
	return out, decided
}

// best narrows the candidates key by key and returns those left, in
// order, and the key that narrowed them last; when the ranking keys leave
// several, the tie-break says what tied and the rule that chose.
func best(cands []standing, given bool) ([]standing, string) {
	key := ""
	var keys []string
	narrow := func(name string, keep func(s standing) bool) {
		keys = append(keys, name)
		var kept []standing
		for _, s := range cands {
			if keep(s) {
				kept = append(kept, s)
			}
		}
		if len(kept) > 0 && len(kept) < len(cands) {
			key = name
		}
		if len(kept) > 0 {
			cands = kept
		}
	}
	if given {
		narrow("never collapsing at the given utilization", func(s standing) bool { return !s.collapses })
	} else {
		top := 0.0
		for _, s := range cands {
			top = max(top, s.critical)
		}
		narrow("critical utilization", func(s standing) bool { return s.critical >= top-criticalTie })
	}
	var top standing
	for i, s := range cands {
		if i == 0 || s.avail.Mean > top.avail.Mean {
			top = s
		}
	}
	narrow("availability during the faults", func(s standing) bool { return s.avail.Overlaps(top.avail) })
	for i, s := range cands {
		if i == 0 || s.extra.Mean < top.extra.Mean {
			top = s
		}
	}
	narrow("extra work", func(s standing) bool { return s.extra.Overlaps(top.extra) })
	if len(cands) == 1 {
		return cands, cmp.Or(key, "being the only candidate left")
	}
	var names []string
	for _, s := range cands {
		names = append(names, s.policy)
	}
	tied := fmt.Sprintf("%s tied on %s (within the seed spread and the search's resolution)", strings.Join(names, ", "), strings.Join(keys, ", "))
	least := func(f func(s standing) int) []standing {
		m := f(cands[0])
		for _, s := range cands {
			m = min(m, f(s))
		}
		var kept []standing
		for _, s := range cands {
			if f(s) == m {
				kept = append(kept, s)
			}
		}
		return kept
	}
	figures := func(f func(s standing) int, unit string) string {
		var parts []string
		for _, s := range cands {
			parts = append(parts, fmt.Sprintf("%s %d", s.policy, f(s)))
		}
		return strings.Join(parts, ", ") + " " + unit
	}
	changed := func(s standing) int { return s.changed }
	if kept := least(changed); len(kept) < len(cands) {
		why := "the least change from today's policies: " + tied + "; " + figures(changed, "edges changed")
		return kept, why
	}
	attempts := func(s standing) int { return s.attempts }
	if kept := least(attempts); len(kept) < len(cands) {
		why := "the fewest attempts allowed, the least extra work at worst: " + tied + ", and change as many edges; " + figures(attempts, "attempts over every edge at most")
		return kept, why
	}
	return cands, "the order of the candidates: " + tied + ", and change as many edges and allow as many attempts"
}

// reason says in one sentence why the winner was chosen.
func reason(w standing, key string, given bool, assumption string) string {
	var b strings.Builder
	switch {
	case given && w.collapses:
		fmt.Fprintf(&b, "%s is the best of policies that all collapse at the given utilization (%s)", w.policy, w.worst)
	case given:
		fmt.Fprintf(&b, "%s never collapses at the given utilization", w.policy)
	case w.critical == 0:
		fmt.Fprintf(&b, "every candidate stays collapsed after some degradation at today's load or at %.2f utilization (%s for %s): %s is the best of them", SearchLow, w.criticalAt, w.policy, w.policy)
	case w.critical >= 1:
		fmt.Fprintf(&b, "%s recovers after every trigger up to %.2f utilization of the degraded dependency", w.policy, SearchHigh)
	default:
		fmt.Fprintf(&b, "%s tolerates the most load before a trigger becomes an outage: up to %.2f utilization of the degraded dependency under its worst degradation, %s", w.policy, w.critical, w.criticalAt)
	}
	extra := fmt.Sprintf("%+.2f", w.extra.Mean)
	if extra == "-0.00" || extra == "+0.00" {
		extra = "0.00"
	}
	fmt.Fprintf(&b, ", with availability %.3f (%.3f–%.3f over the seeds) and extra work %s; decided by %s", w.avail.Mean, w.avail.Min, w.avail.Max, extra, key)
	if assumption != "" {
		b.WriteString("; " + assumption)
	}
	return b.String()
}

// ordinaryDayGate rules out, before the ranking, every candidate whose
// availability on an ordinary day (degradation ordinary: the traces' own
// failures, with no fault added) is below that of today's policies beyond
// the seed spread. Headroom on a bad day does not pay for availability lost
// every day: a policy that refuses the retries today's failures need would
// win on critical utilization alone. Today's policies are observed, or,
// when observed breaks a safety rule, the better on an ordinary day of
// observed+safe (the rules applied: what they cost is accepted, what a
// candidate refuses beyond them is not) and observed+keys (the retries
// the rules stop for want of an idempotency key kept, with the key): where
// a key keeps today's availability, stopping those retries is a loss the
// rules do not require. Without an ordinary day among the verdicts, or
// without the baseline, nothing is ruled out.
func ordinaryDayGate(cands []string, vs []Verdict, ordinary string) ([]string, []RuledOut) {
	day := func(p string) (Stat, bool) {
		i := slices.IndexFunc(vs, func(v Verdict) bool { return v.Degradation == ordinary && v.Policy == p })
		if i < 0 {
			return Stat{}, false
		}
		return vs[i].Availability, true
	}
	base := "observed"
	if !slices.Contains(cands, base) {
		base += SafeSuffix
		keys := "observed" + KeysSuffix
		k, kok := day(keys)
		s, sok := day(base)
		if kok && slices.Contains(cands, keys) && (!sok || !slices.Contains(cands, base) || k.Mean > s.Mean) {
			base = keys
		}
	}
	b, ok := day(base)
	if !ok || !slices.Contains(cands, base) {
		return cands, nil
	}
	var kept []string
	var ruled []RuledOut
	for _, c := range cands {
		a, ok := day(c)
		if c == base || !ok || a.Overlaps(b) || a.Mean > b.Mean {
			kept = append(kept, c)
			continue
		}
		ruled = append(ruled, RuledOut{Policy: c, Why: fmt.Sprintf(
			"availability on an ordinary day (%s: the traces' own failures) %.3f (%.3f–%.3f) vs %.3f (%.3f–%.3f) for %s, below it beyond the seed spread: "+
				"following it loses availability every day to gain headroom on a bad day",
			ordinary, a.Mean, a.Min, a.Max, b.Mean, b.Min, b.Max, base)})
	}
	return kept, ruled
}
