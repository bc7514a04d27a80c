'use strict';
// One instrumented service of the fetch-timeout scenario, run as a child
// process of main.js (one process per service, so that each has its own
// TracerProvider and service.name): `node service.js front|pricing`.
//
// The OpenTelemetry SDK is set up before http and undici are loaded, as
// `node --require` would: instrumentation-http makes the SERVER spans (and
// would make CLIENT spans for node:http, which no service here uses for
// calls), instrumentation-undici the CLIENT spans of the global fetch (Node's
// bundled undici publishes the diagnostics channels it subscribes to). Spans
// leave through the OTLP/HTTP protobuf exporter to the URL in
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the Go generator's receiver).

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici');
const { answer, faultScripts, instrument, now, onStop, route } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation(), new UndiciInstrumentation()]);

const http = require('node:http');

const records = [];
let server;

if (role === 'pricing') {
  // GET /prices/:sku answers from a fault script per sku, one entry per
  // request: "slow" answers 200 after SLOW_MS (the work is not cancelled
  // when the caller gives up, like a blocking query), "503" at once, past
  // the end of the script 200 at once.
  const nextStep = faultScripts('ok');
  const slowMS = Number(process.env.SLOW_MS);
  server = http.createServer((req, res) => {
    const m = /^\/prices\/([^/?]+)$/.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    route('/prices/:sku');
    const step = nextStep(m[1]);
    records.push({ call: String(req.headers['x-call-id'] || ''), at: now(), step });
    const reply = () => {
      const status = step === '503' ? 503 : 200;
      const body = status === 200 ? JSON.stringify({ sku: m[1], cents: 1299 }) : '';
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    };
    if (step === 'slow') setTimeout(reply, slowMS); else reply();
  });
} else if (role === 'front') {
  // GET /quotes/:id asks pricing for sku-<id> with the global fetch, each
  // try bounded by its own timeout (TIMEOUT_STYLE "signal":
  // AbortSignal.timeout(ms); "controller": an AbortController aborted by a
  // timer, as ky does), retried by p-retry on a timeout, a network error or
  // a 5xx. It answers 200, or 504 when every try timed out, 502 otherwise.
  const cfg = JSON.parse(process.env.RETRY_OPTIONS);
  const timeoutMS = Number(process.env.PER_TRY_TIMEOUT_MS);
  const style = process.env.TIMEOUT_STYLE;
  const pRetry = import('p-retry').then((m) => m.default);
  let seq = 0;
  server = http.createServer(async (req, res) => {
    const m = /^\/quotes\/([^/?]+)$/.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    route('/quotes/:id');
    const rec = { call: `${m[1]}#${++seq}`, order: m[1], start: now(), attempts: [] };
    records.push(rec);
    const attempt = async () => {
      const a = { start: now() };
      rec.attempts.push(a);
      let signal, timer;
      if (style === 'controller') {
        const ac = new AbortController();
        timer = setTimeout(() => ac.abort(), timeoutMS);
        signal = ac.signal;
      } else {
        signal = AbortSignal.timeout(timeoutMS);
      }
      try {
        const r = await fetch(`${process.env.PRICING_URL}/prices/sku-${m[1]}`, { signal, headers: { 'x-call-id': rec.call } });
        await r.text();
        a.status = r.status;
        if (r.status >= 500) throw new Error(`pricing answered ${r.status}`);
        return r.status;
      } catch (err) {
        if (a.status === undefined) a.error = err.name; // TimeoutError / AbortError: the try timed out
        throw err;
      } finally {
        a.end = now();
        clearTimeout(timer);
      }
    };
    let status = 200;
    try {
      await (await pRetry)(attempt, cfg);
    } catch (err) {
      status = rec.attempts.at(-1).status === undefined ? 504 : 502;
    }
    res.on('finish', () => { rec.end = now(); });
    answer(res, status);
  });
} else {
  throw new Error(`unknown role ${role}`);
}

server.keepAliveTimeout = 30_000;
// Node loads fetch's implementation on first use, which on a busy host can
// take longer than a try may: load it before serving, with a data: URL,
// which fetch answers itself (no request, no span).
fetch('data:,warm').then((r) => r.text()).then(() => {
  server.listen(0, '127.0.0.1', () => process.send({ type: 'ready', port: server.address().port }));
});
onStop(provider, records, () => server.close());
