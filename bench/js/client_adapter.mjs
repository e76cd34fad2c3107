// Opens the TypeScript client of src/js for a driver, on a WebSocket that
// counts what crosses the wire (frames and bytes each way), so the figures
// are counted, not assumed. The socket underneath is the one the Node entry
// uses by default in the runtime.
import { pathToFileURL } from 'node:url';

export function newWireCounts() {
  return { frames_sent: 0, bytes_sent: 0, frames_received: 0, bytes_received: 0 };
}

const size = (data) => (typeof data === 'string' ? Buffer.byteLength(data)
  : data?.byteLength ?? data?.length ?? 0);

// A WebSocket class whose instances delegate to `Base` and add to `counts`.
function countingWebSocket(Base, counts) {
  return class CountingWebSocket {
    constructor(url) {
      this.inner = new Base(url);
    }
    get readyState() { return this.inner.readyState; }
    // The stream under `ws`, so the client's one write per turn (node.ts)
    // is measured as it runs unwrapped; every frame still passes send().
    // (BunWebSocket batches a turn's frames itself.)
    get _socket() { return this.inner._socket; }
    get onopen() { return this.inner.onopen; }
    set onopen(f) { this.inner.onopen = f; }
    get onclose() { return this.inner.onclose; }
    set onclose(f) { this.inner.onclose = f; }
    get onerror() { return this.inner.onerror; }
    set onerror(f) { this.inner.onerror = f; }
    get onmessage() { return this.handler ?? null; }
    set onmessage(f) {
      this.handler = f;
      this.inner.onmessage = f === null ? null : (event) => {
        counts.frames_received += 1;
        counts.bytes_received += size(event.data);
        f(event);
      };
    }
    send(data) {
      counts.frames_sent += 1;
      counts.bytes_sent += size(data);
      this.inner.send(data);
    }
    close(code, reason) { this.inner.close(code, reason); }
  };
}

// The client module and the counting socket class, loaded once.
export async function loadClient(clientPath, counts) {
  const module = await import(pathToFileURL(clientPath).href);
  return { Client: module.Client, WebSocket: countingWebSocket(entryWebSocket(module.Client), counts) };
}

// The WebSocket the client's entry uses when the options name none (under
// Node the `ws` package, under Bun its own socket over Bun's TCP API).
function entryWebSocket(Client) {
  return class extends Client {
    static socketClass() {
      return this.defaultWebSocket();
    }
  }.socketClass();
}

// One connected, logged-in client with `inflight` calls at most in flight.
export function openClient(loaded, config, inflight) {
  return loaded.Client.connect({
    url: config.url,
    user: config.user,
    secret: config.secret,
    WebSocket: loaded.WebSocket,
    maxInFlight: Math.max(inflight, 1),
    requestTimeoutMs: config.timeout_ms ?? 10000,
    reconnect: false,
  });
}
