// Unit tests of the typed sync calls (src/sync.ts): requests as
// docs/protocol.md writes them, and replies checked field by field.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { bootstrap, pull, push, wait } from '../dist/sync.js';

// A caller that records the request and answers with `reply`.
function caller(reply) {
  const sent = [];
  return { sent, call: async (op, fields) => (sent.push({ op, fields }), reply) };
}

test('requests carry the protocol field names', async () => {
  const c = caller({ applied: 1, last_seq: 4, cursor: 9 });
  assert.deepEqual(await push(c, { device: 'd', changes: [{ seq: 4, group: 'g', table: 't', key: 'k', value: { a: 1 } }] }), {
    applied: 1,
    lastSeq: 4,
    cursor: 9,
  });
  assert.deepEqual(c.sent[0], { op: 'push', fields: { device: 'd', changes: [{ seq: 4, group: 'g', table: 't', key: 'k', value: { a: 1 } }] } });

  const b = caller({ rows: [{ group: 'g', table: 't', key: 'k', value: 1, sync_id: 3 }], cursor: 5, next: ['g', 't', 'k'] });
  const page = await bootstrap(b, { after: { group: 'g', table: 't', key: 'a' }, limit: 2 });
  assert.deepEqual(b.sent[0].fields, { after: ['g', 't', 'a'], limit: 2 });
  assert.deepEqual(page, { rows: [{ group: 'g', table: 't', key: 'k', value: 1, syncId: 3 }], cursor: 5, next: { group: 'g', table: 't', key: 'k' } });

  const p = caller({ changes: [{ group: 'g', table: 't', key: 'k', value: null, sync_id: 6 }], cursor: 6, more: false });
  assert.deepEqual((await pull(p, { since: 5, limit: 10 })).changes[0], { group: 'g', table: 't', key: 'k', value: null, syncId: 6 });
  assert.deepEqual(p.sent[0].fields, { since: 5, limit: 10 });

  const w = caller({ changed: true, cursor: 7 });
  assert.deepEqual(await wait(w, { since: 6, timeoutMs: 100 }), { changed: true, cursor: 7 });
  assert.deepEqual(w.sent[0].fields, { since: 6, timeout_ms: 100 });
});

test('a malformed reply is an error naming the field', async () => {
  await assert.rejects(push(caller({ applied: 1, cursor: 2 }), { device: 'd', changes: [] }), /'last_seq'/);
  await assert.rejects(pull(caller({ changes: [{ group: 'g', table: 't', sync_id: 1 }], cursor: 1, more: false }), { since: 0 }), /'key'/);
  await assert.rejects(pull(caller({ changes: [], cursor: -1, more: false }), { since: 0 }), /'cursor'/);
  await assert.rejects(bootstrap(caller({ rows: [], cursor: 1, next: ['g', 't'] }), { after: null }), /'next'/);
  await assert.rejects(wait(caller({ changed: 'yes', cursor: 1 }), { since: 0 }), /'changed'/);
});
