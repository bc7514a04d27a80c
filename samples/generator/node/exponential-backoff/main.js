'use strict';
// Scenario exponential-backoff (issue 11 items 2 and 3): exponential-backoff
// 3.1.3's backOff around plain axios requests, full jitter and a
// timeMultiple of 3.
//
// backOff (dist/backoff.js, delay/) waits, before retry n (n from 1, the
// first try undelayed: delayFirstAttempt false), startingDelay·
// timeMultiple^(n−1) capped at maxDelay, and with jitter 'full' a
// round(U[0,1)·that) of it (jitter/full): here ceilings 40, 120, 360 ms —
// full jitter from a library the samples do not otherwise capture, and
// growth ×3, which must not be read as ×2. numOfAttempts counts every
// try (4). Its retry callback decides what is retried: a GET that failed
// with a 429 or 5xx; never a POST. No Retry-After is read (the 429's
// header is on no span).
//
//   driver ─► front ─► stock
//     GET /quotes/:id    GET /stock/:sku           (4 attempts)
//     POST /orders/:id   POST /reservations/:sku   (not retried)
//
// Root requests arrive open loop, PACE_MS apart. Run by the Go generator
// (`go run . -out .. -node exponential-backoff`), which receives the
// spans over OTLP/HTTP and writes the trace files; this program writes
// truth.json's content to $TRUTH_OUT from backOff's options, the waits
// its full jitter drew for every call and the requests stock received.
// The driver is not instrumented: front's SERVER span is the root.

const fs = require('node:fs');
const { runScripted } = require('../common/harness');
const { callStats, median, round1, splitStatuses, stockPaths, unretriedPost } = require('../common/calls');

const SEED = 53;
const PACE_MS = 25; // between root requests
const OPTS = { numOfAttempts: 4, startingDelay: 40, timeMultiple: 3, jitter: 'full' };
const ceilingOf = (n) => OPTS.startingDelay * OPTS.timeMultiple ** (n - 1);
const retryable = (s) => s === 429 || s >= 500;
// Cases: the method, and a script for the request's sku, each entry one
// request stock receives.
const CASES = [
  { count: 6, method: 'GET', script: [] },
  { count: 12, method: 'GET', script: ['503'] },
  { count: 10, method: 'GET', script: ['503', '503'] },
  { count: 10, method: 'GET', script: ['503', '503', '503'] },
  { count: 3, method: 'GET', script: ['503', '503', '503', '503'] }, // every attempt fails: the call gives up
  { count: 3, method: 'GET', script: ['429'] },
  { count: 2, method: 'GET', script: ['400'] },
  { count: 3, method: 'POST', script: [] },
  { count: 3, method: 'POST', script: ['503'] }, // the retry callback retries no POST
];

async function main() {
  const { fronts, stocks, answers } = await runScripted({
    cases: CASES, seed: SEED, paceMs: PACE_MS, idBase: 9801,
    frontEnv: (port) => ({ STOCK_URL: `http://127.0.0.1:${port}`, BACKOFF: JSON.stringify(OPTS) }),
  });
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, answers)));
}

function buildTruth(fronts, stocks, answers) {
  const maxAttempts = OPTS.numOfAttempts;
  const { edges, calls, problems } = callStats(fronts, stocks, (m) => (m === 'GET' ? maxAttempts : 1), retryable);
  const waits = Array(maxAttempts).fill(0);
  const late = [];
  for (const { rec, attempts: as } of calls) {
    if (rec.waits.length !== as.length - 1) problems.push(`${rec.call}: ${as.length} attempts, ${rec.waits.length} waits drawn`);
    for (const [i, w] of rec.waits.entries()) {
      const gap = as[i + 1].at - as[i].at;
      if (w.delay !== ceilingOf(i + 1) || w.wait < 0 || w.wait > w.delay || gap < w.wait) problems.push(`${rec.call}: retry ${i + 1} came ${gap.toFixed(1)} ms after the try before, the wait drawn ${w.wait} of ${w.delay} ms`);
      waits[i + 1]++;
      late.push(gap - w.wait);
    }
  }
  const g = edges.GET, p = edges.POST;
  if (g.exhausted === 0 || g.most !== maxAttempts || p.most !== 1 || p.exhausted === 0) problems.push(`GET most ${g.most}, exhausted ${g.exhausted}; POST most ${p.most}, failed ${p.exhausted}`);
  if (waits[1] < 20 || waits[2] < 12 || waits[3] < 10) problems.push(`waits ${JSON.stringify(waits)}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const gs = splitStatuses(g.statuses, retryable);
  const base = { caller: 'front', callee: 'stock', per_try_timeout_ms: null, idempotency_key: false, retry_after_captured: false, retries_after_caller_gave_up: 0 };
  return {
    scenario: 'exponential-backoff',
    description: `Node: front calls stock with plain axios requests (instrumentation-http: a CLIENT span per try) inside exponential-backoff 3.1.3's backOff (${JSON.stringify(OPTS)}, delayFirstAttempt false, maxDelay none): before retry n a full jitter, round(U[0,1)·${OPTS.startingDelay}·${OPTS.timeMultiple}^(n−1)) ms, ceilings ${[1, 2, 3].map(ceilingOf).join(', ')} ms. Its retry callback retries a GET that failed with 429 or 5xx, never a POST; no Retry-After is read (nor recorded on a span). Root requests arrive open loop, ${PACE_MS} ms apart.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      ...base, operation: '/stock/:sku', method: 'GET', library: `exponential-backoff@3.1.3 (${JSON.stringify(OPTS)})`,
      retries: true, max_attempts: maxAttempts, exhausted_in_traces: g.exhausted > 0,
      backoff: { kind: 'exponential', base_ms: OPTS.startingDelay, multiplier: OPTS.timeMultiple, cap_ms: null, jitter: 'full', jitter_fraction: null },
      retried_status: gs.retried, not_retried_status: gs.notRetried,
      honours_retry_after: false, retry_after_waits: 0,
      attempts: g.attempts, calls: g.calls,
      waits_by_attempt_index: waits,
      wait_late_median_ms: round1(median(late)),
    }, unretriedPost(base, p)],
    paths: stockPaths(maxAttempts, g, 1, p),
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
