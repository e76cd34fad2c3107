// Unit tests of the device's row table, member-name dictionary and the two
// storages (IndexedDB through fake-indexeddb). Run after `tsc -p tsconfig.json`.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IDBFactory, IDBKeyRange } from 'fake-indexeddb';

import { MemberNames, ValueError } from '../dist/device/member_names.js';
import { RowTable, compareNames, encodeName, decodeName } from '../dist/device/row_table.js';
import { MemoryStorage } from '../dist/device/memory_storage.js';
import { IndexedDbStorage } from '../dist/device/indexeddb_storage.js';

const name = (key, table = 'tasks', group = 'team') => ({ group, table, key });

describe('MemberNames', () => {
  test('encodes member names as codes and decodes to the same JSON', () => {
    const names = new MemberNames();
    const value = { id: 7, title: 'a "quoted" \t tab', done: false, tags: ['x', { deep: null }], n: -1.5e-7 };
    const text = names.encode(value);
    assert.ok(!text.includes('"title":'), 'member names are coded');
    assert.ok(!text.includes('\n') && !text.includes('\t'));
    assert.equal(names.decode(text), JSON.stringify(value));
    assert.deepEqual(names.list(), ['id', 'title', 'done', 'tags', 'deep', 'n']);
    // A second dictionary loaded from the list reads the same text.
    assert.equal(new MemberNames(names.list()).decode(text), JSON.stringify(value));
  });

  test('text that looks like a name inside a string stays text', () => {
    const names = new MemberNames();
    const value = { a: '"a":"b":', b: '\u0001x' };
    assert.equal(names.decode(names.encode(value)), JSON.stringify(value));
  });

  test('names past the code space are written out', () => {
    const names = new MemberNames();
    const value = {};
    for (let i = 0; i < 300; ++i) value[`m${i}`] = i;
    const text = names.encode(value);
    assert.equal(names.list().length, 28 + 224);
    assert.ok(text.includes('"m299":299'));
    assert.deepEqual(JSON.parse(names.decode(text)), value);
  });

  test('refuses what is not JSON, and nesting past 63 levels', () => {
    const names = new MemberNames();
    assert.throws(() => names.encode({ a: () => 1 }), ValueError);
    assert.throws(() => names.encode(NaN), ValueError);
    assert.throws(() => names.encode(new Date()), ValueError);
    assert.throws(() => names.encode(10n), ValueError);
    let deep = 1;
    for (let i = 0; i < 63; ++i) deep = [deep];
    assert.doesNotThrow(() => names.encode(deep));
    assert.throws(() => names.encode([deep]), (e) => e.code === 'too_large');
  });
});

describe('RowTable', () => {
  const row = (i) => ({ name: encodeName(name(`r${String(i).padStart(5, '0')}`)), value: `{"i":${i},"pad":"${'x'.repeat(100)}"}` });

  test('names round-trip, with keys that hold tabs, quotes and newlines', () => {
    for (const key of ['a', 'tab\there', 'quote"\\"', '"starts quoted', 'line\nbreak', 'é✓😀']) {
      assert.deepEqual(decodeName(encodeName(name(key))), name(key));
    }
    const t = new RowTable(256);
    const keys = ['tab\there', 'quote"\\"', '"q"', 'line\nbreak', 'z\\'];
    t.apply(keys.map((k, i) => ({ name: encodeName(name(k)), value: String(i) })));
    keys.forEach((k, i) => assert.equal(t.get(encodeName(name(k))), String(i)));
  });

  test('applies batches across chunks and reports only the chunks it touched', () => {
    const t = new RowTable(1024);
    const first = t.apply(Array.from({ length: 100 }, (_, i) => row(i)));
    assert.equal(t.size, 100);
    assert.ok(t.chunkCount > 5, `cut into chunks (${t.chunkCount})`);
    assert.equal(first.put.length, t.chunkCount);
    for (let i = 0; i < 100; ++i) assert.equal(t.get(row(i).name), row(i).value);

    const one = t.apply([{ name: row(50).name, value: '"changed"' }]);
    assert.equal(one.put.length, 1, 'a write rewrites one chunk');
    assert.equal(one.deleted.length, 0);
    assert.equal(t.get(row(50).name), '"changed"');

    const del = t.apply(Array.from({ length: 100 }, (_, i) => ({ name: row(i).name, value: null })));
    assert.equal(t.size, 0);
    assert.equal(t.chunkCount, 0);
    assert.equal(del.deleted.length, first.put.length);
  });

  test('scans one table in order, not its neighbours', () => {
    const t = new RowTable(300);
    const writes = [];
    for (const table of ['a', 'ab', 'b']) {
      for (let i = 9; i >= 0; --i) writes.push({ name: encodeName(name(`k${i}`, table)), value: `"${table}${i}"` });
    }
    t.apply(writes);
    const got = [...t.scan('team\tab\t')].map(([n, v]) => [decodeName(n).key, v]);
    assert.deepEqual(got, Array.from({ length: 10 }, (_, i) => [`k${i}`, `"ab${i}"`]));
  });

  test('the last write to a name in one batch wins; load restores any chunk order', () => {
    const t = new RowTable(512);
    t.apply([row(1), { name: row(1).name, value: '1' }, row(2), { name: row(2).name, value: null }]);
    assert.equal(t.get(row(1).name), '1');
    assert.equal(t.get(row(2).name), undefined);
    const big = new RowTable(512);
    const put = big.apply(Array.from({ length: 50 }, (_, i) => row(i))).put;
    const again = new RowTable(512);
    again.load(put.slice().reverse());
    assert.equal(again.size, 50);
    for (let i = 0; i < 50; ++i) assert.equal(again.get(row(i).name), row(i).value);
    assert.ok(again.nextChunkId > Math.max(...put.map((c) => c.id)));
  });

  test('refuses damaged chunk text', () => {
    const t = new RowTable(512);
    assert.throws(() => t.load([{ id: 1, text: 'team\ttasks\t"a"\t1' }]));
  });
});

// One conformance suite over both storages.
const storages = {
  memory: async () => ({ storage: new MemoryStorage(), reopen: (s) => s }),
  indexeddb: async () => {
    const factory = new IDBFactory();
    const opts = { indexedDB: factory, IDBKeyRange };
    const storage = await IndexedDbStorage.open('device', opts);
    return {
      storage,
      reopen: async (s) => {
        s.close();
        return IndexedDbStorage.open('device', opts);
      },
    };
  },
};

for (const [kind, make] of Object.entries(storages)) {
  describe(`${kind} storage`, () => {
    test('a new storage loads empty', async () => {
      const { storage } = await make();
      const state = await storage.load();
      assert.deepEqual(state, { chunks: [], outbox: [], meta: null });
    });

    test('commits land together and load back after a reopen', async () => {
      const { storage, reopen } = await make();
      const meta = { position: { cursor: 9, bootstrapped: true, bootstrapAfter: null, bootstrapCursor: 3 }, lastSeq: 2, names: ['x'] };
      const e = (seq) => ({ seq, group: 'g', table: 't', key: `k${seq}`, value: seq === 2 ? null : `{"v":${seq}}` });
      // Not awaited one by one: commits must still apply in call order.
      const pending = [
        storage.commit({ putChunks: [{ id: 1, text: 'A' }, { id: 2, text: 'B' }], appendOutbox: [e(1)], meta }),
        storage.commit({ putChunks: [{ id: 2, text: 'B2' }], deleteChunks: [1], appendOutbox: [e(2), e(3)] }),
        storage.commit({ dropOutboxThrough: 1 }),
      ];
      await Promise.all(pending);
      const again = await reopen(storage);
      const state = await again.load();
      assert.deepEqual(state.chunks, [{ id: 2, text: 'B2' }]);
      assert.deepEqual(state.outbox, [e(2), e(3)]);
      assert.deepEqual(state.meta, meta);
      again.close();
    });

    test('counts transactions (and IndexedDB requests)', async () => {
      const { storage } = await make();
      const before = storage.counters();
      await storage.commit({ putChunks: [{ id: 1, text: 'A' }], appendOutbox: [{ seq: 1, group: 'g', table: 't', key: 'k', value: '1' }], meta: { position: { cursor: 0, bootstrapped: false, bootstrapAfter: null, bootstrapCursor: 0 }, lastSeq: 1, names: [] } });
      await storage.load();
      const after = storage.counters();
      assert.equal(after.transactions - before.transactions, 2);
      if (kind === 'indexeddb') assert.equal(after.requests - before.requests, 3 + 3, 'put chunk, outbox, meta; 3 reads');
      else assert.equal(after.requests, 0);
    });
  });
}

test('a failed IndexedDB commit rejects and applies nothing', async () => {
  const opts = { indexedDB: new IDBFactory(), IDBKeyRange };
  const storage = await IndexedDbStorage.open('device', opts);
  // A chunk without its key path fails inside the transaction.
  await assert.rejects(storage.commit({ putChunks: [{ id: 1, text: 'A' }, { text: 'no id' }] }), (e) => e.code === 'storage');
  assert.deepEqual((await storage.load()).chunks, []);
  storage.close();
});

test('a blocked IndexedDB open rejects and leaves no connection behind', async () => {
  const real = new IDBFactory();
  // An older page's connection that does not let go on versionchange.
  const old = await new Promise((resolve, reject) => {
    const req = real.open('blocked', 1);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  // The storage asks for a newer version than the old page holds.
  let request;
  const factory = {
    open: (name, version) => (request = real.open(name, version + 1)),
    deleteDatabase: (name) => real.deleteDatabase(name),
  };
  await assert.rejects(IndexedDbStorage.open('blocked', { indexedDB: factory, IDBKeyRange }), (e) => e.code === 'storage');
  // Once the old page closes, the abandoned open goes on and succeeds.
  const opened = new Promise((resolve, reject) => {
    request.addEventListener('success', () => resolve(request.result));
    request.addEventListener('error', () => reject(request.error));
  });
  old.close();
  const db = await opened;
  assert.throws(() => db.transaction(['meta'], 'readonly'), (e) => e.name === 'InvalidStateError', 'the connection was closed');
});

test('rows are kept and scanned in UTF-8 byte order, keys escaped in order', () => {
  const keys = ['a', 'a\u0001', 'a\t', 'a\n', 'a\u000b', 'a b', '"quoted', 'é', '\ue000', '\uffef', '\u{10000}', '\u{1f600}x', 'tab\there', 'z'];
  const utf8 = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b));
  const expected = keys.slice().sort(utf8);
  // UTF-16 order differs: a supplementary character before U+E000.
  assert.notDeepEqual(keys.slice().sort(), expected);
  const t = new RowTable(256);
  const stored = new Map(); // the chunks as a storage would hold them
  const keep = (changes) => {
    for (const id of changes.deleted) stored.delete(id);
    for (const c of changes.put) stored.set(c.id, c.text);
  };
  // In two batches, with chunks small enough to split: the order holds across chunks.
  const value = (i) => `"${'v'.repeat(40)}${i}"`;
  keep(t.apply(keys.slice(0, 7).map((k, i) => ({ name: encodeName(name(k)), value: value(i) }))));
  keep(t.apply(keys.slice(7).map((k, i) => ({ name: encodeName(name(k)), value: value(i + 7) }))));
  assert.ok(t.chunkCount > 1, `${t.chunkCount} chunks`);
  for (const k of keys) assert.deepEqual(decodeName(encodeName(name(k))), name(k));
  for (const k of keys) assert.ok(!/[\t\n]/.test(encodeName(name(k)).slice('team\ttasks\t'.length)), 'no separator in a key');
  const scanned = [...t.scan('team\ttasks\t')].map(([n]) => decodeName(n).key);
  assert.deepEqual(scanned, expected);
  keys.forEach((k, i) => assert.equal(t.get(encodeName(name(k))), value(i)));
  // Reloaded from its chunks in any order, the table keeps that order.
  const again = new RowTable(256);
  again.load([...stored].map(([id, text]) => ({ id, text })).reverse());
  assert.deepEqual([...again.scan('team\ttasks\t')].map(([n]) => decodeName(n).key), expected);
  keys.forEach((k, i) => assert.equal(again.get(encodeName(name(k))), value(i)));
});

test('compareNames orders by code point', () => {
  const pairs = [
    ['\uffff', '\u{10000}'],
    ['\ue000', '\ud800\udc00'],
    ['\ud7ff', '\ue000'],
    ['a', 'ab'],
    ['\u{10000}', '\u{10001}'],
    ['\u{1ffff}', '\u{20000}'],
  ];
  for (const [a, b] of pairs) {
    assert.ok(compareNames(a, b) < 0, `${escape(a)} < ${escape(b)}`);
    assert.ok(compareNames(b, a) > 0);
    assert.equal(Math.sign(compareNames(a, b)), Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
  }
  assert.equal(compareNames('\u{10000}', '\u{10000}'), 0);
});
