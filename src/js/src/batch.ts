// Frames sent in one turn of the event loop leave in one write. Each send
// of the `ws` package is its own write (a system call); a pipelining caller
// answers a burst of replies with a burst of calls, so the server would read
// them one small write at a time. Holding the stream corked from the first
// send of a turn to the end of the turn's I/O (setImmediate) turns the burst
// into one writev. A socket with no stream to hold (the browser's WebSocket,
// Bun's own) sends each frame as it comes.

import type { WebSocketLike } from './transport.js';

/** The byte stream under a WebSocket, when it can hold writes back. */
export interface CorkableStream {
  cork(): void;
  uncork(): void;
}

/** Finds the stream under a socket, or null when there is none to hold. */
export type StreamOf = (socket: WebSocketLike) => CorkableStream | null;

export class TurnBatcher {
  private held: CorkableStream | null = null;
  private readonly releaseHeld = (): void => this.release();

  /** `afterTurn` runs a function once the turn's I/O is done (Node's setImmediate). */
  constructor(
    private readonly streamOf: StreamOf,
    private readonly afterTurn: (run: () => void) => void,
  ) {}

  /** Called before each send on `socket`: holds its stream until the turn ends. */
  hold(socket: WebSocketLike): void {
    const stream = this.streamOf(socket);
    if (stream === null || stream === this.held) return;
    // A new socket within the turn (a reconnect's login): the old one's
    // frames go now.
    this.release();
    stream.cork();
    this.held = stream;
    this.afterTurn(this.releaseHeld);
  }

  /** Lets held frames go now (the socket is closing, or the turn ended). */
  release(): void {
    const stream = this.held;
    if (stream === null) return;
    this.held = null;
    try {
      stream.uncork();
    } catch {
      // A stream destroyed meanwhile has nothing left to write.
    }
  }
}
