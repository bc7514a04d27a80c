package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The HTML report is checked in a real browser: headless Chromium, from
// Debian's chromium package (.ci/run installs it). Without it the tests
// skip, except under CI=true, where they fail.

// chromium returns the browser's path, or skips (fails under CI).
func chromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: CI must have it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium): skipping the browser test")
	return ""
}

// runChromium loads a file in headless Chromium with no network, no
// profile and console logging on stderr, with the extra flags given, and
// returns its stdout. It fails the test on any console message: the page
// has no script, so a message is the browser complaining (a CSP violation,
// an SVG attribute it cannot parse, an uncaught error).
func runChromium(t *testing.T, bin, file string, extra ...string) []byte {
	t.Helper()
	profile, err := os.MkdirTemp("", "retryaudit-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: a browser helper process may still be writing to the
	// profile as the test ends, and that is not the test's failure.
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"}
	args = append(append(args, extra...), "file://"+file)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(extra, " "), err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if consoleError(line) {
			t.Errorf("browser console: %s", line)
		}
	}
	return stdout.Bytes()
}

// consoleError reports whether a line of Chromium's log is a message of
// the page's console. Chromium writes CSP violations as "... violates the
// following Content Security Policy directive ..." (older versions
// "Refused to ..."), and script errors as "Uncaught ...".
func consoleError(line string) bool {
	for _, s := range []string{"Uncaught", "Refused to", "Content Security Policy", ":CONSOLE"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func TestConsoleError(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{`[1:1:1130/105917.952742:INFO:CONSOLE:2] "Error: <polyline> attribute points: Expected number, "1,2 x,4".", source: file:///tmp/bad.html (2)`, true},
		{`[1:1:1130/105917.953764:INFO:CONSOLE:2] "Loading the image 'http://127.0.0.1:9/x.png' violates the following Content Security Policy directive: "img-src data:". The action has been blocked."`, true},
		{`Refused to load the font 'https://example.com/x.woff2' because it violates the following Content Security Policy directive`, true},
		{`"Uncaught ReferenceError: undefinedFn is not defined"`, true},
		{`[1:2:1130/105914.192315:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Failed to connect to socket`, false},
		{`/usr/bin/chromium: 9: [: 25276059648: unexpected operator`, false},
	} {
		if got := consoleError(c.line); got != c.want {
			t.Errorf("consoleError(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}

// writeReport renders an audit to report.html in a temporary directory.
func writeReport(t *testing.T, a *AuditReport) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, []byte(renderAudit(t, a)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Chromium serialises attribute values with & and " escaped but < and >
// as they are; quotedRE takes them out to leave the DOM's markup.
var quotedRE = regexp.MustCompile(`="[^"]*"`)

func TestAuditHTMLInBrowser(t *testing.T) {
	bin := chromium(t)
	a := sampleAudit(t)
	path := writeReport(t, a)

	// The DOM the browser built holds every plotted series.
	dom := string(runChromium(t, bin, path, "--dump-dom"))
	if !strings.Contains(dom, "<svg class=\"graph\"") {
		t.Error("no call graph in the DOM")
	}
	checkSeries(t, dom, a.replayReport())
	if n := strings.Count(dom, `<g class="link retry"`); n != 3 {
		t.Errorf("%d retrying links in the call graph, want 3", n)
	}

	// A screenshot: the page drawn, with the retrying edges in red.
	shot := filepath.Join(t.TempDir(), "report.png")
	if s := os.Getenv("RETRYAUDIT_SCREENSHOT"); s != "" {
		shot = s
	}
	runChromium(t, bin, path, "--screenshot="+shot, "--window-size=1400,2000")
	checkScreenshot(t, shot, 1400, 2000)
	t.Logf("screenshot: %s", shot)
}

// checkScreenshot fails unless path is a PNG of the given size with a page
// drawn on it: mostly white, with ink, and some of the report's red.
func checkScreenshot(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), w, h)
	}
	ink, red, all := 0, 0, 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			all++
			if r < 200 || g < 200 || bl < 200 {
				ink++
			}
			if r > 150 && g < 90 && bl < 90 {
				red++
			}
		}
	}
	if ink < all/100 || ink > all/2 {
		t.Errorf("screenshot: %d of %d sampled pixels inked: not a page of text and charts", ink, all)
	}
	if red < 50 {
		t.Errorf("screenshot: %d red pixels: the retrying edges and retry series are not drawn", red)
	}
}

// TestAuditHTMLHostileInBrowser loads the hostile report: the browser's
// DOM must hold no element that span data named, no script and no image,
// and the hostile names must be there as text.
func TestAuditHTMLHostileInBrowser(t *testing.T) {
	bin := chromium(t)
	a := hostileAudit()
	dom := string(runChromium(t, bin, writeReport(t, a), "--dump-dom"))
	// Text is serialised with < escaped: every < left once the attribute
	// values are out opens an element.
	markup := strings.ToLower(quotedRE.ReplaceAllString(dom, `=""`))
	for _, tag := range tagRE.FindAllString(markup, -1) {
		for _, bad := range []string{"<script", "<img", "onerror", "src="} {
			if strings.Contains(tag, bad) {
				t.Errorf("the DOM holds %q in %s", bad, tag)
			}
		}
	}
	if !strings.Contains(dom, htmlText(evilScript)) {
		t.Errorf("no %q as text in the DOM", evilScript)
	}
	// Every polyline written is an element of the DOM, no more and no
	// fewer: the per-second series of every run (checkSeries counts them),
	// the rest the availability against utilization charts; and every
	// capacity line.
	out := renderAudit(t, a)
	if n, written := strings.Count(dom, "<polyline"), len(polylineRE.FindAllString(out, -1)); n != written {
		t.Errorf("%d polylines in the DOM, %d written", n, written)
	}
	checkSeries(t, dom, a.replayReport())
	if n, written := strings.Count(dom, `<line class="capacity"`), strings.Count(out, `<line class="capacity"`); n != written || n == 0 {
		t.Errorf("%d capacity lines in the DOM, %d written", n, written)
	}
}
