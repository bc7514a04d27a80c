package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// The caddy-replicas scenario runs a real reverse proxy: Caddy v2
// (github.com/caddyserver/caddy/v2), embedded as a library in the program
// of the module generator/caddy (a module of its own, so that nothing here
// compiles Caddy; make samples-caddy builds it). That program, caddymesh,
// runs shop → Caddy → three catalog replicas on 127.0.0.1 and drives the
// root requests; it exports its spans to this program's receiver and
// reports Caddy's configuration, every try Caddy's own log shows and every
// request each replica received (caddyReport). The truth is that report.
const caddyName = "caddy-replicas"

// caddyReport is what caddymesh writes to its -report file.
type caddyReport struct {
	CaddyVersion string `json:"caddy_version"`
	Config       struct {
		Service        string          `json:"service"`
		LBPolicy       string          `json:"lb_policy"`
		Retries        int             `json:"retries"`
		TryIntervalMS  int64           `json:"try_interval_ms"`
		TryDurationMS  int64           `json:"try_duration_ms"`
		FailDurationMS int64           `json:"fail_duration_ms"`
		MaxFails       int             `json:"max_fails"`
		RetryMatch     string          `json:"retry_match"`
		RetryStatus    []int           `json:"retry_status"`
		CaddyJSON      json.RawMessage `json:"caddy_json"`
	} `json:"config"`
	Replicas []struct {
		Instance string `json:"instance"`
		Address  string `json:"address"`
	} `json:"replicas"`
	Roots []struct {
		Item   string `json:"item"`
		Answer int    `json:"answer"`
		Tries  []struct {
			Upstream string `json:"upstream"`
			Status   int    `json:"status"`
			Error    string `json:"error"`
		} `json:"tries"`
		Received []struct {
			Instance string `json:"instance"`
			Status   int    `json:"status"`
		} `json:"received"`
	} `json:"roots"`
}

// caddyTruthFile is caddy-replicas' truth.json: the Node scenarios' edge
// fields plus what a proxy adds (caddyEdge), and the proxy itself.
type caddyTruthFile struct {
	Scenario     string         `json:"scenario"`
	Description  string         `json:"description"`
	RootRequests int            `json:"root_requests"`
	RootAnswers  map[string]int `json:"root_answers"`
	Proxy        caddyProxy     `json:"proxy"`
	Edges        []caddyEdge    `json:"edges"`
	Paths        []truthPath    `json:"paths"`
}

// caddyProxy is the proxy's configuration and what its spans look like.
type caddyProxy struct {
	Library string          `json:"library"`
	Service string          `json:"service"`
	Config  json.RawMessage `json:"caddy_json"`
	// Spans says, in words, which spans Caddy emits and how the
	// replicas' spans hang under them.
	Spans string `json:"spans"`
}

// caddyEdge is an edge of caddy-replicas. Layer is "proxy" where the
// caller is the proxy and its retries are the proxy's, else
// "application". Replicas counts the callee instances the calls reached
// (service.instance.id). RefusedDials counts the tries whose dial was
// refused (a replica down): no request left, so no span shows them, and
// attempts (the requests the replicas answered) leaves them out.
type caddyEdge struct {
	nodeEdge
	Layer        string `json:"layer"`
	Replicas     int    `json:"replicas"`
	RefusedDials int    `json:"refused_dials"`
	// CallsWithRefusedDial counts the calls that had a refused try.
	CallsWithRefusedDial int `json:"calls_with_refused_dial"`
	// ExhaustedCalls counts the calls that made every try they were
	// allowed, the last one failing; ExhaustedWithRefusedDial those of
	// them with a refused try, which the traces show one try short.
	ExhaustedCalls           int `json:"exhausted_calls"`
	ExhaustedWithRefusedDial int `json:"exhausted_with_refused_dial"`
}

// runCaddy runs the caddymesh binary bin against a receiver and writes
// out/caddy-replicas/.
func runCaddy(ctx context.Context, bin, out string) (string, error) {
	rc, err := startReceiver()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "caddymesh")
	if err != nil {
		rc.stop()
		return "", err
	}
	defer os.RemoveAll(tmp)
	reportPath := filepath.Join(tmp, "report.json")
	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var logs bytes.Buffer
	cmd := exec.CommandContext(runCtx, bin, "-otlp", rc.url, "-report", reportPath)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	runErr := cmd.Run()
	requests := rc.stop()
	if runErr != nil {
		return "", fmt.Errorf("caddymesh: %w\n%s", runErr, tail(logs.String(), 2000))
	}
	b, err := os.ReadFile(reportPath)
	if err != nil {
		return "", err
	}
	var rep caddyReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return "", fmt.Errorf("caddymesh report: %w", err)
	}
	t, err := caddyTruth(rep)
	if err != nil {
		return "", err
	}
	if spanCount(requests) == 0 {
		return "", fmt.Errorf("caddymesh: no spans received")
	}
	if err := writeSample(filepath.Join(out, caddyName), requests, t); err != nil {
		return "", err
	}
	sum := exportSummary(t.RootRequests, t.RootAnswers, requests)
	for _, e := range t.Edges {
		sum += fmt.Sprintf("  %-6s → %-8s %-14s calls %3d, attempts %3d, refused dials %d, exhausted %v\n",
			e.Caller, e.Callee, e.Operation, e.Calls, e.Attempts, e.RefusedDials, e.ExhaustedInTraces)
	}
	return sum, nil
}

// caddyTruth builds the truth from caddymesh's report. Each root request
// is one call shop → caddy (never retried) and one call caddy → catalog
// whose tries are the "upstream roundtrip" lines of Caddy's log for the
// request's item; a try that answered must be a request a replica
// received, in the same order, with the same status.
func caddyTruth(rep caddyReport) (caddyTruthFile, error) {
	cfg := rep.Config
	if len(rep.Roots) == 0 || len(rep.Replicas) == 0 {
		return caddyTruthFile{}, fmt.Errorf("caddymesh report: no root requests or no replicas")
	}
	instanceOf := map[string]string{}
	for _, r := range rep.Replicas {
		instanceOf[r.Address] = r.Instance
	}
	retryable := func(status int) bool { return slices.Contains(cfg.RetryStatus, status) }
	answers := map[string]int{}
	proxyStatuses := map[int]bool{}
	var tries, refused, withRefused, exhausted, exhaustedRefused, waits int
	var retried, notRetried []int
	reached := map[string]bool{}
	for _, root := range rep.Roots {
		answers[strconv.Itoa(root.Answer)]++
		proxyStatuses[root.Answer] = true
		answered := 0
		refusedHere := 0
		for i, tr := range root.Tries {
			tries++
			if i > 0 {
				waits++
			}
			if tr.Error != "" {
				refusedHere++
				continue
			}
			if answered >= len(root.Received) {
				return caddyTruthFile{}, fmt.Errorf("item %s: Caddy's log shows more answered tries than the replicas received", root.Item)
			}
			got := root.Received[answered]
			if got.Instance != instanceOf[tr.Upstream] || got.Status != tr.Status {
				return caddyTruthFile{}, fmt.Errorf("item %s: try %d went to %s (%s) and got %d; the replica recorded %s answering %d",
					root.Item, i+1, tr.Upstream, instanceOf[tr.Upstream], tr.Status, got.Instance, got.Status)
			}
			reached[got.Instance] = true
			answered++
			switch {
			case tr.Status < 400:
			case retryable(tr.Status) && !slices.Contains(retried, tr.Status):
				retried = append(retried, tr.Status)
			case !retryable(tr.Status) && !slices.Contains(notRetried, tr.Status):
				notRetried = append(notRetried, tr.Status)
			}
		}
		if answered != len(root.Received) {
			return caddyTruthFile{}, fmt.Errorf("item %s: the replicas received %d requests, Caddy's log shows %d answered tries", root.Item, len(root.Received), answered)
		}
		refused += refusedHere
		if refusedHere > 0 {
			withRefused++
		}
		last := root.Tries[len(root.Tries)-1]
		if len(root.Tries) == cfg.Retries+1 && (last.Error != "" || retryable(last.Status)) {
			exhausted++
			if refusedHere > 0 {
				exhaustedRefused++
			}
		}
	}
	slices.Sort(retried)
	slices.Sort(notRetried)
	roots := len(rep.Roots)
	library := "github.com/caddyserver/caddy/v2 " + rep.CaddyVersion + " reverse_proxy"
	none := truthBackoff{Kind: "none", Jitter: "none"}
	var shopNotRetried []int
	for status := range proxyStatuses {
		if status >= 400 {
			shopNotRetried = append(shopNotRetried, status)
		}
	}
	slices.Sort(shopNotRetried)
	shop := caddyEdge{nodeEdge: nodeEdge{truthEdge: truthEdge{Caller: "shop", Callee: cfg.Service, Operation: "/items/{id}", Method: "GET",
		MaxAttempts: 1, Backoff: none, RetriedStatus: []int{}, NotRetriedStatus: shopNotRetried,
		ExhaustedInTraces: len(shopNotRetried) > 0, RetryAfterCaptured: true, Attempts: roots}, Calls: roots},
		Layer: "application", Replicas: 1}
	attempts := tries - refused
	catalog := caddyEdge{nodeEdge: nodeEdge{truthEdge: truthEdge{Caller: cfg.Service, Callee: "catalog", Operation: "/items/{id}", Method: "GET",
		Library: &library, Retries: true, MaxAttempts: cfg.Retries + 1, ExhaustedInTraces: exhausted > 0,
		Backoff:       truthBackoff{Kind: "constant", BaseMS: &cfg.TryIntervalMS, Jitter: "none"},
		RetriedStatus: retried, NotRetriedStatus: notRetried, RetryAfterCaptured: true,
		Attempts: attempts, BelowInstrumentation: true}, Calls: roots, WaitsByAttemptIndex: nil},
		Layer: "proxy", Replicas: len(reached), RefusedDials: refused, CallsWithRefusedDial: withRefused,
		ExhaustedCalls: exhausted, ExhaustedWithRefusedDial: exhaustedRefused}
	if catalog.RetriedStatus == nil {
		catalog.RetriedStatus = []int{}
	}
	if catalog.NotRetriedStatus == nil {
		catalog.NotRetriedStatus = []int{}
	}
	return caddyTruthFile{
		Scenario: caddyName,
		Description: fmt.Sprintf("Caddy %s itself, embedded (reverse_proxy, lb_policy %s, retries %d, try_interval %dms, retry_match %q, passive health fail_duration %dms), "+
			"in front of %d catalog replicas; shop calls Caddy once per root request, never retrying. Caddy retries on another replica: %d waits of %dms between tries; "+
			"catalog-3 is down for a stretch, so %d tries were refused dials that no span shows.",
			rep.CaddyVersion, cfg.LBPolicy, cfg.Retries, cfg.TryIntervalMS, cfg.RetryMatch, cfg.FailDurationMS, len(rep.Replicas), waits, cfg.TryIntervalMS, refused),
		RootRequests: roots,
		RootAnswers:  answers,
		Proxy: caddyProxy{Library: library, Service: cfg.Service, Config: cfg.CaddyJSON,
			Spans: "Caddy's tracing handler is otelhttp's server handler: one SERVER span per request (name \"handler\", no http.route), and no CLIENT span for any try; " +
				"it injects its own span's traceparent into the request, which reverse_proxy copies to every try, so each replica's SERVER span is a child of Caddy's SERVER span " +
				"and a retried call shows as several sibling SERVER spans of one service under one proxy span. reverse_proxy keeps the client's Host header, so every replica's span carries Caddy's " +
				"server.address and server.port: only service.instance.id tells the replicas apart. The proxy's span has no http.route; its url.path is the request's (/items/1015). A refused dial leaves no span."},
		Edges: []caddyEdge{shop, catalog},
		Paths: []truthPath{{Services: []string{"shop", cfg.Service, "catalog"}, Operations: []string{"/shop/{id}", "/items/{id}", "/items/{id}"},
			WorstCaseAmplification: cfg.Retries + 1}},
	}, nil
}
