package report

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/audit"
)

// Attacks that span data, file names and topology files may carry.
var attacks = []struct{ name, s string }{
	{"OSC 52 clipboard write", "svc\x1b]52;c;cm0gLXJmIH4=\x07"},
	{"screen clear", "svc\x1b[2J\x1b[H"},
	{"C1 CSI", "svc\u009b31m"},
	{"DEL and NUL", "svc\x7f\x00"},
	{"bidi override", "svc\u202egnp.exe"},
	{"invalid UTF-8", "svc\xff\xfe"},
	{"Mermaid init directive", "%%{init: {'theme':'dark','themeCSS':'.node{background:url(https://x/)}'}}%%"},
	{"Mermaid comment", "a\n%% comment\nb"},
	{"forged Markdown heading", "ok\n## Injected heading\n"},
	{"fence break", "x\n```\n<script>alert(1)</script>\n```mermaid"},
}

// attackAudit is an audit whose every free string carries s.
func attackAudit(s string) *AuditReport {
	top := &graph.Topology{
		Schema:   graph.Schema,
		Services: []graph.Service{{Name: "edge"}, {Name: s}, {Name: s + "2", Virtual: true}},
		Edges: []graph.Edge{
			{Caller: "edge", Callee: s, Operation: s, Calls: 10, Attempts: 20, Retries: true, MaxAttempts: 3, MaxAttemptsExact: true,
				Backoff: graph.Backoff{Kind: graph.BackoffKind(s), Jitter: graph.JitterKind(s)}, RetriedStatus: []string{s}},
			{Caller: s, Callee: s + "2", Operation: "GET", Calls: 10, Attempts: 10, MaxAttempts: 1, Backoff: graph.Backoff{Kind: graph.BackoffImmediate}},
		},
		Paths: []graph.Path{{Services: []string{"edge", s, s + "2"}, Operations: []string{s, "GET"},
			RetryingLayers: []string{s}, WorstCaseAmplification: 3}},
		Findings: []graph.Finding{{ID: s, Severity: graph.Severity(s), Location: s, Message: s}},
		Warnings: []string{s},
	}
	runs := []replay.Result{handRun("none", s, 0), handRun(s, s, 1)}
	var verdicts []audit.Verdict
	for _, r := range runs {
		verdicts = append(verdicts, audit.Verdict{Degradation: r.Degradation, Service: s, Policy: r.Policy, Seeds: 1,
			Availability: audit.Stat{Mean: r.Availability, Min: r.Availability, Max: r.Availability}, CriticalNote: s})
	}
	return &AuditReport{
		Schema:      AuditSchema,
		Seeds:       1,
		Topology:    top,
		Baseline:    "none",
		Notes:       []string{s},
		Runs:        runs,
		Verdicts:    verdicts,
		Utilization: []audit.ServiceUtilization{{Service: s, Model: 0.2}},
		Calibration: &replay.Calibration{Seeds: 1, Edges: []replay.EdgeCalibration{{Caller: "edge", Callee: s, Operation: s}},
			Misses: []string{s}, Notes: []string{s}},
		Recommendation: &audit.Recommendation{
			// An empty policy or callee changes the layout: never empty here.
			Policy: "p" + s, Reason: s,
			Changes: []audit.Change{
				{Caller: s, Callee: "c" + s, Operation: s, Action: audit.ActionStopRetrying, From: s, To: s, Why: s},
				{Caller: s, Action: audit.ActionShedRetries, Why: s},
			},
			Ranking:    []string{"p" + s, s},
			RuledOut:   []audit.RuledOut{{Policy: s, Why: s}},
			Safety:     []audit.Adjustment{{Policy: s, Caller: s, Callee: s, Operation: s, Rule: audit.RuleNonIdempotent, Why: s}},
			Assumption: s,
		},
	}
}

// attackSummary is an ingest summary whose names and warnings carry s.
func attackSummary(s string) ingest.Summary {
	st := ingest.Stats{Traces: 1, Spans: 2, Services: 1, Start: time.Unix(0, 0).UTC(), End: time.Unix(1, 0).UTC(),
		Warnings: []ingest.Warning{{Kind: s, Count: 2, Example: s}}}
	in := ingest.InputStats{Name: s, Format: ingest.FormatOTLPJSON, Stats: st}
	two := in
	two.Name = s + "2"
	return ingest.Summary{Inputs: []ingest.InputStats{in, two}, Total: st, Skipped: []ingest.Skip{{Name: s, Reason: s}}}
}

// renderings renders every human-readable format of the attack audit and
// summary.
func renderings(t testing.TB, s string) map[string]string {
	a := attackAudit(s)
	out := map[string]string{}
	for name, f := range map[string]func(io.Writer) error{
		"audit table":          func(w io.Writer) error { return AuditTable(w, a) },
		"audit markdown":       func(w io.Writer) error { return AuditMarkdown(w, a) },
		"topology table":       func(w io.Writer) error { return TopologyTable(w, a.Topology) },
		"topology md":          func(w io.Writer) error { return TopologyMarkdown(w, a.Topology) },
		"mermaid":              func(w io.Writer) error { return TopologyMermaid(w, a.Topology) },
		"dot":                  func(w io.Writer) error { return TopologyDOT(w, a.Topology) },
		"replay table":         func(w io.Writer) error { return ReplayTable(w, a.replayReport()) },
		"replay md":            func(w io.Writer) error { return ReplayMarkdown(w, a.replayReport()) },
		"ingest table":         func(w io.Writer) error { return IngestTable(w, attackSummary(s)) },
		"calibration table":    func(w io.Writer) error { return CalibrationTable(w, a.Calibration) },
		"calibration markdown": func(w io.Writer) error { return CalibrationMarkdown(w, a.Calibration) },
	} {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = b.String()
	}
	return out
}

// checkInert asserts that no rendering of s can drive a terminal, run a
// Mermaid directive or forge Markdown structure: no control character
// other than the renderer's own newlines, valid UTF-8, no Mermaid syntax
// in a Mermaid block, and the same headings as a harmless name gives.
func checkInert(t *testing.T, s string) {
	got, plain := renderings(t, s), renderings(t, "plain")
	for name, out := range got {
		if i := firstControl(out); i >= 0 {
			t.Errorf("%s: control character or invalid byte at %d: %q", name, i, out[max(0, i-20):min(len(out), i+20)])
		}
		if n, m := strings.Count(out, "\n"), strings.Count(plain[name], "\n"); n != m {
			t.Errorf("%s: %d lines, %d with a harmless name: a name broke a line", name, n, m)
		}
		for _, block := range mermaidBlocks(name, out) {
			for _, bad := range []string{"%", "'", "{", "}"} {
				if strings.Contains(block, bad) {
					t.Errorf("%s: Mermaid block holds %q:\n%s", name, bad, block)
				}
			}
		}
		if isMarkdown(name) {
			if strings.Contains(out, "%%") {
				t.Errorf("%s: %%%% (a Mermaid comment or directive) in Markdown", name)
			}
			if h, p := headings(out), headings(plain[name]); h != p {
				t.Errorf("%s: %d headings, %d with a harmless name", name, h, p)
			}
		}
	}
}

// firstControl returns the offset of the first control character (C0 but
// newline, DEL, C1) or invalid byte in s, or -1.
func firstControl(s string) int {
	for i, r := range s {
		if r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f || r == utf8.RuneError {
			return i
		}
	}
	return -1
}

// mermaidBlocks returns the Mermaid text of a rendering: all of it for the
// Mermaid renderer, the fenced mermaid blocks of Markdown, none of other
// formats (where a name may spell a fence as text).
func mermaidBlocks(name, out string) []string {
	switch {
	case name == "mermaid":
		return []string{out}
	case !isMarkdown(name):
		return nil
	}
	var blocks []string
	for rest := out; ; {
		_, after, ok := strings.Cut(rest, "```mermaid\n")
		if !ok {
			return blocks
		}
		block, tail, _ := strings.Cut(after, "```")
		blocks = append(blocks, block)
		rest = tail
	}
}

// isMarkdown reports whether the rendering of that name is Markdown.
func isMarkdown(name string) bool {
	return strings.Contains(name, "markdown") || strings.HasSuffix(name, " md")
}

// headings counts Markdown heading lines.
func headings(out string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "#") {
			n++
		}
	}
	return n
}

// TestInjection renders every attack in every human-readable format.
func TestInjection(t *testing.T) {
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) { checkInert(t, a.s) })
	}
}

// FuzzEscaping renders arbitrary names in every human-readable format: no
// control byte, line break, Mermaid directive or heading survives.
func FuzzEscaping(f *testing.F) {
	for _, a := range attacks {
		f.Add(a.s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return // an empty name or note is left out, which changes the layout
		}
		checkInert(t, s)
	})
}

// TestJSONInert: JSON output escapes DEL and C1 controls as well as C0,
// and still decodes to the same strings.
func TestJSONInert(t *testing.T) {
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := JSON(&b, attackAudit(a.s)); err != nil {
				t.Fatal(err)
			}
			if i := firstControl(b.String()); i >= 0 {
				t.Fatalf("control character or invalid byte at %d", i)
			}
			var back AuditReport
			if err := json.Unmarshal(b.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if want := strings.Map(func(r rune) rune { return r }, a.s); back.Recommendation.Reason != want { // invalid bytes read as U+FFFD each
				t.Errorf("reason %q, want %q", back.Recommendation.Reason, want)
			}
		})
	}
}
