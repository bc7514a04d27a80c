package audit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// DefaultSeeds is how many seeds every run of an audit is repeated with.
const DefaultSeeds = 5

// SafeSuffix names the observed policy with the safety rules applied,
// a candidate of its own when the observed policy breaks a rule.
const SafeSuffix = "+safe"

// KeysSuffix names the observed policy with an idempotency key sent on
// every retried write that lacks one, so that its retries are kept: the
// other safe way out of a keyless retry, a candidate where observed+safe
// stops retries today's failures may need.
const KeysSuffix = "+keys"

// Config is what an audit runs.
type Config struct {
	// Variants are the policies to compare, each with its model; policy
	// "observed" (the baseline, today's policies) and policy "none" (the
	// reference of extra work, never recommended) must be among them.
	Variants     []replay.Variant
	Degradations []replay.Degradation
	// Topology, when set, tells the safety rules each edge's method and
	// idempotency keys; without it they go by the models' Idempotent flags.
	Topology *graph.Topology
	// Run configures every run; its Seed is the first of Seeds seeds
	// (Seed, Seed+1, …). Seeds ≤ 0 means DefaultSeeds.
	Run   replay.RunConfig
	Seeds int
	// Utilization is the user's utilization of a service (from their
	// metrics), which turns critical utilizations into verdicts.
	Utilization map[string]float64
	// NoSearch skips the critical-utilization searches.
	NoSearch     bool
	Declarations Declarations
	// branch marks the audit Run runs with the operations of unknown
	// idempotency declared idempotent (Recommendation.IfIdempotent).
	branch bool
	// cache holds the audit's runs, shared with its branch (nil: Run
	// makes it).
	cache *runCache
	// noShadows makes every variant's runs its own (no planShadows): the
	// audit the shadows must leave unchanged, for the tests.
	noShadows bool
	// Progress, when set, is called after each run with runs done and an
	// estimate of the runs in all, which grows when a search needs more.
	Progress func(done, total int)
}

// Audit is the decision: every verdict, the recommendation, and the runs
// of the first seed (for detail tables and charts).
type Audit struct {
	Seeds     int    `json:"seeds"`
	FirstSeed uint64 `json:"first_seed"`
	// Utilization is, per degraded dependency, its utilization today in
	// the model and the user's, if given.
	Utilization    []ServiceUtilization `json:"utilization"`
	Verdicts       []Verdict            `json:"verdicts"`
	Recommendation Recommendation       `json:"recommendation"`
	Runs           []replay.Result      `json:"runs"`
	// Observed and Recommended are the models of the baseline and of the
	// recommendation (after the safety rules): what a policy file writes.
	Observed    *replay.Model `json:"-"`
	Recommended *replay.Model `json:"-"`
}

// ServiceUtilization is one degraded dependency's utilization.
type ServiceUtilization struct {
	Service string   `json:"service"`
	Model   float64  `json:"model"`
	Given   *float64 `json:"given"`
}

// Recommendation is the policy an audit recommends and what adopting it
// changes, edge by edge.
type Recommendation struct {
	// Policy is empty when every candidate collapses at the given
	// utilization.
	Policy  string   `json:"policy"`
	Reason  string   `json:"reason"`
	Changes []Change `json:"changes"`
	// Ranking is every candidate, best first.
	Ranking  []string     `json:"ranking"`
	RuledOut []RuledOut   `json:"ruled_out"`
	Safety   []Adjustment `json:"safety"`
	// Assumption says which utilization the verdicts rest on when the
	// user gave none.
	Assumption string `json:"assumption,omitempty"`
	// SizedBudget says how candidate budget-sized was sized, when the
	// audit added it (today's retry share exceeds the standard budget's).
	SizedBudget *SizedBudget `json:"sized_budget,omitempty"`
	// WorstCase is the most attempts one request may send along a path
	// under the recommended policy beside today's, when they differ.
	WorstCase *WorstCase `json:"worst_case,omitempty"`
	// MoreSeeds, when set, says the choice was within the seed noise
	// with the audit's seeds and was decided on more of them, for the
	// candidates it was within the noise of.
	MoreSeeds *MoreSeeds `json:"more_seeds,omitempty"`
	// within names the candidates the choice is within the seed noise
	// of (rankHeld), nil where it holds.
	within []string
	// IfIdempotent is the advice if the operations the safety rules
	// treated as writes only because nothing shows otherwise are in fact
	// idempotent, when that advice differs: the traces cannot decide it,
	// the user can (--idempotent).
	IfIdempotent *Conditional `json:"if_idempotent,omitempty"`
	// NotAdvised names the edges whose retry policy the audit gives no
	// advice on, and why: whether their callers retry is unknown (graph.
	// Edge.RetriesUnknown), so every candidate leaves them as replayed
	// (RuleRetriesUnknown).
	NotAdvised []string `json:"not_advised,omitempty"`
}

// MoreSeeds is how the recommendation was decided where the audit's
// seeds left the choice within the seed noise: the candidates that choice
// was between, and today's policies, were run again over Seeds seeds (the
// audit's and the next ones after them), with their verdicts.
type MoreSeeds struct {
	Seeds      int       `json:"seeds"`
	Candidates []string  `json:"candidates"`
	Verdicts   []Verdict `json:"verdicts"`
}

// ExtraSeeds is how many seeds more than the audit's decide a choice its
// own seeds leave within the seed noise: the next ones after them, for
// the candidates that choice is between alone, so that only an audit
// whose choice needs them pays for them.
const ExtraSeeds = 5

// Conditional is the recommendation of the same audit with Declare
// declared idempotent.
type Conditional struct {
	Declare []string `json:"declare"`
	Policy  string   `json:"policy"`
	Reason  string   `json:"reason"`
	Changes []Change `json:"changes"`
}

// RuledOut is a candidate policy removed from the ranking, with why.
type RuledOut struct {
	Policy string `json:"policy"`
	Why    string `json:"why"`
}

// Run executes the audit: the matrix over the seeds, the searches, the
// safety rules, the ranking and the recommendation. Runs use every core;
// ctx stops them.
func Run(ctx context.Context, cfg Config) (*Audit, error) {
	if cfg.cache == nil {
		cfg.cache = newRunCache()
	}
	orig, done := cfg, 0
	if cfg.Progress != nil {
		report := cfg.Progress
		cfg.Progress = func(d, total int) {
			done = d
			report(d, total)
		}
	}
	seeds := make([]uint64, max(cfg.Seeds, 1))
	if cfg.Seeds <= 0 {
		seeds = make([]uint64, DefaultSeeds)
	}
	for i := range seeds {
		seeds[i] = cfg.Run.Seed + uint64(i)
	}
	obsAt := slices.IndexFunc(cfg.Variants, func(v replay.Variant) bool { return v.Policy == "observed" })
	noneAt := slices.IndexFunc(cfg.Variants, func(v replay.Variant) bool { return v.Policy == "none" })
	if obsAt < 0 || noneAt < 0 {
		return nil, fmt.Errorf("an audit needs policies observed and none")
	}
	observed := cfg.Variants[obsAt].Model
	// Where today's traces retry more than the standard budget allows, a
	// budget sized to today's retry share stands beside it.
	var sized *SizedBudget
	if bi := slices.IndexFunc(cfg.Variants, func(v replay.Variant) bool { return v.Policy == "budget" }); bi >= 0 &&
		!slices.ContainsFunc(cfg.Variants, func(v replay.Variant) bool { return v.Policy == SizedBudgetPolicy }) {
		if v, s, ok := sizedBudget(cfg.Topology, cfg.Variants[bi].Model); ok {
			cfg.Variants = slices.Insert(slices.Clip(cfg.Variants), bi+1, v)
			sized = &s
		}
	}
	// The ordinary day (the traces' own failure timeline) is always
	// replayed: the ranking's first gate compares every candidate with
	// today's policies on it.
	if !slices.ContainsFunc(cfg.Degradations, isOrdinaryDay) {
		cfg.Degradations = append(slices.Clip(cfg.Degradations), replay.Degradation{Name: string(degrade.Observed), Faults: degrade.Schedule{{Kind: degrade.Observed}}})
	}
	ordinary := cfg.Degradations[slices.IndexFunc(cfg.Degradations, isOrdinaryDay)].Name
	services, err := degradedServices(observed, cfg.Degradations)
	if err != nil {
		return nil, err
	}
	for svc, u := range cfg.Utilization {
		if !slices.ContainsFunc(observed.Services, func(s replay.Service) bool { return s.Name == svc }) {
			return nil, fmt.Errorf("utilization of %q: no such service (have %s)", svc, strings.Join(serviceNames(observed), ", "))
		}
		if !(u > 0 && u < 1) {
			return nil, fmt.Errorf("utilization of %q: %g: want a busy fraction between 0 and 1", svc, u)
		}
	}
	if err := cfg.Declarations.check(observed, cfg.Topology); err != nil {
		return nil, err
	}
	facts := factsOf(observed, cfg.Topology, cfg.Declarations)
	vs, ruled, adj := safeVariants(cfg.Variants, observed, facts)
	noneAt = slices.IndexFunc(vs, func(v variant) bool { return v.policy == "none" })
	if !cfg.noShadows {
		planShadows(vs)
	}

	today := map[string]float64{}
	for _, svc := range services {
		if _, ok := today[svc]; !ok {
			if u, err := Utilization(observed, svc); err == nil {
				today[svc] = u
			}
		}
	}
	searches := len(vs) * len(cfg.Degradations)
	if cfg.NoSearch {
		searches = 0
	}
	// A search runs every seed at the top and at the answer's lower end,
	// and one seed at most probes between; then each other seed, for its
	// own critical utilization, about two probes above the answer.
	total := len(seeds)*(len(vs)*len(cfg.Degradations)+1) + searches*(2*len(seeds)+bisections()+1+2*(len(seeds)-1))
	p := newPool(func(done int) {
		if cfg.Progress != nil {
			cfg.Progress(done, max(total, done))
		}
	})
	p.cache = cfg.cache
	mx, verdicts, err := evaluate(ctx, p, cfg, vs, noneAt, seeds, services, today)
	if err != nil {
		return nil, err
	}
	a := &Audit{Seeds: len(seeds), FirstSeed: seeds[0], Verdicts: verdicts, Observed: observed}
	var assumed []string
	for _, svc := range uniq(services) {
		if svc == "" {
			continue // the traces' own failures degrade no one dependency
		}
		su := ServiceUtilization{Service: svc, Model: today[svc]}
		if u, ok := cfg.Utilization[svc]; ok {
			su.Given = &u
		} else {
			assumed = append(assumed, fmt.Sprintf("%s %.2f", svc, today[svc]))
		}
		a.Utilization = append(a.Utilization, su)
	}
	for s := range mx.runs[0] {
		a.Runs = append(a.Runs, mx.runs[0][s]...)
	}
	given := len(cfg.Utilization) > 0
	a.Recommendation, a.Recommended = recommend(vs, noneAt, verdicts, ordinary, observed, facts, ruled, adj, given, assumption(assumed), "")
	if within := a.Recommendation.within; len(within) > 0 {
		// The choice is within the seed noise: the candidates it is
		// between, today's policies among them, run again over the next
		// seeds too, decide it.
		var sub []variant
		for i, v := range vs {
			if i == noneAt || slices.Contains(within, v.policy) {
				v.via, v.viaAt, v.viaK, v.shadows = nil, 0, 0, nil
				sub = append(sub, v)
			}
		}
		subNone := slices.IndexFunc(sub, func(v variant) bool { return v.policy == "none" })
		if !cfg.noShadows {
			planShadows(sub)
		}
		more := slices.Clone(seeds)
		for i := range ExtraSeeds {
			more = append(more, seeds[len(seeds)-1]+uint64(i)+1)
		}
		_, mv, err := evaluate(ctx, p, cfg, sub, subNone, more, services, today)
		if err != nil {
			return nil, err
		}
		first := a.Recommendation
		note := fmt.Sprintf("on %d seeds (--seed to --seed+%d) for %s, the first %d having left the choice within the seed noise (with them %s)",
			len(more), len(more)-1, strings.Join(within, ", "), len(seeds), cmp.Or(first.Policy, "no policy"))
		r, m := recommend(sub, subNone, mv, ordinary, observed, facts, ruled, adj, given, assumption(assumed), note)
		for _, pol := range first.Ranking {
			if !slices.Contains(r.Ranking, pol) && !slices.ContainsFunc(r.RuledOut, func(x RuledOut) bool { return x.Policy == pol }) {
				r.Ranking = append(r.Ranking, pol)
			}
		}
		for _, x := range r.RuledOut {
			if !slices.ContainsFunc(first.RuledOut, func(y RuledOut) bool { return y.Policy == x.Policy }) {
				first.RuledOut = append(first.RuledOut, x)
			}
		}
		r.RuledOut = first.RuledOut
		r.MoreSeeds = &MoreSeeds{Seeds: len(more), Candidates: within, Verdicts: mv}
		a.Recommendation, a.Recommended = r, m
	}
	a.Recommendation.SizedBudget = sized
	if names := undecided(adj); len(names) > 0 && !cfg.branch {
		alt := orig
		alt.branch = true
		alt.Declarations.Idempotent = append(slices.Clip(orig.Declarations.Idempotent), names...)
		if orig.Progress != nil {
			alt.Progress = func(d, total int) { orig.Progress(done+d, done+total) }
		}
		b, err := Run(ctx, alt)
		if err != nil {
			return nil, err
		}
		if r := b.Recommendation; r.Policy != a.Recommendation.Policy || !slices.Equal(r.Changes, a.Recommendation.Changes) {
			a.Recommendation.IfIdempotent = &Conditional{Declare: names, Policy: r.Policy, Reason: r.Reason, Changes: r.Changes}
		}
	}
	return a, nil
}

// evaluate runs the matrix of variants vs (none at noneAt) over the
// seeds and the critical-utilization searches, and judges each verdict at
// the user's utilization or the model's own today: the verdicts, by
// degradation and variant, and the matrix they came from.
func evaluate(ctx context.Context, p *pool, cfg Config, vs []variant, noneAt int, seeds []uint64, services []string, today map[string]float64) (*matrix, []Verdict, error) {
	mx, err := runMatrix(ctx, p, vs, noneAt, cfg.Degradations, seeds, cfg.Run)
	if err != nil {
		return nil, nil, err
	}
	verdicts := mx.verdicts(vs, noneAt, cfg.Degradations, services)
	if cfg.NoSearch {
		for i := range verdicts {
			verdicts[i].CriticalNote = "the critical-utilization search was skipped"
		}
	} else {
		// Variants that replay alike under a degradation (the safety rules
		// can make their policies the same; see twins) are searched once.
		same := make([][]int, len(cfg.Degradations))
		for d := range cfg.Degradations {
			same[d] = twins(vs, cfg.Degradations[d].Faults)
		}
		// A variant with a via (planShadows) reads the via's probes under
		// the same degradation, as the via's search makes them.
		logs := make([]*probeLog, len(verdicts))
		for i := range logs {
			logs[i] = newProbeLog()
		}
		err = each(len(verdicts), func(i int) error {
			defer logs[i].end()
			v := &verdicts[i]
			d, vi := i/len(vs), i%len(vs)
			if same[d][vi] != vi {
				return nil
			}
			var via *probeLog
			if vs[vi].via != nil {
				via = logs[d*len(vs)+vs[vi].viaAt]
			}
			u0, ok := today[v.Service]
			switch {
			case v.Service == "":
				v.CriticalNote = "the degradation names no dependency to load (the traces' own failures)"
				return nil
			case !ok:
				v.CriticalNote = "no utilization of " + v.Service + " to scale (closed-loop arrivals or a cyclic call graph)"
				return nil
			}
			c, err := searchCritical(ctx, p, &vs[vi], probeLogs{own: logs[i], via: via}, v.Service, u0, mx.recoveredAll(d, vi), cfg.Degradations[d], seeds, cfg.Run)
			v.CriticalUtilization, v.CriticalBySeed, v.CriticalSearched, v.CriticalNote, v.Probes = c.Utilization, c.BySeed, c.Searched, c.Why, c.Probes
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		for i := range verdicts {
			d, vi := i/len(vs), i%len(vs)
			if j := d*len(vs) + same[d][vi]; j != i {
				src := verdicts[j]
				verdicts[i].CriticalUtilization, verdicts[i].CriticalBySeed, verdicts[i].CriticalSearched, verdicts[i].CriticalNote, verdicts[i].Probes =
					src.CriticalUtilization, src.CriticalBySeed, src.CriticalSearched, src.CriticalNote, src.Probes
			}
		}
	}
	for i := range verdicts {
		v := &verdicts[i]
		v.Utilization = today[v.Service]
		if u, ok := cfg.Utilization[v.Service]; ok {
			v.Utilization, v.UtilizationGiven = u, true
		}
		// Above the critical utilization, or, judged at today's load, in
		// some seed of the matrix that ran there.
		v.Collapses = v.CriticalSearched && v.CriticalUtilization != nil && v.Utilization > *v.CriticalUtilization ||
			!v.UtilizationGiven && v.CollapsedSeeds > 0
	}
	return mx, verdicts, nil
}

// Sentence says what the traces cannot decide and the advice if it is so.
func (c *Conditional) Sentence() string {
	names := strings.Join(c.Declare, ", ")
	flags := make([]string, len(c.Declare))
	for i, n := range c.Declare {
		flags[i] = "--idempotent " + n
	}
	advice := "no policy to recommend: " + c.Reason
	if c.Policy != "" {
		advice = "run " + c.Policy + ": " + c.Reason
	}
	is, it, itIs, writes := "is", "it", "it is", "a write"
	if len(c.Declare) > 1 {
		is, it, itIs, writes = "are", "them", "they are", "writes"
	}
	return fmt.Sprintf("the traces cannot show whether %s %s idempotent, so the safety rules treat %s as %s; if %s, declare %s (%s) and the advice becomes: %s",
		names, is, it, writes, itIs, it, strings.Join(flags, " "), advice)
}

// undecided lists the operations a safety rule treated as writes only
// because nothing shows otherwise, each once, in the order met.
func undecided(adj []Adjustment) []string {
	var names []string
	for _, x := range adj {
		if x.declare != "" && !slices.Contains(names, x.declare) {
			names = append(names, x.declare)
		}
	}
	return names
}

// isOrdinaryDay says a degradation is the traces' own failure timeline
// alone: normal operation.
func isOrdinaryDay(d replay.Degradation) bool {
	return len(d.Faults) == 1 && d.Faults[0].Kind == degrade.Observed
}

func assumption(assumed []string) string {
	if len(assumed) == 0 {
		return ""
	}
	return "the verdicts assume the model's own utilization (" + strings.Join(assumed, ", ") +
		", from the assumed capacity) and rest on it: give --utilization SVC=U from your metrics"
}

// bisections is how many probes the search makes between its ends.
func bisections() int {
	n := 0
	for w := SearchHigh - SearchLow; w > 2*SearchTolerance; w /= 2 {
		n++
	}
	return n
}

// safeVariants applies the safety rules to every candidate. The observed
// baseline is kept as it is (it is today's behaviour); when a rule would
// change it, "observed+safe" is added as a candidate and observed itself
// is ruled out. Where the rule stops retries of writes sent without an
// idempotency key, "observed+keys" is added too: the same retries with a
// key on every call, which the safety rules allow (stopping retries is
// safe, but not if it ends the availability they bought: on an operation
// the traces cannot even show to be a write, it would be advice that hurts
// whoever follows it). A candidate the rules leave equal to an earlier one
// is ruled out as the same.
func safeVariants(in []replay.Variant, observed *replay.Model, facts []edgeFacts) ([]variant, []RuledOut, []Adjustment) {
	var vs []variant
	var ruled []RuledOut
	var all []Adjustment
	for _, v := range in {
		if v.Policy == "none" {
			m, _ := applySafety(v.Policy, observed, v.Model, facts)
			vs = append(vs, variant{policy: v.Policy, model: m})
			continue
		}
		m, adj := applySafety(v.Policy, observed, v.Model, facts)
		if v.Policy == "observed" {
			vs = append(vs, variant{policy: v.Policy, model: v.Model})
			if len(adj) == 0 {
				continue
			}
			ruled = append(ruled, RuledOut{Policy: v.Policy, Why: "breaks a safety rule as it is: " + adj[0].Caller + " → " + adj[0].Callee + " " + adj[0].Operation + ": " + adj[0].Why})
			safe := v.Policy + SafeSuffix
			for i := range adj {
				adj[i].Policy = safe
			}
			all = append(all, adj...)
			vs = append(vs, variant{policy: safe, model: m, adjusted: adj})
			if k, ok := withKeys(v.Policy+KeysSuffix, observed, v.Model, facts); ok {
				all = append(all, k.adjusted...)
				vs = append(vs, k)
			}
			continue
		}
		all = append(all, adj...)
		vs = append(vs, variant{policy: v.Policy, model: m, adjusted: adj})
		if v.Policy != SizedBudgetPolicy || len(adj) == 0 {
			continue
		}
		// The sized budget bounds today's retries; where the rules stop
		// some of them for want of a key, it is a candidate with the key
		// too, as observed is.
		if k, ok := withKeys(v.Policy+KeysSuffix, observed, v.Model, facts); ok {
			all = append(all, k.adjusted...)
			vs = append(vs, k)
		}
	}
	isRuled := func(p string) bool { return slices.ContainsFunc(ruled, func(r RuledOut) bool { return r.Policy == p }) }
	for i := range vs {
		if vs[i].policy == "none" || isRuled(vs[i].policy) {
			continue
		}
		for j := range i {
			if (vs[j].policy == "none" || !isRuled(vs[j].policy)) && samePolicies(vs[i].model, vs[j].model) {
				ruled = append(ruled, RuledOut{Policy: vs[i].policy, Why: "after the safety rules it is the same as " + vs[j].policy})
				break
			}
		}
	}
	return vs, ruled, all
}

// withKeys is candidate proposed (today's policies, or the budget sized to
// them) with an idempotency key on every edge where it retries a write
// sent without one, and the safety rules applied to the rest (a keyed
// write is still not hedged without in-flight deduplication); ok is false
// where no such edge retries.
func withKeys(policy string, observed, proposed *replay.Model, facts []edgeFacts) (variant, bool) {
	keyedFacts := slices.Clone(facts)
	var keyed []int
	for i, e := range proposed.Edges {
		if f := facts[i]; f.write != "" && !f.keyed && e.Policy.MaxAttempts > 1 && e.Policy.HedgeAfter == 0 {
			keyedFacts[i].keyed = true
			keyed = append(keyed, i)
		}
	}
	if len(keyed) == 0 {
		return variant{}, false
	}
	m, adj := applySafety(policy, observed, proposed, keyedFacts)
	return variant{policy: policy, model: m, adjusted: adj, keyed: keyed}, true
}

// recommend ranks the candidates and words the winner's changes.
// note, when set, says on what the choice was decided (how many seeds).
func recommend(vs []variant, noneAt int, verdicts []Verdict, ordinary string, observed *replay.Model, facts []edgeFacts, ruled []RuledOut, adj []Adjustment, given bool, assumption, note string) (Recommendation, *replay.Model) {
	rec := Recommendation{Changes: []Change{}, Ranking: []string{}, RuledOut: ruled, Safety: adj, Assumption: assumption, NotAdvised: notAdvised(observed, facts)}
	if rec.RuledOut == nil {
		rec.RuledOut = []RuledOut{}
	}
	if rec.Safety == nil {
		rec.Safety = []Adjustment{}
	}
	var cands []string
	for i, v := range vs {
		if i != noneAt && !slices.ContainsFunc(ruled, func(r RuledOut) bool { return r.Policy == v.policy }) {
			cands = append(cands, v.policy)
		}
	}
	cands, worse := ordinaryDayGate(cands, verdicts, ordinary)
	rec.RuledOut = append(rec.RuledOut, worse...)
	// The gate has judged the ordinary day; the ranking judges the faults.
	faults := slices.DeleteFunc(slices.Clone(verdicts), func(v Verdict) bool { return v.Degradation == ordinary })
	if len(faults) == 0 {
		faults = verdicts
	}
	st := standings(cands, faults)
	for i := range st {
		for _, v := range vs {
			if v.policy == st[i].policy {
				st[i].changed, st[i].attempts = changedFrom(observed, v)
			}
		}
	}
	order, key, within := rankHeld(st, faults, given, baseline(cands, verdicts, ordinary))
	rec.within = within
	for _, s := range order {
		rec.Ranking = append(rec.Ranking, s.policy)
	}
	if len(order) == 0 {
		rec.Reason = "no candidate policy is left after the safety rules"
		return rec, nil
	}
	w := order[0]
	if given && w.collapses {
		rec.Reason = fmt.Sprintf("every policy stays collapsed at the given utilization (%s): add capacity, shed load, or try budget, breaker and deadline together", w.worst)
		return rec, nil
	}
	rec.Policy = w.policy
	rec.Reason = reason(w, note, key, given, assumption)
	var m *replay.Model
	for _, v := range vs {
		if v.policy == w.policy {
			m = v.model
			rec.Changes = changes(observed, v, facts)
			rec.WorstCase = worstCaseChange(observed, v.model)
		}
	}
	return rec, m
}

// degradedServices is each degradation's degraded dependency, checking
// that every service and edge its faults name is in the model.
func degradedServices(m *replay.Model, ds []replay.Degradation) ([]string, error) {
	var out []string
	for _, d := range ds {
		if len(d.Faults) == 0 {
			return nil, fmt.Errorf("degradation %q has no fault", d.Name)
		}
		if err := d.Check(m); err != nil {
			return nil, fmt.Errorf("degradation %s: %w", d.Name, err)
		}
		out = append(out, d.Faults[0].Service)
	}
	return out, nil
}

func serviceNames(m *replay.Model) []string {
	var n []string
	for _, s := range m.Services {
		n = append(n, s.Name)
	}
	slices.Sort(n)
	return n
}

func uniq(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// changedFrom counts the edges and services whose policy in v differs
// from observed (a key sent where today's calls send none is a change),
// and the attempts v's edges allow, summed.
func changedFrom(observed *replay.Model, v variant) (changed, attempts int) {
	m := v.model
	for i, e := range m.Edges {
		attempts += max(e.Policy.MaxAttempts, 1)
		if i >= len(observed.Edges) || !samePolicy(observed.Edges[i].Policy, e.Policy) || slices.Contains(v.keyed, i) {
			changed++
		}
	}
	for i, s := range m.Services {
		if i >= len(observed.Services) || s.ShedRetriesAt != observed.Services[i].ShedRetriesAt {
			changed++
		}
	}
	if m.RootPropagate != observed.RootPropagate {
		changed++
	}
	return changed, attempts
}
