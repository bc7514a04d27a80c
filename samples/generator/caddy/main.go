// Command caddymesh runs the caddy-replicas scenario of retryaudit's
// samples: a real reverse proxy, Caddy v2 embedded as a library, in front
// of three replicas of one service, retrying across them. It is a module
// of its own so that the tool's tests never compile Caddy; the samples
// generator runs it (make samples-caddy) the way it runs HotROD:
//
//	caddymesh -otlp http://127.0.0.1:PORT/v1/traces -report FILE
//
// Everything listens on 127.0.0.1. The driver (not instrumented) sends
// GET /shop/{id} to shop (net/http + otelhttp, the root of each trace),
// which calls Caddy once with otelhttp's transport, never retrying. Caddy
// runs its tracing handler in front of reverse_proxy to the three catalog
// replicas (service.name catalog, service.instance.id catalog-1..3, each
// on its own port, net/http + otelhttp). Each replica answers
// GET /items/{id} by the item's fault script: its first tries, whichever
// replica gets them, fail with a scripted status; and catalog-3 is shut
// down for a stretch of the run, so that dialling it is refused.
//
// The spans leave through the OTLP/HTTP exporter to -otlp: shop's and the
// replicas' from their own TracerProviders, Caddy's from the one its
// tracing handler builds (autoexport, configured by OTEL_* variables).
// -report receives what happened, as JSON (report): Caddy's configuration
// and, per root request, every try Caddy made, read from its own debug log
// ("upstream roundtrip", one line per try, dial failures included), and
// every request each replica received.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/tracing"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The proxy's retry configuration, written into Caddy's JSON config and
// into the report.
const (
	replicas = 3
	// lbRetries is reverse_proxy's load_balancing.retries: tries after
	// the first, so a call makes at most lbRetries+1.
	lbRetries = 2
	// tryInterval is load_balancing.try_interval: the wait before every
	// retry, constant.
	tryInterval = 10 * time.Millisecond
	// failDuration and maxFails are the passive health check: a replica
	// whose dial failed is skipped for failDuration (answers that only
	// matched retry_match are not counted as its failures).
	failDuration = 300 * time.Millisecond
	maxFails     = 1
	// retryExpression is retry_match's CEL expression, evaluated on each
	// upstream answer: the statuses Caddy retries on another replica.
	retryExpression = "{http.reverse_proxy.status_code} in [502, 503, 504]"
	// caddyService is the service.name of Caddy's spans (OTEL_SERVICE_NAME).
	caddyService = "caddy"
)

// retryStatus are the statuses retryExpression matches.
var retryStatus = []int{502, 503, 504}

func main() {
	otlp := flag.String("otlp", "", "OTLP/HTTP trace endpoint `URL` every service exports to (…/v1/traces)")
	reportPath := flag.String("report", "", "write the run's report, JSON, to `FILE`")
	flag.Parse()
	if *otlp == "" || *reportPath == "" {
		log.Fatal("caddymesh: -otlp and -report are required")
	}
	rep, err := run(context.Background(), *otlp)
	if err != nil {
		log.Fatalf("caddymesh: %v", err)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = os.WriteFile(*reportPath, append(b, '\n'), 0o644)
	}
	if err != nil {
		log.Fatalf("caddymesh: %v", err)
	}
}

// report is what caddymesh writes to -report.
type report struct {
	CaddyVersion string       `json:"caddy_version"`
	Config       proxyConfig  `json:"config"`
	Replicas     []replicaRef `json:"replicas"`
	Roots        []rootCall   `json:"roots"`
}

// proxyConfig is Caddy's retry configuration as the run used it.
type proxyConfig struct {
	Service        string `json:"service"`
	LBPolicy       string `json:"lb_policy"`
	Retries        int    `json:"retries"`
	TryIntervalMS  int64  `json:"try_interval_ms"`
	TryDurationMS  int64  `json:"try_duration_ms"`
	FailDurationMS int64  `json:"fail_duration_ms"`
	MaxFails       int    `json:"max_fails"`
	RetryMatch     string `json:"retry_match"`
	RetryStatus    []int  `json:"retry_status"`
	// Config is the JSON config caddy.Load was given.
	Config json.RawMessage `json:"caddy_json"`
}

type replicaRef struct {
	Instance string `json:"instance"`
	Address  string `json:"address"`
}

// rootCall is one root request: its item, the answer the driver got, the
// tries Caddy's log shows and the requests the replicas received.
type rootCall struct {
	Item     string    `json:"item"`
	Answer   int       `json:"answer"`
	Tries    []try     `json:"tries"`
	Received []receipt `json:"received"`
}

// try is one "upstream roundtrip" line of Caddy's log: the replica's dial
// address and the status it answered, or the error (a refused dial).
type try struct {
	Upstream string `json:"upstream"`
	Status   int    `json:"status,omitempty"`
	Error    string `json:"error,omitempty"`
}

type receipt struct {
	Instance string `json:"instance"`
	Status   int    `json:"status"`
}

// run brings the mesh up, drives the root requests, shuts everything down
// (which flushes every exporter) and reports.
func run(ctx context.Context, otlp string) (report, error) {
	// Caddy's tracing handler builds its TracerProvider with autoexport
	// and the SDK's default resource: both read these.
	for k, v := range map[string]string{
		"OTEL_SERVICE_NAME":                  caddyService,
		"OTEL_TRACES_EXPORTER":               "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL":        "http/protobuf",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": otlp,
	} {
		os.Setenv(k, v)
	}
	faults := newFaults()
	var reps []*replica
	for i := range replicas {
		r, err := startReplica(ctx, otlp, fmt.Sprintf("catalog-%d", i+1), faults)
		if err != nil {
			return report{}, err
		}
		reps = append(reps, r)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return report{}, err
	}
	caddyAddr := ln.Addr().String()
	ln.Close()
	cfg := caddyConfig(caddyAddr, reps)
	if err := caddy.Load(cfg, true); err != nil {
		return report{}, fmt.Errorf("caddy: %w", err)
	}
	shop, err := startShop(ctx, otlp, "http://"+caddyAddr)
	if err != nil {
		return report{}, err
	}
	roots, driveErr := drive(shop.url, reps[len(reps)-1], faults)
	stopErr := shop.stop(ctx)
	if err := caddy.Stop(); err != nil && stopErr == nil {
		stopErr = fmt.Errorf("caddy stop: %w", err)
	}
	for _, r := range reps {
		if err := r.stop(ctx); err != nil && stopErr == nil {
			stopErr = err
		}
	}
	if driveErr != nil {
		return report{}, driveErr
	}
	if stopErr != nil {
		return report{}, stopErr
	}
	tries, err := caddyTries(captured.bytes())
	if err != nil {
		return report{}, err
	}
	version, _ := caddy.Version()
	rep := report{CaddyVersion: version, Config: proxyConfig{
		Service: caddyService, LBPolicy: "round_robin", Retries: lbRetries, TryIntervalMS: tryInterval.Milliseconds(),
		FailDurationMS: failDuration.Milliseconds(), MaxFails: maxFails, RetryMatch: retryExpression,
		RetryStatus: retryStatus, Config: cfg,
	}}
	for _, r := range reps {
		rep.Replicas = append(rep.Replicas, replicaRef{Instance: r.instance, Address: r.addr})
	}
	for _, rc := range roots {
		rc.Tries = tries[rc.Item]
		rc.Received = faults.received[rc.Item]
		if len(rc.Tries) == 0 {
			return report{}, fmt.Errorf("caddy's log shows no try for item %s", rc.Item)
		}
		rep.Roots = append(rep.Roots, rc)
	}
	return rep, nil
}

// caddyConfig is Caddy's JSON config: no admin endpoint, nothing saved,
// its debug log to the in-memory writer (captureWriter), and one HTTP
// server on addr whose route runs the tracing handler (default span name)
// and reverse_proxy to the replicas.
func caddyConfig(addr string, reps []*replica) json.RawMessage {
	var upstreams []map[string]any
	for _, r := range reps {
		upstreams = append(upstreams, map[string]any{"dial": r.addr})
	}
	cfg := map[string]any{
		"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{
			"level":  "DEBUG",
			"writer": map[string]any{"output": captureModule},
		}}},
		"apps": map[string]any{"http": map[string]any{"servers": map[string]any{"proxy": map[string]any{
			"listen":          []string{addr},
			"automatic_https": map[string]any{"disable": true},
			"routes": []any{map[string]any{"handle": []any{
				map[string]any{"handler": "tracing"},
				map[string]any{
					"handler":   "reverse_proxy",
					"upstreams": upstreams,
					"load_balancing": map[string]any{
						"selection_policy": map[string]any{"policy": "round_robin"},
						"retries":          lbRetries,
						"try_interval":     tryInterval.String(),
						"retry_match":      []any{map[string]any{"expression": retryExpression}},
					},
					"health_checks": map[string]any{"passive": map[string]any{
						"fail_duration": failDuration.String(),
						"max_fails":     maxFails,
					}},
				},
			}}},
		}}}},
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		panic(err) // maps of strings, numbers and slices always marshal
	}
	return b
}

// tracerProvider is a service's own TracerProvider: a batch processor
// and an OTLP/HTTP exporter to url, the resource naming the service and
// its instance.
func tracerProvider(ctx context.Context, url, service, instance string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url))
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", service)}
	if instance != "" {
		attrs = append(attrs, attribute.String("service.instance.id", instance))
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(200*time.Millisecond)),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	), nil
}

// propagator is W3C trace context, as Caddy's autoprop default also is.
var propagator = propagation.TraceContext{}

// server is one instrumented net/http service on 127.0.0.1.
type server struct {
	url string
	srv *http.Server
	tp  *sdktrace.TracerProvider
}

func (s *server) stop(ctx context.Context) error {
	s.srv.Close()
	return s.tp.Shutdown(ctx)
}

// startShop starts shop: GET /shop/{id} calls Caddy's GET /items/{id}
// once through otelhttp's transport and answers with Caddy's status.
func startShop(ctx context.Context, otlp, proxy string) (*server, error) {
	tp, err := tracerProvider(ctx, otlp, "shop", "")
	if err != nil {
		return nil, err
	}
	client := &http.Client{
		Transport: otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(propagator)),
		Timeout:   5 * time.Second,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /shop/{id}", func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, proxy+"/items/"+r.PathValue("id"), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &server{url: "http://" + ln.Addr().String(), tp: tp,
		srv: &http.Server{Handler: otelhttp.NewHandler(mux, "shop", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(propagator)),
			ReadHeaderTimeout: 5 * time.Second}}
	go s.srv.Serve(ln)
	return s, nil
}

// replica is one catalog instance. Its server can be shut down and
// brought back on the same address (down, up).
type replica struct {
	instance, addr string
	tp             *sdktrace.TracerProvider
	handler        http.Handler

	mu  sync.Mutex
	srv *http.Server
}

func startReplica(ctx context.Context, otlp, instance string, f *faults) (*replica, error) {
	tp, err := tracerProvider(ctx, otlp, "catalog", instance)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond) // a little work
		w.WriteHeader(f.answer(r.PathValue("id"), instance))
	})
	r := &replica{instance: instance, tp: tp,
		handler: otelhttp.NewHandler(mux, "catalog", otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(propagator))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.addr = ln.Addr().String()
	r.serve(ln)
	return r, nil
}

func (r *replica) serve(ln net.Listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srv = &http.Server{Handler: r.handler, ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
}

// down closes the replica's listener and connections: dialling it is
// refused until up.
func (r *replica) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srv.Close()
}

// up listens on the replica's address again.
func (r *replica) up() error {
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		return fmt.Errorf("%s back on %s: %w", r.instance, r.addr, err)
	}
	r.serve(ln)
	return nil
}

func (r *replica) stop(ctx context.Context) error {
	r.down()
	return r.tp.Shutdown(ctx)
}

// faults holds each item's script, consumed one received request at a
// time whichever replica receives it, and records what each replica
// received.
type faults struct {
	mu       sync.Mutex
	scripts  map[string][]int
	received map[string][]receipt
}

func newFaults() *faults {
	return &faults{scripts: map[string][]int{}, received: map[string][]receipt{}}
}

func (f *faults) plan(item string, script []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scripts[item] = script
}

// answer is the status for item's next request: its script's next entry,
// 200 past the end.
func (f *faults) answer(item, instance string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	status := http.StatusOK
	if s := f.scripts[item]; len(s) > 0 {
		status, f.scripts[item] = s[0], s[1:]
	}
	f.received[item] = append(f.received[item], receipt{Instance: instance, Status: status})
	return status
}

// A case is a kind of root request: how many of them, the fault script of
// each one's item, and whether catalog-3 is down while they are sent.
type rootCase struct {
	n      int
	script []int
	down   bool
}

// cases are the root requests in the order they are sent: healthy
// traffic with scripted failures, then a stretch with catalog-3 down
// (its dials refused; the passive health check skips it for
// failDuration after each), then catalog-3 back.
var cases = []rootCase{
	{n: 8},
	{n: 6, script: []int{503}},
	{n: 4, script: []int{503, 503}},
	{n: 3, script: []int{503, 503, 503}},
	{n: 3, script: []int{502}},
	{n: 2, script: []int{400}},
	{n: 8},
	{n: 14, down: true},
	{n: 3, script: []int{503}, down: true},
	{n: 2, script: []int{503, 503}, down: true},
	{n: 6},
	{n: 4, script: []int{503}},
	{n: 2, script: []int{503, 503, 503}},
}

// pace is the time between root requests; downPace while catalog-3 is
// down, so that its health check lets it be dialled again now and then.
const (
	pace     = 15 * time.Millisecond
	downPace = 60 * time.Millisecond
)

// drive sends the root requests one at a time, item ids 1001 up, with
// catalog-3 down for the cases that say so.
func drive(shop string, third *replica, f *faults) ([]rootCall, error) {
	client := &http.Client{Timeout: 10 * time.Second} // not instrumented: shop's span is the root
	var roots []rootCall
	isDown := false
	item := 1001
	for _, c := range cases {
		if c.down != isDown {
			if c.down {
				third.down()
			} else if err := third.up(); err != nil {
				return nil, err
			}
			isDown = c.down
			time.Sleep(50 * time.Millisecond)
		}
		for range c.n {
			if isDown {
				time.Sleep(downPace)
			} else {
				time.Sleep(pace)
			}
			id := strconv.Itoa(item)
			item++
			f.plan(id, slices.Clone(c.script))
			resp, err := client.Get(shop + "/shop/" + id)
			if err != nil {
				return nil, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			roots = append(roots, rootCall{Item: id, Answer: resp.StatusCode})
		}
	}
	if isDown {
		if err := third.up(); err != nil {
			return nil, err
		}
	}
	return roots, nil
}
