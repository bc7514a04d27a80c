package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

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
	for i, e := range t.Edges {
		if e.Caller == "" || e.Callee == "" {
			return nil, fmt.Errorf("edges[%d]: caller and callee are required", i)
		}
		if e.MaxAttempts < 1 {
			return nil, fmt.Errorf("edges[%d] (%s → %s): max_attempts %d: want 1 or more", i, e.Caller, e.Callee, e.MaxAttempts)
		}
	}
	return &t, nil
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
