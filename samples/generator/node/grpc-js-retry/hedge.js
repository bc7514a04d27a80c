'use strict';
// Scenario grpc-js-hedge (issue 11 item 7, with item 9's shape): the
// grpc-js-retry services, front's channel configured with a service-config
// hedgingPolicy instead of a retryPolicy. grpc-js 1.14 (retrying-call.js)
// starts the first attempt and a timer; each time the timer fires
// (hedgingDelay after the previous attempt started) it starts another
// attempt while the earlier ones still run, up to maxAttempts in all
// (capped at 5 unless the channel option grpc-node.retry_max_attempts_limit
// says otherwise). The first attempt to answer OK (or to send headers)
// commits the call and the others are cancelled ("Discarded in favor of
// other hedged attempt"); a status in nonFatalStatusCodes starts the next
// attempt at once (after a pushback, if the server sent one) instead of
// ending the call; any other status ends it. The hedges run below the
// client interceptors, so instrumentation-grpc makes one CLIENT span per
// call, and stock one SERVER span per attempt under it, overlapping in
// time. stock answers some attempts slowly, and does not stop work when a
// losing attempt is cancelled: its SERVER span ends when it answers, after
// front's CLIENT span has ended.
//
// main.js runs it (SCENARIO=grpc-js-hedge): this module is its
// configuration, its fault scripts and its truth.

const SEED = 11;
const POLICY = { maxAttempts: 3, hedgingDelay: '0.03s', nonFatalStatusCodes: ['UNAVAILABLE'] };
const SERVICE_CONFIG = { methodConfig: [{ name: [{ service: 'retryaudit.Stock' }], hedgingPolicy: POLICY }] };
const SLOW_MS = 150; // how long a "slow" attempt takes to answer
// Cases: [how many root requests, stock's script for their attempts in
// the order they arrive]. "slow" answers after SLOW_MS, "unavailable" at
// once with UNAVAILABLE (non-fatal: the next attempt starts at once), past
// the end of the script stock answers at once.
const CASES = [
  [6, []], // answered before the hedging delay: one attempt
  [5, ['slow']], // the hedge at 30 ms wins
  [3, ['slow', 'slow']], // the second hedge, at 60 ms, wins
  [2, ['slow', 'slow', 'slow']], // every attempt slow: the first wins
  [3, ['unavailable']], // sent again at once, answered
  [2, ['slow', 'unavailable']], // the hedge fails, the third attempt starts at once
  [2, ['unavailable', 'unavailable', 'unavailable']], // every attempt fails: the call fails
];

const sec = (s) => Math.round(Number(s.slice(0, -1)) * 1000);
const median = (xs) => xs.slice().sort((x, y) => x - y)[xs.length >> 1];
const round1 = (x) => Math.round(x * 10) / 10;

// buildTruth reads what stock received per call: its attempts in the order
// they arrived, which started while the one before still ran (a hedge the
// timer started) and which after it had failed (sent again at once on a
// non-fatal status), and which attempt answered first with OK (the one the
// call committed to).
function buildTruth(fronts, stocks, answers) {
  const problems = [];
  const byCall = new Map(fronts.map((r) => [r.call, []]));
  for (const a of stocks) byCall.get(a.call).push(a);
  let most = 0, hedgedCalls = 0, exhausted = 0, cancelled = 0;
  const late = [], resent = Array(POLICY.maxAttempts).fill(0);
  const won = Array(POLICY.maxAttempts).fill(0);
  for (const as of byCall.values()) {
    as.sort((x, y) => x.at - y.at);
    most = Math.max(most, as.length);
    let hedged = false;
    for (let i = 1; i < as.length; i++) {
      if (as[i].previous_attempts !== i) problems.push(`call ${as[i].call}: attempt ${i} says ${as[i].previous_attempts} previous attempts`);
      if (as.slice(0, i).some((p) => as[i].at < p.end)) hedged = true;
      if (as[i].at < as[i - 1].end) late.push(as[i].at - as[i - 1].at - sec(POLICY.hedgingDelay));
      else resent[i]++;
    }
    if (hedged) hedgedCalls++;
    if (as.length === POLICY.maxAttempts && as.every((a) => a.step === 'unavailable')) exhausted++;
    const oks = as.filter((a) => a.step !== 'unavailable');
    if (oks.length) won[as.indexOf(oks.reduce((x, y) => (y.end < x.end ? y : x)))]++;
    cancelled += as.filter((a) => a.cancelled).length;
  }
  if (most !== POLICY.maxAttempts || exhausted === 0 || late.length === 0 || cancelled === 0) {
    problems.push(`most attempts in one call ${most}, exhausted ${exhausted}, hedges ${late.length}, cancelled ${cancelled}`);
  }
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  return {
    scenario: 'grpc-js-hedge',
    description: 'Node: front calls stock over gRPC with @grpc/grpc-js 1.14, whose service-config hedgingPolicy (3 attempts in all, a hedge 30 ms after the previous attempt started, UNAVAILABLE non-fatal: the next attempt at once) hedges below instrumentation-grpc: one CLIENT span per call, overlapping stock SERVER spans under it; the losers are cancelled, and stock, answering anyway, ends their spans after the call has ended.',
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      caller: 'front', callee: 'stock', operation: 'retryaudit.Stock/Get', method: '', library: '@grpc/grpc-js (service config hedgingPolicy)',
      // A non-fatal status is sent again at once, within the same
      // maxAttempts: a retry without backoff.
      retries: true, max_attempts: POLICY.maxAttempts, exhausted_in_traces: exhausted > 0,
      backoff: { kind: 'none', base_ms: null, multiplier: null, cap_ms: null, jitter: 'none', jitter_fraction: null },
      per_try_timeout_ms: null, retried_status: [], not_retried_status: [],
      retried_codes: stocks.some((a) => a.step === 'unavailable') ? ['UNAVAILABLE'] : [], not_retried_codes: [],
      honours_retry_after: false, idempotency_key: false,
      retry_after_captured: true, retry_after_waits: 0,
      attempts: stocks.length, below_instrumentation: true,
      calls: fronts.length, retries_after_caller_gave_up: 0,
      waits_by_attempt_index: resent,
      hedge: {
        library: '@grpc/grpc-js (service config hedgingPolicy)', delay_ms: sec(POLICY.hedgingDelay), max_hedges: POLICY.maxAttempts - 1,
        hedged_calls: hedgedCalls, most_requests: most,
        delay_late_median_ms: round1(median(late)), cancelled_attempts: cancelled, won_by_attempt: won,
        non_fatal_codes: POLICY.nonFatalStatusCodes,
      },
    }],
    // maxAttempts bounds the hedges and the attempts sent again together.
    paths: [{ services: ['front', 'stock'], operations: ['/items/:id', 'retryaudit.Stock/Get'], worst_case_amplification: POLICY.maxAttempts,
      observed_max_amplification: most }],
  };
}

module.exports = {
  seed: SEED, serviceConfig: SERVICE_CONFIG, stockEnv: { STOCK_SLOW_MS: String(SLOW_MS) }, settleMS: 2 * SLOW_MS,
  scripts: CASES.flatMap(([count, script]) => Array.from({ length: count }, () => script)),
  buildTruth,
};
