// The slice of the WebSocket API the client uses: the browser's standard
// WebSocket, the `ws` package (Node) and Bun's WebSocket all provide it.

export interface WebSocketLike {
  readonly readyState: number;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

export type WebSocketConstructorLike = new (url: string) => WebSocketLike;

export const OPEN = 1;
export const CLOSED = 3;

/** The environment's own WebSocket (browsers, Bun, Deno, Node 22+), if any. */
export function globalWebSocket(): WebSocketConstructorLike | undefined {
  const ws = (globalThis as { WebSocket?: unknown }).WebSocket;
  return typeof ws === 'function' ? (ws as WebSocketConstructorLike) : undefined;
}
