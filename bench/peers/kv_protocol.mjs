// The part of Skiff's v1 wire the compared scenarios use (login, logout,
// ping, echo, get, has, set, delete, add), for the peers the suite measures
// skiffd against: one implementation, so the Bun and the Node peer answer
// exactly alike and differ only in their WebSocket server. Documents live
// in a Map and nothing is persisted: the floor a server with memory
// durability can be held to, not a database.
const docs = new Map();
const secret = process.env.SKIFF_PEER_SECRET ?? "";

function reply(id, fields) {
  return fields ? `{"id":${id},"ok":true,${fields}}` : `{"id":${id},"ok":true}`;
}

function refuse(id, code, message) {
  const head = id === undefined ? "" : `"id":${id},`;
  return `{${head}"ok":false,"error":{"code":"${code}","message":${JSON.stringify(message)}}}`;
}

// add: creates the document and the path from 0 when missing.
function addAt(doc, path, delta) {
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

// `session` is the connection's own object; login keeps the user in it.
export function handle(session, text) {
  let r;
  try {
    r = JSON.parse(text);
  } catch {
    return refuse(undefined, "bad_request", "not JSON");
  }
  const id = r.id;
  const key = `${r.table}\u0000${r.key}`;
  if (r.op !== "login" && r.op !== "ping" && r.op !== "echo" && !session.user) {
    return refuse(id, "unauthorized", "log in first");
  }
  switch (r.op) {
    case "login":
      if (r.secret !== secret) return refuse(id, "unauthorized", "wrong user or secret");
      session.user = r.user;
      return reply(id, "");
    case "logout":
      session.user = undefined;
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

