// MemoryStorage: a DeviceStorage that keeps everything in this JavaScript
// realm and outlives the devices opened on it (a device reopened on it finds
// its rows, outbox and position); nothing survives a reload. Chunk texts are
// shared with the device's row table, not copied.

import type { ChunkRecord } from './row_table.js';
import type { DeviceStorage, OutboxEntry, StorageCommit, StorageCounters, StoredMeta, StoredState } from './storage.js';

export class MemoryStorage implements DeviceStorage {
  private readonly chunks = new Map<number, string>();
  private outbox: OutboxEntry[] = [];
  private meta: StoredMeta | null = null;
  private transactions = 0;

  async load(): Promise<StoredState> {
    ++this.transactions;
    const chunks: ChunkRecord[] = [...this.chunks].map(([id, text]) => ({ id, text }));
    return { chunks, outbox: this.outbox.map((e) => ({ ...e })), meta: this.meta && clone(this.meta) };
  }

  // Applied before the promise is made, so commits land in call order.
  commit(change: StorageCommit): Promise<void> {
    ++this.transactions;
    for (const id of change.deleteChunks ?? []) this.chunks.delete(id);
    for (const c of change.putChunks ?? []) this.chunks.set(c.id, c.text);
    if (change.dropOutboxThrough !== undefined) {
      const through = change.dropOutboxThrough;
      this.outbox = this.outbox.filter((e) => e.seq > through);
    }
    for (const e of change.appendOutbox ?? []) this.outbox.push({ ...e });
    if (change.meta) this.meta = clone(change.meta);
    return Promise.resolve();
  }

  counters(): StorageCounters {
    return { transactions: this.transactions, requests: 0 };
  }

  close(): void {}
}

function clone(meta: StoredMeta): StoredMeta {
  return {
    position: { ...meta.position, bootstrapAfter: meta.position.bootstrapAfter && { ...meta.position.bootstrapAfter } },
    lastSeq: meta.lastSeq,
    names: meta.names.slice(),
  };
}
