package ingest

import (
	"bytes"
	"encoding/binary"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestBadInput feeds every kind of broken input through the public entry
// point: each must give an error naming the input and a position, or a
// warning, and never a panic or an unbounded allocation.
func TestBadInput(t *testing.T) {
	good := request(span("3", str("peer.service", "inventory")))
	gzipped := func(parts ...[]byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		for _, p := range parts {
			w.Write(p)
		}
		w.Close()
		return buf.Bytes()
	}
	// A gzip bomb: 64 MiB of white space inside an OTLP document, in ~64 KiB.
	bomb := gzipped([]byte(`{"resourceSpans":[`), bytes.Repeat([]byte(" "), 64<<20))
	stream := func(size uint32, body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, size), body...)
	}
	position := regexp.MustCompile(`^ingest bad\.input: (offset \d+|line \d+)`)
	for _, tc := range []struct {
		name    string
		in      []byte
		maxDoc  int64
		wantErr string // substring; the error must also name input and position
	}{
		{name: "empty file", in: nil, wantErr: "empty input"},
		{name: "white space only", in: []byte(" \n\t\n"), wantErr: "only white space"},
		{name: "binary garbage", in: []byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x02}, wantErr: "not a trace format"},
		{name: "unknown JSON", in: []byte(`{"hello":"world"}`), wantErr: "top-level keys hello"},
		{name: "OTLP metrics", in: []byte(`{"resourceMetrics":[]}`), wantErr: "without trace data"},
		{name: "truncated JSON", in: []byte(good[:len(good)/2]), wantErr: "OTLP JSON"},
		{name: "truncated JSON line", in: []byte(good + "\n" + good[:80] + "\n"), wantErr: "line 2"},
		{name: "wrong JSON type", in: []byte(`{"resourceSpans":5}`), wantErr: "OTLP JSON"},
		{name: "wrong type deep", in: []byte(strings.Replace(good, `"name":"GET"`, `"name":{"x":1}`, 1)), wantErr: "OTLP JSON"},
		{name: "bad trace id", in: []byte(strings.Replace(good, "83a9efd15c1c98a977e0711cc93ee28b", "zz", 1)), wantErr: `traceId "zz"`},
		{name: "bad span id length", in: []byte(strings.Replace(good, "e127af99e3b3e074", "e127af", 1)), wantErr: `spanId "e127af"`},
		{name: "no spans", in: []byte(`{"resourceSpans":[]}`), wantErr: "holds no spans"},
		{name: "empty scope", in: []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[]}]}]}`), wantErr: "holds no spans"},
		{name: "api_v3 error", in: []byte(`{"error":{"code":5,"message":"trace not found"},"result":null}`), wantErr: "trace not found"},
		{name: "truncated protobuf stream", in: stream(500, []byte{0x0a, 0x02}), wantErr: "truncated"},
		{name: "truncated length prefix", in: append(stream(2, []byte{0x0a, 0x00}), 0x00, 0x00), wantErr: "truncated length prefix"},
		{name: "zero-length message", in: append(stream(2, []byte{0x0a, 0x00}), 0, 0, 0, 0), wantErr: "zero-length"},
		{name: "huge length prefix", in: stream(1<<31, []byte{0x0a, 0x00}), maxDoc: 1 << 20, wantErr: "exceeds"},
		{name: "garbage protobuf", in: []byte{0x0a, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff}, wantErr: "OTLP protobuf"},
		{name: "gzip bomb", in: bomb, maxDoc: 1 << 20, wantErr: "exceeds 1048576 bytes"},
		{name: "truncated gzip", in: gzipped([]byte(good))[:30], wantErr: "unexpected EOF"},
		{name: "enormous JSON line", in: append([]byte(good+"\n"+`{"resourceSpans":[`), bytes.Repeat([]byte(" "), 2<<20)...), maxDoc: 1 << 20, wantErr: "line 2: line exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeBytes(t, "bad.input", tc.in, Options{MaxDocumentBytes: tc.maxDoc})
			if err == nil {
				t.Fatalf("no error")
			}
			if !position.MatchString(err.Error()) {
				t.Errorf("error does not name input and position: %v", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
			if len(err.Error()) > 600 {
				t.Errorf("error message of %d bytes quotes too much input", len(err.Error()))
			}
		})
	}
}

// TestWarnings covers inputs that decode but deserve a warning.
func TestWarnings(t *testing.T) {
	mk := func(id, parent string, start, end int) string {
		return `{"traceId":"83a9efd15c1c98a977e0711cc93ee28b","spanId":"` + id + `","parentSpanId":"` + parent + `","name":"op","kind":2,` +
			`"startTimeUnixNano":"` + strconv.Itoa(start) + `","endTimeUnixNano":"` + strconv.Itoa(end) + `","status":{}}`
	}
	huge := strings.Replace(mk("00000000000000a1", "", 0, 10), `"status":{}`, `"status":{"code":2,"message":"`+strings.Repeat("é", 3<<20)+`"}`, 1)
	for _, tc := range []struct {
		name  string
		spans []string
		want  string
	}{
		{"missing parent", []string{mk("00000000000000a1", "00000000000000ff", 0, 10)}, "missing parent"},
		{"duplicate span id", []string{mk("00000000000000a1", "", 0, 10), mk("00000000000000a1", "", 0, 10)}, "duplicate span id"},
		{"child before parent", []string{mk("00000000000000a1", "", 1e9, 2e9), mk("00000000000000a2", "00000000000000a1", 0, 2e9)}, "child starts before parent"},
		{"end before start", []string{mk("00000000000000a1", "", 10, 5)}, "end before start"},
		{"parent cycle", []string{mk("00000000000000a1", "00000000000000a2", 0, 10), mk("00000000000000a2", "00000000000000a1", 0, 10)}, "parent cycle"},
		{"self parent", []string{mk("00000000000000a1", "00000000000000a1", 0, 10)}, "parent cycle"},
		{"enormous attribute", []string{huge}, "attribute value truncated"},
		{"zero span id", []string{mk("0000000000000000", "", 0, 10)}, "invalid span id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mustDecode(t, tc.name, []byte(request(tc.spans...)))
			sum := set.Summary(DefaultClockSkew)
			var kinds []string
			for _, w := range sum.Total.Warnings {
				kinds = append(kinds, w.Kind)
			}
			if !strings.Contains(strings.Join(kinds, ","), tc.want) {
				t.Errorf("warnings %v, want %q", sum.Total.Warnings, tc.want)
			}
			for _, sp := range set.Spans {
				if n := len(set.Str(set.Extra(&sp).StatusMessage)); n > MaxValueBytes {
					t.Errorf("kept a status message of %d bytes", n)
				}
			}
		})
	}
}
