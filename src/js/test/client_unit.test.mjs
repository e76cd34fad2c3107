// The client's pieces without a server: framing, reply reading, request
// checks, errors, back-off and the waiting queue.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { checkFrameSize, decodeReply, encodeBody, frameWithId, MAX_ID_OVERHEAD } from '../dist/codec.js';
import { SkiffError, errorFromReply, SERVER_ERROR_CODES, CLIENT_ERROR_CODES } from '../dist/errors.js';
import { findOp } from '../dist/ops.js';
import { validateRequest, keyProblem, tableNameProblem } from '../dist/validate.js';
import { reconnectDelayMs } from '../dist/backoff.js';
import { utf8Length, hasLoneSurrogate } from '../dist/limits.js';
import { Queue } from '../dist/queue.js';
import { Client } from '../dist/index.js';

function refusal(fn) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof SkiffError, `not a SkiffError: ${e}`);
    return e;
  }
  assert.fail('no error');
}

function check(op, fields, maxDepth = 64) {
  return () => validateRequest(findOp(op), fields, maxDepth);
}

test('a frame is the body with the id spliced in first', () => {
  const body = encodeBody('get', { table: 't', key: 'k' });
  assert.equal(body, '"op":"get","table":"t","key":"k"}');
  const frame = frameWithId(42, body);
  assert.equal(frame, '{"id":42,"op":"get","table":"t","key":"k"}');
  assert.deepEqual(JSON.parse(frame), { id: 42, op: 'get', table: 't', key: 'k' });
  const ping = encodeBody('ping', {});
  assert.equal(frameWithId(7, ping), '{"id":7,"op":"ping"}');
  assert.equal(frameWithId(2 ** 53 - 1, ping).length, ping.length + MAX_ID_OVERHEAD);
  // Members the caller left undefined are left out, as JSON.stringify does.
  assert.equal(frameWithId(1, encodeBody('all', { table: 't', after: undefined })), '{"id":1,"op":"all","table":"t"}');
  assert.equal(frameWithId(1, encodeBody('pull', { since: undefined })), '{"id":1,"op":"pull"}');
});

test('replies are read by id, with errors and connection-level ids', () => {
  assert.deepEqual(decodeReply('{"id":3,"ok":true,"found":false}'), {
    id: 3,
    ok: true,
    reply: { id: 3, ok: true, found: false },
  });
  const failed = decodeReply('{"id":4,"ok":false,"error":{"code":"forbidden","message":"no"}}');
  assert.equal(failed.ok, false);
  const error = errorFromReply(failed.error, 'get');
  assert.equal(error.code, 'forbidden');
  assert.equal(error.op, 'get');
  assert.equal(error.fromServer, true);
  assert.equal(error.outcomeUnknown, false);
  assert.equal(decodeReply('{"id":null,"ok":false,"error":{"code":"too_large","message":"x"}}').id, null);
  // A bare acknowledgement is read without JSON.parse, to the same result.
  for (const text of ['{"id":0,"ok":true}', '{"id":7,"ok":true}', '{"id":900719925474099,"ok":true}',
    '{"id":9007199254740991,"ok":true}', '{"id":7,"ok":true,"found":true}', '{"id": 7,"ok":true}']) {
    const parsed = JSON.parse(text);
    assert.deepEqual(decodeReply(text), { id: parsed.id, ok: true, reply: parsed }, text);
  }
  for (const bad of ['{"id":07,"ok":true}', '{"id":7x,"ok":true}', '{"id":,"ok":true}', '{"id":-7,"ok":true}']) {
    assert.equal(refusal(() => decodeReply(bad)).code, 'protocol_error', bad);
  }
  for (const bad of ['not json', '[1]', '"s"', '{"id":"7","ok":true}', '{"id":-1,"ok":true}', '{"ok":true}']) {
    assert.equal(refusal(() => decodeReply(bad)).code, 'protocol_error', bad);
  }
});

test('an error code the client does not know is a protocol_error naming it', () => {
  const e = errorFromReply({ code: 'moved', message: 'elsewhere' });
  assert.equal(e.code, 'protocol_error');
  assert.match(e.message, /moved/);
  assert.equal(errorFromReply(undefined).code, 'protocol_error');
});

test('the error codes are distinct and say whether an outcome is known', () => {
  const all = [...SERVER_ERROR_CODES, ...CLIENT_ERROR_CODES];
  assert.equal(new Set(all).size, all.length);
  const unknown = all.filter((code) => new SkiffError(code, 'm').outcomeUnknown);
  assert.deepEqual(unknown.sort(), ['connection_lost', 'outcome_unknown', 'protocol_error', 'timeout']);
  const e = new SkiffError('not_connected', 'never sent', 'set');
  assert.equal(e.message, 'set: not_connected: never sent');
  assert.equal(e.fromServer, false);
  assert.ok(e instanceof Error);
});

test('valid requests of every op pass', () => {
  const ok = [
    ['login', { user: 'u', secret: 's' }],
    ['login', { token: 't' }],
    ['logout', {}],
    ['ping', {}],
    ['echo', { data: null }],
    ['get', { table: 't-1_X', key: 'ключ' }],
    ['set', { table: 't', key: 'k', value: { a: [1, 2, { b: null }] } }],
    ['add', { table: 't', key: 'k', delta: -2.5, path: ['a', 'b'] }],
    ['add', { table: 't', key: 'k', delta: 1 }],
    ['merge', { table: 't', key: 'k', patch: 3 }],
    ['all', { table: 't', after: null, limit: 10000 }],
    ['all', { table: 't', after: '' }],
    ['stats', {}],
    ['push', { device: 'd', changes: [{ seq: 1, table: 't', key: 'k', group: 'g', value: null }] }],
    ['pull', { since: null }],
    ['bootstrap', { after: ['g', 't', 'k'], limit: 5 }],
    ['wait', { since: 0, timeout_ms: 10 }],
    ['near', { table: 't', lat: 1, lon: 2, limit: 1, radius_m: 5, box_m: [1, 2], values: true, columns: false }],
  ];
  for (const [op, fields] of ok) check(op, fields)();
});

test('fields are checked in the server order, with its code and words', () => {
  const cases = [
    [['get', {}], 'bad_request', "missing field 'table'"],
    [['get', { table: 't' }], 'bad_request', "missing field 'key'"],
    [['get', { table: 7, key: 'k' }], 'bad_request', "field 'table' must be a string"],
    [['get', { table: 'a b', key: 'k' }], 'bad_request', "field 'table': table name may only contain"],
    [['get', { table: '$users', key: 'k' }], 'bad_request', "field 'table': table name may only"],
    [['get', { table: 'x'.repeat(65), key: 'k' }], 'bad_request', 'longer than 64 bytes'],
    [['get', { table: 't', key: '' }], 'bad_request', "field 'key': key is empty"],
    [['get', { table: 't', key: 'é'.repeat(513) }], 'too_large', "field 'key': key is 1026 bytes; the limit is 1024"],
    [['get', { table: 't', key: 'a\u0000b' }], 'bad_request', 'key contains U+0000'],
    // JSON.stringify escapes a lone surrogate; the server's parser refuses
    // the frame before it reads the id, so the client must not send it.
    [['get', { table: 't', key: '\ud800' }], 'bad_request', 'malformed JSON: invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF'],
    [['set', { table: 't', key: 'k', value: ['ok', 'a\udc00'] }], 'bad_request', 'surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF'],
    [['set', { table: 't', key: 'k', value: { 'x\ud83d': 1 } }], 'bad_request', 'surrogate U+D800..U+DBFF must be followed'],
    [['set', { table: 't', key: 'k', value: new Map([['a', 1]]) }], 'bad_request', 'a Map is not JSON'],
    [['echo', { data: [new Set([1])] }], 'bad_request', 'a Set is not JSON'],
    [['echo', { data: { at: new Date(0) } }], 'bad_request', 'a Date is not JSON'],
    [['set', { table: 'é'.repeat(40), key: 'k', value: 1 }], 'bad_request', "field 'table': table name is longer than 64 bytes"],
    [['set', { table: 't', key: 'k' }], 'bad_request', "missing field 'value'"],
    [['add', { table: 't', key: 'k', path: null, delta: 1 }], 'bad_request', "field 'path' must be an array of strings"],
    [['add', { table: 't', key: 'k', path: [0], delta: 1 }], 'bad_request', "field 'path' must be an array of strings"],
    [['add', { table: 't', key: 'k', delta: '1' }], 'bad_request', "field 'delta' must be a number"],
    [['add', { table: 't', key: 'k', path: Array(64).fill('a'), delta: 1 }], 'too_large', "field 'path' has 64 elements"],
    [['all', { table: 't', limit: 0 }], 'bad_request', "field 'limit' must be an integer from 1 to 10000"],
    [['all', { table: 't', limit: 1.5 }], 'bad_request', "field 'limit' must be an integer"],
    [['all', { table: 't', after: 3 }], 'bad_request', "field 'after' must be a string or null"],
    [['wait', {}], 'bad_request', "missing field 'since'"],
    [['wait', { since: null }], 'bad_request', "missing field 'since'"],
    [['wait', { since: -1 }], 'bad_request', "field 'since' must be an unsigned integer"],
    [['pull', { limit: 0 }], 'bad_request', "field 'limit' must be at least 1"],
    [['bootstrap', { after: ['', 't', 'k'] }], 'bad_request', "field 'after' must name a group"],
    [['bootstrap', { after: ['g', 't'] }], 'bad_request', "field 'after' must be null or [group, table, key]"],
    [['near', { table: 't', lat: 1, lon: 2, box_m: [1] }], 'bad_request', "field 'box_m' must be [width, height]"],
    [['near', { table: 't', lat: 1, lon: 2, values: 1 }], 'bad_request', "field 'values' must be true or false"],
    [['near', { table: 't', lat: 1, lon: 2, limit: 10001 }], 'bad_request', "field 'limit' must be an integer from 1"],
    [['push', { device: 'd', changes: {} }], 'bad_request', "field 'changes' must be an array"],
    [['push', { device: 'd', changes: [1] }], 'bad_request', "field 'changes[0]' must be an object"],
    [['push', { device: 'd', changes: [{ seq: 1, table: 't', key: 'k', group: 'g' }] }], 'bad_request', "missing field 'changes[0].value'"],
    [['echo', { data: NaN }], 'bad_request', 'NaN is not a JSON number'],
    [['echo', { data: { f: () => 1 } }], 'bad_request', 'a function is not JSON'],
    [['ping', { id: 3 }], 'bad_request', "may not set 'id' or 'op'"],
  ];
  for (const [[op, fields], code, words] of cases) {
    const e = refusal(check(op, fields));
    assert.equal(e.code, code, `${op} ${JSON.stringify(fields)}: ${e.message}`);
    assert.ok(e.message.includes(words), `${e.message} lacks ${words}`);
    assert.equal(e.op, op);
    // Given the written body (as the client passes it), the same refusal.
    let body;
    try {
      body = encodeBody(op, fields);
    } catch {
      continue; // the client validates without a body then
    }
    const same = refusal(() => validateRequest(findOp(op), fields, 64, body));
    assert.equal(same.message, e.message, `${op} with its body`);
  }
});

test('nesting counts the request object: documents nest at most 63 levels', () => {
  const nest = (levels) => {
    let v = 1;
    for (let i = 0; i < levels; ++i) v = [v];
    return v;
  };
  check('set', { table: 't', key: 'k', value: nest(63) })();
  const deep = refusal(check('set', { table: 't', key: 'k', value: nest(64) }));
  assert.equal(deep.code, 'too_large');
  assert.equal(deep.message, 'set: too_large: document nests deeper than 64 levels');
  // The server's parser meets the depth before any field: so does the client.
  const first = refusal(check('set', { table: 'not a name', key: '', value: nest(64) }));
  assert.equal(first.message, 'set: too_large: document nests deeper than 64 levels');
  // ... and before a lone surrogate earlier in the text.
  assert.equal(refusal(check('set', { table: 't', key: '\ud800', value: nest(64) })).code, 'too_large');
  check('echo', { data: { plain: Object.create(null) } })();
  const cyclic = {};
  cyclic.self = cyclic;
  assert.equal(refusal(check('set', { table: 't', key: 'k', value: cyclic })).code, 'too_large');
  check('set', { table: 't', key: 'k', value: nest(9) }, 10)();
  assert.equal(refusal(check('set', { table: 't', key: 'k', value: nest(10) }, 10)).code, 'too_large');
});

test('frames over the limit are too_large, counted in UTF-8 bytes', () => {
  checkFrameSize('set', 'x'.repeat(100), 1000);
  assert.equal(refusal(() => checkFrameSize('set', 'x'.repeat(1000), 1000)).code, 'too_large');
  // 300 three-byte characters: 900 bytes plus the id fits 1000 only as UTF-16 units.
  const body = '€'.repeat(300);
  assert.equal(refusal(() => checkFrameSize('set', body, 899 + MAX_ID_OVERHEAD)).code, 'too_large');
  checkFrameSize('set', body, 900 + MAX_ID_OVERHEAD);
});

test('UTF-8 lengths and lone surrogates', () => {
  assert.equal(utf8Length('a'), 1);
  assert.equal(utf8Length('é'), 2);
  assert.equal(utf8Length('€'), 3);
  assert.equal(utf8Length('😀'), 4);
  assert.equal(utf8Length('\ud800'), 3);
  assert.equal(utf8Length('a😀é'), new TextEncoder().encode('a😀é').length);
  assert.equal(hasLoneSurrogate('😀'), false);
  assert.equal(hasLoneSurrogate('a\udc00'), true);
  assert.equal(hasLoneSurrogate('\ud83d'), true);
  assert.equal(tableNameProblem('ok-Name_9'), undefined);
  assert.equal(keyProblem('x'.repeat(1024)), undefined);
  assert.equal(keyProblem('x'.repeat(1025)).code, 'too_large');
});

test('reconnect delays grow, stay capped and are jittered within their step', () => {
  const policy = { initialDelayMs: 100, maxDelayMs: 1000 };
  assert.equal(reconnectDelayMs(policy, 1, () => 0), 50);
  assert.equal(reconnectDelayMs(policy, 1, () => 1), 100);
  assert.equal(reconnectDelayMs(policy, 3, () => 1), 400);
  assert.equal(reconnectDelayMs(policy, 10, () => 1), 1000);
  assert.equal(reconnectDelayMs(policy, 1000, () => 0.5), 750);
  for (let attempt = 1; attempt < 50; ++attempt) {
    const d = reconnectDelayMs(policy, attempt);
    assert.ok(d >= 50 && d <= 1000, `${d}`);
  }
});

test('the queue keeps order across compaction', () => {
  const q = new Queue();
  for (let i = 0; i < 5000; ++i) q.push(i);
  for (let i = 0; i < 3000; ++i) assert.equal(q.shift(), i);
  assert.equal(q.length, 2000);
  assert.deepEqual(q.removeWhere((x) => x % 2 === 0).length, 1000);
  assert.equal(q.shift(), 3001);
  assert.equal(q.drain().length, 999);
  assert.equal(q.shift(), undefined);
});

// Replaces globalThis.WebSocket (absent on Node 20, built in from Node 22)
// for the duration of `fn`.
async function withGlobalWebSocket(value, fn) {
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket');
  Object.defineProperty(globalThis, 'WebSocket', { value, configurable: true, writable: true });
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete globalThis.WebSocket;
    else Object.defineProperty(globalThis, 'WebSocket', saved);
  }
}

test('bad options are refused before connecting', { timeout: 10000 }, async () => {
  // Without a WebSocket of the environment, the browser entry says what to do.
  const noWs = await withGlobalWebSocket(undefined, () => Client.connect({ url: 'ws://127.0.0.1:9/' }).catch((e) => e));
  assert.equal(noWs.code, 'bad_request');
  assert.match(noWs.message, /skiff-client\/node/);
  // With one, it is the one used (this one fails at once: nothing is dialled).
  const urls = [];
  const Refusing = class {
    constructor(url) {
      urls.push(url);
      throw new Error('no network in this test');
    }
  };
  const refused = await withGlobalWebSocket(Refusing, () => Client.connect({ url: 'ws://127.0.0.1:9/' }).catch((e) => e));
  assert.equal(refused.code, 'not_connected');
  assert.match(refused.message, /no network in this test/);
  assert.deepEqual(urls, ['ws://127.0.0.1:9/']);

  const Fake = class {
    constructor() {
      throw new Error('bad options must fail before a socket is made');
    }
  };
  for (const options of [
    { url: 'http://x/', WebSocket: Fake },
    { url: 'ws://x/', WebSocket: Fake, maxInFlight: 0 },
    { url: 'ws://x/', WebSocket: Fake, maxWaiting: -1 },
    { url: 'ws://x/', WebSocket: Fake, requestTimeoutMs: -1 },
    { url: 'ws://x/', WebSocket: Fake, user: 'u' },
    { url: 'ws://x/', WebSocket: Fake, reconnect: { initialDelayMs: 0, maxDelayMs: 10 } },
    { url: 'ws://x/', WebSocket: Fake, reconnect: { initialDelayMs: -5, maxDelayMs: 10 } },
    { url: 'ws://x/', WebSocket: Fake, reconnect: { initialDelayMs: 100, maxDelayMs: 10 } },
    { url: 'ws://x/', WebSocket: Fake, reconnect: { initialDelayMs: 100, maxDelayMs: Infinity } },
    { url: 'ws://x/', WebSocket: Fake, reconnect: { initialDelayMs: NaN, maxDelayMs: 10 } },
    { url: 'ws://x/', WebSocket: Fake, reconnect: { initialDelayMs: 1, maxDelayMs: 10, maxAttempts: 0 } },
    { url: 'ws://x/', WebSocket: Fake, reconnect: true },
  ]) {
    const e = await Client.connect(options).catch((err) => err);
    assert.ok(e instanceof SkiffError, `${JSON.stringify(options)}: ${e}`);
    assert.equal(e.code, 'bad_request', JSON.stringify(options));
  }
});
