'use strict';
// One instrumented service of the cockatiel scenario, run as a child
// process of main.js (one process per service, so that each has its own
// TracerProvider and service.name): `node service.js front|stock|ledger`.
//
// The OpenTelemetry SDK is set up before node:http is loaded, as `node
// --require` would: instrumentation-http makes the SERVER spans and the
// CLIENT span of every request front sends with http.get (one per attempt,
// each a child of front's SERVER span; an aborted one ends with an error).

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { answer, faultScripts, instrument, now, route, serve } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation()]);

const http = require('node:http');

const records = [];
let server;

if (role === 'stock' || role === 'ledger') {
  // GET /stock/:sku and GET /ledger/:id answer from a fault script per
  // key, one entry per request: "503"; "slow" answers 200 after SLOW_MS
  // (the work is not cancelled when the caller gives up, like a blocking
  // query); past the end of the script 200 at once.
  const nextStep = faultScripts('ok');
  const path = role === 'stock' ? /^\/stock\/([^/?]+)$/ : /^\/ledger\/([^/?]+)$/;
  const slowMS = Number(process.env.SLOW_MS);
  server = http.createServer((req, res) => {
    const m = path.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    route(role === 'stock' ? '/stock/:sku' : '/ledger/:id');
    const step = nextStep(m[1]);
    records.push({ call: String(req.headers['x-call-id'] || ''), at: now(), step });
    const reply = () => res.writeHead(step === '503' ? 503 : 200, { 'content-type': 'text/plain' }).end(step === '503' ? '' : 'ok');
    if (step === 'slow') setTimeout(reply, slowMS); else reply();
  });
} else if (role === 'front') {
  // GET /quotes/:id looks sku-<id> up in stock through STOCK_POLICY,
  // cockatiel's retry (handleAll, ExponentialBackoff with the generator
  // named) around an aggressive per-try timeout, which
  // aborts the request. GET /balances/:id reads the ledger through a
  // circuit breaker (ConsecutiveBreaker: it opens after that many failures
  // in a row, and lets one probe through halfOpenAfter ms later), no retry:
  // while it is open front answers 503 at once, without a request. front
  // answers 200, or 503 when it gives up.
  const c = require('cockatiel');
  const sp = JSON.parse(process.env.STOCK_POLICY);
  const bp = JSON.parse(process.env.LEDGER_BREAKER);
  // No generator named: ExponentialBackoff() as it comes (its defaults are
  // the initialDelay, exponent and maxDelay in sp); no timeout: the retry
  // alone.
  const retry = c.retry(c.handleAll, {
    maxAttempts: sp.maxAttempts,
    backoff: sp.generator ? new c.ExponentialBackoff({ generator: c[sp.generator], initialDelay: sp.initialDelay, exponent: sp.exponent, maxDelay: sp.maxDelay }) : new c.ExponentialBackoff(),
  });
  const stockPolicy = sp.timeoutMS ? c.wrap(retry, c.timeout(sp.timeoutMS, c.TimeoutStrategy.Aggressive)) : retry;
  const breaker = c.circuitBreaker(c.handleAll, { halfOpenAfter: bp.halfOpenAfter, breaker: new c.ConsecutiveBreaker(bp.consecutive) });
  // The delay cockatiel chose for every retry, for the truth; calls run one
  // at a time per call id (the retry policy's listener sees them all).
  let current = null;
  retry.onRetry((r) => { if (current) current.delays.push({ delay: r.delay }); });
  const request = (url, signal, callID) => new Promise((resolve, reject) => {
    http.get(url, { signal, headers: { 'x-call-id': callID } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode >= 500 ? reject(new Error(`answered ${res.statusCode}`)) : resolve(res.statusCode)));
    }).on('error', reject);
  });
  let seq = 0;
  server = http.createServer(async (req, res) => {
    const quote = /^\/quotes\/([^/?]+)$/.exec(req.url);
    const balance = /^\/balances\/([^/?]+)$/.exec(req.url);
    if (!quote && !balance) { res.writeHead(404).end(); return; }
    route(quote ? '/quotes/:id' : '/balances/:id');
    const id = (quote || balance)[1];
    const rec = { call: `${id}#${++seq}`, route: quote ? 'stock' : 'ledger', start: now(), delays: [] };
    records.push(rec);
    let status = 200;
    try {
      if (quote) {
        current = rec;
        await stockPolicy.execute(({ signal }) => request(`${process.env.STOCK_URL}/stock/sku-${id}`, signal, rec.call));
      } else {
        await breaker.execute(() => request(`${process.env.LEDGER_URL}/ledger/acct-${id}`, undefined, rec.call));
      }
    } catch (err) {
      rec.error = err.constructor.name;
      status = 503;
    }
    rec.status = status;
    answer(res, status);
  });
} else {
  throw new Error(`unknown role ${role}`);
}

serve(server, provider, records);
