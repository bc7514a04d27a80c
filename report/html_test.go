package report

import (
	"bytes"
	"context"
	"html"
	"html/template"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/retryaudit/retryaudit/degrade"
	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/ingest"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/audit"
)

// An operation name that tries to break out of an attribute.
const evilImg = `"><img src=x onerror=alert(1)>`

// sampleOutage is the degradation of the samples audit.
const sampleOutage = "outage:svc=db,at=10s,for=5s"

var (
	sampleAuditOnce   sync.Once
	sampleAuditReport *AuditReport
	sampleAuditErr    error
)

// sampleAudit is an audit of the retry-everywhere sample built the way
// `retryaudit replay` builds its matrix: the inferred topology, its model
// under a few policies, one outage of db, 30 simulated seconds, compared
// with the observed policies. It is built once per test binary.
func sampleAudit(t testing.TB) *AuditReport {
	t.Helper()
	sampleAuditOnce.Do(func() { sampleAuditReport, sampleAuditErr = buildSampleAudit() })
	if sampleAuditErr != nil {
		t.Fatal(sampleAuditErr)
	}
	return sampleAuditReport
}

func buildSampleAudit() (*AuditReport, error) {
	files := []string{filepath.Join("..", "samples", "retry-everywhere", "traces.otlp.jsonl.gz")}
	set, err := ingest.ReadFiles(context.Background(), files, nil, ingest.Options{})
	if err != nil {
		return nil, err
	}
	top, err := graph.Infer(context.Background(), set)
	if err != nil {
		return nil, err
	}
	m, err := replay.FromTopology(top, replay.BuildOptions{Capacity: map[string]replay.Capacity{"db": {Workers: 4}}})
	if err != nil {
		return nil, err
	}
	cfg := audit.Config{Topology: top, Seeds: 1, Run: replay.RunConfig{Seed: 1, Duration: 30}}
	for _, p := range []string{"none", "observed", "everywhere", "edge-only+budget"} {
		pm, err := replay.ApplyPolicy(m, p)
		if err != nil {
			return nil, err
		}
		cfg.Variants = append(cfg.Variants, replay.Variant{Policy: p, Model: pm})
	}
	f, err := degrade.Parse(sampleOutage)
	if err != nil {
		return nil, err
	}
	cfg.Degradations = []replay.Degradation{{Name: f.String(), Faults: degrade.Schedule{f}}}
	res, err := audit.Run(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	a := NewAuditReport(top, m.Assumed, res)
	c, err := audit.Capacity(m, "db")
	if err != nil {
		return nil, err
	}
	a.Capacities = []Capacity{{Degradation: f.String(), Service: "db", AttemptsPerS: c}}
	return a, nil
}

// hostileAudit is an audit whose every string is hostile: the hostile
// topology with an operation that tries to open a tag from an attribute,
// hostile policies, a degradation whose spec names a hostile service, one
// named by something that is not a spec, hostile notes and a hostile
// recommendation.
func hostileAudit() *AuditReport {
	top := hostileTopology()
	top.Source = graph.Source{Traces: 3, Spans: 17, RootCalls: 3, WindowS: 1.5, RootRatePerS: 2}
	top.Edges = append(top.Edges, graph.Edge{Caller: evilPipe, Callee: evilScript, Operation: evilImg, Calls: 5, Attempts: 15,
		Retries: true, MaxAttempts: 4, MaxAttemptsExact: true,
		Backoff: graph.Backoff{Kind: graph.BackoffImmediate, Jitter: graph.JitterNone}, RetriedStatus: []string{evilImg}, CalleeP99MS: 7})
	top.Findings = append(top.Findings, graph.Finding{ID: evilImg, Severity: graph.Severity(evilScript), Location: evilImg, Message: evilImg})
	spec := "outage:svc=" + evilScript + ",at=2s,for=2s"
	series := func(k int) replay.Series {
		return replay.Series{
			Originals:  []int{10, 10, 10, 10, 10, 10},
			Retries:    []int{0, 0, 3 * k, 4 * k, k, 0},
			Goodput:    []int{10, 10, 10 - 3*k, 9 - 2*k, 10, 10},
			QueueDepth: []int{0, 1, 2 * k, 3 * k, k, 0},
			Wasted:     []float64{0, 0, 0.5 * float64(k), float64(k), 0.25, 0},
		}
	}
	var runs []replay.Result
	for _, deg := range []string{spec, evilImg} {
		for k, p := range []string{"none", evilScript, evilImg} {
			r := handRun(p, deg, float64(k))
			r.Series = series(k + 1)
			r.Attempts = []replay.EdgeAttempts{{Edge: evilPipe + " → " + evilScript, Callee: evilScript, PerSecond: []int{10, 10, 10 + 3*(k+1), 10 + 4*(k+1), 10, 10, 4}}}
			if deg == spec {
				r.Trigger = &replay.Window{AtS: 2, ForS: 2}
			}
			if p == "none" {
				r.Yield = nil
			}
			r.Metastable = k == 2
			runs = append(runs, r)
		}
	}
	crit := 0.42
	var verdicts []audit.Verdict
	for _, r := range runs {
		verdicts = append(verdicts, audit.Verdict{Degradation: r.Degradation, Service: evilScript, Policy: r.Policy, Seeds: 1,
			Availability: audit.Stat{Mean: r.Availability, Min: r.Availability, Max: r.Availability}, CriticalSearched: true,
			CriticalUtilization: &crit, Probes: []audit.Probe{{Utilization: 0.5, Availability: 0.3, Collapsed: true}}})
	}
	return &AuditReport{
		Schema:      AuditSchema,
		Seeds:       1,
		Topology:    top,
		Baseline:    "none",
		Notes:       []string{"capacity of " + evilScript + " assumed", evilImg},
		Runs:        runs,
		Capacities:  []Capacity{{Degradation: spec, Service: evilScript, AttemptsPerS: 16}},
		Verdicts:    verdicts,
		Utilization: []audit.ServiceUtilization{{Service: evilScript, Model: 0.2}},
		Recommendation: &audit.Recommendation{
			Policy: evilImg,
			Reason: "because " + evilImg,
			Changes: []audit.Change{
				{Caller: evilScript, Callee: evilQuote, Operation: evilImg, Action: audit.ActionStopRetrying, From: evilImg, To: "1 attempt", Why: "stop retrying " + evilImg},
				{Caller: evilPipe, Action: audit.ActionShedRetries, Why: "shed at " + evilScript},
			},
			Ranking:    []string{evilImg, evilScript},
			RuledOut:   []audit.RuledOut{{Policy: evilImg, Why: "metastable under " + evilScript}},
			Safety:     []audit.Adjustment{{Policy: evilScript, Caller: evilPipe, Callee: evilQuote, Operation: evilImg, Rule: audit.RuleNonIdempotent, Why: evilImg}},
			NotAdvised: []string{evilPipe + " → " + evilQuote + " " + evilImg + ": no advice on its retry policy"},
		},
	}
}

func renderAudit(t *testing.T, a *AuditReport) string {
	t.Helper()
	var buf bytes.Buffer
	if err := AuditHTML(&buf, a); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

const wantCSP = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`

var (
	// Text from span data is escaped, so every '<' in the output opens a
	// tag the template wrote.
	tagRE      = regexp.MustCompile(`<[^>]*>`)
	attrRE     = regexp.MustCompile(`\s([a-zA-Z_:][-a-zA-Z0-9_:.]*)="([^"]*)"`)
	polylineRE = regexp.MustCompile(`<polyline\b[^>]*>`)
	// bareTagRE is a tag with its quoted attributes taken out.
	bareTagRE = regexp.MustCompile(`^<(?:!DOCTYPE html|/?[a-zA-Z][a-zA-Z0-9]*)\s*/?>$`)
)

// templateAttrs are the attributes the template writes, besides data-*:
// none of them runs script or loads anything.
var templateAttrs = map[string]bool{
	"lang": true, "charset": true, "http-equiv": true, "content": true, "name": true, "href": true, "id": true,
	"class": true, "role": true, "aria-label": true, "width": true, "height": true, "viewBox": true,
	"refX": true, "refY": true, "markerUnits": true, "markerWidth": true, "markerHeight": true, "orient": true,
	"d": true, "fill": true, "marker-end": true, "marker-start": true, "x": true, "y": true, "rx": true,
	"x1": true, "y1": true, "x2": true, "y2": true, "points": true,
}

// attrs returns the attributes of a tag, their values unescaped.
func attrs(tag string) map[string]string {
	out := map[string]string{}
	for _, m := range attrRE.FindAllStringSubmatch(tag, -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

// checkOffline fails unless out is one self-contained file that cannot run
// script or fetch anything: the CSP meta first in the head, no script, no
// image, no event handler, no reference outside the document.
func checkOffline(t *testing.T, out string) {
	t.Helper()
	head, _, ok := strings.Cut(out, "</head>")
	if !ok || !strings.Contains(head, wantCSP) {
		t.Errorf("no CSP meta in the head; want %s", wantCSP)
	}
	if strings.Index(out, wantCSP) > strings.Index(out, "<style>") {
		t.Error("the CSP meta comes after the stylesheet")
	}
	lower := strings.ToLower(out)
	for _, bad := range []string{"<script", "<img", "<iframe", "<object", "<embed", "<link", "<base", "@import", "@font-face", "javascript:"} {
		if strings.Contains(lower, bad) {
			t.Errorf("output holds %q", bad)
		}
	}
	for _, tag := range tagRE.FindAllString(out, -1) {
		// Attribute values are quoted and hold no quote (html/template
		// writes &#34;): what is left without them is the tag's markup.
		bare := attrRE.ReplaceAllString(tag, "")
		if !bareTagRE.MatchString(bare) {
			t.Errorf("tag %s has markup besides its quoted attributes: %q", tag, bare)
		}
		for _, m := range attrRE.FindAllStringSubmatch(tag, -1) {
			name := m[1]
			if !templateAttrs[name] && !strings.HasPrefix(name, "data-") {
				t.Errorf("attribute %s in tag %s: not one the template writes", name, tag)
			}
			v := strings.ToLower(html.UnescapeString(m[2]))
			if (name == "href" && !strings.HasPrefix(v, "#")) || strings.Contains(v, "http://") || strings.Contains(v, "https://") {
				t.Errorf("attribute %s=%q in tag %s: only references within the page", name, v, tag)
			}
		}
	}
	for _, m := range regexp.MustCompile(`url\(([^)]*)\)`).FindAllStringSubmatch(out, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("url(%s): only references within the page", m[1])
		}
	}
	if strings.Contains(lower, "<style") && strings.Count(lower, "<style") != 1 {
		t.Error("more than one stylesheet")
	}
}

// seriesKeys are the series every run plots, in order.
var seriesKeys = []string{"originals", "retries", "goodput", "queue_depth", "wasted_s"}

// checkSeries fails unless every run of the report has one polyline per
// series, found by its data attributes, with the points it says it has,
// and, under a degradation whose dependency's capacity the report holds
// and whose runs sent it attempts, one of the attempts to it, unless the
// legend says the stacked line is that series (then none).
func checkSeries(t *testing.T, out string, rep *ReplayReport) {
	t.Helper()
	type key struct{ series, policy, degradation string }
	found := map[key]int{}
	replayLines := 0
	for _, tag := range polylineRE.FindAllString(out, -1) {
		a := attrs(tag)
		k := key{a["data-series"], a["data-policy"], a["data-degradation"]}
		if k.series != "recommended" && k.series != "baseline" {
			replayLines++
		}
		found[k]++
		points := strings.Fields(a["points"])
		if n, err := strconv.Atoi(a["data-points"]); err != nil || n != len(points) || n == 0 {
			t.Errorf("%+v: data-points %q, %d points", k, a["data-points"], len(points))
		}
		if len(points) > maxChartPoints {
			t.Errorf("%+v: %d points, more than %d", k, len(points), maxChartPoints)
		}
		for _, p := range points {
			x, y, ok := strings.Cut(p, ",")
			_, errX := strconv.ParseFloat(x, 64)
			_, errY := strconv.ParseFloat(y, 64)
			if !ok || errX != nil || errY != nil {
				t.Errorf("%+v: point %q is not x,y", k, p)
				break
			}
		}
	}
	want := 0
	attempted := map[string]bool{} // degradations whose runs sent their dependency attempts
	for _, r := range rep.Runs {
		if c := capacityOf(rep.Capacities, r.Degradation); c != nil {
			for _, a := range r.Attempts {
				attempted[r.Degradation] = attempted[r.Degradation] || a.Callee == c.Service && slices.ContainsFunc(a.PerSecond, func(n int) bool { return n > 0 })
			}
		}
	}
	for _, r := range rep.Runs {
		keys := seriesKeys
		if attempted[r.Degradation] && !strings.Contains(html.UnescapeString(out),
			"the offered originals + retries are the attempts to "+display(capacityOf(rep.Capacities, r.Degradation).Service)) {
			keys = append(slices.Clone(seriesKeys), "dependency")
		}
		for _, s := range keys {
			want++
			k := key{s, display(r.Policy), display(r.Degradation)}
			if found[k] != 1 {
				t.Errorf("%d polylines for %+v, want 1", found[k], k)
			}
		}
	}
	if got := replayLines; got != want {
		t.Errorf("%d polylines, want %d", got, want)
	}
}

func TestAuditHTMLSamples(t *testing.T) {
	a := sampleAudit(t)
	out := renderAudit(t, a)
	checkOffline(t, out)
	checkSeries(t, out, a.replayReport())

	for _, want := range []string{
		"worst-case amplification: 27x on edge → api → inventory → db",
		"Inferred from ",
		// The call graph: every service a box, the retrying links red and
		// labelled with the attempts they allow.
		`<g class="node" data-service="db">`,
		`<g class="link retry" data-from="inventory" data-to="db" data-attempts="×3">`,
		`<g class="link" data-from="api" data-to="pricing">`,
		// Findings, edges, the recommendation, the comparison.
		`<span class="fid">multi-layer-retry</span>`,
		"<th>retried statuses</th>",
		`Run <strong class="mono">` + strings.ReplaceAll(template.HTMLEscapeString(a.Recommendation.Policy), "+", "&#43;") + `</strong>`,
		// The capacity plan, its charts.
		`<section id="capacity-plan">`,
		`<th class="r">critical utilization</th>`,
		`aria-label="critical utilization per policy per degradation"`,
		`<g data-policy="observed" data-degradation="outage:svc=db,at=10s,for=5s,mode=error">`,
		"<h3 id=\"degradation-1\">degradation: outage:svc=db,at=10s,for=5s,mode=error</h3>",
		"shaded: the trigger, 10 s to 15 s",
		`<rect class="trigger"`,
		// db's capacity, far above what it is offered, is not drawn.
		"db capacity: ",
		"off the chart: more than 4× the most offered",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the report", want)
		}
	}
	// The baseline is the report's: observed comes first.
	replayPart := out[strings.Index(out, `<section id="replay">`):]
	if i, j := strings.Index(replayPart, `data-policy="observed"`), strings.Index(replayPart, `data-policy="none"`); i < 0 || j < 0 || i > j {
		t.Error("the baseline observed is not charted first")
	}
	if !regexp.MustCompile(`<thead><tr><th></th><th class="r">observed</th><th class="r">none</th><th class="r">vs observed</th>`).MatchString(out) {
		t.Error("the comparison table does not start with the baseline observed")
	}
}

func TestAuditHTMLHostile(t *testing.T) {
	a := hostileAudit()
	out := renderAudit(t, a)
	checkOffline(t, out)
	checkSeries(t, out, a.replayReport())
	checkGolden(t, filepath.Join("testdata", "audit-hostile.html.golden"), []byte(out))

	// Every hostile name is shown, escaped, as text.
	for _, name := range []string{evilScript, evilImg, evilQuote, evilPipe} {
		esc := htmlText(name)
		if !strings.Contains(out, esc) {
			t.Errorf("%q is not shown escaped (%q)", name, esc)
		}
	}
	// The raw strings appear nowhere.
	for _, raw := range []string{"<script>alert", "onerror=alert(1)>", `"><img`} {
		if strings.Contains(out, raw) {
			t.Errorf("unescaped %q in the output", raw)
		}
	}
	// Every onerror= is escaped text or inside a quoted attribute value,
	// never markup.
	for _, tag := range tagRE.FindAllString(out, -1) {
		if strings.Contains(attrRE.ReplaceAllString(tag, ""), "onerror") {
			t.Errorf("onerror in the markup of %s", tag)
		}
	}
	// The runs of the hostile spec carry their trigger window: shaded in
	// each of their 3 policies' 3 panels; the other degradation's runs
	// carry none: not shaded.
	if !strings.Contains(out, "shaded: the trigger, 2 s to 4 s") {
		t.Error("no shaded trigger for the hostile spec")
	}
	if n := strings.Count(out, `<rect class="trigger"`); n != 9 {
		t.Errorf("%d shaded panels, want 9", n)
	}
	if !strings.Contains(out, `<span class="badge">METASTABLE</span>`) {
		t.Error("no METASTABLE badge")
	}
	// The hostile spec's dependency has a capacity: a line in each of its
	// 3 policies' rate panels, named escaped; the other degradation's has
	// none.
	if n := strings.Count(out, `<line class="capacity" data-capacity="`+htmlText(evilScript)+` capacity 16/s"`); n != 3 {
		t.Errorf("%d capacity lines, want 3", n)
	}
	if !strings.Contains(out, htmlText(evilScript)+" capacity: 16 attempts/s (every worker busy, no fault)") {
		t.Error("no capacity in the legend")
	}
}

// htmlText is s as html/template writes text: the five
// characters of HTML plus '+'.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}

// TestAuditHTMLPartial renders audits with parts missing, as a saved audit
// read back may be.
func TestAuditHTMLPartial(t *testing.T) {
	for name, a := range map[string]*AuditReport{
		"nothing":        {},
		"topology only":  {Topology: hostileTopology()},
		"empty topology": {Topology: &graph.Topology{}, Recommendation: &audit.Recommendation{Reason: "every candidate went metastable"}},
	} {
		t.Run(name, func(t *testing.T) {
			out := renderAudit(t, a)
			checkOffline(t, out)
			if !strings.HasSuffix(strings.TrimSpace(out), "</html>") {
				t.Error("the document is not complete")
			}
		})
	}
	out := renderAudit(t, &AuditReport{Recommendation: &audit.Recommendation{Reason: "every candidate went metastable"}})
	if !strings.Contains(out, "No policy to recommend: every candidate went metastable") {
		t.Error("an empty recommendation does not say so")
	}
}

func TestAuditHTMLDownsample(t *testing.T) {
	const n = 1501
	s := replay.Series{Originals: make([]int, n), Retries: make([]int, n), Goodput: make([]int, n),
		QueueDepth: make([]int, n), Wasted: make([]float64, n)}
	for i := range n {
		s.Originals[i], s.Goodput[i], s.QueueDepth[i], s.Wasted[i] = 10, i%7, i%3, float64(i%5)/4
	}
	r := handRun("observed", "latency:svc=db,at=100s,for=0s,add=20ms", 1)
	r.Series = s
	r.Trigger = &replay.Window{AtS: 100}
	a := &AuditReport{Baseline: "observed", Runs: []replay.Result{r}}
	rep := a.replayReport()
	out := renderAudit(t, a)
	checkSeries(t, out, rep)
	if !strings.Contains(out, "shaded: the trigger, from 100 s to the end of the run") {
		t.Error("a trigger that lasts to the end is not described")
	}

	xs, ys := downsample([]float64{1, 2, 3, 4, 5}, 0.5)
	if !slices.Equal(xs, []float64{0.5, 1.5, 2.5, 3.5, 4.5}) || !slices.Equal(ys, []float64{1, 2, 3, 4, 5}) {
		t.Errorf("short series changed: %v %v", xs, ys)
	}
	long := make([]float64, 1500)
	for i := range long {
		long[i] = float64(i)
	}
	xs, ys = downsample(long, 0.5)
	if len(xs) != 500 || xs[0] != 1.5 || ys[0] != 1 || ys[499] != 1498 {
		t.Errorf("1500 points: %d, first (%v, %v), last %v", len(xs), xs[0], ys[0], ys[len(ys)-1])
	}
	if xs, _ := downsample(make([]float64, 1201), 0); len(xs) > maxChartPoints {
		t.Errorf("1201 points downsampled to %d", len(xs))
	}
}

// TestTriggerFromRuns: the shaded band is the runs' own trigger window,
// whatever the degradation is named; runs without one are not shaded.
func TestTriggerFromRuns(t *testing.T) {
	r := handRun("observed", evilImg, 1)
	r.Series = replay.Series{Originals: make([]int, 30), Retries: make([]int, 30), Goodput: make([]int, 30), QueueDepth: make([]int, 30), Wasted: make([]float64, 30)}
	plain := renderAudit(t, &AuditReport{Baseline: "observed", Runs: []replay.Result{r}})
	if strings.Contains(plain, `<rect class="trigger"`) {
		t.Error("a run without a trigger window is shaded")
	}
	r.Trigger = &replay.Window{AtS: 10, ForS: 5}
	shaded := renderAudit(t, &AuditReport{Baseline: "observed", Runs: []replay.Result{r}})
	if !strings.Contains(shaded, "shaded: the trigger, 10 s to 15 s") || !strings.Contains(shaded, `<rect class="trigger"`) {
		t.Error("the run's trigger window is not shaded")
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range [][2]float64{{0, 1}, {-3, 1}, {0.3, 0.5}, {1, 1}, {1.01, 2}, {2.2, 2.5}, {3, 5}, {7, 10}, {366, 500}, {1000, 1000}} {
		if got := niceCeil(c[0]); math.Abs(got-c[1]) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", c[0], got, c[1])
		}
	}
}

func TestAuditHTMLDeterministic(t *testing.T) {
	a := sampleAudit(t)
	first, second := renderAudit(t, a), renderAudit(t, a)
	if first != second {
		t.Error("two renderings differ")
	}
}

func TestAuditHTMLWriteError(t *testing.T) {
	if err := AuditHTML(failingWriter{}, hostileAudit()); err == nil {
		t.Error("no error from a failing writer")
	}
}

// TestCallGraphLayout lays out a graph with a cycle, a self-call, a link
// that skips a layer and a service nobody calls or is called by: every
// service gets its own box, links that close a cycle go back under the
// boxes, the others left to right.
func TestCallGraphLayout(t *testing.T) {
	e := func(from, to string, retries bool) graph.Edge {
		return graph.Edge{Caller: from, Callee: to, Operation: "op", Calls: 4, Attempts: 6, Retries: retries, MaxAttempts: 3,
			MaxAttemptsExact: true, Backoff: graph.Backoff{Kind: "constant", BaseMS: 10}}
	}
	top := &graph.Topology{
		Services: []graph.Service{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d", Virtual: true}, {Name: "lonely"}},
		Edges:    []graph.Edge{e("a", "b", true), e("b", "c", false), e("c", "b", true), e("c", "c", true), e("a", "d", false), e("b", "d", true)},
	}
	g := layoutCallGraph(newCallGraph(top))
	if len(g.Nodes) != 5 || len(g.Links) != 6 {
		t.Fatalf("%d nodes, %d links", len(g.Nodes), len(g.Links))
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	type box struct{ x, y, w, h float64 }
	boxes := map[string]box{}
	for _, n := range g.Nodes {
		b := box{num(n.X), num(n.Y), num(n.W), num(n.H)}
		for name, o := range boxes {
			if b.x < o.x+o.w && o.x < b.x+b.w && b.y < o.y+o.h && o.y < b.y+b.h {
				t.Errorf("boxes of %s and %s overlap", n.Name, name)
			}
		}
		if b.x+b.w > num(g.Width) || b.y+b.h > num(g.Height) {
			t.Errorf("box of %s outside the drawing", n.Name)
		}
		boxes[n.Name] = b
	}
	if !g.Nodes[3].Virtual {
		t.Error("d is not drawn virtual")
	}
	// a, then b, then c and d in one layer; the chain a → b → c is level.
	mid := func(b box) float64 { return b.x + b.w/2 }
	if !(mid(boxes["a"]) < mid(boxes["b"]) && mid(boxes["b"]) < mid(boxes["c"]) && mid(boxes["c"]) == mid(boxes["d"])) {
		t.Errorf("layers out of order: %+v", boxes)
	}
	if boxes["a"].y != boxes["b"].y || boxes["b"].y != boxes["c"].y {
		t.Errorf("the chain a → b → c is not level: %+v", boxes)
	}
	retrying := 0
	for _, l := range g.Links {
		if l.Retry {
			retrying++
			if l.Attempt != "×3" || len(l.Labels) != 2 || l.Labels[1].Text != "6 attempts / 4 calls = 1.5×" {
				t.Errorf("%s → %s: labels %+v", l.From, l.To, l.Labels)
			}
		}
		back := l.From == "c" && (l.To == "b" || l.To == "c")
		// A path's first point is its start; forward links start at the
		// caller's right side, links back at its bottom or right.
		start := strings.Fields(strings.TrimPrefix(l.Path, "M"))[0]
		sx, sy, _ := strings.Cut(start, ",")
		from := boxes[l.From]
		switch {
		case back && l.To == "b" && num(sy) != from.y+from.h:
			t.Errorf("c → b does not leave from under c: %s", l.Path)
		case !back && num(sx) != from.x+from.w:
			t.Errorf("%s → %s does not leave from the right of %s: %s", l.From, l.To, l.From, l.Path)
		}
	}
	if retrying != 4 {
		t.Errorf("%d retrying links, want 4", retrying)
	}
}

// TestCallGraphMechanisms: GET and POST on one link get a line each, and
// the hedging and the breaker the traces show are drawn on their link:
// lines of their own, a dashed overdraw for the hedge, a bar at the
// caller's end for the breaker; a link with neither has none.
func TestCallGraphMechanisms(t *testing.T) {
	top := &graph.Topology{Edges: []graph.Edge{
		{Caller: "api", Callee: "search", Operation: "GET /q", Calls: 10, Attempts: 13,
			Hedging: &graph.Hedging{Calls: 3, DelayMS: 40, MaxRequests: 2}},
		{Caller: "api", Callee: "search", Operation: "POST /index", Calls: 5, Attempts: 15, Retries: true, MaxAttempts: 3, MaxAttemptsExact: true,
			Backoff: graph.Backoff{Kind: graph.BackoffConstant, BaseMS: 30}},
		{Caller: "api", Callee: "db", Operation: "query", Calls: 8, Attempts: 8,
			Breaker: &graph.Breaker{Detected: true, OpenPeriods: 2, FastFailedCalls: 9}},
		{Caller: "api", Callee: "cache", Operation: "get", Calls: 8, Attempts: 8, Breaker: &graph.Breaker{LongestFailureRun: 7}},
	}}
	g := layoutCallGraph(newCallGraph(top))
	links := map[string]svgLink{}
	for _, l := range g.Links {
		links[l.To] = l
	}
	texts := func(l svgLink) []string {
		var out []string
		for _, t := range l.Labels {
			out = append(out, t.Class+"|"+t.Text)
		}
		return out
	}
	for _, c := range []struct {
		to             string
		hedge, breaker string
		labels         []string
	}{
		{"search", "after 40ms, ≤2", "", []string{"|GET /q: no retry", "|POST /index ×3 (const 30ms)", "hedge|GET /q: hedge after 40ms, ≤2 requests"}},
		{"db", "", "opened 2×, 9 fast-failed", []string{"|8 calls", "breaker|breaker: opened 2×, 9 fast-failed"}},
		{"cache", "", "", []string{"|8 calls"}},
	} {
		l := links[c.to]
		if l.Hedge != c.hedge || l.Breaker != c.breaker || !slices.Equal(texts(l), c.labels) {
			t.Errorf("api → %s: hedge %q, breaker %q, labels %q; want %q, %q, %q", c.to, l.Hedge, l.Breaker, texts(l), c.hedge, c.breaker, c.labels)
		}
	}
	out := renderAudit(t, &AuditReport{Topology: top})
	checkOffline(t, out)
	for want, n := range map[string]int{
		`data-hedge="after 40ms, ≤2"`:             1,
		`data-breaker="opened 2×, 9 fast-failed"`: 1,
		`marker-start="url(#breaker)"`:            1,
		`<path class="hedge" d=`:                  1,
		`hedge">GET /q: hedge after 40ms`:         1,
		`breaker">breaker: opened 2×`:             1,
	} {
		if got := strings.Count(out, want); got != n {
			t.Errorf("%d of %s, want %d", got, want, n)
		}
	}
}
