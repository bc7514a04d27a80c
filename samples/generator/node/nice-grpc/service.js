'use strict';
// One instrumented service of the nice-grpc-retry scenario, run as a
// child process of main.js (one process per service, so that each has its
// own TracerProvider and service.name): `node service.js front|stock`.
//
// The OpenTelemetry SDK is set up before http and @grpc/grpc-js are loaded,
// as `node --require` would: instrumentation-http makes front's SERVER
// spans, instrumentation-grpc a gRPC CLIENT span for every grpc-js call
// and stock's SERVER span of each. nice-grpc's retry middleware retries
// above grpc-js, a new grpc-js call per attempt: a CLIENT span per
// attempt, each a child of front's SERVER span.

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { GrpcInstrumentation } = require('@opentelemetry/instrumentation-grpc');
const { answer, faultScripts, instrument, now, onStop, route } = require('../common/service');

const provider = instrument(role, [new HttpInstrumentation(), new GrpcInstrumentation()]);

const http = require('node:http');
const grpc = require('@grpc/grpc-js');

// The Stock service, defined without a .proto (grpc-js's own definition
// shape, which nice-grpc also takes): JSON messages.
const json = { serialize: (o) => Buffer.from(JSON.stringify(o)), deserialize: (b) => JSON.parse(b.toString()) };
const stockService = {
  Get: {
    path: '/retryaudit.Stock/Get', requestStream: false, responseStream: false,
    requestSerialize: json.serialize, requestDeserialize: json.deserialize,
    responseSerialize: json.serialize, responseDeserialize: json.deserialize,
  },
};

// The status codes a fault script's step fails an attempt with.
const FAULTS = { unavailable: grpc.status.UNAVAILABLE, internal: grpc.status.INTERNAL, not_found: grpc.status.NOT_FOUND, resource_exhausted: grpc.status.RESOURCE_EXHAUSTED };

const records = [];
let stopServer;

function ready(port) { process.send({ type: 'ready', port }); }

if (role === 'stock') {
  // Get answers from a fault script per sku, one entry per attempt: a key
  // of FAULTS fails it with that code, past the end of the script it
  // answers at once.
  const nextStep = faultScripts('ok');
  const server = new grpc.Server();
  server.addService(stockService, {
    Get(call, cb) {
      const sku = call.request.sku;
      const step = nextStep(sku);
      records.push({ call: String(call.metadata.get('x-call-id')[0] || ''), sku, at: now(), step });
      if (step === 'ok') cb(null, { sku, available: 7 });
      else cb({ code: FAULTS[step], details: `stock: ${step}` });
    },
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    ready(port);
  });
  stopServer = () => new Promise((r) => server.tryShutdown(() => r()));
} else if (role === 'front') {
  // GET /items/:id asks stock for sku-<id> through a nice-grpc client with
  // nice-grpc-client-middleware-retry and the call options in
  // RETRY_OPTIONS (retry: true, as the method carries no idempotency
  // level). The middleware retries UNKNOWN, INTERNAL, UNAVAILABLE and
  // CANCELLED, waiting round(min(max, base·2^n)·(1 + U)/2) ms before retry
  // n+1 (equal jitter); its onRetryableError hook gives the truth each
  // wait it chose. front answers 200, 404 for NOT_FOUND, 429 for
  // RESOURCE_EXHAUSTED, 503 for UNAVAILABLE, 502 otherwise.
  const { createChannel, createClientFactory, Metadata, Status } = require('nice-grpc');
  const { retryMiddleware } = require('nice-grpc-client-middleware-retry');
  const opts = JSON.parse(process.env.RETRY_OPTIONS);
  const channel = createChannel(process.env.STOCK_ADDR);
  const client = createClientFactory().use(retryMiddleware).create(stockService, channel);
  let seq = 0;
  const server = http.createServer(async (req, res) => {
    const m = /^\/items\/([^/?]+)$/.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    route('/items/:id');
    const rec = { call: `${m[1]}#${++seq}`, start: now(), retries: [] };
    records.push(rec);
    let status = 200;
    try {
      await client.Get({ sku: `sku-${m[1]}` }, {
        ...opts,
        metadata: Metadata({ 'x-call-id': rec.call }),
        onRetryableError: (err, attempt, delayMs) => rec.retries.push({ attempt, delay: delayMs, code: err.code }),
      });
      rec.code = 0;
    } catch (err) {
      rec.code = err.code;
      status = { [Status.NOT_FOUND]: 404, [Status.RESOURCE_EXHAUSTED]: 429, [Status.UNAVAILABLE]: 503 }[err.code] || 502;
    }
    res.on('finish', () => { rec.end = now(); });
    answer(res, status);
  });
  server.listen(0, '127.0.0.1', () => ready(server.address().port));
  stopServer = () => { channel.close(); return new Promise((r) => server.close(() => r())); };
} else {
  throw new Error(`unknown role ${role}`);
}

onStop(provider, records, () => stopServer());
