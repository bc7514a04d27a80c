package report

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/retryaudit/retryaudit/replay/audit"
)

// htmlPlan is the capacity plan on the HTML page: the plan's header
// lines, a table per degradation, the notes, and two charts: the critical
// utilization of every policy under every degradation, and, for the
// recommended and the baseline policy, availability against utilization.
type htmlPlan struct {
	Header []string
	Blocks []htmlPlanBlock
	Notes  []string
	Crit   *critChart
	Avail  []availChart
}

type htmlPlanBlock struct {
	Title string
	Table htmlTable
}

// critChart is horizontal bars, one per policy, grouped by degradation,
// on a utilization axis from 0 to 1.
type critChart struct {
	Width, Height, ViewBox string
	X0, X1, Y1             string
	Ticks                  []svgTick
	Groups                 []critGroup
}

type critGroup struct {
	Title, Y string
	Bars     []critBar
}

// critBar is one policy: its label at (LX, TY), a bar from X0 of width W
// at Y, and its value text at (VX, TY). Open: it recovered at the top of
// the search range (the bar runs off it).
type critBar struct {
	Policy, Degradation string
	Label, Value        string
	Y, W, TY, LX, VX    string
	Open, Recommended   bool
}

// availChart is one degradation: availability (y, 0 to 1) against the
// degraded dependency's utilization (x, 0 to 1), a polyline per policy
// through its probes, and a vertical line at the utilization judged.
type availChart struct {
	Title                  string
	Width, Height, ViewBox string
	X0, Y0, X1, Y1         string
	XTicks, YTicks         []svgTick
	Lines                  []chartLine
	JudgedX                string
}

// Geometry of the plan charts, in pixels.
const (
	critW, critLabelW, critBarH, critGap = 640, 150, 14, 4
	availW, availH                       = 330, 190
)

func newHTMLPlan(a *AuditReport) *htmlPlan {
	if len(a.Verdicts) == 0 {
		return nil
	}
	pv := newPlanView(a)
	h := &htmlPlan{Header: pv.header, Notes: pv.notes}
	for _, b := range pv.blocks {
		h.Blocks = append(h.Blocks, htmlPlanBlock{Title: b.title, Table: newHTMLTable(b.table)})
	}
	rec := ""
	if a.Recommendation != nil {
		rec = a.Recommendation.Policy
	}
	h.Crit = newCritChart(a.Verdicts, rec)
	h.Avail = newAvailCharts(a.Verdicts, []string{rec, a.Baseline})
	return h
}

func newCritChart(vs []audit.Verdict, rec string) *critChart {
	x0, x1 := float64(critLabelW), float64(critW-60)
	sx := func(u float64) float64 { return x0 + (x1-x0)*u }
	c := &critChart{X0: px(x0), X1: px(x1)}
	y := 24.0
	var cur *critGroup
	for _, v := range vs {
		if cur == nil || cur.Title != display(v.Degradation) {
			if cur != nil {
				y += 10
			}
			c.Groups = append(c.Groups, critGroup{Title: display(v.Degradation), Y: px(y + 10)})
			cur = &c.Groups[len(c.Groups)-1]
			y += 16
		}
		b := critBar{Policy: display(v.Policy), Degradation: display(v.Degradation), Label: display(v.Policy),
			Y: px(y), TY: px(y + critBarH - 3), LX: px(x0 - 6), Recommended: v.Policy == rec}
		u := 0.0
		switch {
		case !v.CriticalSearched:
			b.Value = "not searched"
		case v.CriticalUtilization == nil:
			u, b.Open, b.Value = 1, true, "≥"+fixed(audit.SearchHigh, 2)
		case *v.CriticalUtilization == 0:
			b.Value = "<" + fixed(audit.SearchLow, 2)
		default:
			u, b.Value = *v.CriticalUtilization, fixed(*v.CriticalUtilization, 2)
		}
		b.W = px(sx(u) - x0)
		b.VX = px(sx(u) + 4)
		cur.Bars = append(cur.Bars, b)
		y += critBarH + critGap
	}
	y += 8
	for _, u := range []float64{0, 0.25, 0.5, 0.75, 1} {
		x := sx(u)
		c.Ticks = append(c.Ticks, svgTick{X: px(x), Y: px(y + 14), Text: decimal(u, 2), LX1: px(x), LY1: "18", LX2: px(x), LY2: px(y)})
	}
	c.Y1 = px(y)
	h := int(y) + 22
	c.Width, c.Height, c.ViewBox = strconv.Itoa(critW), strconv.Itoa(h), "0 0 "+strconv.Itoa(critW)+" "+strconv.Itoa(h)
	return c
}

func newAvailCharts(vs []audit.Verdict, policies []string) []availChart {
	var out []availChart
	x0, x1 := float64(padLeft), float64(availW-padRight)
	y0, y1 := float64(padTop), float64(availH-padB)
	sx := func(u float64) float64 { return x0 + (x1-x0)*u }
	sy := func(a float64) float64 { return y1 - (y1-y0)*a }
	for _, v := range vs {
		if len(out) == 0 || out[len(out)-1].Title != display(v.Degradation) {
			c := availChart{Title: display(v.Degradation), Width: strconv.Itoa(availW), Height: strconv.Itoa(availH),
				ViewBox: "0 0 " + strconv.Itoa(availW) + " " + strconv.Itoa(availH),
				X0:      px(x0), Y0: px(y0), X1: px(x1), Y1: px(y1), JudgedX: px(sx(v.Utilization))}
			for _, u := range []float64{0, 0.25, 0.5, 0.75, 1} {
				c.XTicks = append(c.XTicks, svgTick{X: px(sx(u)), Y: px(y1 + 13), Text: decimal(u, 2), LX1: px(sx(u)), LY1: px(y1), LX2: px(sx(u)), LY2: px(y1 + 3)})
				c.YTicks = append(c.YTicks, svgTick{X: px(x0 - 4), Y: px(sy(u) + 3.5), Text: decimal(u, 2), LX1: px(x0), LY1: px(sy(u)), LX2: px(x1), LY2: px(sy(u))})
			}
			out = append(out, c)
		}
		c := &out[len(out)-1]
		if !slices.Contains(policies, v.Policy) || v.Policy == "" || len(v.Probes) == 0 {
			continue
		}
		// Today's point from the matrix, then the search's probes.
		pts := append([]audit.Probe{{Utilization: v.Utilization, Availability: v.Availability.Mean}}, v.Probes...)
		slices.SortStableFunc(pts, func(a, b audit.Probe) int { return cmp.Compare(a.Utilization, b.Utilization) })
		var b strings.Builder
		for i, p := range pts {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(px(sx(p.Utilization)) + "," + px(sy(p.Availability)))
		}
		key := "recommended"
		if v.Policy == policies[len(policies)-1] {
			key = "baseline"
		}
		c.Lines = append(c.Lines, chartLine{Series: key, Label: display(v.Policy) + ": availability against utilization", Policy: display(v.Policy),
			Degradation: display(v.Degradation), Points: b.String(), N: len(pts)})
	}
	for i := 0; i < len(out); i++ {
		if len(out[i].Lines) == 0 {
			out = append(out[:i], out[i+1:]...)
			i--
		}
	}
	return out
}
