'use strict';
// Scenarios ky-retry, ky-retry-captured and ky-retry-jitter (issue 11
// items 1 and 2): ky 2's
// built-in retry over the global fetch, its default schedule (0.3 s ·
// 2^(n-1) before retry n) held under backoffLimit, and the waits a
// Retry-After names instead on a 429: a server-directed wait among
// backoff waits. ky-retry leaves the header off the spans, as
// instrumentation-undici does by default; ky-retry-captured
// (CAPTURE_RETRY_AFTER=1) records it on the CLIENT spans; ky-retry-jitter
// turns on ky's jitter option (full jitter, no backoffLimit), the
// server's 1 s waits unjittered among waits drawn from [0, 300) and
// [0, 600).
//
//   driver ─► front ─► stock
//     GET /quotes/:id    GET /stock/:sku           (ky: 5 attempts, 300 ms
//                                                   ×2 up to 1.5 s, no jitter)
//     POST /orders/:id   POST /reservations/:sku   (ky: POST not retried)
//
// Root requests arrive open loop, PACE_MS apart. Run by the Go generator
// (`go run . -out .. -node ky-retry`), which receives the spans over
// OTLP/HTTP and writes the trace files; this program writes truth.json's
// content to $TRUTH_OUT from ky's options, the retries its beforeRetry hook
// saw and the requests stock received. The driver is not instrumented:
// front's SERVER span is the root.

const fs = require('node:fs');
const { runScripted } = require('../common/harness');
const { callStats, median, round1, splitStatuses, stockPaths, unretriedPost } = require('../common/calls');

const SCENARIO = process.env.SCENARIO;
const CAPTURED = SCENARIO === 'ky-retry-captured';
// ky-retry-jitter: ky's own jitter option (jitter: true, a full jitter:
// each wait drawn from [0, delay)), no backoffLimit (ky's default,
// none), so the ceilings are 300, 600, 1200, 2400 ms.
const JITTER = SCENARIO === 'ky-retry-jitter';
const SEED = 21;
const PACE_MS = 40; // between root requests
// ky's options: 4 retries, its default delay 0.3 s · 2^(n-1) before retry
// n held under backoffLimit, no jitter (ky's default), Retry-After
// honoured on 413, 429 and 503 with no maxRetryAfter (ky's defaults).
const KY = JITTER ? { limit: 4, jitter: true } : { limit: 4, backoffLimit: 1500 };
const KY_DEFAULT = { baseMS: 300, multiplier: 2, statusCodes: [408, 413, 429, 500, 502, 503, 504], afterStatusCodes: [413, 429, 503] };
// kyDelay is the wait ky's default delay sets before retry n, before its
// jitter (with jitter: true, the ceiling of a wait drawn from [0, it)).
const kyDelay = (n) => Math.min(KY.backoffLimit ?? Infinity, KY_DEFAULT.baseMS * KY_DEFAULT.multiplier ** (n - 1));
// Cases: the method, and a script for the request's sku, each entry one
// request stock receives. "429" answers with Retry-After: 1, whose 1 s
// wait stands where ky's schedule waits 300 ms (first retry) or 600 ms
// (second).
const CASES = [
  { count: 7, method: 'GET', script: [] },
  { count: 7, method: 'GET', script: ['503'] },
  { count: 5, method: 'GET', script: ['503', '503'] },
  { count: 3, method: 'GET', script: ['503', '503', '503'] },
  { count: 3, method: 'GET', script: ['503', '503', '503', '503'] },
  { count: 3, method: 'GET', script: ['503', '503', '503', '503', '503'] }, // every attempt fails: the call gives up
  { count: 3, method: 'GET', script: ['429'] },
  { count: 2, method: 'GET', script: ['503', '429'] },
  { count: 2, method: 'GET', script: ['400'] },
  { count: 4, method: 'POST', script: [] },
  { count: 3, method: 'POST', script: ['503'] }, // ky does not retry a POST
];

async function main() {
  const { fronts, stocks, answers } = await runScripted({
    cases: CASES, seed: SEED, paceMs: PACE_MS, idBase: 5001,
    frontEnv: (port) => ({ STOCK_URL: `http://127.0.0.1:${port}`, KY_RETRY: JSON.stringify(KY), CAPTURE_RETRY_AFTER: CAPTURED ? '1' : '0' }),
  });
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, answers)));
}

function buildTruth(fronts, stocks, answers) {
  const maxAttempts = KY.limit + 1;
  const retryable = (s) => KY_DEFAULT.statusCodes.includes(s);
  const { edges, calls, problems } = callStats(fronts, stocks, (m) => (m === 'GET' ? maxAttempts : 1), retryable);
  const waits = Array(maxAttempts).fill(0);
  let retryAfterWaits = 0;
  const late = [];
  for (const { rec, attempts: as } of calls) {
    const draws = rec.draws.slice(); // ky's jittered waits, in order (ky-retry-jitter)
    if (rec.retries.length !== as.length - 1) problems.push(`${rec.call}: ${as.length} attempts, ${rec.retries.length} retries seen by beforeRetry`);
    for (const [i, r] of rec.retries.entries()) {
      const gap = as[i + 1].at - as[i].at;
      const directed = r.retryAfter !== null && KY_DEFAULT.afterStatusCodes.includes(r.status);
      const ceiling = directed ? Number(r.retryAfter) * 1000 : kyDelay(r.retry);
      const delay = JITTER && !directed ? draws.shift() : ceiling;
      if (r.retry !== i + 1 || r.status !== Number(as[i].step) || !(delay <= ceiling) || gap < delay) problems.push(`${rec.call}: retry ${r.retry} after ${r.status} came ${gap.toFixed(1)} ms after the try before, ky's wait ${delay} ms`);
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
  if (JITTER && calls.some(({ rec }) => rec.draws.length !== rec.retries.filter((r) => !(r.retryAfter !== null && KY_DEFAULT.afterStatusCodes.includes(r.status))).length)) problems.push('ky drew a jitter for other than every backoff wait');
  if (retryAfterWaits === 0 || waits[1] < 8 || waits[2] < 4 || waits[3] < 4 || waits[4] < 4) problems.push(`waits ${JSON.stringify(waits)}, Retry-After waits ${retryAfterWaits}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const gs = splitStatuses(g.statuses, retryable);
  const base = { caller: 'front', callee: 'stock', per_try_timeout_ms: null, idempotency_key: false, retry_after_captured: CAPTURED, retries_after_caller_gave_up: 0 };
  return {
    scenario: SCENARIO,
    description: `Node: front calls stock through ky 2.1 over the global fetch (instrumentation-undici: a CLIENT span per try), retry ${JSON.stringify(KY)}: GET retried on 408, 413, 429, 500, 502, 503, 504, waiting ${JITTER ? "a full jitter, U[0, d), of ky's default d = 300·2^(n-1) ms (ceilings 300, 600, 1200, 2400)" : `ky's default 300·2^(n-1) ms held under ${KY.backoffLimit} ms (300, 600, 1200, 1500), no jitter`}, or the Retry-After a 429 names (1 s, unjittered)${CAPTURED ? '; the header is recorded on the CLIENT spans' : '; no span records the header'}; POST never retried (ky retries no POST); ky's timeout off. Root requests arrive open loop, ${PACE_MS} ms apart.`,
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      ...base, operation: '/stock/:sku', method: 'GET', library: `ky@2 (retry ${JSON.stringify(KY)})`,
      retries: true, max_attempts: maxAttempts, exhausted_in_traces: g.exhausted > 0,
      backoff: { kind: 'exponential', base_ms: KY_DEFAULT.baseMS, multiplier: KY_DEFAULT.multiplier, cap_ms: KY.backoffLimit ?? null, jitter: JITTER ? 'full' : 'none', jitter_fraction: null },
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
