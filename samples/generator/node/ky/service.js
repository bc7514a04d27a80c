'use strict';
// One instrumented service of the ky-retry scenarios, run as a child
// process of main.js (one process per service, so that each has its own
// TracerProvider and service.name): `node service.js front|stock`.
//
// The OpenTelemetry SDK is set up before http and undici are loaded, as
// `node --require` would: instrumentation-http makes the SERVER spans,
// instrumentation-undici one CLIENT span per attempt of the global fetch ky
// runs on. With CAPTURE_RETRY_AFTER=1 instrumentation-undici records the
// Retry-After response header on the CLIENT spans
// (headersToSpanAttributes); by default no span carries it.

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici');
const { frontServer, instrument, serve, stockServer } = require('../common/service');

const undiciConfig = process.env.CAPTURE_RETRY_AFTER === '1' ? { headersToSpanAttributes: { responseHeaders: ['retry-after'] } } : {};
const provider = instrument(role, [new HttpInstrumentation(), new UndiciInstrumentation(undiciConfig)]);

const records = [];
let server;

if (role === 'stock') {
  // The shared stock service (common/service.js: stockServer).
  server = stockServer(records);
} else if (role === 'front') {
  // GET /quotes/:id looks sku-<id> up in stock, POST /orders/:id reserves
  // it, both through ky with the retry options in KY_RETRY (ky retries
  // GET, PUT, HEAD, DELETE, OPTIONS, TRACE and QUERY, never a POST, on 408,
  // 413, 429, 500, 502, 503 and 504, and waits what a Retry-After names on
  // 413, 429 and 503). ky's own timeout is off (timeout: false), so no try
  // is cut. front answers 200, passes a 4xx on, and answers 503 for a 5xx
  // or 429 it gave up on.
  const retry = JSON.parse(process.env.KY_RETRY);
  const pKy = import('ky').then((m) => m.default.create({
    timeout: false,
    hooks: {
      // ky calls beforeRetry after its wait, before the next try: the
      // truth records which try failed how.
      beforeRetry: [({ request, error, retryCount }) => {
        const call = request.headers.get('x-call-id');
        const res = error.response;
        calls.get(call).retries.push({ retry: retryCount, status: res?.status, retryAfter: res ? res.headers.get('retry-after') : null });
      }],
    },
  }));
  const calls = new Map(); // call id → record
  server = frontServer(records, () => ({ retries: [], draws: [] }), async (rec, get, id) => {
    calls.set(rec.call, rec);
    const ky = await pKy;
    const headers = { 'x-call-id': rec.call };
    // jitter: true is ky's full jitter, Math.random() · delay; the same
    // draw through ky's jitter function, one per call, lets the truth
    // record each wait ky chose (ky skips it for a Retry-After).
    const opts = { headers, retry: retry.jitter === true ? { ...retry, jitter: (d) => { const j = Math.random() * d; rec.draws.push(j); return j; } } : retry };
    if (get) await ky.get(`${process.env.STOCK_URL}/stock/sku-${id}`, opts).text();
    else await ky.post(`${process.env.STOCK_URL}/reservations/sku-${id}`, { ...opts, json: { qty: 1 } }).text();
  }, (err) => err.response?.status);
} else {
  throw new Error(`unknown role ${role}`);
}

if (role === 'front') {
  // Node loads fetch's implementation on first use: load it before
  // serving, with a data: URL, which fetch answers itself (no request, no
  // span).
  fetch('data:,warm').then((r) => r.text()).then(() => serve(server, provider, records));
} else {
  serve(server, provider, records);
}
