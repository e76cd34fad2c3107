// CommitQueue: group commit in front of a DeviceStorage. One commit is in
// flight at a time; changes made meanwhile are merged into the next one,
// which starts when it ends. A burst of 2,000 local writes is then two
// transactions instead of 2,000 that each rewrite the same chunk, and every
// change still lands whole: a write's row and outbox entry are always in the
// same transaction. Each caller's promise resolves when the transaction
// holding its change committed, and rejects with that transaction's error.
// After a failed commit nothing more is committed: every later change is
// refused with the same error (the storage holds the state before it).

import type { DeviceStorage, OutboxEntry, StorageCommit, StoredMeta } from './storage.js';

interface Batch {
  put: Map<number, string>;
  deleted: Set<number>;
  append: OutboxEntry[];
  dropThrough: number; // 0: none
  meta: StoredMeta | undefined;
  waiters: { resolve: () => void; reject: (e: unknown) => void }[];
}

function emptyBatch(): Batch {
  return { put: new Map(), deleted: new Set(), append: [], dropThrough: 0, meta: undefined, waiters: [] };
}

export class CommitQueue {
  private next: Batch | null = null;
  private inFlight = false;
  private failure: unknown = null;
  private drainWaiters: (() => void)[] = [];

  constructor(private readonly storage: DeviceStorage) {}

  /** Queues `change` (merged with others made before the next commit starts). */
  commit(change: StorageCommit): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const b = (this.next ??= emptyBatch());
    for (const id of change.deleteChunks ?? []) {
      b.put.delete(id);
      b.deleted.add(id);
    }
    for (const c of change.putChunks ?? []) b.put.set(c.id, c.text);
    if (change.dropOutboxThrough !== undefined && change.dropOutboxThrough > b.dropThrough) {
      const through = change.dropOutboxThrough;
      b.dropThrough = through;
      // The transaction drops before it appends: entries appended in this
      // batch and acknowledged in it too must not be written at all.
      b.append = b.append.filter((e) => e.seq > through);
    }
    b.append.push(...(change.appendOutbox ?? []));
    if (change.meta) b.meta = change.meta;
    const done = new Promise<void>((resolve, reject) => b.waiters.push({ resolve, reject }));
    if (!this.inFlight) this.startNext();
    return done;
  }

  /**
   * Resolves once every change queued before the call has settled
   * (committed, or refused after a failure); never rejects. Closing the
   * storage before then would lose the changes not yet begun.
   */
  drain(): Promise<void> {
    if (!this.inFlight && !this.next) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private startNext(): void {
    const b = this.next;
    this.next = null;
    if (!b) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of waiters) w();
      return;
    }
    this.inFlight = true;
    const change: StorageCommit = {};
    if (b.put.size > 0) change.putChunks = [...b.put].map(([id, text]) => ({ id, text }));
    if (b.deleted.size > 0) change.deleteChunks = [...b.deleted];
    if (b.append.length > 0) change.appendOutbox = b.append;
    if (b.dropThrough > 0) change.dropOutboxThrough = b.dropThrough;
    if (b.meta) change.meta = b.meta;
    this.storage.commit(change).then(
      () => {
        for (const w of b.waiters) w.resolve();
        this.inFlight = false;
        this.startNext();
      },
      (e) => {
        // Later batches hold chunk text that includes this batch's changes:
        // none of them may land once it failed.
        this.failure = e;
        for (const w of [...b.waiters, ...(this.next?.waiters ?? [])]) w.reject(e);
        this.next = null;
        this.inFlight = false;
        this.startNext(); // nothing left: releases drain()
      },
    );
  }
}
