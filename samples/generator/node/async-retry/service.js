'use strict';
// One instrumented service of the async-retry scenario, run as a child
// process of main.js (one process per service, so that each has its own
// TracerProvider and service.name): `node service.js front|stock`.
//
// The OpenTelemetry SDK is set up before http and undici are loaded, as
// `node --require` would: instrumentation-http makes the SERVER spans,
// instrumentation-undici one CLIENT span per fetch, so one per attempt of
// async-retry's loop. front's instrumentation-undici records the
// Retry-After response header and the Idempotency-Key request header on
// its CLIENT spans (headersToSpanAttributes).

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { UndiciInstrumentation } = require('@opentelemetry/instrumentation-undici');
const { frontServer, instrument, serve, stockServer } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation(), new UndiciInstrumentation({
  headersToSpanAttributes: { requestHeaders: ['idempotency-key'], responseHeaders: ['retry-after'] },
})]);

const records = [];
let server;

if (role === 'stock') {
  // The shared stock service (common/service.js: stockServer).
  server = stockServer(records);
} else if (role === 'front') {
  // GET /quotes/:id looks sku-<id> up in stock, POST /orders/:id reserves
  // it, each through fetch inside async-retry with the options in
  // ASYNC_RETRY. The function async-retry runs throws on a 429 or 5xx
  // (async-retry then waits and runs it again) and bails on any other
  // error status (no retry); the POST carries an Idempotency-Key, the
  // same on every try of a call, so it is retried too.
  const retry = require('async-retry');
  // async-retry computes every wait of a call when the call starts (the
  // retry package's timeouts(): createTimeout for each retry, then sorted
  // ascending), synchronously inside retry(): wrapping createTimeout
  // records the waits of the call being started, for the truth.
  const retrier = require('retry');
  let drawing = null;
  const createTimeout = retrier.createTimeout;
  retrier.createTimeout = function (attempt, opts) {
    const t = createTimeout.call(this, attempt, opts);
    drawing?.push(t);
    return t;
  };
  const opts = JSON.parse(process.env.ASYNC_RETRY);
  server = frontServer(records, () => ({ waits: [], failures: [] }), async (rec, get, id) => {
    const url = get ? `${process.env.STOCK_URL}/stock/sku-${id}` : `${process.env.STOCK_URL}/reservations/sku-${id}`;
    const init = get
      ? { headers: { 'x-call-id': rec.call } }
      : { method: 'POST', headers: { 'x-call-id': rec.call, 'content-type': 'application/json', 'idempotency-key': `order-${rec.call}` }, body: JSON.stringify({ qty: 1 }) };
    drawing = rec.waits;
    const done = retry(async (bail) => {
      const res = await fetch(url, init);
      await res.arrayBuffer();
      if (res.ok) return;
      const err = Object.assign(new Error(`stock answered ${res.status}`), { status: res.status });
      rec.failures.push(res.status);
      if (res.status === 429 || res.status >= 500) throw err;
      bail(err);
    }, opts);
    drawing = null;
    rec.waits.sort((a, b) => a - b);
    await done;
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
