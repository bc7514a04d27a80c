package audit

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// standing is one candidate policy across every degradation: what the
// ranking compares.
type standing struct {
	policy string
	// critical is the lowest critical utilization over the degradations
	// searched (1 where it recovers at SearchHigh or nothing was searched).
	critical   float64
	criticalAt string // the degradation it is lowest under
	// seeds is each seed's own critical utilization under the degradation
	// where that seed's is lowest (1 likewise), bySeed their mean, min and
	// max: Min is critical.
	seeds  []float64
	bySeed Stat
	// floor is the pooled standard deviation of the seeds' own critical
	// utilizations over every candidate and degradation of the ranking
	// (seedNoise): the least spread criticalCI grants one candidate's.
	floor float64
	// collapses: above its critical utilization somewhere, at the user's
	// utilization; worst names where.
	collapses bool
	worst     string
	avail     Stat // mean over degradations of each seed statistic
	// availSeeds is each seed's availability, the mean over the
	// degradations; avail.Mean alone where a verdict keeps none by seed.
	availSeeds []float64
	extra      Stat
	// changed counts the edges and services whose policy differs from
	// today's; attempts is the most attempts its edges allow, summed over
	// them: the tie-breaks, least change first, then least extra work at
	// worst.
	changed, attempts int
	// today marks today's policies (rankHeld's base): another candidate
	// beats them on a key only by the least difference worth a change.
	today bool
}

// The least differences worth a change: another candidate beats today's
// policies on a key only where it surely gains at least worthCritical of
// critical utilization, or a cut of worthUnavailability in the
// unavailability during the faults: seed by seed (the same arrivals and
// faults under both), the 95% interval of its margins past that gain
// above 0 (pairedMargin). Where a key keeps no figures by seed, its mean
// above theirs by the gain, its interval clear of theirs. The
// ordinary-day gate holds a candidate to the same figure the other way.
// A change of policy costs a rollout and carries its own risk: a gain the
// seed noise barely shows, which the next seed set may not, is not one an
// SRE acts on. Round figures for what a change is worth, not read off
// any sample's.
const (
	worthCritical       = 0.05
	worthUnavailability = 0.25
)

func standings(policies []string, vs []Verdict) []standing {
	var out []standing
	for _, p := range policies {
		s := standing{policy: p, critical: 1}
		n := 0.0
		var seeds []float64 // per seed, the lowest over the degradations
		var avail []float64 // per seed, the sum over the degradations
		paired := true
		for _, v := range vs {
			if v.Policy != p {
				continue
			}
			n++
			if v.CriticalSearched && v.CriticalUtilization != nil && *v.CriticalUtilization < s.critical {
				s.critical, s.criticalAt = *v.CriticalUtilization, v.Degradation
			}
			if v.CriticalSearched {
				by := bySeed(v)
				if seeds == nil {
					seeds = slices.Repeat([]float64{1}, len(by))
				}
				for i := range min(len(by), len(seeds)) {
					seeds[i] = min(seeds[i], by[i])
				}
			}
			if v.Collapses && !s.collapses {
				s.collapses, s.worst = true, v.Degradation
			}
			switch {
			case avail == nil && paired && len(v.AvailabilityBySeed) > 0:
				avail = slices.Clone(v.AvailabilityBySeed)
			case len(v.AvailabilityBySeed) == len(avail) && paired:
				for i, a := range v.AvailabilityBySeed {
					avail[i] += a
				}
			default:
				paired, avail = false, nil
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
			for i := range avail {
				avail[i] /= n
			}
		}
		if avail == nil {
			avail = []float64{s.avail.Mean}
		}
		s.availSeeds = avail
		if seeds == nil {
			seeds = []float64{1}
		}
		s.seeds, s.bySeed = seeds, statOf(seeds)
		out = append(out, s)
	}
	// A seed's critical utilization is one search's (under the degradation
	// where it is lowest), so the searches' seeds give its typical spread.
	var crit [][]float64
	for _, v := range vs {
		if slices.Contains(policies, v.Policy) && v.CriticalSearched && len(v.CriticalBySeed) > 1 && !slices.Contains(v.CriticalBySeed, nil) {
			crit = append(crit, bySeed(v))
		}
	}
	floor := pooledSD(crit)
	for i := range out {
		out[i].floor = floor
	}
	return out
}

// pooledSD is the typical spread of the groups' figures: the median
// over the groups of two figures or more of each one's standard
// deviation: how much one seed's figure moves from another's in this
// audit, over every candidate and degradation of the ranking, taken as
// the floor of each candidate's own. The seeds of one candidate alone are
// too few to say it: five seeds that all land on one step of the
// critical-utilization search have no spread, and the next five may have
// one. The median, not the mean of the variances, so that one noisy
// group (a seed that recovers far above the others) does not widen every
// candidate's interval. For critical utilizations the groups are the
// searched verdicts whose every seed found its own (none recovered at
// SearchHigh, where how far above it is unknown). 0 where no group has
// two figures.
func pooledSD(groups [][]float64) float64 {
	var sds []float64
	for _, xs := range groups {
		if len(xs) > 1 {
			sds = append(sds, stat.StdDev(xs, nil))
		}
	}
	if len(sds) == 0 {
		return 0
	}
	slices.Sort(sds)
	return (sds[(len(sds)-1)/2] + sds[len(sds)/2]) / 2
}

// bySeed is v's critical utilization per seed, 1 where a seed recovered
// at SearchHigh; a verdict without them (an audit saved before they were
// kept) has its critical utilization for each.
func bySeed(v Verdict) []float64 {
	one := func(u *float64) float64 {
		if u == nil {
			return 1
		}
		return *u
	}
	if len(v.CriticalBySeed) == 0 {
		return slices.Repeat([]float64{one(v.CriticalUtilization)}, max(v.Seeds, 1))
	}
	out := make([]float64, len(v.CriticalBySeed))
	for i, u := range v.CriticalBySeed {
		out[i] = one(u)
	}
	return out
}

// criticalTie is how close two critical utilizations must be to count as
// equal: the search's resolution, both ways (each is known to
// ±SearchTolerance).
const criticalTie = 2 * SearchTolerance

// criticalCI is where the mean of the seeds' own critical utilizations
// lies, with 95% confidence (Student's t with one degree of freedom fewer
// than the seeds), widened by the search's resolution: the figure the
// ranking compares, and half the interval's width. The seeds' lowest,
// the verdict's figure, is an extreme value that one seed more or less
// moves (a seed that recovers far above the others, or collapses far
// below); their mean moves by a fifth of it, and the interval says by
// how much it may. The spread is the candidate's own seeds', but never
// less than the audit's pooled one (floor): seeds that happen to agree
// do not make a figure surer than the simulation's noise allows. One
// seed leaves the resolution alone.
func (s standing) criticalCI() (mean, half float64) {
	return meanCI(s.seeds, s.floor, criticalTie/2)
}

// meanCI is where the mean of the seeds' figures xs lies, with 95%
// confidence (Student's t with one degree of freedom fewer than the
// seeds), their spread taken as at least floor, widened by res: the mean
// and half the interval's width.
func meanCI(xs []float64, floor, res float64) (mean, half float64) {
	mean, sd := stat.MeanStdDev(xs, nil)
	half = res
	if n := float64(len(xs)); n > 1 {
		if sd = max(sd, floor); sd > 0 {
			half += distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975) * sd / math.Sqrt(n)
		}
	}
	return mean, half
}

// topBlock is the candidates that cannot be told apart from the best on
// one key: each candidate's figure is an interval (lo, hi: larger is
// better), the intervals that overlap link, and the top block is every
// candidate linked, directly or through others, to the one reaching
// highest. Which candidate is the best does not matter, only where the
// gaps between intervals are: a candidate is out only when a gap no
// interval bridges separates it from the top. Kept in the given order.
func topBlock(cands []standing, iv func(s standing) (lo, hi float64)) []standing {
	idx := make([]int, len(cands))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		_, ha := iv(cands[a])
		_, hb := iv(cands[b])
		return cmp.Compare(hb, ha)
	})
	in := make([]bool, len(cands))
	low := math.Inf(1)
	for k, i := range idx {
		lo, hi := iv(cands[i])
		if k > 0 && hi < low {
			break
		}
		in[i], low = true, min(low, lo)
	}
	var out []standing
	for i, s := range cands {
		if in[i] {
			out = append(out, s)
		}
	}
	return out
}

// rank orders the candidates: first those that never collapse at the
// user's utilization (given: whether any was) or else by critical
// utilization, the mean of each seed's own within its confidence interval
// and the search's resolution (criticalCI); then by availability during
// the faults; then by the least extra work, those two by their ranges
// over the seeds. At each key the candidates kept are the top block
// (topBlock) of those intervals: differences within them count as ties;
// today's policies (today) stay in the block unless one of it beats them
// by the least gain worth a change (worthCritical, worthUnavailability).
// Candidates still tied are told apart by the least change from today's policies
// (edges changed), then by the fewest attempts their edges allow, and
// only then by the order they were given in. It returns the order and,
// for the winner, the key that decided against the runner-up, and the
// candidates whose gain over today's policies the seeds leave undecided
// against the least gain worth a change (best).
func rank(cands []standing, given bool) ([]standing, string, []string) {
	left := slices.Clone(cands)
	var out []standing
	decided := ""
	var undecided []string
	for len(left) > 0 {
		pool, key, und := best(left, given)
		if len(out) == 0 {
			decided, undecided = key, und
		}
		out = append(out, pool[0])
		left = slices.DeleteFunc(left, func(s standing) bool { return s.policy == pool[0].policy })
	}
	return out, decided, undecided
}

// rankHeld ranks the candidates (rank) and then asks whether the choice
// rests on one seed's critical utilization: the verdicts are ranked
// again without each seed's in turn (withoutSeed), each interval
// recomputed from the seeds left. A choice some seed set one seed smaller does not make is within
// the seed noise, as a rerun with other seeds may show: then today's
// policies (base), where one of those seed sets chooses them and, with a
// given utilization, they do not collapse at it, are kept (a change is
// advised only where it holds on every such seed set, and the status quo
// costs nothing to adopt); otherwise the choice stands. Either way the
// key says so, with what each seed set chose, and within names the
// candidates the choice is within the seed noise of: the one every seed
// chose, those the smaller sets chose instead, and today's policies (nil
// where the choice holds). Where every seed set chooses alike but a gain
// over today's policies is left undecided against the least gain worth a
// change (best), within names the choice, those candidates and today's,
// for more seeds to decide. Fewer than three seeds, or one candidate, are
// not asked.
func rankHeld(cands []standing, vs []Verdict, given bool, base string) (order []standing, key string, within []string) {
	cands = slices.Clone(cands)
	for i := range cands {
		cands[i].today = cands[i].policy == base
	}
	order, key, undecided := rank(cands, given)
	n := 0
	for _, v := range vs {
		n = max(n, v.Seeds)
	}
	if len(order) < 2 || n < 3 {
		return order, key, nil
	}
	more := fmt.Sprintf("more seeds (--seeds above %d) may decide it", n)
	policies := make([]string, len(cands))
	for i, s := range cands {
		policies[i] = s.policy
	}
	var others, chose []string // what a seed set without one seed chose instead, and without which seeds
	without := map[string][]string{}
	for k := range n {
		st := standings(policies, withoutSeed(vs, k))
		for i := range st {
			st[i].changed, st[i].attempts, st[i].today = cands[i].changed, cands[i].attempts, cands[i].today
		}
		o, ok, _ := rank(st, given)
		if o[0].policy != order[0].policy {
			other := fmt.Sprintf("%s (by %s)", o[0].policy, keyName(ok))
			if _, ok := without[other]; !ok {
				others = append(others, other)
			}
			without[other] = append(without[other], seedName(k))
			chose = append(chose, o[0].policy)
		}
	}
	within = []string{order[0].policy}
	if len(others) == 0 {
		if len(undecided) == 0 {
			return order, key, nil
		}
		// Every seed set makes the same choice, but whether a gain over
		// today's policies is worth a change rests on the seeds' interval.
		for _, p := range append(undecided, base) {
			if !slices.Contains(within, p) {
				within = append(within, p)
			}
		}
		return order, key + "; " + more, within
	}
	for _, p := range append(slices.Clone(chose), base) {
		if !slices.Contains(within, p) && slices.ContainsFunc(cands, func(s standing) bool { return s.policy == p }) {
			within = append(within, p)
		}
	}
	for i, o := range others {
		seeds := "any one seed"
		if w := without[o]; len(w) < n {
			seeds = "seed " + w[len(w)-1]
			if len(w) > 1 {
				seeds = "seed " + strings.Join(w[:len(w)-1], ", ") + " or " + w[len(w)-1]
			}
		}
		others[i] = "without " + seeds + " " + o
	}
	noise := fmt.Sprintf("with all %d seeds %s (by %s), %s", n, order[0].policy, keyName(key), strings.Join(others, ", "))
	at := slices.IndexFunc(order, func(s standing) bool { return s.policy == base })
	if at <= 0 || !slices.Contains(chose, base) || given && order[at].collapses {
		return order, key + "; the choice is within the seed noise: " + noise + "; " + more, within
	}
	kept := append([]standing{order[at]}, slices.Delete(slices.Clone(order), at, at+1)...)
	return kept, "keeping today's policies, the choice being within the seed noise: " + noise +
		"; a change is advised only where every seed set one seed smaller makes it, and " + more, within
}

// withoutSeed is the verdicts as if seed k (counted from 0) had not been
// run, for the critical utilization: its own left out of each verdict's,
// the verdict's figure the lowest of the seeds left; with a given
// utilization, whether the policy collapses there is judged again on
// them. Availability and extra work keep their ranges over every seed: a
// range over fewer seeds is narrower, so leaving one out would only ever
// tell candidates further apart, which says nothing about the noise. A
// verdict that keeps no critical utilizations by seed is left as it is.
func withoutSeed(vs []Verdict, k int) []Verdict {
	out := slices.Clone(vs)
	for i := range out {
		v := &out[i]
		if !v.CriticalSearched || k >= len(v.CriticalBySeed) || len(v.CriticalBySeed) != v.Seeds {
			continue
		}
		v.CriticalBySeed = slices.Delete(slices.Clone(v.CriticalBySeed), k, k+1)
		v.CriticalUtilization = nil
		for _, u := range v.CriticalBySeed {
			if u != nil && (v.CriticalUtilization == nil || *u < *v.CriticalUtilization) {
				v.CriticalUtilization = u
			}
		}
		if v.UtilizationGiven {
			v.Collapses = v.CriticalUtilization != nil && v.Utilization > *v.CriticalUtilization
		}
		v.Seeds--
	}
	return out
}

// seedName names seed k of an audit (counted from 0) by the flag that
// sets the first.
func seedName(k int) string {
	if k == 0 {
		return "--seed"
	}
	return fmt.Sprintf("--seed+%d", k)
}

// keyName is a key of the ranking without its figures.
func keyName(key string) string {
	if i := strings.IndexAny(key, "(:;"); i > 0 {
		return strings.TrimSpace(key[:i])
	}
	return key
}

// best narrows the candidates key by key and returns those left, in
// order, and the key that narrowed them last; when the ranking keys leave
// several, the tie-break says what tied and the rule that chose. The
// candidates whose gain over today's policies the seeds left undecided
// against the least gain worth a change come last (worth).
func best(cands []standing, given bool) ([]standing, string, []string) {
	key := ""
	var keys []string
	// narrow keeps kept; where that leaves some out, name (with the
	// figures detail gives, if any) is the key that decided so far.
	narrow := func(name string, kept []standing, detail func(kept []standing) string) {
		keys = append(keys, name)
		if len(kept) > 0 && len(kept) < len(cands) {
			key = name
			if detail != nil {
				key += " (" + detail(kept) + ")"
			}
		}
		if len(kept) > 0 {
			cands = kept
		}
	}
	// worth is the top block of the candidates on one key (iv: each one's
	// interval, at its mean), with today's policies back in where none of
	// the block surely beats them by the least gain worth a change, and
	// taken out of it where one does. gain is how far a candidate is past
	// that gain over today's (pairedMargin); show words a candidate's
	// figure, by the gain itself with its interval. A candidate surely
	// beats today's where the margins' 95% interval is above 0; where it
	// straddles 0, today's are kept, said. Either way, a gain not sure at
	// 99% names the candidate in undecided: more seeds confirm or undo a
	// change, or decide the gain, where the first seeds barely do.
	var worthNotes, undecided []string
	worth := func(name string, iv func(s standing) (lo, mean, hi float64), gain func(s, today standing) gained,
		show func(s standing) string, by func(s, today standing, g gained) string, margin string) []standing {
		block := topBlock(cands, func(s standing) (float64, float64) {
			lo, _, hi := iv(s)
			return lo, hi
		})
		at := slices.IndexFunc(cands, func(s standing) bool { return s.today })
		if at < 0 {
			return block
		}
		today := cands[at]
		beats := func(s standing, g gained) bool {
			if g.open() {
				undecided = append(undecided, s.policy)
			}
			return g.mean-g.half > 0
		}
		if slices.ContainsFunc(block, func(s standing) bool { return s.today }) {
			// Within the spreads, a candidate the seeds paired show
			// surely beats today's by the least gain worth a change
			// still does: the pairing sees past the noise both share.
			for _, s := range block {
				if g := gain(s, today); g.paired && !s.today && beats(s, g) {
					return slices.DeleteFunc(block, func(s standing) bool { return s.today })
				}
			}
			return block
		}
		var others []string
		for _, s := range block {
			g := gain(s, today)
			if beats(s, g) {
				return block
			}
			verdict := "less than"
			if g.mean+g.half >= 0 {
				verdict = "not surely"
			}
			others = append(others, fmt.Sprintf("%s %s above today's %s %s beyond the seed spread but by %s, %s %s, the least gain worth a change",
				s.policy, show(s), today.policy, show(today), by(s, today, g), verdict, margin))
		}
		worthNotes = append(worthNotes, fmt.Sprintf("on %s %s: keeping it", name, strings.Join(others, "; ")))
		return slices.DeleteFunc(slices.Clone(cands), func(s standing) bool {
			return !s.today && !slices.ContainsFunc(block, func(k standing) bool { return k.policy == s.policy })
		})
	}
	if given {
		narrow("never collapsing at the given utilization", slices.DeleteFunc(slices.Clone(cands), func(s standing) bool { return s.collapses }), nil)
	} else {
		all := cands
		const name = "critical utilization"
		narrow(name, worth(name, func(s standing) (float64, float64, float64) {
			m, h := s.criticalCI()
			return m - h, m, m + h
		}, func(s, today standing) gained {
			return pairedMargin(s.seeds, today.seeds, criticalTie/2, func(c, t float64) float64 { return c - t - worthCritical })
		}, func(s standing) string {
			m, h := s.criticalCI()
			return fmt.Sprintf("%s ±%.2f", utilText(m), h)
		}, func(_, _ standing, g gained) string {
			d := g.mean + worthCritical
			return fmt.Sprintf("%.3f (%.3f–%.3f, %s)", d, d-g.half, d+g.half, pairedText)
		}, fmt.Sprintf("%.2f", worthCritical)), func(kept []standing) string { return criticalApart(kept, all) })
	}
	const availability = "availability during the faults"
	narrow(availability, worth(availability, func(s standing) (float64, float64, float64) { return s.avail.Min, s.avail.Mean, s.avail.Max },
		func(s, today standing) gained {
			// Each seed's margin is how far the candidate's unavailability
			// is under (1 − worthUnavailability) of today's, that seed's.
			return pairedMargin(s.availSeeds, today.availSeeds, 0, func(c, t float64) float64 { return (1-worthUnavailability)*(1-t) - (1 - c) })
		}, func(s standing) string {
			return fmt.Sprintf("%.3f (%.3f–%.3f)", s.avail.Mean, s.avail.Min, s.avail.Max)
		}, func(_, today standing, g gained) string {
			u := 1 - today.avail.Mean
			if u <= 0 {
				return "no cut in its unavailability (today's fail nothing)"
			}
			cut := func(e float64) float64 { return 100 * (worthUnavailability + e/u) }
			return fmt.Sprintf("a cut of %.0f%% (%.0f–%.0f%%, %s) in its unavailability", cut(g.mean), cut(g.mean-g.half), cut(g.mean+g.half), pairedText)
		}, fmt.Sprintf("a cut of %.0f%%", 100*worthUnavailability)), nil)
	narrow("extra work", topBlock(cands, func(s standing) (float64, float64) { return -s.extra.Max, -s.extra.Min }), nil)
	if len(cands) == 1 {
		return cands, cmp.Or(key, "being the only candidate left") + worthText(worthNotes), undecided
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
		return kept, why + worthText(worthNotes), undecided
	}
	attempts := func(s standing) int { return s.attempts }
	if kept := least(attempts); len(kept) < len(cands) {
		why := "the fewest attempts allowed, the least extra work at worst: " + tied + ", and change as many edges; " + figures(attempts, "attempts over every edge at most")
		return kept, why + worthText(worthNotes), undecided
	}
	return cands, "the order of the candidates: " + tied + ", and change as many edges and allow as many attempts" + worthText(worthNotes), undecided
}

// pairedText says how a gain's interval was found.
const pairedText = "95% over the seeds paired"

// gained is how far a candidate is past the least gain worth a change
// over today's policies on one key: the mean of its margins, the
// half-widths of their 95% and 99% intervals, and whether they were
// paired seed by seed (without, only the means: no interval).
type gained struct {
	mean, half, strict float64
	paired             bool
}

// open reports whether the gain is not sure at 99%: above 0 at 95% but
// not at 99%, or across 0 at 95%.
func (g gained) open() bool { return g.mean+g.half >= 0 && g.mean-g.strict <= 0 }

// pairedMargin is how far candidate c is past the least gain worth a
// change over today's t, seed by seed (margin: one seed's figures, the
// same arrivals and faults under both): the mean of the margins and the
// half-widths of its 95% and 99% intervals (Student's t with one degree
// of freedom fewer than the seeds), each at least res: the figures' own
// resolution, which margins that agree seed by seed do not narrow. (Not
// added to the t interval: each seed's rounding is in the margins'
// spread already.) Where the two keep different seeds, or one, only
// their means are compared.
func pairedMargin(c, t []float64, res float64, margin func(c, t float64) float64) gained {
	if len(c) != len(t) || len(c) < 2 {
		return gained{mean: margin(stat.Mean(c, nil), stat.Mean(t, nil))}
	}
	e := make([]float64, len(c))
	for i := range c {
		e[i] = margin(c[i], t[i])
	}
	mean, sd := stat.MeanStdDev(e, nil)
	n := float64(len(e))
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}
	se := sd / math.Sqrt(n)
	return gained{mean: mean, half: max(res, tq.Quantile(0.975)*se), strict: max(res, tq.Quantile(0.995)*se), paired: true}
}

// worthText is what the least gain worth a change decided, as the tail
// of a key: empty where it decided nothing.
func worthText(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return "; " + strings.Join(notes, "; ")
}

// criticalApart states the seeds' critical utilizations of the candidates
// kept and of the best left out: each one's mean with its 95% interval
// (the search's resolution included) and the seeds' range; a gap no
// interval bridges separates them.
func criticalApart(kept, all []standing) string {
	show := func(s standing) string {
		m, h := s.criticalCI()
		return fmt.Sprintf("%s %s ±%.2f, seeds %s", s.policy, utilText(m), h, seedRange(s.bySeed))
	}
	var in []string
	for _, s := range kept {
		in = append(in, show(s))
	}
	var out standing
	top := math.Inf(-1)
	for _, s := range all {
		if m, h := s.criticalCI(); !slices.ContainsFunc(kept, func(k standing) bool { return k.policy == s.policy }) && m+h > top {
			out, top = s, m+h
		}
	}
	return fmt.Sprintf("the mean of each seed's own under its worst degradation, ±95%% confidence and the search's ±%.2f: %s; the best of the rest %s, below beyond both intervals",
		SearchTolerance, strings.Join(in, "; "), show(out))
}

// seedRange is a critical utilization's range over the seeds.
func seedRange(x Stat) string {
	if x.Min == x.Max {
		return utilText(x.Min)
	}
	return utilText(x.Min) + "–" + utilText(x.Max)
}

// utilText is a critical utilization as the report writes it: ≥0.95 for
// recovering at SearchHigh (1 in the ranking's figures).
func utilText(u float64) string {
	if u >= 1 {
		return fmt.Sprintf("≥%.2f", SearchHigh)
	}
	return fmt.Sprintf("%.2f", u)
}

// reason says in one sentence why the winner was chosen: by key, and on
// what, where on says (how many seeds decided it).
func reason(w standing, on, key string, given bool, assumption string) string {
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
		fmt.Fprintf(&b, "%s recovers after every trigger in every seed up to %.2f utilization of the degraded dependency (%s over the seeds, each seed's own) under its worst degradation, %s", w.policy, w.critical, seedRange(w.bySeed), w.criticalAt)
	}
	extra := fmt.Sprintf("%+.2f", w.extra.Mean)
	if extra == "-0.00" || extra == "+0.00" {
		extra = "0.00"
	}
	if on != "" {
		on += ", "
	}
	fmt.Fprintf(&b, ", with availability %.3f (%.3f–%.3f over the seeds) and extra work %s; decided %sby %s", w.avail.Mean, w.avail.Min, w.avail.Max, extra, on, key)
	if !given && w.collapses {
		// The best policy is not enough at the model's own utilization:
		// say so, or the reader takes "run X" for "X keeps you up today".
		fmt.Fprintf(&b, "; at the model's own utilization it stays collapsed after the trigger under %s (the capacity plan's verdict): there it is not enough, and the degraded dependency needs the capacity to run below its critical utilization", w.worst)
	}
	if assumption != "" {
		b.WriteString("; " + assumption)
	}
	return b.String()
}

// ordinaryDayGate rules out, before the ranking, every candidate whose
// availability on an ordinary day (degradation ordinary: the traces' own
// failures, with no fault added) is below that of today's policies beyond
// the seed spread, or within it but with its mean unavailability so far
// above theirs that going back to them would be a change worth making
// (worthUnavailability). Headroom on a bad day does not pay for
// availability lost every day: a policy that refuses the retries today's
// failures need would win on critical utilization alone. Today's policies
// are observed, or, when observed breaks a safety rule, the better on an
// ordinary day of observed+safe (the rules applied: what they cost is
// accepted, what a candidate refuses beyond them is not) and
// observed+keys (the retries the rules stop for want of an idempotency
// key kept, with the key): where a key keeps today's availability,
// stopping those retries is a loss the rules do not require. Without an
// ordinary day among the verdicts, or without the baseline, nothing is
// ruled out.
func ordinaryDayGate(cands []string, vs []Verdict, ordinary string) ([]string, []RuledOut) {
	day := func(p string) (Stat, bool) { return ordinaryDay(vs, ordinary, p) }
	base := baseline(cands, vs, ordinary)
	b, ok := day(base)
	if !ok || !slices.Contains(cands, base) {
		return cands, nil
	}
	var kept []string
	var ruled []RuledOut
	for _, c := range cands {
		a, ok := day(c)
		// Going back from c to today's would cut its unavailability by
		// more than the least difference worth a change. Where today's
		// policies fail nothing, any loss is infinitely more, which says
		// nothing: the spread alone decides (on hotrod one request of
		// one seed's 216 failed under budget-sized+keys).
		back := b.Mean < 1 && 1-b.Mean < (1-a.Mean)*(1-worthUnavailability)
		if c == base || !ok || a.Overlaps(b) && !back || a.Mean > b.Mean {
			kept = append(kept, c)
			continue
		}
		below := "below it beyond the seed spread"
		if a.Overlaps(b) {
			below = fmt.Sprintf("within the seed spread, but its unavailability %.0f%% above today's by the mean: going back would cut it by %.0f%%, above %.0f%%, the least difference worth a change",
				100*((1-a.Mean)/(1-b.Mean)-1), 100*(1-(1-b.Mean)/(1-a.Mean)), 100*worthUnavailability)
		}
		ruled = append(ruled, RuledOut{Policy: c, Why: fmt.Sprintf(
			"availability on an ordinary day (%s: the traces' own failures) %.3f (%.3f–%.3f) vs %.3f (%.3f–%.3f) for %s, %s: "+
				"following it loses availability every day to gain headroom on a bad day",
			ordinary, a.Mean, a.Min, a.Max, b.Mean, b.Min, b.Max, base, below)})
	}
	return kept, ruled
}

// ordinaryDay is policy p's availability on an ordinary day, if among
// the verdicts.
func ordinaryDay(vs []Verdict, ordinary, p string) (Stat, bool) {
	i := slices.IndexFunc(vs, func(v Verdict) bool { return v.Degradation == ordinary && v.Policy == p })
	if i < 0 {
		return Stat{}, false
	}
	return vs[i].Availability, true
}

// baseline is today's policies among the candidates: observed, or, when
// a safety rule ruled it out, the better on an ordinary day of
// observed+safe and observed+keys (observed+safe without the day).
func baseline(cands []string, vs []Verdict, ordinary string) string {
	base := "observed"
	if slices.Contains(cands, base) {
		return base
	}
	base += SafeSuffix
	keys := "observed" + KeysSuffix
	k, kok := ordinaryDay(vs, ordinary, keys)
	s, sok := ordinaryDay(vs, ordinary, base)
	if kok && slices.Contains(cands, keys) && (!sok || !slices.Contains(cands, base) || k.Mean > s.Mean) {
		base = keys
	}
	return base
}
