'use strict';
// Scenario undici-retryagent (issue 11 item 10): undici's RetryAgent on a
// reused keep-alive socket retries in the context of the request that
// opened the socket, so retries land in another trace.
//
//   driver ─► front ─► backend
//     GET /orders/:id    GET /stock/:sku   (front: RetryAgent, statusCodes [503],
//                                            over Agent({connections: 1}))
//
// Run by the Go generator (`go run . -out .. -node undici-retryagent`), which
// receives the spans over OTLP/HTTP and writes the trace files; this program
// writes truth.json's content to $TRUTH_OUT. The driver is not instrumented
// (it loads no OpenTelemetry), so front's SERVER span is each trace's root.
//
// Root requests come in groups, each starting on a fresh socket (the
// backend closes the connection after the last response of a group):
//
//   late    A's stock lookup opens the socket and succeeds; A answers; then
//           B's lookup fails k times. B's first attempt is in B's trace, its
//           retries run in the socket's context: in A's trace, under A's
//           SERVER span, which had ended.
//   repeat  A looks up the stock of order r and then works 400 ms; 40 ms
//           after A, B asks for the same order, and its lookup fails k
//           times: B's retries land under A's SERVER span while A still
//           runs, repeating A's answered request.
//   own     one request whose lookup opens the socket and fails k times: its
//           retries run in its own context and are in its own trace.
//
// Whether each attempt landed in its own trace is read from the traceparent
// the backend received, never assumed: truth.json counts each shape from
// what happened, and the run fails if a group did not show its shape.

const fs = require('node:fs');
const { rng, shuffle, sleep, start, stop, get } = require('../common/harness');

const SEED = 11;
const RETRY = { maxRetries: 3, minTimeout: 20, timeoutFactor: 2, maxTimeout: 1000, statusCodes: [503] };
const WORK_MS = 400; // how long a repeat group's A works after its lookup
const B_AFTER_MS = 40; // when a repeat group's B is sent after its A
const GAP_MS = 30; // between groups, for the closed connection to go
const WARMUPS = 3; // single successful requests first, while node compiles its hot paths
const GROUPS = [
  ...[1, 2, 3, 2].map((k) => ({ shape: 'late', k })),
  ...[1, 2, 3, 1].map((k) => ({ shape: 'repeat', k })),
  // k = 4 fails every attempt maxRetries+1 allows: the call gives up.
  ...[1, 2, 3, 4, 2, 3, 4].map((k) => ({ shape: 'own', k })),
];

// failing scripts k failures; the last response of the group closes the
// connection. With k > maxRetries every attempt fails.
function failing(k) {
  const n = Math.min(k, RETRY.maxRetries + 1);
  const s = Array.from({ length: n }, () => ({ status: 503 }));
  if (k <= RETRY.maxRetries) s.push({ status: 200 });
  s[s.length - 1].close = true;
  return s;
}

async function main() {
  const backend = start('backend', {});
  const bport = await backend.ready;
  const front = start('front', { BACKEND_URL: `http://127.0.0.1:${bport}`, RETRY_AGENT_OPTIONS: JSON.stringify(RETRY) });
  const fport = await front.ready;
  const script = (sku, s) => backend.child.send({ type: 'script', sku, script: s });

  const groups = shuffle(GROUPS.map((g, i) => ({ ...g, id: i + 1 })), rng(SEED));
  const answers = {};
  const answer = (code) => { answers[code] = (answers[code] || 0) + 1; };
  const want = new Map(); // order → the shape its group must show
  for (let i = 1; i <= WARMUPS; i++) {
    script(`sku-w${i}`, [{ status: 200, close: true }]);
    want.set(`w${i}`, 'own');
    answer(await get(fport, `/orders/w${i}`));
    await sleep(GAP_MS);
  }
  for (const g of groups) {
    if (g.shape === 'late') {
      const a = `l${g.id}a`, b = `l${g.id}b`;
      script(`sku-${b}`, failing(g.k));
      want.set(a, 'late').set(b, 'late');
      answer(await get(fport, `/orders/${a}`));
      answer(await get(fport, `/orders/${b}`));
    } else if (g.shape === 'repeat') {
      const o = `r${g.id}`;
      script(`sku-${o}`, [{ status: 200 }, ...failing(g.k)]);
      want.set(o, 'repeat');
      const first = get(fport, `/orders/${o}`, { 'x-work-ms': String(WORK_MS) });
      await sleep(B_AFTER_MS);
      const second = get(fport, `/orders/${o}`);
      for (const code of await Promise.all([first, second])) answer(code);
    } else {
      const o = `o${g.id}`;
      script(`sku-${o}`, failing(g.k));
      want.set(o, 'own');
      answer(await get(fport, `/orders/${o}`));
    }
    await sleep(GAP_MS);
  }
  const fronts = await stop(front);
  const backs = await stop(backend);
  const truth = buildTruth(fronts, backs, want, answers);
  fs.writeFileSync(process.env.TRUTH_OUT, JSON.stringify(truth));
}

function buildTruth(fronts, backs, want, answers) {
  const byTrace = new Map(fronts.map((r) => [r.trace, r]));
  const byCall = new Map(fronts.map((r) => [r.call, { rec: r, attempts: [] }]));
  for (const a of backs) byCall.get(a.call).attempts.push(a);
  const problems = [];
  let late = 0, repeated = 0, own = 0, attempts = 0, exhausted = 0, most = 0, lateMS = 0, gaveUp = 0, ownMost = 0;
  for (const { rec, attempts: as } of byCall.values()) {
    as.sort((x, y) => x.at - y.at);
    attempts += as.length;
    most = Math.max(most, as.length);
    if (as.length === RETRY.maxRetries + 1 && as.every((a) => a.status === 503)) exhausted++;
    for (let i = 1; i < as.length; i++) {
      // The backend answers at once: the gap between two arrivals is the
      // wait plus one round trip; how much it exceeds the policy's wait.
      const intended = Math.min(RETRY.minTimeout * RETRY.timeoutFactor ** (i - 1), RETRY.maxTimeout);
      lateMS = Math.max(lateMS, as[i].at - as[i - 1].at - intended);
    }
    ownMost = Math.max(ownMost, as.filter((a) => a.trace === rec.trace).length);
    for (const a of as) {
      if (a.at > rec.end) gaveUp++; // a retry after the caller had answered its own caller
      if (a.trace === rec.trace) { own++; continue; }
      const host = byTrace.get(a.trace);
      if (!host) { problems.push(`call ${rec.call}: an attempt in trace ${a.trace}, which no front request has`); continue; }
      const shape = a.at > host.end ? 'late' : 'repeat';
      if (shape === 'late') late++; else repeated++;
      if (want.get(rec.order) !== shape) problems.push(`call ${rec.call} (${want.get(rec.order)} group): a retry leaked as ${shape}`);
    }
    const leaked = as.some((a) => a.trace !== rec.trace);
    const retried = as.length > 1;
    if (want.get(rec.order) === 'own' && leaked) problems.push(`call ${rec.call}: own group, but a retry leaked`);
    if (want.get(rec.order) !== 'own' && retried && !leaked) problems.push(`call ${rec.call}: ${want.get(rec.order)} group, but no retry leaked`);
  }
  if (most !== RETRY.maxRetries + 1 || exhausted === 0) problems.push(`most attempts in one call ${most}, exhausted calls ${exhausted}: want ${RETRY.maxRetries + 1} and some`);
  if (late === 0 || repeated === 0) problems.push(`leaks: ${late} late, ${repeated} repeated; want both shapes`);
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  const lib = 'undici RetryAgent (undici@7)';
  return {
    scenario: 'undici-retryagent',
    description: 'Node: front looks stock up through undici RetryAgent (4 attempts on 503, 20 ms ×2) over a one-connection keep-alive Agent; retries of a request that reuses another request\'s socket run in that request\'s context and land in its trace, under its SERVER span after it ended (late) or while it still runs (repeating its answered request).',
    root_requests: fronts.length,
    root_answers: answers,
    context_leaks: { late, repeated, spans: 2 * (late + repeated) },
    // The traces of the calls whose retries leaked hold only their first
    // attempt: no model built from the calls as traced reproduces them.
    calibration: { reproducible: false, because: `${late + repeated} retries ran in other requests' contexts; the calls that made them show only their first attempt` },
    edges: [{
      caller: 'front', callee: 'backend', operation: '/stock/:sku', method: 'GET', library: lib,
      retries: true, max_attempts: RETRY.maxRetries + 1, exhausted_in_traces: exhausted > 0,
      backoff: { kind: 'exponential', base_ms: RETRY.minTimeout, multiplier: RETRY.timeoutFactor, cap_ms: RETRY.maxTimeout, jitter: 'none', jitter_fraction: null },
      per_try_timeout_ms: null, retried_status: [503], not_retried_status: [],
      honours_retry_after: true, idempotency_key: false, wait_late_ms: Math.round(lateMS * 10) / 10,
      retry_after_captured: true, retry_after_waits: 0,
      calls: fronts.length, attempts, attempts_in_own_trace: own, retries_after_caller_gave_up: gaveUp,
    }],
    paths: [{ services: ['front', 'backend'], operations: ['/orders/:id', '/stock/:sku'], worst_case_amplification: RETRY.maxRetries + 1,
      observed_max_amplification: ownMost }],
  };
}

main().catch((err) => { console.error(err.stack || String(err)); process.exit(1); });
