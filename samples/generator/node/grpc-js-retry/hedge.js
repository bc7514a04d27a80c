'use strict';
// Scenario grpc-js-hedge (issue 11 item 7, with item 9's shape): the
// grpc-js-retry services, front's channel configured with a service-config
// hedgingPolicy instead of a retryPolicy, and stock run as three replicas
// the channel balances over with round_robin, as hedging is deployed: one
// replica is slow (a GC pause, a hot shard), so a call whose attempt lands
// there is answered by the hedge another replica received. grpc-js 1.14
// (retrying-call.js) starts the first attempt and a timer; each time the
// timer fires (hedgingDelay after the previous attempt started) it starts
// another attempt while the earlier ones still run, up to maxAttempts in
// all (capped at 5 unless the channel option grpc-node.retry_max_attempts_limit
// says otherwise). Every attempt is picked by the load balancer on its own:
// round_robin hands successive picks, whichever calls they are for, to
// successive replicas. The first attempt to answer OK (or to send headers)
// commits the call and the others are cancelled ("Discarded in favor of
// other hedged attempt"); a status in nonFatalStatusCodes starts the next
// attempt at once (after a pushback, if the server sent one) instead of
// ending the call; any other status ends it. The hedges run below the
// client interceptors, so instrumentation-grpc makes one CLIENT span per
// call, and the replicas one SERVER span per attempt under it, overlapping
// in time. A replica does not stop work when a losing attempt is
// cancelled: its SERVER span ends when it answers, after front's CLIENT
// span has ended.
//
// The target is ipv4:127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3: grpc-js's
// static IP resolver (resolver-ip.js) hands the three addresses to the
// balancer the service config's loadBalancingConfig names. Each replica is
// its own process with its own TracerProvider: service.name stock,
// service.instance.id stock-<i>.
//
// main.js runs it (SCENARIO=grpc-js-hedge): this module is its
// configuration, the replicas' behaviour and its truth.

const SEED = 11;
const POLICY = { maxAttempts: 3, hedgingDelay: '0.03s', nonFatalStatusCodes: ['UNAVAILABLE'] };
const SERVICE_CONFIG = {
  loadBalancingConfig: [{ round_robin: {} }],
  methodConfig: [{ name: [{ service: 'retryaudit.Stock' }], hedgingPolicy: POLICY }],
};
const SLOW_MS = 150; // how long a slow answer takes
// The replicas: stock-0 answers three requests in four after SLOW_MS,
// stock-1 fails three in ten with UNAVAILABLE (non-fatal: the next attempt
// starts at once), stock-2 answers every request at once; each draws from
// its own seeded PRNG, one draw per request it receives.
const REPLICAS = [{ slowP: 0.75 }, { unavailableP: 0.3 }, {}];
const REQUESTS = 100; // root requests, open loop
const GAP_MS = 15; // the mean of the exponential gaps between them

const replicas = REPLICAS.map((r, i) => ({
  SERVICE_INSTANCE_ID: `stock-${i}`, STOCK_REPLICA: String(i), STOCK_SEED: String(SEED * 100 + i),
  STOCK_SLOW_MS: String(SLOW_MS), STOCK_SLOW_P: String(r.slowP || 0), STOCK_UNAVAILABLE_P: String(r.unavailableP || 0),
}));

const sec = (s) => Math.round(Number(s.slice(0, -1)) * 1000);
const median = (xs) => xs.slice().sort((x, y) => x - y)[xs.length >> 1];
const round1 = (x) => Math.round(x * 10) / 10;

// buildTruth reads what the replicas received per call: its attempts in
// the order grpc-js sent them, which started while the one before still ran
// or after an earlier one had answered OK (a hedge the timer started) and
// which after it had failed (sent again at
// once on a non-fatal status), and which attempt answered first with OK
// (the one the call committed to); and how many attempts each replica
// received.
function buildTruth(fronts, stocks, answers) {
  const problems = [];
  const byCall = new Map(fronts.map((r) => [r.call, []]));
  for (const a of stocks) byCall.get(a.call).push(a);
  let most = 0, hedgedCalls = 0, exhausted = 0, cancelled = 0, answeredByEarlier = 0;
  const byReplica = REPLICAS.map(() => 0);
  for (const a of stocks) byReplica[a.replica]++;
  const late = [], resent = Array(POLICY.maxAttempts).fill(0);
  const won = Array(POLICY.maxAttempts).fill(0);
  for (const as of byCall.values()) {
    // In the order grpc-js sent them (grpc-previous-rpc-attempts): on a
    // loaded host a replica may see an attempt later than another replica
    // sees the call's next one.
    as.sort((x, y) => x.previous_attempts - y.previous_attempts);
    most = Math.max(most, as.length);
    let hedged = false;
    for (let i = 0; i < as.length; i++) {
      if (as[i].previous_attempts !== i) problems.push(`call ${as[i].call}: attempt ${i} says ${as[i].previous_attempts} previous attempts`);
      if (i === 0) continue;
      // grpc-js commits a call to its first OK answer and sends nothing
      // after it: an attempt sent after an earlier one that answered OK
      // was the hedge timer's, fired before front read that answer (its
      // event loop busy on a loaded host), however the replicas' times lie.
      const afterOK = as.slice(0, i).some((p) => p.step !== 'unavailable');
      if (afterOK || as.slice(0, i).some((p) => as[i].at < p.end)) hedged = true;
      if (as[i].at < as[i - 1].end) late.push(as[i].at - as[i - 1].at - sec(POLICY.hedgingDelay));
      else if (!afterOK) resent[i]++;
    }
    if (hedged) hedgedCalls++;
    if (as.length === POLICY.maxAttempts && as.every((a) => a.step === 'unavailable')) exhausted++;
    const oks = as.filter((a) => a.step !== 'unavailable');
    if (oks.length) {
      const w = as.indexOf(oks.reduce((x, y) => (y.end < x.end ? y : x)));
      won[w]++;
      // An earlier attempt answered while a later one still ran.
      if (as.slice(w + 1).some((a) => a.at < as[w].end)) answeredByEarlier++;
    }
    cancelled += as.filter((a) => a.cancelled).length;
  }
  // Exhaustion is left to chance (every attempt of a call on stock-1, each
  // failing): the truth says whether it happened.
  if (most !== POLICY.maxAttempts || late.length === 0 || cancelled === 0 || answeredByEarlier === 0 || byReplica.includes(0)) {
    problems.push(`most attempts in one call ${most}, hedges ${late.length}, cancelled ${cancelled}, answered by an earlier attempt ${answeredByEarlier}, attempts by replica ${byReplica}`);
  }
  if (problems.length) throw new Error(`the run did not show what the scenario is for:\n  ${problems.join('\n  ')}`);
  return {
    scenario: 'grpc-js-hedge',
    description: 'Node: front calls stock over gRPC with @grpc/grpc-js 1.14, whose service-config hedgingPolicy (3 attempts in all, a hedge 30 ms after the previous attempt started, UNAVAILABLE non-fatal: the next attempt at once) hedges below instrumentation-grpc: one CLIENT span per call, overlapping stock SERVER spans under it; the losers are cancelled, and stock, answering anyway, ends their spans after the call has ended. stock is three replicas (service.instance.id stock-0..2) the channel picks each attempt from round robin: stock-0 answers 75% of requests after 150 ms, stock-1 fails 30% with UNAVAILABLE, stock-2 answers at once; root requests arrive open loop, 15 ms apart on average.',
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
      waits_by_attempt_index: resent, attempts_by_replica: byReplica,
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
  seed: SEED, serviceConfig: SERVICE_CONFIG, replicas, settleMS: 2 * SLOW_MS,
  requests: REQUESTS, gapMS: (rand) => -Math.log(1 - rand()) * GAP_MS,
  buildTruth,
};
