'use strict';
// Scenario axios-retry (issue 11 items 1 and 2): axios with axios-retry 4,
// its exponentialDelay and its default retryCondition. exponentialDelay
// waits 2^n·100 ms before retry n (n from 1: 200, 400, 800 ms) — or
// what a Retry-After names, if longer — plus a random 0–20% of that: a
// one-sided proportional jitter, [d, 1.2·d), about its centre 1.1·d
// ±1/11. The default retryCondition (isNetworkOrIdempotentRequestError)
// retries network errors and 429/5xx answers to idempotent methods only:
// POST is never retried.
//
//   driver ─► front ─► stock
//     GET /quotes/:id    GET /stock/:sku           (3 retries: 4 attempts)
//     POST /orders/:id   POST /reservations/:sku   (not retried)
//
// Root requests arrive open loop, PACE_MS apart, so the waits overlap.
// front's CLIENT spans record the Retry-After response header. Run by the
// Go generator (`go run . -out .. -node axios-retry`), which receives the
// spans over OTLP/HTTP and writes the trace files; this program writes
// truth.json's content to $TRUTH_OUT from axios-retry's configuration, the
// delays its exponentialDelay returned for every retry and the requests
// stock received. The driver is not instrumented: front's SERVER span is
// the root.

const fs = require('node:fs');
const { runScripted } = require('../common/harness');
const { median, round1, stockPaths, unretriedPost } = require('../common/calls');

const SEED = 27;
const PACE_MS = 30; // between root requests
// axios-retry 4.5 (dist/cjs/index.js): exponentialDelay(retryNumber,
// error, delayFactor = 100) = max(2^retryNumber·delayFactor, Retry-After)
// · (1 + 0.2·U[0,1)); retries 3.
const RETRY = { retries: 3, delayFactorMS: 100, multiplier: 2, jitterShare: 0.2 };
// Cases: the method, and a script for the request's sku, each entry one
// request stock receives. "429" answers with Retry-After: 1, which
// exponentialDelay waits (and jitters) instead of its 200 or 400 ms.
const CASES = [
  { count: 8, method: 'GET', script: [] },
  { count: 12, method: 'GET', script: ['503'] },
  { count: 9, method: 'GET', script: ['503', '503'] },
  { count: 8, method: 'GET', script: ['503', '503', '503'] },
  { count: 3, method: 'GET', script: ['503', '503', '503', '503'] }, // every attempt fails: the call gives up
  { count: 3, method: 'GET', script: ['429'] },
  { count: 2, method: 'GET', script: ['400'] },
  { count: 4, method: 'POST', script: [] },
  { count: 3, method: 'POST', script: ['503'] }, // the default retryCondition retries no POST
];

async function main() {
  const { fronts, stocks, answers } = await runScripted({
    cases: CASES, seed: SEED, paceMs: PACE_MS, idBase: 7001,
    frontEnv: (port) => ({ STOCK_URL: `http://127.0.0.1:${port}`, RETRY: JSON.stringify({ retries: RETRY.retries }) }),
  });
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, answers)));
}


function buildTruth(fronts, stocks, answers) {
  const problems = [];
  const byCall = new Map(fronts.map((r) => [r.call, []]));
  for (const a of stocks) byCall.get(a.call).push(a);
  const maxAttempts = RETRY.retries + 1;
  const edge = () => ({ calls: 0, attempts: 0, exhausted: 0, most: 0, statuses: new Set() });
  const edges = { GET: edge(), POST: edge() };
  const waits = Array(maxAttempts).fill(0);
  let retryAfterWaits = 0;
  const late = [];
  for (const rec of fronts) {
    const as = byCall.get(rec.call).sort((x, y) => x.at - y.at);
    const e = edges[rec.method];
    e.calls++;
    e.attempts += as.length;
    e.most = Math.max(e.most, as.length);
    for (const a of as) if (a.step !== 'ok') e.statuses.add(Number(a.step));
    const limit = rec.method === 'GET' ? maxAttempts : 1;
    const last = as.at(-1).step;
    if (as.length === limit && (last === '503' || last === '429')) e.exhausted++;
    if (rec.delays.length !== as.length - 1) problems.push(`${rec.call}: ${as.length} attempts, ${rec.delays.length} retries published`);
    for (const [i, d] of rec.delays.entries()) {
      // The wait exponentialDelay returned must lie in [d, 1.2·d) of its
      // schedule (or of Retry-After's second).
      const nominal = d.retryAfter ? Math.max(1000, RETRY.delayFactorMS * RETRY.multiplier ** d.retry) : RETRY.delayFactorMS * RETRY.multiplier ** d.retry;
      if (d.retry !== i + 1 || d.delay < nominal || d.delay >= nominal * (1 + RETRY.jitterShare)) problems.push(`${rec.call}: retry ${d.retry} waited ${d.delay} ms`);
      if (d.retryAfter) {
        retryAfterWaits++;
        continue;
      }
      waits[i + 1]++;
      // How much later than the delay exponentialDelay chose stock saw
      // the attempt, less the try before it (a 503 answered at once).
      late.push(as[i + 1].at - as[i].at - d.delay);
    }
  }
  const g = edges.GET, p = edges.POST;
  if (stocks.length !== g.attempts + p.attempts) problems.push(`stock saw ${stocks.length} requests, front's calls ${g.attempts + p.attempts}`);
  if (g.exhausted === 0 || g.most !== maxAttempts) problems.push(`GET: most attempts ${g.most}, exhausted ${g.exhausted}`);
  if (p.most !== 1 || p.exhausted === 0) problems.push(`POST: most attempts ${p.most}, failed unretried ${p.exhausted}`);
  if (retryAfterWaits === 0 || waits[1] < 12 || waits[2] < 8 || waits[3] < 8) problems.push(`waits ${JSON.stringify(waits)}, Retry-After waits ${retryAfterWaits}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const retried = [...g.statuses].filter((s) => s === 429 || s >= 500).sort();
  const base = { caller: 'front', callee: 'stock', per_try_timeout_ms: null, idempotency_key: false, retry_after_captured: true, retries_after_caller_gave_up: 0 };
  const first = RETRY.delayFactorMS * RETRY.multiplier;
  return {
    scenario: 'axios-retry',
    description: `Node: front calls stock through axios with axios-retry 4.5 (retries ${RETRY.retries}, retryDelay its exponentialDelay, the default retryCondition isNetworkOrIdempotentRequestError: a network error, or a 429 or 5xx answer to GET, HEAD, OPTIONS, PUT or DELETE; never a POST, never a timeout; axios's timeout unset, so shouldResetTimeout plays no part). Before retry n exponentialDelay waits max(2^n·${RETRY.delayFactorMS} ms, Retry-After) · (1 + 0.2·U[0,1)): ${first}, ${2 * first}, ${4 * first} ms plus up to 20% of it — the centre 1.1× that, ±1/11 — or, after a 429 with Retry-After: 1, 1000 ms jittered alike (the header is on the CLIENT spans). GET /stock/:sku is retried on 429 and 503; POST /reservations/:sku never. Root requests arrive open loop, ${PACE_MS} ms apart.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      ...base, operation: '/stock/:sku', method: 'GET', library: 'axios-retry@4 (exponentialDelay, default retryCondition)',
      retries: true, max_attempts: maxAttempts, exhausted_in_traces: g.exhausted > 0,
      // The schedule as inference reads a proportional jitter: its
      // centre, 1.1·2^n·100 ms, and the half-width over the centre.
      backoff: { kind: 'exponential', base_ms: round1(first * (1 + RETRY.jitterShare / 2)), multiplier: RETRY.multiplier, cap_ms: null, jitter: 'proportional', jitter_fraction: Math.round((RETRY.jitterShare / (2 + RETRY.jitterShare)) * 1e4) / 1e4 },
      retried_status: retried, not_retried_status: [...g.statuses].filter((s) => !retried.includes(s)).sort(),
      honours_retry_after: true, retry_after_waits: retryAfterWaits,
      attempts: g.attempts, calls: g.calls,
      waits_by_attempt_index: waits,
      wait_late_median_ms: round1(median(late)),
    }, unretriedPost(base, p)],
    paths: stockPaths(maxAttempts, g, 1, p),
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
