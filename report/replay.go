package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/retryaudit/retryaudit/replay"
)

// ReplaySchema names the layout of a ReplayReport in JSON.
const ReplaySchema = "retryaudit.replay/v1"

// ReplayReport is what `retryaudit replay` prints: a set of simulation
// runs, one per policy and degradation, and what to compare them with.
type ReplayReport struct {
	// Schema is ReplaySchema; ReplayJSON fills it in when it is empty.
	Schema string `json:"schema"`
	// Baseline is the policy every other is compared with: "none" for
	// replay, "observed" for audit. Under a degradation with no run of it,
	// the first policy run there is the baseline, and a note says so; an
	// empty Baseline makes the first policy of each degradation the
	// baseline, silently.
	Baseline string `json:"baseline"`
	// Notes are footnotes for the whole report, such as assumed capacities
	// or a preset's description. They come first in the notes, numbered
	// from [1], before the notes the renderers add.
	Notes []string `json:"notes"`
	// Runs are the results, grouped by degradation in the order in which
	// each degradation first appears, and within one by policy in order.
	Runs []replay.Result `json:"runs"`
	// Capacities are the capacities of the degraded dependencies, which
	// the HTML charts draw as a line over the attempts offered to them.
	Capacities []Capacity `json:"capacities,omitempty"`
}

// Capacity is the healthy capacity of the dependency a degradation
// degrades: the attempts per second Service completes with every worker
// busy and no fault (see audit.Capacity).
type Capacity struct {
	Degradation  string  `json:"degradation"`
	Service      string  `json:"service"`
	AttemptsPerS float64 `json:"attempts_per_s"`
}

// capacityOf is the capacity of the dependency of degradation d, or nil.
func capacityOf(cs []Capacity, d string) *Capacity {
	for i := range cs {
		if cs[i].Degradation == d && cs[i].AttemptsPerS > 0 {
			return &cs[i]
		}
	}
	return nil
}

// maxComparedPolicies is how many policies one table compares with the
// baseline; more are spread over several tables, each repeating the
// baseline column.
const maxComparedPolicies = 4

// replayView is what the table and Markdown renderers of a ReplayReport
// show, worked out once as display text.
type replayView struct {
	header []string // lines before the first block: seed and baseline
	blocks []replayBlock
	notes  []string // numbered from [1] in order
}

// replayBlock is one degradation: its title line and its tables.
type replayBlock struct {
	title  string
	tables []grid
	// degradation is the name the runs share; runs are in column order,
	// the baseline first (the HTML renderer charts them).
	degradation string
	runs        []*replay.Result
}

// replayMetrics are the rows of a comparison table. delta is nil for a
// metric shown without a change against the baseline.
var replayMetrics = []struct {
	name  string
	value func(r *replay.Result) string
	delta func(r, base *replay.Result) string
}{
	{"availability",
		func(r *replay.Result) string { return fixed(r.Availability, 3) },
		func(r, b *replay.Result) string { return relative(r.Availability, b.Availability) }},
	{"goodput/s",
		func(r *replay.Result) string { return fixed(r.Goodput, 1) },
		func(r, b *replay.Result) string { return relative(r.Goodput, b.Goodput) }},
	{"work amplification",
		func(r *replay.Result) string { return fixed(r.WorkAmplification, 2) + "x" },
		func(r, b *replay.Result) string { return signed(r.WorkAmplification-b.WorkAmplification, 2) }},
	{"retry share",
		func(r *replay.Result) string { return fixed(100*r.RetryShare, 1) + "%" },
		func(r, b *replay.Result) string { return signed(100*(r.RetryShare-b.RetryShare), 1) + "pp" }},
	{"yield", nil, // filled in by yieldCell, which adds notes
		func(r, b *replay.Result) string { return optionalDelta(r.Yield, b.Yield, 3) }},
	{"wasted work (s)",
		func(r *replay.Result) string { return fixed(r.WastedS, 2) },
		func(r, b *replay.Result) string { return relative(r.WastedS, b.WastedS) }},
	{"p50 latency (ms)",
		func(r *replay.Result) string { return fixed(r.P50MS, 1) },
		func(r, b *replay.Result) string { return relative(r.P50MS, b.P50MS) }},
	{"p95 latency (ms)",
		func(r *replay.Result) string { return fixed(r.P95MS, 1) },
		func(r, b *replay.Result) string { return relative(r.P95MS, b.P95MS) }},
	{"p99 latency (ms)",
		func(r *replay.Result) string { return fixed(r.P99MS, 1) },
		func(r, b *replay.Result) string { return relative(r.P99MS, b.P99MS) }},
	{"recovery (s)",
		recoveryText,
		func(r, b *replay.Result) string { return optionalDelta(r.RecoveryS, b.RecoveryS, 1) }},
	{"metastable",
		func(r *replay.Result) string {
			switch {
			case r.Metastable:
				return "METASTABLE"
			case r.Verdict == replay.VerdictNotJudged:
				return "not judged" // too close to the run's start or end to say "no"
			}
			return "no"
		}, nil},
	{"retries refused (budget+breaker)",
		func(r *replay.Result) string {
			return strconv.Itoa(r.RefusedByBudget) + "+" + strconv.Itoa(r.RefusedByBreaker)
		}, nil},
}

// relative is the change from base to v in percent of base: "+2.3%",
// "-71.5%", "+3145%" (whole percents from 100% up), "0.0%"; "+∞%" when
// base is zero and v is not.
func relative(v, base float64) string {
	if base == 0 {
		switch {
		case v > 0:
			return "+∞%"
		case v < 0:
			return "-∞%"
		}
		return "0.0%"
	}
	d := 100 * (v - base) / math.Abs(base)
	places := 1
	if math.Abs(d) >= 100 {
		places = 0
	}
	return signed(d, places) + "%"
}

// optionalDelta is the difference of two figures that may be undefined,
// or "" when either is.
func optionalDelta(v, base *float64, places int) string {
	if v == nil || base == nil {
		return ""
	}
	return signed(*v-*base, places)
}

// recoveryText is the recovery time in seconds, "never" when goodput did
// not come back in the run, or "-" when the run had no trigger to recover
// from (or one that never ended).
func recoveryText(r *replay.Result) string {
	switch {
	case r.RecoveryS != nil:
		return fixed(*r.RecoveryS, 1)
	case !r.Triggered:
		return "-"
	}
	return "never"
}

func newReplayView(rep *ReplayReport) replayView {
	var v replayView
	for _, n := range rep.Notes {
		v.notes = append(v.notes, printable(n))
	}
	note := func(text string) string {
		// One footnote per distinct text.
		for i, n := range v.notes {
			if n == text {
				return "[" + strconv.Itoa(i+1) + "]"
			}
		}
		v.notes = append(v.notes, text)
		return "[" + strconv.Itoa(len(v.notes)) + "]"
	}

	var seeds []uint64
	for _, r := range rep.Runs {
		if !containsSeed(seeds, r.Seed) {
			seeds = append(seeds, r.Seed)
		}
	}
	manySeeds := len(seeds) > 1
	if len(seeds) > 0 {
		list := make([]string, len(seeds))
		for i, s := range seeds {
			list[i] = strconv.FormatUint(s, 10)
		}
		label := "seed: "
		if manySeeds {
			label = "seeds: "
		}
		v.header = append(v.header, label+strings.Join(list, ", "))
	}
	if rep.Baseline != "" {
		v.header = append(v.header, "baseline: "+display(rep.Baseline))
	}

	// Group the runs by degradation, in order of first appearance.
	type group struct {
		name string
		runs []*replay.Result
	}
	var groups []group
	index := map[string]int{}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		g, ok := index[r.Degradation]
		if !ok {
			g = len(groups)
			index[r.Degradation] = g
			groups = append(groups, group{name: r.Degradation})
		}
		groups[g].runs = append(groups[g].runs, r)
	}

	for _, g := range groups {
		b := replayBlock{title: "degradation: " + display(g.name), degradation: g.name}
		if g.name == "" {
			b.title = "no degradation"
		}
		// The baseline column first, then the other policies in order.
		at := 0
		for i, r := range g.runs {
			if r.Policy == rep.Baseline {
				at = i
				break
			}
			if i == len(g.runs)-1 && rep.Baseline != "" {
				b.title += " " + note(fmt.Sprintf("no run of baseline %s under %s: compared with %s, the first policy run there",
					display(rep.Baseline), display(g.name), display(g.runs[0].Policy)))
			}
		}
		base := g.runs[at]
		others := make([]*replay.Result, 0, len(g.runs)-1)
		others = append(others, g.runs[:at]...)
		others = append(others, g.runs[at+1:]...)
		b.runs = append([]*replay.Result{base}, others...)

		// Every cell once, in column order, so that notes are numbered in
		// the order their markers first appear.
		column := func(r *replay.Result) []string {
			cells := make([]string, len(replayMetrics))
			for m, metric := range replayMetrics {
				if metric.value == nil {
					cells[m] = yieldCell(r, g.name, note)
				} else {
					cells[m] = metric.value(r)
				}
			}
			return cells
		}
		heading := func(r *replay.Result) string {
			h := display(r.Policy)
			if manySeeds {
				h += " (seed " + strconv.FormatUint(r.Seed, 10) + ")"
			}
			return h
		}
		baseCells := column(base)
		vs := "vs " + heading(base)
		type otherColumn struct {
			heading       string
			values, delta []string
		}
		cols := make([]otherColumn, len(others))
		for i, r := range others {
			cols[i] = otherColumn{heading: heading(r), values: column(r), delta: make([]string, len(replayMetrics))}
			for m, metric := range replayMetrics {
				if metric.delta != nil {
					cols[i].delta[m] = metric.delta(r, base)
				}
			}
		}

		for _, part := range split(len(cols), maxComparedPolicies) {
			t := grid{header: []string{"", heading(base)}, align: []tw.Align{tw.AlignLeft, tw.AlignRight}}
			for _, c := range cols[part[0]:part[1]] {
				t.header = append(t.header, c.heading, vs)
				t.align = append(t.align, tw.AlignRight, tw.AlignRight)
			}
			for m, metric := range replayMetrics {
				row := []string{metric.name, baseCells[m]}
				for _, c := range cols[part[0]:part[1]] {
					row = append(row, c.values[m], c.delta[m])
				}
				t.rows = append(t.rows, row)
			}
			b.tables = append(b.tables, t)
		}
		v.blocks = append(v.blocks, b)
	}
	return v
}

// yieldCell is a run's yield; "-" for policy none, against which yield is
// measured; "n/a" with a note where it is undefined.
func yieldCell(r *replay.Result, degradation string, note func(string) string) string {
	switch {
	case r.Yield != nil:
		return fixed(*r.Yield, 3)
	case r.Policy == "none":
		return "-"
	}
	return "n/a " + note("n/a: yield is undefined when a policy does no extra work against none (the same work, or less, for its change in availability)")
}

// split divides n columns over as few tables of at most per columns as
// possible, as evenly as possible, earlier tables taking the larger share;
// it returns each table's [from, to) range, and one empty range for n = 0.
func split(n, per int) [][2]int {
	tables := max(1, (n+per-1)/per)
	out := make([][2]int, 0, tables)
	from := 0
	for i := range tables {
		size := n / tables
		if i < n%tables {
			size++
		}
		out = append(out, [2]int{from, from + size})
		from += size
	}
	return out
}

func containsSeed(seeds []uint64, s uint64) bool {
	for _, x := range seeds {
		if x == s {
			return true
		}
	}
	return false
}

// ReplayTable renders a replay report for a terminal in the layout of
// benchstat: the seed and the baseline, then for each degradation a line
// naming it and a table with one row per metric and one column per
// policy, the baseline first and every other policy followed by its change
// against the baseline ("vs none"), then the numbered notes. More than
// four policies besides the baseline are spread over several tables, each
// repeating the baseline column.
//
// Relative changes are in percent of the baseline; work amplification,
// yield and recovery changes are differences, and retry share changes are
// in percentage points (pp). A metastable run reads METASTABLE.
func ReplayTable(w io.Writer, rep *ReplayReport) error {
	v := newReplayView(rep)
	sw := &stickyWriter{w: w}
	for _, h := range v.header {
		fmt.Fprintln(sw, h)
	}
	if len(v.blocks) == 0 {
		if len(v.header) > 0 {
			fmt.Fprintln(sw)
		}
		fmt.Fprintln(sw, "no runs")
	}
	for i, b := range v.blocks {
		if i > 0 || len(v.header) > 0 {
			fmt.Fprintln(sw)
		}
		fmt.Fprintln(sw, b.title)
		var tables []grid
		for _, g := range b.tables {
			// On a narrow terminal, fewer policies per table rather than
			// hidden ones: the metric and baseline columns, then (policy,
			// change) pairs.
			tables = append(tables, splitColumns(g, widthOf(sw), 2, 2)...)
		}
		for j, g := range tables {
			if err := renderGrid(sw, g, j > 0); err != nil {
				return err
			}
		}
	}
	if len(v.notes) > 0 {
		fmt.Fprintln(sw, "\nnotes:")
		for i, n := range v.notes {
			hanging(sw, fmt.Sprintf("[%d] ", i+1), n)
		}
	}
	return sw.err
}

// ReplayMarkdown renders a replay report for a review document: a heading,
// the seed and baseline, a section per degradation with the tables of
// ReplayTable as GitHub Markdown tables, and the notes as a numbered list.
// Names are escaped so that they read as written and cannot break a table.
func ReplayMarkdown(w io.Writer, rep *ReplayReport) error {
	v := newReplayView(rep)
	sw := &stickyWriter{w: w}
	fmt.Fprintln(sw, "## Replay")
	if len(v.header) > 0 {
		fmt.Fprintln(sw)
		fmt.Fprintln(sw, mdEscape(strings.Join(v.header, "; ")))
	}
	if len(v.blocks) == 0 {
		fmt.Fprint(sw, "\nNo runs.\n")
	}
	for _, b := range v.blocks {
		fmt.Fprintf(sw, "\n### %s\n", mdEscape(b.title))
		for _, g := range b.tables {
			fmt.Fprintln(sw)
			markdownTable(sw, g)
		}
	}
	markdownNotes(sw, v.notes)
	return sw.err
}

// ReplayJSON writes the whole report as indented JSON: the schema, the
// baseline, the notes, and every run with its policy, degradation, seed,
// figures, metastability verdict and per-second series. An empty schema
// is written as ReplaySchema, and absent notes or runs as empty lists.
func ReplayJSON(w io.Writer, rep *ReplayReport) error {
	out := *rep
	if out.Schema == "" {
		out.Schema = ReplaySchema
	}
	out.Notes, out.Runs = nonNil(out.Notes), nonNil(out.Runs)
	return JSON(w, out)
}

// markdownNotes writes notes as the numbered list of a Notes section,
// nothing when there are none.
func markdownNotes(w io.Writer, notes []string) {
	if len(notes) == 0 {
		return
	}
	fmt.Fprint(w, "\n### Notes\n\n")
	for i, n := range notes {
		fmt.Fprintf(w, "%d. %s\n", i+1, mdEscape(n))
	}
}
