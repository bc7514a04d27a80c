// Command generator produces retryaudit's sample traces with known ground
// truth. For each scenario it runs a small mesh of real net/http services on
// 127.0.0.1, instrumented with the OpenTelemetry Go SDK and otelhttp, whose
// callers retry through real retry libraries against deterministic injected
// faults. Spans leave through the OTLP/HTTP exporter to an in-process
// receiver and are written, per scenario, as OTLP JSON lines, length-prefixed
// OTLP protobuf, Jaeger UI JSON and truth.json.
//
//	go run . -out ..                     # every scenario
//	go run . -out .. -scenario incident  # one scenario alone
//	go run . -out DIR -scenario hedgedhttp # one written only when named
//	go run . -out .. -node all           # the Node.js scenarios (node.go)
//	go run . -out .. -hotrod BIN         # Jaeger's HotROD demo itself (hotrod.go)
//	go run . -out .. -caddy BIN          # Caddy retrying across replicas (caddy.go)
//	go run . -out .. -traefik            # a proxy retrying as Traefik v3 does, across replicas (traefik.go)
//	go run . -scenario root-clients      # client spans that start their own trace (roots.go), into ../../graph/testdata
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	out := flag.String("out", "..", "directory that receives one sub-directory per scenario")
	only := flag.String("scenario", "", "write only the scenario of this `NAME` (default: every one; the others' files are left as they are)")
	nodeOnly := flag.String("node", "", "run the Node.js scenario of this `NAME` under node/ instead (\"all\": every one; needs node and `npm ci` in node/)")
	hotrod := flag.String("hotrod", "", "run Jaeger's HotROD demo, the binary at `PATH` (make samples-hotrod builds it), and write the hotrod scenario instead")
	caddyBin := flag.String("caddy", "", "run the caddymesh program at `PATH` (module caddy/; make samples-caddy builds it), and write the caddy-replicas scenario instead")
	traefik := flag.Bool("traefik", false, "run a proxy that retries and traces as Traefik v3 does (traefik.go) over 3 replicas, and write the traefik-replicas scenario instead")
	testdata := flag.String("testdata", filepath.Join("..", "..", "graph", "testdata"), "directory that receives the root-clients scenario, which -scenario root-clients alone writes")
	flag.Parse()
	ctx := context.Background()
	if *only == rootClientsName {
		// Held out of samples/: replay models arrivals at SERVER roots,
		// and cannot calibrate traffic whose roots are client spans.
		start := time.Now()
		_, sum, err := runRootClients(ctx, rootClientsScenario(), *testdata, true)
		fmt.Printf("%s (%s)\n%s", rootClientsName, time.Since(start).Round(time.Millisecond), sum)
		if err != nil {
			log.Fatalf("%s: %v", rootClientsName, err)
		}
		return
	}
	if *caddyBin != "" {
		start := time.Now()
		sum, err := runCaddy(ctx, *caddyBin, *out)
		fmt.Printf("%s (%s)\n%s", caddyName, time.Since(start).Round(time.Millisecond), sum)
		if err != nil {
			log.Fatalf("%s: %v", caddyName, err)
		}
		return
	}
	if *traefik {
		start := time.Now()
		sum, err := runTraefik(ctx, *out)
		fmt.Printf("%s (%s)\n%s", traefikName, time.Since(start).Round(time.Millisecond), sum)
		if err != nil {
			log.Fatalf("%s: %v", traefikName, err)
		}
		return
	}
	if *hotrod != "" {
		start := time.Now()
		sum, err := runHotROD(ctx, *hotrod, *out)
		fmt.Printf("%s (%s)\n%s", hotrodName, time.Since(start).Round(time.Millisecond), sum)
		if err != nil {
			log.Fatalf("%s: %v", hotrodName, err)
		}
		return
	}
	if *nodeOnly != "" {
		found := false
		for _, sc := range nodeScenarios {
			if *nodeOnly != "all" && *nodeOnly != sc.Name {
				continue
			}
			found = true
			start := time.Now()
			sum, err := runNode(ctx, sc, *out)
			fmt.Printf("%s (node, %s)\n%s", sc.Name, time.Since(start).Round(time.Millisecond), sum)
			if err != nil {
				log.Fatalf("%s: %v", sc.Name, err)
			}
		}
		if !found {
			log.Fatalf("no Node scenario %q", *nodeOnly)
		}
		return
	}
	// The meshes of their own, run by name.
	others := []struct {
		name string
		run  func() (string, error)
	}{
		{incidentName, func() (string, error) { return runIncident(ctx, *out, incidentCommitted) }},
		{grpcDeadlinesName, func() (string, error) {
			_, sum, err := runGRPCDeadlines(ctx, grpcDeadlines(), *out, true)
			return sum, err
		}},
		{grpcPushbackName, func() (string, error) {
			_, sum, err := runGRPCPushback(ctx, grpcPushback(), *out, true)
			return sum, err
		}},
	}
	found := false
	for _, o := range others {
		if *only != "" && *only != o.name {
			continue
		}
		found = true
		start := time.Now()
		sum, err := o.run()
		fmt.Printf("%s (%s)\n%s", o.name, time.Since(start).Round(time.Millisecond), sum)
		if err != nil {
			log.Fatalf("%s: %v", o.name, err)
		}
	}
	for _, sc := range scenarios() {
		if *only != "" && sc.Name != *only || *only == "" && sc.OnlyByName {
			continue
		}
		found = true
		start := time.Now()
		_, sum, err := runScenario(ctx, sc, *out, true)
		fmt.Printf("%s (%s)\n%s", sc.Name, time.Since(start).Round(time.Millisecond), sum)
		if err != nil {
			log.Fatalf("%s: %v", sc.Name, err)
		}
	}
	if !found {
		log.Fatalf("no scenario %q", *only)
	}
}

// The files written into each scenario directory. The trace files are
// gzip-compressed; retryaudit recognises gzip by its magic bytes.
const (
	fileOTLPJSON  = "traces.otlp.jsonl.gz"
	fileOTLPProto = "traces.otlp.binpb.gz"
	fileJaeger    = "traces.jaeger.json.gz"
	fileTruth     = "truth.json"
)

// legacyFiles are the uncompressed trace files earlier versions wrote; a run
// removes them so that a directory never holds two versions of its traces.
var legacyFiles = []string{"traces.otlp.jsonl", "traces.otlp.binpb", "traces.jaeger.json"}

// runScenario runs sc's mesh, sends its root requests and writes its files
// into out/<scenario>/. It returns the callers, whose stats say what happened
// on each edge, and a human-readable summary. With requireInferable, a run
// whose traces hold too few retries for inference (checkInferable) fails
// before it writes anything.
func runScenario(ctx context.Context, sc Scenario, out string, requireInferable bool) ([]*caller, string, error) {
	dir := filepath.Join(out, sc.Name)
	var m *mesh
	requests, sum, err := capture(ctx, sc.rootRequests(), func(otlpURL string) (func() (string, error), func(context.Context) error, error) {
		var err error
		if m, err = startMesh(ctx, sc, otlpURL); err != nil {
			return nil, nil, err
		}
		return func() (string, error) { return drive(sc, m) }, m.stop, nil
	})
	if err != nil {
		return nil, "", err
	}
	var b strings.Builder
	b.WriteString(sum)
	for _, c := range m.callers {
		fmt.Fprintf(&b, "  %-9s → %-9s %-26s calls %3d", cmp.Or(c.instance, c.edge.Caller), c.edge.Callee, c.edge.Route, c.stats.calls)
		switch p := c.edge.Policy; {
		case p.Hedge != nil:
			fmt.Fprintf(&b, ", hedged (by the caller's count) %d, most requests %d", c.stats.hedgedCalls, c.stats.mostRequests)
		case p.retries():
			fmt.Fprintf(&b, ", gave up after %d attempts: %d, %s", p.MaxAttempts, c.stats.exhausted, describeWaits(c.stats))
		}
		if c.edge.Policy.Quota != nil {
			fmt.Fprintf(&b, ", refused a retry by the quota: %d", c.stats.quotaRefused)
		}
		if c.edge.Policy.breakerInside() {
			fmt.Fprintf(&b, ", breaker opened %d times (%d refusing), refused %d tries, failed %d calls fast, %d partly, %d joined waits",
				c.stats.breakerOpened, c.stats.breakerOpenPeriods, c.stats.refusedTries, c.stats.breakerFastFails, c.stats.partlyRefused, c.stats.joinedWaits)
		}
		if c.hystrix != "" {
			fmt.Fprintf(&b, ", circuit opened %d times (%d refusing), closed %d, probes %d, failed %d calls fast, timed out %d, rejected %d",
				c.stats.breakerOpened, c.stats.breakerOpenPeriods, c.stats.hystrixClosed, c.stats.hystrixProbes, c.stats.breakerFastFails,
				c.stats.hystrixTimeouts, c.stats.hystrixRejects)
		}
		b.WriteString("\n")
	}
	if requireInferable {
		if err := checkInferable(mergeInstances(m.callers)); err != nil {
			return nil, b.String(), fmt.Errorf("too few retries for inference, nothing written:\n%w", err)
		}
	}
	for _, c := range m.callers {
		if c.hystrix != "" {
			// What the callee received of the calls hystrix ran (and
			// timed out): its truth counts the requests served past the
			// command's timeout.
			c.stats.received = m.faults.receivedBy(c.edge.Callee, c.edge.Route)
		}
	}
	if sc.CountAtCallee {
		for _, c := range m.callers {
			if c.edge.Policy.Hedge != nil {
				c.stats.received = m.faults.receivedBy(c.edge.Callee, c.edge.Route)
			}
		}
	}
	t, err := buildTruth(sc, m.callers)
	if err != nil {
		return nil, b.String(), err
	}
	if err := writeSample(dir, requests, t); err != nil {
		return nil, b.String(), err
	}
	for _, name := range legacyFiles {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, b.String(), err
		}
	}
	return m.callers, b.String(), nil
}

// drive sends the scenario's root requests to edge, in an order shuffled by
// the scenario's seed unless it is Ordered, after planning each one's
// faults: one at a time, or with OpenLoop one every Pace whatever is still
// in flight. It returns how the root requests were answered, e.g.
// "200×35 503×1".
func drive(sc Scenario, m *mesh) (string, error) {
	cases := sc.order()
	client := &http.Client{Timeout: 30 * time.Second} // not instrumented: edge's span is the root
	var (
		mu      sync.Mutex
		errs    []error
		answers = map[int]int{}
	)
	send := func(i int) {
		c, order := cases[i], fmt.Sprint(1001+i)
		if c.Script != nil {
			m.faults.plan(c.Target, order, c.Script)
		}
		method, path := http.MethodGet, "/checkout/"+order
		if c.Pay {
			method, path = http.MethodPost, "/checkout/"+order+"/pay"
		}
		code, err := rootRequest(client, method, m.services["edge"].url()+path)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("root request %s: %w", order, err))
			return
		}
		answers[code]++
	}
	m.faults.schedule(sc.Outages)
	if sc.OpenLoop {
		openLoop(time.Now(), len(cases), sc.Pace, send)
	} else {
		for i := 0; i < len(cases) && len(errs) == 0; i++ {
			time.Sleep(sc.Pace)
			send(i)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	return answersOf(answers), nil
}

// openLoop calls send(i) for i in [0, n), the i-th at start + i·every in
// a goroutine of its own whatever is still in flight (a late wake-up does
// not shift the ones after it), and waits for them all.
func openLoop(start time.Time, n int, every time.Duration, send func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * every)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(i)
		}()
	}
	wg.Wait()
}

// rootRequest sends one root request and returns the status it was
// answered with, its body read and discarded.
func rootRequest(client *http.Client, method, url string) (int, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	return drain(resp), nil
}

// drain reads resp's body to its end and closes it, so that its
// connection is reused, and returns its status code.
func drain(resp *http.Response) int {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// answersOf spells how root requests were answered, by status code in
// order: "200×35 503×1".
func answersOf(answers map[int]int) string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(answers)) {
		parts = append(parts, fmt.Sprintf("%d×%d", code, answers[code]))
	}
	return strings.Join(parts, " ")
}
