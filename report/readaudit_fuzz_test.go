package report

import (
	"bytes"
	"testing"
)

// FuzzReadAudit: any bytes either fail to decode with an error naming the
// file, or decode into a report every renderer renders without panicking.
func FuzzReadAudit(f *testing.F) {
	f.Add([]byte(`{"schema": "retryaudit.audit/v2", "topology": {}, "recommendation": {"policy": "budget"}, "verdicts": [{"policy": "budget", "seeds": 2, "critical_utilization": 0.4, "critical_utilization_searched": true, "probes": [{"utilization": 0.5, "availability": 0.9}]}]}`))
	f.Add([]byte(`{"schema": "retryaudit.audit/v1", "topology": {}, "replay": {"runs": [{"policy": "none", "degradation": "d", "metastable": true}]}, "recommendation": {"changes": [{"change": "x"}]}}`))
	f.Add([]byte(`{"schema": "retryaudit.audit/v9"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ReadAudit("in.json", data)
		if err != nil {
			if !bytes.Contains([]byte(err.Error()), []byte("in.json")) {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		var buf bytes.Buffer
		for _, render := range []func(*bytes.Buffer, *AuditReport) error{
			func(b *bytes.Buffer, a *AuditReport) error { return AuditTable(b, a) },
			func(b *bytes.Buffer, a *AuditReport) error { return AuditMarkdown(b, a) },
			func(b *bytes.Buffer, a *AuditReport) error { return AuditHTML(b, a) },
			func(b *bytes.Buffer, a *AuditReport) error { return AuditJSON(b, a) },
		} {
			buf.Reset()
			if err := render(&buf, a); err != nil {
				t.Errorf("render: %v", err)
			}
		}
	})
}
