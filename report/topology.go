package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/retryaudit/retryaudit/graph"
)

// topologyView is what the table and Markdown renderers of a Topology
// show, worked out once as plain display text: each renderer only lays it
// out and escapes it for its format.
type topologyView struct {
	headline string
	edges    grid
	// waits is the fit's wait before each retry with its range, for the
	// edges whose schedule has more than one step (waitsGrid).
	waits    grid
	paths    grid
	findings []findingView
	warnings []string
}

// grid is a table before layout: a header, column alignments and rows of
// cells.
type grid struct {
	header []string
	align  []tw.Align
	rows   [][]string
}

type findingView struct {
	severity, id, text string
	examples           []graph.Example
}

func newTopologyView(t *graph.Topology) topologyView {
	v := topologyView{
		headline: headline(t.Paths),
		edges: grid{
			header: []string{"caller", "callee", "operation", "calls", "attempts", "retries", "max attempts",
				"backoff", "jitter", "per-try timeout", "hedging", "breaker", "retried statuses", "callee p99"},
			align: []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignLeft,
				tw.AlignRight, tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignLeft, tw.AlignLeft, tw.AlignLeft, tw.AlignRight},
		},
		paths: grid{
			header: []string{"path", "entry", "retrying layers", "worst case", "observed max"},
			align:  []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight},
		},
	}
	for _, e := range t.Edges {
		v.edges.rows = append(v.edges.rows, []string{
			display(e.Caller), display(e.Callee), display(e.Operation),
			strconv.Itoa(e.Calls), strconv.Itoa(e.Attempts), retriesText(e), maxAttempts(e),
			backoffText(e), jitterText(e), timeoutText(e), hedgingText(e.Hedging, e.ResultRetries), breakerText(e.Breaker), retriedText(e), ms(e.CalleeP99MS),
		})
	}
	v.waits = waitsGrid(t.Edges)
	for _, p := range t.Paths {
		entry := ""
		if len(p.Operations) > 0 {
			entry = display(p.Operations[0])
		}
		observed := "-"
		if p.ObservedMaxAmplification > 0 {
			observed = decimal(p.ObservedMaxAmplification, 1) + "x"
		}
		v.paths.rows = append(v.paths.rows, []string{
			pathText(p.Services), entry, listText(p.RetryingLayers), worstCase(p), observed,
		})
	}
	for _, f := range t.Findings {
		text := printable(f.Message)
		if f.Location != "" {
			text = printable(f.Location) + ": " + text
		}
		v.findings = append(v.findings, findingView{
			severity: strings.ToUpper(display(string(f.Severity))), id: display(f.ID), text: text,
			examples: f.Examples,
		})
	}
	for _, w := range t.Warnings {
		v.warnings = append(v.warnings, printable(w))
	}
	return v
}

// waitsGrid is a row per retrying edge whose backoff fit read more than
// one retry: the wait before each retry, its 99% range and how many waits
// it was read from, e.g. "40.8ms (37–43.7ms), 24 waits"; nil when no edge
// has such a schedule.
func waitsGrid(edges []graph.Edge) grid {
	steps := 0
	for _, e := range edges {
		if e.Retries && len(e.Backoff.Schedule) > 1 {
			steps = max(steps, len(e.Backoff.Schedule))
		}
	}
	if steps == 0 {
		return grid{}
	}
	g := grid{header: []string{"caller", "callee", "operation"}, align: []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignLeft}}
	for i := range steps {
		g.header = append(g.header, "before retry "+strconv.Itoa(i+1))
		g.align = append(g.align, tw.AlignRight)
	}
	for _, e := range edges {
		if !e.Retries || len(e.Backoff.Schedule) < 2 {
			continue
		}
		row := []string{display(e.Caller), display(e.Callee), display(e.Operation)}
		for i := range steps {
			cell := "-"
			if i < len(e.Backoff.Schedule) {
				st := e.Backoff.Schedule[i]
				cell = fmt.Sprintf("%s (%s–%s), %s", ms(st.MS), decimal(st.RangeMS[0], 1), ms(st.RangeMS[1]), plural(st.Waits, "wait"))
			}
			row = append(row, cell)
		}
		g.rows = append(g.rows, row)
	}
	return g
}

// waitsNote introduces the waits table in Markdown and HTML.
const waitsNote = "The wait the backoff fit reads before each retry, with the range (99%) the schedule may lie in and the waits it was read from."

// headline names the path with the highest worst-case amplification
// (paths come sorted that way).
func headline(paths []graph.Path) string {
	if len(paths) == 0 {
		return "worst-case amplification: 1x (no calls between services)"
	}
	p := paths[0]
	s := fmt.Sprintf("worst-case amplification: %dx on %s", p.WorstCaseAmplification, pathText(p.Services))
	if !p.WorstCaseExact {
		s += " (lower bound)"
	}
	return s
}

func pathText(services []string) string {
	names := make([]string, len(services))
	for i, s := range services {
		names[i] = display(s)
	}
	return strings.Join(names, " → ")
}

// listText joins names with commas, or "-" for none.
func listText(list []string) string {
	if len(list) == 0 {
		return "-"
	}
	names := make([]string, len(list))
	for i, s := range list {
		names[i] = display(s)
	}
	return strings.Join(names, ", ")
}

// retriesText is "yes", "no", "unknown" (calls that start their own
// traces, some failed: graph.Edge.RetriesUnknown), or which layer retries
// when a service mesh's sidecar does: "yes (proxy)", "yes (proxy and
// application)".
func retriesText(e graph.Edge) string {
	if e.RetriesUnknown {
		return "unknown"
	}
	if e.Retries && strings.Contains(e.RetriesBy, "proxy") {
		return "yes (" + display(e.RetriesBy) + ")"
	}
	return yesNo(e.Retries)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// atLeast marks a lower bound.
func atLeast(exact bool) string {
	if exact {
		return ""
	}
	return "≥"
}

// maxAttempts is "3", or "≥2" when no retrying call was seen giving up
// or the retries are unknown.
func maxAttempts(e graph.Edge) string {
	return atLeast(!e.Retries && !e.RetriesUnknown || e.MaxAttemptsExact) + strconv.Itoa(e.MaxAttempts)
}

func worstCase(p graph.Path) string {
	return atLeast(p.WorstCaseExact) + strconv.Itoa(p.WorstCaseAmplification) + "x"
}

// wideBase: a base whose 99% range spans more than this share of it is
// shown with its range.
const wideBase = 0.2

// backoffText describes the wait between attempts in full:
// "exponential 20ms ×2 (1.9–2.1) cap 160ms" (the multiplier with the
// range the waits allow; "no cap up to 158ms" where no step showed a
// cap), "exponential 20ms ×? (1.14–2.47)" when that
// range is too wide to state one, " offset -98.9ms" after the
// multiplier where the waits grow by it from an offset (graph's
// Backoff.OffsetMS), "constant 25ms", "none", "unknown (2
// waits)", the base with its range "20ms (17.8–22.2ms)" when that spans
// more than a fifth of it, each followed by "+4ms overhead" when every wait carried a
// fixed overhead the fit took off; "-" on an edge that does not retry.
func backoffText(e graph.Edge) string {
	if e.RetriesUnknown {
		return "unknown"
	}
	if !e.Retries {
		return "-"
	}
	b := e.Backoff
	overhead := ""
	if b.OverheadMS != nil {
		overhead = " +" + ms(*b.OverheadMS) + " overhead"
	}
	base := ms(b.BaseMS)
	if r := b.BaseRangeMS; r != nil && r[1]-r[0] > wideBase*b.BaseMS {
		base += " (" + decimal(r[0], 1) + "–" + ms(r[1]) + ")"
	}
	switch b.Kind {
	case graph.BackoffImmediate:
		return "none"
	case "constant":
		return "constant " + base + overhead
	case "exponential":
		s := "exponential " + base
		switch {
		case b.Multiplier != nil:
			s += " ×" + decimal(*b.Multiplier, 2)
		case b.MultiplierRange != nil:
			s += " ×?"
		}
		if r := b.MultiplierRange; r != nil {
			s += " (" + decimal(r[0], 2) + "–" + decimal(r[1], 2) + ")"
		}
		if o := b.OffsetMS; o != nil {
			// Growth from an offset: "exponential 100.8ms ×2 (1.86–2.17)
			// offset -98.9ms".
			s += " offset " + ms(*o)
		}
		return s + capText(b) + overhead
	case graph.BackoffLinear, graph.BackoffFibonacci:
		// "linear 20.8ms +20.1ms (17.6–22.4)": the base, the increment and
		// its range.
		s := string(b.Kind) + " " + base
		if b.IncrementMS != nil {
			s += " +" + ms(*b.IncrementMS)
		}
		if r := b.IncrementRangeMS; r != nil {
			s += " (" + decimal(r[0], 1) + "–" + decimal(r[1], 1) + ")"
		}
		return s + capText(b) + overhead
	case "unknown", "":
		if len(b.Schedule) < 2 {
			return fmt.Sprintf("unknown (%s)", plural(b.Samples, "wait"))
		}
		// The steps as read stand: "unknown: 20.6, 40.8, 76.8ms (fit
		// exponential, fibonacci, linear)".
		steps := make([]string, len(b.Schedule))
		for i, st := range b.Schedule {
			steps[i] = decimal(st.MS, 1)
		}
		fit := "no kind fits"
		if len(b.KindCandidates) > 0 {
			c := make([]string, len(b.KindCandidates))
			for i, k := range b.KindCandidates {
				c[i] = string(k)
			}
			fit = "fit " + strings.Join(c, ", ")
		}
		return fmt.Sprintf("unknown: %sms (%s)", strings.Join(steps, ", "), fit)
	}
	return display(string(b.Kind))
}

// capText is a growing backoff's cap: " cap 160ms" where the waits
// showed one, " no cap up to 158ms" where none showed and the steps put
// any cap at or above that, above the base (a level below the first wait
// says nothing of a cap), else "".
func capText(b graph.Backoff) string {
	switch {
	case b.CapMS != nil:
		return " cap " + ms(*b.CapMS)
	case b.CapAboveMS != nil && *b.CapAboveMS > b.BaseMS:
		return " no cap up to " + ms(*b.CapAboveMS)
	}
	return ""
}

// backoffShort is the backoff in a few characters for graph labels:
// "exp 20ms", "const 25ms", "immediate", "backoff unknown".
func backoffShort(b graph.Backoff) string {
	switch b.Kind {
	case graph.BackoffImmediate:
		return "immediate"
	case "constant":
		return "const " + ms(b.BaseMS)
	case "exponential":
		return "exp " + ms(b.BaseMS)
	case graph.BackoffLinear:
		return "lin " + ms(b.BaseMS)
	case graph.BackoffFibonacci:
		return "fib " + ms(b.BaseMS)
	case "unknown", "":
		return "backoff unknown"
	}
	return display(string(b.Kind))
}

// jitterText is "none", "proportional ±50%", "proportional ±11–76%"
// where the fraction's range is too wide to state one, "full",
// "additive, width 24.4ms–248.2ms" where late timers left only the
// width's range, "present (3 waits)"
// when waits vary but too few were seen to name the kind, "decorrelated or
// full (54 waits)" when they narrow it to candidates, or "unknown"; "-" on
// an edge that does not retry ("unknown" where its retries are).
func jitterText(e graph.Edge) string {
	if e.RetriesUnknown {
		return "unknown"
	}
	if !e.Retries {
		return "-"
	}
	b := e.Backoff
	switch b.Jitter {
	case "additive":
		switch r := b.JitterAdditiveRangeMS; {
		case b.JitterAdditiveMS != nil:
			return "additive +0–" + ms(*b.JitterAdditiveMS)
		case r != nil:
			// Late timers left a tail as wide as the width: its range.
			return "additive, width " + ms(r[0]) + "–" + ms(r[1])
		}
		return "additive"
	case "proportional":
		switch r := b.JitterFractionRange; {
		case b.JitterFraction != nil:
			return "proportional ±" + decimal(100**b.JitterFraction, 0) + "%"
		case r != nil:
			// The range too wide to state the fraction: the range.
			return "proportional ±" + decimal(100*r[0], 0) + "–" + decimal(100*r[1], 0) + "%"
		}
		return "proportional"
	case "unknown", "":
		if len(b.JitterCandidates) > 0 {
			kinds := make([]string, len(b.JitterCandidates))
			for i, k := range b.JitterCandidates {
				kinds[i] = display(string(k))
			}
			return fmt.Sprintf("%s (%s)", strings.Join(kinds, " or "), plural(b.Samples, "wait"))
		}
		if b.JitterPresent != nil && *b.JitterPresent {
			return fmt.Sprintf("present (%s)", plural(b.Samples, "wait"))
		}
		if b.JitterPresent != nil {
			return fmt.Sprintf("none (%s)", plural(b.Samples, "wait"))
		}
		return "unknown"
	}
	return display(string(b.Jitter))
}

// hedgingText is "after 20ms, ≤3" (the median delay before a
// hedge and the most requests one call sent), or "-".
func hedgingText(h *graph.Hedging, r *graph.ResultRetries) string {
	if h == nil {
		return "-"
	}
	s := fmt.Sprintf("after %s, ≤%d", ms(h.DelayMS), h.MaxRequests)
	if r != nil && r.Unknown > 0 {
		s += fmt.Sprintf(" (%d of %d calls may be retries on the result)", r.Unknown, h.Calls)
	}
	return s
}

// retriedText lists the statuses the caller sent again, "200 (result
// predicate), 503": an OK status marked where the caller retried it on
// the answer's content (graph.Edge.ResultRetries), not on its status.
func retriedText(e graph.Edge) string {
	if len(e.RetriedStatus) == 0 {
		return "-"
	}
	names := make([]string, len(e.RetriedStatus))
	for i, s := range e.RetriedStatus {
		names[i] = display(s)
		if r := e.ResultRetries; r != nil && slices.Contains(r.Statuses, s) {
			names[i] += " (result predicate)"
		}
	}
	return strings.Join(names, ", ")
}

// breakerText is "opened 3×, 13 fast-failed" (" on 2 of 3 instances"
// after it where the traces name the caller's instances, "…, trip rule
// unknown" where they disagree on it, "…, inside the caller's retry
// loop (…)" where the loop retries its refusals (Breaker.RetriedRefusals), "…, on a failure rate" where
// the traces show it does not count failures in a row, whose threshold a
// reader would otherwise assume, with the shares and windows that fit,
// "(39.6%–67.9% over 242–494ms)", "(33.3%–80% over 144ms or more)"
// where no window longer than those tested is ruled out, or
// "(unsized)"), "unknown (2 fast
// failures)" where too few requests failed fast to claim a breaker or
// deny one (Breaker.Unknown; ", after the retry loop's waits" where they
// lasted them), "none (12 failed in a row)" when
// failures in a row were all sent on, or "-" when the traces cannot tell;
// "proxy limit shed 3 (UO)" is added when the caller's sidecar refused
// attempts because its circuit breaker's limits were full.
func breakerText(b *graph.Breaker) string {
	shed := ""
	if b != nil && b.ProxyShed > 0 {
		shed = fmt.Sprintf("proxy limit shed %d (UO)", b.ProxyShed)
	}
	switch {
	case b == nil:
		return "-"
	case b.Detected:
		rule := ""
		if in := b.Instances; in != nil {
			rule = fmt.Sprintf(" on %d of %d instances", in.WithBreaker, in.Calling)
		}
		switch {
		case b.RetriedRefusals != nil:
			rule += ", inside the caller's retry loop (refused tries and trip rule unknown)"
		case b.TripRule == graph.TripUnknown:
			rule += ", trip rule unknown (the instances disagree)"
		}
		if b.TripRule == graph.TripFailureRate {
			rule += ", on a failure rate"
			if f := b.FailureRate; f != nil && f.Fit == graph.FitSized && len(f.ShareRange) == 2 && len(f.WindowMSRange) == 2 {
				window := span(f.WindowMSRange[0], f.WindowMSRange[1], "") + "ms"
				if f.WindowUnbounded {
					// The longest window tested fits: no longer one is
					// ruled out.
					window = fmt.Sprintf("%.3gms or more", f.WindowMSRange[0])
				}
				rule += fmt.Sprintf(" (%s over %s)", span(100*f.ShareRange[0], 100*f.ShareRange[1], "%"), window)
			} else if f != nil && f.Fit == graph.FitUnknown {
				rule += " (unsized)"
			}
		}
		return strings.TrimSuffix(fmt.Sprintf("opened %d×, %d fast-failed%s; %s", b.OpenPeriods, b.FastFailedCalls, rule, shed), "; ")
	case b.Unknown:
		waited := ""
		if rr := b.RetriedRefusals; rr != nil {
			waited = fmt.Sprintf(", %d after the retry loop's waits", rr.WaitedCalls)
		}
		return strings.TrimSuffix(fmt.Sprintf("unknown (%s%s); %s", plural(b.FastFailedCalls, "fast failure"), waited, shed), "; ")
	case shed != "" && b.LongestFailureRun < minShownRun:
		return shed
	case shed != "":
		return fmt.Sprintf("%s; none opening on failures (%d failed in a row)", shed, b.LongestFailureRun)
	}
	return fmt.Sprintf("none (%d failed in a row)", b.LongestFailureRun)
}

// span writes lo–hi (one figure where they round alike), unit after each.
func span(lo, hi float64, unit string) string {
	a, b := fmt.Sprintf("%.3g%s", lo, unit), fmt.Sprintf("%.3g%s", hi, unit)
	if a == b {
		return a
	}
	return a + "–" + b
}

// minShownRun: a breaker's absence is shown beside a proxy's limit only
// after this many failed calls in a row (as graph judges absence).
const minShownRun = 5

// timeoutText is the per-try timeout, "caller's deadline (16 cut)" where
// no timeout of the edge's own ended its attempts but the deadline its
// caller received did (propagated from further up), "unknown (20 timed
// out)" where attempts timed out at no one duration, or "-".
func timeoutText(e graph.Edge) string {
	switch {
	case e.PerTryTimeoutMS != nil:
		return ms(*e.PerTryTimeoutMS)
	case e.DeadlineFromCaller > 0:
		return fmt.Sprintf("caller's deadline (%d cut)", e.DeadlineFromCaller)
	case e.PerTryTimeoutUnknown > 0:
		return fmt.Sprintf("unknown (%d timed out)", e.PerTryTimeoutUnknown)
	}
	return "-"
}

// TopologyTable renders a topology for people on a terminal: a first line
// naming the worst-case amplification, then a table of edges with their
// inferred retry policy, a table of paths, the findings one per line, and
// the warnings.
func TopologyTable(w io.Writer, t *graph.Topology) error {
	v := newTopologyView(t)
	sw := &stickyWriter{w: w}
	fmt.Fprintln(sw, v.headline)
	if err := topologyBody(sw, v); err != nil {
		return err
	}
	return sw.err
}

// topologyBody writes what TopologyTable shows after its first line: the
// edge and path tables, the findings and the warnings.
func topologyBody(sw *stickyWriter, v topologyView) error {
	for _, g := range []grid{v.edges, v.paths} {
		if err := renderGrid(sw, g, true); err != nil {
			return err
		}
	}
	fmt.Fprintln(sw)
	if len(v.findings) == 0 {
		fmt.Fprintln(sw, "no findings")
	}
	idWidth := 0
	for _, f := range v.findings {
		idWidth = max(idWidth, utf8.RuneCountInString(f.id))
	}
	for _, f := range v.findings {
		hanging(sw, fmt.Sprintf("%-6s %-*s  ", f.severity, idWidth, f.id), f.text)
	}
	if len(v.warnings) > 0 {
		fmt.Fprintln(sw, "\nwarnings:")
		for _, x := range v.warnings {
			fmt.Fprintf(sw, "  %s\n", x)
		}
	}
	return sw.err
}

// TopologyMarkdown renders a topology for an incident-review document: a
// heading, the worst-case amplification in bold, the edge and path tables
// as GitHub Markdown tables, the call graph as a mermaid block, and the
// findings and warnings as lists. Text from the traces is escaped so that
// it reads as written and cannot break a table or inject markup.
func TopologyMarkdown(w io.Writer, t *graph.Topology) error {
	v := newTopologyView(t)
	sw := &stickyWriter{w: w}
	fmt.Fprintln(sw, "## Retry topology")
	fmt.Fprintln(sw)
	if s := t.Source; s.Traces > 0 {
		fmt.Fprintf(sw, "Inferred from %d traces (%d spans, %d root requests over %ss).\n\n",
			s.Traces, s.Spans, s.RootCalls, decimal(s.WindowS, 1))
	}
	fmt.Fprintf(sw, "**%s**\n", mdEscape(v.headline))
	for _, sec := range []struct {
		title string
		g     grid
	}{{"Edges", v.edges}, {"Paths", v.paths}} {
		if len(sec.g.rows) == 0 {
			continue
		}
		fmt.Fprintf(sw, "\n### %s\n\n", sec.title)
		markdownTable(sw, sec.g)
		if sec.title == "Edges" {
			edgeExampleLinks(sw, t.Edges)
			if len(v.waits.rows) > 0 {
				fmt.Fprintf(sw, "\n### Waits per retry\n\n%s\n\n", waitsNote)
				markdownTable(sw, v.waits)
			}
		}
	}
	if len(t.Edges) > 0 {
		fmt.Fprint(sw, "\n### Call graph\n\n```mermaid\n")
		if err := TopologyMermaid(sw, t); err != nil {
			return err
		}
		fmt.Fprintln(sw, "```")
	}
	fmt.Fprint(sw, "\n### Findings\n\n")
	if len(v.findings) == 0 {
		fmt.Fprintln(sw, "No findings.")
	}
	for _, f := range v.findings {
		fmt.Fprintf(sw, "- **%s** %s — %s%s\n", mdEscape(f.severity), mdEscape(f.id), mdEscape(f.text), mdExampleLinks(sw, f.examples))
	}
	if len(v.warnings) > 0 {
		fmt.Fprint(sw, "\n### Warnings\n\n")
		for _, x := range v.warnings {
			fmt.Fprintf(sw, "- %s\n", mdEscape(x))
		}
	}
	return sw.err
}

// markdownTable writes g as a GitHub Markdown table, its columns padded so
// that the source reads as a table too.
func markdownTable(w io.Writer, g grid) {
	cells := make([][]string, 0, len(g.rows)+1)
	cells = append(cells, escapeRow(g.header))
	for _, r := range g.rows {
		cells = append(cells, escapeRow(r))
	}
	width := make([]int, len(g.header))
	for _, r := range cells {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c), 3)
		}
	}
	line := func(r []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if g.align[i] == tw.AlignRight {
				b.WriteString(" " + pad + c + " |")
			} else {
				b.WriteString(" " + c + pad + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(cells[0])
	rule := make([]string, len(g.header))
	for i := range rule {
		rule[i] = strings.Repeat("-", width[i])
		if g.align[i] == tw.AlignRight {
			rule[i] = strings.Repeat("-", width[i]-1) + ":"
		}
	}
	line(rule)
	for _, r := range cells[1:] {
		line(r)
	}
}

func escapeRow(r []string) []string {
	out := make([]string, len(r))
	for i, c := range r {
		out[i] = mdEscape(c)
	}
	return out
}
