// The Node peer: kv_protocol.mjs on Node's http server with the `ws`
// package, the second peer the connections family measures skiffd against
// (targets ".../node-peer").
// Usage: node kv_peer_node.mjs   (PORT, default 0 = ephemeral; SKIFF_PEER_SECRET;
// SKIFF_PEER_TLS_CERT and SKIFF_PEER_TLS_KEY, PEM files, to serve wss://
// through node:https)
// Prints "kv_peer listening on 127.0.0.1:PORT scheme=ws|wss" first.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { WebSocketServer } from "ws";
import { handle } from "./kv_protocol.mjs";

const certFile = process.env.SKIFF_PEER_TLS_CERT;
const keyFile = process.env.SKIFF_PEER_TLS_KEY;
if (Boolean(certFile) !== Boolean(keyFile)) {
  console.error("kv_peer: SKIFF_PEER_TLS_CERT and SKIFF_PEER_TLS_KEY go together");
  process.exit(2);
}
const tls = Boolean(certFile);
const refuse = (req, res) => {
  res.writeHead(400, { "Content-Type": "text/plain" });
  res.end("WebSocket only\n");
};
const http = tls
  ? createTlsServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, refuse)
  : createServer(refuse);
const wss = new WebSocketServer({ server: http, perMessageDeflate: false, maxPayload: 32 << 20 });
wss.on("connection", (ws) => {
  const session = { user: undefined };
  ws.on("message", (data, isBinary) => {
    ws.send(handle(session, isBinary ? "" : data.toString()));
  });
});
// The listen backlog skiffd has (SOMAXCONN, 4096; the kernel caps any
// backlog at net.core.somaxconn), where Node's default is 511: with 511 an
// accept storm of 1,000 connections has SYNs dropped and retried a second
// later, which would be measured instead of the server.
const backlog = 4096;
http.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1", backlog }, () => {
  console.log(`kv_peer listening on 127.0.0.1:${http.address().port} scheme=${tls ? "wss" : "ws"}`);
});
