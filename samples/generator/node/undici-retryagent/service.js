'use strict';
// One instrumented service of the undici-retryagent scenario, run as a child
// process of main.js (one process per service, so that each has its own
// TracerProvider and service.name): `node service.js front|backend`.
//
// The OpenTelemetry SDK is set up before http and undici are loaded, as
// `node --require` would: instrumentation-http makes the SERVER spans (and
// would make CLIENT spans for node:http, which no service here uses for
// calls), instrumentation-undici the CLIENT spans of undici requests. Spans
// leave through the OTLP/HTTP protobuf exporter to the URL in
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the Go generator's receiver).

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici');
const { answer, api, faultScripts, instrument, now, onStop, route } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation(), new UndiciInstrumentation()]);

const http = require('node:http');
const undici = require('undici');

const records = [];
let server;

if (role === 'backend') {
  // GET /stock/:sku answers from a fault script per sku, one entry per
  // request whatever trace it comes in: {status, close}. Past the end of
  // its script a sku answers 200. close ends the keep-alive connection
  // after the response, so that the next request opens a new socket.
  const nextStep = faultScripts({ status: 200 });
  server = http.createServer((req, res) => {
    const m = /^\/stock\/([^/?]+)$/.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    route('/stock/:sku');
    const step = nextStep(m[1]);
    const tp = String(req.headers.traceparent || '').split('-');
    records.push({ call: String(req.headers['x-call-id'] || ''), sku: m[1], trace: tp[1] || '', parent: tp[2] || '',
      at: now(), status: step.status });
    const body = step.status === 200 ? JSON.stringify({ sku: m[1], available: 7 }) : '';
    const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    if (step.close) headers.connection = 'close';
    res.writeHead(step.status, headers).end(body);
  });
} else if (role === 'front') {
  // GET /orders/:id looks up stock for sku-<id> through one undici
  // RetryAgent over a one-connection keep-alive Agent, then spends
  // x-work-ms composing the page before it answers.
  const cfg = JSON.parse(process.env.RETRY_AGENT_OPTIONS);
  const agent = new undici.RetryAgent(new undici.Agent({ connections: 1, keepAliveTimeout: 30_000 }), cfg);
  let seq = 0;
  server = http.createServer(async (req, res) => {
    const m = /^\/orders\/([^/?]+)$/.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    route('/orders/:id');
    const sc = api.trace.getActiveSpan().spanContext();
    const rec = { call: `${m[1]}#${++seq}`, order: m[1], trace: sc.traceId, span: sc.spanId, start: now() };
    records.push(rec);
    let status = 200;
    try {
      const r = await undici.request(`${process.env.BACKEND_URL}/stock/sku-${m[1]}`, {
        dispatcher: agent, headers: { 'x-call-id': rec.call },
      });
      await r.body.text();
      rec.answer = r.statusCode;
      if (r.statusCode !== 200) status = 502;
    } catch (err) {
      // RetryAgent throws when it gives up (throwOnError): a retryable
      // status it gave up on becomes 503, as a gateway answers.
      rec.answer = err.statusCode || 0;
      status = 503;
    }
    const work = Number(req.headers['x-work-ms'] || 0);
    if (work > 0) await new Promise((r) => setTimeout(r, work));
    res.on('finish', () => { rec.end = now(); });
    answer(res, status);
  });
} else {
  throw new Error(`unknown role ${role}`);
}

server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => process.send({ type: 'ready', port: server.address().port }));
onStop(provider, records, () => server.close());
