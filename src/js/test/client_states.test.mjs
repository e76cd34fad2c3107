// The client's connection handling against a scripted in-process peer (no
// server, no network): what a real skiffd cannot be made to do on demand —
// send an unreadable frame, refuse a re-login with a chosen code, accept
// and drop at once — and the deadlines and bounds of waiting calls. The
// peer behaves as a browser WebSocket does where it matters: close() with a
// code other than 1000 or 3000-4999 throws.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';

import { Client, SkiffError } from '../dist/index.js';
import { reached } from './support/states.mjs';

const CONNECTING = 0;
const OPEN = 1;
const CLOSED = 3;

/**
 * A WebSocket class whose peer answers each request with `answer(request,
 * socket)`: a reply object (its id is filled in), or undefined for none.
 * `opens(socket)` decides whether a new socket opens. Sockets made are in
 * `Peer.sockets`.
 */
function scriptedPeer({ answer = () => ({ ok: true }), opens = () => true } = {}) {
  const sockets = [];
  const made = [];
  class Peer {
    static sockets = sockets;
    /** Resolves when the `n`th socket (1-based) has been made. */
    static made(n) {
      if (sockets.length >= n) return Promise.resolve(sockets[n - 1]);
      return new Promise((resolve) => made.push({ n, resolve }));
    }

    constructor(url) {
      this.url = url;
      this.readyState = CONNECTING;
      this.onopen = this.onmessage = this.onclose = this.onerror = null;
      this.closedWith = undefined;
      sockets.push(this);
      for (const waiter of made.filter((w) => w.n === sockets.length)) waiter.resolve(this);
      if (opens(this)) {
        queueMicrotask(() => {
          if (this.readyState !== CONNECTING) return;
          this.readyState = OPEN;
          this.onopen?.({});
        });
      }
    }

    send(text) {
      if (this.readyState !== OPEN) throw new Error('not open');
      const request = JSON.parse(text);
      const reply = answer(request, this);
      if (reply !== undefined) this.deliver({ id: request.id, ...reply });
    }

    deliver(reply) {
      const text = typeof reply === 'string' ? reply : JSON.stringify(reply);
      queueMicrotask(() => {
        if (this.readyState === OPEN) this.onmessage?.({ data: text });
      });
    }

    close(code = 1000, reason = '') {
      if (code !== 1000 && (code < 3000 || code > 4999)) {
        throw new Error(`InvalidAccessError: close code ${code} is not allowed`);
      }
      if (this.readyState === CLOSED) return;
      this.closedWith = code;
      this.readyState = CLOSED;
      queueMicrotask(() => this.onclose?.({ code, reason }));
    }

    /** The peer goes away (no closing handshake). */
    drop() {
      if (this.readyState === CLOSED) return;
      this.readyState = CLOSED;
      queueMicrotask(() => this.onclose?.({ code: 1006, reason: '' }));
    }
  }
  return Peer;
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

const url = 'ws://127.0.0.1:9/';

// The client's timers do not hold the process open (a real socket does);
// with a scripted peer this one stands in for it.
const keepAlive = setInterval(() => {}, 1000);
after(() => clearInterval(keepAlive));
const GUARD = { timeout: 20000 };

test('an unreadable reply drops the connection with a code a browser allows', GUARD, async () => {
  const Peer = scriptedPeer({ answer: (r) => (r.op === 'wait' ? undefined : { ok: true }) });
  const c = await Client.connect({ url, WebSocket: Peer, reconnect: { initialDelayMs: 1, maxDelayMs: 5 } });
  const held = rejection(c.call('wait', { since: 0 }));
  const reconnecting = reached(c, 'reconnecting');
  Peer.sockets[0].deliver('this is not JSON');
  const lost = await held;
  assert.equal(lost.code, 'connection_lost');
  assert.match(lost.message, /a reply is not JSON/);
  await reconnecting;
  assert.equal(Peer.sockets[0].closedWith, 4002);
  await reached(c, 'open');
  await c.ping();
  await c.close();
});

test('a call times out from when it was made, also while it waits for a slot', GUARD, async () => {
  // Nothing is answered until the end: the queued call's deadline is a few
  // microseconds after the first's, so the sweep that expires the first may
  // leave it to be sent, and it must time out then too.
  let answering = false;
  const Peer = scriptedPeer({ answer: (r) => (answering && r.op === 'ping' ? { ok: true } : undefined) });
  const c = await Client.connect({ url, WebSocket: Peer, maxInFlight: 1, requestTimeoutMs: 200 });
  const sent = rejection(c.get('t', 'never answered'));
  const queued = rejection(c.ping());
  assert.equal(c.inFlightCount, 1);
  assert.equal(c.waitingCount, 1);
  const [first, second] = await Promise.all([sent, queued]);
  assert.equal(first.code, 'timeout');
  assert.match(first.message, /no reply within 200 ms/);
  assert.equal(second.code, 'timeout');
  assert.match(second.message, /no free slot within 200 ms.*the request was not sent|no reply within 200 ms/);
  assert.equal(c.waitingCount, 0);
  answering = true;
  await c.ping();
  await c.close();
});

test('maxWaiting bounds the calls waiting; more are refused at once', GUARD, async () => {
  const Peer = scriptedPeer({ answer: (r) => (r.op === 'get' ? undefined : { ok: true }) });
  const c = await Client.connect({ url, WebSocket: Peer, maxInFlight: 1, maxWaiting: 2 });
  const calls = [c.get('t', 'a'), c.get('t', 'b'), c.get('t', 'c')].map((p) => rejection(p));
  const refused = await rejection(c.get('t', 'd'));
  assert.equal(refused.code, 'queue_full');
  assert.match(refused.message, /2 calls are already waiting \(option maxWaiting\); the request was not sent/);
  assert.equal(refused.outcomeUnknown, false);
  assert.equal(c.waitingCount, 2);
  await c.close();
  const codes = (await Promise.all(calls)).map((e) => e.code);
  assert.deepEqual(codes, ['connection_lost', 'closed', 'closed']);
});

test('close() stops a reconnect attempt that is still opening', GUARD, async () => {
  const Peer = scriptedPeer({ opens: () => Peer.sockets.length === 1 });
  const c = await Client.connect({ url, WebSocket: Peer, reconnect: { initialDelayMs: 1, maxDelayMs: 5 } });
  Peer.sockets[0].drop();
  const opening = await Peer.made(2);
  assert.equal(opening.readyState, CONNECTING);
  await c.close();
  assert.equal(opening.readyState, CLOSED);
  assert.equal(c.connectionState, 'closed');
  assert.equal(Peer.sockets.length, 2);
});

// Each re-login answer: whether the client keeps trying.
for (const [code, retries] of [
  ['unauthorized', false],
  ['forbidden', false],
  ['bad_request', false],
  ['overloaded', true],
  ['unavailable', true],
  ['internal', true],
  ['rate_limited', true],
]) {
  test(`a re-login refused with ${code} ${retries ? 'is retried' : 'closes the client'}`, GUARD, async () => {
    let logins = 0;
    const Peer = scriptedPeer({
      answer: (r) => {
        if (r.op !== 'login') return { ok: true };
        ++logins;
        // The first login (connect) and the third succeed.
        if (logins !== 2) return { ok: true };
        const error = { code, message: `refused (${code})` };
        if (code === 'rate_limited') error.retry_after_ms = 5;
        return { ok: false, error };
      },
    });
    const c = await Client.connect({
      url,
      WebSocket: Peer,
      user: 'u',
      secret: 's',
      reconnect: { initialDelayMs: 1, maxDelayMs: 5 },
    });
    const reconnecting = reached(c, 'reconnecting');
    Peer.sockets[0].drop();
    await reconnecting;
    const next = reached(c, retries ? 'open' : 'closed');
    const waited = c.ping(); // waits for the new connection
    assert.equal(c.waitingCount, 1);
    await next;
    if (retries) {
      await waited;
      assert.equal(logins, 3);
      assert.equal(Peer.sockets.length, 3);
      // The refused attempt's socket was closed, not left open.
      assert.equal(Peer.sockets[1].readyState, CLOSED);
      await c.close();
    } else {
      const e = await rejection(waited);
      assert.equal(e.code, code);
      assert.equal(logins, 2);
    }
  });
}

test('rate_limited at re-login waits the time the server names', GUARD, async () => {
  let logins = 0;
  let refusedAt = 0;
  let retriedAt = 0;
  const Peer = scriptedPeer({
    answer: (r) => {
      if (r.op !== 'login') return { ok: true };
      ++logins;
      if (logins === 2) {
        refusedAt = performance.now();
        return { ok: false, error: { code: 'rate_limited', message: 'slow down', retry_after_ms: 300 } };
      }
      if (logins === 3) retriedAt = performance.now();
      return { ok: true };
    },
  });
  const c = await Client.connect({ url, WebSocket: Peer, token: 't', reconnect: { initialDelayMs: 1, maxDelayMs: 2 } });
  const open = reached(c, 'open');
  Peer.sockets[0].drop();
  await open;
  assert.equal(logins, 3);
  // The back-off alone would have retried within 2 ms.
  assert.ok(retriedAt - refusedAt >= 290, `retried after ${retriedAt - refusedAt} ms`);
  await c.close();
});

test('a peer that accepts and drops at once does not reset the attempt count', GUARD, async () => {
  const Peer = scriptedPeer({
    answer: (r, socket) => {
      // Every connection after the first goes away once its login is done.
      if (r.op === 'login' && Peer.sockets.length > 1) setTimeout(() => socket.drop(), 0);
      return { ok: true };
    },
    // Bounds a client that would retry for ever: later sockets fail at once.
    opens: (socket) => {
      if (Peer.sockets.length <= 10) return true;
      queueMicrotask(() => socket.drop());
      return false;
    },
  });
  const c = await Client.connect({
    url,
    WebSocket: Peer,
    user: 'u',
    secret: 's',
    reconnect: { initialDelayMs: 1, maxDelayMs: 60000, maxAttempts: 3 },
  });
  const closed = reached(c, 'closed');
  Peer.sockets[0].drop();
  await closed;
  // One socket to connect, then three attempts, each up only for a moment.
  assert.equal(Peer.sockets.length, 4);
  const e = await rejection(c.ping());
  assert.equal(e.code, 'closed');
});
