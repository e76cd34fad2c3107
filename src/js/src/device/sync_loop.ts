// SyncLoop: the task that keeps a replica in step with the server. Rounds
// of: connect when needed; bootstrap page by page until done (the position
// is stored after each page, so a reload resumes); push the outbox in seq
// order, `maxPush` entries a request, dropping what `last_seq` confirms;
// pull until `more` is false; then, with nothing left to push, hold a wait
// at the cursor. A local write interrupts the hold once its commit landed
// (only stored entries are pushed: replica.ts); the wait stays in flight
// and the next hold reuses it, so a device holds one wait at most.
// Errors back off exponentially; a lost connection is reopened by the loop,
// not by the client (so the loop's back-off is the only one).
//
// A failed storage commit ends the loop for good (state 'failed'): the
// replica refuses every change after it, so retrying could never succeed.
//
// Outbox entries the server refuses for good (forbidden, bad_request,
// too_large) would block the outbox forever: the loop finds the entry by
// pushing one at a time, drops it and counts it `rejected`.

import { SkiffError } from '../errors.js';
import { bootstrap, pull, push, wait, type BootstrapReply, type SyncCaller } from '../sync.js';
import type { Replica } from './replica.js';
import { Signal, delay, firstOf } from './signal.js';
import type { WireCounts } from './wire_counter.js';

/** 'failed': a storage commit failed and the loop stopped; reopen the device to go on. */
export type SyncState = 'offline' | 'syncing' | 'online' | 'failed';

/** What a connection must offer the loop: Client's call and close. */
export interface SyncConnection extends SyncCaller {
  close(): Promise<void>;
}

export interface SyncLoopOptions {
  deviceId: string;
  connect: () => Promise<SyncConnection>;
  page: number;
  maxPush: number;
  waitTimeoutMs: number;
  backoffMinMs: number;
  backoffMaxMs: number;
}

/** Requests by op and what they carried, counted as the loop makes them. */
export interface LoopCounts {
  requests: number; // push + pull + bootstrap + wait
  pushes: number;
  pulls: number;
  bootstraps: number;
  waits: number;
  rowsReceived: number; // bootstrap rows
  changesReceived: number; // pulled changes
  changesPushed: number; // outbox entries the server applied or had
  rejected: number; // outbox entries refused for good
  connects: number;
}

const kFinal = new Set(['forbidden', 'bad_request', 'too_large']);
// Failures of the connection itself: the loop drops it and connects again.
const kConnectionLost = new Set(['connection_lost', 'timeout', 'not_connected', 'closed', 'protocol_error']);

interface HeldWait {
  done: boolean;
  error: unknown;
  settled: Signal; // fired once, when done is set
}

export class SyncLoop {
  readonly counts: LoopCounts = {
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
  private stateValue: SyncState = 'offline';
  private lastErrorValue: unknown = null;

  private client: SyncConnection | null = null;
  private held: HeldWait | null = null;
  private stopping = false;
  private poked = false;
  private roundsStarted = 0;
  private round = 0;
  private syncedRound = 0;
  private pushLimit: number;
  private syncedSnapshot: LoopCounts | null = null;
  private readonly wake = new Signal(); // a poke or close
  private readonly closing = new Signal(); // close only: writes do not cut a back-off short
  private readonly progress = new Signal(); // a round finished, the loop failed, or close
  private running: Promise<void> | null = null;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly replica: Replica,
    private readonly options: SyncLoopOptions,
    private readonly snapshot: () => LoopCounts & Partial<WireCounts>,
  ) {
    this.pushLimit = options.maxPush;
    this.unsubscribe = replica.onStorage(() => this.storageChanged());
  }

  /** Listeners the loop's signals hold (bounded by the waiters in progress, not by rounds; for leak checks). */
  get listenerCount(): number {
    const held = this.held ? this.held.settled.listenerCount : 0;
    return this.wake.listenerCount + this.closing.listenerCount + this.progress.listenerCount + held;
  }

  /** 'failed' as soon as a storage commit failed, whatever the loop was doing. */
  get state(): SyncState {
    return this.replica.failure ? 'failed' : this.stateValue;
  }
  /** The last round's error (null once a round succeeds); the storage's error once failed. */
  get lastError(): unknown {
    return this.replica.failure ?? this.lastErrorValue;
  }
  /** Resolves when the loop has stopped: closed, or failed (null before start). */
  get finished(): Promise<void> | null {
    return this.running;
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Something to push: interrupt a held wait and run a round. */
  poke(): void {
    this.poked = true;
    this.wake.fire();
  }

  // A write became pushable (its commit landed), or a commit failed: then
  // the loop ends, even from a held wait or a back-off, and waiters reject.
  private storageChanged(): void {
    this.poke();
    if (!this.replica.failure) return;
    this.closing.fire();
    this.progress.fire();
  }

  async close(): Promise<void> {
    this.unsubscribe();
    this.stopping = true;
    this.wake.fire();
    this.closing.fire();
    this.progress.fire();
    // A request in flight fails now instead of at its timeout.
    await this.dropClient();
    await this.running;
  }

  /** The counters as they stood when the device was last up to date (null before). */
  get syncedCounters(): (LoopCounts & Partial<WireCounts>) | null {
    return this.syncedSnapshot;
  }

  /** Resolves once a round that started after this call pushed everything and pulled. */
  waitUntilSynced(timeoutMs: number): Promise<void> {
    const target = this.roundsStarted + 1;
    this.poke();
    return this.until(() => this.syncedRound >= target, timeoutMs, 'synced');
  }

  /** Resolves once the device has been up to date since it opened, without starting a round. */
  waitUntilUpToDate(timeoutMs: number): Promise<void> {
    return this.until(() => this.syncedRound >= 1, timeoutMs, 'up to date');
  }

  // Rejects at once with the storage's error once a commit failed.
  private async until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
    let timedOut = false;
    const timeUp = new Signal();
    const timer = setTimeout(() => {
      timedOut = true;
      timeUp.fire();
    }, timeoutMs);
    try {
      while (!done() && !this.stopping && !timedOut && !this.replica.failure) {
        await firstOf(this.progress, timeUp);
      }
    } finally {
      clearTimeout(timer);
    }
    // A failed device is not up to date, whatever it was before.
    if (this.replica.failure) throw this.replica.failure;
    if (done()) return;
    const why = this.stopping ? 'the device closed' : `not ${what} within ${timeoutMs} ms`;
    throw new SkiffError('unavailable', `${why}; last error: ${describe(this.lastErrorValue)}`);
  }

  private async loop(): Promise<void> {
    let backoff = this.options.backoffMinMs;
    while (!this.stopping && !this.replica.failure) {
      this.poked = false;
      this.round = ++this.roundsStarted;
      try {
        await this.runRound();
        backoff = this.options.backoffMinMs;
        await this.idle();
      } catch (e) {
        if (this.stopping || this.replica.failure) break;
        this.lastErrorValue = e;
        const lost = !(e instanceof SkiffError) || kConnectionLost.has(e.code);
        if (lost || !this.client) this.stateValue = 'offline';
        if (lost) await this.dropClient();
        this.progress.fire();
        await delay(backoff, this.closing);
        backoff = Math.min(backoff * 2, this.options.backoffMaxMs);
      }
    }
    await this.dropClient();
    this.stateValue = 'offline';
    this.progress.fire();
  }

  private async dropClient(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.held = null; // the client's close fails it
    if (client) await client.close().catch(() => {});
  }

  // Stops a multi-request step at its next request once close began.
  private checkOpen(): void {
    if (this.stopping) throw new SkiffError('closed', 'the device is closing');
  }

  private count(op: 'pushes' | 'pulls' | 'bootstraps' | 'waits'): void {
    ++this.counts.requests;
    ++this.counts[op];
  }

  private async runRound(): Promise<void> {
    if (!this.client) {
      const client = await this.options.connect();
      if (this.stopping) {
        await client.close().catch(() => {});
        return;
      }
      this.client = client;
      ++this.counts.connects;
    }
    this.stateValue = 'syncing';
    await this.bootstrapAll(this.client);
    await this.pushAll(this.client);
    await this.pullAll(this.client);
  }

  // Up to date: publish it, then hold a wait unless there is work already.
  // Writes whose commit is pending are not pushable yet: the device is not
  // up to date, but the hold lasts only until their commit pokes the loop.
  private async idle(): Promise<void> {
    if (this.stopping || this.replica.failure || this.replica.hasPushable) return; // go again
    if (this.replica.outboxSize === 0) {
      this.lastErrorValue = null;
      this.stateValue = 'online';
      this.syncedRound = this.round;
      this.syncedSnapshot = this.snapshot();
      this.progress.fire();
    }
    if (this.poked) return;
    await this.holdWait(this.replica.position.cursor);
  }

  // A wait left behind by a poke is still correct for the next hold: its
  // older `since` would have answered for anything the loop pulled since.
  private async holdWait(since: number): Promise<void> {
    const client = this.client!;
    let held = this.held;
    if (!held) {
      this.count('waits');
      const h: HeldWait = { done: false, error: null, settled: new Signal() };
      wait(client, { since, timeoutMs: this.options.waitTimeoutMs }).then(
        () => {
          h.done = true;
          h.settled.fire();
        },
        (e) => {
          h.done = true;
          h.error = e;
          h.settled.fire();
        },
      );
      this.held = held = h;
    }
    if (!held.done) await firstOf(held.settled, this.wake);
    if (!held.done) return;
    if (this.held === held) this.held = null;
    if (held.error) throw held.error;
  }

  // Pages are asked for one ahead: the next page is requested as soon as a
  // reply names it, so the server reads and sends it while this page
  // applies to storage.
  private async bootstrapAll(client: SyncConnection): Promise<void> {
    const start = this.replica.position;
    if (start.bootstrapped) return;
    const ask = (after: typeof start.bootstrapAfter): Promise<BootstrapReply> => {
      this.count('bootstraps');
      const p = bootstrap(client, { after, limit: this.options.page });
      p.catch(() => {}); // awaited below, or abandoned after an earlier failure
      return p;
    };
    let next = ask(start.bootstrapAfter);
    for (;;) {
      const page = await next;
      if (page.next) next = ask(page.next);
      const position = { ...this.replica.position };
      // The first page's cursor is where pulling starts once all is in.
      if (!position.bootstrapAfter) position.bootstrapCursor = page.cursor;
      position.bootstrapAfter = page.next;
      if (!page.next) {
        position.bootstrapped = true;
        position.cursor = position.bootstrapCursor;
      }
      this.counts.rowsReceived += page.rows.length;
      await this.replica.applyRemote(page.rows, position);
      if (!page.next) return;
      this.checkOpen();
    }
  }

  private async pullAll(client: SyncConnection): Promise<void> {
    for (;;) {
      this.count('pulls');
      const reply = await pull(client, { since: this.replica.position.cursor, limit: this.options.page });
      this.counts.changesReceived += reply.changes.length;
      await this.replica.applyRemote(reply.changes, { ...this.replica.position, cursor: reply.cursor });
      if (!reply.more) return;
      this.checkOpen();
    }
  }

  private async pushAll(client: SyncConnection): Promise<void> {
    for (;;) {
      const batch = this.replica.entries(Math.max(1, this.pushLimit));
      if (batch.length === 0) {
        this.pushLimit = this.options.maxPush;
        return;
      }
      this.count('pushes');
      let acked: number;
      let ok = false;
      try {
        const changes = batch.map((e) => ({ ...e, value: e.value === null ? null : JSON.parse(e.value) }));
        const reply = await push(client, { device: this.options.deviceId, changes });
        acked = reply.lastSeq;
        ok = true;
      } catch (e) {
        if (!(e instanceof SkiffError) || !kFinal.has(e.code)) throw e;
        if (batch.length > 1) {
          this.pushLimit = 1; // find the refused entry: one at a time until past it
          continue;
        }
        acked = batch[0].seq;
        ++this.counts.rejected;
        this.lastErrorValue = e;
      }
      const dropped = await this.replica.acknowledge(acked);
      if (ok) this.counts.changesPushed += dropped;
      this.checkOpen();
    }
  }
}

function describe(e: unknown): string {
  if (e === null || e === undefined) return 'none';
  return e instanceof Error ? e.message : String(e);
}
