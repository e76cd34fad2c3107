// DeviceStorage: where a device keeps its rows (as the row table's chunks),
// its outbox of writes the server has not confirmed, and its sync position.
//
// Every commit is one transaction: a local write and its outbox entry land
// together or not at all, and so do a page of server rows and the cursor
// after it. Commits take effect in the order they were called, even when
// the caller does not wait for one before making the next (the device
// applies writes in memory at once and lets their commits follow).
// Implementations: MemoryStorage and IndexedDbStorage. A storage is used by
// one device at a time.

import type { RowName } from '../sync.js';
import type { ChunkRecord } from './row_table.js';

/** A write the device made, waiting for the server; `value` is plain JSON text, null deletes. */
export interface OutboxEntry extends RowName {
  seq: number;
  value: string | null;
}

/** Where the device stands with the server. */
export interface SyncPosition {
  cursor: number; // pull from here
  bootstrapped: boolean; // the first full download finished
  bootstrapAfter: RowName | null; // the bootstrap page to fetch next while one is in progress
  bootstrapCursor: number; // the cursor of the bootstrap's first page
}

export const kInitialPosition: SyncPosition = Object.freeze({
  cursor: 0,
  bootstrapped: false,
  bootstrapAfter: null,
  bootstrapCursor: 0,
});

/** The device-wide values stored beside the rows. */
export interface StoredMeta {
  position: SyncPosition;
  lastSeq: number; // the highest seq ever handed out, so a reopened device never reuses one
  names: string[]; // the member-name dictionary the chunk text refers to
}

/** Everything load reads back. */
export interface StoredState {
  chunks: ChunkRecord[];
  outbox: OutboxEntry[]; // in seq order
  meta: StoredMeta | null; // null for a new storage
}

/** One transaction's worth of changes; absent parts are left alone. */
export interface StorageCommit {
  putChunks?: ChunkRecord[];
  deleteChunks?: number[];
  appendOutbox?: OutboxEntry[];
  dropOutboxThrough?: number; // drop entries with seq <= this
  meta?: StoredMeta;
}

/** Real counts of the storage's work since it was created. */
export interface StorageCounters {
  transactions: number;
  requests: number; // IndexedDB requests (get, getAll, put, delete); 0 for memory
}

export interface DeviceStorage {
  /** Reads the whole stored state; rejects with the storage's error when it cannot be read. */
  load(): Promise<StoredState>;
  /** Applies `change` in one transaction; rejects with nothing applied when it fails. */
  commit(change: StorageCommit): Promise<void>;
  counters(): StorageCounters;
  /** Releases the storage (IndexedDB: closes the database). */
  close(): void;
}
