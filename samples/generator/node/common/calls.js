'use strict';
// What the truth of the HTTP retry scenarios calling the shared stock
// service (common/service.js: stockServer) shares: each front call matched
// with the requests stock received for it, counted per method.

const round1 = (x) => Math.round(x * 10) / 10;
const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];

// callStats groups stock's records by front's call (x-call-id) and counts,
// per method, the calls, attempts, the most attempts of one call, the
// calls that gave up on a retryable failure after limit(method) attempts,
// and the error statuses stock answered. It returns the attempts of each
// call in arrival order beside the counts, and the problems found (stock
// saw a request of no call).
function callStats(fronts, stocks, limit, retryable) {
  const problems = [];
  const byCall = new Map(fronts.map((r) => [r.call, []]));
  for (const a of stocks) {
    if (!byCall.has(a.call)) problems.push(`stock saw call ${a.call}, which front did not make`);
    else byCall.get(a.call).push(a);
  }
  const edges = {};
  const calls = [];
  for (const rec of fronts) {
    const as = byCall.get(rec.call).sort((x, y) => x.at - y.at);
    const e = edges[rec.method] || (edges[rec.method] = { calls: 0, attempts: 0, exhausted: 0, most: 0, statuses: new Set() });
    e.calls++;
    e.attempts += as.length;
    e.most = Math.max(e.most, as.length);
    for (const a of as) if (a.step !== 'ok' && a.step !== 'pending') e.statuses.add(Number(a.step));
    const last = as.at(-1);
    if (as.length === limit(rec.method) && last.step !== 'ok' && retryable(Number(last.step))) e.exhausted++;
    calls.push({ rec, attempts: as });
  }
  if (stocks.length !== fronts.reduce((n, r) => n + byCall.get(r.call).length, 0)) problems.push(`stock saw ${stocks.length} requests of front's calls' ${[...byCall.values()].flat().length}`);
  return { edges, calls, problems };
}

// splitStatuses splits an edge's error statuses by retryable(status), each
// list sorted.
function splitStatuses(statuses, retryable) {
  const all = [...statuses].sort((a, b) => a - b);
  return { retried: all.filter(retryable), notRetried: all.filter((s) => !retryable(s)) };
}

// unretriedPost is the truth's edge of front's POST /reservations/:sku in
// a scenario whose library retries no POST: base with the counts p
// (callStats) of the POST calls.
function unretriedPost(base, p) {
  return {
    ...base, operation: '/reservations/:sku', method: 'POST', library: null,
    retries: false, max_attempts: 1, exhausted_in_traces: p.exhausted > 0,
    backoff: { kind: 'none', base_ms: null, multiplier: null, cap_ms: null, jitter: 'none', jitter_fraction: null },
    retried_status: [], not_retried_status: [...p.statuses].sort((a, b) => a - b),
    honours_retry_after: false, retry_after_waits: 0,
    attempts: p.attempts, calls: p.calls,
  };
}

// stockPaths is the truth's two paths: GET /quotes/:id through stock's GET,
// allowed maxAttempts, and POST /orders/:id through stock's POST, allowed
// postAttempts; g and p are their counts (callStats).
function stockPaths(maxAttempts, g, postAttempts, p) {
  return [
    { services: ['front', 'stock'], operations: ['/quotes/:id', '/stock/:sku'], worst_case_amplification: maxAttempts, observed_max_amplification: g.most },
    { services: ['front', 'stock'], operations: ['/orders/:id', '/reservations/:sku'], worst_case_amplification: postAttempts, observed_max_amplification: p.most },
  ];
}

module.exports = { callStats, median, round1, splitStatuses, stockPaths, unretriedPost };
