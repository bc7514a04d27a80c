package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// Options are how a rendering should look beyond what it renders. A
// renderer takes them from the writer it is given (With), so that every
// renderer keeps its (writer, report) form.
type Options struct {
	// Width is the terminal's: tables written through the writer
	// abbreviate their longest cells, then hide their last columns, to fit,
	// and say what they hid. 0: no limit (files and pipes keep every
	// column whole).
	Width int
	// TraceURL turns example trace ids into links in Markdown and HTML: a
	// template holding {trace_id} (CheckTraceURL).
	TraceURL string
}

// With returns a writer to w that carries o to the renderers.
func With(w io.Writer, o Options) io.Writer {
	if o == (Options{}) {
		return w
	}
	return &optWriter{w: w, o: o}
}

// Width is With(w, Options{Width: cols}).
func Width(w io.Writer, cols int) io.Writer { return With(w, Options{Width: max(cols, 0)}) }

type optWriter struct {
	w io.Writer
	o Options
}

func (t *optWriter) Write(p []byte) (int, error) { return t.w.Write(p) }

// optionsOf finds the options a renderer's writer carries.
func optionsOf(w io.Writer) Options {
	for {
		switch x := w.(type) {
		case *optWriter:
			return x.o
		case *stickyWriter:
			w = x.w
		default:
			return Options{}
		}
	}
}

// widthOf is the terminal width a renderer's writer carries (0: none).
func widthOf(w io.Writer) int { return optionsOf(w).Width }

// A column keeps its header's width and at least this many characters
// (or all of its widest cell, if shorter).
const minCell = 16

// fit makes a rendering of g (each column padded by a space on both sides)
// fit cols: it keeps as many columns from the left as fit once their
// widest cells are abbreviated to a floor, then abbreviates the widest
// cells just enough. It returns the headers of the columns it dropped.
func fit(g grid, cols int) (grid, []string) {
	if cols <= 0 || len(g.header) == 0 {
		return g, nil
	}
	natural := naturalWidths(g)
	floor := make([]int, len(g.header))
	if sumPadded(natural) <= cols {
		return g, nil
	}
	keep, used := 0, 0
	for i, h := range g.header {
		floor[i] = max(utf8.RuneCountInString(h), min(natural[i], minCell))
		if used+floor[i]+2 > cols && keep > 0 {
			break
		}
		used += floor[i] + 2
		keep++
	}
	width := natural[:keep]
	total := sumPadded(width)
	for total > cols {
		best := -1
		for i := range width {
			if width[i] > floor[i] && (best < 0 || width[i] > width[best]) {
				best = i
			}
		}
		if best < 0 {
			break // one column wider than the terminal: the terminal wraps it
		}
		width[best]--
		total--
	}
	out := grid{header: g.header[:keep], align: g.align[:min(keep, len(g.align))]}
	for _, r := range g.rows {
		row := make([]string, keep)
		for i := range row {
			row[i] = abbreviate(r[i], width[i])
		}
		out.rows = append(out.rows, row)
	}
	var hidden []string
	if keep < len(g.header) {
		hidden = g.header[keep:]
	}
	return out, hidden
}

// abbreviate cuts s to n characters, keeping its start and end around an
// ellipsis (the end of a path or URL tells inputs apart).
func abbreviate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 2 {
		return string(r[:n])
	}
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

func sumPadded(widths []int) int {
	n := 0
	for _, x := range widths {
		n += x + 2
	}
	return n
}

// hanging writes text after prefix, word-wrapped to the width w carries,
// continuation lines indented under the text's start. Without a width, or
// when less than 30 columns would remain, the text stays on one line.
func hanging(w io.Writer, prefix, text string) {
	indent := utf8.RuneCountInString(prefix)
	room := widthOf(w) - indent
	if widthOf(w) <= 0 || room < 30 {
		fmt.Fprintf(w, "%s%s\n", prefix, text)
		return
	}
	line := prefix
	n := 0 // runes of text on the current line
	for _, word := range strings.Fields(text) {
		l := utf8.RuneCountInString(word)
		if n > 0 && n+1+l > room {
			fmt.Fprintln(w, line)
			line, n = strings.Repeat(" ", indent), 0
		}
		if n > 0 {
			line += " "
			n++
		}
		line += word
		n += l
	}
	fmt.Fprintln(w, line)
}

// splitColumns spreads g over as many tables as the width cols needs, each
// repeating the first fixed columns and holding whole groups of group
// columns after them. Without a width, or when g fits, it is g alone.
func splitColumns(g grid, cols, fixed, group int) []grid {
	natural := naturalWidths(g)
	if cols <= 0 || sumPadded(natural) <= cols || len(g.header) <= fixed+group {
		return []grid{g}
	}
	var out []grid
	pick := func(idx []int) {
		t := grid{}
		for _, i := range idx {
			t.header = append(t.header, g.header[i])
			if i < len(g.align) {
				t.align = append(t.align, g.align[i])
			}
		}
		for _, r := range g.rows {
			row := make([]string, len(idx))
			for k, i := range idx {
				row[k] = r[i]
			}
			t.rows = append(t.rows, row)
		}
		out = append(out, t)
	}
	base := make([]int, fixed)
	for i := range base {
		base[i] = i
	}
	cur, used := slices.Clone(base), sumPadded(natural[:fixed])
	for start := fixed; start < len(g.header); start += group {
		end := min(start+group, len(g.header))
		need := sumPadded(natural[start:end])
		if len(cur) > fixed && used+need > cols {
			pick(cur)
			cur, used = slices.Clone(base), sumPadded(natural[:fixed])
		}
		for i := start; i < end; i++ {
			cur = append(cur, i)
		}
		used += need
	}
	pick(cur)
	return out
}

// naturalWidths is each column's width: its widest cell or header.
func naturalWidths(g grid) []int {
	natural := make([]int, len(g.header))
	for i, h := range g.header {
		natural[i] = utf8.RuneCountInString(h)
	}
	for _, r := range g.rows {
		for i, c := range r {
			natural[i] = max(natural[i], utf8.RuneCountInString(c))
		}
	}
	return natural
}
