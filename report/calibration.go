package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/retryaudit/retryaudit/replay"
)

// CalibrationSchema names the layout of a calibration in JSON.
const CalibrationSchema = "retryaudit.calibration/v1"

// calibrationView is what the table and Markdown renderers show.
type calibrationView struct {
	verdict string
	// arrivals names the arrival process replayed ("" for a calibration
	// that does not say).
	arrivals string
	root     grid
	edges    grid
	misses   []string
	notes    []string
}

// figures is "1 figure" or "N figures".
func figures(n int) string {
	if n == 1 {
		return "1 figure"
	}
	return fmt.Sprintf("%d figures", n)
}

func mark(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// latencyMark says whether a percentile is within tolerance, and of what:
// the traced value, widened to the band the traces know it within.
func latencyMark(ok bool, band *[2]float64, rel float64) string {
	s := fmt.Sprintf("%s (±%s%%", mark(ok), decimal(100*rel, 1))
	if band != nil && band[1] > 0 {
		s += " of " + decimal(band[0], 1) + "–" + decimal(band[1], 1)
	}
	return s + ")"
}

// rateMark is "yes (±1.5 points of 2.2–7.3%)": the tolerance around the
// traced rate's confidence band, when there is one.
func rateMark(ok bool, band *[2]float64, points float64) string {
	s := fmt.Sprintf("%s (±%s points", mark(ok), decimal(100*points, 2))
	if band != nil && band[1] > 0 {
		s += " of " + decimal(100*band[0], 1) + "–" + decimal(100*band[1], 1) + "%"
	}
	return s + ")"
}

func pct(x float64) string { return fixed(100*x, 1) + "%" }

func newCalibrationView(c *replay.Calibration) calibrationView {
	v := calibrationView{misses: c.Misses, notes: c.Notes}
	switch c.Arrivals {
	case replay.ArrivalsTimeline:
		v.arrivals = "arrivals replayed: the traces' own timeline (each root request at its traced time and root operation)"
	case replay.ArrivalsPoisson:
		v.arrivals = "arrivals replayed: Poisson at the traces' mean rate (the model notes say why not their own timeline)"
	}
	if c.Pass {
		v.verdict = fmt.Sprintf("calibration: pass — the replay of the observed policies under the traces' own failure timeline reproduces the traces (mean of %d seeds)", c.Seeds)
	} else {
		v.verdict = fmt.Sprintf("calibration: MISS — %s outside tolerance: the model does not reproduce the traces (mean of %d seeds)", figures(len(c.Misses)), c.Seeds)
	}
	tol := c.Tolerances
	t, r := c.Root.Traced, c.Root.Replayed
	v.root = grid{header: []string{"root requests", "traced", "replayed", "within"},
		align: []tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignLeft}}
	v.root.rows = [][]string{
		{"requests", decimal(t.Requests, 0), decimal(r.Requests, 0), ""},
		{"success rate", pct(t.SuccessRate), pct(r.SuccessRate), ""},
		{"server-error rate", pct(t.ServerErrorRate), pct(r.ServerErrorRate), rateMark(c.Root.ServerError, t.ServerErrorBand, tol.ServerErrorPoints)},
		{"p50 (ms)", fixed(t.P50MS, 1), fixed(r.P50MS, 1), latencyMark(c.Root.P50, t.P50BandMS, tol.LatencyRel)},
		{"p90 (ms)", fixed(t.P90MS, 1), fixed(r.P90MS, 1), latencyMark(c.Root.P90, t.P90BandMS, tol.LatencyRel)},
		{"p99 (ms)", fixed(t.P99MS, 1), fixed(r.P99MS, 1), ""},
	}
	v.edges = grid{header: []string{"edge", "operation", "calls", "replayed", "attempts", "replayed", "attempts/call", "replayed", "failure rate", "replayed", "within"},
		align: []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft}}
	for _, e := range c.Edges {
		v.edges.rows = append(v.edges.rows, []string{
			display(e.Caller) + " → " + display(e.Callee), display(e.Operation),
			decimal(e.Traced.Calls, 0), decimal(e.Replayed.Calls, 1),
			decimal(e.Traced.Attempts, 0), decimal(e.Replayed.Attempts, 1),
			fixed(e.Traced.AttemptsPerCall, 3), fixed(e.Replayed.AttemptsPerCall, 3),
			pct(e.Traced.FailureRate), pct(e.Replayed.FailureRate), mark(e.Within),
		})
	}
	return v
}

// CalibrationTable renders a calibration for a terminal: the verdict line,
// the root requests traced beside replayed, then per edge and operation
// calls, attempts, attempts per call and failure rate, each row marked
// within tolerance or not, then the misses and the model's notes.
// Replayed figures are means over the seeds, scaled to the traced roots.
func CalibrationTable(w io.Writer, c *replay.Calibration) error {
	v := newCalibrationView(c)
	sw := &stickyWriter{w: w}
	hanging(sw, "", v.verdict)
	if v.arrivals != "" {
		hanging(sw, "", v.arrivals)
	}
	for _, g := range []grid{v.root, v.edges} {
		if err := renderGrid(sw, g, true); err != nil {
			return err
		}
	}
	writeList(sw, "\nmisses:", "  ", v.misses, printable)
	writeList(sw, "\nmodel notes:", "  ", v.notes, printable)
	return sw.err
}

// writeList writes a titled list, nothing when it is empty.
func writeList(w io.Writer, title, bullet string, items []string, esc func(string) string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintln(w, title)
	for _, x := range items {
		hanging(w, bullet, esc(x))
	}
}

// CalibrationMarkdown renders a calibration for a review document.
func CalibrationMarkdown(w io.Writer, c *replay.Calibration) error {
	v := newCalibrationView(c)
	sw := &stickyWriter{w: w}
	fmt.Fprintf(sw, "## Calibration\n\n**%s**\n\n", mdEscape(v.verdict))
	if v.arrivals != "" {
		fmt.Fprintf(sw, "%s\n\n", mdEscape(v.arrivals))
	}
	markdownTable(sw, v.root)
	if len(v.edges.rows) > 0 {
		fmt.Fprintln(sw)
		markdownTable(sw, v.edges)
	}
	writeList(sw, "\n### Misses\n", "- ", v.misses, mdEscape)
	writeList(sw, "\n### Model notes\n", "- ", v.notes, mdEscape)
	return sw.err
}

// CalibrationJSON writes the calibration as JSON, schema
// retryaudit.calibration/v1: seeds, root traced and replayed, edges with
// their traced and replayed figures and whether they are within tolerance,
// pass, misses, and the tolerances and model notes.
func CalibrationJSON(w io.Writer, c *replay.Calibration) error {
	out := struct {
		Schema string `json:"schema"`
		*replay.Calibration
	}{CalibrationSchema, c}
	return JSON(w, out)
}

// uncalibratedText is the recommendation's preface when the model misses:
// what follows is no advice until the model reproduces the traces.
func uncalibratedText(c *replay.Calibration, md bool) string {
	if c == nil || c.Pass {
		return ""
	}
	var b strings.Builder
	esc, bullet := printable, "    "
	if md {
		esc, bullet = mdEscape, "- "
		b.WriteString("\n**Uncalibrated**: the model does not reproduce the traces, so the recommendation below is not advice until it does. Misses:\n\n")
	} else {
		b.WriteString("\nrecommendation: uncalibrated — the model does not reproduce the traces, so what follows is not advice until it does; misses:\n")
	}
	for _, m := range c.Misses {
		fmt.Fprintf(&b, "%s%s\n", bullet, esc(m))
	}
	return b.String()
}
