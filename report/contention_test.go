package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/retryaudit/retryaudit/replay"
)

// TestContentionRenderers: every renderer shows each row with its
// multiples of the reference, escapes hostile names, and the JSON round
// trips with its schema; an empty report says so.
func TestContentionRenderers(t *testing.T) {
	rep := &ContentionReport{Reference: "full jitter", Seed: 3, Seeds: 2, Notes: []string{"a | note"},
		Rows: []replay.ContentionRow{
			{Clients: 10, Strategy: "full jitter", CompletionS: 0.5, Calls: 80, TimeVsRef: 1, CallsVsRef: 1},
			{Clients: 10, Strategy: "evil\x1b[31m|x", CompletionS: 5, Calls: 160, TimeVsRef: 10, CallsVsRef: 2},
		}}
	for name, render := range map[string]func(*bytes.Buffer) error{
		"table":    func(b *bytes.Buffer) error { return ContentionTable(b, rep) },
		"markdown": func(b *bytes.Buffer) error { return ContentionMarkdown(b, rep) },
	} {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{"seeds 3–4", "0.50s", "10.00", "2.00", "160"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", name, want, out)
			}
		}
		if strings.Contains(out, "\x1b") {
			t.Errorf("%s: a control character got through:\n%q", name, out)
		}
	}
	var b bytes.Buffer
	if err := ContentionJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var back ContentionReport
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Schema != ContentionSchema || len(back.Rows) != 2 || back.Rows[1].CallsVsRef != 2 {
		t.Errorf("JSON round trip: %v, %+v", err, back)
	}
	b.Reset()
	if err := ContentionTable(&b, &ContentionReport{Reference: "full jitter", Seeds: 1}); err != nil || !strings.Contains(b.String(), "no runs") {
		t.Errorf("empty report: %v, %q", err, b.String())
	}
}
