// Opening one WebSocket: resolves once it is open, rejects with
// not_connected when it fails or does not open within `timeoutMs`, or with
// closed when cancelled (close() of the client while it connects).

import { SkiffError } from './errors.js';
import type { WebSocketConstructorLike, WebSocketLike } from './transport.js';

export interface Opening {
  readonly socket: Promise<WebSocketLike>;
  /** Stops the attempt: the socket is closed and `socket` rejects with closed. */
  cancel(): void;
}

// `ws` emits an 'error' when a socket still connecting is closed; with no
// listener an EventEmitter throws it and Node exits. A socket given up on
// therefore keeps a handler that ignores it.
const ignore = (): void => {};

export function openSocket(WebSocketClass: WebSocketConstructorLike, url: string, timeoutMs: number): Opening {
  let cancel: () => void = ignore;
  const socket = new Promise<WebSocketLike>((resolve, reject) => {
    let ws: WebSocketLike;
    try {
      ws = new WebSocketClass(url);
    } catch (e) {
      reject(new SkiffError('not_connected', `cannot connect to ${url}: ${(e as Error).message}`));
      return;
    }
    let settled = false;
    const fail = (error: SkiffError, close: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(guard);
      ws.onopen = ws.onclose = null;
      ws.onerror = ignore;
      if (close) {
        try {
          ws.close();
        } catch {
          // Already closing: nothing left to stop.
        }
      }
      reject(error);
    };
    const notConnected = (why: string): SkiffError => new SkiffError('not_connected', `cannot connect to ${url}: ${why}`);
    const guard = setTimeout(() => fail(notConnected(`not open within ${timeoutMs} ms`), true), timeoutMs);
    cancel = () => fail(new SkiffError('closed', 'the client was closed while connecting'), true);
    ws.onopen = () => {
      if (settled) return;
      settled = true;
      clearTimeout(guard);
      ws.onopen = ws.onclose = null;
      ws.onerror = ignore;
      resolve(ws);
    };
    ws.onerror = (event) => {
      const message = (event as { message?: unknown }).message;
      fail(notConnected(typeof message === 'string' && message !== '' ? message : 'connection failed'), false);
    };
    ws.onclose = (event) => fail(notConnected(`closed (${event.code}) before it opened`), false);
  });
  return { socket, cancel: () => cancel() };
}
