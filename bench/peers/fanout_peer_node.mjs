// The Node fan-out peer: fanout_protocol.mjs on Node's http server with the
// `ws` package, each topic a Set of its subscribers' sockets and each
// publication a loop sending to every one, acknowledged after the loop.
// The second WebSocket peer bench/fanout_bench.cc measures skiffd's watch
// against (servers "node-peer").
// Usage: node fanout_peer_node.mjs   (PORT, default 0 = ephemeral;
// SKIFF_PEER_SECRET). Prints "fanout_peer listening on 127.0.0.1:PORT" first.
import { createServer } from "node:http";
import { WebSocketServer } from "ws";
import { handle } from "./fanout_protocol.mjs";

const topics = new Map();  // topic -> Set of sockets

function publish(topic, event) {
  const subscribers = topics.get(topic);
  if (!subscribers) return;
  for (const ws of subscribers) ws.send(event);
}

const http = createServer((req, res) => {
  res.writeHead(400, { "Content-Type": "text/plain" });
  res.end("WebSocket only\n");
});
const wss = new WebSocketServer({ server: http, perMessageDeflate: false });
wss.on("connection", (ws) => {
  const session = { user: undefined, topics: [] };
  const subscribe = (topic) => {
    let set = topics.get(topic);
    if (!set) topics.set(topic, (set = new Set()));
    set.add(ws);
    session.topics.push(topic);
  };
  ws.on("message", (data, isBinary) => {
    ws.send(handle(session, isBinary ? "" : data.toString(), subscribe, publish));
  });
  ws.on("close", () => {
    for (const topic of session.topics) topics.get(topic)?.delete(ws);
  });
});
// skiffd's listen backlog (SOMAXCONN), as the connections family's peer.
http.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1", backlog: 4096 }, () => {
  console.log(`fanout_peer listening on 127.0.0.1:${http.address().port}`);
});
