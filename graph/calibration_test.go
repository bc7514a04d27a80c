package graph

import (
	"math"
	"testing"

	"github.com/retryaudit/retryaudit/ingest"
)

// TestCalibrationStats checks the statistics replay is built from on a
// hand-made trace set: outcome mixes split by first attempt and retry,
// self time without the waits between attempts, Little's law over the
// arrival window, the peak in flight, and sampling.
func TestCalibrationStats(t *testing.T) {
	b := newBuilder()
	// Ten roots 100 ms apart, each 20 ms, calling db once; the first three
	// fail once with 503 and are retried after a 50 ms wait, which the
	// caller spends waiting, not working.
	for i := range 10 {
		b.newTrace()
		start := float64(100 * i)
		root := b.server(-1, "api", "GET /x", start, 20, func(s *ingest.Set, sp *ingest.Span) {
			s.SetSampling(sp, ingest.Sampling{P: 0.25, Source: ingest.SampledTraceState})
		})
		if i < 3 {
			b.set.Spans[root].End = at(start + 80)
			b.client(root, "db", start+2, 5, httpStatus(503))
			b.client(root, "db", start+57, 5, httpStatus(200))
		} else {
			b.client(root, "db", start+2, 5, httpStatus(200))
		}
	}
	tp := b.infer()
	c := tp.Calibration
	if c == nil {
		t.Fatal("no calibration")
	}
	// Roots start 0..900 ms: window 0.9 s plus one mean gap of 0.1 s.
	if math.Abs(c.ArrivalWindowS-1) > 1e-9 || math.Abs(c.RootRatePerS-10) > 1e-9 {
		t.Errorf("arrival window %gs, rate %g/s; want 1s, 10/s", c.ArrivalWindowS, c.RootRatePerS)
	}
	if c.Sampling.Probability != 0.25 || c.Sampling.LowerBound || c.Sampling.Roots != 10 {
		t.Errorf("sampling %+v, want 0.25 from every root", c.Sampling)
	}
	if c.Root.Requests != 10 || c.Root.SuccessRate != 1 || c.Root.ServerErrorRate != 0 {
		t.Errorf("root %+v", c.Root)
	}
	var api ServiceLoad
	for _, l := range c.InFlight {
		if l.Service == "api" {
			api = l
		}
	}
	// Σ durations = 3×80 + 7×20 = 380 ms over 1 s; never two at once.
	if math.Abs(api.InFlight-0.38) > 1e-9 || api.PeakInFlight != 1 {
		t.Errorf("api in flight %+v, want 0.38 mean, peak 1", api)
	}
	e := edge(t, tp, "api", "db")
	o := e.Outcomes
	if o == nil || o.First.OK != 7 || o.First.ServerError != 3 || o.Retry.OK != 3 || o.Retry.Failed() != 0 {
		t.Fatalf("outcomes %+v", o)
	}
	if len(o.RetryByAttempt) != 1 || o.RetryByAttempt[0].OK != 3 {
		t.Errorf("retry by attempt %+v", o.RetryByAttempt)
	}
	var op Operation
	for _, s := range tp.Services {
		for _, x := range s.Operations {
			if s.Name == "api" {
				op = x
			}
		}
	}
	// The retried roots spend 80 ms: 10 ms in db calls, 50 ms waiting
	// between attempts, 20 ms of their own work; the others 15 ms.
	if n := len(op.WorkQuantilesMS); n != len(WorkLevels) || op.WorkQuantilesMS[n-1] > 20.001 || op.WorkQuantilesMS[0] < 14.999 {
		t.Errorf("api work quantiles %v: want 15 to 20 ms, waits excluded", op.WorkQuantilesMS)
	}
}

// TestIncidentTimeline: a dependency down for two seconds shows up as
// incident buckets, and the healthy mix leaves them out.
func TestIncidentTimeline(t *testing.T) {
	b := newBuilder()
	for i := range 100 {
		b.newTrace()
		start := float64(50 * i) // 20 per second for 5 s
		root := b.server(-1, "api", "GET /x", start, 10)
		status := 200
		if start >= 2000 && start < 4000 {
			status = 503
		}
		b.client(root, "db", start+1, 2, httpStatus(status))
	}
	o := edge(t, b.infer(), "api", "db").Outcomes
	if len(o.Incidents) != 4 || o.Incidents[0].Bucket != 4 || o.Incidents[3].Bucket != 7 {
		t.Fatalf("incidents %+v, want buckets 4 to 7 (2 s to 4 s)", o.Incidents)
	}
	if o.First.Failed() != 0 || o.First.OK != 60 {
		t.Errorf("healthy first attempts %+v, want 60 ok", o.First)
	}
}

// TestSamplingWeights: roots kept at different probabilities weigh by
// their own; roots that say nothing make the rate a lower bound.
func TestSamplingWeights(t *testing.T) {
	for _, c := range []struct {
		name   string
		probs  []float64
		source string
		want   Sampling
	}{
		{"mixed probabilities", []float64{0.5, 0.5, 0.25, 0.25}, ingest.SampledTraceState,
			Sampling{Probability: round6(4.0 / 12), Source: ingest.SampledTraceState, Roots: 4}},
		{"some roots silent", []float64{0.5, 0}, ingest.SampledJaeger,
			Sampling{Probability: round6(2.0 / 3), Source: ingest.SampledJaeger, LowerBound: true, Roots: 1}},
		{"rate limited", []float64{0, 0}, ingest.SampledRateLimited,
			Sampling{Probability: 1, Source: ingest.SampledRateLimited + " (probability unknown)", LowerBound: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder()
			for i, p := range c.probs {
				b.newTrace()
				b.server(-1, "api", "GET /", float64(10*i), 1, func(s *ingest.Set, sp *ingest.Span) {
					if p > 0 || c.source == ingest.SampledRateLimited {
						s.SetSampling(sp, ingest.Sampling{P: p, Source: c.source})
					}
				})
			}
			if got := b.infer().Calibration.Sampling; got != c.want {
				t.Errorf("sampling %+v, want %+v", got, c.want)
			}
		})
	}
}
