// Device: an application's synced copy of the rows its user may see, for
// browsers (IndexedDB storage) and Node (memory storage, or IndexedDB from
// a shim).
//
// open loads the rows, the outbox and the sync position from a
// DeviceStorage: the device is ready when the promise resolves and serves
// reads and scans from memory. Writes apply locally at once (row and outbox
// entry in one storage transaction) and reach the server through a sync
// loop: push the outbox, pull what changed, hold a wait until something else
// changes, repeat, backing off exponentially on errors. Pulled changes
// apply under the pending outbox, so a device's unconfirmed writes stay
// visible until the server confirms or overrides them; the server's order
// decides the final value of a row (docs/sync.md).
//
// Outbox entries the server refuses for good (forbidden, bad_request,
// too_large) are dropped and counted in `rejected`; the local row keeps the
// refused value until the server next changes that row.
//
// A failed storage commit stops the sync loop for good: `state` becomes
// 'failed', `lastError` is the storage's error and the waits reject with it.

import { Client } from '../client.js';
import { SkiffError } from '../errors.js';
import type { RowName } from '../sync.js';
import { globalWebSocket, type WebSocketConstructorLike } from '../transport.js';
import { Replica, type RemoteListener, type RowText } from './replica.js';
import type { DeviceStorage } from './storage.js';
import { SyncLoop, type LoopCounts, type SyncConnection, type SyncState } from './sync_loop.js';
import { WireCounter, type WireCounts } from './wire_counter.js';

export interface DeviceOptions {
  /** ws://host:port/ of skiffd (unused when `sync` is false). */
  url?: string;
  user?: string;
  secret?: string;
  /** A signed token to log in with instead of user and secret (what a page should use). */
  token?: string;
  /** The device's id (up to 256 bytes); it belongs to the user who first pushes with it. */
  deviceId: string;
  /** false: local rows only, no connection (the device stays offline). Default true. */
  sync?: boolean;
  /** Rows per bootstrap page and changes per pull. Default 1000. */
  page?: number;
  /** Outbox entries per push. Default 500. */
  maxPush?: number;
  /** How long the server holds the device's wait (at most 60000). Default 20000. */
  waitTimeoutMs?: number;
  /** Requests other than the wait fail after this long. Default 10000. */
  requestTimeoutMs?: number;
  backoffMinMs?: number; // default 50
  backoffMaxMs?: number; // default 5000
  /** The WebSocket class; default the environment's own (pass `ws` in Node 20). */
  WebSocket?: WebSocketConstructorLike;
  /** Characters per stored chunk of rows (row_table.ts). Default 32768. */
  chunkChars?: number;
}

/** What a device did since it opened; the storage's counts since it was created. */
export interface DeviceCounters extends LoopCounts, WireCounts {
  storageTransactions: number;
  storageRequests: number; // IndexedDB requests
}

export class Device {
  private constructor(
    private readonly replica: Replica,
    private readonly storage: DeviceStorage,
    private loop: SyncLoop | null,
    private readonly wire: WireCounter,
  ) {}

  /**
   * Loads `storage` (the device is ready on return) and, unless
   * options.sync is false, starts the sync loop. Rejects with bad_request
   * for bad options, or with the storage's error when it cannot be read.
   */
  static async open(options: DeviceOptions, storage: DeviceStorage): Promise<Device> {
    const sync = options.sync ?? true;
    if (typeof options.deviceId !== 'string' || options.deviceId.length === 0 || options.deviceId.length > 256) {
      throw new SkiffError('bad_request', 'deviceId must be a string of 1 to 256 characters');
    }
    const page = whole('page', options.page, 1000, 10000);
    const maxPush = whole('maxPush', options.maxPush, 500, 1000);
    const waitTimeoutMs = whole('waitTimeoutMs', options.waitTimeoutMs, 20000, 60000);
    const requestTimeoutMs = whole('requestTimeoutMs', options.requestTimeoutMs, 10000, 2 ** 31 - 1);
    const backoffMinMs = whole('backoffMinMs', options.backoffMinMs, 50, 2 ** 31 - 1);
    const backoffMaxMs = whole('backoffMaxMs', options.backoffMaxMs, 5000, 2 ** 31 - 1);
    const chunkChars = whole('chunkChars', options.chunkChars, 32768, 2 ** 28);
    const wire = new WireCounter();
    let connect: (() => Promise<SyncConnection>) | null = null;
    if (sync) {
      const url = options.url;
      if (typeof url !== 'string' || !/^wss?:\/\//.test(url)) {
        throw new SkiffError('bad_request', 'url must be a ws:// or wss:// URL');
      }
      const base = options.WebSocket ?? globalWebSocket();
      if (!base) throw new SkiffError('bad_request', 'no WebSocket in this environment: pass options.WebSocket');
      const counted = wire.wrap(base) as WebSocketConstructorLike;
      connect = () =>
        Client.connect({
          url,
          user: options.user,
          secret: options.secret,
          token: options.token,
          WebSocket: counted,
          // The wait's hold is added by the client; this bounds the rest.
          requestTimeoutMs,
          reconnect: false, // the loop reconnects, with its back-off
        });
    }
    const replica = await Replica.load(storage, chunkChars);
    let loop: SyncLoop | null = null;
    const device: Device = new Device(replica, storage, null, wire);
    if (connect) {
      loop = new SyncLoop(
        replica,
        { deviceId: options.deviceId, connect, page, maxPush, waitTimeoutMs, backoffMinMs, backoffMaxMs },
        () => device.counters(),
      );
      device.loop = loop;
      loop.start();
    }
    return device;
  }

  /**
   * Stops the sync loop, closes the connection, lets every change already
   * made reach the storage (or fail), then closes the storage. Idempotent.
   */
  async close(): Promise<void> {
    await this.loop?.close();
    await this.replica.drain();
    this.storage.close();
  }

  /** The row's value (parsed from its text when read), or undefined. */
  get(name: RowName): unknown {
    const text = this.replica.getText(name);
    return text === undefined ? undefined : JSON.parse(text);
  }

  /** The row's JSON text, or undefined. */
  getText(name: RowName): string | undefined {
    return this.replica.getText(name);
  }

  /** The rows of one table of one group, in key order, values as JSON text. */
  scan(group: string, table: string): RowText[] {
    return this.replica.scan(group, table);
  }

  get size(): number {
    return this.replica.size;
  }

  /**
   * Writes locally (visible at once) and queues the change for the server;
   * resolves once it is stored. bad_request / too_large for a bad name or
   * value (nothing changed); the storage's error when its commit fails.
   */
  put(name: RowName, value: unknown): Promise<void> {
    if (value === null || value === undefined) {
      return Promise.reject(new SkiffError('bad_request', 'value must not be null: use delete'));
    }
    return this.write(name, value);
  }

  delete(name: RowName): Promise<void> {
    return this.write(name, null);
  }

  /**
   * Calls `listener` after each page or pull of server rows applied here
   * (in memory; its storage commit follows): the number of rows it changed
   * (those with pending local writes are not), and the sync position.
   * Returns its removal.
   */
  onRemoteChanges(listener: RemoteListener): () => void {
    return this.replica.onRemote(listener);
  }

  get state(): SyncState {
    return this.loop?.state ?? 'offline';
  }
  get outboxSize(): number {
    return this.replica.outboxSize;
  }
  get cursor(): number {
    return this.replica.position.cursor;
  }
  /** The sync loop's last error (null once a round succeeds; the storage's error once 'failed'). */
  get lastError(): unknown {
    return this.loop?.lastError ?? null;
  }
  /** The rows' chunks, characters and offset-array bytes in memory. */
  get shape(): { chunks: number; chars: number; indexBytes: number } {
    return this.replica.shape;
  }

  counters(): DeviceCounters {
    const s = this.storage.counters();
    const empty: LoopCounts = {
      requests: 0,
      pushes: 0,
      pulls: 0,
      bootstraps: 0,
      waits: 0,
      rowsReceived: 0,
      changesReceived: 0,
      changesPushed: 0,
      rejected: 0,
      connects: 0,
    };
    return {
      ...(this.loop?.counts ?? empty),
      ...this.wire.counts,
      storageTransactions: s.transactions,
      storageRequests: s.requests,
    };
  }

  /** The counters as they stood when the device last became up to date (null before). */
  syncedCounters(): DeviceCounters | null {
    return (this.loop?.syncedCounters as DeviceCounters | null | undefined) ?? null;
  }

  /**
   * Resolves once a sync round that started after this call has pushed the
   * whole outbox and pulled (interrupting a held wait to start one).
   * Rejects with unavailable after `timeoutMs`, naming the loop's last error,
   * and at once with the storage's error when a commit failed.
   */
  waitUntilSynced(timeoutMs: number): Promise<void> {
    if (!this.loop) return Promise.reject(new SkiffError('bad_request', 'this device was opened without sync'));
    return this.loop.waitUntilSynced(timeoutMs);
  }

  /**
   * Resolves once the device has been up to date since it opened;
   * unavailable after `timeoutMs`; the storage's error at once when a commit failed.
   */
  waitUntilUpToDate(timeoutMs: number): Promise<void> {
    if (!this.loop) return Promise.reject(new SkiffError('bad_request', 'this device was opened without sync'));
    return this.loop.waitUntilUpToDate(timeoutMs);
  }

  // The loop learns of the write from the replica once it is stored (only then may it be pushed).
  private write(name: RowName, value: unknown): Promise<void> {
    try {
      return this.replica.write(name, value);
    } catch (e) {
      return Promise.reject(e);
    }
  }
}

function whole(name: string, value: number | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new SkiffError('bad_request', `${name} must be an integer from 1 to ${max}`);
  }
  return value;
}
