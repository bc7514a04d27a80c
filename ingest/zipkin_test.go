package ingest

import (
	"encoding/hex"
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

// TestZipkinRecordedShapes decodes files of the shapes Zipkin's own test
// traces have (see testdata/README.md): /api/v2/traces as an array of
// traces, a 64-bit trace id, B3 shared spans with the server's clock
// behind, a local span under the shared id, annotations, IPv6 and ports,
// messaging spans; and Envoy's Zipkin tracer, whose spans name no service
// and mark every ingress span shared, its caller untraced.
func TestZipkinRecordedShapes(t *testing.T) {
	type span struct{ parent, service, kind, peer string }
	for _, tc := range []struct {
		file     string
		warnings []string
		want     map[string]span // by span id; "server of X" for an unshared server
	}{
		{"zipkin/api-v2-traces-b3.json", []string{"zipkin shared span"}, map[string]span{
			"5af7183fb1d4cf5f":           {"0000000000000000", "frontend", "server", ""},
			"352bff9a74ca9ad2":           {"5af7183fb1d4cf5f", "frontend", "client", "inventory"},
			"server of 352bff9a74ca9ad2": {"352bff9a74ca9ad2", "inventory", "server", ""},
			"e457b5a2e4d86bd1":           {"server of 352bff9a74ca9ad2", "inventory", "internal", ""},
			"8d7c6b5a49382716":           {"5af7183fb1d4cf5f", "frontend", "client", "inventory"},
			"server of 8d7c6b5a49382716": {"8d7c6b5a49382716", "inventory", "server", ""},
			"48485a3953bb6124":           {"0000000000000000", "frontend", "producer", "kafka"},
			"1f2e3d4c5b6a7980":           {"48485a3953bb6124", "inventory", "consumer", ""},
		}},
		{"zipkin/envoy-sidecar.json", []string{"missing service.name"}, map[string]span{
			"9a4e1c7b2d3f5061": {"0000000000000000", "unknown_service", "server", ""},
			"b0c1d2e3f4a5b6c7": {"9a4e1c7b2d3f5061", "unknown_service", "client", "inventory.shop.svc.cluster.local"},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			set := jaegerMustDecode(t, tc.file, testdataFile(t, tc.file), FormatZipkinJSON)
			if got := warningKinds(set); !slices.Equal(got, tc.warnings) {
				t.Errorf("warnings %v, want %v", got, tc.warnings)
			}
			name := map[string]string{}
			for id := range tc.want {
				if shared, ok := strings.CutPrefix(id, "server of "); ok {
					var sid SpanID
					copy(sid[:], mustHex(t, shared))
					name[sharedServerID(sid).String()] = id
				}
			}
			named := func(id string) string {
				if n, ok := name[id]; ok {
					return n
				}
				return id
			}
			views := viewSpans(set)
			if len(views) != len(tc.want) {
				t.Errorf("%d spans, want %d", len(views), len(tc.want))
			}
			for _, v := range views {
				w, ok := tc.want[named(v.SpanID)]
				got := span{named(v.ParentID), v.Service, v.Kind, v.Peer}
				if !ok || got != w {
					t.Errorf("span %s: %+v, want %+v", named(v.SpanID), got, w)
				}
				if len(v.TraceID) != 32 {
					t.Errorf("trace id %q", v.TraceID)
				}
			}
		})
	}
	// Envoy's egress span: its status and the route of its URL.
	for _, v := range viewSpans(jaegerMustDecode(t, "envoy", testdataFile(t, "zipkin/envoy-sidecar.json"), FormatZipkinJSON)) {
		if v.Kind == "client" && (v.HTTPStatus != 503 || v.Status != "error" || v.Method != "GET") {
			t.Errorf("egress span: %+v", v)
		}
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
		// The 7 is at 65: a type error names the offset after it, 66 (the
		// white space before it counted once, not twice: it said 67, and
		// the fuzzer found 25 for a 24-byte input).
		{`[[{"traceId":"a","id":"1","localEndpoint":{"serviceName":"s"}}], 7]`, `offset 66: Zipkin JSON: span: json: cannot unmarshal number`},
		{`[[{"traceId":"a","id":"1","localEndpoint":{"serviceName":"s"}}],7]`, `offset 65: Zipkin JSON: span: json: cannot unmarshal number`},
		{`[{"localEndpoint":{}}, 0`, `offset 24: Zipkin JSON: span: json: cannot unmarshal number`},
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

// mustHex decodes a hex string of the test's own.
func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
