'use strict';
// One instrumented service of the axios-retry-pending scenario, run as a
// child process of main.js (one process per service, so that each has its
// own TracerProvider and service.name): `node service.js front|stock`.
//
// instrumentation-http makes the SERVER spans and, as axios's http adapter
// sends every attempt through http.request, one CLIENT span per attempt,
// each a child of front's SERVER span.

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { frontServer, instrument, serve, stockServer } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation()]);

const records = [];
let server;

if (role === 'stock') {
  // The shared stock service (common/service.js: stockServer), whose
  // "pending" step answers 200 {"status":"pending"}.
  server = stockServer(records);
} else if (role === 'front') {
  // GET /quotes/:id looks sku-<id> up in stock, POST /orders/:id reserves
  // it, through one axios instance with axios-retry. axios resolves every
  // 2xx, and axios-retry asks its retryCondition about errors only: a
  // response interceptor, registered before axios-retry's, turns a 200
  // whose body says "pending" into an AxiosError carrying the response,
  // and the retryCondition retries those as well as what the default one
  // does (isNetworkOrIdempotentRequestError: a network error, or a 429 or
  // 5xx answer to an idempotent method). retryDelay waits RETRY.delayMS
  // before every retry. A call that runs out of retries on "pending" ends
  // in that error; front answers 503 for it, as for a 5xx it gave up on.
  const axios = require('axios');
  const axiosRetry = require('axios-retry').default;
  const rp = JSON.parse(process.env.RETRY);
  const client = axios.create({ headers: { 'content-type': 'application/json' } });
  client.interceptors.response.use((res) => {
    if (res.status === 200 && res.data && res.data.status === 'pending') {
      throw new axios.AxiosError('result not ready', 'ERR_PENDING', res.config, res.request, res);
    }
    return res;
  });
  const pending = (err) => err.code === 'ERR_PENDING';
  // The retries of every call (call id → list), for the truth: each
  // with the answer it followed.
  const retries = new Map();
  axiosRetry(client, {
    retries: rp.retries,
    retryCondition: (err) => pending(err) || axiosRetry.isNetworkOrIdempotentRequestError(err),
    retryDelay: (n, err) => {
      const call = err.config.headers['x-call-id'];
      if (!retries.has(call)) retries.set(call, []);
      retries.get(call).push({ retry: n, pending: pending(err), status: err.response?.status });
      return rp.delayMS;
    },
  });
  server = frontServer(records, () => ({}), async (rec, get, id) => {
    try {
      const headers = { 'x-call-id': rec.call };
      if (get) await client.get(`${process.env.STOCK_URL}/stock/sku-${id}`, { headers });
      else await client.post(`${process.env.STOCK_URL}/reservations/sku-${id}`, { qty: 1 }, { headers });
    } finally {
      rec.retries = retries.get(rec.call) || [];
    }
  }, (err) => (pending(err) ? 503 : err.response?.status));
} else {
  throw new Error(`unknown role ${role}`);
}

serve(server, provider, records);
