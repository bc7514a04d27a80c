package graph

import (
	"testing"
)

// TestHedgesAmplify: 3 gateway attempts, each hedged by api into 3
// concurrent requests, is 9 requests at the bottom, not 3; a hedged POST
// is a finding.
func TestHedgesAmplify(t *testing.T) {
	b := newBuilder()
	sequential(b, 3, "gateway", func(root, i int) {
		at := 1.0
		for k := 0; k < 3; k++ {
			status := httpStatus(503)
			if k == 2 {
				status = httpStatus(200)
			}
			c := b.client(root, "api", at, 100, status)
			s := b.server(c, "api", "POST /pay", at+0.5, 99, status)
			for h := 0; h < 3; h++ { // the original and two hedges, 20ms apart
				opts := []opt{method("POST"), name("POST"), target("http://ledger/pay/1")}
				if h == 2 {
					opts = append(opts, httpStatus(200))
				} else {
					opts = append(opts, failed("context canceled"))
				}
				b.client(s, "ledger", at+1+20*float64(h), 60-10*float64(h), opts...)
			}
			at += 110
		}
	})
	tp := b.infer()
	e := edge(t, tp, "api", "ledger")
	if e.Hedging == nil || e.Hedging.MaxRequests != 3 || e.Hedging.DelayMS != 20 || e.Hedging.NonIdempotent != 9 {
		t.Fatalf("hedging %+v", e.Hedging)
	}
	var worst int
	for _, p := range tp.Paths {
		if p.Services[len(p.Services)-1] == "ledger" {
			worst = p.WorstCaseAmplification
			wantEq(t, "exact", p.WorstCaseExact, false)
			wantEq(t, "layers", len(p.RetryingLayers), 2)
		}
	}
	wantEq(t, "worst case at ledger", worst, 9)
	f := finding(t, tp, FindingHedgeWrite)
	wantEq(t, "location", f.Location, "api → ledger POST")
	wantEq(t, "severity", f.Severity, SeverityHigh)
}
