'use strict';
// What every instrumented service of the Node scenarios shares: the
// OpenTelemetry SDK set up for one service.name, spans leaving through the
// OTLP/HTTP protobuf exporter to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the Go
// generator's receiver), and the stop message of the scenario's main.js.
// instrument must run before the modules it instruments (node:http,
// undici, @grpc/grpc-js) are loaded, as `node --require` would.

const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { registerInstrumentations } = require('@opentelemetry/instrumentation');
const { getRPCMetadata, RPCType } = require('@opentelemetry/core');
const api = require('@opentelemetry/api');

// instrument registers a tracer provider for service role with the given
// instrumentations and returns it; attrs adds resource attributes (a
// replica's service.instance.id).
function instrument(role, instrumentations, attrs = {}) {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': role, ...attrs }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT }))],
  });
  provider.register();
  registerInstrumentations({ instrumentations });
  return provider;
}

const now = () => performance.timeOrigin + performance.now(); // ms since the epoch, sub-ms

// route names the request's route as a framework (Express, Fastify) would,
// through the RPC metadata instrumentation-http reads when the span ends:
// the span then carries http.route and is named "GET /stock/:sku".
function route(r) {
  const md = getRPCMetadata(api.context.active());
  if (md && md.type === RPCType.HTTP) md.route = r;
}

// faultScripts receives the fault script main.js sends for each sku
// ({type: 'script', sku, script}) and returns next(sku): the script's next
// step, one per request, or past its end fallback.
function faultScripts(fallback) {
  const scripts = new Map();
  process.on('message', (m) => {
    if (m.type === 'script') scripts.set(m.sku, m.script.slice());
  });
  return (sku) => (scripts.get(sku) || []).shift() || fallback;
}

// onStop answers main.js's stop message: stop serving (stopServer may
// return a promise), flush the spans through the exporter, send back what
// the service recorded, exit.
function onStop(provider, records, stopServer) {
  process.on('message', async (m) => {
    if (m.type !== 'stop') return;
    await stopServer();
    await provider.shutdown(); // flushes the batch processor through the exporter
    process.send({ type: 'records', records }, () => process.exit(0));
  });
}

// serve listens on a free port of 127.0.0.1, tells main.js the port, and
// stops serving on its stop message (onStop).
function serve(server, provider, records) {
  server.listen(0, '127.0.0.1', () => process.send({ type: 'ready', port: server.address().port }));
  onStop(provider, records, () => new Promise((r) => server.close(() => r())));
}

// stockServer is the stock service the retry scenarios call: GET
// /stock/:sku and POST /reservations/:sku answer from a fault script per
// sku (faultScripts), one entry per request: "503"; "429" with
// Retry-After: 1; "400"; "pending", a 200 whose body says the result is
// not ready ({"status":"pending"}); past the end of the script 200. Each request is
// pushed to records with its x-call-id, method, time and step. It must be
// called after instrument, since it loads node:http.
function stockServer(records) {
  const http = require('node:http');
  const nextStep = faultScripts('ok');
  return http.createServer((req, res) => {
    const m = req.method === 'GET' ? /^\/stock\/([^/?]+)$/.exec(req.url) : /^\/reservations\/([^/?]+)$/.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    route(req.method === 'GET' ? '/stock/:sku' : '/reservations/:sku');
    req.resume();
    const step = nextStep(m[1]);
    records.push({ call: String(req.headers['x-call-id'] || ''), method: req.method, at: now(), step });
    const status = step === 'ok' || step === 'pending' ? 200 : Number(step);
    const headers = { 'content-type': 'application/json' };
    if (status === 429) headers['retry-after'] = '1';
    const body = step === 'pending' ? { sku: m[1], status: 'pending' } : { sku: m[1], available: 7 };
    res.writeHead(status, headers).end(status === 200 ? JSON.stringify(body) : '');
  });
}

// frontServer is front in the scripted scenarios (the drivers' runScripted):
// GET /quotes/:id and POST /orders/:id (404 otherwise), each pushed to
// records as {call: "id#n", method, start, ...fields} and handed to
// send(rec, get, id), which calls stock through the library under test and
// resolves once the call is over or throws the error it failed with. front
// answers 200, or as a gateway would (gatewayStatus) to the status
// statusOf(err) reads from that error (undefined: no answer). It must be
// called after instrument, since it loads node:http.
function frontServer(records, fields, send, statusOf) {
  const http = require('node:http');
  let seq = 0;
  return http.createServer(async (req, res) => {
    const get = req.method === 'GET' && /^\/quotes\/([^/?]+)$/.exec(req.url);
    const post = req.method === 'POST' && /^\/orders\/([^/?]+)$/.exec(req.url);
    if (!get && !post) { res.writeHead(404).end(); return; }
    req.resume();
    route(get ? '/quotes/:id' : '/orders/:id');
    const id = (get || post)[1];
    const rec = { call: `${id}#${++seq}`, method: req.method, start: now(), ...fields() };
    records.push(rec);
    let status = 200;
    try {
      await send(rec, Boolean(get), id);
    } catch (err) {
      status = gatewayStatus(statusOf(err));
    }
    rec.status = status;
    answer(res, status);
  });
}

// answer ends a response with status as its plain-text body, as every
// scenario's caller answers its own caller.
function answer(res, status) {
  res.writeHead(status, { 'content-type': 'text/plain' }).end(String(status));
}

// gatewayStatus is the status a caller that gave up answers with, as a
// gateway would: a permanent client error (4xx but 408 and 429) passed
// through, anything else (a retryable status, a transport error: no
// status) 503.
function gatewayStatus(s) {
  return s >= 400 && s < 500 && s !== 408 && s !== 429 ? s : 503;
}

module.exports = { answer, api, frontServer, gatewayStatus, instrument, now, route, faultScripts, onStop, serve, stockServer };
