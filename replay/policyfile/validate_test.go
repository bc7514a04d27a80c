package policyfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3" // the retry_host_predicate's typed_config
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	istionet "istio.io/api/networking/v1alpha3"

	"github.com/retryaudit/retryaudit/replay"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

func emit(t *testing.T, f Format) *Emitted {
	t.Helper()
	out, err := Emit(f, testEdges())
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Files) == 0 {
		t.Fatal("no file written")
	}
	return out
}

// docs splits a YAML stream into documents as JSON.
func docs(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, d := range bytes.Split(data, []byte("\n---\n")) {
		j, err := yaml.YAMLToJSON(d)
		if err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		out = append(out, j)
	}
	return out
}

// strict reads JSON into a proto message, refusing unknown fields, and runs
// the message's generated validators when it has them.
func strict(t *testing.T, what string, j []byte, m proto.Message) {
	t.Helper()
	if err := (protojson.UnmarshalOptions{}).Unmarshal(j, m); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, j)
	}
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, j)
		}
	}
}

// TestEmitEnvoyValidates: the RouteConfiguration and Clusters pass Envoy's
// own types (strict protojson) and generated validators (ValidateAll), and
// say what each field means in Envoy's terms.
func TestEmitEnvoyValidates(t *testing.T) {
	out := emit(t, FormatEnvoy)
	ds := docs(t, out.Files[0].Data)
	var rc routev3.RouteConfiguration
	strict(t, "RouteConfiguration", ds[0], &rc)
	clusters := map[string]*clusterv3.Cluster{}
	for i, d := range ds[1:] {
		var c clusterv3.Cluster
		strict(t, fmt.Sprintf("document %d", i+2), d, &c)
		clusters[c.GetName()] = &c
	}
	if got := clusters["inventory"].GetCircuitBreakers().GetThresholds()[0].GetRetryBudget(); got.GetBudgetPercent().GetValue() != 25 || got.GetMinRetryConcurrency().GetValue() != 4 {
		t.Errorf("inventory retry_budget %v, want 25%% and 4", got)
	}
	if got := clusters["payments"].GetOutlierDetection(); got.GetConsecutive_5Xx().GetValue() != 5 || got.GetMaxEjectionPercent().GetValue() != 100 {
		t.Errorf("payments outlier_detection %v, want 5 consecutive 5xx, 100%%", got)
	}
	var route *routev3.Route
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if r.GetName() == "GET /inventory/{sku}" {
				route = r
			}
		}
	}
	if route == nil {
		t.Fatalf("no route for GET /inventory/{sku}:\n%s", out.Files[0].Data)
	}
	rp := route.GetRoute().GetRetryPolicy()
	if got := rp.GetNumRetries().GetValue(); got != 2 {
		t.Errorf("num_retries %d, want 2 (3 attempts: retries, not attempts)", got)
	}
	if got := rp.GetPerTryTimeout().AsDuration().Seconds(); got != 0.2 {
		t.Errorf("per_try_timeout %v, want 0.2s", got)
	}
	if b := rp.GetRetryBackOff(); b.GetBaseInterval().AsDuration().Seconds() != 0.05 || b.GetMaxInterval().AsDuration().Seconds() != 1 {
		t.Errorf("retry_back_off %v", b)
	}
	if rl := rp.GetRateLimitedRetryBackOff(); len(rl.GetResetHeaders()) != 1 || rl.GetResetHeaders()[0].GetName() != "Retry-After" {
		t.Errorf("rate_limited_retry_back_off %v, want Retry-After", rl)
	}
	if !strings.Contains(rp.GetRetryOn(), "retriable-status-codes") || len(rp.GetRetriableStatusCodes()) == 0 {
		t.Errorf("retry_on %q with codes %v", rp.GetRetryOn(), rp.GetRetriableStatusCodes())
	}
	mustNote(t, out, "callers differ", "immediate retries", "cannot be expressed")
}

// TestEmitIstioValidates: VirtualServices and DestinationRules pass Istio's
// own API types, strictly, and attempts count retries.
func TestEmitIstioValidates(t *testing.T) {
	out := emit(t, FormatIstio)
	vs := 0
	for i, d := range docs(t, out.Files[0].Data) {
		var obj struct {
			APIVersion string          `json:"apiVersion"`
			Kind       string          `json:"kind"`
			Metadata   json.RawMessage `json:"metadata"`
			Spec       json.RawMessage `json:"spec"`
		}
		dec := json.NewDecoder(bytes.NewReader(d))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		if obj.APIVersion != "networking.istio.io/v1" {
			t.Errorf("document %d: apiVersion %q", i+1, obj.APIVersion)
		}
		switch obj.Kind {
		case "VirtualService":
			var s istionet.VirtualService
			strict(t, "VirtualService", obj.Spec, &s)
			vs++
			for _, h := range s.GetHttp() {
				if h.GetName() == "get-inventory-sku" && h.GetRetries().GetAttempts() != 2 {
					t.Errorf("attempts %d, want 2 (retries, not attempts)", h.GetRetries().GetAttempts())
				}
			}
		case "DestinationRule":
			var s istionet.DestinationRule
			strict(t, "DestinationRule", obj.Spec, &s)
			tp := s.GetTrafficPolicy()
			if tp.GetRetryBudget() == nil && tp.GetOutlierDetection() == nil && tp.GetConnectionPool() == nil {
				t.Errorf("DestinationRule %s with neither retryBudget, outlierDetection nor connectionPool", s.GetHost())
			}
			if s.GetHost() == "payments" && tp.GetOutlierDetection().GetConsecutive_5XxErrors().GetValue() != 5 {
				t.Errorf("payments: outlierDetection %v, want 5 consecutive errors (the breaker's)", tp.GetOutlierDetection())
			}
		default:
			t.Errorf("document %d: kind %q", i+1, obj.Kind)
		}
	}
	if vs == 0 {
		t.Fatal("no VirtualService")
	}
	mustNote(t, out, "hedging after", "cannot be expressed in Istio")
	if !bytes.Contains(out.Files[0].Data, []byte("# ")) {
		t.Error("the notes are not in the file as comments")
	}
}

// TestEmitIstioConnectionPool: a callee whose pool the user gave gets a
// DestinationRule with connectionPool.http.http2MaxRequests at its size,
// valid by Istio's types; a callee whose pool the model estimated gets
// none, and a note says why traces cannot tell it; a callee with neither
// (no workers known) is not named.
func TestEmitIstioConnectionPool(t *testing.T) {
	edges := testEdges()
	for i := range edges {
		switch edges[i].Callee {
		case "inventory":
			edges[i].Pool = Pool{Workers: 8, Given: true}
		case "pricing":
			edges[i].Pool = Pool{Workers: 3, Given: true}
		default:
			edges[i].Pool = Pool{Workers: 5}
		}
	}
	edges = append(edges, Edge{Caller: "api", Callee: "unknown", Operation: "GET /u", Policy: replay.Policy{MaxAttempts: 1}})
	out, err := Emit(FormatIstio, edges)
	if err != nil {
		t.Fatal(err)
	}
	pools := map[string]int32{}
	for _, d := range docs(t, out.Files[0].Data) {
		var obj struct {
			Kind string          `json:"kind"`
			Spec json.RawMessage `json:"spec"`
		}
		if err := json.Unmarshal(d, &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Kind != "DestinationRule" {
			continue
		}
		var s istionet.DestinationRule
		strict(t, "DestinationRule", obj.Spec, &s)
		if cp := s.GetTrafficPolicy().GetConnectionPool(); cp != nil {
			pools[s.GetHost()] = cp.GetHttp().GetHttp2MaxRequests()
		}
	}
	if want := map[string]int32{"inventory": 8, "pricing": 3}; fmt.Sprint(pools) != fmt.Sprint(want) {
		t.Errorf("connection pools %v, want %v", pools, want)
	}
	mustNote(t, out, "inventory: connectionPool.http.http2MaxRequests 8 is the 8 request slots given with --capacity",
		"connectionPool not written for cache (5 estimated), db (5 estimated)", "not a pool's limit")
	for _, n := range out.Notes {
		if strings.Contains(n, "unknown (") {
			t.Errorf("a callee with no workers known is named: %s", n)
		}
	}
	// Read back: the pool is noted, not simulated.
	pf, err := Read("routes.yaml", out.Files[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(pf.Notes(), func(n string) bool { return strings.Contains(n, "trafficPolicy.connectionPool caps requests") }) {
		t.Errorf("reading the pool back is not noted: %q", pf.Notes())
	}
}

// TestEmitLinkerdValidates: HTTPRoutes and GRPCRoutes pass Gateway API's
// own types (unknown fields refused) and carry Linkerd's annotations.
func TestEmitLinkerdValidates(t *testing.T) {
	out := emit(t, FormatLinkerd)
	n := 0
	for i, d := range docs(t, out.Files[0].Data) {
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(d, &kind); err != nil {
			t.Fatal(err)
		}
		var obj interface {
			GetAnnotations() map[string]string
		}
		switch kind.Kind {
		case "HTTPRoute":
			var r gatewayv1.HTTPRoute
			if err := yaml.UnmarshalStrict(d, &r); err != nil {
				t.Fatalf("document %d: %v\n%s", i+1, err, d)
			}
			for _, rule := range r.Spec.Rules {
				for _, m := range rule.Matches {
					if m.Path == nil || m.Path.Type == nil || m.Path.Value == nil {
						t.Errorf("%s: match without a path", r.Name)
					}
				}
			}
			if r.APIVersion != "gateway.networking.k8s.io/v1" || len(r.Spec.ParentRefs) != 1 || r.Spec.ParentRefs[0].Kind == nil || *r.Spec.ParentRefs[0].Kind != "Service" {
				t.Errorf("%s: apiVersion %s parents %+v", r.Name, r.APIVersion, r.Spec.ParentRefs)
			}
			obj = &r
		case "GRPCRoute":
			var r gatewayv1.GRPCRoute
			if err := yaml.UnmarshalStrict(d, &r); err != nil {
				t.Fatalf("document %d: %v\n%s", i+1, err, d)
			}
			obj = &r
		default:
			t.Fatalf("document %d: kind %q", i+1, kind.Kind)
		}
		a := obj.GetAnnotations()
		if a["retry.linkerd.io/limit"] == "2" && a["retry.linkerd.io/http"] == "" {
			t.Errorf("document %d: a retry limit without conditions: %v", i+1, a)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no route")
	}
	mustNote(t, out, "cannot be expressed: Linkerd retries at once", "budget cannot be expressed in Linkerd")
}

// TestEmitGRPCValidates: each service config is accepted by grpc-go's own
// parsing (grpc.WithDefaultServiceConfig at client creation), which
// rejects an invalid one.
func TestEmitGRPCValidates(t *testing.T) {
	client := func(cfg string) error {
		cc, err := grpc.NewClient("passthrough:///127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(cfg))
		if err == nil {
			cc.Close()
		}
		return err
	}
	// The check can fail: grpc-go refuses a retryPolicy of one attempt.
	if err := client(`{"methodConfig":[{"name":[{"service":"a.B"}],"retryPolicy":{"maxAttempts":1,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`); err == nil {
		t.Fatal("grpc-go accepted an invalid service config")
	}
	out := emit(t, FormatGRPC)
	for _, f := range out.Files {
		if err := client(string(f.Data)); err != nil {
			t.Errorf("%s: %v\n%s", f.Callee, err, f.Data)
		}
		var sc struct {
			MethodConfig []struct {
				RetryPolicy *struct {
					MaxAttempts int `json:"maxAttempts"`
				} `json:"retryPolicy"`
			} `json:"methodConfig"`
		}
		if err := json.Unmarshal(f.Data, &sc); err != nil {
			t.Fatal(err)
		}
		for _, mc := range sc.MethodConfig {
			if rp := mc.RetryPolicy; rp != nil && (rp.MaxAttempts < 2 || rp.MaxAttempts > 5) {
				t.Errorf("%s: maxAttempts %d: gRPC wants 2 to 5, the first counted", f.Callee, rp.MaxAttempts)
			}
		}
	}
	mustNote(t, out, "7 attempts cannot be expressed", "grpc-go does not implement hedging")
}

func mustNote(t *testing.T, out *Emitted, subs ...string) {
	t.Helper()
	all := strings.Join(out.Notes, "\n")
	for _, s := range subs {
		if !strings.Contains(all, s) {
			t.Errorf("no note says %q; notes:\n%s", s, all)
		}
	}
}
