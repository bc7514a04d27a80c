'use strict';
// Scenario cockatiel (issue 11 items 2, 6 and 8): cockatiel 3's policies
// as its README composes them. front retries stock with retry(handleAll,
// {maxAttempts, backoff: new ExponentialBackoff({generator:
// halfJitterGenerator})}) — maxAttempts counts the retries; the generator
// is cockatiel's equal jitter, not its default (Polly's decorrelated
// jitter "V2": scenario cockatiel-decorrelated, below) —
// around an aggressive per-try timeout; and it reads the ledger through
// circuitBreaker(handleAll, {halfOpenAfter, breaker: new
// ConsecutiveBreaker(n)}), which fails calls at once while open.
//
//   driver ─► front ─┬─► stock    GET /quotes/:id   → GET /stock/:sku
//                    └─► ledger   GET /balances/:id → GET /ledger/:id
//
// Root requests are sent one at a time, PACE_MS apart: first the quotes
// (shuffled), then the balances in order, so that the ledger's failures
// come in runs. Run by the Go generator (`go run . -out .. -node
// cockatiel`), which receives the spans over OTLP/HTTP and writes the
// trace files; this program writes truth.json's content to $TRUTH_OUT from
// its configuration, the delays cockatiel published for every retry
// (onRetry) and the requests stock and the ledger received. The driver is
// not instrumented: front's SERVER span is the root.

const fs = require('node:fs');
const { rng, shuffle, sleep, start, stop, get } = require('../common/harness');
const { median, round1 } = require('../common/calls');

const SEED = 21;
const PACE_MS = 5;
// SCENARIO cockatiel-decorrelated runs the same program with cockatiel's
// default backoff (ExponentialBackoff() as it comes: its
// decorrelatedJitterGenerator) and no per-try timeout, for stock only, with
// most calls retrying three times: what tells decorrelated jitter from the
// others is how one call's consecutive waits depend on each other.
const DECORRELATED = process.env.SCENARIO === 'cockatiel-decorrelated';
// cockatiel's ExponentialBackoff defaults (initialDelay 128 ms, exponent
// 2, maxDelay 30 s); in cockatiel with its halfJitterGenerator; 3
// retries, 4 attempts.
const STOCK_POLICY = DECORRELATED
  ? { maxAttempts: 3, generator: null, initialDelay: 128, exponent: 2, maxDelay: 30000, timeoutMS: null }
  : { maxAttempts: 3, generator: 'halfJitterGenerator', initialDelay: 128, exponent: 2, maxDelay: 30000, timeoutMS: 80 };
const LEDGER_BREAKER = { consecutive: 3, halfOpenAfter: 40 };
const SLOW_MS = 300;
// Stock cases: a script for the request's sku, each entry one request
// stock receives.
const STOCK_CASES = DECORRELATED ? [
  [4, []], [6, ['503']], [8, ['503', '503']], [30, ['503', '503', '503']],
  [6, ['503', '503', '503', '503']], // every attempt fails: the call gives up
] : [
  [5, []], [6, ['503']], [5, ['503', '503']], [3, ['slow']], [2, ['503', 'slow']],
  [3, ['503', '503', '503']],
  [2, ['503', '503', '503', '503']], // every attempt fails: the call gives up
  [2, ['slow', 'slow', 'slow', 'slow']], // every try times out
];
// Ledger runs, in order: how many balances in a row find the ledger up or
// down (503). A down run longer than the breaker's threshold opens it.
const LEDGER_RUNS = DECORRELATED ? [] : [['up', 6], ['down', 12], ['up', 8], ['down', 9], ['up', 6], ['down', 2], ['up', 4]];

async function main() {
  const env = { SLOW_MS: String(SLOW_MS) };
  const stock = start('stock', env);
  const ledger = start('ledger', env);
  const [sport, lport] = await Promise.all([stock.ready, ledger.ready]);
  const front = start('front', {
    STOCK_URL: `http://127.0.0.1:${sport}`, LEDGER_URL: `http://127.0.0.1:${lport}`,
    STOCK_POLICY: JSON.stringify(STOCK_POLICY), LEDGER_BREAKER: JSON.stringify(LEDGER_BREAKER),
  });
  const fport = await front.ready;
  const answers = {};
  const count = (code) => { answers[code] = (answers[code] || 0) + 1; };
  const cases = shuffle(STOCK_CASES.flatMap(([n, script]) => Array.from({ length: n }, () => script)), rng(SEED));
  for (const [i, script] of cases.entries()) {
    const id = String(5001 + i);
    stock.child.send({ type: 'script', sku: `sku-${id}`, script });
    count(await get(fport, `/quotes/${id}`));
    await sleep(PACE_MS);
  }
  let n = 0;
  for (const [state, len] of LEDGER_RUNS) {
    for (let i = 0; i < len; i++) {
      const id = String(6001 + n++);
      // Every request the ledger receives while down fails.
      if (state === 'down') ledger.child.send({ type: 'script', sku: `acct-${id}`, script: ['503'] });
      count(await get(fport, `/balances/${id}`));
      await sleep(PACE_MS);
    }
  }
  // The slow answers of the last timed-out tries finish after front gave up.
  await sleep(SLOW_MS + 100);
  const fronts = await stop(front);
  const stocks = await stop(stock);
  const ledgers = await stop(ledger);
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, ledgers, answers)));
}


function buildTruth(fronts, stocks, ledgers, answers) {
  const problems = [];
  const byCall = new Map(fronts.map((r) => [r.call, []]));
  for (const a of [...stocks, ...ledgers]) byCall.get(a.call).push(a);
  const maxAttempts = STOCK_POLICY.maxAttempts + 1;
  const s = { calls: 0, attempts: 0, exhausted: 0, most: 0, timedOut: 0 };
  const l = { calls: 0, attempts: 0, fastFailed: 0, failedUnretried: 0 };
  const waits = Array(maxAttempts).fill(0);
  for (const rec of fronts) {
    const as = byCall.get(rec.call).sort((x, y) => x.at - y.at);
    if (rec.route === 'ledger') {
      l.calls++;
      l.attempts += as.length;
      if (as.length === 0 && rec.error === 'BrokenCircuitError') l.fastFailed++;
      if (as.length === 1 && as[0].step === '503') l.failedUnretried++;
      continue;
    }
    s.calls++;
    s.attempts += as.length;
    s.most = Math.max(s.most, as.length);
    s.timedOut += as.filter((a) => a.step === 'slow').length;
    if (as.length === maxAttempts && as.every((a) => a.step !== 'ok')) s.exhausted++;
    if (rec.delays.length !== as.length - 1) problems.push(`${rec.call}: ${as.length} attempts, ${rec.delays.length} retries published`);
    for (let i = 1; i < as.length; i++) waits[i]++;
  }
  if (s.exhausted === 0 || s.most !== maxAttempts) problems.push(`stock: most attempts ${s.most}, exhausted ${s.exhausted}`);
  if (!DECORRELATED && l.fastFailed === 0) problems.push('the ledger breaker failed no call fast');
  if (waits[1] < 8 || waits[2] < 4) problems.push(`stock waits ${JSON.stringify(waits)}`);
  if (DECORRELATED && waits[3] < 20) problems.push(`stock waits ${JSON.stringify(waits)}: too few calls retried three times`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const base = { caller: 'front', method: 'GET', idempotency_key: false, honours_retry_after: false, retry_after_captured: true, retry_after_waits: 0, retries_after_caller_gave_up: 0 };
  const stockEdge = {
    ...base, callee: 'stock', operation: '/stock/:sku', library: 'cockatiel@3 (retry + timeout)',
    retries: true, max_attempts: maxAttempts, exhausted_in_traces: s.exhausted > 0,
    // cockatiel 3 (backoff/ExponentialBackoffGenerators.js
    // halfJitterGenerator): the wait before retry n (from 0) is
    // floor((d + U[0,1)·d) / 2), d = min(maxDelay, initialDelay·2^n).
    backoff: { kind: 'exponential', base_ms: STOCK_POLICY.initialDelay, multiplier: STOCK_POLICY.exponent, cap_ms: STOCK_POLICY.maxDelay, jitter: 'equal', jitter_fraction: null },
    per_try_timeout_ms: STOCK_POLICY.timeoutMS,
    retried_status: stocks.some((a) => a.step === '503') ? [503] : [], not_retried_status: [],
    attempts: s.attempts, calls: s.calls, timed_out_attempts: s.timedOut,
    waits_by_attempt_index: waits,
    wait_late_median_ms: round1(median(fronts.flatMap((r) => lateness(r, byCall.get(r.call))))),
  };
  if (DECORRELATED) {
    // cockatiel 3 (decorrelatedJitterGenerator, ExponentialBackoff's
    // default): the wait before retry n (from 0) is
    // min(maxDelay, max(0, f(n+u) − f(n−1+u′))·initialDelay/1.4), f(t) =
    // exponent^t·tanh(√(4t)), u fresh from U[0,1) at every retry and u′
    // the previous retry's (f(n−1+u′) = 0 before the first): the time
    // from the first failure to retry n is f(n+u)·initialDelay/1.4, whose
    // median is about initialDelay·exponent^n, and one call's
    // consecutive waits share u′ (a long wait is followed by a short one).
    return {
      scenario: 'cockatiel-decorrelated',
      description: `Node: front retries stock with cockatiel 3 (retry(handleAll, {maxAttempts: ${STOCK_POLICY.maxAttempts}, backoff: new ExponentialBackoff()}): ${maxAttempts} attempts, its default backoff, decorrelated jitter "V2" from ${STOCK_POLICY.initialDelay} ms ×${STOCK_POLICY.exponent}, no per-try timeout).`,
      root_requests: fronts.length,
      root_answers: answers,
      // No answer carries a Retry-After, and instrumentation-http records
      // no response header: a wait on a whole second is a late timer.
      edges: [{
        ...stockEdge, library: 'cockatiel@3 (retry, default ExponentialBackoff)', backoff: { ...stockEdge.backoff, jitter: 'decorrelated' },
        retry_after_captured: false, timed_out_attempts: undefined,
      }],
      paths: [{ services: ['front', 'stock'], operations: ['/quotes/:id', '/stock/:sku'], worst_case_amplification: maxAttempts, observed_max_amplification: s.most }],
    };
  }
  return {
    scenario: 'cockatiel',
    description: `Node: front retries stock with cockatiel 3 (retry(handleAll, {maxAttempts: ${STOCK_POLICY.maxAttempts}}): ${maxAttempts} attempts, ExponentialBackoff from ${STOCK_POLICY.initialDelay} ms ×${STOCK_POLICY.exponent} with its halfJitterGenerator: each wait uniform in [d/2, d), each try under an aggressive ${STOCK_POLICY.timeoutMS} ms timeout), and reads the ledger through a circuit breaker (ConsecutiveBreaker(${LEDGER_BREAKER.consecutive}), halfOpenAfter ${LEDGER_BREAKER.halfOpenAfter} ms) without retries.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [stockEdge, {
      ...base, callee: 'ledger', operation: '/ledger/:id', library: null,
      retries: false, max_attempts: 1, exhausted_in_traces: l.failedUnretried > 0,
      backoff: { kind: 'none', base_ms: null, multiplier: null, cap_ms: null, jitter: 'none', jitter_fraction: null },
      per_try_timeout_ms: null, retried_status: [], not_retried_status: ledgers.some((a) => a.step === '503') ? [503] : [],
      breaker: { library: 'cockatiel@3 circuitBreaker(ConsecutiveBreaker)', consecutive_failures: LEDGER_BREAKER.consecutive, open_for_ms: LEDGER_BREAKER.halfOpenAfter, fast_failed_calls: l.fastFailed },
      attempts: l.attempts, calls: l.calls,
    }],
    paths: [
      { services: ['front', 'stock'], operations: ['/quotes/:id', '/stock/:sku'], worst_case_amplification: maxAttempts, observed_max_amplification: s.most },
      { services: ['front', 'ledger'], operations: ['/balances/:id', '/ledger/:id'], worst_case_amplification: 1, observed_max_amplification: 1 },
    ],
  };
}


// lateness lists how much later than the delay cockatiel chose each retry
// of a stock call reached stock, less the try before it: the time from one
// arrival to the next is that try (at most the timeout), the delay and
// the host's lateness; for a 503 answered at once the try is ~0.
function lateness(rec, as) {
  if (rec.route !== 'stock') return [];
  const out = [];
  for (const [i, d] of rec.delays.entries()) {
    if (as[i].step !== '503') continue;
    out.push(as[i + 1].at - as[i].at - d.delay);
  }
  return out;
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
