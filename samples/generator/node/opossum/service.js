'use strict';
// One instrumented service of the opossum scenario, run as a child process
// of main.js (one process per service, so that each has its own
// TracerProvider and service.name): `node service.js front|ledger`.
//
// The OpenTelemetry SDK is set up before node:http is loaded, as `node
// --require` would: instrumentation-http makes the SERVER spans and the
// CLIENT span of every request front sends with http.get (a child of
// front's SERVER span). A call the breaker rejects sends no request: no
// CLIENT span, front's SERVER span answers 503 at once.

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { answer, faultScripts, instrument, now, route, serve } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation()]);

const http = require('node:http');

const records = [];
let server;

if (role === 'ledger') {
  // GET /ledger/:id answers from a fault script per account, one entry
  // per request: "503"; past the end of the script 200. Each answer takes
  // WORK_MS (a read).
  const nextStep = faultScripts('ok');
  const workMS = Number(process.env.WORK_MS);
  server = http.createServer((req, res) => {
    const m = /^\/ledger\/([^/?]+)$/.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    route('/ledger/:id');
    const step = nextStep(m[1]);
    records.push({ call: String(req.headers['x-call-id'] || ''), at: now(), step });
    setTimeout(() => res.writeHead(step === '503' ? 503 : 200, { 'content-type': 'text/plain' }).end(step === '503' ? '' : 'ok'), workMS);
  });
} else if (role === 'front') {
  // GET /balances/:id reads acct-<id> from the ledger through an opossum
  // CircuitBreaker around a plain http.get (no retry), with the options in
  // LEDGER_BREAKER: it opens when, over its rolling window, more than
  // errorThresholdPercentage of the calls fired failed (once at least
  // volumeThreshold were fired; rejected calls count as fired), stays open
  // resetTimeout ms, then lets one probe through (half-open): a success
  // closes it, a failure opens it again. While open it rejects calls at
  // once (EOPENBREAKER) and front answers 503 without a request.
  const CircuitBreaker = require('opossum');
  const opts = JSON.parse(process.env.LEDGER_BREAKER);
  const request = (url, callID) => new Promise((resolve, reject) => {
    http.get(url, { headers: { 'x-call-id': callID } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode >= 500 ? reject(new Error(`answered ${res.statusCode}`)) : resolve(res.statusCode)));
    }).on('error', reject);
  });
  const breaker = new CircuitBreaker(request, opts);
  // The breaker's transitions go into the records too, for the truth.
  for (const ev of ['open', 'halfOpen', 'close']) breaker.on(ev, () => records.push({ event: ev, at: now() }));
  let seq = 0;
  server = http.createServer(async (req, res) => {
    const m = /^\/balances\/([^/?]+)$/.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    route('/balances/:id');
    const rec = { call: `${m[1]}#${++seq}`, start: now() };
    records.push(rec);
    let status = 200;
    try {
      await breaker.fire(`${process.env.LEDGER_URL}/ledger/acct-${m[1]}`, rec.call);
    } catch (err) {
      rec.error = err.code || err.message;
      status = 503;
    }
    rec.status = status;
    answer(res, status);
  });
} else {
  throw new Error(`unknown role ${role}`);
}

serve(server, provider, records);
