package report

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/ingest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// topologyRenderers are the renderers with golden files, by file extension.
var topologyRenderers = []struct {
	ext    string
	render func(io.Writer, *graph.Topology) error
}{
	{"table", TopologyTable},
	{"md", TopologyMarkdown},
	{"dot", TopologyDOT},
	{"mmd", TopologyMermaid},
}

// sampleScenarios are the committed sample runs the goldens are inferred from.
var sampleScenarios = []string{"retry-everywhere", "edge-only", "mixed"}

type topologyInput struct {
	name string
	topo *graph.Topology
}

// topologyInputs returns the topologies inferred from the samples, the
// hostile hand-built one and an empty one.
func topologyInputs(t *testing.T) []topologyInput {
	t.Helper()
	var in []topologyInput
	for _, s := range sampleScenarios {
		// The samples may be stored compressed (ingest sniffs gzip and zstd).
		files, _ := filepath.Glob(filepath.Join("..", "samples", s, "traces.otlp.jsonl*"))
		if len(files) == 0 {
			t.Fatalf("no ../samples/%s/traces.otlp.jsonl[.gz|.zst]", s)
		}
		set, err := ingest.ReadFiles(context.Background(), files[:1], nil, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		top, err := graph.Infer(context.Background(), set)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, topologyInput{s, top})
	}
	return append(in, topologyInput{"hostile", hostileTopology()}, topologyInput{"empty", &graph.Topology{Schema: graph.Schema}})
}

// Names as hostile span data may carry them.
const (
	evilScript    = "<script>alert(1)</script>"
	evilQuote     = `a"b`
	evilBackslash = `back\slash`
	evilNewline   = "new\nline"
	evilPipe      = "pipe|name"
)

var hostileNames = []string{evilScript, evilQuote, evilBackslash, evilNewline, evilPipe}

func ptr[T any](v T) *T { return &v }

// hostileTopology is a small topology whose every string is hostile.
func hostileTopology() *graph.Topology {
	none := graph.Backoff{Kind: "none", Jitter: "none"}
	return &graph.Topology{
		Schema: graph.Schema,
		Services: []graph.Service{
			{Name: evilScript}, {Name: evilQuote}, {Name: evilBackslash, Virtual: true},
			{Name: evilNewline, Virtual: true}, {Name: evilPipe},
		},
		Edges: []graph.Edge{
			{Caller: "user", Callee: evilScript, Operation: "GET /`x`|y", Calls: 10, Attempts: 10, MaxAttempts: 1,
				Backoff: none, CalleeP99MS: 1234.5678},
			{Caller: evilScript, Callee: evilQuote, Operation: `POST /a"b`, Calls: 10, Attempts: 17, Retries: true,
				MaxAttempts: 3, MaxAttemptsExact: true,
				Backoff: graph.Backoff{Kind: "exponential", BaseMS: 20.04, Multiplier: ptr(2.0), CapMS: ptr(160.0),
					Jitter: "proportional", JitterFraction: ptr(0.5), JitterPresent: ptr(true), Samples: 7},
				PerTryTimeoutMS: ptr(100.0), RetriedStatus: []string{"503", "<b>429</b>"}, CalleeP99MS: 250.06},
			{Caller: evilQuote, Callee: evilBackslash, Operation: "q|uery \xff", Calls: 4, Attempts: 6, Retries: true, RetriesBy: "proxy",
				MaxAttempts: 2, Backoff: graph.Backoff{Kind: "unknown", BaseMS: 5, Jitter: "unknown", Samples: 2},
				RetriedStatus: []string{"timeout"}, CalleeP99MS: 0.0049},
			{Caller: evilQuote, Callee: evilNewline, Operation: "GET\n/x", Calls: 4, Attempts: 4, MaxAttempts: 1,
				MaxAttemptsExact: true, Backoff: none, CalleeP99MS: 3.14159,
				Hedging: &graph.Hedging{Calls: 2, DelayMS: 12.5, MaxRequests: 3},
				Breaker: &graph.Breaker{Detected: true, FastFailedCalls: 13, OpenPeriods: 3, TripAfter: 3, OpenMS: 45, LongestFailureRun: 4}},
			{Caller: evilScript, Callee: evilPipe, Operation: "*bold* _em_ [link](x) ~~s~~ &amp;", Calls: 10, Attempts: 12,
				Retries: true, MaxAttempts: 3, MaxAttemptsExact: true,
				Backoff:       graph.Backoff{Kind: "constant", BaseMS: 25, Jitter: "additive", JitterAdditiveMS: ptr(100.0), JitterPresent: ptr(true), Samples: 3},
				RetriedStatus: []string{"503"}, CalleeP99MS: 12, Breaker: &graph.Breaker{LongestFailureRun: 12}},
		},
		Paths: []graph.Path{
			{Services: []string{evilScript, evilQuote, evilBackslash}, Operations: []string{"GET /`x`|y", `POST /a"b`, "q|uery \xff"},
				RetryingLayers: []string{evilScript, evilQuote}, WorstCaseAmplification: 6, ObservedMaxAmplification: 4},
			{Services: []string{evilScript, evilPipe}, Operations: []string{"GET /`x`|y", "*bold*"},
				RetryingLayers: []string{evilScript}, WorstCaseAmplification: 3, WorstCaseExact: true, ObservedMaxAmplification: 2.5},
			{Services: []string{evilQuote, evilNewline}, Operations: []string{`POST /a"b`, "GET\n/x"},
				RetryingLayers: []string{}, WorstCaseAmplification: 1, WorstCaseExact: true},
		},
		Findings: []graph.Finding{
			{ID: graph.FindingMultiLayer, Severity: graph.SeverityHigh, Location: evilScript + " → " + evilQuote + " → " + evilBackslash,
				Message: "2 layers retry (`x`|y): one request can become 6x attempts at " + evilBackslash},
			{ID: graph.FindingNoJitter, Severity: graph.SeverityMedium, Location: evilScript + " → " + evilPipe,
				Message: "retries with no jitter\nand a second line"},
		},
		Warnings: []string{evilPipe + ": `tick` \x00 <b>bold</b>\nnext"},
	}
}

func TestTopologyGolden(t *testing.T) {
	for _, in := range topologyInputs(t) {
		for _, r := range topologyRenderers {
			t.Run(in.name+"/"+r.ext, func(t *testing.T) {
				var buf bytes.Buffer
				if err := r.render(&buf, in.topo); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("testdata", "topology-"+in.name+"."+r.ext+".golden"), buf.Bytes())
			})
		}
	}
}

// checkGolden compares got with the golden file, or rewrites it with -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		gl, wl := "<missing>", "<missing>"
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Fatalf("%s: line %d differs (go test -update rewrites goldens):\n got: %q\nwant: %q", path, i+1, gl, wl)
		}
	}
}

func TestTopologyTableHeadline(t *testing.T) {
	const prefix = "worst-case amplification: "
	for _, in := range topologyInputs(t) {
		t.Run(in.name, func(t *testing.T) {
			var want string
			switch in.name {
			case "hostile":
				want = prefix + `6x on <script>alert(1)</script> → a"b → back\slash (lower bound)`
			case "empty":
				want = prefix + "1x (no calls between services)"
			default:
				if len(in.topo.Paths) == 0 {
					t.Fatal("no paths inferred from the sample")
				}
				top := in.topo.Paths[0]
				for _, p := range in.topo.Paths {
					if p.WorstCaseAmplification > top.WorstCaseAmplification {
						t.Fatalf("paths are not sorted by worst case: %d before %d", top.WorstCaseAmplification, p.WorstCaseAmplification)
					}
				}
				want = prefix + strings.Join(top.Services, " → ")
			}
			var buf bytes.Buffer
			if err := TopologyTable(&buf, in.topo); err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(buf.String(), "\n")
			if !strings.HasPrefix(first, prefix) {
				t.Fatalf("first line %q does not start with %q", first, prefix)
			}
			if in.name == "hostile" || in.name == "empty" {
				if first != want {
					t.Fatalf("first line\n got: %q\nwant: %q", first, want)
				}
				return
			}
			// Sample: the top path, whatever amplification inference finds.
			top := in.topo.Paths[0]
			if !strings.HasSuffix(strings.TrimSuffix(first, " (lower bound)"), " on "+strings.Join(top.Services, " → ")) {
				t.Fatalf("first line %q does not name the top path %v", first, top.Services)
			}
		})
	}
}

func render(t *testing.T, f func(io.Writer, *graph.Topology) error, topo *graph.Topology) string {
	t.Helper()
	var buf bytes.Buffer
	if err := f(&buf, topo); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// wantLabels are the hostile service names as every renderer should show
// them once its own escaping is undone.
func wantLabels() []string {
	out := make([]string, 0, len(hostileNames)+1)
	for _, n := range hostileNames {
		out = append(out, display(n))
	}
	out = append(out, "user")
	slices.Sort(out)
	return out
}

func TestTopologyDOTEscapes(t *testing.T) {
	out := render(t, TopologyDOT, hostileTopology())
	// Outside its quoted strings each line must be one of the statements
	// the renderer writes: nothing of a name has leaked out of its quotes.
	stmt := regexp.MustCompile(`^(digraph S \{|  rankdir=S;|  node \[shape=S, fontname=S\];|  edge \[fontname=S, fontsize=S\];|` +
		`  S \[label=S(, style=S)?\];|  S -> S \[label=S(, color=S, fontcolor=S, style=S)?\];|\})$`)
	var labels []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		skeleton, strs, err := dotStrings(line)
		if err != nil {
			t.Fatalf("%v in line %q of:\n%s", err, line, out)
		}
		if !stmt.MatchString(skeleton) {
			t.Errorf("unexpected DOT statement %q in:\n%s", line, out)
		}
		if strings.HasPrefix(skeleton, "  S [label=S") {
			labels = append(labels, strs[1])
		}
	}
	// Node labels are the names, intact.
	slices.Sort(labels)
	if !slices.Equal(labels, wantLabels()) {
		t.Errorf("DOT node labels\n got: %q\nwant: %q", labels, wantLabels())
	}
}

// dotStrings reads the quoted strings of one line of DOT the way Graphviz
// does (\\ and \" are read as pairs; \n in a label is a line break) and
// returns the line with each replaced by S, and their contents.
func dotStrings(line string) (skeleton string, strs []string, err error) {
	var sk strings.Builder
	for i := 0; i < len(line); i++ {
		if line[i] != '"' {
			sk.WriteByte(line[i])
			continue
		}
		var s strings.Builder
		j := i + 1
		for ; j < len(line) && line[j] != '"'; j++ {
			if line[j] == '\\' && j+1 < len(line) {
				switch line[j+1] {
				case '\\', '"':
					j++
					s.WriteByte(line[j])
					continue
				case 'n':
					j++
					s.WriteByte('\n')
					continue
				}
			}
			s.WriteByte(line[j])
		}
		if j == len(line) {
			return "", nil, fmt.Errorf("quoted string from byte %d not closed on its line", i)
		}
		strs = append(strs, s.String())
		sk.WriteString("S")
		i = j
	}
	return sk.String(), strs, nil
}

func TestTopologyMermaidEscapes(t *testing.T) {
	out := render(t, TopologyMermaid, hostileTopology())
	if strings.Contains(out, "<script") || strings.Contains(out, "`") {
		t.Fatalf("raw markup or backtick in Mermaid output:\n%s", out)
	}
	node := regexp.MustCompile(`^    n\d+\["([^"<>&` + "`" + `]*)"\]$`)
	stmt := regexp.MustCompile(`^(flowchart LR|    n\d+ --> n\d+|    n\d+ ==>\|"×≥?\d+"\| n\d+|    classDef virtual stroke-dasharray: 5 5|    class n\d+(,n\d+)* virtual)$`)
	unescape := strings.NewReplacer("#35;", "#", "#quot;", `"`, "#lt;", "<", "#gt;", ">", "#amp;", "&", "#96;", "`")
	var labels []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if m := node.FindStringSubmatch(line); m != nil {
			labels = append(labels, unescape.Replace(m[1]))
			continue
		}
		if !stmt.MatchString(line) {
			t.Errorf("unexpected Mermaid line %q in:\n%s", line, out)
		}
	}
	slices.Sort(labels)
	if !slices.Equal(labels, wantLabels()) {
		t.Errorf("Mermaid node labels\n got: %q\nwant: %q", labels, wantLabels())
	}
}

func TestTopologyMarkdownEscapes(t *testing.T) {
	out := render(t, TopologyMarkdown, hostileTopology())
	unescape := regexp.MustCompile(`\\([[:punct:]])`)
	var cells []string
	columns := -1
	inMermaid := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case line == "```mermaid":
			inMermaid = true
		case line == "```":
			inMermaid = false
		case inMermaid:
			continue
		case strings.HasPrefix(line, "|"):
			row := splitCells(line)
			if columns < 0 {
				columns = len(row)
			}
			if len(row) != columns {
				t.Errorf("row has %d cells, table has %d (a raw | in a cell?): %q", len(row), columns, line)
			}
			for _, c := range row {
				cells = append(cells, unescape.ReplaceAllString(strings.TrimSpace(c), "$1"))
			}
		default:
			columns = -1
		}
		if !inMermaid && regexp.MustCompile(`(^|[^\\])[<>`+"`"+`]`).MatchString(line) && line != "```" && line != "```mermaid" {
			t.Errorf("unescaped <, > or backtick outside code: %q", line)
		}
	}
	for _, want := range append(wantLabels(), display("q|uery \xff"), "GET /`x`|y", "*bold* _em_ [link](x) ~~s~~ &amp;", "<b>429</b>") {
		if want == "user" {
			continue
		}
		if !slices.ContainsFunc(cells, func(c string) bool { return strings.Contains(c, want) }) {
			t.Errorf("no table cell shows %q intact; cells: %q", want, cells)
		}
	}
}

// splitCells splits a Markdown table row on the | that are not escaped
// (preceded by an odd number of backslashes).
func splitCells(line string) []string {
	var cells []string
	start, bs := 1, 0
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '\\':
			bs++
			continue
		case line[i] == '|' && bs%2 == 0:
			cells = append(cells, line[start:i])
			start = i + 1
		}
		bs = 0
	}
	return cells
}

func TestTextHelpers(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"display plain", display("api"), "api"},
		{"display empty", display(""), `""`},
		{"display spaces", display(" api"), `" api"`},
		{"display newline", display("new\nline"), `"new\nline"`},
		{"display bidi", display("a\u202eb"), `"a\u202eb"`},
		{"display invalid", display("a\xffb"), `"a\xffb"`},
		{"display quote", display(`a"b`), `a"b`},
		{"printable", printable("a\tb\x00\xff→ \u200b"), `a\tb\x00\xff→ \u200b`},
		{"ms large", ms(1000.709), "1000.7ms"},
		{"ms whole", ms(20.04), "20ms"},
		{"ms small", ms(0.092), "0.09ms"},
		{"ms round up", ms(9.999), "10ms"},
		{"ms negative zero", ms(-0.001), "0ms"},
		{"decimal", decimal(2.5, 2), "2.5"},
		{"md", mdEscape("a|b`c\\d*<e>"), "a\\|b\\`c\\\\d\\*\\<e\\>"},
		{"dot", dotQuote("a\"b\\c\nd"), `"a\"b\\c\nd"`},
		{"mermaid", mermaidEscape(`<a href="#x">&` + "`"), "#lt;a href=#quot;#35;x#quot;#gt;#amp;#96;"},
		{"breaker none seen", breakerText(nil), "-"},
		{"breaker in a row", breakerText(&graph.Breaker{Detected: true, OpenPeriods: 3, FastFailedCalls: 13, TripAfter: 3, TripRule: graph.TripConsecutive}), "opened 3×, 13 fast-failed"},
		{"breaker on a failure rate", breakerText(&graph.Breaker{Detected: true, OpenPeriods: 4, FastFailedCalls: 38, TripAfter: 3, TripRule: graph.TripFailureRate, PassedRuns: 21}),
			"opened 4×, 38 fast-failed, on a failure rate"},
		{"breaker on a failure rate, sized", breakerText(&graph.Breaker{Detected: true, OpenPeriods: 4, FastFailedCalls: 38, TripRule: graph.TripFailureRate,
			FailureRate: &graph.FailureRateFit{Fit: graph.FitSized, ShareRange: []float64{0.396, 0.679}, WindowMSRange: []float64{242.178, 493.507}}}),
			"opened 4×, 38 fast-failed, on a failure rate (39.6%–67.9% over 242–494ms)"},
		{"breaker on a failure rate, window unbounded", breakerText(&graph.Breaker{Detected: true, OpenPeriods: 5, FastFailedCalls: 101, TripRule: graph.TripFailureRate,
			FailureRate: &graph.FailureRateFit{Fit: graph.FitSized, ShareRange: []float64{0.333, 0.8}, WindowMSRange: []float64{143.726, 828.403}, WindowUnbounded: true}}),
			"opened 5×, 101 fast-failed, on a failure rate (33.3%–80% over 144ms or more)"},
		{"breaker on a failure rate, unsized", breakerText(&graph.Breaker{Detected: true, OpenPeriods: 4, FastFailedCalls: 38, TripRule: graph.TripFailureRate,
			FailureRate: &graph.FailureRateFit{Fit: graph.FitUnknown, Why: "too few"}}),
			"opened 4×, 38 fast-failed, on a failure rate (unsized)"},
		{"breaker per instance", breakerText(&graph.Breaker{Detected: true, OpenPeriods: 18, FastFailedCalls: 155, TripAfter: 3, TripRule: graph.TripConsecutive,
			Instances: &graph.BreakerInstances{WithBreaker: 2, Calling: 3}}),
			"opened 18×, 155 fast-failed on 2 of 3 instances"},
		{"breaker per instance, rule unknown", breakerText(&graph.Breaker{Detected: true, OpenPeriods: 9, FastFailedCalls: 60, TripAfter: 3, TripRule: graph.TripUnknown,
			Instances: &graph.BreakerInstances{WithBreaker: 2, Calling: 2, Unknown: []string{"trip rule: …"}}}),
			"opened 9×, 60 fast-failed on 2 of 2 instances, trip rule unknown (the instances disagree)"},
		{"breaker inside the retry loop", breakerText(&graph.Breaker{Detected: true, OpenPeriods: 5, FastFailedCalls: 5, TripRule: graph.TripUnknown,
			RetriedRefusals: &graph.RetriedRefusals{WaitedCalls: 5, RefusedTries: graph.TripUnknown}}),
			"opened 5×, 5 fast-failed, inside the caller's retry loop (refused tries and trip rule unknown)"},
		{"breaker unknown, one fast failure", breakerText(&graph.Breaker{Unknown: true, OpenPeriods: 1, FastFailedCalls: 1, LongestFailureRun: 3}),
			"unknown (1 fast failure)"},
		{"breaker unknown, two fast failures after twelve failed in a row", breakerText(&graph.Breaker{Unknown: true, OpenPeriods: 2, FastFailedCalls: 2, LongestFailureRun: 12}),
			"unknown (2 fast failures)"},
		{"breaker unknown inside the retry loop", breakerText(&graph.Breaker{Unknown: true, OpenPeriods: 1, FastFailedCalls: 1,
			RetriedRefusals: &graph.RetriedRefusals{WaitedCalls: 1, LateStartCalls: 4, RefusedTries: graph.TripUnknown}}),
			"unknown (1 fast failure, 1 after the retry loop's waits)"},
		{"breaker unknown and a proxy limit", breakerText(&graph.Breaker{Unknown: true, OpenPeriods: 1, FastFailedCalls: 2, ProxyShed: 3}),
			"unknown (2 fast failures); proxy limit shed 3 (UO)"},
		{"breaker on a failure rate and a proxy limit", breakerText(&graph.Breaker{Detected: true, OpenPeriods: 4, FastFailedCalls: 38, TripRule: graph.TripFailureRate, ProxyShed: 2}),
			"opened 4×, 38 fast-failed, on a failure rate; proxy limit shed 2 (UO)"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

// TestJitterText: the jitter column names the kind, says it varies where
// too few waits name none, lists the candidates the waits leave, and
// gives an additive width's range where late timers left it unknown, and
// a proportional fraction's where it is too wide to state one.
func TestJitterText(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name string
		b    graph.Backoff
		want string
	}{
		{"named", graph.Backoff{Jitter: graph.JitterFull}, "full"},
		{"present, too few to name", graph.Backoff{Jitter: graph.JitterUnknown, JitterPresent: &yes, Samples: 3}, "present (3 waits)"},
		{"absent, too few to name", graph.Backoff{Jitter: graph.JitterUnknown, JitterPresent: &no, Samples: 2}, "none (2 waits)"},
		{"between two kinds", graph.Backoff{Jitter: graph.JitterUnknown, JitterPresent: &yes, Samples: 54,
			JitterCandidates: []graph.JitterKind{graph.JitterDecorrelated, graph.JitterFull}}, "decorrelated or full (54 waits)"},
		{"between additive and proportional", graph.Backoff{Jitter: graph.JitterUnknown, JitterPresent: &yes, Samples: 16,
			JitterCandidates: []graph.JitterKind{graph.JitterAdditive, graph.JitterProportional}}, "additive or proportional (16 waits)"},
		{"unknown", graph.Backoff{Jitter: graph.JitterUnknown}, "unknown"},
		{"additive", graph.Backoff{Jitter: graph.JitterAdditive, JitterAdditiveMS: ptr(100.0), JitterAdditiveRangeMS: &[2]float64{60, 160}}, "additive +0–100ms"},
		{"proportional", graph.Backoff{Jitter: graph.JitterProportional, JitterFraction: ptr(0.2), JitterFractionRange: &[2]float64{0.07, 0.28}}, "proportional ±20%"},
		{"proportional, the fraction unknown", graph.Backoff{Jitter: graph.JitterProportional, JitterFractionRange: &[2]float64{0.11, 0.76}}, "proportional ±11–76%"},
		{"additive, the width unknown", graph.Backoff{Jitter: graph.JitterAdditive, JitterAdditiveRangeMS: &[2]float64{24.365, 248.169}}, "additive, width 24.4ms–248.2ms"},
	} {
		if got := jitterText(graph.Edge{Retries: true, Backoff: tc.b}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestBackoffCap: a growing backoff shows the cap its waits showed, or,
// where none showed, how high any cap is where that is above the base; a
// constant one neither. Growth from an offset shows the offset after
// the multiplier.
func TestBackoffCap(t *testing.T) {
	two, inc := 2.0, 20.0
	for _, tc := range []struct {
		name string
		b    graph.Backoff
		want string
	}{
		{"capped", graph.Backoff{Kind: "exponential", BaseMS: 20, Multiplier: &two, CapMS: ptr(160.0)}, "exponential 20ms ×2 cap 160ms"},
		{"no cap seen", graph.Backoff{Kind: "exponential", BaseMS: 25, Multiplier: &two, CapAboveMS: ptr(158.232)}, "exponential 25ms ×2 no cap up to 158.2ms"},
		{"neither", graph.Backoff{Kind: "exponential", BaseMS: 25, Multiplier: &two}, "exponential 25ms ×2"},
		{"no cap seen, up to a level below the base", graph.Backoff{Kind: "exponential", BaseMS: 20.6, Multiplier: &two, CapAboveMS: ptr(13.1)}, "exponential 20.6ms ×2"},
		{"linear, no cap seen", graph.Backoff{Kind: graph.BackoffLinear, BaseMS: 20, IncrementMS: &inc, CapAboveMS: ptr(73.3)}, "linear 20ms +20ms no cap up to 73.3ms"},
		{"constant", graph.Backoff{Kind: "constant", BaseMS: 25}, "constant 25ms"},
		{"growth from an offset", graph.Backoff{Kind: "exponential", BaseMS: 100.8, Multiplier: &two, MultiplierRange: &[2]float64{1.86, 2.17}, OffsetMS: ptr(-98.948), CapAboveMS: ptr(1479.9)},
			"exponential 100.8ms ×2 (1.86–2.17) offset -98.9ms no cap up to 1479.9ms"},
	} {
		if got := backoffText(graph.Edge{Retries: true, Backoff: tc.b}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestWaitsPerRetry: the fit's wait before each retry, with its range, is
// shown in Markdown and HTML for the edges whose schedule has more than
// one step, and nowhere else.
func TestWaitsPerRetry(t *testing.T) {
	steps := []graph.WaitStep{{Retry: 1, Waits: 29, MS: 20.6, RangeMS: [2]float64{18.5, 21.8}},
		{Retry: 2, Waits: 24, MS: 40.8, RangeMS: [2]float64{37, 43.7}}}
	top := &graph.Topology{Edges: []graph.Edge{
		{Caller: "api", Callee: "inventory", Operation: "GET /inventory/{sku}", Retries: true, MaxAttempts: 3,
			Backoff: graph.Backoff{Kind: "exponential", BaseMS: 20.6, Schedule: steps}},
		{Caller: "api", Callee: "db", Operation: "GET /one-step", Retries: true, MaxAttempts: 2,
			Backoff: graph.Backoff{Kind: "constant", BaseMS: 20.6, Schedule: steps[:1]}},
		{Caller: "edge", Callee: "api", Operation: "GET /not-retried", MaxAttempts: 1},
	}}
	var md strings.Builder
	if err := TopologyMarkdown(&md, top); err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := AuditHTML(&page, &AuditReport{Topology: top}); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"markdown": md.String(), "html": page.String()} {
		for _, want := range []string{"Waits per retry", "before retry 2", "40.8ms (37–43.7ms), 24 waits", "20.6ms (18.5–21.8ms), 29 waits"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q", name, want)
			}
		}
		if strings.Contains(out, "/one-step | 20.6ms") || strings.Count(out, "29 waits") != 1 {
			t.Errorf("%s: an edge with one step has a row of waits:\n%s", name, out)
		}
	}
	md.Reset()
	top.Edges = top.Edges[1:]
	if err := TopologyMarkdown(&md, top); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Waits per retry") {
		t.Error("a waits table without an edge of several steps")
	}
}

// TestPropagatedDeadlineShown: an edge whose attempts the caller's own
// deadline cut says so where its per-try timeout would be, rather than "-"
// or a timeout of its own (issue 11 item 6).
func TestPropagatedDeadlineShown(t *testing.T) {
	top := &graph.Topology{Edges: []graph.Edge{
		{Caller: "orders", Callee: "warehouse", Operation: "Count", Calls: 68, Attempts: 68, MaxAttempts: 1, DeadlineFromCaller: 16},
		{Caller: "gateway", Callee: "orders", Operation: "Get", Calls: 55, Attempts: 108, Retries: true, MaxAttempts: 4, PerTryTimeoutMS: ptrF(60.1)},
		{Caller: "gateway", Callee: "quotes", Operation: "Get", Calls: 20, Attempts: 40, Retries: true, MaxAttempts: 2, PerTryTimeoutUnknown: 20},
	}}
	var out strings.Builder
	if err := TopologyTable(&out, top); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"caller's deadline (16 cut)", "60.1ms", "unknown (20 timed out)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}

func ptrF(v float64) *float64 { return &v }

// TestRetriesUnknownShown: an edge whose retries the traces cannot decide
// (its calls start their own traces and some failed) reads "unknown" in
// every column that would otherwise claim no retries or a schedule, its
// max attempts as a lower bound; an edge that did not retry still reads
// "no" and "-", and one that did reads its policy.
func TestRetriesUnknownShown(t *testing.T) {
	unknown := graph.Edge{Operation: "GET /x", MaxAttempts: 1, RetriesUnknown: true,
		Backoff: graph.Backoff{Kind: graph.BackoffUnknown, Jitter: graph.JitterUnknown}}
	none := graph.Edge{Operation: "GET /x", MaxAttempts: 1, Backoff: graph.Backoff{Kind: graph.BackoffImmediate, Jitter: graph.JitterNone}}
	retried := graph.Edge{Operation: "GET /x", Retries: true, MaxAttempts: 3, MaxAttemptsExact: true,
		Backoff: graph.Backoff{Kind: "constant", BaseMS: 25, Jitter: graph.JitterNone}}
	for _, tc := range []struct {
		name              string
		e                 graph.Edge
		retries, max, bo  string
		jitter, linkLabel string
	}{
		{"unknown", unknown, "unknown", "≥1", "unknown", "unknown", "GET /x: retries unknown"},
		{"not retried", none, "no", "1", "-", "-", "GET /x: no retry"},
		{"retried", retried, "yes", "3", "constant 25ms", "none", "GET /x ×3 (const 25ms)"},
	} {
		got := [5]string{retriesText(tc.e), maxAttempts(tc.e), backoffText(tc.e), jitterText(tc.e), operationLabel(&tc.e)}
		if want := [5]string{tc.retries, tc.max, tc.bo, tc.jitter, tc.linkLabel}; got != want {
			t.Errorf("%s: got %q, want %q", tc.name, got, want)
		}
	}
}

// TestBreakerUnknownRendered: an edge whose breaker the traces leave
// unknown says so, with its count, in the breaker column of the text
// table, the Markdown and the HTML report, and is drawn with no breaker
// bar in the call graph; an edge with none seen shows "-".
func TestBreakerUnknownRendered(t *testing.T) {
	top := &graph.Topology{Schema: graph.Schema, Edges: []graph.Edge{
		{Caller: "api", Callee: "db", Operation: "query", Calls: 8, Attempts: 8, MaxAttempts: 1, Backoff: graph.Backoff{Kind: "none", Jitter: "none"},
			Breaker: &graph.Breaker{Unknown: true, FastFailedCalls: 2, OpenPeriods: 1, LongestFailureRun: 3, Evidence: "requests failed fast …"}},
		{Caller: "api", Callee: "cache", Operation: "get", Calls: 8, Attempts: 8, MaxAttempts: 1, Backoff: graph.Backoff{Kind: "none", Jitter: "none"}},
	}}
	table, md, html := renderTopology(t, top)
	for _, c := range []struct {
		format, out, row string
		want, not        []string
	}{
		{"table", table, "db", []string{"unknown (2 fast failures)"}, nil},
		{"table", table, "cache", nil, []string{"unknown"}},
		{"markdown", md, "db", []string{"| unknown (2 fast failures) |"}, nil},
		{"markdown", md, "cache", []string{"| -                         |"}, []string{"unknown"}},
		{"html", html, "", []string{"<td>unknown (2 fast failures)</td>"}, nil},
	} {
		got := c.out
		if c.row != "" {
			got = ""
			for _, l := range strings.Split(c.out, "\n") {
				if strings.Contains(l, c.row) {
					got = l
					break
				}
			}
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s, %s row: %q lacks %q", c.format, c.row, got, w)
			}
		}
		for _, w := range c.not {
			if got == "" || strings.Contains(got, w) {
				t.Errorf("%s, %s row: %q holds %q (or is missing)", c.format, c.row, got, w)
			}
		}
	}
	for _, l := range layoutCallGraph(newCallGraph(top)).Links {
		if l.Breaker != "" {
			t.Errorf("api → %s: breaker bar %q for an unknown breaker", l.To, l.Breaker)
		}
		var lines []string
		for _, t := range l.Labels {
			if t.Class != "" {
				lines = append(lines, t.Class+"|"+t.Text)
			}
		}
		want := map[string][]string{"db": {"breaker-unknown|breaker: unknown (2 fast failures)"}}[l.To]
		if !slices.Equal(lines, want) || (want != nil) != strings.Contains(l.Title, "circuit breaker unknown (2 fast failures)") {
			t.Errorf("api → %s: mechanism lines %q, title %q; want %q and the title to say so", l.To, lines, l.Title, want)
		}
	}
	if strings.Contains(html, `marker-start="url(#breaker)"`) {
		t.Error("html draws a breaker bar for an unknown breaker")
	}
}

// TestResultRetriesRendered: an edge whose caller retried OK answers on
// their result marks that status in the retried statuses of the text
// table, the Markdown and the HTML report ("200 (result predicate)"), and
// one whose hedged calls may be retries on the result says how many in
// its hedging cell; an edge with neither shows its statuses plain.
func TestResultRetriesRendered(t *testing.T) {
	top := &graph.Topology{Schema: graph.Schema, Edges: []graph.Edge{
		{Caller: "inventory", Callee: "db", Operation: "GET /db", Calls: 50, Attempts: 109, Retries: true, MaxAttempts: 4,
			Backoff: graph.Backoff{Kind: "constant", BaseMS: 10, Jitter: "none"}, RetriedStatus: []string{"200", "503"},
			ResultRetries: &graph.ResultRetries{Calls: 28, Retries: 49, Statuses: []string{"200"}}},
		{Caller: "front", Callee: "stock", Operation: "GET /stock", Calls: 10, Attempts: 14, MaxAttempts: 1,
			Backoff: graph.Backoff{Kind: "none", Jitter: "none"}, RetriedStatus: []string{},
			Hedging:       &graph.Hedging{Calls: 4, DelayMS: 20, MaxRequests: 2},
			ResultRetries: &graph.ResultRetries{Statuses: []string{}, Unknown: 3, TransitMS: 2.5}},
		{Caller: "api", Callee: "cache", Operation: "GET /c", Calls: 8, Attempts: 10, Retries: true, MaxAttempts: 2,
			Backoff: graph.Backoff{Kind: "constant", BaseMS: 10, Jitter: "none"}, RetriedStatus: []string{"503"}},
	}}
	table, md, html := renderTopology(t, top)
	row := func(out, key string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, key) {
				return l
			}
		}
		return ""
	}
	for _, c := range []struct {
		format, out, row string
		want, not        string
	}{
		{"table", table, "db", "200 (result predicate), 503", ""},
		{"table", table, "stock", "after 20ms, ≤2 (3 of 4 calls may be retries on the result)", ""},
		{"table", table, "cache", "503", "result predicate"},
		{"markdown", md, "db", "| 200 (result predicate), 503 |", ""},
		{"markdown", md, "stock", "3 of 4 calls may be retries on the result", ""},
		{"html", html, "", "<td>200 (result predicate), 503</td>", ""},
	} {
		got := c.out
		if c.row != "" {
			got = row(c.out, c.row)
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s, %s row: %q lacks %q", c.format, c.row, got, c.want)
		}
		if c.not != "" && strings.Contains(got, c.not) {
			t.Errorf("%s, %s row: %q holds %q", c.format, c.row, got, c.not)
		}
	}
}

// renderTopology is top as the text table, the Markdown and the HTML
// audit report render it.
func renderTopology(t *testing.T, top *graph.Topology) (table, md, html string) {
	t.Helper()
	var tb, mb bytes.Buffer
	if err := TopologyTable(&tb, top); err != nil {
		t.Fatal(err)
	}
	if err := TopologyMarkdown(&mb, top); err != nil {
		t.Fatal(err)
	}
	return tb.String(), mb.String(), renderAudit(t, &AuditReport{Topology: top})
}
