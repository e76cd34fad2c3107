// Replica: a device's rows and its outbox of writes the server has not
// confirmed, kept on a DeviceStorage, with the rows served from memory (a
// RowTable). It knows nothing of the wire: the sync loop feeds it the
// server's rows and takes its outbox to push.
//
// Server rows apply under the pending outbox: a row with a local write the
// server has not confirmed keeps the local value, so a device's own writes
// stay visible until the server confirms or overrides them.
//
// Every change applies in memory at once and commits with the storage in
// call order, a change whole in one transaction (changes made while a
// commit is in flight share the next one: commit_queue.ts). A failed commit
// leaves memory ahead of the storage, so the replica then refuses every
// further change with that error (reopen the device to continue from what
// the storage holds).
//
// Only stored outbox entries are handed out to push (`entries`): the server
// keeps the highest seq it saw per device and drops anything at or below
// it as a retry, so a seq pushed before its commit landed, then lost with
// that commit (a reload, a failed transaction), would be handed out again
// by the reopened device and its new write silently dropped.

import { SkiffError } from '../errors.js';
import type { RowName } from '../sync.js';
import { CommitQueue } from './commit_queue.js';
import { MemberNames } from './member_names.js';
import { RowTable, decodeName, encodeName, type ChunkChanges, type EncodedWrite } from './row_table.js';
import { kInitialPosition, type DeviceStorage, type OutboxEntry, type StorageCommit, type StoredMeta, type SyncPosition } from './storage.js';

/** A row as a scan returns it: its name and its plain JSON text. */
export interface RowText extends RowName {
  value: string;
}

/** Told of each batch of server rows applied: how many rows changed here, and the position after it. */
export type RemoteListener = (applied: number, position: SyncPosition) => void;

/** Told when written entries become pushable (their commit landed) and when a commit fails. */
export type StorageListener = () => void;

/** A change from the server: the row and its new value (null deletes). */
export interface RemoteWrite extends RowName {
  value: unknown;
}

const kTableName = /^[A-Za-z0-9_-]{1,64}$/;
const kLoneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const kMaxKeyBytes = 1024;

export class Replica {
  private outbox: OutboxEntry[] = [];
  private readonly pending = new Map<string, number>(); // outbox entries per encoded name
  private positionValue: SyncPosition = kInitialPosition;
  private lastSeq = 0; // the highest seq handed out
  private durableSeq = 0; // the highest seq whose entry is in storage
  private failed: Error | null = null;
  private readonly listeners = new Set<RemoteListener>();
  private readonly storageListeners = new Set<StorageListener>();
  private readonly commits: CommitQueue;

  private constructor(
    storage: DeviceStorage,
    private readonly table: RowTable,
    private readonly names: MemberNames,
  ) {
    this.commits = new CommitQueue(storage);
  }

  /** Reads rows, outbox and position from `storage`; rejects with the storage's error. */
  static async load(storage: DeviceStorage, chunkChars: number): Promise<Replica> {
    const state = await storage.load();
    const table = new RowTable(chunkChars);
    table.load(state.chunks);
    const replica = new Replica(storage, table, new MemberNames(state.meta?.names ?? []));
    for (const e of state.outbox) replica.queue(e);
    if (state.meta) replica.positionValue = state.meta.position;
    replica.lastSeq = Math.max(state.meta?.lastSeq ?? 0, replica.outbox.at(-1)?.seq ?? 0);
    replica.durableSeq = replica.lastSeq;
    return replica;
  }

  get size(): number {
    return this.table.size;
  }
  /** Outbox entries, stored or not yet. */
  get outboxSize(): number {
    return this.outbox.length;
  }
  /** Whether the outbox holds a stored entry, which `entries` would hand out. */
  get hasPushable(): boolean {
    return this.outbox.length > 0 && this.outbox[0].seq <= this.durableSeq;
  }
  /** The storage's error once a commit failed (the replica refuses every change since), else null. */
  get failure(): Error | null {
    return this.failed;
  }
  get position(): SyncPosition {
    return this.positionValue;
  }
  /** The rows' chunk count, characters and offset-array bytes, for memory figures. */
  get shape(): { chunks: number; chars: number; indexBytes: number } {
    return { chunks: this.table.chunkCount, chars: this.table.textChars, indexBytes: this.table.indexBytes };
  }

  /** The row's plain JSON text, or undefined. */
  getText(name: RowName): string | undefined {
    const text = this.table.get(encodeName(name));
    return text === undefined ? undefined : this.names.decode(text);
  }

  /** The rows of one table of one group, in key order (the keys' UTF-8 bytes, as the server's). */
  scan(group: string, table: string): RowText[] {
    const rows: RowText[] = [];
    for (const [name, value] of this.table.scan(`${group}\t${table}\t`)) {
      rows.push({ ...decodeName(name), value: this.names.decode(value) });
    }
    return rows;
  }

  /**
   * Sets (value null: deletes) a row and appends the change to the outbox:
   * in memory at once, in storage by the time the promise resolves (and
   * pushable from then on). Throws SkiffError bad_request / too_large for
   * a bad name or value, with nothing changed.
   */
  write(name: RowName, value: unknown): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    validateName(name);
    const encoded = value === null || value === undefined ? null : this.encode(value);
    const entry: OutboxEntry = {
      seq: this.lastSeq + 1,
      group: name.group,
      table: name.table,
      key: name.key,
      value: encoded === null ? null : this.names.decode(encoded),
    };
    const chunks = this.table.apply([{ name: encodeName(name), value: encoded }]);
    this.lastSeq = entry.seq;
    this.queue(entry);
    return this.commit(chunks, { appendOutbox: [entry], meta: this.meta() }).then(() => {
      // Commits land in call order, so every entry up to this one is stored.
      if (entry.seq > this.durableSeq) this.durableSeq = entry.seq;
      this.tellStorage();
    });
  }

  /** The oldest `max` stored outbox entries, in seq order (entries whose commit is pending are left out). */
  entries(max: number): OutboxEntry[] {
    let n = Math.min(max, this.outbox.length);
    while (n > 0 && this.outbox[n - 1].seq > this.durableSeq) --n;
    return this.outbox.slice(0, n);
  }

  /** Drops the outbox entries with seq <= `lastSeq`; resolves to how many. */
  acknowledge(lastSeq: number): Promise<number> {
    if (this.failed) return Promise.reject(this.failed);
    let dropped = 0;
    while (dropped < this.outbox.length && this.outbox[dropped].seq <= lastSeq) {
      const name = encodeName(this.outbox[dropped]);
      const n = (this.pending.get(name) ?? 1) - 1;
      if (n === 0) this.pending.delete(name);
      else this.pending.set(name, n);
      ++dropped;
    }
    if (dropped === 0) return Promise.resolve(0);
    this.outbox = this.outbox.slice(dropped);
    return this.commit(null, { dropOutboxThrough: lastSeq }).then(() => dropped);
  }

  /**
   * Applies the server's `writes` (except to rows with pending local
   * writes) and records `position`, in one storage transaction.
   */
  applyRemote(writes: readonly RemoteWrite[], position: SyncPosition): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const encoded: EncodedWrite[] = [];
    for (const w of writes) {
      const name = encodeName(w);
      if (this.pending.has(name)) continue;
      encoded.push({ name, value: w.value === null || w.value === undefined ? null : this.encode(w.value) });
    }
    // A pull that found nothing new is common (every round ends with one): no transaction.
    if (encoded.length === 0 && samePosition(position, this.positionValue)) return Promise.resolve();
    const chunks = this.table.apply(encoded);
    this.positionValue = position;
    const stored = this.commit(chunks, { meta: this.meta() });
    for (const listener of this.listeners) {
      try {
        listener(encoded.length, position);
      } catch (e) {
        // The listener's own bug: surface it without breaking the sync.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
    return stored;
  }

  /** Calls `listener` after each batch of server rows applies; returns its removal. */
  onRemote(listener: RemoteListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Calls `listener` when stored entries become pushable and when a commit fails; returns its removal. */
  onStorage(listener: StorageListener): () => void {
    this.storageListeners.add(listener);
    return () => this.storageListeners.delete(listener);
  }

  private encode(value: unknown): string {
    try {
      return this.names.encode(value);
    } catch (e) {
      const code = (e as { code?: string }).code === 'too_large' ? 'too_large' : 'bad_request';
      throw new SkiffError(code, (e as Error).message);
    }
  }

  private queue(entry: OutboxEntry): void {
    this.outbox.push(entry);
    const name = encodeName(entry);
    this.pending.set(name, (this.pending.get(name) ?? 0) + 1);
  }

  // Written with every change: small, and the names must land with the text that uses them.
  private meta(): StoredMeta {
    return { position: this.positionValue, lastSeq: this.lastSeq, names: this.names.list() };
  }

  private commit(chunks: ChunkChanges | null, rest: StorageCommit): Promise<void> {
    const change: StorageCommit = { ...rest };
    if (chunks && chunks.put.length > 0) change.putChunks = chunks.put;
    if (chunks && chunks.deleted.length > 0) change.deleteChunks = chunks.deleted;
    return this.commits.commit(change).catch((e: Error) => {
      if (!this.failed) {
        this.failed = e;
        this.tellStorage();
      }
      throw e;
    });
  }

  /** Waits for every change made so far to commit or fail; never rejects. */
  drain(): Promise<void> {
    return this.commits.drain();
  }

  private tellStorage(): void {
    for (const listener of this.storageListeners) listener();
  }
}

function samePosition(a: SyncPosition, b: SyncPosition): boolean {
  const after = (p: SyncPosition) => (p.bootstrapAfter ? encodeName(p.bootstrapAfter) : null);
  return (
    a.cursor === b.cursor &&
    a.bootstrapped === b.bootstrapped &&
    a.bootstrapCursor === b.bootstrapCursor &&
    after(a) === after(b)
  );
}

function validateName(name: RowName): void {
  for (const part of ['group', 'table'] as const) {
    if (typeof name[part] !== 'string' || !kTableName.test(name[part])) {
      throw new SkiffError('bad_request', `${part} must match [A-Za-z0-9_-]{1,64}`);
    }
  }
  const key = name.key;
  if (typeof key !== 'string' || key.length === 0) throw new SkiffError('bad_request', 'key must be a non-empty string');
  if (key.includes('\u0000') || kLoneSurrogate.test(key)) {
    throw new SkiffError('bad_request', 'key must be valid UTF-8 without U+0000');
  }
  if (utf8Length(key) > kMaxKeyBytes) throw new SkiffError('too_large', `key is over ${kMaxKeyBytes} bytes`);
}

function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; ++i) {
    const c = s.charCodeAt(i);
    if (c >= 0x800 && (c < 0xd800 || c > 0xdfff)) n += 2;
    else if (c >= 0x80 && c < 0x800) n += 1;
    // A surrogate pair: two code units for four bytes.
    else if (c >= 0xd800 && c <= 0xdfff) n += 1;
  }
  return n;
}
