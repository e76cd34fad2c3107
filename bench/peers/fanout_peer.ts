// The Bun fan-out peer: fanout_protocol.mjs on Bun.serve's WebSocket, each
// subscription a ws.subscribe(topic), each publication one
// server.publish(topic, text) (uWebSockets' topic tree), acknowledged once
// it returned. The server bench/fanout_bench.cc measures skiffd's watch
// against (servers "bun-peer").
// Usage: bun run fanout_peer.ts   (PORT, default 0 = ephemeral;
// SKIFF_PEER_SECRET). Prints "fanout_peer listening on 127.0.0.1:PORT" first.
import { handle } from "./fanout_protocol.mjs";

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
      const text = typeof message === "string" ? message : message.toString();
      ws.send(
        handle(
          ws.data,
          text,
          (topic) => ws.subscribe(topic),
          (topic, event) => server.publish(topic, event),
        ),
      );
    },
  },
});
console.log(`fanout_peer listening on 127.0.0.1:${server.port}`);
