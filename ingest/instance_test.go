package ingest

import (
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestInstance: every decoder names a span's instance from its resource,
// process or endpoint, by the same precedence, and the fast OTLP paths
// agree with pdata's.
func TestInstance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs []string // OTLP resource attributes, JSON (str, num)
		want  string
	}{
		{"none", nil, ""},
		{"service.instance.id wins", []string{str("host.name", "h"), str("service.instance.id", "pod-a-1"), str("k8s.pod.name", "pod-a")}, "pod-a-1"},
		{"pod with pid", []string{str("k8s.pod.name", "pod-a"), num("process.pid", 42), str("host.name", "h")}, "pod-a/42"},
		{"host with pid", []string{str("host.name", "h"), num("process.pid", 7)}, "h/7"},
		{"host alone", []string{str("host.name", "h")}, "h"},
		{"pid alone names nothing", []string{num("process.pid", 7)}, ""},
		{"first value kept", []string{str("service.instance.id", "a"), str("service.instance.id", "b")}, "a"},
		{"empty value skipped", []string{str("service.instance.id", ""), str("host.name", "h")}, "h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attrs := append([]string{str("service.name", "api")}, tc.attrs...)
			doc := `{"resourceSpans":[{"resource":{"attributes":[` + strings.Join(attrs, ",") + `]},` +
				`"scopeSpans":[{"scope":{"name":"s"},"spans":[` + span("2", "") + `]}]}]}`
			var u ptrace.JSONUnmarshaler
			td, err := u.UnmarshalTraces([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
			if err != nil {
				t.Fatal(err)
			}
			pdataSet := NewSet()
			if err := addTraces(pdataSet, td, &warnings{}); err != nil {
				t.Fatal(err)
			}
			for name, set := range map[string]*Set{
				"otlp json":  mustDecode(t, "r.json", []byte(doc)),
				"otlp proto": mustDecode(t, "r.binpb", pb),
				"pdata":      pdataSet,
			} {
				if len(set.Spans) != 1 {
					t.Fatalf("%s: %d spans", name, len(set.Spans))
				}
				if got := set.Str(set.Instance(&set.Spans[0])); got != tc.want {
					t.Errorf("%s: instance %q, want %q", name, got, tc.want)
				}
			}
		})
	}
}

// TestInstanceJaegerZipkin: Jaeger process tags (the client's own, or
// OpenTelemetry resource attributes an exporter turned into tags) and
// Zipkin's local endpoint name the instance.
func TestInstanceJaegerZipkin(t *testing.T) {
	jaeger := func(tags string) string {
		return strings.Replace(jaegerUIDoc(jaegerUISpan("00000000000000a1", "", "", "")), `"serviceName":"api","tags":[]`, `"serviceName":"api","tags":[`+tags+`]`, 1)
	}
	zipkin := func(endpoint string) string {
		return `[{"traceId":"` + jTestTrace + `","id":"00000000000000a1","kind":"SERVER","name":"get","timestamp":1706678909209712,"duration":1500,` +
			`"localEndpoint":{"serviceName":"api"` + endpoint + `}}]`
	}
	for _, tc := range []struct {
		name, doc string
		format    Format
		want      string
	}{
		{"jaeger none", jaeger(""), FormatJaegerJSON, ""},
		{"jaeger hostname and ip", jaeger(jaegerUITag("hostname", "string", `"h1"`) + "," + jaegerUITag("ip", "string", `"10.0.0.1"`)), FormatJaegerJSON, "h1"},
		{"jaeger client-uuid", jaeger(jaegerUITag("hostname", "string", `"h1"`) + "," + jaegerUITag("client-uuid", "string", `"5b2d"`)), FormatJaegerJSON, "5b2d"},
		{"jaeger ip alone", jaeger(jaegerUITag("ip", "string", `"10.0.0.1"`)), FormatJaegerJSON, "10.0.0.1"},
		{"jaeger otel tags", jaeger(jaegerUITag("host.name", "string", `"h"`) + "," + jaegerUITag("process.pid", "int64", `9`)), FormatJaegerJSON, "h/9"},
		{"zipkin none", zipkin(""), FormatZipkinJSON, ""},
		{"zipkin ipv4 and port", zipkin(`,"ipv4":"10.0.0.2","port":8080`), FormatZipkinJSON, "10.0.0.2:8080"},
		{"zipkin ipv6", zipkin(`,"ipv6":"::1"`), FormatZipkinJSON, "::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := jaegerMustDecode(t, "t.json", []byte(tc.doc), tc.format)
			if len(set.Spans) != 1 {
				t.Fatalf("%d spans", len(set.Spans))
			}
			if got := set.Str(set.Instance(&set.Spans[0])); got != tc.want {
				t.Errorf("instance %q, want %q", got, tc.want)
			}
		})
	}
}

// TestOrigins: a span's sampling and instance share one index; setting
// one keeps the other, and a full table keeps the sampling.
func TestOrigins(t *testing.T) {
	set := NewSet()
	p := Sampling{P: 0.5, Source: SampledTraceState}
	a, b := set.Intern("a"), set.Intern("b")
	var s1, s2 Span
	set.SetInstance(&s1, a)
	set.SetSampling(&s1, p)
	set.SetSampling(&s2, p)
	set.SetInstance(&s2, b)
	for _, tc := range []struct {
		name string
		sp   *Span
		inst Sym
	}{{"instance then sampling", &s1, a}, {"sampling then instance", &s2, b}} {
		if set.Sampling(tc.sp) != p || set.Instance(tc.sp) != tc.inst {
			t.Errorf("%s: sampling %v instance %q", tc.name, set.Sampling(tc.sp), set.Str(set.Instance(tc.sp)))
		}
	}
	var plain Span
	set.SetInstance(&plain, 0)
	if plain.Origin != 0 {
		t.Errorf("no sampling and no instance: origin %d, want 0", plain.Origin)
	}
	// Fill the table: a further instance is refused, its sampling kept.
	for i := len(set.origins); i < maxOrigins; i++ {
		set.origins = append(set.origins, origin{instance: Sym(1000 + i)})
		set.originIx[set.origins[i]] = uint16(i)
	}
	var full Span
	set.SetSampling(&full, p)
	if ok := set.SetInstance(&full, set.Intern("c")); ok || set.Sampling(&full) != p || set.Instance(&full) != 0 {
		t.Errorf("full table: ok %v, sampling %v, instance %q; want refused, sampling kept", ok, set.Sampling(&full), set.Str(set.Instance(&full)))
	}
}
