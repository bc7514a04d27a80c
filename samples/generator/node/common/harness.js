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

module.exports = { rng, shuffle, sleep, start, stop, get, send };
