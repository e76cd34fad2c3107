// Unit tests of the device's sync loop against an in-process stand-in for
// the server's sync ops (push keeps the highest seq per device and drops
// anything at or below it as a retry, as skiffd does), with storages whose
// commits can be held back or made to fail: only stored writes are pushed,
// a failed commit stops the loop, close() lets queued commits land, and the
// loop's waiting leaves no listeners behind. Run after `tsc -p tsconfig.json`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';

import { SkiffError } from '../dist/errors.js';
import { Device } from '../dist/device/device.js';
import { IndexedDbStorage } from '../dist/device/indexeddb_storage.js';
import { MemoryStorage } from '../dist/device/memory_storage.js';
import { Replica } from '../dist/device/replica.js';
import { SyncLoop } from '../dist/device/sync_loop.js';

// Hang guard only: every step here finishes in milliseconds.
const GUARD_MS = 20000;

const row = (key) => ({ group: 'team', table: 'tasks', key });

function guard(promise, what) {
  let timer;
  const timeUp = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${GUARD_MS} ms`)), GUARD_MS);
  });
  return Promise.race([promise, timeUp]).finally(() => clearTimeout(timer));
}

// The sync ops of one server: nothing to bootstrap or pull, pushes applied
// in seq order per device, waits held until their connection closes.
class FakeServer {
  constructor({ refuseConnect = false } = {}) {
    this.refuseConnect = refuseConnect;
    this.rows = new Map(); // key -> value
    this.lastSeq = new Map(); // device -> highest seq seen
    this.pushedSeqs = [];
    this.connects = 0;
    this.calls = { push: 0, pull: 0, bootstrap: 0, wait: 0 };
    this.watchers = [];
  }

  // Resolves when `predicate()` holds after some call or connect.
  when(predicate) {
    if (predicate()) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push({ predicate, resolve }));
  }

  notify() {
    this.watchers = this.watchers.filter((w) => (w.predicate() ? (w.resolve(), false) : true));
  }

  connect = async () => {
    ++this.connects;
    this.notify();
    if (this.refuseConnect) throw new SkiffError('not_connected', 'refused by the test');
    return new FakeConnection(this);
  };
}

class FakeConnection {
  constructor(server) {
    this.server = server;
    this.closed = false;
    this.heldWaits = [];
  }

  async call(op, fields) {
    if (this.closed) throw new SkiffError('closed', 'closed');
    const s = this.server;
    ++s.calls[op];
    s.notify();
    switch (op) {
      case 'bootstrap':
        return { rows: [], cursor: 0, next: null };
      case 'pull':
        return { changes: [], cursor: 0, more: false };
      case 'push': {
        let last = s.lastSeq.get(fields.device) ?? 0;
        let applied = 0;
        for (const c of fields.changes) {
          s.pushedSeqs.push(c.seq);
          if (c.seq <= last) continue; // a retry, as the server sees it
          last = c.seq;
          ++applied;
          s.rows.set(c.key, c.value);
        }
        s.lastSeq.set(fields.device, last);
        return { applied, last_seq: last, cursor: 0 };
      }
      case 'wait':
        return new Promise((_, reject) => this.heldWaits.push(reject));
      default:
        throw new SkiffError('bad_request', `unknown op ${op}`);
    }
  }

  async close() {
    this.closed = true;
    for (const reject of this.heldWaits) reject(new SkiffError('connection_lost', 'closed'));
  }
}

function makeLoop(replica, server, extra = {}) {
  return new SyncLoop(
    replica,
    {
      deviceId: 'dev',
      connect: server.connect,
      page: 100,
      maxPush: 100,
      waitTimeoutMs: 20000,
      backoffMinMs: 1,
      backoffMaxMs: 1,
      ...extra,
    },
    () => ({}),
  );
}

// A MemoryStorage whose commits can be held: a held commit applies nothing
// until released (never, unless release() is called).
function holdableStorage() {
  const storage = new MemoryStorage();
  const real = storage.commit.bind(storage);
  const control = { holding: false, held: [] };
  storage.commit = (change) => {
    if (!control.holding) return real(change);
    return new Promise((resolve) => control.held.push(() => real(change).then(resolve)));
  };
  control.release = () => {
    control.holding = false;
    for (const go of control.held.splice(0)) go();
  };
  return { storage, control };
}

test('only stored writes are pushed, and a reload never reuses a pushed seq', async () => {
  const { storage, control } = holdableStorage();
  const replica = await Replica.load(storage, 512);
  const server = new FakeServer();
  const loop = makeLoop(replica, server);
  loop.start();
  await replica.write(row('a'), 1); // seq 1, stored
  await loop.waitUntilSynced(GUARD_MS);
  assert.deepEqual(server.pushedSeqs, [1]);
  control.holding = true;
  replica.write(row('b'), 2); // seq 2: its commit never lands
  // A round after the write: it pushes (or not) before it pulls.
  const pulls = server.calls.pull;
  loop.poke();
  await guard(server.when(() => server.calls.pull > pulls), 'the round after the write');
  assert.deepEqual(server.pushedSeqs, [1], 'seq 2 is not stored, so it is not pushed');
  assert.equal(replica.outboxSize, 1);
  assert.notEqual(loop.state, 'online', 'not up to date while a write is unstored');
  await loop.close();

  // The reload finds seq 1 as the last one handed out: seq 2 is handed out
  // again, and the server must take it as new.
  control.holding = false;
  const again = await Replica.load(storage, 512);
  assert.equal(again.getText(row('b')), undefined, 'the held commit never landed');
  await again.write(row('c'), 3);
  assert.deepEqual(again.entries(10).map((e) => e.seq), [2]);
  const loop2 = makeLoop(again, server);
  loop2.start();
  await loop2.waitUntilSynced(GUARD_MS);
  assert.equal(server.rows.get('c'), 3, 'the new write with seq 2 was applied, not dropped as a retry');
  assert.equal(again.outboxSize, 0);
  await loop2.close();
});

test('a slow commit is pushed as soon as it lands', async () => {
  const { storage, control } = holdableStorage();
  const replica = await Replica.load(storage, 512);
  const server = new FakeServer();
  const loop = makeLoop(replica, server);
  loop.start();
  await loop.waitUntilUpToDate(GUARD_MS);
  control.holding = true;
  const stored = replica.write(row('slow'), 'v');
  const synced = loop.waitUntilSynced(GUARD_MS);
  // The poke ran a round; it must not have pushed the unstored entry.
  await guard(server.when(() => server.calls.pull >= 2), 'the poked round');
  assert.deepEqual(server.pushedSeqs, []);
  control.release();
  await stored;
  await synced;
  assert.deepEqual(server.pushedSeqs, [1]);
  assert.equal(server.rows.get('slow'), 'v');
  assert.equal(loop.state, 'online');
  await loop.close();
});

test('a failed write commit stops the loop: state failed, waits reject at once', async () => {
  const storage = new MemoryStorage();
  const real = storage.commit.bind(storage);
  const diskFull = new Error('disk full');
  let fail = false;
  storage.commit = (c) => (fail ? Promise.reject(diskFull) : real(c));
  const replica = await Replica.load(storage, 512);
  const server = new FakeServer();
  const loop = makeLoop(replica, server);
  loop.start();
  await loop.waitUntilUpToDate(GUARD_MS);
  fail = true;
  const write = replica.write(row('x'), 1);
  const waiting = loop.waitUntilSynced(GUARD_MS); // in progress when the commit fails
  await assert.rejects(write, diskFull);
  await assert.rejects(waiting, (e) => e === diskFull);
  assert.equal(loop.state, 'failed');
  assert.equal(loop.lastError, diskFull);
  // The loop ended by itself (from its held wait), and does not retry.
  await guard(loop.finished, 'the loop ending');
  const requests = { ...server.calls };
  await assert.rejects(loop.waitUntilSynced(GUARD_MS), (e) => e === diskFull);
  await assert.rejects(loop.waitUntilUpToDate(GUARD_MS), (e) => e === diskFull);
  assert.deepEqual(server.calls, requests, 'no request after the failure');
  assert.deepEqual(server.pushedSeqs, []);
  await loop.close();
  assert.equal(loop.state, 'failed');
});

test("a failure of the loop's own commit (a pulled page) stops it too", async () => {
  const storage = new MemoryStorage();
  const diskFull = new Error('disk full');
  storage.commit = () => Promise.reject(diskFull);
  const replica = await Replica.load(storage, 512);
  const server = new FakeServer();
  const loop = makeLoop(replica, server);
  loop.start();
  // The bootstrap's position is the first commit.
  await assert.rejects(loop.waitUntilUpToDate(GUARD_MS), (e) => e === diskFull);
  await guard(loop.finished, 'the loop ending');
  assert.equal(loop.state, 'failed');
  assert.equal(server.connects, 1, 'no reconnect after the failure');
  assert.equal(server.calls.bootstrap, 1, 'no retry after the failure');
  await loop.close();
});

test('close() lets every queued commit land before it closes the storage', async () => {
  const opts = { indexedDB: new IDBFactory(), IDBKeyRange };
  const device = await Device.open({ deviceId: 'd', sync: false }, await IndexedDbStorage.open('drain', opts));
  // The second write's commit is queued behind the first one's transaction.
  const writes = [device.put(row('a'), 1), device.put(row('b'), 2), device.delete(row('a'))];
  await device.close();
  await Promise.all(writes);
  const again = await Device.open({ deviceId: 'd', sync: false }, await IndexedDbStorage.open('drain', opts));
  assert.equal(again.get(row('a')), undefined);
  assert.equal(again.get(row('b')), 2);
  assert.equal(again.outboxSize, 3);
  await again.close();
  await again.close(); // idempotent
});

test('backing off while offline keeps a bounded number of listeners', async () => {
  const replica = await Replica.load(new MemoryStorage(), 512);
  const server = new FakeServer({ refuseConnect: true });
  const loop = makeLoop(replica, server);
  loop.start();
  // A caller waiting all along, woken by every failed round.
  const waiting = loop.waitUntilUpToDate(GUARD_MS);
  waiting.catch(() => {});
  await guard(server.when(() => server.connects >= 200), '200 failed rounds');
  assert.ok(loop.listenerCount <= 3, `${loop.listenerCount} listeners after 200 rounds`);
  assert.equal(loop.state, 'offline');
  assert.equal(loop.lastError.code, 'not_connected');
  await loop.close();
  await assert.rejects(waiting, (e) => e.code === 'unavailable');
  assert.equal(loop.listenerCount, 0);
});

test('interrupting a held wait many times keeps one wait and a bounded number of listeners', async () => {
  const replica = await Replica.load(new MemoryStorage(), 512);
  const server = new FakeServer();
  const loop = makeLoop(replica, server);
  loop.start();
  await loop.waitUntilUpToDate(GUARD_MS);
  for (let i = 0; i < 100; ++i) await loop.waitUntilSynced(GUARD_MS);
  await guard(server.when(() => server.calls.pull >= 101), 'the rounds');
  assert.equal(server.calls.wait, 1, 'the held wait is reused, not stacked');
  assert.ok(loop.listenerCount <= 3, `${loop.listenerCount} listeners after 100 interruptions`);
  await loop.close();
});
