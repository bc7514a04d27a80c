package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// nodeScenarios are the scenarios whose services are Node.js programs under
// node/<name>/, instrumented with the OpenTelemetry JS SDK: traces from
// another SDK, other instrumentations and other retry libraries than the Go
// mesh's. Each program exports its spans over OTLP/HTTP protobuf to this
// generator's receiver and writes truth.json's content (what it configured,
// and what its services saw happen) to the file named by $TRUTH_OUT; the
// generator writes the trace files as for every other scenario. Running
// them needs node and `npm ci` in node/ (make samples-node); the
// tests read only the committed files.
var nodeScenarios = []nodeScenario{
	{Name: "undici-retryagent", Dir: "undici-retryagent"},
	// fetch aborted through an AbortController and a timer, as ky does:
	// the CLIENT span ends with status Unset and no status code.
	{Name: "fetch-timeout", Dir: "fetch-timeout", Env: []string{"TIMEOUT_STYLE=controller"}},
	// fetch with AbortSignal.timeout: status Error, "The operation was
	// aborted due to timeout".
	{Name: "fetch-timeout-signal", Dir: "fetch-timeout", Env: []string{"TIMEOUT_STYLE=signal"}},
	{Name: "grpc-js-retry", Dir: "grpc-js-retry"},
	// The same services with a hedgingPolicy: hedges below the
	// instrumentation, overlapping SERVER spans under one CLIENT span.
	{Name: "grpc-js-hedge", Dir: "grpc-js-retry"},
	{Name: "got-retry", Dir: "got-retry"},
	{Name: "cockatiel", Dir: "cockatiel"},
	// cockatiel's default ExponentialBackoff: decorrelated jitter.
	{Name: "cockatiel-decorrelated", Dir: "cockatiel"},
	// axios-retry's exponentialDelay: [d, 1.2·d), a one-sided
	// proportional jitter; Retry-After captured on the CLIENT spans.
	{Name: "axios-retry", Dir: "axios-retry"},
	// axios-retry whose retryCondition also retries a 200 whose body
	// says "pending" (a result predicate): a CLIENT span per attempt, a
	// retry after an OK answer.
	{Name: "axios-retry-pending", Dir: "axios-retry-pending"},
	// opossum's CircuitBreaker: trips on a failure rate over a rolling
	// window, not on failures in a row.
	{Name: "opossum", Dir: "opossum"},
	// ky 2 over the global fetch: its own exponential schedule under
	// backoffLimit, and a 429's Retry-After honoured, the header on no
	// span (instrumentation-undici's default)...
	{Name: "ky-retry", Dir: "ky"},
	// ... and recorded on the CLIENT spans (headersToSpanAttributes).
	{Name: "ky-retry-captured", Dir: "ky"},
	// ky's jitter option: full jitter, U[0, delay), and the server's
	// waits unjittered among them.
	{Name: "ky-retry-jitter", Dir: "ky"},
	// superagent's .retry(n): the next try at once, any method, Retry-After
	// (recorded on the spans) ignored.
	{Name: "superagent-retry", Dir: "superagent"},
	// nice-grpc's retry middleware: a gRPC retry above grpc-js, a CLIENT
	// span per attempt, equal jitter.
	{Name: "nice-grpc-retry", Dir: "nice-grpc"},
	// retry-axios: ((2^c − 1)/2)·retryDelay before retry c, no POST
	// retried, a 429's Retry-After honoured with the header on no span.
	{Name: "retry-axios", Dir: "retry-axios"},
	// async-retry: each wait ×U[1, 2) (the retry package's randomize),
	// ×3 a retry, Retry-After recorded and ignored, keyed POSTs retried.
	{Name: "async-retry", Dir: "async-retry"},
	// fetch-retry: retryDelay a linear function, retryOn [503] (a 429
	// passed through unretried), POST retried without a key.
	{Name: "fetch-retry", Dir: "fetch-retry"},
	// exponential-backoff: full jitter under ceilings ×3, POST unretried.
	{Name: "exponential-backoff", Dir: "exponential-backoff"},
}

// nodeScenario is a Node program (node/<Dir>/main.js) run with $SCENARIO
// set to Name and the environment Env added.
type nodeScenario struct {
	Name, Dir string
	Env       []string
}

// nodeTruth is truth.json of a Node scenario: the Go scenarios' fields and
// what only these scenarios show. Decoding rejects unknown fields, so the
// Node programs and this schema cannot drift apart silently.
type nodeTruth struct {
	Scenario     string `json:"scenario"`
	Description  string `json:"description"`
	RootRequests int    `json:"root_requests"`
	// RootAnswers counts the root requests by the status they were
	// answered with.
	RootAnswers map[string]int `json:"root_answers"`
	// ContextLeaks counts the attempts that ran in another request's
	// context and landed in its trace: Late ones started after the SERVER
	// span they landed under had ended, Repeated ones while it still ran
	// (repeating a request it had already had answered); Spans is every
	// span of their subtrees.
	ContextLeaks *truthLeaks `json:"context_leaks,omitempty"`
	// Calibration says whether a replay built from the traces can
	// reproduce them, and if not, why (what the traces lost).
	Calibration *truthCalibration `json:"calibration,omitempty"`
	Edges       []nodeEdge        `json:"edges"`
	Paths       []nodePath        `json:"paths"`
}

type nodePath struct {
	truthPath
	// ObservedMax is the most attempts one root request's own trace shows
	// at the path's last service, per call there.
	ObservedMax float64 `json:"observed_max_amplification"`
}

type truthCalibration struct {
	Reproducible bool   `json:"reproducible"`
	Because      string `json:"because"`
}

type truthLeaks struct {
	Late     int `json:"late"`
	Repeated int `json:"repeated"`
	Spans    int `json:"spans"`
}

type nodeEdge struct {
	truthEdge
	// Calls are what the caller made; AttemptsInOwnTrace
	// those whose spans are in the trace of the request that made them
	// (the rest leaked into other traces).
	// (truthEdge.Attempts counts every attempt sent, wherever its spans
	// landed.)
	Calls              int  `json:"calls"`
	AttemptsInOwnTrace *int `json:"attempts_in_own_trace,omitempty"`
	// AfterCallerGaveUp counts retries that started after the request
	// that made them had been answered.
	AfterCallerGaveUp int `json:"retries_after_caller_gave_up"`
	// TimedOutAttempts counts the attempts the caller's per-try timeout
	// ended; TimedOutMS is the range of their durations as it measured them.
	TimedOutAttempts int         `json:"timed_out_attempts,omitempty"`
	TimedOutMS       *[2]float64 `json:"timed_out_ms,omitempty"`
	// WaitsByAttemptIndex counts the waits between attempts by the index
	// of the attempt they precede (as the Go scenarios' summary does).
	WaitsByAttemptIndex []int `json:"waits_by_attempt_index,omitempty"`
	// AttemptsByReplica counts the attempts each callee replica received
	// (service.instance.id in index order) where the caller balanced over
	// several.
	AttemptsByReplica []int `json:"attempts_by_replica,omitempty"`
	// WaitLateMedianMS is the median of how much later each wait came than
	// the policy's schedule (before jitter), as the callee's arrivals
	// show: on a loaded host every retry hop adds its delay.
	WaitLateMedianMS *float64 `json:"wait_late_median_ms,omitempty"`
}

// runNode runs Node scenario sc and writes its files into out/<sc.Name>/.
func runNode(ctx context.Context, sc nodeScenario, out string) (string, error) {
	name, dir := sc.Name, filepath.Join("node", sc.Dir)
	if _, err := os.Stat(filepath.Join("node", "node_modules")); err != nil {
		return "", fmt.Errorf("node: no node_modules (run `npm ci` there, or make samples-node): %w", err)
	}
	rc, err := startReceiver()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "retryaudit-node-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	truthPath := filepath.Join(tmp, fileTruth)
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "node", "main.js")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+rc.url, "TRUTH_OUT="+truthPath, "SCENARIO="+name), sc.Env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	runErr := cmd.Run()
	requests := rc.stop()
	if runErr != nil {
		return "", fmt.Errorf("node %s/main.js: %w", dir, runErr)
	}
	b, err := os.ReadFile(truthPath)
	if err != nil {
		return "", err
	}
	var t nodeTruth
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return "", fmt.Errorf("%s: truth: %w", name, err)
	}
	if t.Scenario != name {
		return "", fmt.Errorf("%s: truth names scenario %q", name, t.Scenario)
	}
	if spanCount(requests) == 0 {
		return "", fmt.Errorf("%s: no spans received", name)
	}
	if err := writeSample(filepath.Join(out, name), requests, t); err != nil {
		return "", err
	}
	sum := exportSummary(t.RootRequests, t.RootAnswers, requests)
	if l := t.ContextLeaks; l != nil {
		sum += fmt.Sprintf("  context leaks: %d late, %d repeated (%d spans)\n", l.Late, l.Repeated, l.Spans)
	}
	for _, e := range t.Edges {
		sum += fmt.Sprintf("  %-9s → %-9s %s %-20s calls %3d, attempts %3d\n", e.Caller, e.Callee, e.Method, e.Operation, e.Calls, e.Attempts)
	}
	return sum, nil
}
