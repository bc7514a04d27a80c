package report

import (
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/retryaudit/retryaudit/replay"
)

// ContentionSchema names the layout of a ContentionReport in JSON.
const ContentionSchema = "retryaudit.contention/v1"

// ContentionReport is what `retryaudit replay --scenario contention`
// prints: Brooker's contention study, one row per client count and
// strategy, compared with a reference strategy.
type ContentionReport struct {
	// Schema is ContentionSchema; ContentionJSON fills it in when empty.
	Schema    string `json:"schema"`
	Reference string `json:"reference"`
	Seed      uint64 `json:"seed"`
	Seeds     int    `json:"seeds"`
	// Notes describe the study; they are numbered from [1].
	Notes []string               `json:"notes"`
	Rows  []replay.ContentionRow `json:"rows"`
}

// contentionGrid lays the rows out: clients, strategy, completion time
// and calls, each with its multiple of the reference's.
func contentionGrid(rep *ContentionReport) grid {
	ref := printable(rep.Reference)
	g := grid{header: []string{"clients", "strategy", "completion", "× " + ref, "calls", "× " + ref},
		align: []tw.Align{tw.AlignRight, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight}}
	for _, r := range rep.Rows {
		g.rows = append(g.rows, []string{fmt.Sprint(r.Clients), printable(r.Strategy), fmt.Sprintf("%.2fs", r.CompletionS),
			fmt.Sprintf("%.2f", r.TimeVsRef), fmt.Sprintf("%.0f", r.Calls), fmt.Sprintf("%.2f", r.CallsVsRef)})
	}
	return g
}

func (rep *ContentionReport) header() string {
	return fmt.Sprintf("seeds %d–%d (each point their mean); compared with %s", rep.Seed, rep.Seed+uint64(max(rep.Seeds, 1))-1, printable(rep.Reference))
}

// ContentionTable renders a contention report for a terminal: the seeds,
// the table, then the numbered notes.
func ContentionTable(w io.Writer, rep *ContentionReport) error {
	sw := &stickyWriter{w: w}
	fmt.Fprintln(sw, rep.header())
	fmt.Fprintln(sw)
	if len(rep.Rows) == 0 {
		fmt.Fprintln(sw, "no runs")
	} else if err := renderGrid(sw, contentionGrid(rep), false); err != nil {
		return err
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(sw, "\nnotes:")
		for i, n := range rep.Notes {
			hanging(sw, fmt.Sprintf("[%d] ", i+1), printable(n))
		}
	}
	return sw.err
}

// ContentionMarkdown renders a contention report as a heading, the seeds,
// a GitHub Markdown table and the notes as a numbered list.
func ContentionMarkdown(w io.Writer, rep *ContentionReport) error {
	sw := &stickyWriter{w: w}
	fmt.Fprintf(sw, "## Contention\n\n%s\n\n", mdEscape(rep.header()))
	if len(rep.Rows) == 0 {
		fmt.Fprintln(sw, "No runs.")
	} else {
		markdownTable(sw, contentionGrid(rep))
	}
	markdownNotes(sw, rep.Notes)
	return sw.err
}

// ContentionJSON writes the report as indented JSON; an empty schema is
// written as ContentionSchema, and absent notes or rows as empty lists.
func ContentionJSON(w io.Writer, rep *ContentionReport) error {
	out := *rep
	if out.Schema == "" {
		out.Schema = ContentionSchema
	}
	out.Notes, out.Rows = nonNil(out.Notes), nonNil(out.Rows)
	return JSON(w, out)
}
