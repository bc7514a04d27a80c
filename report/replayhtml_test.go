package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/audit"
)

// stormHTMLReport is the storm preset's replay with the capacity of its
// server under each degradation, as `retryaudit replay --scenario storm`
// builds it.
func stormHTMLReport(t *testing.T) *ReplayReport {
	t.Helper()
	rep := stormReport(t)
	p, err := replay.NewPreset("storm", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := audit.Capacity(p.Matrix.Variants[0].Model, "server")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Matrix.Degradations {
		rep.Capacities = append(rep.Capacities, Capacity{Degradation: d.Name, Service: "server", AttemptsPerS: c})
	}
	return rep
}

func renderReplay(t *testing.T, rep *ReplayReport) string {
	t.Helper()
	var buf bytes.Buffer
	if err := ReplayHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// heights are the heights of a polyline's points above the axis at y1.
func heights(t *testing.T, points string, y1 float64) []float64 {
	t.Helper()
	var out []float64
	for _, p := range strings.Fields(points) {
		_, y, _ := strings.Cut(p, ",")
		v, err := strconv.ParseFloat(y, 64)
		if err != nil {
			t.Fatalf("point %q", p)
		}
		out = append(out, y1-v)
	}
	return out
}

func TestReplayHTMLStorm(t *testing.T) {
	rep := stormHTMLReport(t)
	out := renderReplay(t, rep)
	checkOffline(t, out)
	checkSeries(t, out, rep)
	for _, want := range []string{
		"<title>Retry replay</title>",
		"5 policies under 2 degradations",
		"<h3 id=\"degradation-1\">degradation: blip 1s</h3>",
		"shaded: the trigger, 10 s to 13 s",
		// One layer: the stacked line is the attempts to the server, and
		// its capacity, 6 workers at 100 ms, is drawn over it.
		"server capacity: 60 attempts/s (every worker busy, no fault); the offered originals &#43; retries are the attempts to server",
		"<th class=\"r\">backoff&#43;jitter</th>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the report", want)
		}
	}
	if n := strings.Count(out, `<line class="capacity" data-capacity="server capacity 60/s"`); n != len(rep.Runs) {
		t.Errorf("%d capacity lines, want one per run (%d)", n, len(rep.Runs))
	}
	// Retries are stacked on the originals: the retries line is never
	// below the originals line, and above it somewhere in a retrying run.
	// No line drops to zero in its last second: the drain bucket is not
	// plotted, and in a run that recovered the last goodput point stands
	// at least half as high as the median one.
	y1 := float64(rateH - padB)
	lines := map[[2]string][]float64{}
	for _, tag := range polylineRE.FindAllString(out, -1) {
		a := attrs(tag)
		if a["data-series"] == "originals" || a["data-series"] == "retries" || a["data-series"] == "goodput" {
			lines[[2]string{a["data-policy"] + "|" + a["data-degradation"], a["data-series"]}] = heights(t, a["points"], y1)
		}
	}
	above := 0
	for _, r := range rep.Runs {
		k := display(r.Policy) + "|" + display(r.Degradation)
		orig, retr, good := lines[[2]string{k, "originals"}], lines[[2]string{k, "retries"}], lines[[2]string{k, "goodput"}]
		if len(orig) != len(retr) || len(good) == 0 {
			t.Fatalf("%s: %d originals, %d retries, %d goodput points", k, len(orig), len(retr), len(good))
		}
		for i := range orig {
			if retr[i] < orig[i]-1e-9 {
				t.Errorf("%s: second %d: originals + retries below originals", k, i)
			}
			if retr[i] > orig[i]+1e-9 {
				above++
			}
		}
		sorted := append([]float64(nil), good...)
		slices.Sort(sorted)
		if last, median := good[len(good)-1], sorted[len(sorted)/2]; !r.Metastable && last < median/2 {
			t.Errorf("%s: goodput drops to %.1f px in the last second (median %.1f px)", k, last, median)
		}
		if want := len(r.Series.Goodput) - 1; len(good) != want {
			t.Errorf("%s: %d goodput points, want %d (the drain bucket left out)", k, len(good), want)
		}
	}
	if above == 0 {
		t.Error("the retries line is never above the originals: not stacked")
	}
}

// TestReplayHTMLHostile renders the hostile audit's runs as a replay page:
// every tag the template's, every name escaped, every series there.
func TestReplayHTMLHostile(t *testing.T) {
	rep := hostileAudit().replayReport()
	out := renderReplay(t, rep)
	checkOffline(t, out)
	checkSeries(t, out, rep)
	checkGolden(t, filepath.Join("testdata", "replay-hostile.html.golden"), []byte(out))
	for _, name := range []string{evilScript, evilImg} {
		if !strings.Contains(out, htmlText(name)) {
			t.Errorf("%q is not shown escaped", name)
		}
	}
	for _, raw := range []string{"<script>alert", "onerror=alert(1)>", `"><img`} {
		if strings.Contains(out, raw) {
			t.Errorf("unescaped %q in the output", raw)
		}
	}
	if n := strings.Count(out, `data-series="dependency"`); n != 3 {
		t.Errorf("%d series of the attempts to the dependency, want 3", n)
	}
	for name, r := range map[string]*ReplayReport{"nil": nil, "empty": {}} {
		out := renderReplay(t, r)
		checkOffline(t, out)
		if !strings.Contains(out, "No runs.") {
			t.Errorf("%s: an empty replay does not say so", name)
		}
	}
	if err := ReplayHTML(failingWriter{}, rep); err == nil {
		t.Error("no error from a failing writer")
	}
}

// TestReplayHTMLInBrowser loads the storm page in headless Chromium: the
// DOM holds every series and capacity line written, and a screenshot is
// drawn.
func TestReplayHTMLInBrowser(t *testing.T) {
	bin := chromium(t)
	rep := stormHTMLReport(t)
	out := renderReplay(t, rep)
	path := filepath.Join(t.TempDir(), "storm.html")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(runChromium(t, bin, path, "--dump-dom"))
	checkSeries(t, dom, rep)
	if n, written := strings.Count(dom, `<line class="capacity"`), strings.Count(out, `<line class="capacity"`); n != written || n != len(rep.Runs) {
		t.Errorf("%d capacity lines in the DOM, %d written, want %d", n, written, len(rep.Runs))
	}
	shot := filepath.Join(t.TempDir(), "storm.png")
	runChromium(t, bin, path, "--screenshot="+shot, "--window-size=1400,1400")
	checkScreenshot(t, shot, 1400, 1400)
}
