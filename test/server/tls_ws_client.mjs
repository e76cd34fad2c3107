// A Node `ws` client over TLS for tls_test.cc: an independent client (not
// the SDK) of skiffd's wss:// port. One JSON line on stdout says what it saw.
//
//   node tls_ws_client.mjs MODULES URL CA USER SECRET once
//     one connection: login, set, get, then ten 1 MB values written and
//     read back; prints {"ok":true,"value":...,"bigSame":true}
//   node tls_ws_client.mjs MODULES URL CA USER SECRET reload CONNECTIONS NEW_CERT
//     opens CONNECTIONS connections that log in and keep a request in
//     flight each, prints "ready", waits until a new connection is served
//     NEW_CERT (the test swaps the files and sends SIGHUP meanwhile), then
//     has each old connection answer 50 more requests and prints counts.
//   node tls_ws_client.mjs MODULES URL CA USER SECRET reset
//     writes an 8 MB value, then five times asks for it and resets the
//     connection while the reply is being written.
// CA may hold several certificates (the old and the new roots).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';

const [modules, url, caFile, user, secret, mode, countArg, newCertFile] = process.argv.slice(2);
const WebSocket = createRequire(`${modules}/`)('ws');
const ca = readFileSync(caFile);
// A hang is a failure, never a wait forever.
setTimeout(() => fail('timed out'), 60_000).unref();

function fail(why) {
  process.stdout.write(`${JSON.stringify({ ok: false, error: String(why) })}\n`);
  process.exit(1);
}

// One WebSocket with request ids; call() resolves with the reply.
function open() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { ca });
    const pending = new Map();
    let next = 1;
    const conn = {
      closed: false,
      call(request) {
        const id = next++;
        return new Promise((res, rej) => {
          pending.set(id, { res, rej });
          ws.send(JSON.stringify({ ...request, id }));
        });
      },
      close: () => ws.close(),
    };
    ws.on('open', () => resolve(conn));
    ws.on('error', (e) => reject(e));
    ws.on('message', (data) => {
      const reply = JSON.parse(data.toString());
      const p = pending.get(reply.id);
      if (!p) return fail(`reply to an unknown id: ${data}`);
      pending.delete(reply.id);
      if (reply.error) p.rej(new Error(JSON.stringify(reply.error)));
      else p.res(reply);
    });
    ws.on('close', () => {
      conn.closed = true;
      for (const p of pending.values()) p.rej(new Error('closed'));
      pending.clear();
    });
  });
}

async function login(conn) {
  await conn.call({ op: 'login', user, secret });
}

// The SHA-256 fingerprint of the leaf a fresh TLS connection is served.
function servedFingerprint() {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: hostname, port: Number(port), ca, servername: 'localhost' }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.on('error', reject);
  });
}

async function once() {
  const conn = await open();
  await login(conn);
  await conn.call({ op: 'set', table: 't', key: 'k', value: { over: 'tls' } });
  const got = await conn.call({ op: 'get', table: 't', key: 'k' });
  // A value of many TLS records each way (16 KiB of plaintext per record),
  // ten writes in flight so reads and writes interleave.
  const big = Array.from({ length: 10 }, (_, i) => `${i}`.repeat(1_000_000 + i));
  await Promise.all(big.map((v, i) => conn.call({ op: 'set', table: 't', key: `big${i}`, value: v })));
  const back = await Promise.all(big.map((_, i) => conn.call({ op: 'get', table: 't', key: `big${i}` })));
  const bigSame = back.every((r, i) => r.value === big[i]);
  conn.close();
  process.stdout.write(`${JSON.stringify({ ok: true, value: got.value, bigSame })}\n`);
}

async function reload() {
  const count = Number(countArg);
  const wanted = new X509Certificate(readFileSync(newCertFile)).fingerprint256;
  const conns = await Promise.all(Array.from({ length: count }, () => open()));
  await Promise.all(conns.map(login));
  // Each connection keeps one request in flight until told to stop.
  let running = true;
  let answered = 0;
  const loops = conns.map(async (c, i) => {
    let n = 0;
    while (running) {
      const key = `c${i}-${n++}`;
      await c.call({ op: 'set', table: 'load', key, value: n });
      answered++;
    }
  });
  process.stdout.write('ready\n');
  let polls = 0;
  for (;;) {
    polls++;
    if ((await servedFingerprint()) === wanted) break;
    if (polls > 500) return fail('the new certificate was never served');
    await new Promise((r) => setTimeout(r, 20));
  }
  // Every connection opened before the reload answers more requests.
  let after = 0;
  await Promise.all(
    conns.map(async (c, i) => {
      for (let n = 0; n < 50; n++) {
        const got = await c.call({ op: 'get', table: 'load', key: `c${i}-0` });
        if (got.value !== 1) fail(`c${i}-0 read ${JSON.stringify(got.value)}`);
        after++;
      }
    }),
  );
  running = false;
  await Promise.all(loops);
  const closed = conns.filter((c) => c.closed).length;
  for (const c of conns) c.close();
  process.stdout.write(`${JSON.stringify({ ok: true, closed, answered, after, polls })}\n`);
}

// Asks for a large value, then resets the connection without reading the
// reply: the server's write then meets a reset socket.
async function reset() {
  const conn = await open();
  await login(conn);
  await conn.call({ op: 'set', table: 't', key: 'huge', value: 'x'.repeat(8_000_000) });
  for (let round = 0; round < 5; round++) {
    const ws = new WebSocket(url, { ca });
    await new Promise((resolve, reject) => {
      ws.on('open', resolve);
      ws.on('error', reject);
    });
    ws.send(JSON.stringify({ id: 1, op: 'login', user, secret }));
    ws.send(JSON.stringify({ id: 2, op: 'get', table: 't', key: 'huge' }));
    // The login's reply has arrived: the get's is being written.
    await new Promise((resolve) => ws.once('message', resolve));
    // Closing a socket with unread bytes makes the kernel send a reset.
    ws._socket.destroy();
  }
  conn.close();
  process.stdout.write(`${JSON.stringify({ ok: true })}\n`);
}

const modes = { once, reload, reset };
modes[mode]().catch(fail);
