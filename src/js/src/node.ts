// The Node and Bun entry: the same API, with the runtime's fastest
// WebSocket unless the options name another, sending the frames of one
// turn of the event loop in one write.
//
// Under Node (20 has no WebSocket of its own) that is the `ws` package,
// whose stream is held (corked) for the turn (batch.ts). Under Bun it is
// BunWebSocket (bun_socket.ts), over Bun's own TCP socket: Bun's WebSocket
// sends each frame in a system call of its own, and `import 'ws'` under Bun
// is a shim over that same WebSocket. (The `ws` package's own code, loaded
// from its file, does run over Bun's node:net and its cork, but costs the
// client about half as much again as BunWebSocket.)

import WebSocket from 'ws';
import { BunWebSocket, bunConnect } from './bun_socket.js';
import { Client as BaseClient, type ClientOptions } from './client.js';
import { type CorkableStream, TurnBatcher } from './batch.js';
import { globalWebSocket, type WebSocketConstructorLike, type WebSocketLike } from './transport.js';

export * from './index.js';

const isBun = typeof (globalThis as { Bun?: unknown }).Bun !== 'undefined';

// `ws` keeps its net.Socket in `_socket` (set once open, null after close);
// a wrapper of a `ws` socket may pass it through. Any other WebSocket has
// none, and sends each frame as it comes.
function streamOf(socket: WebSocketLike): CorkableStream | null {
  const stream = (socket as { _socket?: unknown })._socket as Partial<CorkableStream> | null | undefined;
  if (stream == null || typeof stream.cork !== 'function' || typeof stream.uncork !== 'function') return null;
  return stream as CorkableStream;
}

// Chosen once, when the entry is loaded.
const runtimeDefault: WebSocketConstructorLike =
  (isBun ? (bunConnect() !== undefined ? BunWebSocket : globalWebSocket()) : undefined) ??
  (WebSocket as unknown as WebSocketConstructorLike);

const { setImmediate: afterTurn } = globalThis as unknown as { setImmediate: (run: () => void) => unknown };

export class Client extends BaseClient {
  protected static override defaultWebSocket(): WebSocketConstructorLike {
    return runtimeDefault;
  }

  protected static override writeBatcher(): TurnBatcher {
    return new TurnBatcher(streamOf, afterTurn);
  }

  static override connect(options: ClientOptions): Promise<Client> {
    return super.connect(options) as Promise<Client>;
  }
}
