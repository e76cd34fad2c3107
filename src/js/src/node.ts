// The Node and Bun entry: the same API, with the `ws` package as the
// WebSocket unless the options name another (Node 20 has none of its own).
// Frames sent in one turn of the event loop leave in one write (batch.ts).

import WebSocket from 'ws';
import { Client as BaseClient, type ClientOptions } from './client.js';
import { type CorkableStream, TurnBatcher } from './batch.js';
import type { WebSocketConstructorLike, WebSocketLike } from './transport.js';

export * from './index.js';

// `ws` keeps its net.Socket in `_socket` (set once open, null after close);
// a wrapper of a `ws` socket may pass it through. Any other WebSocket has
// none, and sends each frame as it comes.
function streamOf(socket: WebSocketLike): CorkableStream | null {
  const stream = (socket as { _socket?: unknown })._socket as Partial<CorkableStream> | null | undefined;
  if (stream == null || typeof stream.cork !== 'function' || typeof stream.uncork !== 'function') return null;
  return stream as CorkableStream;
}

const { setImmediate: afterTurn } = globalThis as unknown as { setImmediate: (run: () => void) => unknown };

export class Client extends BaseClient {
  protected static override defaultWebSocket(): WebSocketConstructorLike {
    return WebSocket as unknown as WebSocketConstructorLike;
  }

  protected static override writeBatcher(): TurnBatcher {
    return new TurnBatcher(streamOf, afterTurn);
  }

  static override connect(options: ClientOptions): Promise<Client> {
    return super.connect(options) as Promise<Client>;
  }
}
