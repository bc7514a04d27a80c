'use strict';
// Scenario nice-grpc-retry (issue 11 items 1 to 3): nice-grpc's client
// with nice-grpc-client-middleware-retry, a gRPC retry above grpc-js: each
// attempt is a grpc-js call of its own, so instrumentation-grpc makes a
// CLIENT span per attempt (unlike grpc-js's service-config retries, below
// the instrumentation). Before retry n+1 the middleware waits
// round(min(retryMaxDelayMs, retryBaseDelayMs·2^n)·(1 + U)/2) ms: equal
// jitter, between half the ceiling and the ceiling. It retries UNKNOWN,
// INTERNAL, UNAVAILABLE and CANCELLED; not RESOURCE_EXHAUSTED, which many
// clients treat as throttling and retry.
//
//   driver ─► front ─► stock
//     GET /items/:id     retryaudit.Stock/Get   (front: nice-grpc, retry
//                                               middleware, 5 attempts,
//                                               50 ms ×2 up to 300 ms, equal jitter)
//
// Root requests arrive open loop, PACE_MS apart. Run by the Go generator
// (`go run . -out .. -node nice-grpc-retry`), which receives the spans over
// OTLP/HTTP and writes the trace files; this program writes truth.json's
// content to $TRUTH_OUT from the middleware's options, the waits it chose
// (its onRetryableError hook) and the attempts stock received. The driver
// is not instrumented: front's SERVER span is the root.

const fs = require('node:fs');
const { rng, shuffle, sleep, start, stop, get } = require('../common/harness');
const { median, round1 } = require('../common/calls');

const SEED = 27;
const PACE_MS = 20; // between root requests
const RETRY = { retry: true, retryMaxAttempts: 4, retryBaseDelayMs: 50, retryMaxDelayMs: 300 };
// The middleware's default retryableStatuses, by the names stock's steps
// fail with (service.js: FAULTS).
const RETRYABLE = ['unavailable', 'internal'];
const CODE_NAMES = { unavailable: 'UNAVAILABLE', internal: 'INTERNAL', not_found: 'NOT_FOUND', resource_exhausted: 'RESOURCE_EXHAUSTED' };
const U = 'unavailable';
// Cases: how many root requests get each fault script, one step per
// attempt stock receives.
const CASES = [
  [6, []], [7, [U]], [6, [U, U]], [4, [U, U, U]],
  [4, [U, U, U, U]],
  [3, [U, U, U, U, U]], // every attempt the policy allows fails: the call gives up
  [2, ['internal']], [2, ['not_found']], [3, ['resource_exhausted']],
];

async function main() {
  const stock = start('stock', {});
  const sport = await stock.ready;
  const front = start('front', { STOCK_ADDR: `127.0.0.1:${sport}`, RETRY_OPTIONS: JSON.stringify(RETRY) });
  const fport = await front.ready;
  const scripts = shuffle(CASES.flatMap(([count, script]) => Array.from({ length: count }, () => script)), rng(SEED));
  const answers = {};
  const sent = [];
  for (const [i, script] of scripts.entries()) {
    const id = String(7001 + i);
    stock.child.send({ type: 'script', sku: `sku-${id}`, script });
    sent.push(get(fport, `/items/${id}`).then((code) => { answers[code] = (answers[code] || 0) + 1; }));
    await sleep(PACE_MS);
  }
  await Promise.all(sent);
  const fronts = await stop(front);
  const stocks = await stop(stock);
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, answers)));
}

function buildTruth(fronts, stocks, answers) {
  const problems = [];
  const maxAttempts = RETRY.retryMaxAttempts + 1;
  const byCall = new Map(fronts.map((r) => [r.call, []]));
  for (const a of stocks) byCall.get(a.call).push(a);
  let attempts = 0, exhausted = 0, most = 0;
  const seen = new Set();
  const waits = Array(maxAttempts).fill(0);
  const late = [];
  for (const rec of fronts) {
    const as = byCall.get(rec.call).sort((x, y) => x.at - y.at);
    attempts += as.length;
    most = Math.max(most, as.length);
    for (const a of as) if (a.step !== 'ok') seen.add(a.step);
    if (as.length === maxAttempts && RETRYABLE.includes(as.at(-1).step)) exhausted++;
    if (rec.retries.length !== as.length - 1) problems.push(`${rec.call}: ${as.length} attempts, ${rec.retries.length} retries published`);
    for (const [i, r] of rec.retries.entries()) {
      // The wait the middleware chose: in [c/2, c] of its ceiling c.
      const ceiling = Math.min(RETRY.retryMaxDelayMs, RETRY.retryBaseDelayMs * 2 ** r.attempt);
      const gap = as[i + 1].at - as[i].at;
      if (r.attempt !== i || r.delay < ceiling / 2 || r.delay > ceiling || gap < r.delay) problems.push(`${rec.call}: retry ${i + 1} waited ${r.delay} ms (ceiling ${ceiling}), stock saw it ${gap.toFixed(1)} ms after the try before`);
      waits[i + 1]++;
      late.push(gap - r.delay);
    }
  }
  if (stocks.length !== attempts) problems.push(`stock saw ${stocks.length} requests, front's calls ${attempts}`);
  if (exhausted === 0 || most !== maxAttempts || waits[4] < 4 || !seen.has('resource_exhausted')) problems.push(`most attempts ${most}, exhausted ${exhausted}, waits ${JSON.stringify(waits)}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const names = (steps) => steps.map((s) => CODE_NAMES[s]).sort();
  return {
    scenario: 'nice-grpc-retry',
    description: `Node: front calls stock's retryaudit.Stock/Get through nice-grpc 2 with nice-grpc-client-middleware-retry 3.1 (retryMaxAttempts ${RETRY.retryMaxAttempts}: ${maxAttempts} attempts; retryBaseDelayMs ${RETRY.retryBaseDelayMs}, retryMaxDelayMs ${RETRY.retryMaxDelayMs}): a grpc-js call per attempt, so a CLIENT span per attempt (instrumentation-grpc); before retry n+1 it waits round(min(${RETRY.retryMaxDelayMs}, ${RETRY.retryBaseDelayMs}·2^n)·(1+U)/2) ms, equal jitter (25–50, 50–100, 100–200, 150–300 ms); it retries UNKNOWN, INTERNAL, UNAVAILABLE, CANCELLED and passes NOT_FOUND and RESOURCE_EXHAUSTED through. Root requests arrive open loop, ${PACE_MS} ms apart. The truth is written from the waits the middleware chose (its onRetryableError hook) and what stock received.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      caller: 'front', callee: 'stock', operation: 'retryaudit.Stock/Get', method: '', library: 'nice-grpc-client-middleware-retry@3',
      retries: true, max_attempts: maxAttempts, exhausted_in_traces: exhausted > 0,
      backoff: { kind: 'exponential', base_ms: RETRY.retryBaseDelayMs, multiplier: 2, cap_ms: RETRY.retryMaxDelayMs, jitter: 'equal', jitter_fraction: null },
      per_try_timeout_ms: null, retried_status: [], not_retried_status: [],
      retried_codes: names([...seen].filter((s) => RETRYABLE.includes(s))), not_retried_codes: names([...seen].filter((s) => !RETRYABLE.includes(s))),
      honours_retry_after: false, idempotency_key: false, retry_after_captured: false, retry_after_waits: 0,
      attempts, calls: fronts.length, retries_after_caller_gave_up: 0,
      waits_by_attempt_index: waits,
      wait_late_median_ms: round1(median(late)),
    }],
    paths: [{ services: ['front', 'stock'], operations: ['/items/:id', 'retryaudit.Stock/Get'], worst_case_amplification: maxAttempts, observed_max_amplification: most }],
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
