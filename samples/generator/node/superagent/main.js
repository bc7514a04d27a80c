'use strict';
// Scenario superagent-retry (issue 11 items 1 and 2): superagent 10's
// .retry(n), which sends the next try at once, with no wait at all, on
// 408, 413, 429, 5xx (500, 502, 503, 504, 521, 522, 524), timeouts and
// connection errors, whatever the method, and never reads Retry-After:
// zero-gap retries, a POST retried without an idempotency key, a 429's
// Retry-After: 1 (recorded on the CLIENT spans) ignored.
//
//   driver ─► front ─► stock
//     GET /quotes/:id    GET /stock/:sku           (superagent .retry(2): 3 tries)
//     POST /orders/:id   POST /reservations/:sku   (the same: POST retried too)
//
// Root requests arrive open loop, PACE_MS apart. Run by the Go generator
// (`go run . -out .. -node superagent-retry`), which receives the spans
// over OTLP/HTTP and writes the trace files; this program writes
// truth.json's content to $TRUTH_OUT from superagent's rule, the outcomes
// its retry callback was asked about and the requests stock received. The
// driver is not instrumented: front's SERVER span is the root.

const fs = require('node:fs');
const { runScripted } = require('../common/harness');
const { callStats, median, round1, splitStatuses, stockPaths } = require('../common/calls');

const SEED = 33;
const PACE_MS = 30; // between root requests
const RETRIES = 2;
// superagent 10's STATUS_CODES (lib/request-base.js).
const RETRY_STATUSES = [408, 413, 429, 500, 502, 503, 504, 521, 522, 524];
// Cases: the method, and a script for the request's sku, each entry one
// request stock receives; "429" answers with Retry-After: 1.
const CASES = [
  { count: 6, method: 'GET', script: [] },
  { count: 6, method: 'GET', script: ['503'] },
  { count: 5, method: 'GET', script: ['503', '503'] },
  { count: 3, method: 'GET', script: ['503', '503', '503'] }, // every try fails: the call gives up
  { count: 3, method: 'GET', script: ['429'] },
  { count: 2, method: 'GET', script: ['400'] },
  { count: 4, method: 'POST', script: [] },
  { count: 4, method: 'POST', script: ['503'] },
  { count: 2, method: 'POST', script: ['503', '503', '503'] },
];

async function main() {
  const { fronts, stocks, answers } = await runScripted({
    cases: CASES, seed: SEED, paceMs: PACE_MS, idBase: 6001,
    frontEnv: (port) => ({ STOCK_URL: `http://127.0.0.1:${port}`, RETRIES: String(RETRIES) }),
  });
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, answers)));
}

function buildTruth(fronts, stocks, answers) {
  const maxAttempts = RETRIES + 1;
  const retryable = (s) => RETRY_STATUSES.includes(s);
  const { edges, calls, problems } = callStats(fronts, stocks, () => maxAttempts, retryable);
  const waits = { GET: Array(maxAttempts).fill(0), POST: Array(maxAttempts).fill(0) };
  const gaps = [];
  let ignored = 0;
  for (const { rec, attempts: as } of calls) {
    const retried = rec.judged.filter((j) => retryable(j.status));
    if (retried.length !== as.length - 1) problems.push(`${rec.call}: ${as.length} attempts, ${retried.length} retryable outcomes judged`);
    for (let i = 1; i < as.length; i++) {
      if (Number(as[i - 1].step) !== retried[i - 1]?.status) problems.push(`${rec.call}: try ${i} answered ${as[i - 1].step}, superagent judged ${retried[i - 1]?.status}`);
      if (as[i - 1].step === '429') ignored++;
      waits[rec.method][i]++;
      gaps.push(as[i].at - as[i - 1].at);
    }
  }
  const g = edges.GET, p = edges.POST;
  if (g.exhausted === 0 || g.most !== maxAttempts || p.exhausted === 0 || p.most !== maxAttempts) problems.push(`most attempts GET ${g.most}, POST ${p.most}; exhausted GET ${g.exhausted}, POST ${p.exhausted}`);
  if (ignored === 0 || waits.GET[1] < 8 || waits.GET[2] < 4 || waits.POST[1] < 4) problems.push(`waits ${JSON.stringify(waits)}, Retry-After ignored ${ignored}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const edge = (e, method, operation) => {
    const st = splitStatuses(e.statuses, retryable);
    return {
      caller: 'front', callee: 'stock', operation, method, library: `superagent@10 (.retry(${RETRIES}))`,
      retries: true, max_attempts: maxAttempts, exhausted_in_traces: e.exhausted > 0,
      backoff: { kind: 'none', base_ms: null, multiplier: null, cap_ms: null, jitter: 'none', jitter_fraction: null },
      per_try_timeout_ms: null,
      retried_status: st.retried, not_retried_status: st.notRetried,
      honours_retry_after: false, idempotency_key: false,
      retry_after_captured: true, retry_after_waits: 0,
      attempts: e.attempts, calls: e.calls, retries_after_caller_gave_up: 0,
    };
  };
  return {
    scenario: 'superagent-retry',
    description: `Node: front calls stock through superagent 10 with .retry(${RETRIES}) on GET and POST alike (instrumentation-http: a CLIENT span per try, the Retry-After response header recorded on them): the next try leaves at once, no wait, on 408, 413, 429, 500, 502, 503, 504, 521, 522, 524, timeouts and connection errors; 400 passes through; a 429's Retry-After: 1 is ignored (retried at once); POST is retried without an idempotency key. Root requests arrive open loop, ${PACE_MS} ms apart. Stock saw each retry a median ${round1(median(gaps))} ms after the try before it.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [
      { ...edge(g, 'GET', '/stock/:sku'), waits_by_attempt_index: waits.GET },
      { ...edge(p, 'POST', '/reservations/:sku'), waits_by_attempt_index: waits.POST },
    ],
    paths: stockPaths(maxAttempts, g, maxAttempts, p),
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
