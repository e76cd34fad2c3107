// The four sync ops (docs/protocol.md, "Sync"): typed requests and replies
// over any caller with `call(op, fields)`, such as Client. Replies are
// checked field by field, so a malformed reply is an error naming the field
// instead of an undefined read later on.

/** What the sync calls need of a client: Client.call's shape. */
export interface SyncCaller {
  call(op: string, fields?: Record<string, unknown>): Promise<Record<string, unknown>>;
}

/** A row's name: group, table and key (docs/sync.md). */
export interface RowName {
  group: string;
  table: string;
  key: string;
}

/** An outbox entry: the device's write number `seq` and the new value (null deletes). */
export interface SyncChange extends RowName {
  seq: number;
  value: unknown;
}

export interface PushRequest {
  device: string;
  changes: SyncChange[];
}
export interface PushReply {
  applied: number;
  lastSeq: number;
  cursor: number;
}

export interface PullRequest {
  since: number;
  limit?: number;
}
export interface PulledChange extends RowName {
  syncId: number;
  value: unknown; // null: the row was deleted
}
export interface PullReply {
  changes: PulledChange[];
  cursor: number;
  more: boolean;
}

export interface BootstrapRequest {
  after: RowName | null;
  limit?: number;
}
export interface BootstrapRow extends RowName {
  syncId: number;
  value: unknown;
}
export interface BootstrapReply {
  rows: BootstrapRow[];
  cursor: number;
  next: RowName | null;
}

export interface WaitRequest {
  since: number;
  timeoutMs?: number;
}
export interface WaitReply {
  changed: boolean;
  cursor: number;
}

/** A reply that does not have the shape docs/protocol.md gives it. */
export class SyncReplyError extends Error {
  readonly code = 'bad_reply';
  constructor(op: string, field: string) {
    super(`${op} reply: field '${field}' is missing or of the wrong type`);
    this.name = 'SyncReplyError';
  }
}

export async function push(caller: SyncCaller, request: PushRequest): Promise<PushReply> {
  const reply = await caller.call('push', {
    device: request.device,
    changes: request.changes.map((c) => ({
      seq: c.seq,
      group: c.group,
      table: c.table,
      key: c.key,
      value: c.value === undefined ? null : c.value,
    })),
  });
  return {
    applied: count(reply, 'applied', 'push'),
    lastSeq: count(reply, 'last_seq', 'push'),
    cursor: count(reply, 'cursor', 'push'),
  };
}

export async function pull(caller: SyncCaller, request: PullRequest): Promise<PullReply> {
  const fields: Record<string, unknown> = { since: request.since };
  if (request.limit !== undefined) fields.limit = request.limit;
  const reply = await caller.call('pull', fields);
  const changes = list(reply, 'changes', 'pull').map((c) => {
    const o = object(c, 'changes[]', 'pull');
    return { ...rowName(o, 'pull'), syncId: count(o, 'sync_id', 'pull'), value: o.value ?? null };
  });
  return { changes, cursor: count(reply, 'cursor', 'pull'), more: bool(reply, 'more', 'pull') };
}

export async function bootstrap(caller: SyncCaller, request: BootstrapRequest): Promise<BootstrapReply> {
  const fields: Record<string, unknown> = {
    after: request.after ? [request.after.group, request.after.table, request.after.key] : null,
  };
  if (request.limit !== undefined) fields.limit = request.limit;
  const reply = await caller.call('bootstrap', fields);
  const rows = list(reply, 'rows', 'bootstrap').map((r) => {
    const o = object(r, 'rows[]', 'bootstrap');
    return { ...rowName(o, 'bootstrap'), syncId: count(o, 'sync_id', 'bootstrap'), value: o.value ?? null };
  });
  let next: RowName | null = null;
  if (reply.next !== null && reply.next !== undefined) {
    const n = reply.next;
    if (!Array.isArray(n) || n.length !== 3 || !n.every((s) => typeof s === 'string')) {
      throw new SyncReplyError('bootstrap', 'next');
    }
    next = { group: n[0], table: n[1], key: n[2] };
  }
  return { rows, cursor: count(reply, 'cursor', 'bootstrap'), next };
}

export async function wait(caller: SyncCaller, request: WaitRequest): Promise<WaitReply> {
  const fields: Record<string, unknown> = { since: request.since };
  if (request.timeoutMs !== undefined) fields.timeout_ms = request.timeoutMs;
  const reply = await caller.call('wait', fields);
  return { changed: bool(reply, 'changed', 'wait'), cursor: count(reply, 'cursor', 'wait') };
}

function count(o: Record<string, unknown>, field: string, op: string): number {
  const v = o[field];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new SyncReplyError(op, field);
  return v;
}

function bool(o: Record<string, unknown>, field: string, op: string): boolean {
  const v = o[field];
  if (typeof v !== 'boolean') throw new SyncReplyError(op, field);
  return v;
}

function list(o: Record<string, unknown>, field: string, op: string): unknown[] {
  const v = o[field];
  if (!Array.isArray(v)) throw new SyncReplyError(op, field);
  return v;
}

function object(v: unknown, field: string, op: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new SyncReplyError(op, field);
  return v as Record<string, unknown>;
}

function rowName(o: Record<string, unknown>, op: string): RowName {
  for (const f of ['group', 'table', 'key']) {
    if (typeof o[f] !== 'string') throw new SyncReplyError(op, f);
  }
  return { group: o.group as string, table: o.table as string, key: o.key as string };
}
