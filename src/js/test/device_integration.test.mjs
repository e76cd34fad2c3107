// The device against a real skiffd from Node (real WebSocket, no mocks):
// bootstrap and its resumption, pull through the held wait, push, conflicts,
// offline writes pushed exactly once across a server restart, and refused
// entries. Run after `tsc -p tsconfig.json`; needs build/ci's skiffd and
// skiff (or $SKIFFD and $SKIFF).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';

import { Device, MemoryStorage, IndexedDbStorage } from '../dist/device/index.js';
import { startSkiffd } from './support/skiffd.mjs';
import { changesSince, connect, readBack, rowKey, seed, taskRow } from './support/device_sync.mjs';

// Hang guards only: each of these finishes in well under a second here.
const GUARD_MS = 30000;

const task = (i) => ({ group: 'team', table: 'tasks', key: rowKey(i) });

function openDevice(server, user, deviceId, storage, extra = {}) {
  return Device.open(
    { url: server.url, user, secret: server.secrets[user], deviceId, WebSocket, backoffMaxMs: 200, ...extra },
    storage,
  );
}

// Resolves when `predicate()` holds after a batch of server rows applied;
// rejects past the hang guard.
function remoteUntil(device, predicate) {
  let timer;
  let stop = () => {};
  return new Promise((resolve, reject) => {
    if (predicate()) return resolve();
    timer = setTimeout(() => reject(new Error(`no such change within ${GUARD_MS} ms`)), GUARD_MS);
    stop = device.onRemoteChanges(() => {
      if (predicate()) resolve();
    });
  }).finally(() => {
    clearTimeout(timer);
    stop();
  });
}

describe('device against skiffd', () => {
  let server;
  let admin; // a plain client of alice's, to seed and to read back
  const devices = [];

  before(async () => {
    server = await startSkiffd({
      users: [
        { name: 'alice', groups: ['team', 'solo'] },
        { name: 'bob', groups: ['team'] },
      ],
    });
    admin = await connect(server, 'alice');
    await seed(admin, { device: 'seeder', to: 2500 });
  });

  after(async () => {
    for (const d of devices) await d.close();
    await admin?.close();
    await server?.stop();
  });

  const track = (d) => (devices.push(d), d);

  test('bootstrap pages every row in, then pulls from the first page cursor', async () => {
    const device = track(await openDevice(server, 'alice', 'boot', new MemoryStorage(), { page: 1000 }));
    await device.waitUntilUpToDate(GUARD_MS);
    assert.equal(device.size, 2500);
    for (let i = 0; i < 2500; ++i) assert.deepEqual(device.get(task(i)), taskRow(i));
    const c = device.counters();
    assert.equal(c.bootstraps, 3, '3 pages of 1,000');
    assert.equal(c.rowsReceived, 2500);
    assert.ok(c.pulls >= 1);
    assert.equal(c.connects, 1);
    assert.ok(c.framesSent >= c.requests && c.bytesReceived > 2500 * 200, 'wire counted');
    assert.equal(device.state, 'online');
    const { cursor } = await changesSince(admin, 0);
    assert.equal(device.cursor, cursor);
  });

  test('a bootstrap interrupted after some pages resumes where it stopped', async () => {
    const opts = { indexedDB: new IDBFactory(), IDBKeyRange };
    const first = await openDevice(server, 'alice', 'resume', await IndexedDbStorage.open('resume', opts), { page: 300 });
    await remoteUntil(first, () => first.size >= 900);
    await first.close(); // a page reload, as far as the storage can tell
    const second = track(
      await openDevice(server, 'alice', 'resume', await IndexedDbStorage.open('resume', opts), { page: 300 }),
    );
    assert.ok(second.size >= 900 && second.size < 2500, `resumed with ${second.size} rows`);
    await second.waitUntilUpToDate(GUARD_MS);
    assert.equal(second.size, 2500);
    assert.ok(second.counters().rowsReceived <= 2500 - 900, 'no page fetched twice but the one in flight');
    for (let i = 0; i < 2500; ++i) assert.deepEqual(second.get(task(i)), taskRow(i));
  });

  test('a held wait brings another writer change without a local poke', async () => {
    // The server holds the wait longer than the guard: only a wake-up answers it in time.
    const device = track(await openDevice(server, 'bob', 'bob-1', new MemoryStorage(), { waitTimeoutMs: 60000 }));
    await device.waitUntilUpToDate(GUARD_MS);
    const pullsBefore = device.counters().pulls;
    const arrived = remoteUntil(device, () => device.get(task(5))?.title === 'changed by alice');
    await admin.call('push', {
      device: 'seeder',
      changes: [{ seq: 100000, ...task(5), value: { ...taskRow(5), title: 'changed by alice' } }],
    });
    await arrived;
    const c = device.counters();
    // The one held before the change, and perhaps the next one already.
    assert.ok(c.waits >= 1 && c.waits <= 2, `waits: ${c.waits}`);
    assert.equal(c.pulls, pullsBefore + 1);
  });

  test('writes are pushed in batches of maxPush and land on the server', async () => {
    const device = track(await openDevice(server, 'alice', 'pusher', new MemoryStorage(), { maxPush: 500 }));
    await device.waitUntilUpToDate(GUARD_MS);
    const writes = [];
    for (let i = 3000; i < 4200; ++i) writes.push(device.put(task(i), taskRow(i)));
    writes.push(device.delete(task(1)));
    await Promise.all(writes);
    await device.waitUntilSynced(GUARD_MS);
    const c = device.counters();
    assert.equal(c.changesPushed, 1201);
    assert.ok(c.pushes >= 3, `1,201 entries at 500 a push (${c.pushes} pushes)`);
    assert.equal(device.outboxSize, 0);
    const rows = await readBack(admin);
    for (let i = 3000; i < 4200; ++i) assert.deepEqual(rows.get(`team/tasks/${rowKey(i)}`), taskRow(i));
    assert.equal(rows.has(`team/tasks/${rowKey(1)}`), false);
  });

  test('conflicting writes converge on the server order', async () => {
    const a = track(await openDevice(server, 'alice', 'conflict-a', new MemoryStorage()));
    const b = track(await openDevice(server, 'bob', 'conflict-b', new MemoryStorage()));
    await Promise.all([a.waitUntilUpToDate(GUARD_MS), b.waitUntilUpToDate(GUARD_MS)]);
    const x = task(7);
    // One after the other: the later push wins everywhere.
    await a.put(x, { by: 'a' });
    await a.waitUntilSynced(GUARD_MS);
    await b.put(x, { by: 'b' });
    assert.deepEqual(b.get(x), { by: 'b' }, 'a local write shows at once');
    await b.waitUntilSynced(GUARD_MS);
    await a.waitUntilSynced(GUARD_MS);
    assert.deepEqual(a.get(x), { by: 'b' });
    // At once: whichever the server numbered later wins, on both devices.
    await Promise.all([a.put(x, { by: 'a2' }), b.put(x, { by: 'b2' })]);
    await Promise.all([a.waitUntilSynced(GUARD_MS), b.waitUntilSynced(GUARD_MS)]);
    await Promise.all([a.waitUntilSynced(GUARD_MS), b.waitUntilSynced(GUARD_MS)]);
    const onServer = (await readBack(admin)).get(`team/tasks/${x.key}`);
    assert.ok(['a2', 'b2'].includes(onServer.by));
    assert.deepEqual(a.get(x), onServer);
    assert.deepEqual(b.get(x), onServer);
  });

  test('a change the server refuses for good is dropped and counted; the rest goes through', async () => {
    const device = track(await openDevice(server, 'bob', 'bob-refused', new MemoryStorage()));
    await device.waitUntilUpToDate(GUARD_MS);
    await device.put(task(5001), { n: 1 });
    await device.put({ group: 'solo', table: 'tasks', key: 'not-bobs' }, { n: 2 }); // bob is not in 'solo'
    await device.put(task(5002), { n: 3 });
    await device.waitUntilSynced(GUARD_MS);
    const c = device.counters();
    assert.equal(c.rejected, 1);
    assert.equal(c.changesPushed, 2);
    assert.equal(device.outboxSize, 0);
    const rows = await readBack(admin);
    assert.deepEqual(rows.get(`team/tasks/${rowKey(5001)}`), { n: 1 });
    assert.deepEqual(rows.get(`team/tasks/${rowKey(5002)}`), { n: 3 });
    assert.equal(rows.has('solo/tasks/not-bobs'), false);
  });

  // Last: it restarts the server.
  test('offline writes are kept and pushed exactly once when the server returns', async () => {
    const device = track(await openDevice(server, 'alice', 'offline', new MemoryStorage()));
    await device.waitUntilUpToDate(GUARD_MS);
    const { cursor: before } = await changesSince(admin, 0);
    await admin.close();
    await server.kill(); // no goodbye: the device finds out from its connection
    const keys = [];
    for (let i = 0; i < 30; ++i) {
      keys.push(rowKey(8000 + i));
      await device.put(task(8000 + i), { offline: i });
    }
    assert.equal(device.outboxSize, 30);
    // The server is gone, so no round can finish, however long this waits.
    await assert.rejects(device.waitUntilSynced(300), (e) => e.code === 'unavailable');
    await server.restart();
    await device.waitUntilSynced(GUARD_MS);
    assert.equal(device.outboxSize, 0);
    assert.equal(device.counters().changesPushed, 30);
    admin = await connect(server, 'alice');
    const { changes } = await changesSince(admin, before);
    const mine = changes.filter((c) => keys.includes(c.key));
    assert.equal(mine.length, 30, 'each offline write is in the log once');
    mine.forEach((c) => assert.deepEqual(c.value, { offline: Number(c.key.slice(1)) - 8000 }));
    // A retry of the same entries (a reply the device never saw) applies nothing.
    const retry = await admin.call('push', {
      device: 'offline',
      changes: mine.map((c, i) => ({ seq: i + 1, group: c.group, table: c.table, key: c.key, value: c.value })),
    });
    assert.equal(retry.applied, 0);
  });
});
