// The Bun peer: kv_protocol.mjs on Bun.serve's WebSocket (uWebSockets
// inside), the server bench/transport_bench.cc and the connections family
// measure skiffd against (targets ".../bun-peer").
// Usage: bun run kv_peer.ts   (PORT, default 0 = ephemeral; SKIFF_PEER_SECRET)
// Prints "kv_peer listening on 127.0.0.1:PORT" first.
import { handle } from "./kv_protocol.mjs";

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
