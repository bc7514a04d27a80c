package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The hotrod scenario runs Jaeger's HotROD demo application itself (the
// binary built from github.com/jaegertracing/jaeger@v1.76.0/examples/hotrod
// by `make samples-hotrod`): traces of an application this repository did
// not write, with its own tracer set-up, span names and service naming.
// What it does, read from that version's source:
//   - frontend serves /dispatch: GET /customer (HTTP), then
//     driver.DriverService/FindNearest (gRPC, under a 1 s context
//     deadline), then GET /route once per driver found, through a pool of 3
//     workers. None of these calls is retried.
//   - customer answers /customer with one "SQL SELECT" CLIENT span emitted
//     under the service name mysql (300 ms, behind a mutex), never retried.
//   - driver answers FindNearest with one FindDriverIDs and then, for each
//     of the 10 drivers found, GetDriver: CLIENT spans emitted under the
//     service name redis-manual. Every fifth GetDriver of the process fails
//     ("redis timeout", after an extra 20 ms), and driver retries it at
//     once, up to 3 attempts (services/driver/server.go), with no backoff
//     and no per-try timeout; a call that fails 3 times fails FindNearest.
//
// The counts come from HotROD's own log lines (one per attempt), not from
// the traces.
const (
	hotrodName    = "hotrod"
	hotrodVersion = "v1.76.0"
	// hotrodDispatches root requests, hotrodParallel at a time: enough
	// overlap for the mysql mutex to queue, as HotROD's demo shows it.
	hotrodDispatches = 40
	hotrodParallel   = 4
)

// hotrodCustomers are the customer ids HotROD's fake database knows.
var hotrodCustomers = []string{"123", "392", "731", "567"}

// runHotROD runs the HotROD binary bin, sends it hotrodDispatches
// dispatches and writes out/hotrod/.
func runHotROD(ctx context.Context, bin, out string) (string, error) {
	rc, err := startReceiver()
	if err != nil {
		return "", err
	}
	ports, err := freePorts(4)
	if err != nil {
		rc.stop()
		return "", err
	}
	var logs bytes.Buffer
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, bin, "all",
		"--frontend-service-hostname", "127.0.0.1", "-f", strconv.Itoa(ports[0]),
		"--customer-service-hostname", "127.0.0.1", "-c", strconv.Itoa(ports[1]),
		"--driver-service-hostname", "127.0.0.1", "-d", strconv.Itoa(ports[2]),
		"--route-service-hostname", "127.0.0.1", "-r", strconv.Itoa(ports[3]))
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+rc.url)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		rc.stop()
		return "", fmt.Errorf("hotrod: %w", err)
	}
	front := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	answers, sendErr := dispatchAll(runCtx, front)
	// HotROD's batcher flushes every second; SIGINT makes it shut down
	// and flush the rest.
	time.Sleep(1500 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	waitErr := cmd.Wait()
	requests := rc.stop()
	if sendErr != nil {
		return "", fmt.Errorf("hotrod: %w\n%s", sendErr, tail(logs.String(), 2000))
	}
	var exit *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exit) {
		// An exit status after the interrupt is HotROD's shutdown; anything
		// else (it never started, it hung past WaitDelay) is not.
		return "", fmt.Errorf("hotrod: %w\n%s", waitErr, tail(logs.String(), 2000))
	}
	if spanCount(requests) == 0 {
		return "", fmt.Errorf("hotrod: no spans received")
	}
	t, err := hotrodTruth(logs.String(), answers)
	if err != nil {
		return "", err
	}
	if err := writeSample(out+"/"+hotrodName, requests, t); err != nil {
		return "", err
	}
	sum := exportSummary(t.RootRequests, t.RootAnswers, requests)
	for _, e := range t.Edges {
		sum += fmt.Sprintf("  %-9s → %-12s %-34s calls %3d, attempts %3d\n", e.Caller, e.Callee, e.Operation, e.Calls, e.Attempts)
	}
	return sum, nil
}

// dispatchAll waits for the frontend, then sends the dispatches and counts
// their answers by status.
func dispatchAll(ctx context.Context, front string) (map[string]int, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	// Wait for the port to accept connections: a request would be traced
	// as a root of its own.
	ready := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(front, "http://"), time.Second)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(ready) {
			return nil, fmt.Errorf("frontend at %s not answering: %w", front, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var (
		mu      sync.Mutex
		answers = map[string]int{}
		first   error
		wg      sync.WaitGroup
		next    = make(chan int)
	)
	for w := 0; w < hotrodParallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				url := fmt.Sprintf("%s/dispatch?customer=%s&nonse=%d", front, hotrodCustomers[i%len(hotrodCustomers)], i)
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err == nil {
					var resp *http.Response
					if resp, err = client.Do(req); err == nil {
						resp.Body.Close()
						mu.Lock()
						answers[strconv.Itoa(resp.StatusCode)]++
						mu.Unlock()
					}
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < hotrodDispatches; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return answers, first
}

// hotrodTruth is what HotROD's source says it does, with the counts its
// driver's log shows: one "Found drivers" per search, one "Got driver's
// ID" per answered GetDriver, one "Retrying GetDriver after error" per
// failed one (the third too), one "Failed to get driver after 3 attempts"
// per exhausted call.
func hotrodTruth(logs string, answers map[string]int) (hotrodTruthFile, error) {
	msgs := hotrodLog(logs, "driver")
	ok, failed := msgs["Got driver's ID"], msgs["Retrying GetDriver after error"]
	exhausted, finds := msgs["Failed to get driver after 3 attempts"], msgs["Found drivers"]
	roots := 0
	for _, n := range answers {
		roots += n
	}
	if roots != hotrodDispatches || finds != roots || ok == 0 || failed == 0 {
		return hotrodTruthFile{}, fmt.Errorf("hotrod: %d dispatches answered %v, %d driver searches, %d GetDriver answered, %d failed: the log does not show the run expected", roots, answers, finds, ok, failed)
	}
	// Every dispatch reaches the route calls only if FindNearest
	// succeeded; each search finds 10 drivers.
	routes := 10 * (finds - exhausted)
	none := truthBackoff{Kind: "none", Jitter: "none"}
	plain := func(caller, callee, op, method string, calls int, lib *string) nodeEdge {
		return nodeEdge{truthEdge: truthEdge{Caller: caller, Callee: callee, Operation: op, Method: method, Library: lib,
			MaxAttempts: 1, Backoff: none, RetriedStatus: []int{}, NotRetriedStatus: []int{}, RetryAfterCaptured: true, Attempts: calls}, Calls: calls}
	}
	getDriver := plain("driver", "redis-manual", "GetDriver", "", ok+exhausted, ptrTo("HotROD's own loop (services/driver/server.go)"))
	getDriver.Retries, getDriver.MaxAttempts, getDriver.ExhaustedInTraces, getDriver.Attempts = true, 3, exhausted > 0, ok+failed
	t := hotrodTruthFile{
		Scenario: hotrodName,
		Description: "Jaeger's HotROD " + hotrodVersion + " itself (examples/hotrod, `hotrod all`), " + strconv.Itoa(hotrodDispatches) + " dispatches, " + strconv.Itoa(hotrodParallel) + " at a time: " +
			"driver retries redis-manual GetDriver at once, up to 3 attempts, no per-try timeout (every fifth GetDriver fails after an extra 20 ms); " +
			"mysql and redis-manual are CLIENT spans under their own service names; frontend calls driver under a 1 s deadline that no call reaches. Nothing else retries.",
		RootRequests: roots,
		RootAnswers:  answers,
		Edges: []nodeEdge{
			plain("frontend", "customer", "/customer", "GET", roots, nil),
			plain("frontend", "driver", "driver.DriverService/FindNearest", "", roots, nil),
			plain("frontend", "route", "/route", "GET", routes, nil),
			plain("customer", "mysql", "SQL SELECT", "", roots, nil),
			plain("driver", "redis-manual", "FindDriverIDs", "", finds, nil),
			getDriver,
		},
		Paths: []truthPath{
			{Services: []string{"frontend", "driver", "redis-manual"}, Operations: []string{"/dispatch", "driver.DriverService/FindNearest", "GetDriver"}, WorstCaseAmplification: 3},
			{Services: []string{"frontend", "customer", "mysql"}, Operations: []string{"/dispatch", "/customer", "SQL SELECT"}, WorstCaseAmplification: 1},
		},
	}
	return t, nil
}

// hotrodLog counts the messages service logged. HotROD logs one line per
// message: time, level, source, message and a JSON object of fields (the
// service among them), separated by tabs.
func hotrodLog(logs, service string) map[string]int {
	n := map[string]int{}
	for _, line := range strings.Split(logs, "\n") {
		f := strings.SplitN(line, "\t", 5)
		if len(f) < 5 {
			continue
		}
		var fields struct {
			Service string `json:"service"`
		}
		if json.Unmarshal([]byte(f[4]), &fields) == nil && fields.Service == service {
			n[f[3]]++
		}
	}
	return n
}

// hotrodTruthFile is hotrod's truth.json: the Node scenarios' edge fields
// (calls as well as attempts), and paths with no observed maximum (HotROD's
// log does not say which trace an attempt belonged to).
type hotrodTruthFile struct {
	Scenario     string         `json:"scenario"`
	Description  string         `json:"description"`
	RootRequests int            `json:"root_requests"`
	RootAnswers  map[string]int `json:"root_answers"`
	Edges        []nodeEdge     `json:"edges"`
	Paths        []truthPath    `json:"paths"`
}

// freePorts asks the kernel for n free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
