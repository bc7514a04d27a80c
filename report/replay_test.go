package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
)

// replayRenderers are the renderers with golden files, by file extension.
var replayRenderers = []struct {
	ext    string
	render func(io.Writer, *ReplayReport) error
}{
	{"table", ReplayTable},
	{"md", ReplayMarkdown},
	{"json", ReplayJSON},
}

// stormReport runs the storm preset of package replay.
func stormReport(t *testing.T) *ReplayReport {
	t.Helper()
	p, err := replay.NewPreset("storm", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := p.Matrix.Run()
	if err != nil {
		t.Fatal(err)
	}
	return &ReplayReport{Schema: ReplaySchema, Baseline: "none", Notes: []string{p.About}, Runs: runs}
}

// handRun is a run with figures derived from k, so that every column
// differs from its neighbours.
func handRun(policy, degradation string, k float64) replay.Result {
	return replay.Result{
		Policy: policy, Degradation: degradation, Seed: 7, Triggered: degradation != "",
		RootRequests: 100, Succeeded: int(100 - 10*k), Availability: 1 - k/10, Goodput: 10 - k,
		WorkS: 10 + k, WorkAmplification: 1 + k/4, RetryShare: k / 20, WastedS: k * k,
		MeanMS: 40 + k, P50MS: 30 + k, P95MS: 90 + 10*k, P99MS: 120 + 100*k,
		RefusedByBudget: int(3 * k), RefusedByBreaker: int(k),
		RecoveryS: ptr(0.5 + k), Yield: ptr(0.1 * k), Events: 1000,
		Series: replay.Series{Originals: []int{10, 10}, Retries: []int{0, int(k)}, Goodput: []int{10, 9},
			QueueDepth: []int{0, 1}, Wasted: []float64{0, k}},
	}
}

// handReport covers what the storm preset may not: more than four
// policies besides the baseline, an undefined yield, a run that never
// recovers and one that is metastable, a run with no degradation, a
// degradation with no run of the baseline, and a hostile policy name.
func handReport() *ReplayReport {
	none := handRun("none", "outage 3s", 0)
	none.Yield = nil
	free := handRun("retries", "outage 3s", 1)
	free.Yield = nil // as much work as none: yield undefined
	never := handRun("immediate", "outage 3s", 6)
	never.RecoveryS, never.Metastable, never.Yield = nil, true, ptr(-0.0625)
	calm, calmNone := handRun("retries", "", 0.5), handRun("none", "", 0)
	calm.RecoveryS, calmNone.RecoveryS, calmNone.Yield = nil, nil, nil
	zero := handRun("budget", "outage 3s", 2)
	zero.WastedS = 0
	return &ReplayReport{
		Baseline: "none",
		Notes:    []string{"capacity of db assumed: 60/s (no traces of it at rest)", "preset " + evilPipe + " `x`\nsecond line"},
		Runs: []replay.Result{
			none, free, never, zero,
			handRun("backoff", "outage 3s", 3), handRun("backoff+jitter", "outage 3s", 4), handRun(evilPipe, "outage 3s", 5),
			calmNone, calm,
			handRun("retries", "slow 5s", 1), handRun("budget", "slow 5s", 2),
		},
	}
}

func replayInputs(t *testing.T) []struct {
	name string
	rep  *ReplayReport
} {
	return []struct {
		name string
		rep  *ReplayReport
	}{{"storm", stormReport(t)}, {"hand", handReport()}, {"empty", &ReplayReport{Baseline: "none"}}}
}

func TestReplayGolden(t *testing.T) {
	for _, in := range replayInputs(t) {
		for _, r := range replayRenderers {
			if in.name == "storm" && r.ext == "json" {
				continue // every run's series: TestReplayJSON checks its shape instead
			}
			t.Run(in.name+"/"+r.ext, func(t *testing.T) {
				var buf bytes.Buffer
				if err := r.render(&buf, in.rep); err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("testdata", "replay-"+in.name+"."+r.ext+".golden"), buf.Bytes())
			})
		}
	}
}

// TestReplayDeterministic runs the storm preset twice: equal runs must
// render to equal bytes.
func TestReplayDeterministic(t *testing.T) {
	a, b := stormReport(t), stormReport(t)
	for _, r := range replayRenderers {
		var x, y bytes.Buffer
		if err := r.render(&x, a); err != nil {
			t.Fatal(err)
		}
		if err := r.render(&y, b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x.Bytes(), y.Bytes()) {
			t.Errorf("%s: two renderings of the storm preset differ", r.ext)
		}
	}
}

func TestReplayJSON(t *testing.T) {
	for _, in := range replayInputs(t) {
		t.Run(in.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := ReplayJSON(&buf, in.rep); err != nil {
				t.Fatal(err)
			}
			var got struct {
				Schema   string            `json:"schema"`
				Baseline string            `json:"baseline"`
				Notes    []string          `json:"notes"`
				Runs     []json.RawMessage `json:"runs"`
			}
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Schema != "retryaudit.replay/v1" {
				t.Errorf("schema %q, want retryaudit.replay/v1", got.Schema)
			}
			if got.Baseline != in.rep.Baseline || got.Notes == nil || got.Runs == nil {
				t.Errorf("baseline %q, notes %v, runs %v", got.Baseline, got.Notes, got.Runs)
			}
			if len(got.Runs) != len(in.rep.Runs) {
				t.Fatalf("%d runs in JSON, %d in the report", len(got.Runs), len(in.rep.Runs))
			}
			for i, raw := range got.Runs {
				var run struct {
					Policy      *string          `json:"policy"`
					Degradation *string          `json:"degradation"`
					Seed        *uint64          `json:"seed"`
					Metastable  *bool            `json:"metastable"`
					Series      map[string][]any `json:"series"`
				}
				if err := json.Unmarshal(raw, &run); err != nil {
					t.Fatal(err)
				}
				want := in.rep.Runs[i]
				if run.Policy == nil || *run.Policy != want.Policy || run.Degradation == nil || *run.Degradation != want.Degradation ||
					run.Seed == nil || *run.Seed != want.Seed || run.Metastable == nil || *run.Metastable != want.Metastable {
					t.Errorf("run %d: %s", i, raw)
				}
				n := len(want.Series.Goodput)
				if n == 0 {
					t.Fatalf("run %d (%s under %s) has no series to check", i, want.Policy, want.Degradation)
				}
				for _, k := range []string{"originals", "retries", "goodput", "queue_depth", "wasted_s"} {
					if len(run.Series[k]) != n {
						t.Errorf("run %d: series %s has %d points, want %d", i, k, len(run.Series[k]), n)
					}
				}
			}
			// The report itself is left as it was.
			if in.name == "empty" && (in.rep.Schema != "" || in.rep.Notes != nil || in.rep.Runs != nil) {
				t.Errorf("ReplayJSON changed its input: %+v", in.rep)
			}
		})
	}
}

// blockOf returns the lines of the degradation block titled title in a
// ReplayTable output, up to the next blank line after its tables.
func blockOf(t *testing.T, out, title string) []string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if l != title {
			continue
		}
		var block []string
		for _, l := range lines[i+1:] {
			if strings.HasPrefix(l, "degradation: ") || l == "no degradation" || l == "notes:" {
				break
			}
			block = append(block, l)
		}
		return block
	}
	t.Fatalf("no line %q in:\n%s", title, out)
	return nil
}

// headers returns the header lines of the tables in a block: the line
// before each rule.
func headers(block []string) [][]string {
	var out [][]string
	for i, l := range block {
		if i > 0 && strings.HasPrefix(l, "---") {
			out = append(out, strings.Fields(block[i-1]))
		}
	}
	return out
}

func rowOf(block []string, metric string) []string {
	for _, l := range block {
		if strings.HasPrefix(l, " "+metric+"  ") {
			return strings.Fields(strings.TrimPrefix(l, " "+metric))
		}
	}
	return nil
}

func TestReplayTableLayout(t *testing.T) {
	var buf bytes.Buffer
	if err := ReplayTable(&buf, handReport()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()

	// Six policies besides none: two tables of three, each with none first.
	block := blockOf(t, out, "degradation: outage 3s")
	hs := headers(block)
	want := [][]string{
		{"none", "retries", "vs", "none", "immediate", "vs", "none", "budget", "vs", "none"},
		{"none", "backoff", "vs", "none", "backoff+jitter", "vs", "none", evilPipe, "vs", "none"},
	}
	if len(hs) != len(want) {
		t.Fatalf("%d tables for outage 3s, want %d:\n%s", len(hs), len(want), out)
	}
	for i := range want {
		if strings.Join(hs[i], " ") != strings.Join(want[i], " ") {
			t.Errorf("table %d header %q, want %q", i+1, hs[i], want[i])
		}
	}
	if got := rowOf(block, "metastable"); strings.Join(got[:4], " ") != "no no METASTABLE no" {
		t.Errorf("metastable row %q", got)
	}
	if got := rowOf(block, "recovery (s)"); strings.Join(got[:5], " ") != "0.5 1.5 +1.0 never 2.5" {
		t.Errorf("recovery row %q", got)
	}
	// retries' yield is undefined: a marker to the first note after the
	// report's own two.
	if got := rowOf(block, "yield"); strings.Join(got[:5], " ") != "- n/a [3] -0.062 0.200" {
		t.Errorf("yield row %q", got)
	}
	if !strings.Contains(out, "\n[3] n/a: yield is undefined when a policy does no extra work against none") {
		t.Errorf("no note for the undefined yield in:\n%s", out)
	}
	// Wasted work against a baseline of zero.
	if got := rowOf(block, "wasted work (s)"); strings.Join(got[:3], " ") != "0.00 1.00 +∞%" {
		t.Errorf("wasted work row %q", got)
	}

	// No degradation: no recovery to measure.
	if got := rowOf(blockOf(t, out, "no degradation"), "recovery (s)"); strings.Join(got, " ") != "- -" {
		t.Errorf("recovery with no degradation %q", got)
	}
	// No baseline run: the first policy stands in, and a note says so.
	slow := blockOf(t, out, "degradation: slow 5s [4]")
	if h := headers(slow); len(h) != 1 || strings.Join(h[0], " ") != "retries budget vs retries" {
		t.Errorf("slow 5s headers %q", h)
	}
	if !strings.Contains(out, "\n[4] no run of baseline none under slow 5s: compared with retries, the first policy run there\n") {
		t.Errorf("no note for the missing baseline in:\n%s", out)
	}
	// Free text in notes stays on one line.
	if !strings.Contains(out, "\n[2] preset pipe|name `x`\\nsecond line\n") {
		t.Errorf("report note not on one line in:\n%s", out)
	}
}

func TestReplayMarkdownTables(t *testing.T) {
	var buf bytes.Buffer
	if err := ReplayMarkdown(&buf, handReport()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	columns, tables := -1, 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			columns = -1
			continue
		}
		row := splitCells(line)
		if columns < 0 {
			columns = len(row)
			tables++
		}
		if len(row) != columns {
			t.Errorf("row has %d cells, table has %d (a raw | in a cell?): %q", len(row), columns, line)
		}
	}
	// outage 3s in two tables, no degradation and slow 5s in one each.
	if tables != 4 {
		t.Errorf("%d tables, want 4:\n%s", tables, out)
	}
	for _, want := range []string{"| METASTABLE |", `pipe\|name`, "n/a \\[3\\]", "\n3. n/a: yield is undefined", "\n### degradation: slow 5s \\[4\\]\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

func TestReplayStormOutage(t *testing.T) {
	rep := stormReport(t)
	var buf bytes.Buffer
	if err := ReplayTable(&buf, rep); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	block := blockOf(t, out, "degradation: outage 3s")
	if hs := headers(block); len(hs) != 1 || hs[0][0] != "none" {
		t.Fatalf("outage 3s: want one table with none first, got headers %q", hs)
	}
	meta := rowOf(block, "metastable")
	var wantMeta []string
	for _, r := range rep.Runs {
		if r.Degradation != "outage 3s" || r.Policy == "none" {
			continue
		}
		if r.Metastable {
			wantMeta = append(wantMeta, "METASTABLE")
		} else {
			wantMeta = append(wantMeta, "no")
		}
	}
	if strings.Join(meta[1:], " ") != strings.Join(wantMeta, " ") {
		t.Errorf("metastable row %q, want none's then %q", meta, wantMeta)
	}
	if !strings.HasPrefix(out, "seed: 1\nbaseline: none\n\ndegradation: blip 1s\n") {
		t.Errorf("storm table starts:\n%s", out[:min(len(out), 200)])
	}
	if !strings.Contains(out, "\nnotes:\n[1] "+rep.Notes[0]+"\n") {
		t.Errorf("preset description not the first note:\n%s", out)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestReplayWriteError(t *testing.T) {
	for _, r := range replayRenderers {
		if err := r.render(failingWriter{}, handReport()); err == nil {
			t.Errorf("%s: no error from a failing writer", r.ext)
		}
	}
}

func TestReplayNumbers(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"fixed", fixed(0.9196, 3), "0.920"},
		{"fixed keeps zeros", fixed(2, 2), "2.00"},
		{"fixed negative zero", fixed(-0.0001, 2), "0.00"},
		{"signed up", signed(0.234, 2), "+0.23"},
		{"signed down", signed(-1.5, 2), "-1.50"},
		{"signed zero", signed(0.001, 2), "0.00"},
		{"signed negative zero", signed(-0.001, 2), "0.00"},
		{"relative", relative(0.931, 0.91), "+2.3%"},
		{"relative down", relative(0.2625, 0.9197), "-71.5%"},
		{"relative large", relative(3000, 92.46), "+3145%"},
		{"relative same", relative(5, 5), "0.0%"},
		{"relative from zero", relative(1, 0), "+∞%"},
		{"relative zero", relative(0, 0), "0.0%"},
		{"optional", optionalDelta(ptr(3.0), ptr(1.0), 1), "+2.0"},
		{"optional undefined", optionalDelta(nil, ptr(1.0), 1), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	for _, tc := range []struct {
		n, per int
		want   string
	}{{0, 4, "[[0 0]]"}, {4, 4, "[[0 4]]"}, {5, 4, "[[0 3] [3 5]]"}, {6, 4, "[[0 3] [3 6]]"}, {9, 4, "[[0 3] [3 6] [6 9]]"}} {
		if got := fmt.Sprint(split(tc.n, tc.per)); got != tc.want {
			t.Errorf("split(%d, %d) = %s, want %s", tc.n, tc.per, got, tc.want)
		}
	}
}
