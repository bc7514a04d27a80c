package report

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/retryaudit/retryaudit/graph"
)

// thirtyServices is a topology of 30 services with long names, in the
// shape of a shop: two gateways, BFFs, domain services fanning out to
// shared stores, caches and queues, links that skip layers, GET and POST
// on one link, hedged reads, a breaker, and a retrying chain three layers
// deep.
func thirtyServices() *graph.Topology {
	t := &graph.Topology{}
	add := func(from, to, op string, retries bool) *graph.Edge {
		e := graph.Edge{Caller: from, Callee: to, Operation: op, Calls: 100, Attempts: 100}
		if retries {
			e.Retries, e.MaxAttempts, e.MaxAttemptsExact, e.Attempts = true, 3, true, 130
			e.Backoff = graph.Backoff{Kind: graph.BackoffExponential, BaseMS: 25, Multiplier: ptr(2.0)}
		}
		t.Edges = append(t.Edges, e)
		return &t.Edges[len(t.Edges)-1]
	}
	front := []string{"edge-gateway", "partner-api-gateway"}
	bffs := []string{"web-storefront-bff", "mobile-app-bff", "partner-bff"}
	domain := []string{"catalog-service", "search-query-service", "pricing-engine", "cart-service", "checkout-orchestrator",
		"payment-gateway-adapter", "inventory-reservation-service", "shipping-quote-service", "recommendations-ranker", "user-profile-service"}
	stores := []string{"catalog-postgres-primary", "search-elasticsearch-cluster", "pricing-redis-cache", "cart-dynamodb-table",
		"orders-postgres-primary", "payments-provider-api", "inventory-cassandra-ring", "shipping-carrier-api",
		"feature-store-redis", "profile-mysql-primary", "events-kafka-cluster", "fraud-scoring-service",
		"tax-calculation-service", "session-memcached", "audit-log-s3-bucket"}
	for _, n := range [][]string{front, bffs, domain, stores} {
		for _, s := range n {
			t.Services = append(t.Services, graph.Service{Name: s, Virtual: slices.Contains(stores, s) && s[len(s)-3:] == "api"})
		}
	}
	add(front[0], bffs[0], "GET /", false)
	add(front[0], bffs[1], "GET /app", true)
	add(front[1], bffs[2], "POST /partner/orders", true)
	for i, b := range bffs {
		for k := range 4 {
			d := domain[(3*i+k)%len(domain)]
			add(b, d, "GET /"+d+"/{id}", k%2 == 0)
		}
	}
	add(bffs[0], domain[4], "POST /checkout", true)
	for i, d := range domain {
		for k := range 2 {
			add(d, stores[(i+5*k)%len(stores)], "query "+strconv.Itoa(k), i%3 == 0)
		}
	}
	// GET and POST on one link; a hedged read; a breaker.
	add(domain[3], stores[3], "GET /carts/{id}", false)
	add(domain[3], stores[3], "POST /carts/{id}/items", true)
	add(domain[1], stores[1], "GET /_search", false).Hedging = &graph.Hedging{Calls: 20, DelayMS: 35, MaxRequests: 2}
	add(domain[5], stores[11], "POST /score", false).Breaker = &graph.Breaker{Detected: true, OpenPeriods: 3, FastFailedCalls: 41}
	add(domain[4], stores[12], "POST /tax", true)
	add(domain[4], stores[13], "GET session", false)
	add(domain[4], stores[14], "PUT audit", false)
	add(domain[8], stores[8], "GET features", false)
	add(bffs[1], stores[13], "GET session", false) // skips a layer
	if len(t.Services) != 30 {
		panic(fmt.Sprintf("%d services", len(t.Services)))
	}
	return t
}

// TestCallGraph30 lays out 30 services: no two boxes overlap, every link
// label is clear of every box and of every other label (as the layout
// estimates text), and the drawing holds them all.
func TestCallGraph30(t *testing.T) {
	g := layoutCallGraph(newCallGraph(thirtyServices()))
	if len(g.Nodes) != 30 {
		t.Fatalf("%d nodes", len(g.Nodes))
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var boxes []box
	for _, n := range g.Nodes {
		b := box{num(n.X), num(n.Y), num(n.X) + num(n.W), num(n.Y) + num(n.H)}
		for k, o := range boxes {
			if b.overlaps(o) {
				t.Errorf("boxes of %s and %s overlap", n.Name, g.Nodes[k].Name)
			}
		}
		if b.x1 > num(g.Width) || b.y1 > num(g.Height) {
			t.Errorf("box of %s outside the drawing", n.Name)
		}
		boxes = append(boxes, b)
	}
	if !g.Quiet {
		t.Error("30 services, and every plain link labelled")
	}
	var labels []box
	for _, l := range g.Links {
		if len(l.Labels) == 0 {
			if l.Retry || l.Hedge != "" || l.Breaker != "" {
				t.Errorf("%s → %s retries, hedges or breaks and has no label", l.From, l.To)
			}
			continue
		}
		runes := 0
		for _, s := range l.Labels {
			runes = max(runes, utf8.RuneCountInString(s.Text))
		}
		w := float64(runes) * linkRuneWidth
		x, y := num(l.Labels[0].X), num(l.Labels[0].Y)
		b := box{x - w/2, y - 9, x + w/2, y - 9 + float64(linkLineH*len(l.Labels))}
		if overlap(b, boxes) > 0 {
			t.Errorf("the label of %s → %s covers a box", l.From, l.To)
		}
		if overlap(b, labels) > 0 {
			t.Errorf("the label of %s → %s covers another label", l.From, l.To)
		}
		if b.x0 < 0 || b.y0 < 0 || b.x1 > num(g.Width) || b.y1 > num(g.Height) {
			t.Errorf("the label of %s → %s is outside the drawing", l.From, l.To)
		}
		labels = append(labels, b)
	}
}

// overlapScript measures, in the browser, the call graph as drawn: every
// box, the bounding box of every service's label and of every link's
// label, and lists what overlaps. It writes its findings into #out.
const overlapScript = `
const out = {nodes: 0, labels: 0, problems: []};
const box = e => { const b = e.getBBox(); return {x0: b.x, y0: b.y, x1: b.x + b.width, y1: b.y + b.height}; };
const hit = (a, b) => Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > 0.5 && Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 0.5;
const inside = (a, b) => a.x0 >= b.x0 && a.x1 <= b.x1 && a.y0 >= b.y0 && a.y1 <= b.y1;
const nodes = [...document.querySelectorAll("svg.graph g.node")].map(g => ({
  name: g.dataset.service, rect: box(g.querySelector("rect")), text: box(g.querySelector("text"))}));
out.nodes = nodes.length;
nodes.forEach((n, i) => {
  if (!inside(n.text, n.rect)) out.problems.push("the label of " + n.name + " leaves its box");
  nodes.slice(0, i).forEach(o => {
    if (hit(n.text, o.text)) out.problems.push("labels of " + n.name + " and " + o.name + " overlap");
    if (hit(n.rect, o.rect)) out.problems.push("boxes of " + n.name + " and " + o.name + " overlap");
  });
});
const labels = [];
document.querySelectorAll("svg.graph g.link").forEach(g => {
  const texts = [...g.querySelectorAll("text")];
  if (!texts.length) return;
  const bs = texts.map(box);
  const b = {x0: Math.min(...bs.map(b => b.x0)), y0: Math.min(...bs.map(b => b.y0)), x1: Math.max(...bs.map(b => b.x1)), y1: Math.max(...bs.map(b => b.y1))};
  const name = g.dataset.from + " → " + g.dataset.to;
  nodes.forEach(n => { if (hit(b, n.rect)) out.problems.push("the label of " + name + " covers the box of " + n.name); });
  labels.forEach(o => { if (hit(b, o.b)) out.problems.push("the labels of " + name + " and " + o.name + " overlap"); });
  labels.push({name, b});
});
out.labels = labels.length;
document.getElementById("out").textContent = JSON.stringify(out);
`

// TestCallGraph30InBrowser draws the 30-service call graph in headless
// Chromium with the report's own styles and measures it there, with the
// browser's fonts: no two service labels overlap, each fits its box, and
// no link label covers a box or another label. The page measured is a
// harness around the report's SVG (the report itself runs no script); a
// screenshot of it goes to $RETRYAUDIT_GRAPH_SCREENSHOT when set.
func TestCallGraph30InBrowser(t *testing.T) {
	bin := chromium(t)
	out := renderAudit(t, &AuditReport{Topology: thirtyServices()})
	checkOffline(t, out)
	style := out[strings.Index(out, "<style>") : strings.Index(out, "</style>")+len("</style>")]
	svg := out[strings.Index(out, `<svg class="graph"`):]
	svg = svg[:strings.Index(svg, "</svg>")+len("</svg>")]
	page := "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" + style +
		"<style>body { max-width: none; margin: 0; padding: 0; }</style></head><body>" + svg +
		"<pre id=\"out\"></pre><script>" + overlapScript + "</script></body></html>"
	dir := t.TempDir()
	path := filepath.Join(dir, "graph.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(runChromium(t, bin, path, "--dump-dom"))
	i, j := strings.Index(dom, `<pre id="out">`), strings.Index(dom, "</pre>")
	if i < 0 || j < i {
		t.Fatalf("no measurements in the DOM:\n%s", dom)
	}
	var m struct {
		Nodes, Labels int
		Problems      []string
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(dom[i+len(`<pre id="out">`):j])), &m); err != nil {
		t.Fatal(err)
	}
	if m.Nodes != 30 || m.Labels == 0 {
		t.Errorf("%d services and %d link labels measured, want 30 and some", m.Nodes, m.Labels)
	}
	for _, p := range m.Problems {
		t.Error(p)
	}
	shot := filepath.Join(dir, "graph.png")
	if s := os.Getenv("RETRYAUDIT_GRAPH_SCREENSHOT"); s != "" {
		shot = s
	}
	w, _ := strconv.ParseFloat(attrs(svg[:strings.Index(svg, ">")+1])["width"], 64)
	h, _ := strconv.ParseFloat(attrs(svg[:strings.Index(svg, ">")+1])["height"], 64)
	width, height := int(w)+40, int(h)+60
	runChromium(t, bin, path, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", width, height))
	checkScreenshot(t, shot, width, height)
	t.Logf("screenshot: %s", shot)
}
