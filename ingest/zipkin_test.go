package ingest

import (
	"slices"
	"strings"
	"testing"
)

func TestZipkinJSON(t *testing.T) {
	set := jaegerMustDecode(t, "trace.json", testdataFile(t, "zipkin/api-v2-trace.json"), FormatZipkinJSON)
	checkoutTrace(t, set)
	if got := warningKinds(set); len(got) != 0 {
		t.Errorf("warnings %v", got)
	}
	v := viewSpans(set)
	for _, s := range v {
		switch s.SpanID {
		case "9f8e7d6c5b4a3921":
			if s.StatusMessage != "Service Unavailable" {
				t.Errorf("error tag message: %q", s.StatusMessage)
			}
		case "1a2b3c4d5e6f7081":
			if s.Method != "GET" || s.Target == 0 {
				t.Errorf("client span: method %q target %d", s.Method, s.Target)
			}
		}
	}

	// /api/v2/traces: an array of traces, one a 64-bit trace id.
	set = jaegerMustDecode(t, "traces.json", testdataFile(t, "zipkin/api-v2-traces.json"), FormatZipkinJSON)
	checkoutTrace(t, set)
	if len(set.Spans) != 7 {
		t.Fatalf("%d spans, want 7", len(set.Spans))
	}
	if got := set.Spans[5].TraceID.String(); got != "000000000000000063b2a1f0e4d5c6b7" {
		t.Errorf("64-bit trace id: %s", got)
	}
}

// TestZipkinSharedSpan: a server span reusing its client's id becomes the
// client's child with an id of its own, and the server's local work hangs
// under it.
func TestZipkinSharedSpan(t *testing.T) {
	set := jaegerMustDecode(t, "shared.json", testdataFile(t, "zipkin/shared-span.json"), FormatZipkinJSON)
	if got := warningKinds(set); !slices.Equal(got, []string{"zipkin shared span"}) {
		t.Errorf("warnings %v", got)
	}
	sp := set.Spans
	client, server, local := &sp[1], &sp[2], &sp[3]
	if server.ParentID != client.SpanID || server.SpanID == client.SpanID || server.SpanID.IsZero() {
		t.Fatalf("server %s parent %s, client %s", server.SpanID, server.ParentID, client.SpanID)
	}
	if local.ParentID != server.SpanID || local.Kind != KindInternal {
		t.Errorf("local span parent %s kind %s, want %s internal", local.ParentID, local.Kind, server.SpanID)
	}
	if client.ParentID != sp[0].SpanID {
		t.Errorf("client parent %s", client.ParentID)
	}
	if set.Str(client.Peer) != "inventory" {
		t.Errorf("peer %q", set.Str(client.Peer))
	}
	again := jaegerMustDecode(t, "shared.json", testdataFile(t, "zipkin/shared-span.json"), FormatZipkinJSON)
	if again.Spans[2].SpanID != server.SpanID {
		t.Error("derived id differs between runs")
	}
}

// TestZipkinSniff: arrays are Zipkin or Jaeger by what their elements hold.
func TestZipkinSniff(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want Format
	}{
		{`[{"traceId":"a","id":"b","localEndpoint":{"serviceName":"s"}}]`, FormatZipkinJSON},
		{`[[{"traceId":"a","id":"b","localEndpoint":{"serviceName":"s"}}]]`, FormatZipkinJSON},
		{" [\n [ ] , [{\"id\":\"1\",\"traceId\":\"2\",\"localEndpoint\":{\"serviceName\":\"s\"}}]]", FormatZipkinJSON},
		{`[{"annotations":[{"timestamp":1,"value":"cs"}],"traceId":"a","id":"b","localEndpoint":{"serviceName":"s"}}]`, FormatZipkinJSON},
		{`[{"traceID":"a","spans":[{"traceID":"a","spanID":"b","startTime":1,"duration":1,"processID":"p1"}],"processes":{"p1":{"serviceName":"s"}}}]`, FormatJaegerJSON},
		{`[{"spans":[{"traceId":"AAAAAAAAAAE=","spanId":"AAAAAAAAAAE="}],"process":{"serviceName":"s"}}]`, FormatJaegerJSON},
		// The sniffed prefix ends inside the first key's value.
		{`[{"annotations":[` + strings.Repeat(`{"timestamp":1764579600000000,"value":"ws"},`, 2000) +
			`{"timestamp":1,"value":"wr"}],"traceId":"a","id":"b","localEndpoint":{"serviceName":"s"}}]`, FormatZipkinJSON},
	} {
		set, err := jaegerDecode(t, "x", []byte(tc.doc), Options{})
		if err != nil {
			t.Errorf("%s: %v", tc.doc, err)
			continue
		}
		if got := set.Inputs[0].Format; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.doc, got, tc.want)
		}
	}
}

func TestZipkinErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`[{"traceId":"a","id":"xyz!","localEndpoint":{"serviceName":"s"}}]`, `offset 1: Zipkin JSON: span: invalid span id "xyz!"`},
		{`[{"traceId":"a","id":"1","localEndpoint":{"serviceName":"s"}}`, `offset 61: Zipkin JSON: unexpected end of input`},
		{`[{"traceId":"a","id":"1","timestamp":"soon","localEndpoint":{"serviceName":"s"}}]`, `offset 1: Zipkin JSON: span:`},
		{`[{"traceId":"a","id":"1","timestamp":9223372036854775,"duration":9223372036854775}]`, `Zipkin JSON: span 0000000000000001: start`},
		{`[[{"traceId":"a","id":"1","localEndpoint":{"serviceName":"s"}}], 7]`, `offset 67: Zipkin JSON: span: json: cannot unmarshal number`},
		{`[[]]`, `zipkin-json input holds no spans`},
	} {
		_, err := jaegerDecode(t, "z.json", []byte(tc.doc), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "ingest z.json: ") {
			t.Errorf("%s:\n error %v\n want one containing %q", tc.doc, err, tc.want)
		}
	}
}

// FuzzZipkinJSON drives the Zipkin decoder. Its seeds are small (the
// fuzzer minimises every new input, which is slow on the testdata files):
// one span, a trace array and a shared span.
func FuzzZipkinJSON(f *testing.F) {
	for _, seed := range []string{
		`[{"traceId":"a","id":"1","kind":"CLIENT","timestamp":1764579600000000,"duration":5,"localEndpoint":{"serviceName":"s"},"remoteEndpoint":{"serviceName":"t","ipv4":"10.0.0.2","port":80},"tags":{"http.status_code":"503","error":"503"}}]`,
		`[[{"traceId":"a","id":"1","localEndpoint":{"serviceName":"s"}}],[]]`,
		`[{"traceId":"a","id":"1","kind":"CLIENT","localEndpoint":{"serviceName":"s"}},{"traceId":"a","id":"1","kind":"SERVER","shared":true,"localEndpoint":{"serviceName":"t"}},{"traceId":"a","parentId":"1","id":"2","localEndpoint":{"serviceName":"t"}}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		set, w := NewSet(), &warnings{}
		err := decodeZipkinJSON(testSource("fuzz", data, 1<<20), set, w)
		jaegerFuzzCheck(t, data, set, w, err)
		checkDecoded(t, set, err)
	})
}
