package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/audit"
)

// AuditSchema versions the JSON of an audit; AuditSchemaV1 is the layout
// before seeds and capacity plans, which ReadAudit still reads.
const (
	AuditSchema   = "retryaudit.audit/v2"
	AuditSchemaV1 = "retryaudit.audit/v1"
)

// AuditReport is everything `retryaudit audit` found: the capacity plan
// (one verdict per degradation and policy, over the seeds), the
// recommendation, the topology, and the runs of the first seed. Its JSON
// is what `retryaudit report` renders again.
type AuditReport struct {
	Schema string `json:"schema"`
	Seeds  int    `json:"seeds"`
	// Calibration says whether the model reproduces the traces; when it
	// does not, the recommendation is printed as uncalibrated.
	Calibration *replay.Calibration `json:"calibration,omitempty"`
	FirstSeed   uint64              `json:"first_seed"`
	// Baseline is the policy the detail tables compare with.
	Baseline string `json:"baseline"`
	// Notes are footnotes, such as the capacities the model assumed.
	Notes          []string                   `json:"notes"`
	Utilization    []audit.ServiceUtilization `json:"utilization"`
	Verdicts       []audit.Verdict            `json:"verdicts"`
	Recommendation *audit.Recommendation      `json:"recommendation"`
	Topology       *graph.Topology            `json:"topology"`
	// Runs are the first seed's runs, degradation-major.
	Runs []replay.Result `json:"runs"`
	// Capacities are the degraded dependencies' capacities (see
	// ReplayReport).
	Capacities []Capacity `json:"capacities,omitempty"`
}

// NewAuditReport assembles the report of an audit of topology t; notes
// are the model's assumptions.
func NewAuditReport(t *graph.Topology, notes []string, a *audit.Audit) *AuditReport {
	rec := a.Recommendation
	return &AuditReport{Schema: AuditSchema, Seeds: a.Seeds, FirstSeed: a.FirstSeed, Baseline: "observed",
		Notes: append([]string{}, notes...), Utilization: a.Utilization, Verdicts: a.Verdicts,
		Recommendation: &rec, Topology: t, Runs: a.Runs}
}

// replayReport is the detail of the first seed as a replay report.
func (a *AuditReport) replayReport() *ReplayReport {
	return &ReplayReport{Schema: ReplaySchema, Baseline: a.Baseline, Notes: a.Notes, Runs: a.Runs, Capacities: a.Capacities}
}

// AuditJSON writes the report as indented JSON, absent lists as empty.
func AuditJSON(w io.Writer, a *AuditReport) error {
	out := *a
	out.Notes, out.Runs = nonNil(out.Notes), nonNil(out.Runs)
	out.Verdicts, out.Utilization = nonNil(out.Verdicts), nonNil(out.Utilization)
	return JSON(w, out)
}

// nonNil is xs, or an empty list for nil: JSON [] rather than null.
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// maxSeeds bounds the seeds a report read back may claim (the audit
// runs at most 100), which the header lists one by one.
const maxSeeds = 1000

// auditV1 is the layout of retryaudit.audit/v1.
type auditV1 struct {
	Schema         string          `json:"schema"`
	Topology       *graph.Topology `json:"topology"`
	Replay         *ReplayReport   `json:"replay"`
	Recommendation *struct {
		Policy  string `json:"policy"`
		Reason  string `json:"reason"`
		Changes []struct {
			Caller    string `json:"caller"`
			Callee    string `json:"callee"`
			Operation string `json:"operation"`
			Change    string `json:"change"`
		} `json:"changes"`
		Rejected []audit.RuledOut `json:"rejected"`
	} `json:"recommendation"`
}

// ReadAudit decodes the JSON of an audit, schema v2 or v1 (whose runs of
// one seed become verdicts of one seed, with no critical utilization).
// name is the file, for errors.
func ReadAudit(name string, data []byte) (*AuditReport, error) {
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	strict := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	switch head.Schema {
	case AuditSchema:
		var a AuditReport
		if err := strict(&a); err != nil {
			return nil, err
		}
		if a.Topology == nil || a.Recommendation == nil {
			return nil, fmt.Errorf("%s: no topology or no recommendation", name)
		}
		if a.Seeds < 0 || a.Seeds > maxSeeds {
			return nil, fmt.Errorf("%s: seeds %d: want 0 to %d", name, a.Seeds, maxSeeds)
		}
		return &a, nil
	case AuditSchemaV1:
		var v auditV1
		if err := strict(&v); err != nil {
			return nil, err
		}
		if v.Topology == nil || v.Replay == nil {
			return nil, fmt.Errorf("%s: no topology or no replay results", name)
		}
		return fromV1(&v), nil
	}
	return nil, fmt.Errorf("%s: schema %q: want %q or %q (the JSON of retryaudit audit --format json)", name, head.Schema, AuditSchema, AuditSchemaV1)
}

func fromV1(v *auditV1) *AuditReport {
	a := &AuditReport{Schema: AuditSchema, Seeds: 1, Baseline: v.Replay.Baseline, Notes: v.Replay.Notes,
		Topology: v.Topology, Runs: v.Replay.Runs, Recommendation: &audit.Recommendation{Changes: []audit.Change{}, Ranking: []string{}, RuledOut: []audit.RuledOut{}, Safety: []audit.Adjustment{}}}
	if len(a.Runs) > 0 {
		a.FirstSeed = a.Runs[0].Seed
	}
	none := map[string]float64{}
	for _, r := range a.Runs {
		if r.Policy == "none" {
			none[r.Degradation] = r.WorkAmplification
		}
	}
	one := func(x float64) audit.Stat { return audit.Stat{Mean: x, Min: x, Max: x} }
	for _, r := range a.Runs {
		vd := audit.Verdict{Degradation: r.Degradation, Policy: r.Policy, Seeds: 1, Availability: one(r.Availability),
			ExtraWork: one(r.WorkAmplification - none[r.Degradation]), P99MS: one(r.P99MS), Yield: r.Yield,
			CriticalNote: "not searched: an audit of schema v1", Probes: []audit.Probe{}, Collapses: r.Metastable}
		if r.Metastable {
			vd.CollapsedSeeds = 1
		}
		a.Verdicts = append(a.Verdicts, vd)
	}
	if r := v.Recommendation; r != nil {
		a.Recommendation.Policy, a.Recommendation.Reason = r.Policy, r.Reason
		for _, c := range r.Changes {
			a.Recommendation.Changes = append(a.Recommendation.Changes, audit.Change{Caller: c.Caller, Callee: c.Callee, Operation: c.Operation, Why: c.Change})
		}
		a.Recommendation.RuledOut = append(a.Recommendation.RuledOut, r.Rejected...)
	}
	return a
}

// planBlock is one degradation of the capacity plan.
type planBlock struct {
	title string
	table grid
}

// planView is the capacity plan as display text: a header line (seeds),
// the utilization lines, a block per degradation, and notes.
type planView struct {
	header []string
	blocks []planBlock
	notes  []string
}

func newPlanView(a *AuditReport) planView {
	var v planView
	note := func(text string) string {
		for i, n := range v.notes {
			if n == text {
				return "[" + strconv.Itoa(i+1) + "]"
			}
		}
		v.notes = append(v.notes, text)
		return "[" + strconv.Itoa(len(v.notes)) + "]"
	}
	seeds := make([]string, max(a.Seeds, 1))
	for i := range seeds {
		seeds[i] = strconv.FormatUint(a.FirstSeed+uint64(i), 10)
	}
	v.header = append(v.header, fmt.Sprintf("seeds: %s; ~: within the seed spread of %s", strings.Join(seeds, ", "), display(a.Baseline)))
	for _, u := range a.Utilization {
		line := fmt.Sprintf("utilization of %s: %s in the model", display(u.Service), fixed(u.Model, 2))
		if u.Given != nil {
			line += ", " + fixed(*u.Given, 2) + " given: the verdicts are judged at it"
		} else {
			line += " (assumed capacity): the verdicts are judged at it and rest on it; give --utilization " + display(u.Service) + "=U"
		}
		v.header = append(v.header, line)
	}
	var order []string
	byDeg := map[string][]audit.Verdict{}
	for _, vd := range a.Verdicts {
		if _, ok := byDeg[vd.Degradation]; !ok {
			order = append(order, vd.Degradation)
		}
		byDeg[vd.Degradation] = append(byDeg[vd.Degradation], vd)
	}
	for _, d := range order {
		vs := byDeg[d]
		var base *audit.Verdict
		for i := range vs {
			if vs[i].Policy == a.Baseline {
				base = &vs[i]
			}
		}
		title := "capacity plan: " + display(d)
		if s := vs[0].Service; s != "" {
			title += " (" + display(s) + " at " + fixed(vs[0].Utilization, 2) + ")"
		}
		g := grid{header: []string{"policy", "critical utilization", "verdict", "load forecast", "availability", "vs " + display(a.Baseline), "extra work", "p99 (ms)", "collapsed", "yield"},
			align: []tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight}}
		for _, vd := range vs {
			crit := "-"
			switch {
			case !vd.CriticalSearched:
				if vd.CriticalNote != "" {
					crit += " " + note("not searched: "+printable(strings.TrimPrefix(vd.CriticalNote, "not searched: ")))
				}
			case vd.CriticalUtilization == nil:
				crit = "≥" + fixed(audit.SearchHigh, 2)
			case *vd.CriticalUtilization == 0:
				crit = "<" + fixed(audit.SearchLow, 2)
			default:
				crit = fixed(*vd.CriticalUtilization, 2)
			}
			if vd.CriticalSearched && vd.CriticalNote != "" {
				crit += " " + note(printable(vd.CriticalNote))
			}
			verdict := "stays up"
			if vd.Collapses {
				verdict = "COLLAPSES"
			}
			forecast := "-"
			if vd.PeakOfferedMultiplier != nil {
				forecast = fixed(*vd.PeakOfferedMultiplier, 1) + "x"
			}
			vsBase := ""
			if base != nil && vd.Policy != base.Policy {
				vsBase = "~"
				if !vd.Availability.Overlaps(base.Availability) {
					vsBase = relative(vd.Availability.Mean, base.Availability.Mean)
				}
			}
			yield := "-"
			if vd.Yield != nil {
				yield = fixed(*vd.Yield, 3)
			}
			g.rows = append(g.rows, []string{display(vd.Policy), crit, verdict, forecast, statText(vd.Availability, 3, false),
				vsBase, statText(vd.ExtraWork, 2, true), fixed(vd.P99MS.Mean, 1), fmt.Sprintf("%d/%d", vd.CollapsedSeeds, vd.Seeds), yield})
		}
		v.blocks = append(v.blocks, planBlock{title: title, table: g})
	}
	return v
}

// statText is a mean with its seed range: "0.998 (0.995–1.000)"; the
// range is left out when every seed gave the same figure.
func statText(s audit.Stat, places int, sign bool) string {
	f := fixed
	if sign {
		f = signed
	}
	if fixed(s.Min, places) == fixed(s.Max, places) {
		return f(s.Mean, places)
	}
	return f(s.Mean, places) + " (" + f(s.Min, places) + "–" + f(s.Max, places) + ")"
}

// AuditTable renders an audit for a terminal: the worst-case
// amplification; the capacity plan, a table per degradation with a row
// per policy (critical utilization, the verdict at the utilization judged,
// load forecast, availability with its seed range and its change against
// the baseline — "~" within the seed spread — extra work, p99, collapsed
// seeds and yield); the recommendation; then the topology, its findings,
// and the detail of the first seed (ReplayTable).
func AuditTable(w io.Writer, a *AuditReport) error {
	sw := &stickyWriter{w: w}
	tv := newTopologyView(topologyOf(a))
	fmt.Fprintln(sw, tv.headline)
	if a.Calibration != nil {
		fmt.Fprintln(sw)
		if err := CalibrationTable(sw, a.Calibration); err != nil {
			return err
		}
	}
	pv := newPlanView(a)
	fmt.Fprintln(sw)
	for _, h := range pv.header {
		fmt.Fprintln(sw, h)
	}
	for _, b := range pv.blocks {
		fmt.Fprintln(sw)
		fmt.Fprintln(sw, b.title)
		tab := newTable(sw, b.table.header, b.table.align...)
		for _, r := range b.table.rows {
			if err := tab.Append(r); err != nil {
				return err
			}
		}
		if err := tab.Render(); err != nil {
			return err
		}
	}
	for i, n := range pv.notes {
		if i == 0 {
			fmt.Fprintln(sw, "\nnotes:")
		}
		fmt.Fprintf(sw, "[%d] %s\n", i+1, n)
	}
	fmt.Fprint(sw, uncalibratedText(a.Calibration, false))
	if err := recommendationText(sw, a.Recommendation, false); err != nil {
		return err
	}
	if err := topologyBody(sw, tv); err != nil {
		return err
	}
	fmt.Fprintf(sw, "\ndetail of seed %d:\n", a.FirstSeed)
	if err := ReplayTable(sw, a.replayReport()); err != nil {
		return err
	}
	return sw.err
}

func topologyOf(a *AuditReport) *graph.Topology {
	if a.Topology == nil {
		return &graph.Topology{}
	}
	return a.Topology
}

// AuditMarkdown renders an audit ready to paste into an incident-review
// document, in the order of AuditTable.
func AuditMarkdown(w io.Writer, a *AuditReport) error {
	sw := &stickyWriter{w: w}
	tv := newTopologyView(topologyOf(a))
	fmt.Fprintf(sw, "# Retry audit\n\n**%s**\n\n", mdEscape(tv.headline))
	if a.Calibration != nil {
		if err := CalibrationMarkdown(sw, a.Calibration); err != nil {
			return err
		}
		fmt.Fprintln(sw)
	}
	fmt.Fprint(sw, "## Capacity plan\n\n")
	pv := newPlanView(a)
	for _, h := range pv.header {
		fmt.Fprintf(sw, "%s\n\n", mdEscape(h))
	}
	for _, b := range pv.blocks {
		fmt.Fprintf(sw, "### %s\n\n", mdEscape(b.title))
		markdownTable(sw, b.table)
		fmt.Fprintln(sw)
	}
	for i, n := range pv.notes {
		if i == 0 {
			fmt.Fprint(sw, "Notes:\n\n")
		}
		fmt.Fprintf(sw, "%d. %s\n", i+1, mdEscape(n))
	}
	fmt.Fprint(sw, uncalibratedText(a.Calibration, true))
	if err := recommendationText(sw, a.Recommendation, true); err != nil {
		return err
	}
	fmt.Fprintln(sw)
	if err := TopologyMarkdown(sw, topologyOf(a)); err != nil {
		return err
	}
	fmt.Fprintf(sw, "\n## Detail of seed %d\n\n", a.FirstSeed)
	if err := ReplayMarkdown(sw, a.replayReport()); err != nil {
		return err
	}
	return sw.err
}

// changeText is one change in words: "stop-retrying: up to 3 attempts →
// 1 attempt (why)".
func changeText(c audit.Change) string {
	if c.Action == "" {
		return c.Why
	}
	return fmt.Sprintf("%s: %s → %s (%s)", c.Action, c.From, c.To, c.Why)
}

func changeWhere(c audit.Change) string {
	if c.Callee == "" {
		return c.Caller
	}
	return fmt.Sprintf("%s → %s %s", c.Caller, c.Callee, c.Operation)
}

// recommendationText writes the recommendation as text or Markdown.
func recommendationText(w io.Writer, r *audit.Recommendation, md bool) error {
	if r == nil {
		return nil
	}
	esc := printable
	if md {
		esc = mdEscape
	}
	var b strings.Builder
	item, sub := "  ", "    "
	if md {
		b.WriteString("\n## Recommendation\n\n")
		item, sub = "- ", "- "
	} else {
		b.WriteString("\nrecommendation:\n")
	}
	switch {
	case r.Policy == "":
		fmt.Fprintf(&b, "%sno policy to recommend: %s\n", item, esc(r.Reason))
	case md:
		fmt.Fprintf(&b, "Run **%s**: %s.\n", esc(r.Policy), esc(r.Reason))
	default:
		fmt.Fprintf(&b, "  run %s: %s.\n", display(r.Policy), printable(r.Reason))
	}
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		if md {
			fmt.Fprintf(&b, "\n%s:\n\n", title)
		} else {
			fmt.Fprintf(&b, "  %s:\n", strings.ToLower(title))
		}
		for _, l := range lines {
			fmt.Fprintf(&b, "%s%s\n", sub, l)
		}
	}
	var lines []string
	for _, c := range r.Changes {
		lines = append(lines, esc(changeWhere(c))+": "+esc(changeText(c)))
	}
	section("Changes", lines)
	lines = nil
	for _, n := range r.NotAdvised {
		lines = append(lines, esc(n))
	}
	section("Not advised on", lines)
	if r.WorstCase != nil {
		section("Worst case", []string{esc(r.WorstCase.Sentence())})
	}
	if c := r.IfIdempotent; c != nil {
		lines = []string{esc(c.Sentence())}
		for _, ch := range c.Changes {
			lines = append(lines, esc(changeWhere(ch))+": "+esc(changeText(ch)))
		}
		section("If idempotent", lines)
	}
	if len(r.Ranking) > 1 {
		names := make([]string, len(r.Ranking))
		for i, p := range r.Ranking {
			names[i] = esc(p)
		}
		section("Ranking", []string{strings.Join(names, " > ")})
	}
	if r.SizedBudget != nil {
		section("Budget sized to today", []string{esc(r.SizedBudget.Sentence())})
	}
	lines = nil
	for _, x := range r.RuledOut {
		lines = append(lines, esc(x.Policy)+": "+esc(x.Why))
	}
	section("Ruled out", lines)
	lines = nil
	for _, s := range r.Safety {
		lines = append(lines, esc(s.Policy)+", "+esc(s.Caller+" → "+s.Callee+" "+s.Operation)+": "+esc(s.Why))
	}
	section("Safety rules applied", lines)
	_, err := io.WriteString(w, b.String())
	return err
}
