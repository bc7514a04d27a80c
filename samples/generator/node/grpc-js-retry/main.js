'use strict';
// Scenario grpc-js-retry (issue 11 item 9): @grpc/grpc-js retries a call by
// its service config's retryPolicy below the client interceptors, so
// instrumentation-grpc makes one CLIENT span per call and the callee one
// SERVER span per attempt: several SERVER spans under one CLIENT span, the
// attempts and the waits between them visible only there.
//
//   driver ─► front ─► stock
//     GET /items/:id     retryaudit.Stock/Get   (front: grpc-js, retryPolicy
//                                               4 attempts on UNAVAILABLE,
//                                               20 ms ×2 up to 200 ms)
//
// SCENARIO grpc-js-hedge runs the same services with a hedgingPolicy
// instead (hedge.js).
//
// Run by the Go generator (`go run . -out .. -node grpc-js-retry`), which
// receives the spans over OTLP/HTTP and writes the trace files; this program
// writes truth.json's content to $TRUTH_OUT from its configuration and the
// attempts stock received. The driver is not instrumented: front's SERVER
// span is the root.

const fs = require('node:fs');
const { rng, shuffle, sleep, start, stop, get } = require('../common/harness');

const SEED = 9;
const POLICY = { maxAttempts: 4, initialBackoff: '0.02s', maxBackoff: '0.2s', backoffMultiplier: 2, retryableStatusCodes: ['UNAVAILABLE'] };
const SERVICE_CONFIG = { methodConfig: [{ name: [{ service: 'retryaudit.Stock' }], retryPolicy: POLICY }] };
const PACE_MS = 20; // between root requests
// Cases: how many times stock fails a request's lookup with UNAVAILABLE.
// With 4 it fails every attempt the policy allows: the call gives up.
const CASES = [[6, 0], [6, 1], [5, 2], [4, 3], [3, 4]];

// retry is this scenario as main runs it: the client's service config,
// stock's environment, each root request's fault script and the truth.
const retry = {
  seed: SEED, serviceConfig: SERVICE_CONFIG, stockEnv: {},
  scripts: CASES.flatMap(([count, k]) => Array.from({ length: count }, () => Array.from({ length: k }, () => 'unavailable'))),
  buildTruth,
};

// main runs scenario sc. With fault scripts (sc.scripts) it sends one root
// request per script, in an order shuffled by its seed, each sending stock
// its script first and waiting for the answer and PACE_MS more. With
// replicas (sc.replicas, each a stock process's environment) front's
// channel balances over them, and sc.requests root requests leave open
// loop, sc.gapMS(rand) apart, drawn from the seed's PRNG.
async function main(sc) {
  const stocks = (sc.replicas || [sc.stockEnv]).map((env) => start('stock', env));
  const ports = await Promise.all(stocks.map((s) => s.ready));
  const addr = sc.replicas ? `ipv4:${ports.map((p) => `127.0.0.1:${p}`).join(',')}` : `127.0.0.1:${ports[0]}`;
  const front = start('front', { STOCK_ADDR: addr, SERVICE_CONFIG: JSON.stringify(sc.serviceConfig) });
  const fport = await front.ready;
  const rand = rng(sc.seed);
  const answers = {};
  const count = (code) => { answers[code] = (answers[code] || 0) + 1; };
  if (sc.scripts) {
    for (const [i, script] of shuffle(sc.scripts.slice(), rand).entries()) {
      const id = String(3001 + i);
      stocks[0].child.send({ type: 'script', sku: `sku-${id}`, script });
      count(await get(fport, `/items/${id}`));
      await sleep(PACE_MS);
    }
  } else {
    const sent = [];
    for (let i = 0; i < sc.requests; i++) {
      sent.push(get(fport, `/items/${3001 + i}`).then(count));
      await sleep(sc.gapMS(rand));
    }
    await Promise.all(sent);
  }
  // Attempts front stopped waiting for (hedges that lost) may still be at
  // work in stock: their SERVER spans end when they answer.
  await sleep(sc.settleMS || 0);
  const fronts = await stop(front);
  const received = (await Promise.all(stocks.map(stop))).flat();
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(sc.buildTruth(fronts, received, answers)));
}

const sec = (s) => Math.round(Number(s.slice(0, -1)) * 1000);

function buildTruth(fronts, stocks, answers) {
  const problems = [];
  const byCall = new Map(fronts.map((r) => [r.call, []]));
  for (const a of stocks) byCall.get(a.call).push(a);
  let exhausted = 0, most = 0;
  const late = [], lateNominal = [];
  const waits = Array(POLICY.maxAttempts).fill(0);
  for (const as of byCall.values()) {
    as.sort((x, y) => x.at - y.at);
    most = Math.max(most, as.length);
    if (as.length === POLICY.maxAttempts && as.every((a) => a.step === 'unavailable')) exhausted++;
    for (let i = 1; i < as.length; i++) {
      waits[i]++;
      // The policy's wait before attempt i, about which grpc-js jitters
      // it ±20%: how much later the attempt came than the longest wait it
      // allows, and than the schedule itself.
      const nominal = Math.min(sec(POLICY.initialBackoff) * POLICY.backoffMultiplier ** (i - 1), sec(POLICY.maxBackoff));
      late.push(as[i].at - as[i - 1].at - 1.2 * nominal);
      lateNominal.push(as[i].at - as[i - 1].at - nominal);
    }
  }
  if (most !== POLICY.maxAttempts || exhausted === 0) problems.push(`most attempts in one call ${most}, exhausted ${exhausted}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  return {
    scenario: 'grpc-js-retry',
    description: 'Node: front calls stock over gRPC with @grpc/grpc-js 1.14, whose service-config retryPolicy (4 attempts on UNAVAILABLE, 20 ms ×2 up to 200 ms, each wait ×U[0.8, 1.2)) retries below instrumentation-grpc: one CLIENT span per call, one stock SERVER span per attempt under it.',
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      caller: 'front', callee: 'stock', operation: 'retryaudit.Stock/Get', method: '', library: '@grpc/grpc-js (service config retryPolicy)',
      retries: true, max_attempts: POLICY.maxAttempts, exhausted_in_traces: exhausted > 0,
      // grpc-js 1.14 (retrying-call.js getNextRetryBackoffMs) multiplies
      // min(initialBackoff·multiplier^n, maxBackoff) by 0.8 + 0.4·U[0,1).
      backoff: { kind: 'exponential', base_ms: sec(POLICY.initialBackoff), multiplier: POLICY.backoffMultiplier, cap_ms: sec(POLICY.maxBackoff), jitter: 'proportional', jitter_fraction: 0.2 },
      per_try_timeout_ms: null, retried_status: [], not_retried_status: [],
      // The gRPC codes front received, split by whether the policy retries them.
      retried_codes: stocks.some((a) => a.step === 'unavailable') ? ['UNAVAILABLE'] : [], not_retried_codes: [],
      honours_retry_after: false, idempotency_key: false,
      retry_after_captured: true, retry_after_waits: 0,
      attempts: stocks.length, below_instrumentation: true,
      calls: fronts.length, retries_after_caller_gave_up: 0,
      waits_by_attempt_index: waits,
      wait_late_ms: Math.round(Math.max(...late) * 10) / 10,
      wait_late_median_ms: Math.round(lateNominal.sort((x, y) => x - y)[lateNominal.length >> 1] * 10) / 10,
    }],
    paths: [{ services: ['front', 'stock'], operations: ['/items/:id', 'retryaudit.Stock/Get'], worst_case_amplification: POLICY.maxAttempts,
      observed_max_amplification: most }],
  };
}

main(process.env.SCENARIO === 'grpc-js-hedge' ? require('./hedge') : retry).catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
