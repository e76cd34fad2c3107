// A WebSocket echo server over TLS for the client's transport tests, on
// Node's https server with the `ws` package, plus the same on a plain port
// so one client can hold both kinds of connection.
//
// Usage: node tls_echo_server.mjs CERT KEY WS_MODULES_DIR [MAX_TLS_VERSION]
//   CERT, KEY         PEM files (CERT may hold the chain after the leaf)
//   WS_MODULES_DIR    a node_modules directory holding `ws`
//   MAX_TLS_VERSION   e.g. TLSv1.1, to stand in for a server too old to talk to
// Prints "wss listening on 127.0.0.1:PORT", then "ws listening on
// 127.0.0.1:PORT".
//
// A text frame that is a JSON object with an "id" is answered the way
// skiffd answers `echo` ({"id":..,"ok":true,"data":..}), so the SDK's
// Client can be used on it; any other frame comes back as it came.
import { readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createRequire } from "node:module";
import { join } from "node:path";

const [certFile, keyFile, modulesDir, maxVersion] = process.argv.slice(2);
if (!certFile || !keyFile || !modulesDir) {
  console.error("usage: node tls_echo_server.mjs CERT KEY WS_MODULES_DIR [MAX_TLS_VERSION]");
  process.exit(64);
}
const { WebSocketServer } = createRequire(join(modulesDir, "index.js"))("ws");

function answer(data, isBinary) {
  if (isBinary) return data;
  const text = data.toString();
  try {
    const request = JSON.parse(text);
    if (request !== null && typeof request === "object" && "id" in request) {
      return JSON.stringify({ id: request.id, ok: true, data: request.data ?? null });
    }
  } catch {
    // Not JSON: echoed as it is.
  }
  return text;
}

function serve(server) {
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  wss.on("connection", (ws) => {
    ws.on("message", (data, isBinary) => ws.send(answer(data, isBinary), { binary: isBinary }));
  });
}

function listen(server) {
  return new Promise((resolve) => {
    server.listen({ port: 0, host: "127.0.0.1" }, () => resolve(server.address().port));
  });
}

const tlsOptions = { cert: readFileSync(certFile), key: readFileSync(keyFile) };
if (maxVersion) {
  tlsOptions.minVersion = "TLSv1";
  tlsOptions.maxVersion = maxVersion;
  // OpenSSL 3 allows TLS 1.0 and 1.1 only at security level 0.
  tlsOptions.ciphers = "DEFAULT@SECLEVEL=0";
}
const secure = createHttpsServer(tlsOptions);
const plain = createHttpServer();
serve(secure);
serve(plain);
// A test that crashed never stops its child; go when the parent does
// (signal 0 only asks whether the process exists).
const parent = process.ppid;
setInterval(() => {
  try {
    process.kill(parent, 0);
  } catch {
    process.exit(0);
  }
}, 500).unref();

console.log(`wss listening on 127.0.0.1:${await listen(secure)}`);
console.log(`ws listening on 127.0.0.1:${await listen(plain)}`);
