// The pub/sub protocol of the fan-out peers (bench/fanout_bench.cc), one
// implementation for the Bun and the Node peer so that they differ only in
// how a topic reaches its subscribers:
//   {"id":1,"op":"login","user":U,"secret":S}      -> {"id":1,"ok":true}
//   {"id":2,"op":"subscribe","topic":T}            -> {"id":2,"ok":true}
//   {"id":N,"op":"publish","key":K,"value":V}      -> {"id":N,"ok":true},
// after {"event":"change","key":K,"value":V} went to every subscriber of K
// and of K's prefix up to its last '/' (the peers have no pattern
// subscriptions: a prefix is a topic of its own).
const secret = process.env.SKIFF_PEER_SECRET ?? "";

function refuse(id, code, message) {
  const head = id === undefined ? "" : `"id":${id},`;
  return `{${head}"ok":false,"error":{"code":"${code}","message":${JSON.stringify(message)}}}`;
}

// `session`: the connection's own object. `subscribe(topic)` and
// `publish(topic, text)` are the runtime's. Returns the reply.
export function handle(session, text, subscribe, publish) {
  let r;
  try {
    r = JSON.parse(text);
  } catch {
    return refuse(undefined, "bad_request", "not JSON");
  }
  const id = r.id;
  if (r.op === "login") {
    if (r.secret !== secret) return refuse(id, "unauthorized", "wrong user or secret");
    session.user = r.user;
    return `{"id":${id},"ok":true}`;
  }
  if (!session.user) return refuse(id, "unauthorized", "log in first");
  switch (r.op) {
    case "subscribe":
      if (typeof r.topic !== "string") return refuse(id, "bad_request", "topic is a string");
      subscribe(r.topic);
      return `{"id":${id},"ok":true}`;
    case "publish": {
      if (typeof r.key !== "string") return refuse(id, "bad_request", "key is a string");
      const event = `{"event":"change","key":${JSON.stringify(r.key)},"value":${JSON.stringify(r.value)}}`;
      publish(r.key, event);
      const slash = r.key.lastIndexOf("/");
      if (slash >= 0) publish(r.key.slice(0, slash + 1), event);
      return `{"id":${id},"ok":true}`;
    }
    default:
      return refuse(id, "bad_request", `unknown op '${r.op}'`);
  }
}
