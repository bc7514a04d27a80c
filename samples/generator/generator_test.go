package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestShortScenario runs the mixed scenario with one root request per case
// end to end, then checks that the three trace files parse and agree, and
// that the retries visible in the traces match truth.json.
func TestShortScenario(t *testing.T) {
	sc := mixed()
	sc.Name = "short"
	for i := range sc.Cases {
		sc.Cases[i].Count = 1
	}
	out := t.TempDir()
	if _, err := runScenario(context.Background(), sc, out); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, sc.Name)

	jsonl := readJSONL(t, filepath.Join(dir, "traces.otlp.jsonl"))
	binpb := readBinpb(t, filepath.Join(dir, "traces.otlp.binpb"))
	jaegerSpans := readJaeger(t, filepath.Join(dir, "traces.jaeger.json"))
	nJSON, nProto := spanCount(jsonl), spanCount(binpb)
	if nJSON == 0 || nJSON != nProto || nJSON != jaegerSpans {
		t.Fatalf("span counts differ: jsonl %d, binpb %d, jaeger %d", nJSON, nProto, jaegerSpans)
	}

	var tr truth
	readJSON(t, filepath.Join(dir, "truth.json"), &tr)
	if tr.RootRequests != sc.rootRequests() || len(tr.Edges) != len(sc.Edges) {
		t.Fatalf("truth has %d root requests and %d edges, want %d and %d",
			tr.RootRequests, len(tr.Edges), sc.rootRequests(), len(sc.Edges))
	}
	calls := callsInTraces(jsonl)
	for _, e := range tr.Edges {
		key := e.Caller + " " + e.Callee + " " + e.Method + " " + e.Operation
		sizes := calls[key]
		if len(sizes) == 0 {
			t.Errorf("%s: no calls in the traces", key)
			continue
		}
		most := slices.Max(sizes)
		if most > e.MaxAttempts {
			t.Errorf("%s: a call made %d attempts, max_attempts is %d", key, most, e.MaxAttempts)
		}
		if e.Retries && e.ExhaustedInTraces && most != e.MaxAttempts {
			t.Errorf("%s: exhausted_in_traces but no call made %d attempts (most %d)", key, e.MaxAttempts, most)
		}
	}
	// The N+1 loop: every pricing call is a distinct single-attempt request.
	if got := calls["api pricing GET /prices/{item}"]; slices.Max(got) != 1 || len(got) < pricedItems {
		t.Errorf("pricing calls per distinct request %v, want several of 1", got)
	}
}

// callsInTraces groups CLIENT spans into logical calls, the attempts of one
// call being siblings with the same url.full, and returns the number of
// attempts of each call by "caller callee method http.route".
func callsInTraces(requests []ptrace.Traces) map[string][]int {
	type info struct {
		service, route, method, url string
		kind                        ptrace.SpanKind
		parent                      pcommon.SpanID
	}
	spans := map[pcommon.SpanID]info{}
	for _, td := range requests {
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get("service.name")
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					a := sp.Attributes()
					get := func(k string) string {
						if v, ok := a.Get(k); ok {
							return v.AsString()
						}
						return ""
					}
					spans[sp.SpanID()] = info{service: svc.Str(), route: get("http.route"),
						method: get("http.request.method"), url: get("url.full"), kind: sp.Kind(), parent: sp.ParentSpanID()}
				}
			}
		}
	}
	callee := map[pcommon.SpanID]info{} // client span → the server span it caused
	for _, s := range spans {
		if s.kind == ptrace.SpanKindServer {
			callee[s.parent] = s
		}
	}
	type callKey struct {
		parent pcommon.SpanID
		url    string
	}
	attempts := map[callKey]int{}
	edgeOf := map[callKey]string{}
	for id, s := range spans {
		if s.kind != ptrace.SpanKindClient {
			continue
		}
		k := callKey{s.parent, s.url}
		attempts[k]++
		if srv, ok := callee[id]; ok {
			edgeOf[k] = s.service + " " + srv.service + " " + s.method + " " + srv.route
		}
	}
	out := map[string][]int{}
	for k, n := range attempts {
		out[edgeOf[k]] = append(out[edgeOf[k]], n)
	}
	return out
}

func spanCount(requests []ptrace.Traces) int {
	n := 0
	for _, td := range requests {
		n += td.SpanCount()
	}
	return n
}

func readJSONL(t *testing.T, path string) []ptrace.Traces {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []ptrace.Traces
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(sc.Bytes())
		if err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, td)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readBinpb(t *testing.T, path string) []ptrace.Traces {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(b)
	var out []ptrace.Traces
	for {
		var n uint32
		if err := binary.Read(r, binary.BigEndian, &n); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(r, msg); err != nil {
			t.Fatalf("%s message %d: %v", path, len(out)+1, err)
		}
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(msg)
		if err != nil {
			t.Fatalf("%s message %d: %v", path, len(out)+1, err)
		}
		out = append(out, td)
	}
}

// readJaeger parses the Jaeger UI JSON and returns its number of spans.
func readJaeger(t *testing.T, path string) int {
	t.Helper()
	var resp jaegerResponse
	readJSON(t, path, &resp)
	n := 0
	for _, tr := range resp.Data {
		for _, sp := range tr.Spans {
			if _, ok := tr.Processes[sp.ProcessID]; !ok || sp.TraceID != tr.TraceID {
				t.Fatalf("span %s: process %q or trace %s not in its trace %s", sp.SpanID, sp.ProcessID, sp.TraceID, tr.TraceID)
			}
		}
		n += len(tr.Spans)
	}
	return n
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
