package report

import (
	"encoding/json"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// newTable returns a borderless ASCII table in the layout of benchstat:
// a header line, then aligned columns, readable on a terminal and in a
// pipe alike. align gives each column's alignment.
func newTable(w io.Writer, header []string, align ...tw.Align) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleASCII),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.On},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignLeft, PerColumn: align}),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header(header)
	return t
}

// renderGrid writes g as a table, nothing when it has no rows; blank
// says whether a blank line goes before it.
func renderGrid(w io.Writer, g grid, blank bool) error {
	if len(g.rows) == 0 {
		return nil
	}
	if blank {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	tab := newTable(w, g.header, g.align...)
	for _, r := range g.rows {
		if err := tab.Append(r); err != nil {
			return err
		}
	}
	return tab.Render()
}

// JSON writes v as indented JSON with a trailing newline.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
