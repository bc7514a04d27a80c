'use strict';
// Scenario axios-retry-pending (issue 11 items 7 and 9): axios with
// axios-retry 4 that also retries on the result: a response interceptor
// turns a 200 whose body says {"status":"pending"} into an error, and the
// retryCondition retries it beside the default's network errors and
// 429/5xx answers to idempotent methods, RETRY.delayMS apart (a constant
// retryDelay, no jitter), RETRY.retries retries.
//
//   driver ─► front ─► stock
//     GET /quotes/:id    GET /stock/:sku           (3 retries: 4 attempts)
//     POST /orders/:id   POST /reservations/:sku   (not retried)
//
// Each attempt is its own CLIENT span (instrumentation-http) under front's
// SERVER span: a retry after a 200 is a sibling span for the same URL sent
// once the one before had ended. Root requests arrive open loop, PACE_MS
// apart. Run by the Go generator (`go run . -out .. -node
// axios-retry-pending`), which receives the spans over OTLP/HTTP and
// writes the trace files; this program writes truth.json's content to
// $TRUTH_OUT from the retries front's axios-retry made and the requests
// stock received.

const fs = require('node:fs');
const { runScripted } = require('../common/harness');
const { callStats, splitStatuses, stockPaths, unretriedPost } = require('../common/calls');

const SEED = 43;
const PACE_MS = 30; // between root requests
const RETRY = { retries: 3, delayMS: 20 };
// Cases: the method, and a script for the request's sku, each entry one
// request stock receives ("pending": a 200 whose body says so).
const CASES = [
  { count: 10, method: 'GET', script: [] },
  { count: 10, method: 'GET', script: ['pending'] },
  { count: 7, method: 'GET', script: ['pending', 'pending'] },
  { count: 5, method: 'GET', script: ['pending', 'pending', 'pending'] },
  { count: 2, method: 'GET', script: ['pending', 'pending', 'pending', 'pending'] }, // runs out on "pending"
  { count: 4, method: 'GET', script: ['503', 'pending'] },
  { count: 2, method: 'GET', script: ['503', '503', '503', '503'] }, // runs out on 503
  { count: 4, method: 'POST', script: [] },
  { count: 2, method: 'POST', script: ['503'] }, // no POST is retried
];

async function main() {
  const { fronts, stocks, answers } = await runScripted({
    cases: CASES, seed: SEED, paceMs: PACE_MS, idBase: 9001,
    frontEnv: (port) => ({ STOCK_URL: `http://127.0.0.1:${port}`, RETRY: JSON.stringify(RETRY) }),
  });
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, answers)));
}

function buildTruth(fronts, stocks, answers) {
  const maxAttempts = RETRY.retries + 1;
  const retryable = (s) => s === 429 || s >= 500;
  const { edges, calls, problems } = callStats(fronts, stocks, (m) => (m === 'GET' ? maxAttempts : 1), retryable);
  const g = edges.GET, p = edges.POST;
  let resultCalls = 0, resultRetries = 0, exhaustedOnResult = 0;
  const waits = Array(maxAttempts).fill(0);
  for (const { rec, attempts } of calls) {
    if (rec.retries.length !== attempts.length - 1) problems.push(`${rec.call}: ${attempts.length} attempts, ${rec.retries.length} retries`);
    let n = 0;
    for (const [i, r] of rec.retries.entries()) {
      waits[i + 1]++;
      // The retry follows the answer stock gave to the attempt before.
      if (r.pending !== (attempts[i].step === 'pending')) problems.push(`${rec.call}: retry ${r.retry} after ${attempts[i].step}, front saw pending ${r.pending}`);
      if (r.pending) n++;
    }
    if (n > 0) {
      resultCalls++;
      resultRetries += n;
    }
    if (rec.method === 'GET' && attempts.length === maxAttempts && attempts.at(-1).step === 'pending') exhaustedOnResult++;
  }
  if (resultCalls === 0 || exhaustedOnResult === 0 || g.exhausted === 0 || g.most !== maxAttempts) {
    problems.push(`GET: ${resultCalls} calls retried on the result, ${exhaustedOnResult} ran out on it, ${g.exhausted} on failures, most attempts ${g.most}`);
  }
  if (waits[1] < 12 || waits[2] < 8) problems.push(`waits ${JSON.stringify(waits)}`);
  if (p.most !== 1) problems.push(`POST: most attempts ${p.most}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const st = splitStatuses(g.statuses, retryable);
  const base = { caller: 'front', callee: 'stock', per_try_timeout_ms: null, idempotency_key: false, retry_after_captured: true, retries_after_caller_gave_up: 0 };
  return {
    scenario: 'axios-retry-pending',
    description: `Node: front calls stock through axios with axios-retry 4.5 (retries ${RETRY.retries}, retryDelay a constant ${RETRY.delayMS} ms) whose retryCondition also retries a 200 whose body says "pending" (a response interceptor turns it into an AxiosError carrying the response), beside the default's network errors and 429/5xx answers to idempotent methods; POST is never retried. Each attempt is its own CLIENT span. Root requests arrive open loop, ${PACE_MS} ms apart.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      ...base, operation: '/stock/:sku', method: 'GET', library: 'axios-retry@4 (retryCondition on the result, constant retryDelay)',
      retries: true, max_attempts: maxAttempts, exhausted_in_traces: g.exhausted > 0,
      backoff: { kind: 'constant', base_ms: RETRY.delayMS, multiplier: null, cap_ms: null, jitter: 'none', jitter_fraction: null },
      retried_status: st.retried, not_retried_status: st.notRetried,
      honours_retry_after: false, retry_after_waits: 0,
      attempts: g.attempts, calls: g.calls,
      waits_by_attempt_index: waits,
      retries_on_result: true, result_retried_calls: resultCalls, result_retries: resultRetries, exhausted_on_result: exhaustedOnResult,
    }, unretriedPost(base, p)],
    paths: stockPaths(maxAttempts, g, 1, p),
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
