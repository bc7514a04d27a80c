package ingest

import (
	"strconv"
	"strings"
)

// Where a span's head-sampling probability was read (Sampling.Source).
const (
	SampledJaeger     = "jaeger probabilistic"
	SampledTraceState = "tracestate th"
	// SampledRateLimited marks a span kept by a Jaeger rate-limiting (or
	// lower-bound) sampler: sampled, at a probability no span can tell.
	SampledRateLimited = "jaeger rate-limiting"
)

// samplerProb reads a Jaeger sampler's sampler.type and sampler.param: a
// probabilistic sampler keeps a share param of traces, a const sampler
// with param 1 keeps all. A rate-limiting sampler keeps param traces per
// second whatever the traffic, so it says nothing of the probability: it
// reports false, like an unknown or malformed sampler.
func samplerProb(typ, param string) (float64, bool) {
	p, err := strconv.ParseFloat(strings.TrimSpace(param), 64)
	if err != nil {
		return 0, false
	}
	switch strings.ToLower(typ) {
	case "probabilistic":
		return p, p > 0 && p <= 1
	case "const":
		return 1, p == 1
	}
	return 0, false
}

// traceStateProb reads an OpenTelemetry consistent-probability sampling
// threshold from a W3C tracestate: the ot= entry's th: sub-key holds up to
// 14 hex digits (trailing zeros dropped) of the rejection threshold T out
// of 2^56, and the sampling probability is 1 - T/2^56 (th:0 keeps all).
func traceStateProb(ts string) (float64, bool) {
	for _, member := range strings.Split(ts, ",") {
		v, ok := strings.CutPrefix(strings.TrimSpace(member), "ot=")
		if !ok {
			continue
		}
		for _, sub := range strings.Split(v, ";") {
			th, ok := strings.CutPrefix(sub, "th:")
			if !ok || th == "" || len(th) > 14 {
				continue
			}
			t, err := strconv.ParseUint(th+strings.Repeat("0", 14-len(th)), 16, 64)
			if err != nil {
				return 0, false
			}
			p := 1 - float64(t)/float64(uint64(1)<<56)
			return p, p > 0
		}
	}
	return 0, false
}

// sampler collects a span's or process's sampler tags.
type sampler struct{ typ, param string }

// tag records key=v if it is a sampler tag.
func (s *sampler) tag(key, v string) {
	switch key {
	case "sampler.type":
		s.typ = v
	case "sampler.param":
		s.param = v
	}
}

// apply sets sp's sampling probability from the tags, if they give one
// and sp has none yet.
func (s sampler) apply(set *Set, sp *Span) {
	if set.Sampling(sp) != (Sampling{}) || s.typ == "" {
		return
	}
	if p, ok := samplerProb(s.typ, s.param); ok {
		set.SetSampling(sp, Sampling{P: p, Source: SampledJaeger})
	} else if t := strings.ToLower(s.typ); t == "ratelimiting" || t == "lowerbound" {
		set.SetSampling(sp, Sampling{Source: SampledRateLimited})
	}
}
