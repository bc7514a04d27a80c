package replay

import (
	"testing"
)

func TestZZDbg(t *testing.T) {
	m := single("server", 6, Exponential{MeanS: 0.1}, 57, 0, Policy{MaxAttempts: 1})
	r, _ := Run(m, schedule("db-pool:svc=server,at=10s,for=8s,k=2"), RunConfig{Seed: 1, Duration: 40})
	t.Logf("avail %.3f work %.1f wasted %.1f verdict %s %s judged %v\n q %v\n good %v\n orig %v", r.Availability, r.WorkS, r.WastedS, r.Verdict, r.VerdictNote, r.JudgedToS, r.Series.QueueDepth, r.Series.Goodput, r.Series.Originals)
}
