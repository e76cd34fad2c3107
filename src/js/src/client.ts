// Client: one WebSocket connection to skiffd, pipelining requests.
//
// Every call gets a fresh id and its reply is matched by id, so many calls
// are in flight at once; at most maxInFlight are outstanding and further
// calls wait their turn in order (a caller's promise, not a frame buffered
// in the socket). A request the server would refuse for its form (a wrong
// field, an invalid key, a frame over the limit) fails before it is sent.
//
// A call's deadline starts when it is made, as in the C++ SDK: waiting for
// a slot or for the connection counts against requestTimeoutMs, and at most
// maxWaiting calls wait at once (more are refused with queue_full).
//
// When the connection drops, calls in flight fail with connection_lost (a
// write may or may not have been applied), the client reconnects with
// capped, jittered exponential back-off and logs in again; calls made
// meanwhile wait until their deadline, then fail with not_connected (never
// sent).
//
// Single-threaded like everything in JavaScript; listeners run on the event
// loop.

import { type ErrorCode, SkiffError, errorFromReply } from './errors.js';
import type { Call, Reply } from './call.js';
import { checkFrameSize, decodeReply, encodeBody, frameWithId } from './codec.js';
import { findOp } from './ops.js';
import { validateRequest } from './validate.js';
import { DEFAULT_LIMITS, type Limits } from './limits.js';
import { DEFAULT_RECONNECT, type ReconnectPolicy, checkReconnectPolicy } from './backoff.js';
import { CLOSED, OPEN, globalWebSocket, type WebSocketConstructorLike, type WebSocketLike } from './transport.js';
import { Queue } from './queue.js';
import { type Opening, openSocket } from './socket.js';
import { DeadlineTimer, failExpired } from './deadlines.js';
import { Reconnector } from './reconnect.js';
import type { TurnBatcher } from './batch.js';
import { type WatchEvent, type WatchTarget, Watches } from './watches.js';

export type ClientState = 'open' | 'reconnecting' | 'closed';
export type { Reply } from './call.js';
export type { WatchEvent, WatchTarget } from './watches.js';

export interface ClientOptions {
  /** ws://host:port/ of skiffd. */
  url: string;
  /** Logs in as this user on every connection when given with `secret`. */
  user?: string;
  secret?: string;
  /** Logs in with this token instead of user and secret. */
  token?: string;
  /** The WebSocket class; default the environment's own (node.ts passes `ws`). */
  WebSocket?: WebSocketConstructorLike;
  /**
   * A call without a reply this long after it was made fails (timeout, or
   * not_connected when it waited for the connection all along); also the
   * bound on opening a connection and logging in. Default 30000.
   */
  requestTimeoutMs?: number;
  /** Calls outstanding at once on the connection; more wait. Default 512. */
  maxInFlight?: number;
  /** Calls waiting at once (for a slot or the connection); more fail with queue_full. Default 100000. */
  maxWaiting?: number;
  /** Back-off of reconnects, or false to stay closed after a loss. */
  reconnect?: ReconnectPolicy | false;
  /** The server's max_frame_bytes, when it is not the default 16 MiB. */
  maxFrameBytes?: number;
  /** The server's max_depth, when it is not the default 64. */
  maxDepth?: number;
}

export interface Item {
  key: string;
  value: unknown;
}

export interface Page {
  items: Item[];
  /** Pass as `after` for the following page; null after the last one. */
  next: string | null;
}

export interface NearQuery {
  lat: number;
  lon: number;
  limit?: number;
  radius_m?: number;
  box_m?: [number, number];
  values?: boolean;
  columns?: boolean;
}

const DEFAULT_TIMEOUT_MS = 30000;
const DEFAULT_MAX_IN_FLIGHT = 512;
const DEFAULT_WAIT_HOLD_MS = 30000;
const DEFAULT_MAX_WAITING = 100000;

function positive(name: string, v: number | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (!Number.isFinite(v) || v <= 0) {
    throw new SkiffError('bad_request', `option ${name} must be a positive number`);
  }
  return v;
}

export class Client {
  private readonly url: string;
  private readonly WebSocketClass: WebSocketConstructorLike;
  private readonly timeoutMs: number;
  private readonly maxInFlight: number;
  private readonly maxWaiting: number;
  private readonly reconnectPolicy: ReconnectPolicy | false;
  private readonly limits: Limits;

  private state: ClientState = 'reconnecting';
  private socket: WebSocketLike | null = null;
  /** The connection being opened, so close() can stop it. */
  private opening: Opening | null = null;
  private credentials: { user: string; secret: string } | { token: string } | null = null;
  private nextId = 1;
  private readonly inFlight = new Map<number, Call>();
  private readonly waiting = new Queue<Call>();
  private readonly listeners = new Set<(state: ClientState) => void>();
  private readonly deadlines: DeadlineTimer;
  private readonly reconnector: Reconnector;
  /** Holds the frames of one turn for one write, where the socket allows it (node.ts). */
  private readonly batcher: TurnBatcher | null;
  /** The server's last error about the connection itself ("id": null). */
  private connectionError: SkiffError | null = null;
  private closing: Promise<void> | null = null;
  /** Watches, opened again with `since` after a reconnect. */
  private readonly watches = new Watches((op, fields) => this.call(op, fields));
  private wasOpen = false;

  protected constructor(
    options: ClientOptions,
    defaultWebSocket: WebSocketConstructorLike | undefined,
    batcher: TurnBatcher | null = null,
  ) {
    const WebSocketClass = options.WebSocket ?? defaultWebSocket;
    if (WebSocketClass === undefined) {
      throw new SkiffError(
        'bad_request',
        "no WebSocket in this environment: pass options.WebSocket, or import 'skiff-client/node'",
      );
    }
    if (typeof options.url !== 'string' || !/^wss?:\/\//.test(options.url)) {
      throw new SkiffError('bad_request', 'option url must be a ws:// or wss:// URL');
    }
    this.url = options.url;
    this.WebSocketClass = WebSocketClass;
    this.timeoutMs = positive('requestTimeoutMs', options.requestTimeoutMs, DEFAULT_TIMEOUT_MS);
    this.maxInFlight = Math.floor(positive('maxInFlight', options.maxInFlight, DEFAULT_MAX_IN_FLIGHT));
    this.maxWaiting = Math.floor(positive('maxWaiting', options.maxWaiting, DEFAULT_MAX_WAITING));
    this.reconnectPolicy = options.reconnect === undefined ? DEFAULT_RECONNECT : options.reconnect;
    if (this.reconnectPolicy !== false) checkReconnectPolicy(this.reconnectPolicy);
    this.limits = {
      maxFrameBytes: positive('maxFrameBytes', options.maxFrameBytes, DEFAULT_LIMITS.maxFrameBytes),
      maxDepth: positive('maxDepth', options.maxDepth, DEFAULT_LIMITS.maxDepth),
    };
    if ((options.user === undefined) !== (options.secret === undefined)) {
      throw new SkiffError('bad_request', 'options user and secret go together');
    }
    if (options.user !== undefined && options.token !== undefined) {
      throw new SkiffError('bad_request', 'options user and token exclude each other');
    }
    if (options.user !== undefined && options.secret !== undefined) {
      this.credentials = { user: options.user, secret: options.secret };
    } else if (options.token !== undefined) {
      this.credentials = { token: options.token };
    }
    this.batcher = batcher;
    this.deadlines = new DeadlineTimer(this.timeoutMs, () => this.sweep());
    this.reconnector = new Reconnector({
      isClosed: () => this.isClosed(),
      open: () => this.open(),
      dropAttempt: () => {
        if (this.socket === null) return;
        const socket = this.socket;
        this.socket = null;
        void closeSocket(socket);
      },
      giveUp: (error) => this.giveUp(error),
      reconnected: () => {
        this.setState('open');
        this.pump();
      },
    });
  }

  /**
   * Opens the connection and logs in when user and secret are given.
   * Rejects with not_connected when the server cannot be reached (no retry
   * here: a wrong URL should fail at once), or with the server's error
   * (unauthorized) when login is refused.
   */
  static async connect(options: ClientOptions): Promise<Client> {
    const client = new this(options, this.defaultWebSocket(), this.writeBatcher());
    try {
      await client.open();
    } catch (e) {
      await client.close();
      throw e;
    }
    client.reconnector.opened();
    client.setState('open');
    return client;
  }

  /** The WebSocket class used when the options name none (node.ts: `ws`). */
  protected static defaultWebSocket(): WebSocketConstructorLike | undefined {
    return globalWebSocket();
  }

  /** What sends a turn's frames in one write, if anything can (node.ts: `ws`'s stream). */
  protected static writeBatcher(): TurnBatcher | null {
    return null;
  }

  /** 'open', 'reconnecting' or 'closed' (for good). */
  get connectionState(): ClientState {
    return this.state;
  }

  /** Calls sent and not yet answered. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** Calls waiting to be sent (for a slot, or for the connection). */
  get waitingCount(): number {
    return this.waiting.length;
  }

  /** Runs `listener` on every change of state; returns its removal. */
  onStateChange(listener: (state: ClientState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Sends one request and resolves with its reply object ({id, ok, ...}).
   * Rejects with a SkiffError: bad_request or too_large at once for a
   * request the server would refuse for its form; the server's error; or
   * connection_lost, timeout, not_connected, closed (see errors.ts).
   */
  call(op: string, fields: Record<string, unknown> = {}): Promise<Reply> {
    let body: string;
    try {
      body = this.encode(op, fields);
    } catch (e) {
      return Promise.reject(e);
    }
    const timeoutMs = op === 'wait' ? this.timeoutMs + holdOf(fields) : this.timeoutMs;
    return this.enqueue(op, body, timeoutMs, false);
  }

  /** Logs in; later reconnects log in as this user. */
  async login(user: string, secret: string): Promise<void> {
    await this.call('login', { user, secret });
    this.credentials = { user, secret };
  }

  /** Logs in with a token; later reconnects log in with it. */
  async loginWithToken(token: string): Promise<void> {
    await this.call('login', { token });
    this.credentials = { token };
  }

  /** Logs out; later reconnects stay logged out. */
  async logout(): Promise<void> {
    await this.call('logout');
    this.credentials = null;
  }

  async ping(): Promise<void> {
    await this.call('ping');
  }

  /** `data` as the server sent it back. */
  async echo(data: unknown): Promise<unknown> {
    return (await this.call('echo', { data }))['data'];
  }

  /** The document, or undefined when there is none (null is a document). */
  async get(table: string, key: string): Promise<unknown | undefined> {
    const reply = await this.call('get', { table, key });
    return reply['found'] === true ? reply['value'] : undefined;
  }

  async has(table: string, key: string): Promise<boolean> {
    return (await this.call('has', { table, key }))['found'] === true;
  }

  /** Replaces the whole document. */
  async set(table: string, key: string, value: unknown): Promise<void> {
    await this.call('set', { table, key, value });
  }

  /**
   * Whether the key existed. A user who may write but not read the table
   * is not told (docs/protocol.md): false then; call('delete') shows the
   * reply without `found`.
   */
  async delete(table: string, key: string): Promise<boolean> {
    return (await this.call('delete', { table, key }))['found'] === true;
  }

  /**
   * Adds `delta` to the number at `path` (default the document itself) and
   * resolves with the new number; NaN for a user who may not read the
   * table (the server does not say). Path elements name object members:
   * the server takes strings only, and the client refuses others.
   */
  async add(table: string, key: string, delta: number, path?: string[]): Promise<number> {
    const fields: Record<string, unknown> = { table, key, delta };
    if (path !== undefined) fields['path'] = path;
    const value = (await this.call('add', fields))['value'];
    return typeof value === 'number' ? value : NaN;
  }

  /** Applies an RFC 7386 merge patch. */
  async merge(table: string, key: string, patch: unknown): Promise<void> {
    await this.call('merge', { table, key, patch });
  }

  /** One page of the table in key order. */
  async all(table: string, options: { after?: string | null; limit?: number } = {}): Promise<Page> {
    const reply = await this.call('all', { table, ...options });
    return { items: reply['items'] as Item[], next: (reply['next'] as string | null) ?? null };
  }

  /** The nearest documents (the reply's `items`, or `keys`/`dist_m`/`values` with columns). */
  async near(table: string, query: NearQuery): Promise<Reply> {
    return this.call('near', { table, ...query });
  }

  /**
   * Watches a key, a prefix or a whole table: `onEvent` gets every event
   * in order. After a reconnect (or an overflow) the watch opens again by
   * itself after the last version seen: missed changes come first, or a
   * "resync" event says to read again. Resolves with a handle for unwatch.
   */
  async watch(table: string, target: WatchTarget, onEvent: (event: WatchEvent) => void): Promise<number> {
    return this.watches.open(table, target, onEvent);
  }

  /** Ends a watch: no event of it is delivered afterwards. */
  async unwatch(handle: number): Promise<void> {
    return this.watches.close(handle);
  }

  /** The server's figures (the reply of `stats`). */
  async stats(): Promise<Reply> {
    return this.call('stats');
  }

  /**
   * Closes for good: calls not yet sent fail with closed, calls in flight
   * with connection_lost (their outcome is unknown). Resolves once the
   * socket has closed. Idempotent.
   */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.setState('closed');
    this.reconnector.cancel();
    this.opening?.cancel();
    this.opening = null;
    this.failWaiting('closed', 'the client was closed; the request was not sent');
    this.failInFlight('the client was closed while the call was in flight; whether it was applied is unknown');
    this.deadlines.stop();
    const socket = this.socket;
    this.socket = null;
    this.batcher?.release();
    this.closing = socket === null ? Promise.resolve() : closeSocket(socket);
    return this.closing;
  }

  // ---- sending ----

  private encode(op: string, fields: Record<string, unknown>): string {
    const spec = findOp(op);
    if (spec === undefined) throw new SkiffError('bad_request', `unknown op ${JSON.stringify(op)}`, op);
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
      throw new SkiffError('bad_request', 'fields must be an object', op);
    }
    // Written first so that validation can skip what the text rules out;
    // when it cannot be written, validation names the reason the server
    // would give (a cycle nests too deep, a BigInt is no JSON).
    let body: string;
    try {
      body = encodeBody(op, fields);
    } catch (e) {
      validateRequest(spec, fields, this.limits.maxDepth);
      throw new SkiffError('bad_request', `cannot write the request as JSON: ${(e as Error).message}`, op);
    }
    validateRequest(spec, fields, this.limits.maxDepth, body);
    checkFrameSize(op, body, this.limits.maxFrameBytes);
    return body;
  }

  /** `direct` sends at once on the socket (the login of a reconnect). */
  private enqueue(op: string, body: string, timeoutMs: number, direct: boolean): Promise<Reply> {
    if (this.state === 'closed') {
      return Promise.reject(new SkiffError('closed', 'the client is closed; the request was not sent', op));
    }
    return new Promise<Reply>((resolve, reject) => {
      const call: Call = { op, body, timeoutMs, deadline: Date.now() + timeoutMs, resolve, reject };
      if (direct) {
        this.send(call);
      } else if (this.state === 'open' && this.waiting.length === 0 && this.inFlight.size < this.maxInFlight) {
        this.send(call);
      } else if (this.waiting.length >= this.maxWaiting) {
        reject(
          new SkiffError(
            'queue_full',
            `${this.maxWaiting} calls are already waiting (option maxWaiting); the request was not sent`,
            op,
          ),
        );
        return;
      } else {
        this.waiting.push(call);
      }
      this.deadlines.start();
    });
  }

  private send(call: Call): void {
    const id = this.nextId++;
    const body = call.body;
    call.body = '';
    this.inFlight.set(id, call);
    const socket = this.socket;
    if (socket === null || socket.readyState !== OPEN) return; // its close fails the call
    this.batcher?.hold(socket);
    try {
      socket.send(frameWithId(id, body));
    } catch {
      // The socket is closing: its close event fails the call as lost.
    }
  }

  /** Sends waiting calls while there is room. */
  private pump(): void {
    while (this.state === 'open' && this.inFlight.size < this.maxInFlight) {
      const call = this.waiting.shift();
      if (call === undefined) return;
      this.send(call);
    }
  }

  // ---- receiving ----

  private onMessage(socket: WebSocketLike, data: unknown): void {
    if (socket !== this.socket) return;
    if (typeof data !== 'string') {
      this.dropSocket(socket, new SkiffError('protocol_error', 'the server sent a binary frame'));
      return;
    }
    // A watch's event: no request of ours (the server starts them so).
    if (data.startsWith('{"event"') && this.watches.onFrame(data)) return;
    let reply;
    try {
      reply = decodeReply(data);
    } catch (e) {
      this.dropSocket(socket, e as SkiffError);
      return;
    }
    if (reply.id === null) {
      // About the connection, not a request (e.g. an oversized frame); the
      // server usually closes it next, and the loss names this error.
      this.connectionError = reply.ok ? null : errorFromReply(reply.error);
      return;
    }
    const call = this.inFlight.get(reply.id);
    if (call === undefined) return; // the late reply of a call that timed out
    this.inFlight.delete(reply.id);
    if (reply.ok) call.resolve(reply.reply);
    else call.reject(errorFromReply(reply.error, call.op));
    this.pump();
  }

  // ---- the connection ----

  /** Opens a socket, makes it current and logs in if credentials are set. */
  private async open(): Promise<void> {
    const opening = openSocket(this.WebSocketClass, this.url, this.timeoutMs);
    this.opening = opening;
    let socket: WebSocketLike;
    try {
      socket = await opening.socket;
    } finally {
      if (this.opening === opening) this.opening = null;
    }
    if (this.state === 'closed') {
      closeSocket(socket);
      throw new SkiffError('closed', 'the client was closed while connecting');
    }
    this.socket = socket;
    this.connectionError = null;
    socket.onmessage = (event) => this.onMessage(socket, event.data);
    socket.onclose = (event) => this.onSocketClosed(socket, event.code, event.reason);
    socket.onerror = () => {}; // a close event follows; it carries the news
    if (this.credentials !== null) {
      await this.enqueue('login', encodeBody('login', this.credentials), this.timeoutMs, true);
    }
  }

  private onSocketClosed(socket: WebSocketLike, code: number, reason: string): void {
    if (socket !== this.socket) return;
    this.socket = null;
    const why = this.connectionError !== null ? `; the server said ${this.connectionError.message}` : '';
    this.failInFlight(
      `connection lost (close ${code}${reason ? ` "${reason}"` : ''}${why}) while the call was in flight; ` +
        'whether it was applied is unknown',
    );
    if (this.state !== 'open') return; // closed for good, or a reconnect attempt's own socket
    if (this.reconnectPolicy === false) {
      this.failWaiting('closed', 'the connection was lost and reconnect is off; the request was not sent');
      void this.close();
      return;
    }
    this.setState('reconnecting');
    void this.reconnector.run(this.reconnectPolicy);
  }

  private dropSocket(socket: WebSocketLike, error: SkiffError): void {
    this.connectionError = error;
    try {
      // Browsers let a script close with 1000 or 3000-4999 only (1002 throws).
      socket.close(4002, 'unreadable reply');
    } finally {
      this.onSocketClosed(socket, 4002, error.message);
    }
  }

  // A method, not an inline test, so the compiler does not carry a narrowing
  // of `state` across an await (close() may run meanwhile).
  private isClosed(): boolean {
    return this.state === 'closed';
  }

  /** Closes for good after `error`, which the calls waiting get. */
  private giveUp(error: SkiffError): void {
    const code = error.code === 'connection_lost' || error.code === 'timeout' ? 'not_connected' : error.code;
    this.failWaiting(code, `${error.message}; the request was not sent`);
    void this.close();
  }

  // ---- failing calls ----

  private failInFlight(message: string): void {
    const calls = [...this.inFlight.values()];
    this.inFlight.clear();
    for (const call of calls) call.reject(new SkiffError('connection_lost', message, call.op));
  }

  private failWaiting(code: ErrorCode, message: string): void {
    for (const call of this.waiting.drain()) call.reject(new SkiffError(code, message, call.op));
  }

  private sweep(): void {
    failExpired(this.inFlight, this.waiting, Date.now(), this.state === 'open');
    this.pump();
    if (this.inFlight.size === 0 && this.waiting.length === 0) this.deadlines.stop();
  }

  private setState(state: ClientState): void {
    if (this.state === state) return;
    this.state = state;
    if (state === 'open') {
      if (this.wasOpen) this.watches.onReconnected();
      this.wasOpen = true;
    }
    for (const listener of [...this.listeners]) {
      try {
        listener(state);
      } catch (e) {
        // A listener's bug must not break the client; report it unhandled.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }
}

function holdOf(fields: Record<string, unknown>): number {
  const hold = fields['timeout_ms'];
  return typeof hold === 'number' ? hold : DEFAULT_WAIT_HOLD_MS;
}

// A peer that never answers the closing handshake must not hang close().
const CLOSE_GUARD_MS = 5000;

/** Closes `socket`; resolves at its close event (or at once if already closed). */
function closeSocket(socket: WebSocketLike): Promise<void> {
  return new Promise((resolve) => {
    if (socket.readyState === CLOSED) {
      resolve();
      return;
    }
    const guard = setTimeout(resolve, CLOSE_GUARD_MS);
    (guard as { unref?: () => void }).unref?.();
    // `ws` emits an error when a socket is closed before its handshake
    // ends; unhandled, it would end the Node process.
    socket.onerror = () => {};
    socket.onclose = () => {
      clearTimeout(guard);
      resolve();
    };
    socket.onmessage = null;
    socket.close(1000, 'client closed');
  });
}
