'use strict';
// Scenario got-retry (issue 11 items 1 and 2): got's built-in retry with
// its defaults, whose waits are exponential with additive noise (1000 ms,
// 2000 ms, … + U[0, 100) ms) and which waits what a Retry-After names
// instead; no span records the header. got never retries a POST.
//
//   driver ─► front ─► stock
//     GET /quotes/:id    GET /stock/:sku           (got defaults: 3 attempts)
//     POST /orders/:id   POST /reservations/:sku   (got: POST not retried)
//
// Root requests arrive open loop, PACE_MS apart, so got's second-long waits
// overlap and the run takes seconds. Run by the Go generator (`go run . -out
// .. -node got-retry`), which receives the spans over OTLP/HTTP and writes
// the trace files; this program writes truth.json's content to $TRUTH_OUT
// from got's defaults, the delays got published for each retry on its
// diagnostics channel, and the requests stock received. The driver is not
// instrumented: front's SERVER span is the root.

const fs = require('node:fs');
const { runScripted } = require('../common/harness');
const { median, round1, stockPaths, unretriedPost } = require('../common/calls');

const SEED = 14;
const PACE_MS = 40; // between root requests
// got 14's defaults (source/core/options.js, calculate-retry-delay.js).
const GOT = { limit: 2, baseMS: 1000, multiplier: 2, noiseMS: 100 };
// Cases: the method, and a script for the request's sku, each entry one
// request stock receives. "429" answers with Retry-After: 1 after a 503,
// where got's own wait would be 2 s and more.
const CASES = [
  { count: 7, method: 'GET', script: [] },
  { count: 8, method: 'GET', script: ['503'] },
  { count: 6, method: 'GET', script: ['503', '503'] },
  { count: 3, method: 'GET', script: ['503', '503', '503'] }, // every attempt fails: the call gives up
  { count: 3, method: 'GET', script: ['503', '429'] },
  { count: 2, method: 'GET', script: ['400'] },
  { count: 5, method: 'POST', script: [] },
  { count: 3, method: 'POST', script: ['503'] }, // got does not retry a POST
];

async function main() {
  const { fronts, stocks, answers } = await runScripted({
    cases: CASES, seed: SEED, paceMs: PACE_MS, idBase: 4001,
    frontEnv: (port) => ({ STOCK_URL: `http://127.0.0.1:${port}` }),
  });
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(buildTruth(fronts, stocks, answers)));
}


function buildTruth(fronts, stocks, answers) {
  const problems = [];
  const byCall = new Map(fronts.map((r) => [r.call, []]));
  for (const a of stocks) byCall.get(a.call).push(a);
  const maxAttempts = GOT.limit + 1;
  const edge = () => ({ calls: 0, attempts: 0, exhausted: 0, most: 0, statuses: new Set() });
  const edges = { GET: edge(), POST: edge() };
  const waits = Array(maxAttempts).fill(0);
  let retryAfterWaits = 0;
  const late = [], lateTop = [];
  for (const rec of fronts) {
    const as = byCall.get(rec.call).sort((x, y) => x.at - y.at);
    const e = edges[rec.method];
    e.calls++;
    e.attempts += as.length;
    e.most = Math.max(e.most, as.length);
    for (const a of as) if (a.step !== 'ok') e.statuses.add(Number(a.step));
    const limit = rec.method === 'GET' ? maxAttempts : 1;
    const last = as.at(-1).step;
    if (as.length === limit && (last === '503' || last === '429')) e.exhausted++;
    if (rec.delays.length !== as.length - 1) problems.push(`${rec.call}: ${as.length} attempts, ${rec.delays.length} retries published`);
    for (const [i, d] of rec.delays.entries()) {
      const gap = as[i + 1].at - as[i].at;
      if (d.retryAfter) {
        retryAfterWaits++;
        if (d.delay !== 1000) problems.push(`${rec.call}: Retry-After: 1 waited ${d.delay} ms`);
        continue;
      }
      const nominal = GOT.baseMS * GOT.multiplier ** i;
      if (d.retry !== i + 1 || d.delay < nominal || d.delay >= nominal + GOT.noiseMS) problems.push(`${rec.call}: retry ${d.retry} waited ${d.delay} ms`);
      waits[i + 1]++;
      // How much later the attempt came than the delay got chose, and
      // than the longest its noise allows.
      late.push(gap - d.delay);
      lateTop.push(gap - nominal - GOT.noiseMS);
    }
  }
  const g = edges.GET, p = edges.POST;
  if (stocks.length !== g.attempts + p.attempts) problems.push(`stock saw ${stocks.length} requests, front's calls ${g.attempts + p.attempts}`);
  if (g.exhausted === 0 || g.most !== maxAttempts) problems.push(`GET: most attempts ${g.most}, exhausted ${g.exhausted}`);
  if (p.most !== 1 || p.exhausted === 0) problems.push(`POST: most attempts ${p.most}, failed unretried ${p.exhausted}`);
  if (retryAfterWaits === 0 || waits[1] < 8 || waits[2] < 4) problems.push(`waits ${JSON.stringify(waits)}, Retry-After waits ${retryAfterWaits}`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const retried = [...g.statuses].filter((s) => s === 429 || s >= 500).sort();
  const base = { caller: 'front', callee: 'stock', per_try_timeout_ms: null, idempotency_key: false, retry_after_captured: false, retries_after_caller_gave_up: 0 };
  return {
    scenario: 'got-retry',
    description: 'Node: front calls stock through got 14 with its default retry: GET retried twice on 429/5xx, waiting 1000·2^(n-1) ms + U[0, 100) ms, or the Retry-After a 429 names (1 s, where got would wait 2 s and more; no span records the header); POST never retried. Root requests arrive open loop, 40 ms apart.',
    root_requests: fronts.length,
    root_answers: answers,
    edges: [{
      ...base, operation: '/stock/:sku', method: 'GET', library: 'got@14 (default retry)',
      retries: true, max_attempts: maxAttempts, exhausted_in_traces: g.exhausted > 0,
      backoff: { kind: 'exponential', base_ms: GOT.baseMS, multiplier: GOT.multiplier, cap_ms: null, jitter: 'additive', jitter_fraction: null, jitter_additive_ms: GOT.noiseMS },
      retried_status: retried, not_retried_status: [...g.statuses].filter((s) => !retried.includes(s)).sort(),
      honours_retry_after: true, retry_after_waits: retryAfterWaits,
      attempts: g.attempts, calls: g.calls,
      waits_by_attempt_index: waits,
      wait_late_ms: round1(Math.max(...lateTop)),
      wait_late_median_ms: round1(median(late)),
    }, unretriedPost(base, p)],
    paths: stockPaths(maxAttempts, g, 1, p),
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
