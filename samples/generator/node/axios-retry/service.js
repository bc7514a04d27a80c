'use strict';
// One instrumented service of the axios-retry scenario, run as a child
// process of main.js (one process per service, so that each has its own
// TracerProvider and service.name): `node service.js front|stock`.
//
// The OpenTelemetry SDK is set up before node:http is loaded, as `node
// --require` would: instrumentation-http makes the SERVER spans and, as
// axios's http adapter sends every attempt through http.request, one CLIENT
// span per attempt, each a child of front's SERVER span. front's
// instrumentation records the Retry-After response header on its CLIENT
// spans (headersToSpanAttributes), as an operator who wants to see
// throttling would configure it.

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { frontServer, instrument, serve, stockServer } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation({ headersToSpanAttributes: { client: { responseHeaders: ['retry-after'] } } })]);

const records = [];
let server;

if (role === 'stock') {
  // The shared stock service (common/service.js: stockServer).
  server = stockServer(records);
} else if (role === 'front') {
  // GET /quotes/:id looks sku-<id> up in stock, POST /orders/:id reserves
  // it, both through one axios instance with axios-retry: RETRY.retries
  // retries, retryDelay axios-retry's own exponentialDelay, retryCondition
  // its default (isNetworkOrIdempotentRequestError: a network error, or a
  // 429 or 5xx answer to GET, HEAD, OPTIONS, PUT or DELETE — never a
  // POST, never a timeout). axios's timeout stays at its default 0 (none),
  // so shouldResetTimeout (default false: the retries share what is left
  // of the first request's timeout, less the delay) plays no part. front
  // answers 200, passes a 4xx on, and answers 503 for a 5xx or 429 it gave
  // up on.
  const axios = require('axios');
  const axiosRetry = require('axios-retry').default;
  const rp = JSON.parse(process.env.RETRY);
  const client = axios.create({ headers: { 'content-type': 'application/json' } });
  // The delay exponentialDelay chose for every retry (call id → list), for
  // the truth: the library's function, called as axios-retry calls it.
  const delays = new Map();
  axiosRetry(client, {
    retries: rp.retries,
    retryDelay: (n, err) => {
      const delay = axiosRetry.exponentialDelay(n, err);
      const call = err.config.headers['x-call-id'];
      if (!delays.has(call)) delays.set(call, []);
      delays.get(call).push({ retry: n, delay, status: err.response?.status, retryAfter: Boolean(err.response?.headers['retry-after']) });
      return delay;
    },
  });
  server = frontServer(records, () => ({}), async (rec, get, id) => {
    try {
      const headers = { 'x-call-id': rec.call };
      if (get) await client.get(`${process.env.STOCK_URL}/stock/sku-${id}`, { headers });
      else await client.post(`${process.env.STOCK_URL}/reservations/sku-${id}`, { qty: 1 }, { headers });
    } finally {
      rec.delays = delays.get(rec.call) || [];
    }
  }, (err) => err.response?.status);
} else {
  throw new Error(`unknown role ${role}`);
}

serve(server, provider, records);
