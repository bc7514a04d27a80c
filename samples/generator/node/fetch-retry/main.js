'use strict';
// Scenario fetch-retry (issue 11 items 1 and 2): the global fetch wrapped
// by fetch-retry 6.0.0, retryDelay a function, retryOn a list.
//
// fetch-retry (index.js) retries a response whose status is in retryOn,
// or a network error, while attempt < retries, whatever the method, and
// waits retryDelay(attempt, error, response) ms before the next try
// (attempt from 0, the try that failed): here base + attempt·increment, a
// linear schedule of 100, 250, 400, 550 ms, no jitter (base and
// increment apart, so that Fibonacci's 100, 250, 350, 600 is not it).
// retryOn [503] leaves 429 out: a 429 answered with Retry-After: 1 (the
// header recorded on the CLIENT spans) is passed through unretried, so
// no Retry-After is honoured or ignored. POST is retried as GET is, with
// no idempotency key.
//
//   driver ─► front ─► stock
//     GET /quotes/:id    GET /stock/:sku           (retries 4: 5 attempts)
//     POST /orders/:id   POST /reservations/:sku   (retries 4, unkeyed)
//
// Root requests arrive open loop, PACE_MS apart. Run by the Go generator
// (`go run . -out .. -node fetch-retry`), which receives the spans over
// OTLP/HTTP and writes the trace files; this program writes truth.json's
// content to $TRUTH_OUT from fetch-retry's options, the delays its
// retryDelay function returned and the requests stock received. The
// driver is not instrumented: front's SERVER span is the root.

const fs = require('node:fs');
const { runScripted } = require('../common/harness');
const { callStats, median, round1, splitStatuses, stockPaths } = require('../common/calls');

const SEED = 47;
const PACE_MS = 40; // between root requests
const OPTS = { retries: 4, retryOn: [503], baseMS: 100, incrementMS: 150 };
const retryable = (s) => OPTS.retryOn.includes(s);
// Cases: the method, and a script for the request's sku, each entry one
// request stock receives. "429" answers with Retry-After: 1, which
// fetch-retry, not retrying 429, passes through.
const CASES = [
  { count: 6, method: 'GET', script: [] },
  { count: 7, method: 'GET', script: ['503'] },
  { count: 5, method: 'GET', script: ['503', '503'] },
  { count: 4, method: 'GET', script: ['503', '503', '503'] },
  { count: 4, method: 'GET', script: ['503', '503', '503', '503'] },
  { count: 3, method: 'GET', script: ['503', '503', '503', '503', '503'] }, // every attempt fails: the call gives up
  { count: 3, method: 'GET', script: ['429'] },
  { count: 2, method: 'GET', script: ['503', '429'] },
  { count: 2, method: 'GET', script: ['400'] },
  { count: 3, method: 'POST', script: [] },
  { count: 4, method: 'POST', script: ['503'] },
  { count: 2, method: 'POST', script: ['503', '503', '503', '503', '503'] },
];

async function main() {
  const { fronts, stocks, answers } = await runScripted({
    cases: CASES, seed: SEED, paceMs: PACE_MS, idBase: 9501,
    frontEnv: (port) => ({ STOCK_URL: `http://127.0.0.1:${port}`, FETCH_RETRY: JSON.stringify(OPTS) }),
  });
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, answers)));
}

function buildTruth(fronts, stocks, answers) {
  const maxAttempts = OPTS.retries + 1;
  const { edges, calls, problems } = callStats(fronts, stocks, () => maxAttempts, retryable);
  const waits = { GET: Array(maxAttempts).fill(0), POST: Array(maxAttempts).fill(0) };
  const late = { GET: [], POST: [] };
  for (const { rec, attempts: as } of calls) {
    if (rec.delays.length !== as.length - 1) problems.push(`${rec.call}: ${as.length} attempts, ${rec.delays.length} delays asked for`);
    for (const [i, d] of rec.delays.entries()) {
      const gap = as[i + 1].at - as[i].at;
      if (d.attempt !== i || d.status !== Number(as[i].step) || !retryable(d.status) || gap < d.delay) problems.push(`${rec.call}: retry after try ${d.attempt} (${d.status}) came ${gap.toFixed(1)} ms after it, fetch-retry's wait ${d.delay} ms`);
      waits[rec.method][i + 1]++;
      late[rec.method].push(gap - d.delay);
    }
  }
  const g = edges.GET, p = edges.POST;
  if (g.exhausted === 0 || g.most !== maxAttempts || p.exhausted === 0) problems.push(`most attempts ${g.most}, exhausted GET ${g.exhausted}, POST ${p.exhausted}`);
  if (!g.statuses.has(429) || waits.GET[1] < 8 || waits.GET[4] < 3) problems.push(`waits ${JSON.stringify(waits)}, statuses ${[...g.statuses]}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const backoff = { kind: 'linear', base_ms: OPTS.baseMS, increment_ms: OPTS.incrementMS, multiplier: null, cap_ms: null, jitter: 'none', jitter_fraction: null };
  const base = { caller: 'front', callee: 'stock', per_try_timeout_ms: null, idempotency_key: false, retry_after_captured: true, retries_after_caller_gave_up: 0, retries: true, max_attempts: maxAttempts, backoff, honours_retry_after: false, retry_after_waits: 0, library: `fetch-retry@6.0.0 (${JSON.stringify(OPTS)})` };
  const edge = (e, method, operation) => {
    const s = splitStatuses(e.statuses, retryable);
    return {
      ...base, operation, method, exhausted_in_traces: e.exhausted > 0, retried_status: s.retried, not_retried_status: s.notRetried,
      attempts: e.attempts, calls: e.calls, waits_by_attempt_index: waits[method],
      wait_late_ms: round1(Math.max(...late[method])), wait_late_median_ms: round1(median(late[method])),
    };
  };
  return {
    scenario: 'fetch-retry',
    description: `Node: front calls stock with the global fetch (instrumentation-undici: a CLIENT span per try) wrapped by fetch-retry 6.0.0: retries ${OPTS.retries}, retryOn [${OPTS.retryOn}], retryDelay (attempt) => ${OPTS.baseMS} + attempt·${OPTS.incrementMS} ms: a linear ${[0, 1, 2, 3].map((a) => OPTS.baseMS + a * OPTS.incrementMS).join(', ')} ms, no jitter. A 429 (with Retry-After: 1, recorded on the CLIENT spans) is not in retryOn and passes through unretried; 400 too. fetch-retry looks at no method: POST /reservations/:sku is retried as GET /stock/:sku is, with no idempotency key. Root requests arrive open loop, ${PACE_MS} ms apart.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [edge(g, 'GET', '/stock/:sku'), edge(p, 'POST', '/reservations/:sku')],
    paths: stockPaths(maxAttempts, g, maxAttempts, p),
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
