package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/retryaudit/retryaudit/graph"
	"github.com/retryaudit/retryaudit/replay"
)

// AuditSchema versions the JSON of an audit.
const AuditSchema = "retryaudit.audit/v1"

// AuditReport is everything `retryaudit audit` found: the topology, the
// replay matrix compared against the observed policies, and the
// recommendation. Its JSON is what `retryaudit report` renders again.
type AuditReport struct {
	Schema   string          `json:"schema"`
	Topology *graph.Topology `json:"topology"`
	// Calibration says whether the model reproduces the traces; when it
	// does not, the recommendation is printed as uncalibrated.
	Calibration    *replay.Calibration    `json:"calibration,omitempty"`
	Replay         *ReplayReport          `json:"replay"`
	Recommendation *replay.Recommendation `json:"recommendation"`
}

// AuditTable renders an audit for a terminal: first the worst-case
// amplification, then the calibration (does the model reproduce the
// traces?), the topology and its findings (TopologyTable), then per
// degradation the comparison against the observed policies (ReplayTable),
// then the recommendation.
func AuditTable(w io.Writer, a *AuditReport) error {
	var after func(io.Writer) error
	if a.Calibration != nil {
		after = func(w io.Writer) error { return CalibrationTable(w, a.Calibration) }
	}
	if err := topologyTable(w, a.Topology, after); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	if err := ReplayTable(w, a.Replay); err != nil {
		return err
	}
	if _, err := io.WriteString(w, uncalibratedText(a.Calibration, false)); err != nil {
		return err
	}
	return recommendationText(w, a.Recommendation, false)
}

// AuditMarkdown renders an audit ready to paste into an incident-review
// document.
func AuditMarkdown(w io.Writer, a *AuditReport) error {
	if _, err := fmt.Fprint(w, "# Retry audit\n\n"); err != nil {
		return err
	}
	var after func(io.Writer) error
	if a.Calibration != nil {
		after = func(w io.Writer) error { return CalibrationMarkdown(w, a.Calibration) }
	}
	if err := topologyMarkdown(w, a.Topology, after); err != nil {
		return err
	}
	if _, err := fmt.Fprint(w, "\n## Replay\n\n"); err != nil {
		return err
	}
	if err := ReplayMarkdown(w, a.Replay); err != nil {
		return err
	}
	if _, err := io.WriteString(w, uncalibratedText(a.Calibration, true)); err != nil {
		return err
	}
	return recommendationText(w, a.Recommendation, true)
}

// recommendationText writes the recommendation as text or Markdown.
func recommendationText(w io.Writer, r *replay.Recommendation, md bool) error {
	if r == nil {
		return nil
	}
	esc := printable
	if md {
		esc = mdEscape
	}
	var b strings.Builder
	if md {
		b.WriteString("\n## Recommendation\n\n")
	} else {
		b.WriteString("\nrecommendation:\n")
	}
	bullet := "  "
	if md {
		bullet = "- "
	}
	switch {
	case r.Policy == "":
		fmt.Fprintf(&b, "%s%s\n", bullet, esc(r.Reason))
	case md:
		fmt.Fprintf(&b, "Run **%s**: %s.\n\n", esc(r.Policy), esc(r.Reason))
	default:
		fmt.Fprintf(&b, "  run %s: %s.\n", display(r.Policy), printable(r.Reason))
	}
	if len(r.Changes) > 0 {
		if md {
			b.WriteString("\nChanges:\n\n")
		}
		for _, c := range r.Changes {
			where := c.Caller
			if c.Callee != "" {
				where = fmt.Sprintf("%s → %s %s", c.Caller, c.Callee, c.Operation)
			}
			fmt.Fprintf(&b, "%s%s: %s\n", bullet, esc(where), esc(c.Change))
		}
	}
	if len(r.Rejected) > 0 {
		if md {
			b.WriteString("\nRuled out:\n\n")
		} else {
			b.WriteString("  ruled out:\n")
		}
		for _, rj := range r.Rejected {
			if md {
				fmt.Fprintf(&b, "- %s: %s\n", esc(rj.Policy), esc(rj.Why))
			} else {
				fmt.Fprintf(&b, "    %s: %s\n", display(rj.Policy), printable(rj.Why))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
