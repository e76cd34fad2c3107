// The Bun peer: kv_protocol.mjs on Bun.serve's WebSocket (uWebSockets
// inside), the server bench/transport_bench.cc and the connections family
// measure skiffd against (targets ".../bun-peer").
// Usage: bun run kv_peer.ts   (PORT, default 0 = ephemeral; SKIFF_PEER_SECRET)
// Prints "kv_peer listening on 127.0.0.1:PORT" first.
import { handle } from "./kv_protocol.mjs";

// Bun.serve takes no listen backlog: it listens with 512 whatever it is
// given (Bun 1.4.5, as `ss -ltn` shows), where skiffd and the Node peer
// have 4096. The connections family states each server's backlog, read
// from the kernel, in its cases' label.
const server = Bun.serve({
  hostname: "127.0.0.1",
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
console.log(`kv_peer listening on 127.0.0.1:${server.port}`);
