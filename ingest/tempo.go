package ingest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
)

// decodeTempoDoc decodes one Grafana Tempo trace document:
//
//   - tempopb.Trace as /api/traces/{id} returns it, {"batches": [...]}: each
//     batch an OTLP ResourceSpans, with scopeSpans (Tempo 2) or the older
//     instrumentationLibrarySpans (Tempo 1), ids in base64 or hex;
//   - /api/v2/traces/{id}, {"trace": {...}, "status": ..., "message": ...},
//     whose trace holds resourceSpans (or batches).
//
// A "partial" status (some blocks could not be searched) is a warning, a
// trace that is not there an error; the spans decode as OTLP JSON.
func decodeTempoDoc(b []byte, emit emitFunc, w *warnings, fail func(int64, error) error) error {
	var doc struct {
		Batches       json.RawMessage `json:"batches"`
		ResourceSpans json.RawMessage `json:"resourceSpans"`
		Trace         json.RawMessage `json:"trace"`
		Status        string          `json:"status"`
		Message       string          `json:"message"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fail(jsonOffset(err), fmt.Errorf("Tempo JSON: %w", err))
	}
	switch doc.Status {
	case "", "complete", "COMPLETE":
	case "partial", "PARTIAL":
		w.add("tempo partial trace", "Tempo returned a partial trace: %s", cmp.Or(doc.Message, "some blocks were not searched"))
	default:
		w.add("tempo status", "Tempo status %q: %s", doc.Status, doc.Message)
	}
	if len(doc.Trace) > 0 && string(doc.Trace) != "null" {
		base := int64(bytes.Index(b, doc.Trace))
		return decodeTempoDoc(doc.Trace, emit, w, func(off int64, err error) error { return fail(base+off, err) })
	}
	spans := doc.Batches
	if len(spans) == 0 || string(spans) == "null" {
		spans = doc.ResourceSpans
	}
	if len(spans) == 0 || string(spans) == "null" {
		if doc.Message != "" {
			return fail(0, fmt.Errorf("Tempo response holds no trace: %s", doc.Message))
		}
		w.add("empty tempo trace", "a Tempo trace with no batches")
		return nil
	}
	if spans[0] != '[' {
		return fail(int64(bytes.Index(b, spans)), errors.New("Tempo JSON: batches: expected an array of ResourceSpans"))
	}
	// pdata reads OTLP's key: wrap the batches under it, keeping positions
	// relative to b.
	const prefix = `{"resourceSpans":`
	base := int64(bytes.Index(b, spans)) - int64(len(prefix))
	wrapped := make([]byte, 0, len(prefix)+len(spans)+1)
	wrapped = append(append(append(wrapped, prefix...), spans...), '}')
	return decodeOTLPJSONDoc(wrapped, emit, func(off int64, err error) error { return fail(max(0, base+off), err) })
}
