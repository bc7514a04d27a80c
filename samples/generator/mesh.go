package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Routes of the mesh as Go 1.22 ServeMux patterns. Each handler is wrapped in
// its own otelhttp handler after the mux matched it, so otelhttp sees
// r.Pattern and records the path part as http.route.
const (
	routeCheckout = "GET /checkout/{id}"
	routePay      = "POST /checkout/{id}/pay"
	routeOrder    = "GET /orders/{id}"
	routePayment  = "POST /orders/{id}/payment"
	routeStock    = "GET /inventory/{sku}"
	routeReserve  = "POST /reservations"
	routePrice    = "GET /prices/{item}"
	routeCharge   = "POST /charges"
	routeDBStock  = "GET /db/stock/{sku}"
)

// pricedItems is the length of api's N+1 loop over pricing.
const pricedItems = 3

var serviceNames = []string{"edge", "api", "inventory", "pricing", "payments", "db"}

// mesh is one scenario's set of running services.
type mesh struct {
	services map[string]*service
	callers  []*caller // in the scenario's edge order
	faults   *faultTable
}

// service is one net/http server with its own TracerProvider, whose spans go
// to the OTLP receiver through the real OTLP/HTTP exporter.
type service struct {
	name      string
	faults    *faultTable
	tp        *sdktrace.TracerProvider
	ln        net.Listener
	srv       *http.Server
	transport http.RoundTripper
	callers   map[string]*caller // by callee route
	// cache, when set, is a tracer of another service name that api's
	// order handler makes a CLIENT span with before it calls inventory:
	// a cache lookup instrumented by hand, with no peer attributes, as
	// Jaeger's HotROD instruments redis ("redis-manual").
	cache *sdktrace.TracerProvider
	// extra are the listeners of the service's other replicas.
	extra []net.Listener
	// instance is the service.instance.id of a service run as several
	// instances ("" for one), and instances, on the first, the others:
	// processes of their own, each with its own TracerProvider, server
	// and callers (so breakers of their own).
	instance  string
	instances []*service
}

// cacheService is the service name of the hand-made cache client spans,
// cacheOperation their name.
const (
	cacheService   = "redis-manual"
	cacheOperation = "GET order"
)

func startMesh(ctx context.Context, sc Scenario, otlpURL string) (*mesh, error) {
	m := &mesh{services: map[string]*service{}, faults: newFaultTable()}
	prop := propagation.TraceContext{}
	for _, name := range serviceNames {
		n := max(sc.Instances[name], 1)
		for i := range n {
			id := ""
			if n > 1 {
				id = fmt.Sprintf("%s-%d", name, i+1)
			}
			tp, err := newProvider(ctx, name, otlpURL, id)
			if err != nil {
				return nil, err
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			s := &service{name: name, instance: id, faults: m.faults, tp: tp, ln: ln, callers: map[string]*caller{}}
			s.transport = otelhttp.NewTransport(captureTransport{base: &http.Transport{MaxIdleConnsPerHost: 16}},
				otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop))
			if first := m.services[name]; first != nil {
				first.instances = append(first.instances, s)
			} else {
				m.services[name] = s
			}
		}
	}
	if sc.ManualCache {
		tp, err := newProvider(ctx, cacheService, otlpURL, "")
		if err != nil {
			return nil, err
		}
		m.services["api"].cache = tp
	}
	for _, e := range sc.Edges {
		from, to := m.services[e.Caller], m.services[e.Callee]
		for len(to.extra) < e.Policy.Replicas-1 {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			to.extra = append(to.extra, ln)
		}
		bases := []string{to.url()}
		for _, ln := range to.extra[:max(e.Policy.Replicas-1, 0)] {
			bases = append(bases, "http://"+ln.Addr().String())
		}
		var spread []string // the callee's instances, one call each in turn
		if len(to.instances) > 0 {
			for _, inst := range to.all() {
				spread = append(spread, inst.url())
			}
		}
		// Each instance of the caller calls through a caller of its own:
		// its own client spans, breaker and counts.
		for _, src := range from.all() {
			c := newCaller(e, bases, src.transport)
			c.instance, c.spread = src.instance, spread
			if e.Policy.BelowInstrumentation {
				tp := src.tp
				c.retryBelow(func(rt http.RoundTripper) http.RoundTripper {
					return otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(prop))
				})
			}
			src.callers[e.Route] = c
			m.callers = append(m.callers, c)
		}
	}
	for _, first := range m.services {
		for _, s := range first.all() {
			mux := http.NewServeMux()
			for route, h := range s.handlers() {
				mux.Handle(route, otelhttp.NewHandler(h, route,
					otelhttp.WithTracerProvider(s.tp), otelhttp.WithPropagators(prop)))
			}
			s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
			go s.srv.Serve(s.ln)
			for _, ln := range s.extra {
				go s.srv.Serve(ln) // a replica: the same service on another port
			}
		}
	}
	return m, nil
}

// newProvider returns a TracerProvider exporting to otlpURL whose resource
// names the service and, where instance is not "", its
// service.instance.id.
func newProvider(ctx context.Context, name, otlpURL, instance string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(otlpURL))
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(name)}
	if instance != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(instance))
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL, attrs...))
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(200*time.Millisecond)),
		sdktrace.WithResource(res)), nil
}

// stop waits for in-flight handlers (a slow db keeps sleeping after its
// caller timed out), then flushes and shuts down every TracerProvider.
func (m *mesh) stop(ctx context.Context) error {
	var errs []error
	for _, first := range m.services {
		for _, s := range first.all() {
			errs = append(errs, s.srv.Shutdown(ctx))
		}
	}
	for _, first := range m.services {
		for _, s := range first.all() {
			errs = append(errs, s.tp.ForceFlush(ctx), s.tp.Shutdown(ctx))
		}
		if first.cache != nil {
			errs = append(errs, first.cache.ForceFlush(ctx), first.cache.Shutdown(ctx))
		}
	}
	return errors.Join(errs...)
}

// all is the service's instances: itself, then the others.
func (s *service) all() []*service { return append([]*service{s}, s.instances...) }

// url is the service's base URL.
func (s *service) url() string { return "http://" + s.ln.Addr().String() }

func (s *service) handlers() map[string]http.HandlerFunc {
	switch s.name {
	case "edge":
		return map[string]http.HandlerFunc{routeCheckout: s.checkout, routePay: s.pay}
	case "api":
		return map[string]http.HandlerFunc{routeOrder: s.order, routePayment: s.payment}
	case "inventory":
		return map[string]http.HandlerFunc{routeStock: s.stock, routeReserve: s.reserve}
	case "pricing":
		return map[string]http.HandlerFunc{routePrice: s.price}
	case "payments":
		return map[string]http.HandlerFunc{routeCharge: s.charge}
	case "db":
		return map[string]http.HandlerFunc{routeDBStock: s.dbStock}
	}
	return nil
}

// call makes the call along this service's edge to route.
func (s *service) call(r *http.Request, route, path string, body []byte) (result, error) {
	c, ok := s.callers[route]
	if !ok {
		panic(fmt.Sprintf("scenario has no edge from %s to %q", s.name, route))
	}
	c.stats.calledFrom(r.Pattern)
	return c.call(r.Context(), path, body)
}

// inject serves the scripted fault for this request, if any, and reports
// whether it answered.
func (s *service) inject(w http.ResponseWriter, r *http.Request, key string) bool {
	done := s.faults.arrived(s.name, r.Pattern, key)
	f := s.faults.next(s.name, r.Pattern, key)
	defer func() { done(!f.Abort) }() // done also when f aborts the request
	return f.apply(w)
}

func (s *service) checkout(w http.ResponseWriter, r *http.Request) {
	res, err := s.call(r, routeOrder, "/orders/"+r.PathValue("id"), nil)
	relay(w, res, err)
}

func (s *service) pay(w http.ResponseWriter, r *http.Request) {
	res, err := s.call(r, routePayment, "/orders/"+r.PathValue("id")+"/payment", nil)
	relay(w, res, err)
}

// order looks the stock up, then prices each item with its own call: an N+1
// loop of distinct successful requests, not a retry.
func (s *service) order(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.cache != nil {
		_, span := s.cache.Tracer("cache").Start(r.Context(), cacheOperation, trace.WithSpanKind(trace.SpanKindClient))
		time.Sleep(time.Millisecond) // the lookup; a miss: the order goes on to inventory
		span.End()
	}
	if res, err := s.call(r, routeStock, "/inventory/"+skuOf(id), nil); failed(res, err) {
		relay(w, res, err)
		return
	}
	total := 0
	for i := 1; i <= pricedItems; i++ {
		res, err := s.call(r, routePrice, fmt.Sprintf("/prices/item-%s-%d", id, i), nil)
		if failed(res, err) {
			relay(w, res, err)
			return
		}
		var p struct {
			Cents int `json:"cents"`
		}
		if err := json.Unmarshal(res.body, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		total += p.Cents
	}
	writeJSON(w, http.StatusOK, map[string]any{"order": id, "total_cents": total})
}

// payment reserves the stock (POST without an idempotency key) and charges
// (POST whose caller may send one).
func (s *service) payment(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, _ := json.Marshal(map[string]string{"order": id})
	if res, err := s.call(r, routeReserve, "/reservations", body); failed(res, err) {
		relay(w, res, err)
		return
	}
	if res, err := s.call(r, routeCharge, "/charges", body); failed(res, err) {
		relay(w, res, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"order": id, "status": "paid"})
}

func (s *service) stock(w http.ResponseWriter, r *http.Request) {
	sku := r.PathValue("sku")
	if s.inject(w, r, sku) {
		return
	}
	res, err := s.call(r, routeDBStock, "/db/stock/"+sku, nil)
	relay(w, res, err)
}

func (s *service) reserve(w http.ResponseWriter, r *http.Request) {
	s.create(w, r, "reserved")
}

func (s *service) charge(w http.ResponseWriter, r *http.Request) {
	s.create(w, r, "charged")
}

// create answers a POST naming an order, unless a fault is scripted for it.
func (s *service) create(w http.ResponseWriter, r *http.Request, status string) {
	var in struct {
		Order string `json:"order"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Order == "" {
		http.Error(w, "body must name an order", http.StatusBadRequest)
		return
	}
	if s.inject(w, r, in.Order) {
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"order": in.Order, "status": status})
}

func (s *service) price(w http.ResponseWriter, r *http.Request) {
	item := r.PathValue("item")
	writeJSON(w, http.StatusOK, map[string]any{"item": item, "cents": 100 + hash(item)%5000})
}

func (s *service) dbStock(w http.ResponseWriter, r *http.Request) {
	sku := r.PathValue("sku")
	if s.inject(w, r, sku) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sku": sku, "quantity": hash(sku) % 100})
}

func hash(s string) int {
	h := fnv.New32a()
	h.Write([]byte(s))
	return int(h.Sum32() & 0x7fffffff)
}

func failed(res result, err error) bool { return err != nil || res.status >= 400 }

// relay answers with a dependency's outcome the way a gateway would: its
// success body, its permanent client error, 503 for a retryable failure it
// gave up on, 504 for a timeout and 502 for any other transport error.
func relay(w http.ResponseWriter, res result, err error) {
	var ne net.Error
	switch {
	case err != nil && errors.As(err, &ne) && ne.Timeout():
		http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
	case err != nil:
		http.Error(w, "upstream failed", http.StatusBadGateway)
	case res.status >= 400 && !retryableStatus(res.status):
		http.Error(w, http.StatusText(res.status), res.status)
	case res.status >= 400:
		http.Error(w, "dependency unavailable", http.StatusServiceUnavailable)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(res.status)
		w.Write(res.body)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
