// Starts a real skiffd as a child process for tests: on 127.0.0.1, a free
// port chosen by the server, a SQLite store in a fresh temporary directory,
// with the users, groups and geo indexes a test asks for (made with the
// skiff CLI before the server starts, as an operator would).
//
//   const server = await startSkiffd({
//     users: [{ name: 'alice', read: '*', write: '*', groups: ['team'] }],
//     geo: [{ table: 'places', lat: 'lat', lon: 'lon' }],
//   });
//   server.url; server.secrets.alice;
//   await server.kill();     // SIGKILL, no goodbye: clients see the loss
//   await server.restart();  // the same port and store
//   await server.stop();     // SIGTERM, waits for the exit; removes the directory
//
// Binaries: $SKIFFD and $SKIFF (ctest passes them), else build/ci's.

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
export const SKIFFD = process.env.SKIFFD ?? join(repoRoot, 'build/ci/src/cmd/skiffd');
export const SKIFF = process.env.SKIFF ?? join(repoRoot, 'build/ci/src/cmd/skiff');

// Hang guards only: a healthy server starts and stops in well under a second.
const START_GUARD_MS = 20000;
const STOP_GUARD_MS = 20000;

// Children die with the test process, also when a runner's timeout ends it
// with a signal (which skips 'exit' handlers unless the signal is caught).
const running = new Set();
const killAll = () => {
  for (const child of running) child.kill('SIGKILL');
};
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    killAll();
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
  });
}

function admin(store, args) {
  return execFileSync(SKIFF, ['--store', store, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

// Spawns skiffd and resolves with its child once it prints the port it
// listens on; rejects when it exits first or stays silent past the guard.
function launch(store, port, extraArgs) {
  const args = ['--store', store, '--address', '127.0.0.1', '--port', String(port), ...extraArgs];
  const child = spawn(SKIFFD, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => {
    stderr += text;
  });
  return new Promise((resolvePort, reject) => {
    let stdout = '';
    const fail = (why) => {
      clearTimeout(guard);
      child.kill('SIGKILL');
      reject(new Error(`skiffd ${args.join(' ')}: ${why}\nstderr: ${stderr}`));
    };
    const guard = setTimeout(() => fail('did not report its port in time'), START_GUARD_MS);
    child.once('exit', (code, signal) => fail(`exited (${code ?? signal}) before listening`));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (text) => {
      stdout += text;
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(stdout);
      if (m === null) return;
      clearTimeout(guard);
      child.removeAllListeners('exit');
      child.once('exit', () => running.delete(child));
      resolvePort({ child, port: Number(m[1]) });
    });
  });
}

function waitExit(child, signal) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolveExit) => {
    const guard = setTimeout(() => child.kill('SIGKILL'), STOP_GUARD_MS);
    child.once('exit', () => {
      clearTimeout(guard);
      resolveExit();
    });
    child.kill(signal);
  });
}

/**
 * users: [{name, read = '', write = '', groups = []}]; groups are created
 * as needed. geo: [{table, lat, lon}] or [{table, point}]. args: more
 * skiffd flags. Resolves with {url, port, dir, store, secrets, pid, kill(),
 * stop(), restart()}.
 */
export async function startSkiffd({ users = [], geo = [], args = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-js-test-'));
  const store = `sqlite:${join(dir, 'skiff.db')}`;
  const secrets = {};
  const groups = new Set();
  for (const user of users) {
    const out = admin(store, ['user', 'add', user.name, '--read', user.read ?? '', '--write', user.write ?? '']);
    secrets[user.name] = out.trim().split('\n')[0];
    for (const group of user.groups ?? []) {
      if (!groups.has(group)) admin(store, ['group', 'add', group]);
      groups.add(group);
      admin(store, ['group', 'grant', user.name, group]);
    }
  }
  for (const index of geo) {
    const how = index.point !== undefined ? ['--point', index.point] : ['--lat', index.lat, '--lon', index.lon];
    admin(store, ['geo', 'add', index.table, ...how]);
  }

  let { child, port } = await launch(store, 0, args);
  const server = {
    url: `ws://127.0.0.1:${port}/`,
    port,
    dir,
    store,
    secrets,
    get pid() {
      return child.pid;
    },
    /** SIGKILL: connections drop without a close handshake. */
    async kill() {
      await waitExit(child, 'SIGKILL');
    },
    /** Stops (if running) and starts again on the same port and store. */
    async restart() {
      await waitExit(child, 'SIGTERM');
      ({ child } = await launch(store, port, args));
    },
    /** SIGTERM, waits for the exit, removes the directory. */
    async stop() {
      await waitExit(child, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}
