'use strict';
// One instrumented service of the grpc-js-retry and grpc-js-hedge
// scenarios, run as a child process of main.js (one process per service,
// so that each has its own TracerProvider and service.name):
// `node service.js front|stock`.
//
// The OpenTelemetry SDK is set up before http and @grpc/grpc-js are loaded,
// as `node --require` would: instrumentation-http makes front's SERVER
// spans, instrumentation-grpc the gRPC CLIENT span of each call (one per
// call: grpc-js retries and hedges below the client interceptors it wraps)
// and stock's SERVER span of each attempt. Spans leave through the
// OTLP/HTTP protobuf exporter to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the Go
// generator's receiver).

const role = process.argv[2];
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { GrpcInstrumentation } = require('@opentelemetry/instrumentation-grpc');
const { answer, faultScripts, instrument, now, onStop, route } = require('../common/service');

// A replica of stock (grpc-js-hedge) names itself by service.instance.id.
const instance = process.env.SERVICE_INSTANCE_ID;
const provider = instrument(role, [new HttpInstrumentation(), new GrpcInstrumentation()],
  instance ? { 'service.instance.id': instance } : {});
const { rng } = require('../common/harness'); // after instrument: it loads node:http

const http = require('node:http');
const grpc = require('@grpc/grpc-js');

// replicaSteps returns a replica's next(): a step per request, "slow" with
// probability slowP, else "unavailable" with probability unavailableP, else
// "ok", one draw of rand per request.
function replicaSteps(rand, slowP, unavailableP) {
  return () => {
    const u = rand();
    if (u < slowP) return 'slow';
    return u < slowP + unavailableP ? 'unavailable' : 'ok';
  };
}

// The Stock service, defined without a .proto: JSON messages.
const json = { serialize: (o) => Buffer.from(JSON.stringify(o)), deserialize: (b) => JSON.parse(b.toString()) };
const stockService = {
  Get: {
    path: '/retryaudit.Stock/Get', requestStream: false, responseStream: false,
    requestSerialize: json.serialize, requestDeserialize: json.deserialize,
    responseSerialize: json.serialize, responseDeserialize: json.deserialize,
  },
};

const records = [];
let stopServer;

function ready(port) { process.send({ type: 'ready', port }); }

if (role === 'stock') {
  // Get answers from a fault script per sku, one entry per attempt:
  // "unavailable" fails it with UNAVAILABLE (which the client's policy
  // retries, or, hedging, treats as non-fatal), "slow" answers after
  // STOCK_SLOW_MS, past the end of the script it answers at once. Like
  // most handlers it does not stop work when its caller cancels (a hedge
  // that lost): it answers anyway, and instrumentation-grpc ends its
  // SERVER span then; the record notes the cancellation it saw, and the
  // grpc-previous-rpc-attempts grpc-js sends with every retry or hedge.
  //
  // A replica (STOCK_REPLICA set, grpc-js-hedge) follows no script: it
  // answers each request it receives slowly with probability
  // STOCK_SLOW_P, else fails it with UNAVAILABLE with probability
  // STOCK_UNAVAILABLE_P, else at once, drawing from its own PRNG seeded
  // with STOCK_SEED, whatever attempt of whichever call the request is.
  const replica = process.env.STOCK_REPLICA;
  const nextStep = replica === undefined ? faultScripts('ok') : replicaSteps(rng(Number(process.env.STOCK_SEED)),
    Number(process.env.STOCK_SLOW_P || 0), Number(process.env.STOCK_UNAVAILABLE_P || 0));
  const slowMS = Number(process.env.STOCK_SLOW_MS || 0);
  const server = new grpc.Server();
  server.addService(stockService, {
    Get(call, cb) {
      const sku = call.request.sku;
      const step = nextStep(sku);
      const prev = call.metadata.get('grpc-previous-rpc-attempts')[0];
      const rec = { call: String(call.metadata.get('x-call-id')[0] || ''), sku, at: now(), step,
        previous_attempts: prev === undefined ? 0 : Number(prev), cancelled: false };
      if (replica !== undefined) rec.replica = Number(replica);
      records.push(rec);
      // grpc-js emits 'cancelled' when the stream closes unanswered: the
      // client cancelled it (or went away) before stock answered.
      call.on('cancelled', () => { if (rec.end === undefined) { rec.cancelled = true; rec.cancelled_at = now(); } });
      const done = (err, value) => { rec.end = now(); cb(err, value); };
      if (step === 'unavailable') done({ code: grpc.status.UNAVAILABLE, details: 'stock shard unavailable' });
      else if (step === 'slow') setTimeout(() => done(null, { sku, available: 7 }), slowMS);
      else done(null, { sku, available: 7 });
    },
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    ready(port);
  });
  stopServer = () => new Promise((r) => server.tryShutdown(() => r()));
} else if (role === 'front') {
  // GET /items/:id asks stock for sku-<id> through a grpc-js client whose
  // service config carries the retry policy (SERVICE_CONFIG).
  const Client = grpc.makeGenericClientConstructor(stockService, 'Stock');
  // STOCK_ADDR is one address, or (grpc-js-hedge) an ipv4: target listing
  // the replicas, which grpc-js's static IP resolver hands to the load
  // balancer the service config names.
  const client = new Client(process.env.STOCK_ADDR, grpc.credentials.createInsecure(),
    { 'grpc.service_config': process.env.SERVICE_CONFIG });
  let seq = 0;
  const server = http.createServer((req, res) => {
    const m = /^\/items\/([^/?]+)$/.exec(req.url);
    if (!m) { res.writeHead(404).end(); return; }
    route('/items/:id');
    const rec = { call: `${m[1]}#${++seq}`, start: now() };
    records.push(rec);
    const meta = new grpc.Metadata();
    meta.set('x-call-id', rec.call);
    client.Get({ sku: `sku-${m[1]}` }, meta, (err) => {
      rec.code = err ? err.code : 0;
      const status = err ? (err.code === grpc.status.UNAVAILABLE ? 503 : 502) : 200;
      res.on('finish', () => { rec.end = now(); });
      answer(res, status);
    });
  });
  // Ready once the channel is, and (round_robin, which connects to every
  // address at once but picks only among those connected) 200 ms later, by
  // when every replica on this host is connected.
  const connected = new Promise((resolve, reject) => client.waitForReady(Date.now() + 5000, (err) => (err ? reject(err) : resolve())))
    .then(() => new Promise((r) => setTimeout(r, process.env.STOCK_ADDR.startsWith('ipv4:') ? 200 : 0)));
  server.listen(0, '127.0.0.1', () => connected.then(() => ready(server.address().port), (err) => { console.error(err); process.exit(1); }));
  stopServer = () => { client.close(); return new Promise((r) => server.close(() => r())); };
} else {
  throw new Error(`unknown role ${role}`);
}

onStop(provider, records, () => stopServer());
