// A WebSocket client (RFC 6455, text frames, no extensions) over Bun's own
// TCP socket (Bun.connect), for the Node entry under Bun. Bun's WebSocket,
// and the `ws` package over Bun's node:net, send each frame through layers
// that cost more CPU than the request itself: Bun's WebSocket makes one
// system call per frame, `ws` a Buffer and a stream write per frame. Here
// the frames sent in one turn of the event loop are written, masked, into
// one buffer and leave in one write when the turn's I/O is done; replies
// are cut from the bytes as they arrive. The server sees the same frames.
//
// Behaves as the slice of the browser's WebSocket the client uses
// (transport.ts): send() throws while connecting and drops frames once
// closing; a failed connection reports an error, then a close with 1006.
// Single-threaded, like everything here.

import { CLOSED, OPEN } from './transport.js';

const CONNECTING = 0;
const CLOSING = 2;

/** The part of a socket of Bun.connect used here. */
interface TcpSocket {
  write(data: Uint8Array): number;
  end(): void;
}

/** Bun's Buffer: writes a string's UTF-8 in place, with no view to make. */
interface ByteBuffer extends Uint8Array {
  write(text: string, offset: number): number;
}

const BufferClass = (globalThis as { Buffer?: { allocUnsafe(size: number): ByteBuffer } }).Buffer;

function allocBytes(size: number): Uint8Array {
  return BufferClass !== undefined ? BufferClass.allocUnsafe(size) : new Uint8Array(size);
}

/** Writes `text` as UTF-8 into `out` at `at` (room is reserved); returns its bytes. */
function writeUtf8(out: Uint8Array, text: string, at: number): number {
  const write = (out as Partial<ByteBuffer>).write;
  return write !== undefined ? write.call(out, text, at) : encoder.encodeInto(text, out.subarray(at)).written;
}

interface TcpHandlers {
  open(socket: TcpSocket): void;
  data(socket: TcpSocket, data: Uint8Array): void;
  drain(socket: TcpSocket): void;
  close(socket: TcpSocket): void;
  error(socket: TcpSocket, error: Error): void;
  connectError(socket: TcpSocket, error: Error): void;
}

type Connect = (options: { hostname: string; port: number; tls: boolean; socket: TcpHandlers }) => Promise<TcpSocket>;

/** Bun.connect, when this runtime is Bun. */
export function bunConnect(): Connect | undefined {
  const bun = (globalThis as { Bun?: { connect?: unknown } }).Bun;
  return typeof bun?.connect === 'function' ? (bun.connect.bind(bun) as Connect) : undefined;
}

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
// A close the peer does not answer ends the connection this much later.
const CLOSE_GUARD_MS = 5000;
// Larger messages end the connection (1009): skiffd's frames stay far below.
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });
const { setImmediate: afterTurn } = globalThis as unknown as { setImmediate: (run: () => void) => unknown };

function base64(bytes: Uint8Array): string {
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text);
}

async function acceptFor(key: string): Promise<string> {
  return base64(new Uint8Array(await crypto.subtle.digest('SHA-1', encoder.encode(key + GUID))));
}

export class BunWebSocket {
  readyState = CONNECTING;
  onopen: ((event: unknown) => void) | null = null;
  onmessage: ((event: { data: unknown }) => void) | null = null;
  onclose: ((event: { code: number; reason: string }) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;

  private tcp: TcpSocket | null = null;
  private handshaken = false;
  private expectedAccept = '';
  /** Bytes received and not yet read: input[inputAt, input.length). */
  private input: Uint8Array = new Uint8Array(0);
  private inputAt = 0;
  /** Frames to write: out[0, outLength). */
  private out = allocBytes(16384);
  private outLength = 0;
  private flushQueued = false;
  private waitingForDrain = false;
  private readonly flushTurn = (): void => {
    this.flushQueued = false;
    this.flush();
  };
  private fragments: Uint8Array[] = [];
  private fragmentBytes = 0;
  private fragmentOpcode = 0;
  private masks = new Uint8Array(4096);
  private maskAt = this.masks.length;
  private closeCode = 1006;
  private closeReason = '';
  private closeSent = false;
  private closeFired = false;
  private closeGuard: ReturnType<typeof setTimeout> | null = null;

  constructor(url: string) {
    const connect = bunConnect();
    if (connect === undefined) throw new Error('BunWebSocket needs Bun');
    const parsed = new URL(url);
    if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') throw new SyntaxError(`not a ws:// URL: ${url}`);
    const tls = parsed.protocol === 'wss:';
    const port = parsed.port === '' ? (tls ? 443 : 80) : Number(parsed.port);
    const hostname = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    const key = base64(crypto.getRandomValues(new Uint8Array(16)));
    const request =
      `GET ${parsed.pathname}${parsed.search} HTTP/1.1\r\nHost: ${parsed.host}\r\nUpgrade: websocket\r\n` +
      `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`;
    const handlers: TcpHandlers = {
      open: () => {},
      data: (_socket, data) => this.received(data),
      drain: () => {
        this.waitingForDrain = false;
        this.flush();
      },
      close: () => this.closed(),
      error: (_socket, error) => this.fail(error.message),
      connectError: (_socket, error) => this.fail(error.message),
    };
    void (async () => {
      this.expectedAccept = await acceptFor(key);
      const tcp = await connect({ hostname, port, tls, socket: handlers });
      this.tcp = tcp;
      // close() while connecting: the connection goes as soon as it came.
      if (this.readyState !== CONNECTING) {
        tcp.end();
        return;
      }
      this.append(encoder.encode(request));
      this.flush();
    })().catch((e: unknown) => this.fail(e instanceof Error ? e.message : String(e)));
  }

  /** Queues a text frame; it leaves with the rest of this turn's frames. */
  send(data: string): void {
    if (this.readyState === CONNECTING) throw new Error('WebSocket is not open: readyState 0 (CONNECTING)');
    if (this.readyState !== OPEN) return;
    this.queueFrame(0x1, data);
  }

  close(code = 1000, reason = ''): void {
    if (this.readyState === CLOSING || this.readyState === CLOSED) return;
    if (this.readyState === CONNECTING) {
      this.readyState = CLOSING;
      this.tcp?.end();
      this.fail('closed before the connection opened');
      return;
    }
    this.readyState = CLOSING;
    this.sendClose(code, reason);
    this.closeGuard = setTimeout(() => this.tcp?.end(), CLOSE_GUARD_MS);
    (this.closeGuard as unknown as { unref?: () => void }).unref?.();
  }

  // ---- writing ----

  private sendClose(code: number, reason: string): void {
    if (this.closeSent) return;
    this.closeSent = true;
    const text = encoder.encode(reason).subarray(0, 123);
    const payload = new Uint8Array(2 + text.length);
    payload[0] = code >> 8;
    payload[1] = code & 0xff;
    payload.set(text, 2);
    this.queueFrame(0x8, payload);
    this.flush();
  }

  private queueFrame(opcode: number, data: string | Uint8Array): void {
    // Room for the longest header and the longest UTF-8 form of the text.
    const most = typeof data === 'string' ? data.length * 3 : data.length;
    this.reserve(14 + most);
    const out = this.out;
    const start = this.outLength;
    // The header's size follows from the payload's, known once it is
    // written: write it after the shortest header, move it when longer.
    let at = start + 6;
    let length: number;
    if (typeof data === 'string') {
      length = writeUtf8(out, data, at);
    } else {
      out.set(data, at);
      length = data.length;
    }
    const extra = length < 126 ? 0 : length < 65536 ? 2 : 8;
    if (extra > 0) {
      out.copyWithin(at + extra, at, at + length);
      at += extra;
    }
    out[start] = 0x80 | opcode;
    if (extra === 0) {
      out[start + 1] = 0x80 | length;
    } else if (extra === 2) {
      out[start + 1] = 0x80 | 126;
      out[start + 2] = length >> 8;
      out[start + 3] = length & 0xff;
    } else {
      out[start + 1] = 0x80 | 127;
      let rest = length;
      for (let i = 9; i >= 2; --i) {
        out[start + i] = rest % 256;
        rest = Math.floor(rest / 256);
      }
    }
    if (this.maskAt + 4 > this.masks.length) {
      crypto.getRandomValues(this.masks);
      this.maskAt = 0;
    }
    const masks = this.masks;
    const m = this.maskAt;
    this.maskAt += 4;
    out[at - 4] = masks[m]!;
    out[at - 3] = masks[m + 1]!;
    out[at - 2] = masks[m + 2]!;
    out[at - 1] = masks[m + 3]!;
    for (let i = 0; i < length; ++i) out[at + i]! ^= masks[m + (i & 3)]!;
    this.outLength = at + length;
    if (!this.flushQueued) {
      this.flushQueued = true;
      afterTurn(this.flushTurn);
    }
  }

  private append(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.out.set(bytes, this.outLength);
    this.outLength += bytes.length;
  }

  private reserve(bytes: number): void {
    if (this.outLength + bytes <= this.out.length) return;
    const grown = allocBytes(Math.max(this.out.length * 2, this.outLength + bytes));
    grown.set(this.out.subarray(0, this.outLength));
    this.out = grown;
  }

  /** Writes what is queued; what the socket does not take waits for its drain. */
  private flush(): void {
    const tcp = this.tcp;
    if (tcp === null || this.outLength === 0 || this.waitingForDrain) return;
    const written = tcp.write(this.out.subarray(0, this.outLength));
    if (written < 0) return; // closed: its close handler reports it
    if (written < this.outLength) {
      this.out.copyWithin(0, written, this.outLength);
      this.waitingForDrain = true;
    }
    this.outLength -= written;
  }

  // ---- reading ----

  private received(chunk: Uint8Array): void {
    const left = this.input.length - this.inputAt;
    if (left === 0) {
      this.input = chunk;
    } else {
      const joined = new Uint8Array(left + chunk.length);
      joined.set(this.input.subarray(this.inputAt));
      joined.set(chunk, left);
      this.input = joined;
    }
    this.inputAt = 0;
    if (this.handshaken || this.readHandshake()) this.readFrames();
    // Bun may reuse a chunk's memory once its handler returns: a partial
    // frame left over is copied.
    if (this.inputAt < this.input.length && this.input.buffer === chunk.buffer) {
      this.input = this.input.slice(this.inputAt);
      this.inputAt = 0;
    }
  }

  /** True once the upgrade is accepted; false while its reply is partial or after a failure. */
  private readHandshake(): boolean {
    const input = this.input;
    let end = -1;
    for (let i = 3; i < input.length; ++i) {
      if (input[i] === 10 && input[i - 1] === 13 && input[i - 2] === 10 && input[i - 3] === 13) {
        end = i + 1;
        break;
      }
    }
    if (end < 0) {
      if (input.length > 16384) this.fail('the upgrade reply has no end');
      return false;
    }
    const lines = new TextDecoder().decode(input.subarray(0, end)).split('\r\n');
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    const status = /^HTTP\/1\.1 (\d{3})/.exec(lines[0] ?? '');
    if (status === null || status[1] !== '101') {
      this.fail(`the server answered the upgrade with "${lines[0] ?? ''}"`);
      return false;
    }
    if (headers.get('upgrade')?.toLowerCase() !== 'websocket' || headers.get('sec-websocket-accept') !== this.expectedAccept) {
      this.fail('the server did not accept the WebSocket upgrade');
      return false;
    }
    if (headers.has('sec-websocket-extensions')) {
      this.fail('the server chose an extension the client did not offer');
      return false;
    }
    this.inputAt = end;
    this.handshaken = true;
    this.readyState = OPEN;
    this.onopen?.({});
    return this.readyState === OPEN;
  }

  private readFrames(): void {
    for (;;) {
      const input = this.input;
      const p = this.inputAt;
      const available = input.length - p;
      if (available < 2) return;
      const b0 = input[p]!;
      const b1 = input[p + 1]!;
      let length = b1 & 0x7f;
      let at = 2;
      if (length === 126) {
        if (available < 4) return;
        length = (input[p + 2]! << 8) | input[p + 3]!;
        at = 4;
      } else if (length === 127) {
        if (available < 10) return;
        length = 0;
        for (let i = 2; i < 10; ++i) length = length * 256 + input[p + i]!;
        at = 10;
      }
      if ((b0 & 0x70) !== 0 || (b1 & 0x80) !== 0) return this.protocolError(1002, 'a masked or extended frame');
      if (length > MAX_MESSAGE_BYTES) return this.protocolError(1009, 'a frame over 256 MiB');
      if (available < at + length) return;
      this.inputAt = p + at + length;
      if (!this.frame(b0 & 0x80, b0 & 0x0f, input.subarray(p + at, p + at + length))) return;
    }
  }

  /** Handles one frame; false when reading stops (the connection failed). */
  private frame(fin: number, opcode: number, payload: Uint8Array): boolean {
    if (opcode === 0x9) {
      if (this.readyState === OPEN) this.queueFrame(0xa, payload.slice());
      return true;
    }
    if (opcode === 0xa) return true;
    if (opcode === 0x8) {
      this.closeCode = payload.length >= 2 ? (payload[0]! << 8) | payload[1]! : 1005;
      this.closeReason = payload.length > 2 ? new TextDecoder().decode(payload.subarray(2)) : '';
      if (this.readyState === OPEN) this.readyState = CLOSING;
      this.sendClose(this.closeCode === 1005 ? 1000 : this.closeCode, '');
      this.tcp?.end();
      return false;
    }
    if (opcode === 0x1 || opcode === 0x2) {
      if (this.fragments.length > 0) {
        this.protocolError(1002, 'a new message inside a fragmented one');
        return false;
      }
      if (fin) return this.deliver(opcode, payload);
      this.fragmentOpcode = opcode;
    } else if (opcode !== 0x0 || this.fragments.length === 0) {
      this.protocolError(1002, `an unexpected frame (opcode ${opcode})`);
      return false;
    }
    // A fragment: a copy waits for the last one (the input is not kept).
    this.fragmentBytes += payload.length;
    if (this.fragmentBytes > MAX_MESSAGE_BYTES) {
      this.protocolError(1009, 'a message over 256 MiB');
      return false;
    }
    this.fragments.push(payload.slice());
    if (!fin) return true;
    const whole = new Uint8Array(this.fragmentBytes);
    let at = 0;
    for (const part of this.fragments) {
      whole.set(part, at);
      at += part.length;
    }
    this.fragments = [];
    this.fragmentBytes = 0;
    return this.deliver(this.fragmentOpcode, whole);
  }

  private deliver(opcode: number, payload: Uint8Array): boolean {
    if (opcode === 0x2) {
      this.onmessage?.({ data: payload.slice().buffer });
      return true;
    }
    let text: string;
    try {
      text = decoder.decode(payload);
    } catch {
      this.protocolError(1007, 'a text frame that is not UTF-8');
      return false;
    }
    this.onmessage?.({ data: text });
    return true;
  }

  // ---- ending ----

  private protocolError(code: number, what: string): void {
    this.closeCode = 1006;
    this.closeReason = `the server sent ${what}`;
    if (this.readyState === OPEN) this.readyState = CLOSING;
    this.sendClose(code, '');
    this.onerror?.({ message: this.closeReason });
    this.tcp?.end();
  }

  private fail(message: string): void {
    if (this.closeFired) return;
    this.onerror?.({ message });
    this.tcp?.end();
    this.closed();
  }

  private closed(): void {
    if (this.closeFired) return;
    this.closeFired = true;
    if (this.closeGuard !== null) clearTimeout(this.closeGuard);
    this.readyState = CLOSED;
    this.tcp = null;
    // The code of the peer's close frame; 1006 when none came.
    this.onclose?.({ code: this.closeCode, reason: this.closeReason });
  }
}
