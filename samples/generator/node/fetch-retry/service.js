'use strict';
// One instrumented service of the fetch-retry scenario, run as a child
// process of main.js (one process per service, so that each has its own
// TracerProvider and service.name): `node service.js front|stock`.
//
// The OpenTelemetry SDK is set up before http and undici are loaded, as
// `node --require` would: instrumentation-http makes the SERVER spans,
// instrumentation-undici one CLIENT span per fetch, so one per try of
// fetch-retry's loop. front's instrumentation-undici records the
// Retry-After response header on its CLIENT spans (headersToSpanAttributes).

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici');
const { frontServer, instrument, serve, stockServer } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation(), new UndiciInstrumentation({
  headersToSpanAttributes: { responseHeaders: ['retry-after'] },
})]);

const records = [];
let server;

if (role === 'stock') {
  // The shared stock service (common/service.js: stockServer).
  server = stockServer(records);
} else if (role === 'front') {
  // GET /quotes/:id looks sku-<id> up in stock, POST /orders/:id reserves
  // it, both through the global fetch wrapped by fetch-retry with the
  // options in FETCH_RETRY: retries, retryOn (a list of statuses), and
  // retryDelay the linear function base + attempt·increment of the
  // attempt that failed (from 0). fetch-retry looks at no method: a POST
  // is retried as a GET is, here without an idempotency key. It resolves
  // to the last response, retried or not: front answers 200, passes a
  // 4xx on, and answers 503 for a 5xx or 429.
  const opts = JSON.parse(process.env.FETCH_RETRY);
  const fetchRetry = require('fetch-retry')(fetch, { retries: opts.retries, retryOn: opts.retryOn });
  server = frontServer(records, () => ({ delays: [] }), async (rec, get, id) => {
    const url = get ? `${process.env.STOCK_URL}/stock/sku-${id}` : `${process.env.STOCK_URL}/reservations/sku-${id}`;
    const init = {
      headers: get ? { 'x-call-id': rec.call } : { 'x-call-id': rec.call, 'content-type': 'application/json' },
      // The delay fetch-retry asks for before each retry, recorded for
      // the truth with the status it follows.
      retryDelay: (attempt, _err, res) => {
        const delay = opts.baseMS + attempt * opts.incrementMS;
        rec.delays.push({ attempt, status: res?.status, delay });
        return delay;
      },
    };
    if (!get) Object.assign(init, { method: 'POST', body: JSON.stringify({ qty: 1 }) });
    const res = await fetchRetry(url, init);
    await res.arrayBuffer();
    if (!res.ok) throw Object.assign(new Error(`stock answered ${res.status}`), { status: res.status });
  }, (err) => err.status);
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
