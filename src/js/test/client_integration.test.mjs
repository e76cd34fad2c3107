// The client against a real skiffd child process: every op and its errors
// as docs/protocol.md says, the client's own refusals compared with the
// server's answers to the same requests sent raw, pipelining and the
// in-flight bound.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';

import { Client, SkiffError } from '../dist/node.js';
import { findOp } from '../dist/ops.js';
import { validateRequest } from '../dist/validate.js';
import { startSkiffd } from './support/skiffd.mjs';
import { goodFields, wrongValues } from './support/conformance_samples.mjs';

const protocol = JSON.parse(readFileSync(new URL('../../protocol/requests.json', import.meta.url), 'utf8'));

// Hang guard only: a healthy run of any test here takes a few seconds.
const GUARD = { timeout: 60000 };

let server;
const clients = [];

before(async () => {
  server = await startSkiffd({
    users: [
      { name: 'alice', read: '*', write: '*', groups: ['team'] },
      { name: 'reader', read: 'pub', write: '' },
      { name: 'counter', read: '', write: 'counters' },
    ],
    geo: [{ table: 'places', lat: 'lat', lon: 'lon' }],
  });
});

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.stop();
});

async function connect(user, options = {}) {
  const auth = user === undefined ? {} : { user, secret: server.secrets[user] };
  const client = await Client.connect({ url: server.url, ...auth, ...options });
  clients.push(client);
  return client;
}

async function rejection(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof SkiffError, `not a SkiffError: ${e}`);
    return e;
  }
  assert.fail('resolved, expected an error');
}

// A raw, logged-in WebSocket that sends frames as given and returns replies by id.
async function rawConnection(user = 'alice') {
  const ws = new WebSocket(server.url);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const waiting = new Map();
  let nullReplies = [];
  ws.on('message', (data) => {
    const reply = JSON.parse(data.toString());
    if (reply.id === null) {
      // The server could not read the id: it answers the oldest request.
      nullReplies.push(reply);
      const [oldest] = waiting.keys();
      if (oldest !== undefined) reply.id = oldest;
    }
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  let nextId = 1;
  const send = (request) =>
    new Promise((resolve) => {
      const id = nextId++;
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ id, ...request }));
    });
  const login = await send({ op: 'login', user, secret: server.secrets[user] });
  assert.equal(login.ok, true);
  return { ws, send, nullReplies: () => nullReplies };
}

test('login: wrong secret and unknown user get the same unauthorized', GUARD, async () => {
  const wrong = await rejection(Client.connect({ url: server.url, user: 'alice', secret: '00' }));
  const unknown = await rejection(Client.connect({ url: server.url, user: 'nobody', secret: '00' }));
  assert.equal(wrong.code, 'unauthorized');
  assert.equal(unknown.code, 'unauthorized');
  assert.equal(wrong.message, unknown.message);
});

test('before login only login, ping and echo are served', GUARD, async () => {
  const c = await connect();
  await c.ping();
  assert.deepEqual(await c.echo({ any: ['json', 1, null] }), { any: ['json', 1, null] });
  for (const call of [c.get('t', 'k'), c.set('t', 'k', 1), c.stats(), c.logout()]) {
    assert.equal((await rejection(call)).code, 'unauthorized');
  }
  await c.login('alice', server.secrets.alice);
  assert.equal(await c.get('t', 'nothing-here'), undefined);
  const again = await rejection(c.login('alice', server.secrets.alice));
  assert.equal(again.code, 'bad_request');
  assert.match(again.message, /already logged in/);
  await c.logout();
  assert.equal((await rejection(c.get('t', 'k'))).code, 'unauthorized');
});

test('set, get, has, delete: not found is undefined / false, null is a document', GUARD, async () => {
  const c = await connect('alice');
  assert.equal(await c.get('docs', 'a'), undefined);
  assert.equal(await c.has('docs', 'a'), false);
  assert.equal(await c.delete('docs', 'a'), false);
  await c.set('docs', 'a', { name: 'Ada', tags: ['x'], n: 1.5 });
  assert.deepEqual(await c.get('docs', 'a'), { name: 'Ada', tags: ['x'], n: 1.5 });
  assert.equal(await c.has('docs', 'a'), true);
  await c.set('docs', 'nul', null);
  assert.equal(await c.get('docs', 'nul'), null);
  assert.equal(await c.has('docs', 'nul'), true);
  await c.set('docs', 'ключ 😀', 'unicode key');
  assert.equal(await c.get('docs', 'ключ 😀'), 'unicode key');
  assert.equal(await c.delete('docs', 'a'), true);
  assert.equal(await c.get('docs', 'a'), undefined);
  const reply = await c.call('get', { table: 'docs', key: 'nul' });
  assert.equal(reply.ok, true);
  assert.equal(reply.found, true);
});

test('add creates, counts, and refuses what it cannot do', GUARD, async () => {
  const c = await connect('alice');
  assert.equal(await c.add('counters', 'c1', 1), 1);
  assert.equal(await c.add('counters', 'c1', 41), 42);
  assert.equal(await c.add('counters', 'c2', 2, ['stats', 'visits']), 2);
  assert.equal(await c.add('counters', 'c2', 0.5, ['stats', 'visits']), 2.5);
  assert.deepEqual(await c.get('counters', 'c2'), { stats: { visits: 2.5 } });
  await c.set('counters', 's', { name: 'x' });
  const mismatch = await rejection(c.add('counters', 's', 1, ['name']));
  assert.equal(mismatch.code, 'type_mismatch');
  assert.equal(mismatch.op, 'add');
  assert.deepEqual(await c.get('counters', 's'), { name: 'x' });
  assert.equal((await rejection(c.add('counters', 'c1', 1e21))).code, 'too_large');
  assert.equal((await rejection(c.add('counters', 'c1', 1, [0]))).code, 'bad_request');
});

test('merge applies RFC 7386', GUARD, async () => {
  const c = await connect('alice');
  await c.set('docs', 'm', { name: 'Ada', city: 'London', tags: { a: 1 } });
  await c.merge('docs', 'm', { name: null, city: 'Paris', tags: { b: 2 } });
  assert.deepEqual(await c.get('docs', 'm'), { city: 'Paris', tags: { a: 1, b: 2 } });
  await c.merge('docs', 'new', { x: null, y: 1 });
  assert.deepEqual(await c.get('docs', 'new'), { y: 1 });
  await c.merge('docs', 'new', 7);
  assert.equal(await c.get('docs', 'new'), 7);
});

test('all pages in key order', GUARD, async () => {
  const c = await connect('alice');
  for (const k of ['b', 'a', 'd', 'c', 'e']) await c.set('paged', k, k.toUpperCase());
  const first = await c.all('paged', { limit: 2 });
  assert.deepEqual(first, {
    items: [
      { key: 'a', value: 'A' },
      { key: 'b', value: 'B' },
    ],
    next: 'b',
  });
  const keys = [];
  let after = null;
  for (let pages = 0; pages < 10; ++pages) {
    const page = await c.all('paged', { after, limit: 2 });
    keys.push(...page.items.map((item) => item.key));
    if (page.next === null) break;
    after = page.next;
  }
  assert.deepEqual(keys, ['a', 'b', 'c', 'd', 'e']);
  assert.deepEqual((await c.all('empty-table')).items, []);
});

test('permissions: forbidden names what was refused; write-only users learn nothing', GUARD, async () => {
  const alice = await connect('alice');
  await alice.set('pub', 'p', { v: 1 });
  await alice.set('counters', 'w', 5);
  const reader = await connect('reader');
  assert.deepEqual(await reader.get('pub', 'p'), { v: 1 });
  const write = await rejection(reader.set('pub', 'p', 2));
  assert.equal(write.code, 'forbidden');
  assert.match(write.message, /reader/);
  assert.equal((await rejection(reader.get('private', 'p'))).code, 'forbidden');
  assert.deepEqual(await alice.get('pub', 'p'), { v: 1 });

  const counter = await connect('counter');
  assert.ok(Number.isNaN(await counter.add('counters', 'w', 1)));
  const raw = await counter.call('add', { table: 'counters', key: 'w', delta: 1 });
  assert.equal('value' in raw, false);
  assert.equal(await alice.get('counters', 'w'), 7);
  assert.equal((await rejection(counter.get('counters', 'w'))).code, 'forbidden');
  assert.equal(await counter.delete('counters', 'w'), false);
  assert.equal(await alice.has('counters', 'w'), false);
});

test('near: nearest first, columns, and its errors', GUARD, async () => {
  const c = await connect('alice');
  await c.set('places', 'far', { lat: 1.3, lon: 103.9 });
  await c.set('places', 'near', { lat: 1.2901, lon: 103.85 });
  await c.set('places', 'mid', { lat: 1.295, lon: 103.86 });
  const reply = await c.near('places', { lat: 1.29, lon: 103.85, limit: 2 });
  assert.deepEqual(
    reply.items.map((i) => i.key),
    ['near', 'mid'],
  );
  assert.ok(reply.items[0].dist_m < reply.items[1].dist_m);
  const withValues = await c.near('places', { lat: 1.29, lon: 103.85, limit: 1, values: true });
  assert.deepEqual(withValues.items[0].value, { lat: 1.2901, lon: 103.85 });
  const columns = await c.near('places', { lat: 1.29, lon: 103.85, limit: 3, columns: true });
  assert.deepEqual(columns.keys, ['near', 'mid', 'far']);
  assert.equal(columns.dist_m.length, 3);
  assert.equal((await rejection(c.near('docs', { lat: 0, lon: 0 }))).code, 'bad_request');
  assert.equal((await rejection(c.near('places', { lat: 91, lon: 0 }))).code, 'bad_request');
  const reader = await connect('reader');
  assert.equal((await rejection(reader.near('places', { lat: 0, lon: 0 }))).code, 'forbidden');
});

test('sync ops: push, pull, bootstrap, wait, and a group the user is not in', GUARD, async () => {
  const c = await connect('alice');
  const pushed = await c.call('push', {
    device: 'js-dev-1',
    changes: [
      { seq: 1, table: 'tasks', key: 't1', group: 'team', value: { title: 'Buy milk' } },
      { seq: 2, table: 'tasks', key: 't2', group: 'team', value: { title: 'Call Bo' } },
    ],
  });
  assert.equal(pushed.applied, 2);
  assert.equal(pushed.last_seq, 2);
  const retried = await c.call('push', {
    device: 'js-dev-1',
    changes: [{ seq: 2, table: 'tasks', key: 't2', group: 'team', value: { title: 'Call Bo' } }],
  });
  assert.equal(retried.applied, 0);
  const pulled = await c.call('pull', { since: 0 });
  assert.deepEqual(
    pulled.changes.map((ch) => ch.key),
    ['t1', 't2'],
  );
  assert.equal(pulled.more, false);
  const boot = await c.call('bootstrap', { after: null, limit: 1 });
  assert.deepEqual(boot.next, ['team', 'tasks', 't1']);
  assert.equal(boot.rows[0].key, 't1');
  const changed = await c.call('wait', { since: pulled.cursor - 1, timeout_ms: 1000 });
  assert.equal(changed.changed, true);
  const ahead = await rejection(c.call('pull', { since: pulled.cursor + 1000 }));
  assert.equal(ahead.code, 'bad_request');
  const forbidden = await rejection(
    c.call('push', { device: 'js-dev-1', changes: [{ seq: 3, table: 'tasks', key: 'x', group: 'other', value: 1 }] }),
  );
  assert.equal(forbidden.code, 'forbidden');
});

test('stats carries the documented figures', GUARD, async () => {
  const c = await connect('alice');
  const stats = await c.stats();
  assert.equal(stats.store, 'sqlite');
  assert.equal(stats.durability, 'commit');
  assert.ok(stats.connections >= 1);
  assert.equal(typeof stats.tiers.hot.documents, 'number');
  assert.equal(typeof stats.network.accepted, 'number');
});

test('the client refuses what the server refuses, with the same code and words', GUARD, async () => {
  const raw = await rawConnection();
  const c = await connect('alice');
  const depth = (levels) => {
    let v = 0;
    for (let i = 0; i < levels; ++i) v = { v };
    return v;
  };
  // Too deep to parse: the server answers without the id (rawConnection
  // gives that answer to the oldest request), with the same code and words.
  const tooDeep = { table: 't', key: 'k', value: depth(64) };
  const requests = [
    ['get', { table: 't', key: 'x'.repeat(1025) }],
    ['set', { table: 'tables are names', key: 'k', value: 1 }],
    ['set', tooDeep],
    // The depth is the parser's first check, before any field.
    ['set', { table: 'not a name', key: '', value: depth(64) }],
    // 40 characters, 80 bytes.
    ['set', { table: 'é'.repeat(40), key: 'k', value: 1 }],
    ['add', { table: 't', key: 'k', delta: 1, path: Array(64).fill('p') }],
    ['get', { table: 't', key: 'bad\u0000key' }],
    ['nonsense', {}],
  ];
  for (const op of protocol.ops) {
    for (const f of op.fields) {
      for (const wrong of wrongValues(f.type)) {
        requests.push([op.name, { ...goodFields(op.name, op.fields, true), [f.name]: wrong }]);
      }
      if (f.required) {
        const fields = goodFields(op.name, op.fields, true);
        delete fields[f.name];
        requests.push([op.name, fields]);
      }
    }
  }
  for (const [op, fields] of requests) {
    const served = await raw.send({ op, ...fields });
    assert.equal(served.ok, false, `the server took ${op} ${JSON.stringify(fields).slice(0, 200)}`);
    const refused = await rejection(c.call(op, fields));
    assert.equal(refused.code, served.error.code, `${op}: ${refused.message}`);
    assert.equal(refused.message, `${op}: ${served.error.code}: ${served.error.message}`);
  }
  // A lone surrogate: the server's parser refuses the frame before it reads
  // the id (its words name the byte); the client refuses it unsent, at once.
  for (const fields of [
    { table: 't', key: 'k', value: 'a\ud800' },
    { table: 't', key: 'k', value: { 'b\udc00': 1 } },
    { table: 't', key: '\ud800' },
  ]) {
    const op = 'value' in fields ? 'set' : 'get';
    const served = await raw.send({ op, ...fields });
    assert.equal(served.ok, false);
    const refused = await rejection(c.call(op, fields));
    assert.equal(refused.code, served.error.code);
    const words = refused.message.replace(`${op}: bad_request: malformed JSON: `, '');
    assert.notEqual(words, refused.message);
    assert.ok(served.error.message.includes(words), `${served.error.message} lacks ${words}`);
  }
  // And the deepest document both accept.
  const deepest = await raw.send({ op: 'set', table: 't', key: 'deep', value: depth(63) });
  assert.equal(deepest.ok, true);
  await c.set('t', 'deep', depth(63));
  assert.deepEqual(await c.get('t', 'deep'), depth(63));
  raw.ws.close();
  assert.ok(requests.length > 80, `${requests.length}`);
});

test('an oversized value is refused before sending; the same frame sent raw costs the connection', GUARD, async () => {
  const c = await connect('alice');
  const states = [];
  c.onStateChange((s) => states.push(s));
  const big = 'x'.repeat(16 * 1024 * 1024);
  const before = (await c.stats()).network.protocol_errors;
  const e = await rejection(c.set('docs', 'big', big));
  assert.equal(e.code, 'too_large');
  assert.equal(c.inFlightCount, 0);
  await c.ping();
  assert.deepEqual(states, []);
  assert.equal(await c.get('docs', 'big'), undefined);
  assert.equal((await c.stats()).network.protocol_errors, before);

  const raw = await rawConnection();
  const closed = new Promise((resolve) => raw.ws.once('close', (code) => resolve(code)));
  raw.ws.send(JSON.stringify({ id: 1, op: 'set', table: 'docs', key: 'big', value: big }));
  assert.equal(await closed, 1009);
  assert.equal(raw.nullReplies()[0]?.error.code, 'too_large');
});

test('1,000 requests in flight on one connection, each reply matched to its call', GUARD, async () => {
  const c = await connect('alice', { maxInFlight: 1000 });
  const calls = [];
  for (let i = 0; i < 1000; ++i) {
    calls.push(i % 2 === 0 ? c.echo({ i }) : c.set('pipe', `k${i}`, { i }).then(() => ({ i })));
  }
  assert.equal(c.inFlightCount, 1000);
  assert.equal(c.waitingCount, 0);
  const replies = await Promise.all(calls);
  replies.forEach((reply, i) => assert.deepEqual(reply, { i }));
  const reads = [];
  for (let i = 1; i < 1000; i += 2) reads.push(c.get('pipe', `k${i}`));
  (await Promise.all(reads)).forEach((doc, n) => assert.deepEqual(doc, { i: 2 * n + 1 }));
  assert.equal(c.inFlightCount, 0);
});

test('maxInFlight bounds what is outstanding; the rest wait and go in order', GUARD, async () => {
  const c = await connect('alice', { maxInFlight: 8 });
  let most = 0;
  const calls = [];
  for (let i = 0; i < 500; ++i) {
    calls.push(
      c.set('order', 'same', i).then(() => {
        most = Math.max(most, c.inFlightCount);
      }),
    );
    most = Math.max(most, c.inFlightCount);
  }
  assert.equal(c.inFlightCount, 8);
  assert.equal(c.waitingCount, 492);
  await Promise.all(calls);
  assert.ok(most <= 8, `${most} in flight`);
  assert.equal(c.waitingCount, 0);
  // Requests of one connection take effect in the order they were sent.
  assert.equal(await c.get('order', 'same'), 499);
});

test('a refused call does not disturb the calls around it', GUARD, async () => {
  const c = await connect('alice', { maxInFlight: 4 });
  const results = await Promise.allSettled([
    c.set('mix', 'a', 1),
    c.get('mix', ''),
    c.call('get', { table: 'mix' }),
    c.set('mix', 'b', 2),
    c.add('mix', 'a', 1, ['no']),
    c.get('mix', 'b'),
  ]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
  );
  assert.equal(results[4].reason.code, 'type_mismatch');
  assert.equal(results[5].value, 2);
});

test('close fails waiting calls with closed and later calls at once', GUARD, async () => {
  const c = await connect('alice', { maxInFlight: 1 });
  const first = c.set('closing', 'a', 1);
  const second = c.set('closing', 'b', 2);
  const closing = c.close();
  const [lost, unsent] = await Promise.all([rejection(first), rejection(second)]);
  assert.equal(lost.code, 'connection_lost');
  assert.equal(lost.outcomeUnknown, true);
  assert.equal(unsent.code, 'closed');
  assert.equal(unsent.outcomeUnknown, false);
  await closing;
  assert.equal(c.connectionState, 'closed');
  assert.equal((await rejection(c.ping())).code, 'closed');
  await c.close();
  const alice = await connect('alice');
  assert.equal(await alice.has('closing', 'b'), false);
});
