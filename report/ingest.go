package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/retryaudit/retryaudit/ingest"
)

// IngestTable renders an ingest summary: one row per input and a total,
// then the warnings of each input. Input names and warnings (which quote
// span data) are escaped with printable.
func IngestTable(w io.Writer, sum ingest.Summary) error {
	g := grid{header: []string{"input", "format", "traces", "spans", "services", "errors", "window"},
		align: []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft}}
	row := func(name, format string, st ingest.Stats) {
		g.rows = append(g.rows, []string{name, format, strconv.Itoa(st.Traces), strconv.Itoa(st.Spans),
			strconv.Itoa(st.Services), strconv.Itoa(st.ErrorSpans), window(st)})
	}
	for _, in := range sum.Inputs {
		format := string(in.Format)
		if in.Compression != "" {
			format += "+" + in.Compression
		}
		row(display(in.Name), format, in.Stats)
	}
	if len(sum.Inputs) > 1 {
		row("total", "", sum.Total)
	}
	if err := renderGrid(w, g, false); err != nil {
		return err
	}
	return ingestWarnings(w, sum)
}

func ingestWarnings(w io.Writer, sum ingest.Summary) error {
	header := false
	show := func(name string, list []ingest.Warning) error {
		for _, x := range list {
			if !header {
				if _, err := fmt.Fprintln(w, "\nwarnings:"); err != nil {
					return err
				}
				header = true
			}
			if _, err := fmt.Fprintf(w, "  %s: %s\n", name, printable(x.String())); err != nil {
				return err
			}
		}
		return nil
	}
	if n := len(sum.Skipped); n > 0 {
		names := make([]string, 0, min(n, 5))
		for _, sk := range sum.Skipped[:min(n, 5)] {
			names = append(names, display(sk.Name))
		}
		more := ""
		if n > 5 {
			more = fmt.Sprintf(" and %d more", n-5)
		}
		if _, err := fmt.Fprintf(w, "\nskipped %d files that hold no trace format: %s%s (--format json gives each reason)\n",
			n, strings.Join(names, ", "), more); err != nil {
			return err
		}
	}
	if len(sum.Inputs) == 1 {
		return show(display(sum.Inputs[0].Name), sum.Total.Warnings)
	}
	seen := map[string]bool{}
	for _, in := range sum.Inputs {
		if err := show(display(in.Name), in.Warnings); err != nil {
			return err
		}
		for _, x := range in.Warnings {
			seen[x.Kind] = true
		}
	}
	// What only shows when inputs are read together, such as the same
	// spans exported in two files.
	var across []ingest.Warning
	for _, x := range sum.Total.Warnings {
		if !seen[x.Kind] {
			across = append(across, x)
		}
	}
	return show("across inputs", across)
}

// window renders the time span covered as "start +duration".
func window(st ingest.Stats) string {
	if st.Spans == 0 {
		return ""
	}
	return st.Start.Format(time.RFC3339) + " +" + st.End.Sub(st.Start).Round(time.Millisecond).String()
}
