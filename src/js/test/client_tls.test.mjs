// The client over wss:// against skiffd serving TLS, under Node (the `ws`
// package) and Bun (its own socket), each in a child process that trusts the
// test's certificate through NODE_EXTRA_CA_CERTS, as the README says. The
// certificate is made by the openssl command, not by Skiff's code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSkiffd } from './support/skiffd.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const bun = process.env.SKIFF_BUN ?? resolve(here, '../../../bench/peers/node_modules/.bin/bun');

function makeCertificate(dir) {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' });
  return { cert, key };
}

function call(runtime, url, user, secret, env) {
  const r = spawnSync(runtime, [join(here, 'support/tls_call.mjs'), url, user, secret], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: r.status, out: r.stdout.trim(), err: r.stderr };
}

test('the client speaks wss:// under Node and Bun, and refuses a server it does not trust', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-js-tls-'));
  const { cert, key } = makeCertificate(dir);
  const server = await startSkiffd({
    users: [{ name: 'ana', read: '*', write: '*' }],
    args: ['--tls-cert', cert, '--tls-key', key],
  });
  try {
    const runtimes = [process.execPath];
    if (existsSync(bun)) runtimes.push(bun);
    else assert.notEqual(process.env.CI, 'true', `bun is missing at ${bun}`);
    for (const runtime of runtimes) {
      for (const host of ['localhost', '127.0.0.1']) {
        const url = `wss://${host}:${server.port}/`;
        const ok = call(runtime, url, 'ana', server.secrets.ana, { NODE_EXTRA_CA_CERTS: cert });
        assert.equal(ok.status, 0, `${runtime} ${url}: ${ok.out} ${ok.err}`);
        assert.deepEqual(JSON.parse(ok.out), { over: 'wss' });
      }
      const untrusted = call(runtime, `wss://localhost:${server.port}/`, 'ana', server.secrets.ana, {
        NODE_EXTRA_CA_CERTS: '',
      });
      assert.equal(untrusted.status, 1, `${runtime}: ${untrusted.out}`);
      assert.match(untrusted.out, /^error not_connected: /);
      const plain = call(runtime, `ws://localhost:${server.port}/`, 'ana', server.secrets.ana, {});
      assert.equal(plain.status, 1, `${runtime} ws:// on the wss:// port: ${plain.out}`);
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
