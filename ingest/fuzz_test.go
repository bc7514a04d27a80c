package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
		ex := set.Extra(sp)
		if int(ex.FirstLink)+int(ex.NumLinks) > len(set.Links) {
			t.Fatalf("span %d: links out of range", i)
		}
		for _, x := range []Sym{sp.Service, sp.Name, sp.Peer, sp.Method, sp.Route, ex.StatusMessage, ex.ErrorType} {
			if len(set.Str(x)) > MaxValueBytes {
				t.Fatalf("span %d keeps a %d-byte string", i, len(set.Str(x)))
			}
		}
	}
}

// fuzzPosition finds the position an error names.
var fuzzPosition = regexp.MustCompile(`^ingest fuzz: (?:offset (\d+)(:| \(after)|line (\d+):)`)

// checkErrorPosition asserts that an error names a position that lies in
// the input: an offset within its bytes (unless it counts decompressed
// bytes), a line within its lines.
func checkErrorPosition(t *testing.T, err error, b []byte) {
	m := fuzzPosition.FindStringSubmatch(err.Error())
	if m == nil {
		if !errors.Is(err, ErrLimit) && !strings.Contains(err.Error(), ": offset ") && !strings.Contains(err.Error(), ": line ") {
			t.Fatalf("error names no position: %v", err)
		}
		return
	}
	if m[1] != "" && m[2] == ":" {
		if off, _ := strconv.Atoi(m[1]); off > len(b) {
			t.Fatalf("offset %d past the end of a %d-byte input: %v", off, len(b), err)
		}
	}
	if m[3] != "" {
		if line, _ := strconv.Atoi(m[3]); line > bytes.Count(b, []byte{'\n'})+1 {
			t.Fatalf("line %d past the end of a %d-line input: %v", line, bytes.Count(b, []byte{'\n'})+1, err)
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
			return
		}
		checkErrorPosition(t, err, b)
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
		if json.Valid(b) {
			// The normaliser keeps valid JSON valid, and fails inside it.
			out, at, err := normaliseOTLPJSON(b)
			if err == nil && !json.Valid(out) {
				t.Fatalf("normalised %q into invalid JSON %q", b, out)
			}
			if at < 0 || at > int64(len(b)) {
				t.Fatalf("normaliser failed at %d, outside %d bytes", at, len(b))
			}
		}
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

// FuzzShape drives the checks that run before a library unmarshals a
// document: they never panic, the documents splitJSON finds lie in order
// inside the input, a document it passes nests no deeper than the limit,
// and every error offset lies inside the input.
func FuzzShape(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
	}
	f.Add([]byte(request(span("3", jsonNestedArray(70)))))
	f.Add([]byte(`{"a":"\"}"}{"b":[1,2]} x`))
	f.Add(testPBRequest(testPBSpan(1, 2, pbNestedArray(70))))
	lim := Limits{MaxDepth: 16, MaxAttributes: 8, MaxValues: 8, MaxDocumentItems: 64}.withDefaults()
	f.Fuzz(func(t *testing.T, b []byte) {
		docs, _, serr := splitJSON(b, &lim)
		end := 0
		for _, d := range docs {
			if d.start < end || d.end < d.start || d.end > len(b) {
				t.Fatalf("document %v out of order or range (after %d, input %d bytes)", d, end, len(b))
			}
			end = d.end
			if doc := b[d.start:d.end]; json.Valid(doc) {
				if depth := jsonDepth(doc); depth > lim.MaxDepth {
					t.Fatalf("passed a document %d deep", depth)
				}
			}
		}
		if serr != nil && (serr.off < 0 || serr.off > len(b)) {
			t.Fatalf("JSON error offset %d outside %d bytes: %v", serr.off, len(b), serr.err)
		}
		if e := checkOTLPProtoShape(b, &lim); e != nil && (e.off < 0 || e.off > len(b)) {
			t.Fatalf("protobuf error offset %d outside %d bytes: %v", e.off, len(b), e.err)
		}
	})
}

// jsonDepth is the nesting depth of valid JSON, by encoding/json's tokens.
func jsonDepth(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}
