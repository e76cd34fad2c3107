// The browser device's test and benchmark page. Served with the compiled
// client (dist/) as ES modules by device_browser.test.mjs; a benchmark
// driver may load it the same way and call window.skiffBench.
//
// window.skiffBench (every function resolves to a plain object of figures;
// `db` names the IndexedDB database, `deviceId` the device):
//   bootstrap({url, user, secret, deviceId, db, page?, chunkChars?})
//       deletes `db`, opens a device on it and waits until it is up to date.
//       -> {ms, rows, bootstraps, rowsReceived, bytesReceived,
//           idbTransactions, idbRequests, chunks, chars}; the device is closed.
//   open({db, deviceId, check?})
//       opens the stored device without sync and times it (storage open +
//       load + ready). check: n verifies rows 0..n-1 hold taskRow(i).
//       -> {ms, rows, idbRequests, idbTransactions, mismatches}; closed after.
//   heap({db, deviceId})
//       JS heap taken by an opened device: usedJSHeapSize after gc() before
//       and after the open, and what its close gave back (needs
//       --js-flags=--expose-gc and --enable-precise-memory-info).
//       -> {bytes, freedOnClose, rows, bytesPer10kRows, textChars,
//           indexBytes (ArrayBuffers, outside the JS heap), chunks}.
//   start({url, user, secret, deviceId, db}) -> {rows, outbox, state}
//       opens the device with sync and keeps it as the page's device; does
//       not wait for the server (it may be down).
//   write({from, to, deletes?}) -> {outbox, state}
//       puts taskRow(i) with title 'written i' for i in [from, to) and
//       deletes the keys in `deletes` on the page's device.
//   synced({timeoutMs}) -> {counters, outbox, state, cursor}
//       waits until the page's device pushed everything and pulled.
//   upToDate({timeoutMs}) -> same, once up to date since it opened.
//   rows() -> [[key, jsonText], ...] of team/tasks on the page's device.
//   push({n, from, oneByOne?}) -> {ms, n, rowsPerSecond, pushes,
//           changesPushed, idbTransactions}
//       writes n rows on the page's device (online) and times until synced:
//       all at once (pushed maxPush a request), or oneByOne (each write
//       pushed and synced before the next: one push request per row).
//   stop() -> {} closes the page's device.

import { Device, IndexedDbStorage } from '/dist/device/index.js';
import { rowKey, taskRow } from '/support/device_rows.mjs';

const GROUP = 'team';
const TABLE = 'tasks';
const name = (key) => ({ group: GROUP, table: TABLE, key });
let device = null;

// Equal as JSON values (the server may order object members otherwise).
function sameJson(a, b) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
}

function figures(d) {
  const c = d.counters();
  return { counters: c, outbox: d.outboxSize, state: d.state, cursor: d.cursor, rows: d.size };
}

async function bootstrap({ url, user, secret, deviceId, db, page, chunkChars }) {
  await IndexedDbStorage.delete(db);
  const t0 = performance.now();
  const storage = await IndexedDbStorage.open(db);
  const d = await Device.open({ url, user, secret, deviceId, page, chunkChars }, storage);
  await d.waitUntilUpToDate(120000);
  const ms = performance.now() - t0;
  const c = d.counters();
  const out = {
    ms,
    rows: d.size,
    bootstraps: c.bootstraps,
    rowsReceived: c.rowsReceived,
    bytesReceived: c.bytesReceived,
    idbTransactions: c.storageTransactions,
    idbRequests: c.storageRequests,
    ...d.shape,
  };
  await d.close();
  return out;
}

async function open({ db, deviceId, check = 0 }) {
  const t0 = performance.now();
  const storage = await IndexedDbStorage.open(db);
  const d = await Device.open({ deviceId, sync: false }, storage);
  const ms = performance.now() - t0;
  const c = d.counters();
  let mismatches = 0;
  for (let i = 0; i < check; ++i) {
    const got = d.getText(name(rowKey(i)));
    if (got === undefined || !sameJson(JSON.parse(got), taskRow(i))) ++mismatches;
  }
  const out = { ms, rows: d.size, idbRequests: c.storageRequests, idbTransactions: c.storageTransactions, mismatches };
  await d.close();
  return out;
}

// Collects until the heap stops shrinking (a few rounds at most), so
// garbage from earlier calls is not counted against the device.
function settledHeap() {
  let used = Infinity;
  for (let i = 0; i < 5; ++i) {
    gc();
    const now = performance.memory.usedJSHeapSize;
    if (now >= used) break;
    used = now;
  }
  return used;
}

async function heap({ db, deviceId }) {
  if (typeof gc !== 'function' || !performance.memory) {
    throw new Error('heap needs --js-flags=--expose-gc and --enable-precise-memory-info');
  }
  const before = settledHeap();
  let d = await Device.open({ deviceId, sync: false }, await IndexedDbStorage.open(db));
  const opened = settledHeap();
  const rows = d.size;
  const shape = d.shape;
  // Read one row after measuring, so the device is surely alive until here.
  if (d.getText(name(rowKey(0))) === undefined) throw new Error('heap: row 0 missing');
  await d.close();
  d = null;
  const released = settledHeap();
  const bytes = opened - before;
  return {
    bytes,
    freedOnClose: opened - released,
    rows,
    bytesPer10kRows: rows ? (bytes * 10000) / rows : 0,
    textChars: shape.chars,
    indexBytes: shape.indexBytes, // ArrayBuffers: outside usedJSHeapSize
    chunks: shape.chunks,
  };
}

async function start({ url, user, secret, deviceId, db }) {
  if (device) throw new Error('start: a device is open already');
  device = await Device.open({ url, user, secret, deviceId, backoffMaxMs: 500 }, await IndexedDbStorage.open(db));
  return figures(device);
}

async function write({ from, to, deletes = [] }) {
  const stored = [];
  for (let i = from; i < to; ++i) stored.push(device.put(name(rowKey(i)), { ...taskRow(i), title: `written ${i}` }));
  for (const key of deletes) stored.push(device.delete(name(key)));
  await Promise.all(stored);
  return figures(device);
}

async function synced({ timeoutMs }) {
  await device.waitUntilSynced(timeoutMs);
  return figures(device);
}

async function upToDate({ timeoutMs }) {
  await device.waitUntilUpToDate(timeoutMs);
  return figures(device);
}

function rows() {
  return device.scan(GROUP, TABLE).map((r) => [r.key, r.value]);
}

async function push({ n, from, oneByOne = false }) {
  const before = device.counters();
  const t0 = performance.now();
  if (oneByOne) {
    for (let i = from; i < from + n; ++i) {
      await device.put(name(rowKey(i)), taskRow(i));
      await device.waitUntilSynced(120000);
    }
  } else {
    const stored = [];
    for (let i = from; i < from + n; ++i) stored.push(device.put(name(rowKey(i)), taskRow(i)));
    await Promise.all(stored);
    await device.waitUntilSynced(120000);
  }
  const ms = performance.now() - t0;
  const after = device.counters();
  return {
    ms,
    n,
    rowsPerSecond: (n * 1000) / ms,
    pushes: after.pushes - before.pushes,
    changesPushed: after.changesPushed - before.changesPushed,
    idbTransactions: after.storageTransactions - before.storageTransactions,
  };
}

async function stop() {
  await device?.close();
  device = null;
  return {};
}

window.skiffBench = { bootstrap, open, heap, start, write, synced, upToDate, rows, push, stop };
window.skiffBenchReady = true;
