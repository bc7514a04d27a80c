package report

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
	"github.com/retryaudit/retryaudit/replay/audit"
)

// handCalibration is a hand-made calibration: one edge within tolerance,
// one outside, a root p90 outside, and a hostile operation name.
func handCalibration(pass bool) *replay.Calibration {
	c := &replay.Calibration{Seeds: 5, Tolerances: replay.DefaultTolerances(),
		Root: replay.RootCalibration{
			Traced:      replay.RootFigures{Requests: 115, SuccessRate: 0.913, ServerErrorRate: 0.052, P50MS: 11, P90MS: 302.6, P99MS: 1001.6},
			Replayed:    replay.RootFigures{Requests: 115, SuccessRate: 0.916, ServerErrorRate: 0.053, P50MS: 11.2, P90MS: 213.1, P99MS: 1031.2},
			ServerError: true, P50: true, P90: pass,
		},
		Edges: []replay.EdgeCalibration{
			{Caller: "api", Callee: "inventory", Operation: "GET /inventory/{sku}",
				Traced:   replay.EdgeFigures{Calls: 100, Attempts: 175, AttemptsPerCall: 1.75, FailureRate: 0.554},
				Replayed: replay.EdgeFigures{Calls: 98.9, Attempts: 175.3, AttemptsPerCall: 1.772, FailureRate: 0.558}, Within: true},
			{Caller: "inventory", Callee: "db", Operation: "GET /db|\x1b[31m*x*",
				Traced:   replay.EdgeFigures{Calls: 86, Attempts: 118, AttemptsPerCall: 1.372, FailureRate: 0.339},
				Replayed: replay.EdgeFigures{Calls: 85.5, Attempts: 130.4, AttemptsPerCall: 1.525, FailureRate: 0.39}, Within: pass},
		},
		Pass:   pass,
		Misses: []string{},
		Notes:  []string{"db: 4 workers (mean in flight 0.26 by Little's law × headroom 2, at least 4; held at any --load)"},
	}
	c.Arrivals = replay.ArrivalsTimeline
	// The traced figures' one-sigma bands, as compareRuns sets them.
	c.Root.Traced.P50BandMS, c.Root.Traced.P90BandMS = &[2]float64{1.4, 20.7}, &[2]float64{144.3, 341.8}
	c.Root.Traced.ServerErrorBand = &[2]float64{0.032, 0.082}
	if !pass {
		c.Arrivals = replay.ArrivalsPoisson
		c.Misses = []string{"root p90 213ms replayed vs 303ms traced (-30%, tolerance 25%)",
			"inventory → db GET /db: 1.525 attempts per call replayed vs 1.372 traced (tolerance ±0.069)"}
	}
	return c
}

func TestCalibrationGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		pass bool
	}{{"pass", true}, {"miss", false}} {
		for _, r := range []struct {
			ext    string
			render func(io.Writer, *replay.Calibration) error
		}{{"table", CalibrationTable}, {"md", CalibrationMarkdown}, {"json", CalibrationJSON}} {
			t.Run(tc.name+"/"+r.ext, func(t *testing.T) {
				var b bytes.Buffer
				if err := r.render(&b, handCalibration(tc.pass)); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(b.String(), "\x1b") {
					t.Errorf("raw escape byte in the output")
				}
				checkGolden(t, filepath.Join("testdata", "calibration-"+tc.name+"."+r.ext+".golden"), b.Bytes())
			})
		}
	}
}

// TestCalibrationJSONContract holds the names the issue fixes.
func TestCalibrationJSONContract(t *testing.T) {
	var b bytes.Buffer
	if err := CalibrationJSON(&b, handCalibration(false)); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Schema string `json:"schema"`
		Seeds  int    `json:"seeds"`
		Root   struct {
			Traced   map[string]any
			Replayed map[string]float64
		} `json:"root"`
		Edges []struct {
			Caller, Callee, Operation string
			Traced, Replayed          map[string]float64
			Within                    *bool
		} `json:"edges"`
		Pass   *bool    `json:"pass"`
		Misses []string `json:"misses"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Schema != CalibrationSchema || got.Seeds != 5 || got.Pass == nil || *got.Pass || len(got.Misses) != 2 || len(got.Edges) != 2 {
		t.Fatalf("contract broken: %s", b.String())
	}
	for _, k := range []string{"requests", "success_rate", "server_error_rate", "p50_ms", "p90_ms", "p99_ms"} {
		if _, ok := got.Root.Replayed[k]; !ok {
			t.Errorf("root.replayed lacks %s", k)
		}
	}
	// The traced side adds its figures' one-sigma bands, [low, high].
	for _, k := range []string{"server_error_rate", "p50_band_ms", "p90_band_ms", "server_error_band"} {
		if _, ok := got.Root.Traced[k]; !ok {
			t.Errorf("root.traced lacks %s", k)
		}
	}
	if b, ok := got.Root.Traced["server_error_band"].([]any); !ok || len(b) != 2 {
		t.Errorf("root.traced.server_error_band %v, want [low, high]", got.Root.Traced["server_error_band"])
	}
	for _, k := range []string{"calls", "attempts", "attempts_per_call", "failure_rate"} {
		if _, ok := got.Edges[0].Traced[k]; !ok {
			t.Errorf("edges[0].traced lacks %s", k)
		}
	}
	if got.Edges[0].Caller != "api" || got.Edges[0].Within == nil {
		t.Errorf("edge fields: %+v", got.Edges[0])
	}
}

// TestAuditShowsCalibrationFirst: the audit renders the calibration right
// after the worst-case line, and an uncalibrated recommendation says so, in
// every format.
func TestAuditShowsCalibrationFirst(t *testing.T) {
	a := &AuditReport{Schema: AuditSchema, Topology: &graph.Topology{}, Calibration: handCalibration(false),
		Recommendation: &audit.Recommendation{Policy: "observed", Reason: "best"}}
	var table, md, page bytes.Buffer
	if err := AuditTable(&table, a); err != nil {
		t.Fatal(err)
	}
	if err := AuditMarkdown(&md, a); err != nil {
		t.Fatal(err)
	}
	if err := AuditHTML(&page, a); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(table.String(), "\n")
	if !strings.HasPrefix(lines[0], "worst-case amplification") || !strings.HasPrefix(lines[2], "calibration: MISS") {
		t.Errorf("table does not open with the worst case, then the calibration:\n%s", strings.Join(lines[:4], "\n"))
	}
	if !strings.Contains(table.String(), "recommendation: uncalibrated") {
		t.Error("table: recommendation not marked uncalibrated")
	}
	if !strings.Contains(md.String(), "## Calibration") || !strings.Contains(md.String(), "**Uncalibrated**") {
		t.Error("markdown: no calibration section or uncalibrated mark")
	}
	h := page.String()
	if !strings.Contains(h, `id="calibration"`) || !strings.Contains(h, "<strong>Uncalibrated</strong>") || strings.Contains(h, "\x1b") {
		t.Error("html: no calibration section, no uncalibrated mark, or a raw escape byte")
	}
	if c, g := strings.Index(h, `id="calibration"`), strings.Index(h, `id="call-graph"`); c > g || strings.Contains(h, `id="capacity-plan"`) && c > strings.Index(h, `id="capacity-plan"`) {
		t.Error("html: calibration is not the first section")
	}
}

// TestAuditNotAdvised: the edges the recommendation gives no advice on
// (their retries unknown) are listed under it in every format, and
// nothing is listed where there are none.
func TestAuditNotAdvised(t *testing.T) {
	line := "loadgen → api GET /x: no advice on its retry policy: whether loadgen retries is unknown"
	for _, tc := range []struct {
		name       string
		notAdvised []string
		want       bool
	}{{"one edge", []string{line}, true}, {"none", nil, false}} {
		t.Run(tc.name, func(t *testing.T) {
			a := &AuditReport{Schema: AuditSchema, Topology: &graph.Topology{}, Calibration: handCalibration(true),
				Recommendation: &audit.Recommendation{Policy: "observed", Reason: "best", NotAdvised: tc.notAdvised}}
			var table, md, page bytes.Buffer
			if err := AuditTable(&table, a); err != nil {
				t.Fatal(err)
			}
			if err := AuditMarkdown(&md, a); err != nil {
				t.Fatal(err)
			}
			if err := AuditHTML(&page, a); err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct{ name, out, heading string }{
				{"table", table.String(), "not advised on:"},
				{"markdown", md.String(), "Not advised on:"},
				{"html", page.String(), "<h3>Not advised on</h3>"},
			} {
				if got := strings.Contains(f.out, f.heading) && strings.Contains(f.out, "no advice on its retry policy"); got != tc.want {
					t.Errorf("%s lists the edge not advised on: %v, want %v", f.name, got, tc.want)
				}
			}
		})
	}
}
