// A minimal key-value server on Bun, the peer the end-to-end suite measures
// skiffd against (bench/transport_bench.cc, targets ".../bun-peer").
//
// It speaks the part of Skiff's v1 wire the compared scenarios use (login,
// logout, ping, echo, get, has, set, delete, add) over Bun.serve's
// WebSocket, keeps documents in a Map, and persists nothing: it is the
// floor a server with memory durability can be held to, not a database.
// Usage: bun run kv_peer.ts   (PORT, default 0 = ephemeral; SKIFF_PEER_SECRET)
// Prints "kv_peer listening on 127.0.0.1:PORT" first.

type Doc = any;
const docs = new Map<string, Doc>();
const secret = process.env.SKIFF_PEER_SECRET ?? "";

function reply(id: number, fields: string): string {
  return fields ? `{"id":${id},"ok":true,${fields}}` : `{"id":${id},"ok":true}`;
}

function refuse(id: number | undefined, code: string, message: string): string {
  const head = id === undefined ? "" : `"id":${id},`;
  return `{${head}"ok":false,"error":{"code":"${code}","message":${JSON.stringify(message)}}}`;
}

// add: creates the document and the path from 0 when missing.
function addAt(doc: Doc, path: string[], delta: number): [Doc, number] {
  if (path.length === 0) {
    const base = typeof doc === "number" ? doc : 0;
    return [base + delta, base + delta];
  }
  const root = doc !== null && typeof doc === "object" && !Array.isArray(doc) ? doc : {};
  let node = root;
  for (let i = 0; i < path.length - 1; i++) {
    const next = node[path[i]];
    if (next === null || typeof next !== "object" || Array.isArray(next)) node[path[i]] = {};
    node = node[path[i]];
  }
  const last = path[path.length - 1];
  const value = (typeof node[last] === "number" ? node[last] : 0) + delta;
  node[last] = value;
  return [root, value];
}

function handle(ws: any, text: string): string {
  let r: any;
  try {
    r = JSON.parse(text);
  } catch {
    return refuse(undefined, "bad_request", "not JSON");
  }
  const id = r.id;
  const key = `${r.table}\u0000${r.key}`;
  if (r.op !== "login" && r.op !== "ping" && r.op !== "echo" && !ws.data.user) {
    return refuse(id, "unauthorized", "log in first");
  }
  switch (r.op) {
    case "login":
      if (r.secret !== secret) return refuse(id, "unauthorized", "wrong user or secret");
      ws.data.user = r.user;
      return reply(id, "");
    case "logout":
      ws.data.user = undefined;
      return reply(id, "");
    case "ping":
      return reply(id, "");
    case "echo":
      return reply(id, `"data":${JSON.stringify(r.data)}`);
    case "get": {
      const d = docs.get(key);
      return d === undefined ? reply(id, `"found":false`)
                             : reply(id, `"found":true,"value":${JSON.stringify(d)}`);
    }
    case "has":
      return reply(id, `"found":${docs.has(key)}`);
    case "set":
      docs.set(key, r.value);
      return reply(id, "");
    case "delete":
      return reply(id, `"found":${docs.delete(key)}`);
    case "add": {
      const [doc, value] = addAt(docs.get(key), r.path ?? [], r.delta);
      docs.set(key, doc);
      return reply(id, `"value":${value}`);
    }
  }
  return refuse(id, "bad_request", `unknown op ${r.op}`);
}

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
      ws.send(handle(ws, typeof message === "string" ? message : message.toString()));
    },
  },
});
console.log(`kv_peer listening on 127.0.0.1:${server.port}`);
