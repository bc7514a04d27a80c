package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
	g, hidden := fit(g, widthOf(w))
	tab := newTable(w, g.header, g.align...)
	for _, r := range g.rows {
		if err := tab.Append(r); err != nil {
			return err
		}
	}
	if err := tab.Render(); err != nil {
		return err
	}
	if len(hidden) > 0 {
		_, err := fmt.Fprintf(w, "(--wide shows: %s)\n", strings.Join(hidden, ", "))
		return err
	}
	return nil
}

// JSON writes v as indented JSON with a trailing newline. encoding/json
// escapes C0 controls but writes DEL and C1 controls as they are; they are
// escaped too (\u007f, \u009b), so JSON on a terminal is as inert as the
// tables. They can only occur inside strings, where the escape means the
// same character.
func JSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeControls(b.Bytes()))
	return err
}

// escapeControls rewrites DEL and UTF-8-encoded C1 controls in JSON text
// as \u escapes.
func escapeControls(b []byte) []byte {
	if bytes.IndexByte(b, 0x7f) < 0 && bytes.IndexByte(b, 0xc2) < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == 0x7f:
			out = append(out, `\u007f`...)
		case c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, b[i+1])
			i++
		default:
			out = append(out, c)
		}
	}
	return out
}
