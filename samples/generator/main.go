// Command generator produces retryaudit's sample traces with known ground
// truth. For each scenario it runs a small mesh of real net/http services on
// 127.0.0.1, instrumented with the OpenTelemetry Go SDK and otelhttp, whose
// callers retry through real retry libraries against deterministic injected
// faults. Spans leave through the OTLP/HTTP exporter to an in-process
// receiver and are written, per scenario, as OTLP JSON lines, length-prefixed
// OTLP protobuf, Jaeger UI JSON and truth.json.
//
//	go run . -out ..
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	out := flag.String("out", "..", "directory that receives one sub-directory per scenario")
	flag.Parse()
	ctx := context.Background()
	for _, sc := range scenarios() {
		start := time.Now()
		sum, err := runScenario(ctx, sc, *out)
		if err != nil {
			log.Fatalf("%s: %v", sc.Name, err)
		}
		fmt.Printf("%s (%s)\n%s", sc.Name, time.Since(start).Round(time.Millisecond), sum)
	}
}

// runScenario runs sc's mesh, sends its root requests and writes its files
// into out/<scenario>/. It returns a human-readable summary.
func runScenario(ctx context.Context, sc Scenario, out string) (string, error) {
	dir := filepath.Join(out, sc.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	rc, err := startReceiver()
	if err != nil {
		return "", err
	}
	m, err := startMesh(ctx, sc, rc.url)
	if err != nil {
		return "", err
	}
	roots, err := drive(sc, m)
	if err != nil {
		return "", err
	}
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := m.stop(stopCtx); err != nil {
		return "", err
	}
	requests := rc.stop()
	t, err := buildTruth(sc, m.callers)
	if err != nil {
		return "", err
	}
	if err := writeOTLP(filepath.Join(dir, "traces.otlp.jsonl"), filepath.Join(dir, "traces.otlp.binpb"), requests); err != nil {
		return "", err
	}
	if err := writeJaeger(filepath.Join(dir, "traces.jaeger.json"), requests); err != nil {
		return "", err
	}
	if err := writeTruth(filepath.Join(dir, "truth.json"), t); err != nil {
		return "", err
	}
	spans := 0
	for _, td := range requests {
		spans += td.SpanCount()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %d root requests, answers %s\n  %d spans in %d OTLP export requests\n",
		sc.rootRequests(), roots, spans, len(requests))
	for _, c := range m.callers {
		fmt.Fprintf(&b, "  %-9s → %-9s %-26s calls %3d, gave up after %d attempts: %d\n",
			c.edge.Caller, c.edge.Callee, c.edge.Route, c.stats.calls, c.edge.Policy.MaxAttempts, c.stats.exhausted)
	}
	return b.String(), nil
}

// drive sends the scenario's root requests to edge one at a time, in an
// order shuffled by the scenario's seed, after planning each one's faults. It
// returns how the root requests were answered, e.g. "200×35 503×1".
func drive(sc Scenario, m *mesh) (string, error) {
	var cases []Case
	for _, c := range sc.Cases {
		for range c.Count {
			cases = append(cases, c)
		}
	}
	rand.New(rand.NewPCG(sc.Seed, sc.Seed)).Shuffle(len(cases), func(i, j int) {
		cases[i], cases[j] = cases[j], cases[i]
	})
	client := &http.Client{Timeout: 30 * time.Second} // not instrumented: edge's span is the root
	answers := map[int]int{}
	for i, c := range cases {
		order := fmt.Sprint(1001 + i)
		if c.Script != nil {
			m.faults.plan(c.Target, order, c.Script)
		}
		method, path := http.MethodGet, "/checkout/"+order
		if c.Pay {
			method, path = http.MethodPost, "/checkout/"+order+"/pay"
		}
		req, err := http.NewRequest(method, m.services["edge"].url()+path, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		answers[resp.StatusCode]++
	}
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(answers)) {
		parts = append(parts, fmt.Sprintf("%d×%d", code, answers[code]))
	}
	return strings.Join(parts, " "), nil
}
