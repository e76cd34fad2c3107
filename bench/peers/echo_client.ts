// A minimal WebSocket load client on Bun: C connections, each keeping P
// echo requests in flight, N requests in all. It is the yardstick for the
// suite's own load driver (docs/benchmarks.md, "Is the client the
// bottleneck?"): against the same server, the driver must reach at least
// this rate.
// Usage: bun run echo_client.ts ws://127.0.0.1:PORT [C=16] [P=32] [N=400000]

const [url, c = "16", p = "32", n = "400000"] = process.argv.slice(2);
const connections = Number(c), pipeline = Number(p), total = Number(n);
const data = `"e-0123456789abcdef"`;
let sent = 0, received = 0, bad = 0;
let started = 0;

function send(ws: WebSocket) {
  if (sent >= total) return;
  const id = ++sent;
  ws.send(`{"id":${id},"op":"echo","data":${data}}`);
}

await Promise.all(Array.from({ length: connections }, () => new Promise<WebSocket>((resolve, reject) => {
  const ws = new WebSocket(url);
  ws.onopen = () => resolve(ws);
  ws.onerror = (e) => reject(e);
}))).then((sockets) => new Promise<void>((done) => {
  started = performance.now();
  for (const ws of sockets) {
    ws.onmessage = (m) => {
      const text = String(m.data);
      if (!text.includes(`"ok":true`) || !text.endsWith(`${data}}`)) bad++;
      if (++received === total) return done();
      send(ws);
    };
    for (let i = 0; i < pipeline; i++) send(ws);
  }
}).then(() => {
  const seconds = (performance.now() - started) / 1000;
  console.log(`echo_client ${connections}x${pipeline}: ${received} replies, ${bad} bad, ` +
              `${Math.round(received / seconds)} ops/s`);
  for (const ws of sockets) ws.close();
  process.exit(bad === 0 ? 0 : 1);
}));
