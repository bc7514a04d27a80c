package report

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/tw"
)

func TestFit(t *testing.T) {
	g := grid{
		header: []string{"name", "n", "path", "note"},
		align:  []tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignLeft, tw.AlignLeft},
		rows: [][]string{
			{"inventory", "12", "/very/long/path/to/the/traces/file.json", "fine"},
			{"db", "3", "/short", "a rather long note here"},
		},
	}
	for _, tc := range []struct {
		name   string
		cols   int
		header []string
		row0   []string
		hidden []string
	}{
		{"no terminal", 0, g.header, g.rows[0], nil},
		{"fits", 200, g.header, g.rows[0], nil},
		{"abbreviated", 70, g.header, []string{"inventory", "12", "/very/long/pa…aces/file.json", "fine"}, nil},
		{"floors, then hidden", 50, []string{"name", "n", "path"}, []string{"inventory", "12", "/very/long/path/…traces/file.json"}, []string{"note"}},
		{"first column stays", 5, []string{"name"}, []string{"inventory"}, []string{"n", "path", "note"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, hidden := fit(g, tc.cols)
			if !reflect.DeepEqual(got.header, tc.header) || !reflect.DeepEqual(got.rows[0], tc.row0) || !reflect.DeepEqual(hidden, tc.hidden) {
				t.Errorf("got %q %q hidden %q, want %q %q %q", got.header, got.rows[0], hidden, tc.header, tc.row0, tc.hidden)
			}
			if len(hidden) == 0 && tc.cols > 0 {
				var buf bytes.Buffer
				if err := renderGrid(Width(&buf, tc.cols), got, false); err != nil {
					t.Fatal(err)
				}
				for _, l := range strings.Split(buf.String(), "\n") {
					if n := utf8.RuneCountInString(l); n > tc.cols {
						t.Errorf("line of %d > %d: %q", n, tc.cols, l)
					}
				}
			}
		})
	}
}

// TestTablesFit100: every table of the samples' topologies fits a
// 100-column terminal, and output without a width is the golden.
func TestTablesFit100(t *testing.T) {
	for _, in := range topologyInputs(t) {
		var buf bytes.Buffer
		if err := TopologyTable(Width(&buf, 100), in.topo); err != nil {
			t.Fatal(err)
		}
		inTable := false
		for _, l := range strings.Split(buf.String(), "\n") {
			switch {
			case strings.HasPrefix(l, "---"):
				inTable = true
			case l == "":
				inTable = false
			}
			if n := utf8.RuneCountInString(l); inTable && n > 100 {
				t.Errorf("%s: table line of %d columns: %q", in.name, n, l)
			}
		}
		if in.name == "mixed" {
			checkGolden(t, filepath.Join("testdata", "topology-mixed.table100.golden"), buf.Bytes())
		}
	}
}
