'use strict';
// What every Node scenario's main.js shares: a seeded PRNG for the request
// order, each service started as a child process of service.js beside the
// scenario's main.js, and the driver's uninstrumented requests.

const { fork } = require('node:child_process');
const http = require('node:http');
const path = require('node:path');

// mulberry32: a small seeded PRNG, so the request order is the same every run.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// shuffle permutes xs in place (Fisher–Yates) with rand and returns it.
function shuffle(xs, rand) {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j], xs[i]];
  }
  return xs;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// start runs `node service.js role` from the scenario's directory with env
// added; ready resolves to the port it listens on.
function start(role, env) {
  const child = fork(path.join(path.dirname(require.main.filename), 'service.js'), [role], { env: { ...process.env, ...env } });
  const ready = new Promise((resolve, reject) => {
    child.once('message', (m) => (m.type === 'ready' ? resolve(m.port) : reject(new Error(`${role}: ${JSON.stringify(m)}`))));
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
  });
  return { child, ready };
}

// stop asks a service to flush its spans and resolves to its records.
function stop(svc) {
  return new Promise((resolve) => {
    svc.child.on('message', (m) => { if (m.type === 'records') resolve(m.records); });
    svc.child.send({ type: 'stop' });
  });
}

const driverAgent = new http.Agent({ keepAlive: false });
// send sends the driver's request (method, path p, no body) to the service
// on port and resolves to the status code.
function send(port, method, p, headers = {}) {
  return new Promise((resolve, reject) => {
    http.request({ host: '127.0.0.1', port, method, path: p, headers, agent: driverAgent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    }).on('error', reject).end();
  });
}
// get sends the driver's GET of path p.
const get = (port, p, headers) => send(port, 'GET', p, headers);

// runScripted runs one scripted capture: it starts stock, then front with
// frontEnv(stock's port) added to its environment, and sends the cases
// ({count, method, script}: count root requests each) shuffled by seed,
// paceMs apart, open loop: the i-th is a GET /quotes/{idBase+i} or a POST
// /orders/{idBase+i}, after stock is given the script of sku-{idBase+i}.
// It resolves to what front and stock recorded and the root answers
// counted by status code.
async function runScripted({ cases, seed, paceMs, idBase, frontEnv }) {
  const stock = start('stock', {});
  const sport = await stock.ready;
  const front = start('front', frontEnv(sport));
  const fport = await front.ready;
  const all = cases.flatMap((c) => Array.from({ length: c.count }, () => c));
  shuffle(all, rng(seed));
  const answers = {};
  const sent = [];
  for (const [i, c] of all.entries()) {
    const id = String(idBase + i);
    stock.child.send({ type: 'script', sku: `sku-${id}`, script: c.script });
    sent.push(send(fport, c.method, c.method === 'GET' ? `/quotes/${id}` : `/orders/${id}`)
      .then((code) => { answers[code] = (answers[code] || 0) + 1; }));
    await sleep(paceMs);
  }
  await Promise.all(sent);
  const fronts = await stop(front);
  const stocks = await stop(stock);
  return { fronts, stocks, answers };
}

module.exports = { rng, shuffle, sleep, start, stop, get, send, runScripted };
