// The Bun peer: kv_protocol.mjs on Bun.serve's WebSocket (uWebSockets
// inside), the server bench/transport_bench.cc and the connections family
// measure skiffd against (targets ".../bun-peer").
// Usage: bun run kv_peer.ts   (PORT, default 0 = ephemeral; SKIFF_PEER_SECRET;
// SKIFF_PEER_TLS_CERT and SKIFF_PEER_TLS_KEY, PEM files, to serve wss://)
// Prints "kv_peer listening on 127.0.0.1:PORT scheme=ws|wss" first.
import { handle } from "./kv_protocol.mjs";

// Bun.serve takes no listen backlog: it listens with 512 whatever it is
// given (Bun 1.4.5, as `ss -ltn` shows), where skiffd and the Node peer
// have 4096. The connections family states each server's backlog, read
// from the kernel, in its cases' label.
const certFile = process.env.SKIFF_PEER_TLS_CERT;
const keyFile = process.env.SKIFF_PEER_TLS_KEY;
if (Boolean(certFile) !== Boolean(keyFile)) {
  console.error("kv_peer: SKIFF_PEER_TLS_CERT and SKIFF_PEER_TLS_KEY go together");
  process.exit(2);
}
const tls = certFile ? { cert: Bun.file(certFile), key: Bun.file(keyFile!) } : undefined;
const server = Bun.serve({
  hostname: "127.0.0.1",
  tls,
  port: Number(process.env.PORT ?? 0),
  fetch(req, srv) {
    if (srv.upgrade(req, { data: { user: undefined } })) return;
    return new Response("WebSocket only", { status: 400 });
  },
  websocket: {
    perMessageDeflate: false,
    message(ws, message) {
      ws.send(handle(ws.data, typeof message === "string" ? message : message.toString()));
    },
  },
});
console.log(`kv_peer listening on 127.0.0.1:${server.port} scheme=${tls ? "wss" : "ws"}`);
