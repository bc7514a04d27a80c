'use strict';
// One instrumented service of the got-retry scenario, run as a child process
// of main.js (one process per service, so that each has its own
// TracerProvider and service.name): `node service.js front|stock`.
//
// The OpenTelemetry SDK is set up before node:http is loaded, as `node
// --require` would: instrumentation-http makes the SERVER spans and, as got
// sends every attempt through http.request, one CLIENT span per attempt,
// each a child of front's SERVER span. Response headers are not recorded
// (instrumentation-http's default), so no span carries Retry-After.

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { frontServer, instrument, serve, stockServer } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation()]);

const diagnostics = require('node:diagnostics_channel');

const records = [];
let server;

if (role === 'stock') {
  // The shared stock service (common/service.js: stockServer).
  server = stockServer(records);
} else if (role === 'front') {
  // GET /quotes/:id looks sku-<id> up in stock, POST /orders/:id reserves
  // it, both through got with its default retry options: 2 retries of GET
  // (not POST) on 408, 413, 429, 500, 502, 503, 504, 521, 522, 524 and
  // network errors, waiting 1000·2^(n-1) ms + U[0, 100) ms before retry n,
  // or the Retry-After a response names. front answers 200, passes a 4xx
  // on, and answers 503 for a 5xx or 429 it gave up on.
  const pGot = import('got').then((m) => m.default);
  // got publishes every retry it schedules, with the delay it chose, on
  // its diagnostics channel: the truth records them.
  const delays = new Map(); // call id → [{retry, delay, status}]
  diagnostics.subscribe('got:request:retry', (msg) => {
    const call = msg.error.options.headers['x-call-id'];
    if (!delays.has(call)) delays.set(call, []);
    const res = msg.error.response;
    delays.get(call).push({ retry: msg.retryCount, delay: msg.delay, status: res?.statusCode, retryAfter: res ? 'retry-after' in res.headers : false });
  });
  server = frontServer(records, () => ({}), async (rec, get, id) => {
    try {
      const got = await pGot;
      const headers = { 'x-call-id': rec.call };
      if (get) await got(`${process.env.STOCK_URL}/stock/sku-${id}`, { headers });
      else await got.post(`${process.env.STOCK_URL}/reservations/sku-${id}`, { headers, json: { qty: 1 } });
    } finally {
      rec.delays = delays.get(rec.call) || [];
    }
  }, (err) => err.response?.statusCode);
} else {
  throw new Error(`unknown role ${role}`);
}

serve(server, provider, records);
