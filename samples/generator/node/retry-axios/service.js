'use strict';
// One instrumented service of the retry-axios scenario, run as a child
// process of main.js (one process per service, so that each has its own
// TracerProvider and service.name): `node service.js front|stock`.
//
// The OpenTelemetry SDK is set up before node:http is loaded, as `node
// --require` would: instrumentation-http makes the SERVER spans and, as
// axios's http adapter sends every attempt through http.request (retry-axios
// sends each retry through the axios instance again), one CLIENT span per
// attempt, each a child of front's SERVER span. instrumentation-http
// records no response header by default: no span carries Retry-After.

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
  // it, both through one axios instance with retry-axios attached and the
  // raxConfig in RAX (retry, retryDelay, backoffType; everything else
  // retry-axios's default: httpMethodsToRetry GET, HEAD, PUT, OPTIONS,
  // DELETE; statusCodesToRetry 100–199, 429, 500–599; checkRetryAfter
  // true, maxRetryAfter 5 min). front answers 200, passes a 4xx on, and
  // answers 503 for a 5xx or 429 it gave up on.
  const axios = require('axios');
  const rax = require('retry-axios');
  const raxConfig = JSON.parse(process.env.RAX);
  const client = axios.create({ headers: { 'content-type': 'application/json' } });
  const retries = new Map(); // call id → the retries retry-axios made
  client.defaults.raxConfig = {
    ...raxConfig,
    instance: client,
    // retry-axios calls onRetryAttempt after its wait, before the next
    // try: the truth records which try failed how.
    onRetryAttempt: (err) => {
      const res = err.response;
      retries.get(err.config.headers['x-call-id']).push({ retry: err.config.raxConfig.currentRetryAttempt, status: res?.status, retryAfter: res?.headers['retry-after'] ?? null });
    },
  };
  rax.attach(client);
  server = frontServer(records, () => ({}), async (rec, get, id) => {
    rec.retries = [];
    retries.set(rec.call, rec.retries);
    const headers = { 'x-call-id': rec.call };
    if (get) await client.get(`${process.env.STOCK_URL}/stock/sku-${id}`, { headers });
    else await client.post(`${process.env.STOCK_URL}/reservations/sku-${id}`, { qty: 1 }, { headers });
  }, (err) => err.response?.status);
} else {
  throw new Error(`unknown role ${role}`);
}

serve(server, provider, records);
