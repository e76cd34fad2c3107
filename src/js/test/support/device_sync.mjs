// Helpers the device tests share: rows of about 200 bytes, seeding a server
// through a plain client, and reading back every row the server holds.
import { Client } from '../../dist/node.js';
import { rowKey, taskRow } from './device_rows.mjs';

export { rowKey, taskRow } from './device_rows.mjs';

export function connect(server, user) {
  return Client.connect({ url: server.url, user, secret: server.secrets[user], reconnect: false });
}

/** Pushes taskRow(i) for i in [from, to) as `device`, 1,000 a push, seq from `firstSeq`. */
export async function seed(client, { device, group = 'team', table = 'tasks', from = 0, to, firstSeq = 1 }) {
  for (let start = from; start < to; start += 1000) {
    const changes = [];
    for (let i = start; i < Math.min(to, start + 1000); ++i) {
      changes.push({ seq: firstSeq + i - from, group, table, key: rowKey(i), value: taskRow(i) });
    }
    const reply = await client.call('push', { device, changes });
    if (reply.applied !== changes.length) throw new Error(`seed: applied ${reply.applied} of ${changes.length}`);
  }
}

/** Every row the client's user may see, by "group/table/key", through bootstrap pages. */
export async function readBack(client) {
  const rows = new Map();
  let after = null;
  for (let pages = 0; pages < 10000; ++pages) {
    const reply = await client.call('bootstrap', { after, limit: 5000 });
    for (const r of reply.rows) rows.set(`${r.group}/${r.table}/${r.key}`, r.value);
    if (reply.next === null) return rows;
    after = reply.next;
  }
  throw new Error('readBack: too many pages');
}

/** The changes after `since` (all pages), as the server's log holds them. */
export async function changesSince(client, since) {
  const changes = [];
  for (let pages = 0; pages < 10000; ++pages) {
    const reply = await client.call('pull', { since, limit: 5000 });
    changes.push(...reply.changes);
    since = reply.cursor;
    if (!reply.more) return { changes, cursor: since };
  }
  throw new Error('changesSince: too many pages');
}
