package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text that comes from span data (service names, operations, status
// strings), from file names and from user-edited topology files is
// untrusted: it may hold quotes, markup, control characters (an OSC 52
// clipboard write, a screen clear) and invalid UTF-8. Every renderer first
// makes it one plain line with printable (or display, which builds on it),
// then escapes what its own format treats as special (mdEscape, dotQuote,
// mermaidEscape, which apply printable themselves).

// display returns a name as it is when it is plain printable text, and
// Go-quoted otherwise: when it is empty, has leading or trailing space, or
// holds control, format or invalid characters. Like ls quoting odd file
// names, this keeps every name on one line and keeps two different names
// from looking alike.
func display(s string) string {
	if s == "" || strings.TrimSpace(s) != s || printable(s) != s {
		return strconv.Quote(s)
	}
	return s
}

// Printable returns free text (a message that quotes names, an error, a
// warning) with every rune that is not printable escaped the way Go writes
// it — C0 controls, DEL and C1 controls (\n, \x1b, \x7f, \u009b), format
// characters such as bidirectional overrides (\u202e) — and invalid bytes
// as \xff, leaving everything else as it is. It is the one escaping
// function every human-readable output goes through (the renderers of this
// package call it as printable), the command's errors and warnings on
// stderr included: no byte it returns can drive a terminal.
func Printable(s string) string { return printable(s) }

// printable is Printable.
func printable(s string) string {
	plain := func(r rune, n int) bool { return (r != utf8.RuneError || n > 1) && unicode.IsPrint(r) }
	clean := true
	for i := 0; i < len(s) && clean; {
		r, n := utf8.DecodeRuneInString(s[i:])
		clean = plain(r, n)
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case plain(r, n):
			b.WriteString(s[i : i+n])
		case n == 1 && r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// mdEscaper backslash-escapes the ASCII punctuation that Markdown (GFM)
// gives a meaning inside a paragraph or a table cell: the escape itself,
// code spans, emphasis, links, raw HTML, strikethrough and cell separators.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "|", `\|`, "*", `\*`, "_", `\_`, "~", `\~`,
	"[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`, "&", `\&`,
)

// mdEscape makes text literal Markdown text on one line: printable first
// (so no line break can start a forged heading or list), then the
// punctuation Markdown reads as markup, then every % that follows another
// (so that no Mermaid comment or %%{init}%% directive appears in a
// Markdown file even outside its mermaid blocks; a lone %, as in "50%",
// stays as it is).
func mdEscape(s string) string {
	s = mdEscaper.Replace(printable(s))
	if !strings.Contains(s, "%%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i > 0 && s[i-1] == '%' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// dotEscaper escapes a DOT quoted string: backslashes (which Graphviz
// reads in pairs, and whose escString sequences like \N it expands in
// labels), quotes, and newlines, which become Graphviz's centred line break.
var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")

// dotQuote returns s as a quoted DOT identifier or label.
func dotQuote(s string) string { return `"` + dotEscaper.Replace(s) + `"` }

// mermaidEscaper writes Mermaid's entity codes (#name; or #decimal;, which
// Mermaid turns into HTML entities) for the characters that could end a
// quoted label, open markup or a Markdown string, or close the fence
// around a mermaid block; # itself, so a name cannot forge an entity; and
// what Mermaid reads before it parses labels at all: % (comments, and
// %%{init: …}%% directives, which it finds anywhere in the text, quoted or
// not), the single quotes and braces of a directive's body. Inside the
// double quotes of a label nothing else is syntax.
var mermaidEscaper = strings.NewReplacer(
	"#", "#35;", `"`, "#quot;", "<", "#lt;", ">", "#gt;", "&", "#amp;", "`", "#96;",
	"%", "#37;", "'", "#39;", "{", "#123;", "}", "#125;",
)

// mermaidEscape makes text safe inside a Mermaid ["..."] or |"..."| label.
func mermaidEscape(s string) string { return mermaidEscaper.Replace(printable(s)) }

// ms formats milliseconds compactly: to 0.1 ms from 10 ms up, to 0.01 ms
// below, without trailing zeros ("1000.7ms", "20ms", "0.09ms").
func ms(v float64) string {
	if math.Abs(v) >= 10 {
		return decimal(v, 1) + "ms"
	}
	return decimal(v, 2) + "ms"
}

// decimal formats v rounded to places decimals, without trailing zeros.
func decimal(v float64, places int) string {
	p := math.Pow10(places)
	r := math.Round(v*p) / p
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// fixed formats v rounded to places decimals, keeping trailing zeros so
// that a column of figures lines up on its decimal point ("0.920",
// "36.40"), and never writes "-0".
func fixed(v float64, places int) string {
	s := strconv.FormatFloat(v, 'f', places, 64)
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s
}

// signed is fixed with an explicit sign on a change: "+0.23", "-1.50", and
// no sign when the change rounds to zero ("0.00").
func signed(v float64, places int) string {
	s := fixed(v, places)
	if s[0] >= '0' && s[0] <= '9' && strings.Trim(s, "0.") != "" {
		s = "+" + s
	}
	return s
}

// stickyWriter remembers the first write error and drops later writes, so
// a renderer can write line after line and check once at the end.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}
