'use strict';
// One instrumented service of the exponential-backoff scenario, run as a
// child process of main.js (one process per service, so that each has its
// own TracerProvider and service.name): `node service.js front|stock`.
//
// The OpenTelemetry SDK is set up before node:http is loaded, as `node
// --require` would: instrumentation-http makes the SERVER spans and, as
// axios's http adapter sends every try through http.request, one CLIENT
// span per try of backOff's loop, each a child of front's SERVER span.

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { frontServer, instrument, serve, stockServer } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation()]);

const records = [];
let server;

if (role === 'stock') {
  // The shared stock service (common/service.js: stockServer).
  server = stockServer(records);
} else if (role === 'front') {
  // GET /quotes/:id looks sku-<id> up in stock, POST /orders/:id reserves
  // it, each try a plain axios request (no retry of its own) inside
  // exponential-backoff's backOff with the options in BACKOFF; its retry
  // callback lets a GET that failed with a 429 or 5xx be tried again and
  // nothing else (a POST is never retried). front answers 200, passes a
  // 4xx on, and answers 503 for a 5xx or 429 it gave up on.
  const { AsyncLocalStorage } = require('node:async_hooks');
  const axios = require('axios');
  const { backOff } = require('exponential-backoff');
  // exponential-backoff's full jitter (jitter/full/full.jitter.js:
  // round(Math.random()·delay)), looked up through its module's exports
  // whenever a wait starts: wrapping it records each wait, with the delay
  // it jittered, in the call whose async context asked for it.
  const full = require('exponential-backoff/dist/jitter/full/full.jitter');
  const fullJitter = full.fullJitter;
  const current = new AsyncLocalStorage();
  full.fullJitter = (delay) => {
    const wait = fullJitter(delay);
    current.getStore()?.waits.push({ delay, wait });
    return wait;
  };
  const opts = JSON.parse(process.env.BACKOFF);
  const client = axios.create({ validateStatus: () => true, headers: { 'content-type': 'application/json' } });
  server = frontServer(records, () => ({ waits: [] }), (rec, get, id) => current.run(rec, () => backOff(async () => {
    const headers = { 'x-call-id': rec.call };
    const res = get
      ? await client.get(`${process.env.STOCK_URL}/stock/sku-${id}`, { headers })
      : await client.post(`${process.env.STOCK_URL}/reservations/sku-${id}`, { qty: 1 }, { headers });
    if (res.status >= 400) throw Object.assign(new Error(`stock answered ${res.status}`), { status: res.status });
  }, { ...opts, retry: (err) => get && (err.status === 429 || err.status >= 500) })), (err) => err.status);
} else {
  throw new Error(`unknown role ${role}`);
}

serve(server, provider, records);
