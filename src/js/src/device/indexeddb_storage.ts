// IndexedDbStorage: a DeviceStorage on one IndexedDB database with three
// object stores: `chunks` (the row table's chunks, a few large text records
// instead of one record per row), `outbox` (by seq) and `meta` (one record:
// position, last seq handed out, member names).
//
// Costs, counted in counters(): load is one transaction of 3 requests
// (getAll chunks, getAll outbox, get meta) plus the database open, whatever
// the number of rows; a commit is one transaction of one request per chunk
// written or deleted, per outbox entry appended, one to drop acknowledged
// entries and one for the meta record.
//
// Every commit's transaction spans all three stores and is created in the
// call, so IndexedDB runs commits in call order (readwrite transactions
// with overlapping scopes run in the order they were created).

import type { ChunkRecord } from './row_table.js';
import type { DeviceStorage, OutboxEntry, StorageCommit, StorageCounters, StoredMeta, StoredState } from './storage.js';

const kVersion = 1;
const kStores = ['chunks', 'outbox', 'meta'];
const kMetaKey = 'state';

/** An IndexedDB failure, with the operation that failed. */
export class StorageError extends Error {
  readonly code = 'storage';
  constructor(message: string, readonly cause?: unknown) {
    super(message);
    this.name = 'StorageError';
  }
}

export interface IndexedDbStorageOptions {
  /** The IndexedDB factory (default: globalThis.indexedDB; fake-indexeddb's in Node tests). */
  indexedDB?: IDBFactory;
  /** The key-range class that goes with it (default: globalThis.IDBKeyRange). */
  IDBKeyRange?: typeof IDBKeyRange;
}

export class IndexedDbStorage implements DeviceStorage {
  private transactions = 0;
  private requests = 0;

  private constructor(
    private readonly db: IDBDatabase,
    private readonly keyRange: typeof IDBKeyRange,
  ) {}

  /** Opens (creating when new) the database `name`; rejects with a StorageError. */
  static async open(name: string, options: IndexedDbStorageOptions = {}): Promise<IndexedDbStorage> {
    const factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB;
    if (!factory) throw new StorageError('IndexedDB is not available here');
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      // A blocked open rejects at once, but the request goes on and succeeds
      // once the older connection closes: that connection is nobody's then.
      let refused = false;
      const fail = (error: StorageError) => {
        refused = true;
        reject(error);
      };
      const req = factory.open(name, kVersion);
      req.onupgradeneeded = () => {
        const d = req.result;
        if (!d.objectStoreNames.contains('chunks')) d.createObjectStore('chunks', { keyPath: 'id' });
        if (!d.objectStoreNames.contains('outbox')) d.createObjectStore('outbox', { keyPath: 'seq' });
        if (!d.objectStoreNames.contains('meta')) d.createObjectStore('meta');
      };
      req.onsuccess = () => {
        if (refused) {
          req.result.close();
          return;
        }
        // Another page deleting or upgrading the database must not wait for
        // this one to close: let go, and later commits fail with a StorageError.
        req.result.onversionchange = () => req.result.close();
        resolve(req.result);
      };
      req.onerror = () => fail(new StorageError(`cannot open IndexedDB database '${name}': ${req.error}`, req.error));
      req.onblocked = () => fail(new StorageError(`IndexedDB database '${name}' is held open at an older version`));
    });
    const keyRange = options.IDBKeyRange ?? (globalThis as { IDBKeyRange?: typeof IDBKeyRange }).IDBKeyRange;
    if (!keyRange) {
      db.close();
      throw new StorageError('IDBKeyRange is not available here: pass it with the factory');
    }
    const storage = new IndexedDbStorage(db, keyRange);
    storage.requests = 1; // the open
    return storage;
  }

  /** Deletes the database `name` (no storage may have it open). */
  static delete(name: string, options: IndexedDbStorageOptions = {}): Promise<void> {
    const factory = options.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB;
    if (!factory) return Promise.reject(new StorageError('IndexedDB is not available here'));
    return new Promise((resolve, reject) => {
      const req = factory.deleteDatabase(name);
      req.onsuccess = () => resolve();
      req.onerror = () => reject(new StorageError(`cannot delete IndexedDB database '${name}': ${req.error}`));
    });
  }

  load(): Promise<StoredState> {
    const tx = this.begin('readonly');
    const chunks = this.request<ChunkRecord[]>(tx.objectStore('chunks').getAll());
    const outbox = this.request<OutboxEntry[]>(tx.objectStore('outbox').getAll());
    const meta = this.request<StoredMeta | undefined>(tx.objectStore('meta').get(kMetaKey));
    return finish(tx, 'load').then(() => ({
      chunks: chunks.result,
      outbox: outbox.result,
      meta: meta.result ?? null,
    }));
  }

  commit(change: StorageCommit): Promise<void> {
    let tx: IDBTransaction | undefined;
    try {
      tx = this.begin('readwrite');
      const chunks = tx.objectStore('chunks');
      for (const id of change.deleteChunks ?? []) this.request(chunks.delete(id));
      for (const c of change.putChunks ?? []) this.request(chunks.put({ id: c.id, text: c.text }));
      const outbox = tx.objectStore('outbox');
      if (change.dropOutboxThrough !== undefined && change.dropOutboxThrough > 0) {
        this.request(outbox.delete(this.keyRange.upperBound(change.dropOutboxThrough)));
      }
      for (const e of change.appendOutbox ?? []) this.request(outbox.put(e));
      if (change.meta) this.request(tx.objectStore('meta').put(change.meta, kMetaKey));
    } catch (e) {
      // A request refused when made (a bad key) leaves the transaction
      // open: abort it so the requests made before it do not commit.
      try {
        tx?.abort();
      } catch {
        // already finished
      }
      return Promise.reject(new StorageError(`commit failed: ${e}`, e));
    }
    return finish(tx, 'commit');
  }

  counters(): StorageCounters {
    return { transactions: this.transactions, requests: this.requests };
  }

  close(): void {
    this.db.close();
  }

  private begin(mode: IDBTransactionMode): IDBTransaction {
    ++this.transactions;
    return this.db.transaction(kStores, mode);
  }

  // Counts a request; its result is read once the transaction completed.
  private request<T>(req: IDBRequest): { readonly result: T } {
    ++this.requests;
    return {
      get result(): T {
        return req.result as T;
      },
    };
  }
}

function finish(tx: IDBTransaction, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(new StorageError(`IndexedDB ${what} aborted: ${tx.error ?? 'no reason given'}`, tx.error));
    // An error event is followed by abort, which rejects.
    tx.onerror = (event) => event.stopPropagation();
  });
}
