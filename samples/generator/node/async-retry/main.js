'use strict';
// Scenario async-retry (issue 11 items 1, 2 and 3): fetch inside
// async-retry 1.3.3, whose waits come from the retry package (0.13.1):
// before retry n (from 1) it waits round(R·minTimeout·factor^(n−1)) ms
// with R drawn from U[1, 2) (randomize, async-retry's default): a random
// factor that only lengthens the wait, neither ± nor full jitter. Over
// [d, 2d) it is the same draw as equal jitter's [c/2, c) with the ceiling
// c = 2d, which is how the truth writes it. With factor 3 the ceilings are
// 100, 300, 900 ms: a multiplier other than 2. async-retry knows no
// Retry-After: a 429's is waited as any failure's (the header is recorded
// on the CLIENT spans, and ignored). What is retried is up to the function
// it runs: here a 429 or 5xx, for GET and for a POST that carries an
// Idempotency-Key.
//
//   driver ─► front ─► stock
//     GET /quotes/:id    GET /stock/:sku           (retries 3: 4 attempts)
//     POST /orders/:id   POST /reservations/:sku   (retries 3, keyed)
//
// Root requests arrive open loop, PACE_MS apart. Run by the Go generator
// (`go run . -out .. -node async-retry`), which receives the spans over
// OTLP/HTTP and writes the trace files; this program writes truth.json's
// content to $TRUTH_OUT from async-retry's options, the waits the retry
// package computed for every call and the requests stock received. The
// driver is not instrumented: front's SERVER span is the root.

const fs = require('node:fs');
const { runScripted } = require('../common/harness');
const { callStats, median, round1, splitStatuses, stockPaths } = require('../common/calls');

const SEED = 43;
const PACE_MS = 30; // between root requests
// async-retry's options; randomize is its default (true), maxTimeout the
// retry package's (none).
const OPTS = { retries: 3, factor: 3, minTimeout: 50 };
// floorOf is the shortest wait before retry n, R = 1; the ceiling is twice it.
const floorOf = (n) => OPTS.minTimeout * OPTS.factor ** (n - 1);
const retryable = (s) => s === 429 || s >= 500;
// Cases: the method, and a script for the request's sku, each entry one
// request stock receives. "429" answers with Retry-After: 1, which
// async-retry does not read.
const CASES = [
  { count: 6, method: 'GET', script: [] },
  { count: 10, method: 'GET', script: ['503'] },
  { count: 8, method: 'GET', script: ['503', '503'] },
  { count: 6, method: 'GET', script: ['503', '503', '503'] },
  { count: 3, method: 'GET', script: ['503', '503', '503', '503'] }, // every attempt fails: the call gives up
  { count: 3, method: 'GET', script: ['429'] },
  { count: 2, method: 'GET', script: ['400'] },
  { count: 3, method: 'POST', script: [] },
  { count: 4, method: 'POST', script: ['503'] },
  { count: 2, method: 'POST', script: ['503', '503', '503', '503'] },
];

async function main() {
  const { fronts, stocks, answers } = await runScripted({
    cases: CASES, seed: SEED, paceMs: PACE_MS, idBase: 9001,
    frontEnv: (port) => ({ STOCK_URL: `http://127.0.0.1:${port}`, ASYNC_RETRY: JSON.stringify(OPTS) }),
  });
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, answers)));
}

function buildTruth(fronts, stocks, answers) {
  const maxAttempts = OPTS.retries + 1;
  const { edges, calls, problems } = callStats(fronts, stocks, () => maxAttempts, retryable);
  const waits = { GET: Array(maxAttempts).fill(0), POST: Array(maxAttempts).fill(0) };
  const late = { GET: [], POST: [] };
  let ignored = 0; // 429s waited on the schedule, Retry-After: 1 unread
  for (const { rec, attempts: as } of calls) {
    if (rec.waits.length !== OPTS.retries) problems.push(`${rec.call}: ${rec.waits.length} waits computed`);
    if (rec.failures.length !== as.filter((a) => a.step !== 'ok').length) problems.push(`${rec.call}: ${rec.failures.length} failures seen, stock failed ${as.length} attempts`);
    for (let i = 1; i < as.length; i++) {
      const gap = as[i].at - as[i - 1].at;
      const w = rec.waits[i - 1];
      if (!retryable(Number(as[i - 1].step)) || w < floorOf(i) || w >= 2 * floorOf(i) + 0.5 || gap < w) problems.push(`${rec.call}: retry ${i} after ${as[i - 1].step} came ${gap.toFixed(1)} ms after the try before, the wait computed ${w} ms`);
      if (as[i - 1].step === '429') ignored++;
      waits[rec.method][i]++;
      late[rec.method].push(gap - w);
    }
  }
  const g = edges.GET, p = edges.POST;
  if (g.exhausted === 0 || g.most !== maxAttempts || p.exhausted === 0) problems.push(`most attempts ${g.most}, exhausted GET ${g.exhausted}, POST ${p.exhausted}`);
  if (ignored === 0 || waits.GET[1] < 12 || waits.GET[2] < 8 || waits.GET[3] < 5) problems.push(`waits ${JSON.stringify(waits)}, 429s retried ${ignored}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  // The schedule as equal jitter's: ceilings 2·minTimeout·factor^(n−1).
  const backoff = { kind: 'exponential', base_ms: 2 * OPTS.minTimeout, multiplier: OPTS.factor, cap_ms: null, jitter: 'equal', jitter_fraction: null };
  const base = { caller: 'front', callee: 'stock', per_try_timeout_ms: null, retry_after_captured: true, retries_after_caller_gave_up: 0, retries: true, max_attempts: maxAttempts, backoff, honours_retry_after: false, retry_after_waits: 0 };
  const edge = (e, method, operation, key) => {
    const s = splitStatuses(e.statuses, retryable);
    return {
      ...base, operation, method, idempotency_key: key, library: `async-retry@1.3.3 (${JSON.stringify(OPTS)}, randomize)`,
      exhausted_in_traces: e.exhausted > 0, retried_status: s.retried, not_retried_status: s.notRetried,
      attempts: e.attempts, calls: e.calls, waits_by_attempt_index: waits[method],
      wait_late_median_ms: round1(median(late[method])),
    };
  };
  return {
    scenario: 'async-retry',
    description: `Node: front calls stock with the global fetch (instrumentation-undici: a CLIENT span per try) inside async-retry 1.3.3 (${JSON.stringify(OPTS)}, randomize its default), which waits round(R·${OPTS.minTimeout}·${OPTS.factor}^(n−1)) ms before retry n, R from U[1, 2): [50, 100), [150, 300), [450, 900) ms — a one-sided random factor, the same draw as equal jitter under ceilings ${[1, 2, 3].map((n) => 2 * floorOf(n)).join(', ')} ms (written so: base ${2 * OPTS.minTimeout} ms, ×${OPTS.factor}, jitter equal). The function it runs throws on 429 and 5xx and bails on other errors; async-retry reads no Retry-After, so a 429's Retry-After: 1 (recorded on the CLIENT spans) is ignored. POST /reservations/:sku is retried alike, every try carrying the call's Idempotency-Key (recorded on the spans). Root requests arrive open loop, ${PACE_MS} ms apart.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [edge(g, 'GET', '/stock/:sku', false), edge(p, 'POST', '/reservations/:sku', true)],
    paths: stockPaths(maxAttempts, g, maxAttempts, p),
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
