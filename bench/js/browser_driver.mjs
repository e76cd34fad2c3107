// The browser device in headless Chromium, for bench/browser_bench.cc. Runs
// under Node: loads `rows` synced rows into skiffd through the TypeScript
// client, serves the device's page (src/js/test/browser/device_page.*, the
// page the device's own browser test drives, with its window.skiffBench)
// and src/js/dist on 127.0.0.1, and drives it with puppeteer-core. One
// argument, a JSON object:
//   {js, chromium, url, user, secret, rows, phase, opens, writes,
//    timeout_ms, deadline_ms}
// js: the src/js folder. phase: bootstrap | open | push. Every phase
// first bootstraps a device into IndexedDB (which `bootstrap` measures) and
// checks every row it holds. Prints one JSON line of figures
// (bench/js/figures.mjs).
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { fail, printResult, readConfig, withDeadline } from './figures.mjs';

const config = readConfig();
for (const k of ['js', 'chromium', 'url', 'user', 'secret', 'phase']) {
  if (typeof config[k] !== 'string' || config[k] === '') fail(`configuration lacks "${k}"`);
}
const rows = config.rows ?? 10000;
const timeoutMs = config.timeout_ms ?? 60000;
const fromJs = (path) => import(pathToFileURL(join(config.js, path)).href);
const kGroup = 'team';
const kTable = 'tasks';
const kDb = 'skiff-bench';
const kDevice = 'bench-browser';

// Deep equality of two JSON values, member order ignored.
function sameJson(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
}

// The server's rows: pushes of 1000 changes from a loader device.
async function loadRows(Client, rowKey, taskRow) {
  const client = await Client.connect({ url: config.url, user: config.user, secret: config.secret });
  let seq = 0;
  for (let first = 0; first < rows; first += 1000) {
    const changes = [];
    for (let i = first; i < Math.min(first + 1000, rows); i++) {
      changes.push({ seq: ++seq, group: kGroup, table: kTable, key: rowKey(i), value: taskRow(i) });
    }
    const reply = await client.call('push', { device: 'bench-loader', changes });
    if (reply.applied !== changes.length) fail(`the loader's push applied ${reply.applied}`);
  }
  await client.close();
}

// Rows [from, from + n) as the server holds them, each against taskRow.
async function serverRowsMatching(Client, rowKey, taskRow, from, n) {
  const client = await Client.connect({ url: config.url, user: config.user, secret: config.secret });
  let matching = 0;
  let after = from > 0 ? [kGroup, kTable, rowKey(from - 1)] : null;
  while (matching < n) {
    const reply = await client.call('bootstrap', { after, limit: Math.min(n - matching, 1000) });
    const page = reply.rows ?? [];
    if (page.length === 0) break;
    for (const row of page) {
      const i = from + matching;
      if (row.key !== rowKey(i) || !sameJson(row.value, taskRow(i))) {
        await client.close();
        return matching;
      }
      matching++;
    }
    after = [kGroup, kTable, page[page.length - 1].key];
  }
  await client.close();
  return matching;
}

async function main() {
  const { Client } = await fromJs('dist/node.js');
  const { rowKey, taskRow } = await fromJs('test/support/device_rows.mjs');
  const { startStaticServer } = await fromJs('test/browser/static_server.mjs');
  const puppeteer = (await fromJs('node_modules/puppeteer-core/lib/esm/puppeteer/puppeteer-core.js'))
    .default;
  await withDeadline(loadRows(Client, rowKey, taskRow), timeoutMs, 'loading the rows');
  const web = await startStaticServer();
  const profile = await mkdtemp(join(tmpdir(), 'skiff-browser-bench-'));
  const browser = await puppeteer.launch({
    executablePath: config.chromium,
    headless: true,
    userDataDir: profile,
    protocolTimeout: timeoutMs * 2,
    args: ['--no-sandbox', '--disable-gpu', '--enable-precise-memory-info', '--js-flags=--expose-gc'],
  });
  // The profile goes on every exit, a failure's too; registered after the
  // launch, so puppeteer's own exit handler has ended Chromium first.
  process.on('exit', () => {
    try {
      rmSync(profile, { recursive: true, force: true });
    } catch {
      // a file Chromium was still writing: the folder is in the temp dir
    }
  });
  // The run's own deadline, before the family's: a driver killed from
  // outside would leave Chromium running, so this one closes it first.
  const guard = setTimeout(async () => {
    await browser.close().catch(() => {});
    fail(`no result within ${config.deadline_ms} ms; Chromium closed`);
  }, config.deadline_ms ?? 100000);
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(timeoutMs);
    // An error in the page fails the run at once, not at the next deadline.
    page.on('pageerror', (e) => fail(`page error: ${e.message}`));
    const load = async () => {
      await page.goto(`${web.url}/page/device_page.html`, { waitUntil: 'load' });
      await page.waitForFunction(() => window.skiffBenchReady === true);
    };
    const call = (fn, arg) => withDeadline(
      page.evaluate((f, a) => window.skiffBench[f](a), fn, arg), timeoutMs * 2, fn);
    const account = { url: config.url, user: config.user, secret: config.secret };
    const db = { db: kDb, deviceId: kDevice };
    await load();
    const out = { phase: config.phase, rows, chromium: await browser.version() };
    out.bootstrap = await call('bootstrap', { ...account, ...db, page: 1000 });
    // Off the clock: every row the bootstrap stored, as written.
    const stored = await call('open', { ...db, check: rows });
    out.bootstrap.rows_checked = stored.rows === rows ? rows - stored.mismatches : 0;
    if (config.phase === 'open') {
      // Each on a fresh page: nothing of the device in memory.
      out.opens = [];
      out.heaps = [];
      for (let k = 0; k < (config.opens ?? 3); k++) {
        await load();
        out.opens.push(await call('open', { ...db, check: rows }));
      }
      for (let k = 0; k < (config.opens ?? 3); k++) {
        await load();
        out.heaps.push(await call('heap', db));
      }
    } else if (config.phase === 'push') {
      await load();
      await call('start', { ...account, ...db });
      await call('upToDate', { timeoutMs });
      out.push = await call('push', { n: config.writes ?? 1000, from: rows });
      const left = await call('stop', {});
      out.push.rows_checked = await serverRowsMatching(Client, rowKey, taskRow, rows,
        out.push.changesPushed);
      out.push.stopped = left;
    } else if (config.phase !== 'bootstrap') {
      fail(`unknown phase "${config.phase}"`);
    }
    printResult(out);
  } finally {
    clearTimeout(guard);
    await browser.close();
    await web.close();
  }
}

main().then(() => process.exit(0), (e) => fail(e && e.stack ? e.stack : e));
