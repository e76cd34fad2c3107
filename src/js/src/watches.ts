// The watches of one Client (docs/protocol.md, "watch / unwatch"): routes
// events, which carry no request id, to their callbacks by the server's
// watch number; remembers the last version each saw; opens them again with
// `since` after a reconnect or an overflow.

import type { Reply } from './call.js';

export interface WatchTarget {
  /** One key; or `prefix`; neither: the whole table. */
  readonly key?: string;
  readonly prefix?: string;
  /** The current values first (`initial` events, then `ready`). */
  readonly initial?: boolean;
}

/** One event as the server sent it ("change", "initial", "ready", "resync", "ended"). */
export interface WatchEvent {
  readonly event: string;
  readonly watch: number;
  readonly key?: string;
  readonly value?: unknown;
  readonly deleted?: boolean;
  readonly coalesced?: boolean;
  readonly version?: number;
  readonly reason?: string;
  readonly message?: string;
}

interface Entry {
  readonly table: string;
  readonly target: WatchTarget;
  readonly onEvent: (event: WatchEvent) => void;
  serverId: number;
  version: number;
}

/** Events of a watch whose reply is not read yet are held, at most this many. */
const MAX_HELD = 10000;

export class Watches {
  private readonly entries = new Map<number, Entry>();
  private readonly byServer = new Map<number, number>();
  private readonly held = new Map<number, WatchEvent[]>();
  private heldCount = 0;
  private nextHandle = 1;

  constructor(private readonly call: (op: string, fields: Record<string, unknown>) => Promise<Reply>) {}

  async open(table: string, target: WatchTarget, onEvent: (event: WatchEvent) => void): Promise<number> {
    const handle = this.nextHandle++;
    this.entries.set(handle, { table, target, onEvent, serverId: 0, version: 0 });
    try {
      await this.send(handle);
    } catch (e) {
      this.entries.delete(handle);
      throw e;
    }
    return handle;
  }

  async close(handle: number): Promise<void> {
    const entry = this.entries.get(handle);
    if (entry === undefined) return;
    this.entries.delete(handle);
    if (entry.serverId === 0) return;
    this.byServer.delete(entry.serverId);
    await this.call('unwatch', { watch: entry.serverId });
  }

  /** A frame that starts with {"event": true when it was one (and was routed). */
  onFrame(text: string): boolean {
    let event: WatchEvent;
    try {
      event = JSON.parse(text) as WatchEvent;
    } catch {
      return false;
    }
    if (typeof event !== 'object' || event === null || typeof event.watch !== 'number') return false;
    const handle = this.byServer.get(event.watch);
    if (handle === undefined) {
      // Its reply may still be on its way to the caller: hold it briefly.
      if (this.heldCount < MAX_HELD) {
        const list = this.held.get(event.watch) ?? [];
        list.push(event);
        this.held.set(event.watch, list);
        this.heldCount++;
      }
      return true;
    }
    this.deliver(handle, event);
    return true;
  }

  /** The connection is back: every watch opens again after its version. */
  onReconnected(): void {
    this.byServer.clear();
    this.held.clear();
    this.heldCount = 0;
    for (const [handle, entry] of this.entries) {
      entry.serverId = 0;
      this.send(handle).catch(() => {}); // a later reconnect tries again
    }
  }

  private deliver(handle: number, event: WatchEvent): void {
    const entry = this.entries.get(handle);
    if (entry === undefined) return;
    if (typeof event.version === 'number') {
      // A resync starts the count again (the server may be a new run, its
      // versions from 1): resuming later goes on from there.
      if (event.event === 'resync' || event.version > entry.version) entry.version = event.version;
    }
    if (event.event === 'ended') {
      this.byServer.delete(entry.serverId);
      entry.serverId = 0;
      if (event.reason === 'overflow') this.send(handle).catch(() => {});
      else this.entries.delete(handle);
    }
    entry.onEvent(event);
  }

  private async send(handle: number): Promise<void> {
    const entry = this.entries.get(handle);
    if (entry === undefined) return;
    const fields: Record<string, unknown> = { table: entry.table };
    if (entry.target.key !== undefined && entry.target.key !== '') fields['key'] = entry.target.key;
    if (entry.target.prefix !== undefined && entry.target.prefix !== '') fields['prefix'] = entry.target.prefix;
    if (entry.version > 0) fields['since'] = entry.version;
    else if (entry.target.initial === true) fields['initial'] = true;
    const reply = await this.call('watch', fields);
    if (!this.entries.has(handle)) return;
    entry.serverId = Number(reply['watch']);
    if (entry.version === 0) entry.version = Number(reply['version']);
    this.byServer.set(entry.serverId, handle);
    const waiting = this.held.get(entry.serverId);
    if (waiting !== undefined) {
      this.held.delete(entry.serverId);
      this.heldCount -= waiting.length;
      for (const event of waiting) this.deliver(handle, event);
    }
  }
}
