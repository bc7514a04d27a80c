'use strict';
// One instrumented service of the superagent-retry scenario, run as a
// child process of main.js (one process per service, so that each has its
// own TracerProvider and service.name): `node service.js front|stock`.
//
// The OpenTelemetry SDK is set up before node:http is loaded, as `node
// --require` would: instrumentation-http makes the SERVER spans and, as
// superagent sends every try through http.request, one CLIENT span per
// try, each a child of front's SERVER span, with the Retry-After response
// header recorded on it (headersToSpanAttributes), as an operator who
// wants to see it would configure.

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { frontServer, instrument, now, serve, stockServer } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation({ headersToSpanAttributes: { client: { responseHeaders: ['retry-after'] } } })]);

const records = [];
let server;

if (role === 'stock') {
  // The shared stock service (common/service.js: stockServer).
  server = stockServer(records);
} else if (role === 'front') {
  // GET /quotes/:id looks sku-<id> up in stock, POST /orders/:id reserves
  // it, both through superagent with .retry(RETRIES): superagent retries
  // any method, at once (no wait), on 408, 413, 429, 500, 502, 503, 504,
  // 521, 522, 524, its own timeouts and connection errors, and reads no
  // Retry-After. front answers 200, passes a 4xx on, and answers 503 for a
  // 5xx or 429 it gave up on.
  const superagent = require('superagent');
  const retries = Number(process.env.RETRIES);
  server = frontServer(records, () => ({ judged: [] }), async (rec, get, id) => {
    // superagent asks the callback of .retry about every try's outcome
    // while retries are left, success included; undefined keeps its own
    // rule: the truth records what it was asked about.
    const judged = (err, r) => { rec.judged.push({ status: r ? r.status : null, error: err && !r ? String(err.code || err.message) : null, at: now() }); };
    const r = get ? superagent.get(`${process.env.STOCK_URL}/stock/sku-${id}`) : superagent.post(`${process.env.STOCK_URL}/reservations/sku-${id}`).send({ qty: 1 });
    await r.set('x-call-id', rec.call).retry(retries, judged);
  }, (err) => err.status);
} else {
  throw new Error(`unknown role ${role}`);
}

serve(server, provider, records);
