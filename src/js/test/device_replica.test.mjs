// Unit tests of the device's replica: local writes and their outbox, the
// sequence numbers it hands out, and server rows applied under the pending
// outbox, on both storages (IndexedDB through fake-indexeddb).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';

import { Replica } from '../dist/device/replica.js';
import { MemoryStorage } from '../dist/device/memory_storage.js';
import { IndexedDbStorage } from '../dist/device/indexeddb_storage.js';
import { Device } from '../dist/device/device.js';

const row = (key, table = 'tasks', group = 'team') => ({ group, table, key });
const position = (cursor) => ({ cursor, bootstrapped: true, bootstrapAfter: null, bootstrapCursor: 0 });

const kinds = {
  memory: () => {
    const storage = new MemoryStorage();
    return { open: async () => storage };
  },
  indexeddb: () => {
    const opts = { indexedDB: new IDBFactory(), IDBKeyRange };
    return { open: () => IndexedDbStorage.open('replica', opts) };
  },
};

for (const [kind, make] of Object.entries(kinds)) {
  describe(`replica on ${kind} storage`, () => {
    test('writes are visible at once and reload with their outbox and seq', async () => {
      const { open } = make();
      const storage = await open();
      const r = await Replica.load(storage, 512);
      const writes = [];
      for (let i = 0; i < 40; ++i) writes.push(r.write(row(`k${i}`), { i, title: `t${i}` }));
      assert.deepEqual(JSON.parse(r.getText(row('k7'))), { i: 7, title: 't7' }, 'visible before the commit');
      writes.push(r.write(row('k3'), null));
      await Promise.all(writes);
      assert.equal(r.size, 39);
      assert.equal(r.outboxSize, 41);
      assert.deepEqual(r.entries(2).map((e) => e.seq), [1, 2]);
      assert.equal(r.entries(100).at(-1).value, null);
      assert.equal(await r.acknowledge(41), 41);
      storage.close();

      const again = await Replica.load(await open(), 512);
      assert.equal(again.size, 39);
      assert.equal(again.getText(row('k3')), undefined);
      assert.equal(again.getText(row('k39')), '{"i":39,"title":"t39"}');
      assert.equal(again.outboxSize, 0);
      // The outbox emptied, yet a new write never reuses a seq.
      await again.write(row('new'), 1);
      assert.equal(again.entries(1)[0].seq, 42);
      assert.deepEqual(again.scan('team', 'tasks').slice(0, 2).map((x) => x.key), ['k0', 'k1']);
    });

    test('server rows apply under the pending outbox until it is confirmed', async () => {
      const { open } = make();
      const r = await Replica.load(await open(), 512);
      await r.write(row('mine'), { v: 'local' });
      await r.applyRemote(
        [
          { ...row('mine'), value: { v: 'server' } },
          { ...row('theirs'), value: { v: 'server' } },
        ],
        position(5),
      );
      assert.equal(r.getText(row('mine')), '{"v":"local"}', 'an unconfirmed local write stays visible');
      assert.equal(r.getText(row('theirs')), '{"v":"server"}');
      assert.equal(r.position.cursor, 5);
      await r.acknowledge(1);
      await r.applyRemote([{ ...row('mine'), value: { v: 'server later' } }, { ...row('theirs'), value: null }], position(7));
      assert.equal(r.getText(row('mine')), '{"v":"server later"}', 'once confirmed, the server order wins');
      assert.equal(r.getText(row('theirs')), undefined);
    });

    test('scan returns keys in UTF-8 byte order, the server\'s, also after a reload', async () => {
      const { open } = make();
      const storage = await open();
      const r = await Replica.load(storage, 512);
      const keys = ['\u{10000}', '\ue000', 'b\tc', 'b', '\uffee', '"q', 'b\n'];
      await Promise.all(keys.map((k) => r.write(row(k), k)));
      const expected = keys.slice().sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      assert.deepEqual(expected.slice(-3), ['\ue000', '\uffee', '\u{10000}']);
      assert.deepEqual(r.scan('team', 'tasks').map((x) => x.key), expected);
      assert.deepEqual(r.scan('team', 'tasks').map((x) => JSON.parse(x.value)), expected);
      storage.close();
      const again = await Replica.load(await open(), 512);
      assert.deepEqual(again.scan('team', 'tasks').map((x) => x.key), expected);
    });

    test('bad names and values are refused with nothing changed', async () => {
      const { open } = make();
      const r = await Replica.load(await open(), 512);
      assert.throws(() => r.write(row('k', 'bad table'), 1), (e) => e.code === 'bad_request');
      assert.throws(() => r.write(row(''), 1), (e) => e.code === 'bad_request');
      assert.throws(() => r.write(row('\ud800'), 1), (e) => e.code === 'bad_request');
      assert.throws(() => r.write(row('é'.repeat(513)), 1), (e) => e.code === 'too_large');
      assert.throws(() => r.write(row('k'), { f: () => 1 }), (e) => e.code === 'bad_request');
      assert.equal(r.size, 0);
      assert.equal(r.outboxSize, 0);
    });
  });
}

test('a device without sync is local only and counts its storage', async () => {
  const opts = { indexedDB: new IDBFactory(), IDBKeyRange };
  const storage = await IndexedDbStorage.open('local', opts);
  const device = await Device.open({ deviceId: 'd', sync: false }, storage);
  await device.put(row('a'), { x: 1 });
  assert.deepEqual(device.get(row('a')), { x: 1 });
  assert.equal(device.state, 'offline');
  await assert.rejects(device.waitUntilSynced(10), (e) => e.code === 'bad_request');
  await assert.rejects(device.put(row('a'), null), (e) => e.code === 'bad_request');
  const c = device.counters();
  assert.equal(c.storageTransactions, 2, 'load, then one write');
  assert.equal(c.storageRequests, 1 + 3 + 3, 'open, load (3), write (chunk, outbox, meta)');
  await device.close();
  await assert.rejects(Device.open({ deviceId: '' , sync: false }, new MemoryStorage()), (e) => e.code === 'bad_request');
  await assert.rejects(Device.open({ deviceId: 'd', url: 'http://x' }, new MemoryStorage()), (e) => e.code === 'bad_request');
});

test('a burst of writes shares transactions, each write whole', async () => {
  const opts = { indexedDB: new IDBFactory(), IDBKeyRange };
  const storage = await IndexedDbStorage.open('burst', opts);
  const r = await Replica.load(storage, 4096);
  const before = storage.counters().transactions;
  const writes = [];
  for (let i = 0; i < 200; ++i) writes.push(r.write(row(`k${i}`), { i }));
  // Confirmed before its commit ran: the entries must not be stored at all.
  writes.push(r.acknowledge(150));
  await Promise.all(writes);
  assert.ok(storage.counters().transactions - before <= 2, `${storage.counters().transactions - before} transactions`);
  storage.close();
  const again = await Replica.load(await IndexedDbStorage.open('burst', opts), 4096);
  assert.equal(again.size, 200);
  assert.deepEqual(again.entries(100).map((e) => e.seq), Array.from({ length: 50 }, (_, i) => 151 + i));
});

test('after a failed commit nothing more is committed', async () => {
  const storage = new MemoryStorage();
  let fail = false;
  const real = storage.commit.bind(storage);
  storage.commit = (c) => (fail ? Promise.reject(new Error('disk full')) : real(c));
  const r = await Replica.load(storage, 512);
  await r.write(row('a'), 1);
  fail = true;
  const first = r.write(row('b'), 2);
  const second = r.write(row('c'), 3);
  await assert.rejects(first, /disk full/);
  await assert.rejects(second, /disk full/);
  await assert.rejects(r.write(row('d'), 4), /disk full/); // refused at once now
  assert.equal(r.getText(row('d')), undefined);
  fail = false;
  const again = await Replica.load(storage, 512);
  assert.equal(again.size, 1, 'the storage holds the state before the failure');
  assert.equal(again.outboxSize, 1);
});
