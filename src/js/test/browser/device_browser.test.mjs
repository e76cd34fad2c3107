// The device in a real headless Chromium (puppeteer-core, Debian's
// /usr/bin/chromium) against a real skiffd: the page bootstraps 10,000
// rows into IndexedDB, reloads and opens them from IndexedDB (every row
// checked, the open's IndexedDB requests counted), writes while the server
// is down (and reloads with its outbox stored), then pushes once the server
// is back. Every row and write is checked against the server through a
// Node client. Prints the figures as one JSON line ("device_browser_figures").
// Run after `tsc -p tsconfig.json`; $CHROMIUM overrides the browser.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';

import { startSkiffd } from '../support/skiffd.mjs';
import { changesSince, connect, readBack, rowKey, seed, taskRow } from '../support/device_sync.mjs';
import { startStaticServer } from './static_server.mjs';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const ROWS = 10000;
const GUARD_MS = 60000; // hang guard for one page call; each takes well under it

let server;
let web;
let browser;
let page;
let profile;
const figures = {};

async function call(fn, arg) {
  return page.evaluate((f, a) => window.skiffBench[f](a), fn, arg);
}

async function loadPage() {
  await page.goto(`${web.url}/page/device_page.html`, { waitUntil: 'load', timeout: GUARD_MS });
  await page.waitForFunction(() => window.skiffBenchReady === true, { timeout: GUARD_MS });
}

before(async () => {
  server = await startSkiffd({ users: [{ name: 'alice', groups: ['team'] }] });
  const client = await connect(server, 'alice');
  await seed(client, { device: 'seeder', to: ROWS });
  await client.close();
  web = await startStaticServer();
  // A profile of its own on disk: IndexedDB outlives reloads, and no run sees another's.
  profile = mkdtempSync(join(tmpdir(), 'skiff-chromium-'));
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: profile,
    protocolTimeout: GUARD_MS * 2,
    args: ['--no-sandbox', '--disable-gpu', '--enable-precise-memory-info', '--js-flags=--expose-gc'],
  });
  page = await browser.newPage();
  page.setDefaultTimeout(GUARD_MS);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  figures.pageErrors = errors;
  await loadPage();
});

after(async () => {
  await browser?.close();
  await web?.close();
  await server?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

test('the browser device bootstraps, reopens from IndexedDB, writes offline and pushes once back online', async () => {
  const login = { url: server.url, user: 'alice', secret: server.secrets.alice };
  const db = 'skiff-device-test';
  const deviceId = 'chromium-1';

  // Bootstrap 10,000 rows into IndexedDB: one transaction per page (plus the load).
  const boot = await call('bootstrap', { ...login, deviceId, db, page: 1000 });
  figures.bootstrap = boot;
  assert.equal(boot.rows, ROWS);
  assert.equal(boot.rowsReceived, ROWS);
  assert.equal(boot.bootstraps, 10, '10 pages of 1,000 (the last one names no next)');
  assert.ok(boot.idbTransactions <= 1 + 11 + 2, `transactions: load, 10-11 pages, a pull (${boot.idbTransactions})`);

  // Reload: the device opens from IndexedDB alone (no sync) with every row.
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => window.skiffBenchReady === true);
  const open = await call('open', { db, deviceId, check: ROWS });
  figures.open = open;
  assert.equal(open.rows, ROWS);
  assert.equal(open.mismatches, 0, 'every row as seeded');
  assert.ok(open.idbRequests <= 5, `open in at most 5 IndexedDB requests (${open.idbRequests})`);
  assert.equal(open.idbTransactions, 1);
  figures.heap = await call('heap', { db, deviceId });
  assert.equal(figures.heap.rows, ROWS);
  const held = figures.heap.bytes + figures.heap.indexBytes;
  assert.ok(figures.heap.textChars > ROWS * 150, 'the rows are in memory');
  assert.ok(held <= 2 * 1024 * 1024, `at most 2 MiB for 10,000 rows of ~200 bytes (${held} bytes)`);

  // Online, then the server goes away; writes queue in IndexedDB.
  await call('start', { ...login, deviceId, db });
  await call('upToDate', { timeoutMs: GUARD_MS });
  await server.kill();
  const deleted = [rowKey(3), rowKey(4)];
  const offline = await call('write', { from: 9990, to: 10050, deletes: deleted }); // 10 rows changed, 50 new, 2 deleted
  assert.equal(offline.outbox, 62);
  await assert.rejects(call('synced', { timeoutMs: 300 }), /unavailable/);
  await call('stop');

  // A reload while offline: the outbox is read back from IndexedDB.
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => window.skiffBenchReady === true);
  const reopened = await call('start', { ...login, deviceId, db });
  assert.equal(reopened.outbox, 62);
  assert.equal(reopened.rows, ROWS + 50 - 2);

  await server.restart();
  const synced = await call('synced', { timeoutMs: GUARD_MS });
  assert.equal(synced.outbox, 0);
  assert.equal(synced.counters.changesPushed, 62);
  assert.equal(synced.counters.rejected, 0);

  // The server holds exactly what the page wrote, each write once.
  const client = await connect(server, 'alice');
  const expected = new Map();
  for (let i = 0; i < 10050; ++i) expected.set(rowKey(i), i >= 9990 ? { ...taskRow(i), title: `written ${i}` } : taskRow(i));
  for (const k of deleted) expected.delete(k);
  const onServer = await readBack(client);
  assert.equal(onServer.size, expected.size);
  for (const [key, value] of expected) assert.deepEqual(onServer.get(`team/tasks/${key}`), value, key);
  const { changes } = await changesSince(client, 0);
  const written = changes.filter((c) => c.key >= rowKey(9990) || deleted.includes(c.key));
  const perKey = new Map();
  for (const c of written) perKey.set(c.key, (perKey.get(c.key) ?? 0) + 1);
  for (let i = 9990; i < 10050; ++i) assert.equal(perKey.get(rowKey(i)), i < ROWS ? 2 : 1, `${rowKey(i)}: seeded once, written once`);
  for (const k of deleted) assert.equal(perKey.get(k), 2, `${k}: seeded, then deleted once`);

  // And the page's rows are the server's.
  const pageRows = await call('rows');
  assert.equal(pageRows.length, expected.size);
  for (const [key, text] of pageRows) assert.deepEqual(JSON.parse(text), expected.get(key), key);

  // Push throughput: 2,000 writes from the page, online.
  const push = await call('push', { n: 2000, from: 20000 });
  figures.push = push;
  assert.equal(push.changesPushed, 2000);
  const after = await readBack(client);
  for (let i = 20000; i < 22000; ++i) assert.deepEqual(after.get(`team/tasks/${rowKey(i)}`), taskRow(i));
  const oneByOne = await call('push', { n: 200, from: 30000, oneByOne: true });
  figures.pushOneByOne = oneByOne;
  assert.equal(oneByOne.changesPushed, 200);
  assert.equal(oneByOne.pushes, 200, 'one push request per row');
  const last = await readBack(client);
  for (let i = 30000; i < 30200; ++i) assert.deepEqual(last.get(`team/tasks/${rowKey(i)}`), taskRow(i));
  await client.close();
  await call('stop');
  assert.deepEqual(figures.pageErrors, []);
  delete figures.pageErrors;
  console.log(`device_browser_figures ${JSON.stringify(figures)}`);
});
