// BunWebSocket (src/bun_socket.ts, the Node entry's socket under Bun)
// against a scripted peer on a real TCP socket on 127.0.0.1: the framing
// skiffd never exercises (fragments, a ping among them, 16- and 64-bit
// lengths both ways, the close handshake) and the failures (a wrong
// upgrade reply, a text frame that is not UTF-8). A plain script:
// client_bun.test.mjs runs checkBunSocket() under Bun, and
// `bun test/client_bun_socket.test.mjs` runs it alone. Under Node it has
// nothing to check.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer } from 'node:net';

import { BunWebSocket } from '../dist/bun_socket.js';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

// One unmasked frame from the peer.
function peerFrame(opcode, payload, fin = true) {
  const data = typeof payload === 'string' ? Buffer.from(payload) : payload;
  let header;
  if (data.length < 126) {
    header = Buffer.from([(fin ? 0x80 : 0) | opcode, data.length]);
  } else if (data.length < 65536) {
    header = Buffer.from([(fin ? 0x80 : 0) | opcode, 126, data.length >> 8, data.length & 0xff]);
  } else {
    header = Buffer.alloc(10);
    header[0] = (fin ? 0x80 : 0) | opcode;
    header[1] = 127;
    header.writeBigUInt64BE(BigInt(data.length), 2);
  }
  return Buffer.concat([header, data]);
}

// The client's frames as the peer reads them (each must be masked).
function readFrames(state, chunk, onFrame) {
  state.input = Buffer.concat([state.input, chunk]);
  for (;;) {
    const input = state.input;
    if (input.length < 2) return;
    assert.ok(input[1] & 0x80, 'a client frame is masked');
    let length = input[1] & 0x7f;
    let at = 2;
    if (length === 126) {
      if (input.length < 4) return;
      length = input.readUInt16BE(2);
      at = 4;
    } else if (length === 127) {
      if (input.length < 10) return;
      length = Number(input.readBigUInt64BE(2));
      at = 10;
    }
    if (input.length < at + 4 + length) return;
    const mask = input.subarray(at, at + 4);
    const payload = Buffer.from(input.subarray(at + 4, at + 4 + length));
    for (let i = 0; i < payload.length; ++i) payload[i] ^= mask[i & 3];
    state.input = input.subarray(at + 4 + length);
    onFrame(input[0] & 0x0f, payload);
  }
}

// A peer that accepts the upgrade (with a wrong accept for /bad-accept)
// and then runs `script(path, socket, frames)`.
function startPeer(script) {
  const server = createServer((socket) => {
    let head = Buffer.alloc(0);
    const state = { input: Buffer.alloc(0) };
    const frames = [];
    let path = null;
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      if (path !== null) {
        readFrames(state, chunk, (opcode, payload) => {
          frames.push({ opcode, payload });
          script.onFrame(path, socket, frames);
        });
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const text = head.subarray(0, end).toString();
      path = text.split(' ')[1];
      const key = /sec-websocket-key: *(\S+)/i.exec(text)[1];
      const accept = createHash('sha1').update(path === '/bad-accept' ? 'wrong' : key + GUID).digest('base64');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      script.opened(path, socket, frames);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// Opens a BunWebSocket on `path` and collects what it reports until its close.
function run(port, path, onOpen = () => {}) {
  return new Promise((resolve) => {
    const seen = { opened: false, messages: [], errors: [], close: null };
    const ws = new BunWebSocket(`ws://127.0.0.1:${port}${path}`);
    ws.onopen = () => {
      seen.opened = true;
      onOpen(ws);
    };
    ws.onmessage = (event) => seen.messages.push(event.data);
    ws.onerror = (event) => seen.errors.push(event.message);
    ws.onclose = (event) => {
      seen.close = event;
      resolve(seen);
    };
  });
}

export async function checkBunSocket() {
  const sent = ['a'.repeat(300), '€'.repeat(60), 'é'.repeat(50), 'z'.repeat(70000)];
  // The client's frames per path, once its close frame is in.
  const closedFrames = new Map();
  const waiters = new Map();
  const framesOnClose = (path) =>
    closedFrames.has(path) ? Promise.resolve(closedFrames.get(path)) : new Promise((resolve) => waiters.set(path, resolve));
  const peer = await startPeer({
    opened(path, socket) {
      if (path === '/frames') {
        // One message in three fragments, a ping among them, then 70,000
        // bytes in one frame (a 64-bit length).
        socket.write(Buffer.concat([peerFrame(1, 'hel', false), peerFrame(9, 'p1'), peerFrame(0, 'lo ', false),
          peerFrame(0, 'wörld'), peerFrame(1, 'y'.repeat(70000))]));
      } else if (path === '/bad-utf8') {
        socket.write(peerFrame(1, Buffer.from([0x68, 0xff, 0xfe])));
      }
    },
    onFrame(path, socket, frames) {
      // Once the client's four messages and its pong are in, the peer closes.
      const texts = frames.filter((f) => f.opcode === 1);
      if (path === '/frames' && texts.length === sent.length && frames.some((f) => f.opcode === 10)) {
        const close = Buffer.alloc(5);
        close.writeUInt16BE(4001, 0);
        close.write('bye', 2);
        socket.write(peerFrame(8, close));
      }
      if (frames.at(-1).opcode === 8) {
        socket.end();
        closedFrames.set(path, frames);
        waiters.get(path)?.(frames);
      }
    },
  });
  const port = peer.address().port;
  try {
    const framed = await run(port, '/frames', (ws) => {
      for (const text of sent) ws.send(text);
    });
    assert.ok(framed.opened);
    assert.deepEqual(framed.messages, ['hello wörld', 'y'.repeat(70000)]);
    assert.deepEqual(framed.close, { code: 4001, reason: 'bye' });
    const framesSeen = await framesOnClose('/frames');
    const texts = framesSeen.filter((f) => f.opcode === 1).map((f) => f.payload.toString());
    assert.deepEqual(texts, sent, 'the peer read each frame as sent (7-, 16- and 64-bit lengths)');
    assert.equal(framesSeen.find((f) => f.opcode === 10)?.payload.toString(), 'p1', 'the ping was answered');
    const echoed = framesSeen.find((f) => f.opcode === 8);
    assert.equal(echoed?.payload.readUInt16BE(0), 4001, 'the close was answered with its code');

    const refused = await run(port, '/bad-accept');
    assert.equal(refused.opened, false);
    assert.equal(refused.close.code, 1006);
    assert.match(refused.errors[0] ?? '', /did not accept/);

    const garbled = await run(port, '/bad-utf8');
    assert.ok(garbled.opened);
    assert.deepEqual(garbled.messages, []);
    assert.equal(garbled.close.code, 1006);
    assert.match(garbled.errors[0] ?? '', /not UTF-8/);
    const garbledFrames = await framesOnClose('/bad-utf8');
    assert.equal(garbledFrames.find((f) => f.opcode === 8)?.payload.readUInt16BE(0), 1007, 'the client closed with 1007');

  } finally {
    await new Promise((resolve) => peer.close(resolve));
  }
  // Nothing listens there once the peer is gone: an error, then 1006.
  const nobody = await run(port, '/');
  assert.equal(nobody.opened, false);
  assert.equal(nobody.close.code, 1006);
  assert.equal(nobody.errors.length, 1);
  console.log('ok: BunWebSocket framing, close handshake and failures');
}

const isMain = typeof globalThis.Bun !== 'undefined' ? import.meta.main : process.argv[1]?.endsWith('client_bun_socket.test.mjs');
if (isMain) {
  if (typeof globalThis.Bun === 'undefined') {
    console.log('skipped: BunWebSocket runs under Bun only');
  } else {
    const guard = setTimeout(() => {
      console.error('FAILED: no result within 60 s');
      process.exit(1);
    }, 60000);
    guard.unref?.();
    try {
      await checkBunSocket();
    } catch (e) {
      console.error('FAILED:', e);
      process.exit(1);
    }
  }
}
