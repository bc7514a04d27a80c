'use strict';
// Scenario fetch-timeout (issue 11 item 6): Node's global fetch with a
// per-try timeout, retried by p-retry, against a callee that is sometimes
// slow. instrumentation-undici ends an aborted fetch's CLIENT span with no
// status code and, for an abort, status Unset (the semantic conventions say
// a cancelled request is no error): only the attempts' durations, all at
// the timeout, and the callee's spans that outlive them show the timeout.
//
//   driver ─► front ─► pricing
//     GET /quotes/:id    GET /prices/:sku   (front: fetch + per-try timeout
//                                             150 ms, p-retry 4 attempts,
//                                             25 ms ×2, no randomisation)
//
// Run by the Go generator (`go run . -out .. -node fetch-timeout`), which
// receives the spans over OTLP/HTTP and writes the trace files; this program
// writes truth.json's content to $TRUTH_OUT, from its configuration and
// from the attempts front made (their start, end and outcome as front saw
// them). The driver is not instrumented: front's SERVER span is the root.

const fs = require('node:fs');
const { rng, shuffle, sleep, start, stop, get } = require('../common/harness');

const SEED = 6;
// p-retry 6 (through retry 0.13): the wait before retry n (from 0) is
// round(minTimeout · factor^n), at most maxTimeout; randomize false.
const RETRY = { retries: 3, minTimeout: 25, factor: 2, maxTimeout: 1000, randomize: false };
const PER_TRY_TIMEOUT_MS = 150;
// TIMEOUT_STYLE (from the generator): "controller", an AbortController
// aborted by a timer, as ky does (the span ends Unset, no status code);
// "signal", AbortSignal.timeout (status Error, "aborted due to timeout").
const TIMEOUT_STYLE = process.env.TIMEOUT_STYLE;
const SCENARIO = process.env.SCENARIO;
if (!['controller', 'signal'].includes(TIMEOUT_STYLE) || !SCENARIO) throw new Error('run me through the generator: go run . -node fetch-timeout');
const SLOW_MS = 400; // a slow answer, well past the per-try timeout
const PACE_MS = 20; // between root requests
// Cases: a script per request's sku, each entry one request to pricing.
const CASES = [
  { count: 6, script: [] },
  { count: 3, script: ['slow'] },
  { count: 3, script: ['slow', 'slow'] },
  { count: 2, script: ['slow', 'slow', 'slow'] },
  { count: 2, script: ['slow', 'slow', 'slow', 'slow'] }, // every try times out: the call gives up
  { count: 2, script: ['503'] },
  { count: 1, script: ['503', 'slow'] },
];

async function main() {
  const pricing = start('pricing', { SLOW_MS: String(SLOW_MS) });
  const pport = await pricing.ready;
  const front = start('front', {
    PRICING_URL: `http://127.0.0.1:${pport}`, RETRY_OPTIONS: JSON.stringify(RETRY),
    PER_TRY_TIMEOUT_MS: String(PER_TRY_TIMEOUT_MS), TIMEOUT_STYLE,
  });
  const fport = await front.ready;
  const cases = CASES.flatMap((c) => Array.from({ length: c.count }, () => c.script));
  shuffle(cases, rng(SEED));
  const answers = {};
  for (const [i, script] of cases.entries()) {
    const id = String(2001 + i);
    pricing.child.send({ type: 'script', sku: `sku-${id}`, script });
    const code = await get(fport, `/quotes/${id}`);
    answers[code] = (answers[code] || 0) + 1;
    await sleep(PACE_MS);
  }
  // The slow answers of the last calls finish after their callers gave up.
  await sleep(SLOW_MS + 100);
  const fronts = await stop(front);
  const prices = await stop(pricing);
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, prices, answers)));
}

function buildTruth(fronts, prices, answers) {
  const problems = [];
  const maxAttempts = RETRY.retries + 1;
  let attempts = 0, exhausted = 0, lateMS = 0, timedOut = 0, shortest = Infinity, longest = 0;
  const statuses = new Set();
  for (const rec of fronts) {
    const as = rec.attempts;
    attempts += as.length;
    if (as.length === maxAttempts && as.every((a) => a.status === undefined || a.status >= 500)) exhausted++;
    for (const [i, a] of as.entries()) {
      if (a.status >= 400) statuses.add(a.status);
      if (a.status === undefined) {
        timedOut++;
        shortest = Math.min(shortest, a.end - a.start);
        longest = Math.max(longest, a.end - a.start);
      }
      if (i > 0) {
        const intended = Math.min(Math.round(RETRY.minTimeout * RETRY.factor ** (i - 1)), RETRY.maxTimeout);
        lateMS = Math.max(lateMS, a.start - as[i - 1].end - intended);
      }
    }
  }
  if (prices.length !== attempts) {
    const seen = new Map();
    for (const p of prices) seen.set(p.call, (seen.get(p.call) || 0) + 1);
    const short = fronts.filter((r) => (seen.get(r.call) || 0) !== r.attempts.length)
      .map((r) => `${r.call} ${JSON.stringify(r.attempts.map((a) => [Math.round(a.end - a.start), a.status ?? a.error]))}`);
    problems.push(`pricing saw ${prices.length} requests, front made ${attempts} attempts: ${short.join('; ')}`);
  }
  if (exhausted === 0) problems.push('no call gave up after every attempt');
  if (timedOut === 0 || shortest < PER_TRY_TIMEOUT_MS - 1) problems.push(`timed-out tries: ${timedOut}, the shortest ${shortest} ms`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  return {
    scenario: SCENARIO,
    description: `Node: front fetches prices with the global fetch, each try aborted after ${PER_TRY_TIMEOUT_MS} ms (${TIMEOUT_STYLE === 'controller'
      ? 'an AbortController and a timer, as ky does: instrumentation-undici ends the try with no status code and status Unset'
      : 'AbortSignal.timeout: instrumentation-undici ends the try with status Error, "The operation was aborted due to timeout"'}), retried by p-retry (4 attempts, 25 ms ×2, no randomisation) against a pricing service that sometimes answers after ${SLOW_MS} ms.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      caller: 'front', callee: 'pricing', operation: '/prices/:sku', method: 'GET', library: 'p-retry@6 (retry@0.13) over fetch',
      retries: true, max_attempts: maxAttempts, exhausted_in_traces: exhausted > 0,
      backoff: { kind: 'exponential', base_ms: RETRY.minTimeout, multiplier: RETRY.factor, cap_ms: RETRY.maxTimeout, jitter: 'none', jitter_fraction: null },
      per_try_timeout_ms: PER_TRY_TIMEOUT_MS,
      retried_status: [...statuses].sort(), not_retried_status: [],
      honours_retry_after: false, idempotency_key: false, wait_late_ms: Math.round(lateMS * 10) / 10,
      retry_after_captured: true, retry_after_waits: 0,
      calls: fronts.length, attempts, retries_after_caller_gave_up: 0,
      timed_out_attempts: timedOut, timed_out_ms: [Math.round(shortest * 10) / 10, Math.round(longest * 10) / 10],
    }],
    paths: [{ services: ['front', 'pricing'], operations: ['/quotes/:id', '/prices/:sku'], worst_case_amplification: maxAttempts,
      observed_max_amplification: Math.max(...fronts.map((r) => r.attempts.length)) }],
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
