'use strict';
// Scenario retry-axios (issue 11 items 1 and 3): axios with retry-axios 4,
// its own exponential backoff and its default retry rules, and a 429's
// Retry-After honoured with no span recording the header.
//
// retry-axios 4.0.3 (build/src/index.cjs, onError) waits, before retry c
// (c from 1), ((2^c − 1)/2)·retryDelay for backoffType 'exponential' (its
// default): with retryDelay 200 ms, 100, 300, 700, 1500 ms — not
// base·2^(c−1) (100, 200, 400, 800): each wait is twice the one before
// plus retryDelay/2, a schedule no single multiplier fits (×3, ×2.33,
// ×2.14). No jitter (its jitter option defaults to 'none'). A Retry-After
// (seconds or a date) between 0 and maxRetryAfter (5 min by default) is
// waited instead, unjittered; the default statusCodesToRetry are 100–199,
// 429 and 500–599, and httpMethodsToRetry GET, HEAD, PUT, OPTIONS,
// DELETE: a POST is never retried.
//
//   driver ─► front ─► stock
//     GET /quotes/:id    GET /stock/:sku           (retry 4: 5 attempts)
//     POST /orders/:id   POST /reservations/:sku   (not retried)
//
// Root requests arrive open loop, PACE_MS apart. Run by the Go generator
// (`go run . -out .. -node retry-axios`), which receives the spans over
// OTLP/HTTP and writes the trace files; this program writes truth.json's
// content to $TRUTH_OUT from retry-axios's configuration, the retries its
// onRetryAttempt hook saw and the requests stock received. The driver is
// not instrumented: front's SERVER span is the root.

const fs = require('node:fs');
const { runScripted } = require('../common/harness');
const { callStats, median, round1, splitStatuses, stockPaths, unretriedPost } = require('../common/calls');

const SEED = 41;
const PACE_MS = 40; // between root requests
// retry-axios's raxConfig: 4 retries, exponential from retryDelay 200 ms.
const RAX = { retry: 4, retryDelay: 200, backoffType: 'exponential' };
// raxDelay is the wait retry-axios sets before retry c when no
// Retry-After directs it.
const raxDelay = (c) => ((2 ** c - 1) / 2) * RAX.retryDelay;
// retryable is retry-axios's default statusCodesToRetry.
const retryable = (s) => (s >= 100 && s <= 199) || s === 429 || (s >= 500 && s <= 599);
// Cases: the method, and a script for the request's sku, each entry one
// request stock receives. "429" answers with Retry-After: 1, whose 1 s
// wait stands where retry-axios's schedule waits 100 ms (first retry) or
// 300 ms (second).
const CASES = [
  { count: 7, method: 'GET', script: [] },
  { count: 7, method: 'GET', script: ['503'] },
  { count: 5, method: 'GET', script: ['503', '503'] },
  { count: 4, method: 'GET', script: ['503', '503', '503'] },
  { count: 4, method: 'GET', script: ['503', '503', '503', '503'] },
  { count: 3, method: 'GET', script: ['503', '503', '503', '503', '503'] }, // every attempt fails: the call gives up
  { count: 3, method: 'GET', script: ['429'] },
  { count: 2, method: 'GET', script: ['503', '429'] },
  { count: 2, method: 'GET', script: ['400'] },
  { count: 4, method: 'POST', script: [] },
  { count: 3, method: 'POST', script: ['503'] }, // retry-axios retries no POST
];

async function main() {
  const { fronts, stocks, answers } = await runScripted({
    cases: CASES, seed: SEED, paceMs: PACE_MS, idBase: 8001,
    frontEnv: (port) => ({ STOCK_URL: `http://127.0.0.1:${port}`, RAX: JSON.stringify(RAX) }),
  });
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, answers)));
}

function buildTruth(fronts, stocks, answers) {
  const maxAttempts = RAX.retry + 1;
  const { edges, calls, problems } = callStats(fronts, stocks, (m) => (m === 'GET' ? maxAttempts : 1), retryable);
  const waits = Array(maxAttempts).fill(0);
  let retryAfterWaits = 0;
  const late = [];
  for (const { rec, attempts: as } of calls) {
    if (rec.retries.length !== as.length - 1) problems.push(`${rec.call}: ${as.length} attempts, ${rec.retries.length} retries seen by onRetryAttempt`);
    for (const [i, r] of rec.retries.entries()) {
      const gap = as[i + 1].at - as[i].at;
      const directed = r.retryAfter !== null;
      const delay = directed ? Number(r.retryAfter) * 1000 : raxDelay(r.retry);
      if (r.retry !== i + 1 || r.status !== Number(as[i].step) || gap < delay) problems.push(`${rec.call}: retry ${r.retry} after ${r.status} came ${gap.toFixed(1)} ms after the try before, retry-axios's wait ${delay} ms`);
      if (directed) {
        retryAfterWaits++;
        continue;
      }
      waits[i + 1]++;
      late.push(gap - delay);
    }
  }
  const g = edges.GET, p = edges.POST;
  if (g.exhausted === 0 || g.most !== maxAttempts) problems.push(`GET: most attempts ${g.most}, exhausted ${g.exhausted}`);
  if (p.most !== 1 || p.exhausted === 0) problems.push(`POST: most attempts ${p.most}, failed unretried ${p.exhausted}`);
  if (retryAfterWaits === 0 || waits[1] < 8 || waits[2] < 4 || waits[3] < 4 || waits[4] < 3) problems.push(`waits ${JSON.stringify(waits)}, Retry-After waits ${retryAfterWaits}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const gs = splitStatuses(g.statuses, retryable);
  const base = { caller: 'front', callee: 'stock', per_try_timeout_ms: null, idempotency_key: false, retry_after_captured: false, retries_after_caller_gave_up: 0 };
  return {
    scenario: 'retry-axios',
    description: `Node: front calls stock through axios with retry-axios 4.0.3 (raxConfig ${JSON.stringify(RAX)}, the rest its defaults), traced by instrumentation-http (a CLIENT span per try). Before retry c retry-axios waits ((2^c − 1)/2)·${RAX.retryDelay} ms: ${[1, 2, 3, 4].map(raxDelay).join(', ')} ms, no jitter — twice the wait before plus ${RAX.retryDelay / 2} ms, not a geometric series — or the Retry-After a 429 names (1 s, unjittered; no span records the header). GET /stock/:sku is retried on 100–199, 429 and 500–599; POST /reservations/:sku never (httpMethodsToRetry leaves POST out). Root requests arrive open loop, ${PACE_MS} ms apart.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      ...base, operation: '/stock/:sku', method: 'GET', library: `retry-axios@4.0.3 (${JSON.stringify(RAX)})`,
      retries: true, max_attempts: maxAttempts, exhausted_in_traces: g.exhausted > 0,
      // ((2^c − 1)/2)·d = d·2^(c−1) − d/2 = offset + (base − offset)·2^(c−1)
      // with base d/2 and offset −d/2: ×2 growth from an offset.
      backoff: { kind: 'exponential', base_ms: raxDelay(1), multiplier: 2, offset_ms: -RAX.retryDelay / 2, cap_ms: null, jitter: 'none', jitter_fraction: null },
      retried_status: gs.retried, not_retried_status: gs.notRetried,
      honours_retry_after: true, retry_after_waits: retryAfterWaits,
      attempts: g.attempts, calls: g.calls,
      waits_by_attempt_index: waits,
      wait_late_ms: round1(Math.max(...late)),
      wait_late_median_ms: round1(median(late)),
    }, unretriedPost(base, p)],
    paths: stockPaths(maxAttempts, g, 1, p),
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
