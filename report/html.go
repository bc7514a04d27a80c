package report

import (
	"bytes"
	"embed"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/audit"
)

// The HTML report is one offline file: the template below, its styles
// inline, the call graph and every chart inline SVG drawn here, no script,
// and a Content-Security-Policy that forbids any fetch. html/template
// escapes every string from span data in text, attributes and SVG alike;
// the only markup built in Go is SVG geometry made of numbers.

//go:embed html/*.html.tmpl
var htmlFiles embed.FS

// The pages share the partials: the head, tables and the replay section
// with its charts.
var (
	partials       = template.Must(template.ParseFS(htmlFiles, "html/partials.html.tmpl"))
	auditTemplate  = page("audit.html.tmpl")
	replayTemplate = page("replay.html.tmpl")
)

// page is a page template over its own copy of the partials.
func page(name string) *template.Template {
	return template.Must(template.Must(partials.Clone()).ParseFS(htmlFiles, "html/"+name)).Lookup(name)
}

// maxChartPoints bounds the points of one plotted series: longer series are
// averaged over consecutive buckets of seconds.
const maxChartPoints = 600

// AuditHTML renders an audit as one self-contained HTML file that makes no
// network request: the worst-case amplification and what the traces held;
// the call graph as inline SVG, services as boxes laid out in layers by
// depth from the roots, retrying edges red and labelled with the attempts
// they allow and the amplification seen, virtual services dashed; the
// findings and the topology's tables; the recommendation; and per
// degradation the comparison table of ReplayTable and, per policy, small
// charts of the per-second series (offered originals and retries, goodput,
// queue depth, wasted work) with the trigger window shaded. Each plotted
// series is a polyline with data-series, data-policy and data-degradation
// attributes. Series longer than 600 seconds are averaged down to at most
// 600 points.
func AuditHTML(w io.Writer, a *AuditReport) error {
	var buf bytes.Buffer
	if err := auditTemplate.Execute(&buf, newAuditPage(a, optionsOf(w).TraceURL)); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// ReplayHTML renders a replay, a preset's or a topology's, as one
// self-contained HTML file that makes no network request: per degradation
// the comparison tables of ReplayTable and, per policy, the charts of
// AuditHTML's replay section (the same template), then the notes.
func ReplayHTML(w io.Writer, rep *ReplayReport) error {
	if rep == nil {
		rep = &ReplayReport{}
	}
	var policies, degradations []string
	for _, r := range rep.Runs {
		if !slices.Contains(policies, r.Policy) {
			policies = append(policies, r.Policy)
		}
		if !slices.Contains(degradations, r.Degradation) {
			degradations = append(degradations, r.Degradation)
		}
	}
	counted := strconv.Itoa(len(policies)) + " policies"
	if len(policies) == 1 {
		counted = "1 policy"
	}
	page := replayPage{Headline: counted + " under " + plural(len(degradations), "degradation"), Replay: newHTMLReplay(rep)}
	var buf bytes.Buffer
	if err := replayTemplate.Execute(&buf, page); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// replayPage is what the replay page shows.
type replayPage struct {
	Headline string
	Replay   *htmlReplay
}

// auditPage is what the template shows, all of it display text and
// preformatted SVG coordinates.
type auditPage struct {
	Headline string
	Source   string
	Graph    *svgGraph
	Findings []htmlFinding
	Warnings []string
	Edges    htmlTable
	Waits    htmlTable
	WaitNote string
	Paths    htmlTable

	Calibration    *htmlCalibration
	Plan           *htmlPlan
	Recommendation *htmlRecommendation

	Replay *htmlReplay
}

// htmlCalibration is the calibration section: whether the model
// reproduces the traces, the tables, and the misses.
type htmlCalibration struct {
	Verdict     string
	Pass        bool
	Root, Edges htmlTable
	Misses      []string
}

type htmlFinding struct {
	Severity, Class, ID, Text string
	Links                     []htmlLink // example traces, with --trace-url
}

// htmlLink is a link to an example trace.
type htmlLink struct{ Text, URL string }

// htmlExampleLinks links example traces through a trace-URL template.
func htmlExampleLinks(tmpl string, examples []graph.Example) []htmlLink {
	var out []htmlLink
	for _, ex := range examples {
		if u := traceLink(tmpl, ex.TraceID, ex.SpanIDs); u != "" {
			out = append(out, htmlLink{Text: shortID(ex.TraceID), URL: u})
		}
	}
	return out
}

// htmlTable is a grid ready for the template: a header and rows of cells.
type htmlTable struct {
	Header []htmlCell
	Rows   [][]htmlCell
}

type htmlCell struct {
	Text  string
	Right bool   // right-aligned (figures)
	Class string // "bad" for a cell to draw attention to, or ""
	Links []htmlLink
}

func newHTMLTable(g grid) htmlTable {
	right := func(i int) bool { return i < len(g.align) && g.align[i] == tw.AlignRight }
	t := htmlTable{Header: make([]htmlCell, len(g.header))}
	for i, h := range g.header {
		t.Header[i] = htmlCell{Text: h, Right: right(i)}
	}
	for _, r := range g.rows {
		row := make([]htmlCell, len(r))
		for i, c := range r {
			row[i] = htmlCell{Text: c, Right: right(i)}
			if c == "METASTABLE" {
				row[i].Class = "bad"
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

type htmlRecommendation struct {
	Policy, Reason, Ranking string
	Changes                 htmlTable
	Rejected, Safety        []htmlRejection
	// IfIdempotent is the advice if operations of unknown idempotency
	// are idempotent, with its changes; "" when there is none.
	IfIdempotent        string
	IfIdempotentChanges htmlTable
	// WorstCase says how the recommendation changes the most attempts
	// one request may send along a path; "" when it does not.
	WorstCase string
	// NotAdvised are the edges whose retry policy the audit gives no
	// advice on, with why (audit.Recommendation.NotAdvised).
	NotAdvised []string
}

type htmlRejection struct{ Policy, Why string }

type htmlReplay struct {
	Header []string
	Notes  []string
	Blocks []htmlBlock
}

// htmlBlock is one degradation: its comparison tables and its charts.
type htmlBlock struct {
	ID      string // anchor
	Title   string
	Tables  []htmlTable
	Trigger string // what the shaded band is, or why there is none
	// Dependency is the legend of the attempts offered to the degraded
	// dependency and its capacity line, or "" when neither is drawn.
	Dependency string
	Capacity   string
	Charts     []policyChart
}

// policyChart is one policy's small multiple under one degradation.
type policyChart struct {
	Policy     string
	Summary    []string // availability, goodput, recovery
	Metastable bool
	Panels     []chartPanel
}

func newAuditPage(a *AuditReport, traceURL string) auditPage {
	if a == nil {
		a = &AuditReport{}
	}
	t := a.Topology
	if t == nil {
		t = &graph.Topology{}
	}
	tv := newTopologyView(t)
	p := auditPage{Headline: tv.headline, Warnings: tv.warnings, Edges: newHTMLTable(tv.edges), Waits: newHTMLTable(tv.waits), WaitNote: waitsNote, Paths: newHTMLTable(tv.paths)}
	if traceURL != "" && len(t.Edges) > 0 {
		// A column of each edge's example traces, as links.
		p.Edges.Header = append(p.Edges.Header, htmlCell{Text: "example traces"})
		for i := range p.Edges.Rows {
			p.Edges.Rows[i] = append(p.Edges.Rows[i], htmlCell{Links: htmlExampleLinks(traceURL, t.Edges[i].Examples)})
		}
	}
	if s := t.Source; s.Traces > 0 {
		p.Source = "Inferred from " + plural(s.Traces, "trace") + " (" + plural(s.Spans, "span") + ", " +
			plural(s.RootCalls, "root request") + " over " + decimal(s.WindowS, 1) + " s, " +
			decimal(s.RootRatePerS, 1) + " root requests/s)."
	}
	for i, f := range tv.findings {
		class := "other"
		switch t.Findings[i].Severity {
		case graph.SeverityHigh, graph.SeverityMedium, graph.SeverityLow:
			class = string(t.Findings[i].Severity)
		}
		p.Findings = append(p.Findings, htmlFinding{Severity: f.severity, Class: class, ID: f.id, Text: f.text,
			Links: htmlExampleLinks(traceURL, f.examples)})
	}
	if len(t.Edges) > 0 || len(t.Services) > 0 {
		p.Graph = layoutCallGraph(newCallGraph(t))
	}
	p.Plan = newHTMLPlan(a)
	if c := a.Calibration; c != nil {
		v := newCalibrationView(c)
		p.Calibration = &htmlCalibration{Verdict: v.verdict, Pass: c.Pass, Root: newHTMLTable(v.root), Edges: newHTMLTable(v.edges), Misses: v.misses}
	}
	if r := a.Recommendation; r != nil {
		p.Recommendation = newHTMLRecommendation(r)
	}
	if len(a.Runs) > 0 {
		p.Replay = newHTMLReplay(a.replayReport())
	}
	return p
}

func newHTMLRecommendation(r *audit.Recommendation) *htmlRecommendation {
	h := &htmlRecommendation{Reason: printable(r.Reason)}
	if r.Policy != "" {
		h.Policy = display(r.Policy)
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return display(s)
	}
	changeTable := func(cs []audit.Change) htmlTable {
		g := grid{header: []string{"caller", "callee", "operation", "action", "from", "to", "why"}}
		for _, c := range cs {
			g.rows = append(g.rows, []string{dash(c.Caller), dash(c.Callee), dash(c.Operation), dash(c.Action), dash(c.From), dash(c.To), printable(c.Why)})
		}
		return newHTMLTable(g)
	}
	h.Changes = changeTable(r.Changes)
	for _, n := range r.NotAdvised {
		h.NotAdvised = append(h.NotAdvised, printable(n))
	}
	if w := r.WorstCase; w != nil {
		h.WorstCase = printable(w.Sentence())
	}
	if c := r.IfIdempotent; c != nil {
		h.IfIdempotent, h.IfIdempotentChanges = printable(c.Sentence()), changeTable(c.Changes)
	}
	for _, x := range r.RuledOut {
		h.Rejected = append(h.Rejected, htmlRejection{Policy: display(x.Policy), Why: printable(x.Why)})
	}
	for _, x := range r.Safety {
		h.Safety = append(h.Safety, htmlRejection{Policy: display(x.Policy), Why: printable(x.Caller + " → " + x.Callee + " " + x.Operation + ": " + x.Why)})
	}
	for i, p := range r.Ranking {
		if i > 0 {
			h.Ranking += " > "
		}
		h.Ranking += display(p)
	}
	return h
}

func newHTMLReplay(rep *ReplayReport) *htmlReplay {
	v := newReplayView(rep)
	h := &htmlReplay{Header: v.header, Notes: v.notes}
	for i, b := range v.blocks {
		hb := htmlBlock{ID: "degradation-" + strconv.Itoa(i+1), Title: b.title}
		for _, g := range b.tables {
			hb.Tables = append(hb.Tables, newHTMLTable(g))
		}
		hb.Trigger, hb.Dependency, hb.Capacity, hb.Charts = blockCharts(b, capacityOf(rep.Capacities, b.degradation))
		h.Blocks = append(h.Blocks, hb)
	}
	return h
}

// Chart geometry, in pixels: every panel is chartW wide; the rates panel
// is rateH high and the queue and waste panels smallH.
const (
	chartW                          = 330
	rateH, smallH                   = 150, 78
	padLeft, padRight, padTop, padB = 46, 10, 20, 20
)

// The series a chart plots, in the order their polylines are drawn.
type seriesSpec struct {
	key, label string
	values     func(*replay.Result) []float64
	// at is where a value of second i is plotted: the middle of the second
	// for counts over it, its end for a level sampled then.
	at float64
}

func ints(xs []int) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

var (
	rateSeries = []seriesSpec{
		{"originals", "offered originals/s", func(r *replay.Result) []float64 { return ints(r.Series.Originals) }, 0.5},
		// Retries stacked on the originals: the line is all that was offered.
		{"retries", "offered originals + retries/s", func(r *replay.Result) []float64 {
			v := ints(r.Series.Originals)
			for i := range min(len(v), len(r.Series.Retries)) {
				v[i] += float64(r.Series.Retries[i])
			}
			return v
		}, 0.5},
		{"goodput", "goodput/s", func(r *replay.Result) []float64 { return ints(r.Series.Goodput) }, 0.5},
	}
	queueSeries = []seriesSpec{
		{"queue_depth", "queue depth", func(r *replay.Result) []float64 { return ints(r.Series.QueueDepth) }, 1},
	}
	wasteSeries = []seriesSpec{
		{"wasted_s", "wasted work (service-s/s)", func(r *replay.Result) []float64 { return r.Series.Wasted }, 0.5},
	}
)

// dependencySeries is the attempts offered per second to service svc, by
// every caller, originals, retries and hedges: the series in the unit of
// its capacity line.
func dependencySeries(svc string) seriesSpec {
	return seriesSpec{"dependency", "attempts offered to " + display(svc) + "/s", func(r *replay.Result) []float64 {
		var v []float64
		for _, a := range r.Attempts {
			if a.Callee != svc {
				continue
			}
			for i, n := range a.PerSecond {
				if i >= len(v) {
					v = append(v, make([]float64, i+1-len(v))...)
				}
				v[i] += float64(n)
			}
		}
		return v
	}, 0.5}
}

// sameSeries reports whether two series are equal over the first seconds
// in every run.
func sameSeries(runs []*replay.Result, a, b seriesSpec, seconds int) bool {
	for _, r := range runs {
		va, vb := a.values(r), b.values(r)
		va, vb = va[:min(len(va), seconds)], vb[:min(len(vb), seconds)]
		if !slices.Equal(va, vb) {
			return false
		}
	}
	return true
}

// offChart is how far above the most offered a capacity may be and still
// be drawn: a line higher up would squash the series it is compared with.
const offChart = 4

// blockCharts draws one degradation's small multiples: per policy, in the
// order of the comparison table, a rates panel, a queue-depth panel and a
// wasted-work panel, with y scales shared by every policy so that the
// panels compare at a glance. With the capacity of the degraded
// dependency, and the runs' attempts to it, the rates panel also plots
// those attempts and draws the capacity as a labelled line, unless it is
// more than offChart times the most offered (then the legend says so).
func blockCharts(b replayBlock, capacity *Capacity) (trigger, dependency, capLegend string, charts []policyChart) {
	seconds := 0
	for _, r := range b.runs {
		seconds = max(seconds, len(r.Series.Goodput), len(r.Series.Originals), len(r.Series.QueueDepth))
	}
	// The last bucket holds the drain after arrivals end: plotted as a
	// second of its own it draws a drop to zero that no service made.
	seconds = max(seconds-1, 1)
	// The runs carry their trigger window.
	start, end, ok := 0.0, 0.0, false
	for _, r := range b.runs {
		if w := r.Trigger; w != nil && !ok {
			start, end, ok = w.AtS, math.Inf(1), true
			if w.ForS > 0 {
				end = w.AtS + w.ForS
			}
		}
	}
	switch {
	case ok && math.IsInf(end, 1):
		trigger = "shaded: the trigger, from " + decimal(start, 3) + " s to the end of the run"
	case ok:
		trigger = "shaded: the trigger, " + decimal(start, 3) + " s to " + decimal(end, 3) + " s"
	}
	var shade *[2]float64
	if ok && start < float64(seconds) {
		shade = &[2]float64{start, min(end, float64(seconds))}
	}
	most := func(specs []seriesSpec) float64 {
		m := 0.0
		for _, r := range b.runs {
			for _, s := range specs {
				v := s.values(r)
				for _, x := range v[:min(len(v), seconds)] {
					m = max(m, x)
				}
			}
		}
		return m
	}
	rates := rateSeries
	var limit *limitLine
	if capacity != nil {
		dep := dependencySeries(capacity.Service)
		if offered := most([]seriesSpec{dep}); offered > 0 {
			c := capacity.AttemptsPerS
			capLegend = display(capacity.Service) + " capacity: " + compactNumber(c) + " attempts/s (every worker busy, no fault)"
			// Where every attempt offered goes to the dependency (one
			// layer), the stacked line is its series already.
			if sameSeries(b.runs, rateSeries[1], dep, seconds) {
				capLegend += "; the offered originals + retries are the attempts to " + display(capacity.Service)
			} else {
				rates = append(slices.Clone(rateSeries), dep)
				dependency = dep.label
			}
			if c <= offChart*most(rates) {
				limit = &limitLine{value: c, label: display(capacity.Service) + " capacity " + compactNumber(c) + "/s"}
			} else {
				capLegend += ", off the chart: more than " + strconv.Itoa(offChart) + "× the most offered"
			}
		}
	}
	rateMax := most(rates)
	if limit != nil {
		rateMax = max(rateMax, limit.value)
	}
	rateTop, queueTop, wasteTop := niceCeil(rateMax), niceCeil(most(queueSeries)), niceCeil(most(wasteSeries))
	for _, r := range b.runs {
		recovery := "recovery " + recoveryText(r)
		if r.RecoveryS != nil {
			recovery += " s"
		}
		c := policyChart{
			Policy:     display(r.Policy),
			Metastable: r.Metastable,
			Summary:    []string{"availability " + fixed(r.Availability, 3), "goodput " + fixed(r.Goodput, 1) + "/s", recovery},
		}
		for _, pn := range []struct {
			title  string
			h      int
			top    float64
			series []seriesSpec
			limit  *limitLine
		}{
			{"requests per second", rateH, rateTop, rates, limit},
			{"queue depth (jobs, all services)", smallH, queueTop, queueSeries, nil},
			{"wasted work (service-seconds per second)", smallH, wasteTop, wasteSeries, nil},
		} {
			c.Panels = append(c.Panels, drawPanel(pn.title, pn.h, seconds, pn.top, shade, pn.series, pn.limit, r, b.degradation))
		}
		charts = append(charts, c)
	}
	return trigger, dependency, capLegend, charts
}

// limitLine is a level to draw across a panel, and its label.
type limitLine struct {
	value float64
	label string
}

// svgLimit is a horizontal line across the plot at Y, its label at
// (TX, TY).
type svgLimit struct{ X1, X2, Y, TX, TY, Text string }

// chartPanel is one small chart: an axis frame, ticks, the shaded trigger
// and one polyline per series.
type chartPanel struct {
	Title, ViewBox, Width, Height string
	// The plot area.
	X0, Y0, X1, Y1 string
	Shade          *svgRect
	Limit          *svgLimit // the capacity line, or nil
	XTicks, YTicks []svgTick
	Lines          []chartLine
}

type svgRect struct{ X, Y, W, H string }

// svgTick is a tick label at (X, Y) and its line from (LX1, LY1) to
// (LX2, LY2).
type svgTick struct {
	X, Y, Text         string
	LX1, LY1, LX2, LY2 string
}

type chartLine struct {
	Series, Label, Policy, Degradation string
	Points                             string
	N                                  int // points plotted
}

// px formats a coordinate to a tenth of a pixel.
func px(v float64) string { return decimal(v, 1) }

func drawPanel(title string, h, seconds int, top float64, shade *[2]float64, specs []seriesSpec, limit *limitLine, r *replay.Result, degradation string) chartPanel {
	x0, x1 := float64(padLeft), float64(chartW-padRight)
	y0, y1 := float64(padTop), float64(h-padB)
	span := float64(max(seconds, 1))
	sx := func(t float64) float64 { return x0 + (x1-x0)*t/span }
	sy := func(v float64) float64 { return y1 - (y1-y0)*v/top }
	p := chartPanel{
		Title: title, ViewBox: "0 0 " + strconv.Itoa(chartW) + " " + strconv.Itoa(h),
		Width: strconv.Itoa(chartW), Height: strconv.Itoa(h),
		X0: px(x0), Y0: px(y0), X1: px(x1), Y1: px(y1),
	}
	if shade != nil {
		a, b := sx(shade[0]), sx(shade[1])
		p.Shade = &svgRect{X: px(a), Y: px(y0), W: px(max(b-a, 1)), H: px(y1 - y0)}
	}
	if limit != nil {
		y := sy(limit.value)
		p.Limit = &svgLimit{X1: px(x0), X2: px(x1), Y: px(y), TX: px(x1 - 2), TY: px(y - 3), Text: limit.label}
	}
	step := niceCeil(span / 6)
	for t := 0.0; t <= span+1e-9; t += step {
		x := sx(t)
		p.XTicks = append(p.XTicks, svgTick{X: px(x), Y: px(y1 + 13), Text: decimal(t, 3) + "s",
			LX1: px(x), LY1: px(y1), LX2: px(x), LY2: px(y1 + 3)})
	}
	for _, v := range []float64{0, top / 2, top} {
		y := sy(v)
		p.YTicks = append(p.YTicks, svgTick{X: px(x0 - 4), Y: px(y + 3.5), Text: compactNumber(v),
			LX1: px(x0), LY1: px(y), LX2: px(x1), LY2: px(y)})
	}
	for _, s := range specs {
		v := s.values(r)
		xs, vs := downsample(v[:min(len(v), seconds)], s.at)
		var b strings.Builder
		for i := range xs {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(px(sx(xs[i])))
			b.WriteByte(',')
			b.WriteString(px(sy(vs[i])))
		}
		p.Lines = append(p.Lines, chartLine{Series: s.key, Label: s.label, Policy: display(r.Policy),
			Degradation: display(degradation), Points: b.String(), N: len(xs)})
	}
	return p
}

// downsample returns the times and values to plot for a per-second
// series: one point per second at i+at, or, for a series longer than
// maxChartPoints, the mean of each bucket of consecutive seconds at the
// bucket's mean time.
func downsample(v []float64, at float64) (xs, ys []float64) {
	k := (len(v) + maxChartPoints - 1) / maxChartPoints
	k = max(k, 1)
	for from := 0; from < len(v); from += k {
		to := min(from+k, len(v))
		sum := 0.0
		for _, x := range v[from:to] {
			sum += x
		}
		n := float64(to - from)
		xs = append(xs, float64(from)+(n-1)/2+at)
		ys = append(ys, sum/n)
	}
	return xs, ys
}

// niceCeil is the smallest of 1, 2, 2.5 or 5 times a power of ten that is
// at least v (1 for v ≤ 0), the top of an axis.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// compactNumber is an axis label: "0", "2.5", "750", "1.5k", "2M".
func compactNumber(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return decimal(v/1e6, 2) + "M"
	case a >= 1e4:
		return decimal(v/1e3, 2) + "k"
	}
	return decimal(v, 3)
}

// The call graph's geometry, in pixels.
const (
	nodeH         = 34
	nodeGapY      = 44
	layerGap      = 230
	graphMargin   = 24
	nodeMinW      = 72
	nodeMaxRunes  = 28
	nodeRuneWidth = 7.6 // a generous mean advance at 13px sans-serif
)

// svgGraph is the call graph laid out for SVG.
type svgGraph struct {
	Width, Height, ViewBox string
	Quiet                  bool // plain links are not labelled (see quietLinks)
	Nodes                  []svgNode
	Links                  []svgLink
}

type svgNode struct {
	X, Y, W, H, TX, TY string
	Label, Name        string // Label may be shortened; Name is the whole
	Virtual            bool
}

type svgLink struct {
	Path    string
	Retry   bool
	Title   string
	Labels  []svgText
	From    string // the services' display names, for data attributes
	To      string
	Attempt string // the retry label, "×3", or ""
	// Hedge and Breaker describe the hedging and the circuit breaker the
	// traces show on the link ("after 40 ms, ≤2"; "opened 3×, 13
	// fast-failed"), or are "": a hedged link is overdrawn dashed, a
	// breaker is a bar at the caller's end.
	Hedge, Breaker string
}

// svgText is a line of text, anchored at its middle; Class "hedge" or
// "breaker" marks a line about either.
type svgText struct{ X, Y, Text, Class string }

// mechanismLine is a line about the hedging or the breaker of one link
// operation: its class and text.
type mechanismLine struct{ class, text string }

// mechanismLines are a link's lines about hedging and circuit breakers,
// one per operation that shows either, named when the link carries
// several operations: "hedge after 40 ms, ≤2 requests", "breaker: opened
// 3×, 13 fast-failed". A breaker the traces leave unknown gets a line of
// its own class ("breaker: unknown (2 fast failures)"), so the graph does
// not read as "no breaker" there, and no bar.
func mechanismLines(l callLink) []mechanismLine {
	var out []mechanismLine
	for _, e := range l.edges {
		prefix := ""
		if len(l.edges) > 1 {
			prefix = shortOperation(e) + ": "
		}
		if h := e.Hedging; h != nil && h.Calls > 0 {
			out = append(out, mechanismLine{"hedge", prefix + "hedge after " + ms(h.DelayMS) + ", ≤" + plural(h.MaxRequests, "request")})
		}
		switch b := e.Breaker; {
		case b != nil && b.Detected:
			out = append(out, mechanismLine{"breaker", prefix + "breaker: " + breakerText(b)})
		case b != nil && b.Unknown:
			out = append(out, mechanismLine{"breaker-unknown", prefix + "breaker: " + breakerText(b)})
		}
	}
	return out
}

// shortOperation is an operation's name cut to nodeMaxRunes.
func shortOperation(e *graph.Edge) string {
	op := display(e.Operation)
	if utf8.RuneCountInString(op) > nodeMaxRunes {
		op = string([]rune(op)[:nodeMaxRunes-1]) + "…"
	}
	return op
}

// operationLabel is one operation's line on a link that carries several:
// "POST /reservations ×3 (const 30ms)", "GET /prices/{item}: no retry",
// or "GET /items/{id}: retries unknown" (graph.Edge.RetriesUnknown).
func operationLabel(e *graph.Edge) string {
	op := shortOperation(e)
	if e.RetriesUnknown {
		return op + ": retries unknown"
	}
	if !e.Retries {
		return op + ": no retry"
	}
	return op + " ×" + maxAttempts(*e) + " (" + backoffShort(e.Backoff) + ")"
}

// layoutCallGraph places the services in layers by their depth from the
// roots (the longest chain of calls above them, cycles broken), left to
// right, each layer ordered by the mean position of its callers to keep
// crossings down and each service level with its callers where there is
// room, and routes each link as a curve: forward between layers, and
// below the boxes for a link that closes a cycle.
func layoutCallGraph(g callGraph) *svgGraph {
	n := len(g.nodes)
	if n == 0 {
		return nil
	}
	// Links that close a cycle, found depth-first from the roots (services
	// nobody calls) and then from whatever is left, are drawn back under
	// the boxes; the others form a DAG, layered by longest path.
	back := make([]bool, len(g.links))
	out := make([][]int, n)
	called := make([]bool, n)
	for i, l := range g.links {
		out[l.from] = append(out[l.from], i)
		if l.from != l.to {
			called[l.to] = true
		}
	}
	state := make([]int8, n) // 0 unseen, 1 on the path, 2 done
	var visit func(v int)
	visit = func(v int) {
		state[v] = 1
		for _, li := range out[v] {
			switch w := g.links[li].to; state[w] {
			case 0:
				visit(w)
			case 1:
				back[li] = true
			}
		}
		state[v] = 2
	}
	for _, rootsOnly := range []bool{true, false} {
		for v := range n {
			if state[v] == 0 && (!rootsOnly || !called[v]) {
				visit(v)
			}
		}
	}
	depth := make([]int, n)
	for range n {
		changed := false
		for i, l := range g.links {
			if !back[i] && depth[l.from]+1 > depth[l.to] {
				depth[l.to] = depth[l.from] + 1
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	layers := make([][]int, slices.Max(depth)+1)
	for i, d := range depth {
		layers[d] = append(layers[d], i)
	}
	row := make([]float64, n)
	for d, layer := range layers {
		if d > 0 {
			key := make(map[int]float64, len(layer))
			for _, v := range layer {
				sum, cnt := 0.0, 0
				for i, l := range g.links {
					if l.to == v && !back[i] {
						sum += row[l.from]
						cnt++
					}
				}
				key[v] = math.Inf(1)
				if cnt > 0 {
					key[v] = sum / float64(cnt)
				}
			}
			slices.SortStableFunc(layer, func(a, b int) int {
				if key[a] < key[b] {
					return -1
				}
				if key[a] > key[b] {
					return 1
				}
				return 0
			})
		}
		for i, v := range layer {
			row[v] = float64(i)
		}
	}

	label := make([]string, n)
	width := make([]float64, n)
	for i, nd := range g.nodes {
		label[i] = nd.label
		if utf8.RuneCountInString(label[i]) > nodeMaxRunes {
			label[i] = string([]rune(label[i])[:nodeMaxRunes-1]) + "…"
		}
		width[i] = max(nodeMinW, float64(utf8.RuneCountInString(label[i]))*nodeRuneWidth+24)
	}
	// Each gap between layers is wide enough for the widest label of the
	// links that leave the layer to the next; wider gaps until every
	// link's label finds a place clear of the boxes and of the other
	// labels, the last try taking the least crowded places.
	gaps := make([]float64, len(layers))
	for i, l := range g.links {
		if !back[i] && l.from != l.to && depth[l.to] == depth[l.from]+1 {
			w, _ := labelSize(l, len(g.links) > quietLinks)
			gaps[depth[l.from]] = max(gaps[depth[l.from]], w+40)
		}
	}
	for try := 0; ; try++ {
		gap := make([]float64, len(gaps))
		for d := range gaps {
			gap[d] = max(layerGap, gaps[d]) + layerGapStep*float64(try)
		}
		sg, clear := placeCallGraph(g, back, layers, label, width, gap, nodeGapY+nodeGapStep*float64(try))
		if clear || try == maxLayoutTries-1 {
			return sg
		}
	}
}

// labelSize is the size of a link's label, as drawn: its width at
// linkRuneWidth a rune, its height at linkLineH a line.
func labelSize(l callLink, quiet bool) (w, h float64) {
	lines := linkLabel(l, quiet)
	runes := 0
	for _, s := range lines {
		runes = max(runes, utf8.RuneCountInString(s.Text))
	}
	return float64(runes) * linkRuneWidth, float64(linkLineH * len(lines))
}

// linkLabel is a link's label, a line at a time, its lines about hedging
// and breakers classed so. Quiet: a link that neither retries, hedges nor
// breaks has none.
func linkLabel(l callLink, quiet bool) []svgText {
	var out []svgText
	for _, s := range linkLines(l) {
		if quiet && l.worst == nil {
			break
		}
		out = append(out, svgText{Text: s})
	}
	for _, m := range mechanismLines(l) {
		out = append(out, svgText{Text: m.text, Class: m.class})
	}
	return out
}

// How the call graph grows when its labels do not fit: each try widens the
// gaps between layers and between boxes.
const (
	layerGapStep, nodeGapStep = 40, 22
	maxLayoutTries            = 5
	linkRuneWidth             = 6.9 // a generous mean advance at 11px, bold
	linkLineH                 = 13
	// quietLinks is how many links a graph draws before the links that
	// neither retry, hedge nor break lose their "N calls" label (their
	// tooltip and the edges table still give it).
	quietLinks = 24
)

// box is a rectangle of the drawing.
type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }

// overlap is the area a shares with any of bs.
func overlap(a box, bs []box) float64 {
	area := 0.0
	for _, b := range bs {
		if a.overlaps(b) {
			area += (min(a.x1, b.x1) - max(a.x0, b.x0)) * (min(a.y1, b.y1) - max(a.y0, b.y0))
		}
	}
	return area
}

// placeCallGraph places the boxes with the given gaps, routes the links and
// places their labels; clear says every label is clear of the boxes and of
// the other labels.
func placeCallGraph(g callGraph, back []bool, layers [][]int, label []string, width, gap []float64, nodeGapY float64) (*svgGraph, bool) {
	n := len(g.nodes)
	// Each layer's nodes go at the mean height of their callers in earlier
	// layers (roots stack from the top), in layer order, pushed down as far
	// as it takes to keep them apart: a chain of calls is a straight line.
	const top = graphMargin + 22
	x := make([]float64, n)
	y := make([]float64, n)
	left := float64(graphMargin)
	bottom := 0.0
	for d, layer := range layers {
		colW := 0.0
		for _, v := range layer {
			colW = max(colW, width[v])
		}
		next := float64(top)
		for _, v := range layer {
			want := next
			sum, cnt := 0.0, 0
			for i, l := range g.links {
				if l.to == v && !back[i] {
					sum += y[l.from]
					cnt++
				}
			}
			if cnt > 0 {
				want = max(next, sum/float64(cnt))
			}
			x[v], y[v] = left+(colW-width[v])/2, want
			next = want + nodeH + nodeGapY
			bottom = max(bottom, want+nodeH)
		}
		left += colW + gap[d]
	}
	W := left - gap[len(gap)-1] + graphMargin
	H := bottom + graphMargin
	if slices.Contains(back, true) {
		H = bottom + 78 // room below the boxes for links back
	}
	sg := &svgGraph{Quiet: len(g.links) > quietLinks}
	taken := make([]box, 0, n+len(g.links))
	for i, nd := range g.nodes {
		sg.Nodes = append(sg.Nodes, svgNode{
			X: px(x[i]), Y: px(y[i]), W: px(width[i]), H: px(nodeH),
			TX: px(x[i] + width[i]/2), TY: px(y[i] + nodeH/2 + 4.5),
			Label: label[i], Name: nd.label, Virtual: nd.virtual,
		})
		taken = append(taken, box{x[i] - 3, y[i] - 3, x[i] + width[i] + 3, y[i] + nodeH + 3})
	}
	// Retrying links are labelled first: theirs are the labels that matter.
	order := make([]int, len(g.links))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := g.links[a].worst != nil, g.links[b].worst != nil
		switch {
		case ra && !rb:
			return -1
		case rb && !ra:
			return 1
		}
		return 0
	})
	clear := true
	sg.Links = make([]svgLink, len(g.links))
	for _, i := range order {
		l := g.links[i]
		bw, bh := labelSize(l, sg.Quiet)
		// block is the label's box with its first baseline at (cx, cy),
		// centred on cx.
		block := func(cx, cy float64) box { return box{cx - bw/2 - 2, cy - 10, cx + bw/2 + 2, cy - 10 + bh + 2} }
		var d string
		var cands [][2]float64 // first-baseline anchors to try, best first
		switch {
		case l.from == l.to:
			// A loop on the right side of the box, labelled beside it.
			rx, cy := x[l.from]+width[l.from], y[l.from]+nodeH/2
			d = "M" + px(rx) + "," + px(cy-8) + " C" + px(rx+50) + "," + px(cy-40) + " " + px(rx+50) + "," + px(cy+40) +
				" " + px(rx) + "," + px(cy+8)
			for k := range 8 {
				cands = append(cands, [2]float64{rx + 44 + bw/2, cy - 2 + float64(k)*(bh+4)}, [2]float64{rx + 44 + bw/2, cy - 2 - float64(k+1)*(bh+4)})
			}
		case !back[i]:
			sx, sy := x[l.from]+width[l.from], y[l.from]+nodeH/2
			tx, ty := x[l.to], y[l.to]+nodeH/2
			c := (tx - sx) / 2
			d = "M" + px(sx) + "," + px(sy) + " C" + px(sx+c) + "," + px(sy) + " " + px(tx-c) + "," + px(ty) + " " + px(tx) + "," + px(ty)
			// Just before the arrow, above or below its end; else along
			// the curve, above or below it.
			ex := tx - 14 - bw/2
			cands = append(cands, [2]float64{ex, ty - 6 - bh + 10}, [2]float64{ex, ty + 18})
			if ty < sy {
				cands[len(cands)-2], cands[len(cands)-1] = cands[len(cands)-1], cands[len(cands)-2]
			}
			for _, t := range []float64{0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.12, 0.88} {
				u := 1 - t
				px0 := u*u*u*sx + 3*u*u*t*(sx+c) + 3*u*t*t*(tx-c) + t*t*t*tx
				py0 := u*u*u*sy + 3*u*u*t*sy + 3*u*t*t*ty + t*t*t*ty
				cands = append(cands, [2]float64{px0, py0 + 4 - bh}, [2]float64{px0, py0 + 16})
			}
		default:
			// Back to the same or an earlier layer: under the boxes.
			sx, sy := x[l.from]+width[l.from]/2, y[l.from]+nodeH
			tx, ty := x[l.to]+width[l.to]/2, y[l.to]+nodeH
			low := max(sy, ty) + 50
			d = "M" + px(sx) + "," + px(sy) + " C" + px(sx) + "," + px(low) + " " + px(tx) + "," + px(low) + " " + px(tx) + "," + px(ty)
			for k := range 8 {
				cands = append(cands, [2]float64{(sx + tx) / 2, (sy+ty)/8 + 3*low/4 + 15 + float64(k)*(bh+4)})
			}
		}
		best, bestArea := cands[0], math.Inf(1)
		for _, cd := range cands {
			if bh == 0 { // no label
				bestArea = 0
				break
			}
			b := block(cd[0], cd[1])
			a := overlap(b, taken)
			if b.x0 < 0 || b.y0 < 0 {
				a += 1e6
			}
			if a < bestArea {
				best, bestArea = cd, a
			}
			if a == 0 {
				break
			}
		}
		if bestArea > 0 {
			clear = false
		}
		if bh > 0 {
			b := block(best[0], best[1])
			taken = append(taken, b)
			W, H = max(W, b.x1+graphMargin), max(H, b.y1+graphMargin)
		}

		from, to := g.nodes[l.from].label, g.nodes[l.to].label
		sl := svgLink{Path: d, From: from, To: to, Title: from + " → " + to + ": " + plural(l.calls, "call") + ", " + plural(l.attempts, "attempt")}
		if l.worst != nil {
			sl.Retry, sl.Attempt = true, l.retryLabel()
			sl.Title += "; retries up to " + l.retryLabel() + ", " + backoffText(*l.worst)
		}
		for _, e := range l.edges {
			if h := e.Hedging; h != nil && h.Calls > 0 && sl.Hedge == "" {
				sl.Hedge = hedgingText(h, e.ResultRetries)
				sl.Title += "; hedges " + sl.Hedge
			}
			switch b := e.Breaker; {
			case b != nil && b.Detected && sl.Breaker == "":
				sl.Breaker = breakerText(b)
				sl.Title += "; circuit breaker " + sl.Breaker
			case b != nil && b.Unknown && !b.Detected:
				sl.Title += "; circuit breaker " + breakerText(b)
			}
		}
		for k, t := range linkLabel(l, sg.Quiet) {
			t.X, t.Y = px(best[0]), px(best[1]+float64(linkLineH*k))
			sl.Labels = append(sl.Labels, t)
		}
		sg.Links[i] = sl
	}
	sg.Width, sg.Height, sg.ViewBox = px(W), px(H), "0 0 "+px(W)+" "+px(H)
	return sg, clear
}

// linkLines are the lines of a link's label before those about hedging and
// breakers: its calls; for a retrying link the attempts it allows and the
// amplification seen; a line per operation for a link that carries
// several (GET and POST on one link may retry apart).
func linkLines(l callLink) []string {
	switch {
	case len(l.edges) > 1 && l.worst != nil:
		var lines []string
		for _, e := range l.edges {
			lines = append(lines, operationLabel(e))
		}
		return lines
	case l.worst != nil:
		amp := "-"
		if l.calls > 0 {
			amp = decimal(float64(l.attempts)/float64(l.calls), 2) + "×"
		}
		return []string{
			l.retryLabel() + " (" + backoffShort(l.worst.Backoff) + ")",
			plural(l.attempts, "attempt") + " / " + plural(l.calls, "call") + " = " + amp,
		}
	}
	return []string{plural(l.calls, "call")}
}
