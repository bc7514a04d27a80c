package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// MaxInstances is the most process instances a service may have
// (Service.Instances): as many as ingest can tell apart.
const MaxInstances = 1 << 16

// ReadTopology reads a topology written by `retryaudit infer --format json`
// (and perhaps edited by hand). Unknown fields are errors, so a misspelt
// field in an edited file is caught rather than ignored; errors give the
// line and column.
func ReadTopology(r io.Reader) (*Topology, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t Topology
	if err := dec.Decode(&t); err != nil {
		return nil, positioned(b, err)
	}
	if t.Schema != Schema {
		return nil, fmt.Errorf("schema %q: this version reads %q", t.Schema, Schema)
	}
	for i, s := range t.Services {
		if s.Instances < 0 || s.Instances > MaxInstances {
			return nil, fmt.Errorf("services[%d] (%s): instances %d: want 0 (not known) to %d", i, s.Name, s.Instances, MaxInstances)
		}
	}
	for i, e := range t.Edges {
		if e.Caller == "" || e.Callee == "" {
			return nil, fmt.Errorf("edges[%d]: caller and callee are required", i)
		}
		if e.MaxAttempts < 1 {
			return nil, fmt.Errorf("edges[%d] (%s → %s): max_attempts %d: want 1 or more", i, e.Caller, e.Callee, e.MaxAttempts)
		}
		if err := readIncidents(&t, i); err != nil {
			return nil, err
		}
	}
	if t.Calibration != nil {
		t.Calibration.BucketS = 0
	}
	return &t, nil
}

// readIncidents checks edge i's incidents (failure episodes) and turns
// those of a topology written before episodes, a time bucket each, into
// the span of time the bucket covered (Calibration.BucketS wide, 0.5 s
// where it is not given).
func readIncidents(t *Topology, i int) error {
	e := &t.Edges[i]
	if e.Outcomes == nil {
		return nil
	}
	width := legacyBucketS
	if t.Calibration != nil && t.Calibration.BucketS > 0 {
		width = t.Calibration.BucketS
	}
	for j := range e.Outcomes.Incidents {
		inc := &e.Outcomes.Incidents[j]
		if b := inc.Bucket; b != nil {
			if *b < 0 {
				return fmt.Errorf("edges[%d] (%s → %s): incidents[%d]: bucket %d: want 0 or more", i, e.Caller, e.Callee, j, *b)
			}
			inc.StartMS, inc.EndMS, inc.Bucket = float64(*b)*width*1000, float64(*b+1)*width*1000, nil
		}
		if !(inc.StartMS >= 0 && inc.EndMS > inc.StartMS) || math.IsInf(inc.EndMS, 0) {
			return fmt.Errorf("edges[%d] (%s → %s): incidents[%d]: from %gms to %gms: want 0 ≤ start_ms < end_ms", i, e.Caller, e.Callee, j, inc.StartMS, inc.EndMS)
		}
	}
	return nil
}

// positioned adds the line and column of a JSON error's offset.
func positioned(b []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return err
	}
	line := 1 + bytes.Count(b[:off], []byte{'\n'})
	col := off - int64(bytes.LastIndexByte(b[:off], '\n'))
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}
