package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// seedFiles returns the reference traces and committed samples, for seeding
// fuzz corpora with real input.
func seedFiles(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, pattern := range []string{
		filepath.Join("..", "..", "shared", "realtraces", "*.json*"),
		filepath.Join("..", "samples", "*", "traces.*"),
	} {
		names, _ := filepath.Glob(pattern)
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				f.Fatal(err)
			}
			if len(b) > 256<<10 {
				b = b[:256<<10] // keep the corpus quick; a cut file is a good seed too
			}
			out = append(out, b)
		}
	}
	return out
}

// checkDecoded is the property every fuzz target asserts: a decoder that
// returns no error produced well-formed records.
func checkDecoded(t *testing.T, set *Set, err error) {
	if err != nil {
		if !strings.HasPrefix(err.Error(), "ingest fuzz") {
			t.Fatalf("error does not name the input: %v", err)
		}
		return
	}
	for i := range set.Spans {
		sp := &set.Spans[i]
		if sp.Kind > KindConsumer || sp.Status > StatusError {
			t.Fatalf("span %d: kind %d status %d", i, sp.Kind, sp.Status)
		}
		if int(sp.FirstLink)+int(sp.NumLinks) > len(set.Links) {
			t.Fatalf("span %d: links out of range", i)
		}
		for _, x := range []Sym{sp.Service, sp.Name, sp.Peer, sp.Method, sp.Route, sp.StatusMessage, sp.ErrorType} {
			if len(set.Str(x)) > MaxValueBytes {
				t.Fatalf("span %d keeps a %d-byte string", i, len(set.Str(x)))
			}
		}
	}
}

// FuzzDecode drives format detection and every decoder behind it.
func FuzzDecode(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
	}
	f.Add([]byte(request(span("3", str("peer.service", "x")))))
	f.Fuzz(func(t *testing.T, b []byte) {
		set := NewSet()
		err := Decode(context.Background(), set, "fuzz", bytes.NewReader(b), Options{MaxDocumentBytes: 1 << 20})
		checkDecoded(t, set, err)
		if err == nil {
			Summarize(set.Spans, DefaultClockSkew)
		}
	})
}

// FuzzOTLPJSON targets the OTLP JSON decoder, including the normalising
// fallback for dialects pdata rejects.
func FuzzOTLPJSON(f *testing.F) {
	for _, seed := range []string{
		request(span("3", str("peer.service", "inventory")+","+num("http.response.status_code", 503))),
		strings.NewReplacer(`scopeSpans`, `instrumentationLibrarySpans`, `"kind":3`, `"kind":"client"`).Replace(request(span("3", ""))),
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"g6nv0VwcmKl34HEcyT7iiw==","spanId":"4SevmeOz4HQ="}]}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		set := NewSet()
		err := decodeOTLPJSONStream(testSource("fuzz", b, 1<<20), set, &warnings{}, FormatOTLPJSON)
		checkDecoded(t, set, err)
	})
}

// FuzzOTLPProtoStream targets the length-prefixed protobuf decoder.
func FuzzOTLPProtoStream(f *testing.F) {
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(request(span("3", str("peer.service", "inventory")))))
	if err != nil {
		f.Fatal(err)
	}
	pb, _ := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	f.Add(append(binary.BigEndian.AppendUint32(nil, uint32(len(pb))), pb...))
	f.Add(pb)
	f.Fuzz(func(t *testing.T, b []byte) {
		set := NewSet()
		err := decodeOTLPProtoStream(testSource("fuzz", b, 1<<20), set, &warnings{})
		checkDecoded(t, set, err)
		set = NewSet()
		err = decodeOTLPProto(testSource("fuzz", b, 1<<20), set, &warnings{})
		checkDecoded(t, set, err)
	})
}
