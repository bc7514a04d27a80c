'use strict';
// Scenario opossum (issue 11 item 8): front reads the ledger through an
// opossum 10 CircuitBreaker around a plain call (no retry). opossum trips
// on a failure rate, not on failures in a row: it opens when more than
// errorThresholdPercentage of the calls fired in its rolling window
// failed, once volumeThreshold calls were fired there (rejected calls
// count as fired, and closing the breaker does not clear the window, so
// one failure soon after it closes can open it again); it rejects calls
// for resetTimeout ms, then lets one probe through (half-open).
//
//   driver ─► front ─► ledger
//     GET /balances/:id   GET /ledger/:id   (opossum breaker, no retry)
//
// Root requests are sent one at a time, PACE_MS apart, in phases: the
// ledger healthy, flaky (each request fails with FLAKY_SHARE, drawn from a
// seeded PRNG, so the breaker trips after failures mixed with successes),
// healthy, down, healthy. Run by the Go generator (`go run . -out ..
// -node opossum`), which receives the spans over OTLP/HTTP and writes the
// trace files; this program writes truth.json's content to $TRUTH_OUT from
// the breaker's options, its transitions (open, halfOpen, close events)
// and the calls it rejected, and the requests the ledger received. The
// driver is not instrumented: front's SERVER span is the root.

const fs = require('node:fs');
const { rng, sleep, start, stop, get } = require('../common/harness');

const SEED = 33;
const PACE_MS = 5;
const WORK_MS = 3;
const FLAKY_SHARE = 0.7;
// opossum 10 (lib/circuit.js): errorThresholdPercentage 50 and the
// window's 10 buckets as its defaults; a shorter window and reset than its
// 10 s and 30 s, to fit a run of a few seconds.
const LEDGER_BREAKER = { errorThresholdPercentage: 50, volumeThreshold: 6, resetTimeout: 60, rollingCountTimeout: 400, rollingCountBuckets: 10 };
const PHASES = [['up', 20], ['flaky', 80], ['up', 30], ['down', 25], ['up', 20]];

async function main() {
  const ledger = start('ledger', { WORK_MS: String(WORK_MS) });
  const lport = await ledger.ready;
  const front = start('front', { LEDGER_URL: `http://127.0.0.1:${lport}`, LEDGER_BREAKER: JSON.stringify(LEDGER_BREAKER) });
  const fport = await front.ready;
  const answers = {};
  const rand = rng(SEED);
  let n = 0;
  for (const [phase, len] of PHASES) {
    for (let i = 0; i < len; i++) {
      const id = String(8001 + n++);
      // Every request the ledger receives for this account fails.
      if (phase === 'down' || phase === 'flaky' && rand() < FLAKY_SHARE) ledger.child.send({ type: 'script', sku: `acct-${id}`, script: ['503'] });
      const code = await get(fport, `/balances/${id}`);
      answers[code] = (answers[code] || 0) + 1;
      await sleep(PACE_MS);
    }
  }
  const fronts = await stop(front);
  const ledgers = await stop(ledger);
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, ledgers, answers)));
}

function buildTruth(records, ledgers, answers) {
  const problems = [];
  const fronts = records.filter((r) => r.call);
  const events = records.filter((r) => r.event).sort((a, b) => a.at - b.at);
  const byCall = new Map(fronts.map((r) => [r.call, []]));
  for (const a of ledgers) byCall.get(a.call).push(a);
  const l = { calls: 0, attempts: 0, fastFailed: 0, failed: 0, statuses: new Set() };
  // Rejected calls in front's order, and the opens each run of them
  // followed: an open period is an 'open' with at least one call rejected
  // before the breaker let a probe through.
  const opens = events.filter((e) => e.event === 'open');
  // A call let through while the breaker stayed closed after failures in
  // a row (no open since the last of them) shows how many it tolerated.
  const rejectedAfter = new Set();
  let consecutive = 0, minRunBeforeOpen = Infinity, mostLetThrough = 0, lastFailure = -Infinity;
  for (const rec of fronts.sort((a, b) => a.start - b.start)) {
    const as = byCall.get(rec.call);
    l.calls++;
    l.attempts += as.length;
    if (as.length > 1) problems.push(`${rec.call}: ${as.length} requests for one call`);
    if (rec.error === 'ETIMEDOUT') problems.push(`${rec.call}: the breaker's timeout ended the call`);
    if (as.length > 0 && consecutive > 0 && !opens.some((e) => e.at > lastFailure && e.at < rec.start)) mostLetThrough = Math.max(mostLetThrough, consecutive);
    if (as.length === 0) {
      if (rec.error !== 'EOPENBREAKER') problems.push(`${rec.call}: no request, error ${rec.error}`);
      l.fastFailed++;
      const o = opens.filter((e) => e.at <= rec.start).at(-1);
      if (o) {
        if (!rejectedAfter.has(o)) minRunBeforeOpen = Math.min(minRunBeforeOpen, consecutive);
        rejectedAfter.add(o);
      }
      continue;
    }
    if (as[0].step === '503') {
      l.failed++;
      l.statuses.add(503);
      consecutive++;
      lastFailure = rec.start;
    } else {
      consecutive = 0;
    }
  }
  const openPeriods = rejectedAfter.size;
  if (l.attempts !== ledgers.length) problems.push(`the ledger saw ${ledgers.length} requests, front's calls ${l.attempts}`);
  if (l.fastFailed === 0 || openPeriods < 3) problems.push(`${l.fastFailed} calls rejected in ${openPeriods} open periods`);
  // What tells a rate rule from a consecutive-failure one: a run of
  // failures the breaker let a call through after, as long as the
  // shortest run it opened after; no threshold of failures in a row
  // explains both.
  if (mostLetThrough < minRunBeforeOpen) problems.push(`fewest failures in a row before an open period ${minRunBeforeOpen}, most let through ${mostLetThrough}: a consecutive-failure rule explains the run`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  return {
    scenario: 'opossum',
    description: `Node: front reads the ledger through an opossum 10 CircuitBreaker around a plain call, no retry (errorThresholdPercentage ${LEDGER_BREAKER.errorThresholdPercentage}, volumeThreshold ${LEDGER_BREAKER.volumeThreshold}, a rolling window of ${LEDGER_BREAKER.rollingCountTimeout} ms in ${LEDGER_BREAKER.rollingCountBuckets} buckets, resetTimeout ${LEDGER_BREAKER.resetTimeout} ms, timeout opossum's default 10 s, never reached): on a failed call it opens if more than ${LEDGER_BREAKER.errorThresholdPercentage}% of the calls fired in its window failed, once ${LEDGER_BREAKER.volumeThreshold} were fired there (rejected calls count as fired); it rejects calls for resetTimeout, then lets one probe through (half-open): a success closes it, a failure opens it again. It trips on the share of failed calls, not on failures in a row: in this run it opened after as few as ${minRunBeforeOpen} failure(s) in a row and let a call through after ${mostLetThrough}. The ledger is healthy, flaky (${FLAKY_SHARE * 100}% of requests fail), healthy, down, healthy; requests one at a time, ${PACE_MS} ms apart.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      caller: 'front', callee: 'ledger', operation: '/ledger/:id', method: 'GET', library: null,
      retries: false, max_attempts: 1, exhausted_in_traces: l.failed > 0,
      backoff: { kind: 'none', base_ms: null, multiplier: null, cap_ms: null, jitter: 'none', jitter_fraction: null },
      per_try_timeout_ms: null, retried_status: [], not_retried_status: [...l.statuses].sort(),
      honours_retry_after: false, idempotency_key: false, retry_after_captured: true, retry_after_waits: 0, retries_after_caller_gave_up: 0,
      breaker: {
        library: 'opossum@10 CircuitBreaker',
        error_threshold_percentage: LEDGER_BREAKER.errorThresholdPercentage, volume_threshold: LEDGER_BREAKER.volumeThreshold,
        rolling_window_ms: LEDGER_BREAKER.rollingCountTimeout,
        open_for_ms: LEDGER_BREAKER.resetTimeout, fast_failed_calls: l.fastFailed, open_periods: openPeriods,
        fewest_failures_in_a_row_before_open: minRunBeforeOpen, most_failures_in_a_row_let_through: mostLetThrough,
      },
      attempts: l.attempts, calls: l.calls,
    }],
    paths: [{ services: ['front', 'ledger'], operations: ['/balances/:id', '/ledger/:id'], worst_case_amplification: 1, observed_max_amplification: 1 }],
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
