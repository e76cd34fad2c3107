// Losing the server: a call in flight fails with connection_lost, the client
// reconnects on its own once skiffd is back on the same port and logs in
// again, and calls made meanwhile wait and then succeed; or, when it may
// not reconnect, gives up, fails clearly. Each test kills the real skiffd
// child (SIGKILL: no goodbye frame) or freezes it (SIGSTOP).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

import { Client, SkiffError } from '../dist/node.js';
import { SKIFF, startSkiffd } from './support/skiffd.mjs';
import { reached } from './support/states.mjs';

// Hang guard only: a healthy run of any test here takes a few seconds.
const GUARD = { timeout: 60000 };

let server;

before(async () => {
  server = await startSkiffd({
    users: [
      { name: 'alice', read: '*', write: '*' },
      { name: 'temp', read: '*', write: '*' },
    ],
  });
});

after(async () => {
  await server?.stop();
});

// Resolves once the kernel reports `pid` stopped: a signal is delivered
// asynchronously, and a server still running would answer.
async function stopped(pid) {
  for (let polls = 0; polls < 2000; ++polls) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('T')) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.fail(`process ${pid} did not stop`);
}

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof SkiffError, `not a SkiffError: ${e}`);
    return e;
  }
  assert.fail('resolved, expected an error');
}

// A wait the server holds for a minute: in flight for as long as the test needs.
async function heldWait(client) {
  const wait = client.call('wait', { since: 0, timeout_ms: 60000 });
  // Requests of a connection are read in order: once this ping is answered,
  // the wait has reached the server and is held there.
  await client.ping();
  assert.equal(client.inFlightCount, 1);
  // Wrapped: an async function returning the promise itself would adopt it.
  return { wait };
}

test('killed and restarted on the same port: in flight lost, then calls succeed after a new login', GUARD, async () => {
  const c = await Client.connect({
    url: server.url,
    user: 'alice',
    secret: server.secrets.alice,
    reconnect: { initialDelayMs: 10, maxDelayMs: 200 },
    requestTimeoutMs: 30000,
  });
  const states = [];
  c.onStateChange((s) => states.push(s));
  await c.set('kept', 'k', { v: 1 });
  const { wait } = await heldWait(c);
  // Handlers go on before the failure they wait for, so it is never unhandled.
  const lostWait = rejection(wait);
  const reconnecting = reached(c, 'reconnecting');
  await server.kill();
  const lost = await lostWait;
  assert.equal(lost.code, 'connection_lost');
  assert.equal(lost.op, 'wait');
  assert.equal(lost.outcomeUnknown, true);
  assert.match(lost.message, /whether it was applied is unknown/);
  await reconnecting;
  assert.equal(c.connectionState, 'reconnecting');

  // Made while the server is down: waits for the new connection.
  const during = c.get('kept', 'k');
  assert.equal(c.waitingCount, 1);
  const open = reached(c, 'open');
  await server.restart();
  await open;
  // get needs a session: the client logged in again by itself.
  assert.deepEqual(await during, { v: 1 });
  await c.set('kept', 'k2', 2);
  assert.equal(await c.get('kept', 'k2'), 2);
  assert.deepEqual(states, ['reconnecting', 'open']);
  await c.close();
  assert.deepEqual(states, ['reconnecting', 'open', 'closed']);
});

test('reconnect off: the loss closes the client for good', GUARD, async () => {
  const c = await Client.connect({ url: server.url, user: 'alice', secret: server.secrets.alice, reconnect: false });
  const { wait } = await heldWait(c);
  const lost = rejection(wait);
  const closed = reached(c, 'closed');
  await server.kill();
  assert.equal((await lost).code, 'connection_lost');
  await closed;
  const later = await rejection(c.ping());
  assert.equal(later.code, 'closed');
  assert.equal(later.outcomeUnknown, false);
  await server.restart();
  await c.close();
});

test('maxAttempts: gives up, fails the calls that waited with not_connected', GUARD, async () => {
  const c = await Client.connect({
    url: server.url,
    user: 'alice',
    secret: server.secrets.alice,
    reconnect: { initialDelayMs: 5, maxDelayMs: 20, maxAttempts: 3 },
  });
  const states = [];
  c.onStateChange((s) => states.push(s));
  const closed = reached(c, 'closed');
  const reconnecting = reached(c, 'reconnecting');
  await server.kill();
  await reconnecting;
  const waited = rejection(c.ping());
  await closed;
  const e = await waited;
  assert.equal(e.code, 'not_connected');
  assert.match(e.message, /gave up reconnecting after 3 attempts/);
  assert.deepEqual(states, ['reconnecting', 'closed']);
  assert.equal((await rejection(c.ping())).code, 'closed');
  await server.restart();
});

test('a call waiting for the connection is bounded by requestTimeoutMs', GUARD, async () => {
  const c = await Client.connect({
    url: server.url,
    user: 'alice',
    secret: server.secrets.alice,
    // Also the bound on connecting and logging in: ample for a loaded machine.
    requestTimeoutMs: 2000,
    reconnect: { initialDelayMs: 10, maxDelayMs: 50 },
  });
  const reconnecting = reached(c, 'reconnecting');
  await server.kill();
  await reconnecting;
  const e = await rejection(c.ping());
  assert.equal(e.code, 'not_connected');
  assert.match(e.message, /no connection within 2000 ms; the request was not sent/);
  assert.equal(c.connectionState, 'reconnecting');
  const open = reached(c, 'open');
  await server.restart();
  await open;
  await c.ping();
  await c.close();
});

test('a server that stops answering: timeout, and the connection is kept', GUARD, async () => {
  const c = await Client.connect({
    url: server.url,
    user: 'alice',
    secret: server.secrets.alice,
    requestTimeoutMs: 2000,
  });
  process.kill(server.pid, 'SIGSTOP');
  let e;
  try {
    await stopped(server.pid);
    e = await rejection(c.ping());
  } finally {
    process.kill(server.pid, 'SIGCONT');
  }
  assert.equal(e.code, 'timeout');
  assert.equal(e.outcomeUnknown, true);
  assert.equal(c.connectionState, 'open');
  await c.ping(); // the late reply of the first is dropped, this one matched
  await c.close();
});

test('a login refused on reconnect closes the client with the server error', GUARD, async () => {
  const c = await Client.connect({
    url: server.url,
    user: 'temp',
    secret: server.secrets.temp,
    reconnect: { initialDelayMs: 5, maxDelayMs: 20 },
  });
  const reconnecting = reached(c, 'reconnecting');
  await server.kill();
  await reconnecting;
  execFileSync(SKIFF, ['--store', server.store, 'user', 'delete', 'temp'], { stdio: 'ignore' });
  const waited = rejection(c.ping());
  const closed = reached(c, 'closed');
  await server.restart();
  await closed;
  const e = await waited;
  assert.equal(e.code, 'unauthorized');
  assert.match(e.message, /the request was not sent/);
});

test('a server that takes the TCP connection but never the handshake: connect rejects, the process lives on', GUARD, async () => {
  // A stopped skiffd still has its listening socket: the kernel completes
  // the TCP handshake, the WebSocket one never comes. Closing the socket
  // still connecting makes 'ws' emit an error, which must not end Node.
  process.kill(server.pid, 'SIGSTOP');
  let e;
  try {
    await stopped(server.pid);
    e = await rejection(Client.connect({ url: server.url, user: 'alice', secret: server.secrets.alice, requestTimeoutMs: 300 }));
  } finally {
    process.kill(server.pid, 'SIGCONT');
  }
  assert.equal(e.code, 'not_connected');
  assert.match(e.message, /not open within 300 ms/);
  // Still here, and the server (now running again) is reachable.
  const c = await Client.connect({ url: server.url, user: 'alice', secret: server.secrets.alice });
  await c.ping();
  await c.close();
});
