// Client.watch against a real skiffd: events of a key, a prefix and a table
// in order with their versions; initial values first; no event after
// unwatch; and resuming after a lost connection. The watcher reaches the
// server through a TCP relay the test can cut, so the server keeps running
// (and keeps its history) while the client is away: the changes made
// meanwhile come first after the reconnect, with no gap and no duplicate.
// A server restarted (a new run, versions from 1 again) gets a resync.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect } from 'node:net';

import { Client } from '../dist/node.js';
import { startSkiffd } from './support/skiffd.mjs';
import { reached } from './support/states.mjs';

// Hang guard only: a healthy run of any test here takes well under a second.
const GUARD = { timeout: 60000 };

let server;

before(async () => {
  server = await startSkiffd({
    users: [
      { name: 'alice', read: '*', write: '*' },
      { name: 'writer', read: '', write: 'scores' },
    ],
  });
});

after(async () => {
  await server?.stop();
});

// A TCP relay to skiffd on 127.0.0.1: cut() ends every connection through
// it (the client sees its socket close), and it goes on accepting new ones.
async function startRelay(port) {
  const pairs = new Set();
  const relay = createServer((inbound) => {
    const outbound = connect(port, '127.0.0.1');
    const pair = [inbound, outbound];
    pairs.add(pair);
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    const end = () => {
      pairs.delete(pair);
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('error', end).on('close', end);
    outbound.on('error', end).on('close', end);
  });
  await new Promise((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    url: `ws://127.0.0.1:${relay.address().port}/`,
    cut() {
      for (const [a, b] of [...pairs]) {
        a.destroy();
        b.destroy();
      }
    },
    close: () => new Promise((resolve) => relay.close(resolve)),
  };
}

// Collects events; next(n) resolves with the next n of them.
function collector() {
  const events = [];
  let want = null;
  const check = () => {
    if (want !== null && events.length >= want.n) {
      const { n, resolve } = want;
      want = null;
      resolve(events.splice(0, n));
    }
  };
  return {
    onEvent: (e) => {
      events.push(e);
      check();
    },
    next(n) {
      return new Promise((resolve) => {
        want = { n, resolve };
        check();
      });
    },
    pending: () => events.length,
  };
}

async function connectAs(user, url = server.url) {
  return Client.connect({
    url,
    user,
    secret: server.secrets[user],
    reconnect: { initialDelayMs: 10, maxDelayMs: 100 },
  });
}

test('a key watch gets every change in order, with increasing versions', GUARD, async () => {
  const watcher = await connectAs('alice');
  const writer = await connectAs('writer');
  const got = collector();
  await watcher.watch('scores', { key: 'ann' }, got.onEvent);
  for (let i = 1; i <= 20; ++i) await writer.set('scores', 'ann', { points: i });
  await writer.set('scores', 'bob', { points: 99 }); // another key: not seen
  await writer.delete('scores', 'ann');
  const events = await got.next(21);
  for (let i = 0; i < 20; ++i) {
    assert.equal(events[i].event, 'change');
    assert.equal(events[i].key, 'ann');
    assert.deepEqual(events[i].value, { points: i + 1 });
    if (i > 0) assert.ok(events[i].version > events[i - 1].version);
  }
  assert.equal(events[20].deleted, true);
  assert.equal(events[20].key, 'ann');
  await watcher.close();
  await writer.close();
});

test('a prefix watch with initial values: initial events, ready, then changes', GUARD, async () => {
  const writer = await connectAs('writer');
  await writer.set('scores', 'g1/ann', 1);
  await writer.set('scores', 'g1/bob', 2);
  await writer.set('scores', 'g2/cid', 3);
  const watcher = await connectAs('alice');
  const got = collector();
  await watcher.watch('scores', { prefix: 'g1/', initial: true }, got.onEvent);
  const first = await got.next(3);
  const initial = first.filter((e) => e.event === 'initial').map((e) => [e.key, e.value]);
  assert.deepEqual(initial.sort(), [
    ['g1/ann', 1],
    ['g1/bob', 2],
  ]);
  assert.equal(first[2].event, 'ready');
  await writer.set('scores', 'g2/cid', 4); // outside the prefix
  await writer.set('scores', 'g1/dee', 5);
  const [change] = await got.next(1);
  assert.equal(change.key, 'g1/dee');
  assert.equal(change.value, 5);
  await watcher.close();
  await writer.close();
});

test('after unwatch no event of the watch arrives', GUARD, async () => {
  const watcher = await connectAs('alice');
  const writer = await connectAs('writer');
  const stopped = collector();
  const kept = collector();
  const handle = await watcher.watch('scores', { key: 'u1' }, stopped.onEvent);
  await watcher.watch('scores', { key: 'u2' }, kept.onEvent);
  await writer.set('scores', 'u1', 1);
  await stopped.next(1);
  await watcher.unwatch(handle);
  await writer.set('scores', 'u1', 2);
  await writer.set('scores', 'u2', 3);
  // u2's event follows u1's second change on the same connection: once it
  // arrived, an event of the ended watch would have too.
  const [event] = await kept.next(1);
  assert.equal(event.value, 3);
  assert.equal(stopped.pending(), 0);
  await watcher.close();
  await writer.close();
});

test('a lost connection resumes after the last version: no gap, no duplicate', GUARD, async () => {
  const relay = await startRelay(new URL(server.url).port);
  const watcher = await connectAs('alice', relay.url);
  const writer = await connectAs('writer');
  const got = collector();
  await watcher.watch('scores', { prefix: 'r/' }, got.onEvent);
  for (let i = 1; i <= 3; ++i) await writer.set('scores', `r/${i}`, i);
  const before = await got.next(3);

  const reconnecting = reached(watcher, 'reconnecting');
  relay.cut();
  await reconnecting;
  // Made while the watcher is away; the server holds them for `since`.
  for (let i = 4; i <= 6; ++i) await writer.set('scores', `r/${i}`, i);
  for (let i = 7; i <= 8; ++i) await writer.set('scores', `r/${i}`, i); // may race the resume

  const after = await got.next(5);
  const all = [...before, ...after];
  assert.deepEqual(
    all.map((e) => e.value),
    [1, 2, 3, 4, 5, 6, 7, 8],
  );
  for (const e of all) assert.equal(e.event, 'change');
  for (let i = 1; i < all.length; ++i) assert.ok(all[i].version > all[i - 1].version, 'versions increase');
  await watcher.close();
  await writer.close();
  await relay.close();
});

test('a restarted server cannot resume: the watch gets resync, then changes', GUARD, async () => {
  const watcher = await connectAs('alice');
  const got = collector();
  await watcher.watch('scores', { key: 'rs' }, got.onEvent);
  const writer = await connectAs('writer');
  await writer.set('scores', 'rs', 1);
  await got.next(1);
  await writer.close();

  const open = reached(watcher, 'open');
  await server.kill();
  await server.restart();
  await open;
  const [resync] = await got.next(1);
  assert.equal(resync.event, 'resync');
  const again = await connectAs('writer');
  await again.set('scores', 'rs', 2);
  const [change] = await got.next(1);
  assert.equal(change.event, 'change');
  assert.equal(change.value, 2);
  await watcher.close();
  await again.close();
});
