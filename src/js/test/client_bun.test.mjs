// The client end to end against skiffd under Bun (and Node): a plain script,
// not node:test, so that `bun test/client_bun.test.mjs` runs it as it is.
// Exits non-zero on the first failed check. Under Bun it also runs the
// browser entry over Bun's own WebSocket and the checks of BunWebSocket
// (client_bun_socket.test.mjs); under both, that the Node entry's default
// socket (src/node.ts) sends the frames of one turn in one write. Prints the rate of 10,000
// pipelined sets (informative: the benchmarks measure properly).

import assert from 'node:assert/strict';

import WsPackage from 'ws';

import { BunWebSocket } from '../dist/bun_socket.js';
import { Client as NodeClient } from '../dist/node.js';
import { Client as BrowserClient, SkiffError } from '../dist/index.js';
import { checkBunSocket } from './client_bun_socket.test.mjs';
import { startSkiffd } from './support/skiffd.mjs';

const isBun = typeof globalThis.Bun !== 'undefined';
const runtime = isBun ? `bun ${globalThis.Bun.version}` : `node ${process.version}`;

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof SkiffError, `not a SkiffError: ${e}`);
    return e;
  }
  assert.fail('resolved, expected an error');
}

// The WebSocket the Node entry uses when the options name none.
class Probe extends NodeClient {
  static defaultSocketClass() {
    return this.defaultWebSocket();
  }
}

// Wraps the writes under `socket` (the stream under `ws`, or BunWebSocket's
// TCP socket) to count them; returns the counts.
function countWrites(socket) {
  const counts = { writes: 0 };
  if (socket instanceof BunWebSocket) {
    const tcp = socket.tcp;
    const write = tcp.write;
    tcp.write = function (data, ...rest) {
      counts.writes += 1;
      return write.call(this, data, ...rest);
    };
    return counts;
  }
  const stream = socket._socket;
  assert.equal(typeof stream?.cork, 'function', 'the socket has a stream to hold');
  // Bun's _writev joins its chunks and calls _write: only the outer call counts.
  let depth = 0;
  for (const name of ['_write', '_writev']) {
    const original = stream[name];
    if (typeof original !== 'function') continue;
    stream[name] = function (data, ...rest) {
      if (depth === 0) counts.writes += 1;
      depth += 1;
      try {
        return original.call(this, data, ...rest);
      } finally {
        depth -= 1;
      }
    };
  }
  return counts;
}

// The Node entry's default socket (`ws` under Node, BunWebSocket under
// Bun) sends the frames of one turn in one write: 50 calls made together
// are one write.
async function turnIsOneWrite(server) {
  const Default = Probe.defaultSocketClass();
  assert.equal(Default, isBun ? BunWebSocket : WsPackage);
  let opened = null;
  class Watched extends Default {
    constructor(url) {
      super(url);
      opened = this;
    }
  }
  const c = await NodeClient.connect({ url: server.url, user: 'alice', secret: server.secrets.alice, WebSocket: Watched });
  const counts = countWrites(opened);
  const calls = [];
  for (let i = 0; i < 50; ++i) calls.push(c.ping());
  await Promise.all(calls);
  assert.equal(counts.writes, 1, `50 frames of one turn took ${counts.writes} writes`);
  await c.close();
  console.log(`${runtime}: 50 calls of one turn left in one write`);
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
  if (isBun) await checkBunSocket();
  await turnIsOneWrite(server);
  await exercise(`${runtime}, node entry (${isBun ? 'BunWebSocket' : 'ws'})`, 'via-ws', (o) => NodeClient.connect(o), server);
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
