// The client end to end against skiffd under Bun (and Node): a plain script,
// not node:test, so that `bun test/client_bun.test.mjs` runs it as it is.
// Exits non-zero on the first failed check. Under Bun it also runs the
// browser entry over Bun's own WebSocket. Prints the rate of 10,000
// pipelined sets (informative: the benchmarks measure properly).

import assert from 'node:assert/strict';

import { Client as NodeClient } from '../dist/node.js';
import { Client as BrowserClient, SkiffError } from '../dist/index.js';
import { startSkiffd } from './support/skiffd.mjs';

const runtime = typeof globalThis.Bun !== 'undefined' ? `bun ${globalThis.Bun.version}` : `node ${process.version}`;

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof SkiffError, `not a SkiffError: ${e}`);
    return e;
  }
  assert.fail('resolved, expected an error');
}

async function exercise(label, table, connect, server) {
  const c = await connect({ url: server.url, user: 'alice', secret: server.secrets.alice, maxInFlight: 1000 });
  await c.set(table, 'a', { runtime });
  assert.deepEqual(await c.get(table, 'a'), { runtime });
  assert.equal(await c.add(table, 'n', 5), 5);
  assert.equal((await rejection(c.add(table, 'a', 1, ['runtime']))).code, 'type_mismatch');
  assert.equal((await rejection(c.get(table, 'x'.repeat(1025)))).code, 'too_large');

  const n = 10000;
  const start = performance.now();
  const sets = [];
  for (let i = 0; i < n; ++i) sets.push(c.set(table, `k${i % 1000}`, { i }));
  await Promise.all(sets);
  const seconds = (performance.now() - start) / 1000;
  // Each key's last set wins: the writes really happened, in order.
  for (const i of [0, 1, 999]) assert.deepEqual(await c.get(table, `k${i}`), { i: n - 1000 + i });
  console.log(`${label}: ${n} pipelined sets in ${seconds.toFixed(3)} s = ${Math.round(n / seconds)} sets/s`);
  await c.close();
}

// Hang guard only (a healthy run takes a few seconds); skiffd.mjs stops the
// server child on exit.
const guard = setTimeout(() => {
  console.error(`FAILED under ${runtime}: no result within 120 s`);
  process.exit(1);
}, 120000);
guard.unref?.();

const server = await startSkiffd({ users: [{ name: 'alice', read: '*', write: '*' }] });
let failed = false;
try {
  await exercise(`${runtime}, ws`, 'via-ws', (o) => NodeClient.connect(o), server);
  if (globalThis.WebSocket !== undefined) {
    await exercise(`${runtime}, global WebSocket`, 'via-global', (o) => BrowserClient.connect(o), server);
  }
  console.log(`ok: the client works under ${runtime}`);
} catch (e) {
  failed = true;
  console.error(`FAILED under ${runtime}:`, e);
} finally {
  await server.stop();
}
process.exit(failed ? 1 : 0);
