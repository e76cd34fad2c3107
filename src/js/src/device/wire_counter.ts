// WireCounter: counts the frames and bytes (UTF-8) a device's connections
// send and receive, by wrapping the WebSocket class handed to the client:
// each socket it makes counts its `send` calls and its message events.
// Works with the browser's WebSocket and the `ws` package alike (both have
// addEventListener).

export interface WireCounts {
  framesSent: number;
  bytesSent: number;
  framesReceived: number;
  bytesReceived: number;
}

type AnySocket = {
  send(data: unknown): void;
  addEventListener(type: string, listener: (event: { data: unknown }) => void): void;
};

export class WireCounter {
  readonly counts: WireCounts = { framesSent: 0, bytesSent: 0, framesReceived: 0, bytesReceived: 0 };

  /** A WebSocket class like `base` whose sockets are counted here. */
  wrap(base: new (url: string) => unknown): new (url: string) => unknown {
    const counts = this.counts;
    // Returning an object from a constructor makes `new` give that object,
    // so the client gets the real socket with a counting `send`.
    return class {
      constructor(url: string) {
        const socket = new base(url) as AnySocket;
        const send = socket.send.bind(socket);
        socket.send = (data: unknown) => {
          ++counts.framesSent;
          counts.bytesSent += sizeOf(data);
          send(data);
        };
        socket.addEventListener('message', (event) => {
          ++counts.framesReceived;
          counts.bytesReceived += sizeOf(event.data);
        });
        return socket;
      }
    };
  }
}

function sizeOf(data: unknown): number {
  if (typeof data === 'string') return utf8Bytes(data);
  if (data instanceof ArrayBuffer) return data.byteLength;
  if (ArrayBuffer.isView(data)) return data.byteLength;
  if (typeof Blob !== 'undefined' && data instanceof Blob) return data.size;
  return 0;
}

function utf8Bytes(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; ++i) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdfff) n += 1; // each half of a pair: 4 bytes for 2 units
    else n += 2;
  }
  return n;
}
