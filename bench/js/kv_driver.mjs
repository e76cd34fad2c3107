// The key-value scenarios through the TypeScript client (src/js/dist/node.js)
// under Node or Bun, for bench/js_client_bench.cc. One argument, a JSON
// object:
//   {client, url, user, secret, table, scenario, ops, connections, inflight,
//    seconds, read_back, timeout_ms}
// scenario: set-small | get-hot | mixed | mixed-long (mixed for `seconds`,
// counting completions per tenth of the run). Prints one JSON line of
// figures (bench/js/figures.mjs); every reply is checked, and written rows
// are read back after the measured run.
import { Latency, fail, heapAfterGc, nowNs, printResult, readConfig, runtimeName,
  runtimeVersion, withDeadline } from './figures.mjs';
import { loadClient, newWireCounts, openClient } from './client_adapter.mjs';
import { keyFor, payloadValue, sameJson, sample, smallValue } from './kv_values.mjs';

const config = readConfig();
for (const k of ['client', 'url', 'user', 'secret', 'table', 'scenario']) {
  if (typeof config[k] !== 'string' || config[k] === '') fail(`configuration lacks "${k}"`);
}
const connections = config.connections ?? 1;
const inflight = config.inflight ?? 1;
const timeoutMs = config.timeout_ms ?? 10000;
const table = config.table;

const latency = new Latency();
let requests = 0; // requests sent in the measured run, each answered or failed
let errors = 0;
let mismatches = 0;
let firstError = '';
const problem = (why) => {
  if (firstError === '') firstError = why;
};

// The measured part: the family samples the server's CPU between the two
// marks (support/js_runner.h), and the driver its own CPU.
let cpuMeasured = 0;
const wire = newWireCounts(); // every frame of the run
let wireMeasured = null; // the measured part's
async function measured(body) {
  process.stdout.write('measure start\n');
  const wire0 = { ...wire };
  const cpu0 = process.cpuUsage();
  const t0 = nowNs();
  await body();
  const elapsed = nowNs() - t0;
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write('measure end\n');
  cpuMeasured = cpu.user + cpu.system;
  wireMeasured = Object.fromEntries(Object.keys(wire).map((k) => [k, wire[k] - wire0[k]]));
  return elapsed;
}

// Runs `step(client, slot)` on `inflight` slots of every client until `more()`
// says stop; a step returns '' when its reply was right, else what was wrong.
async function drive(clients, more, step, onDone = () => {}) {
  const loops = [];
  for (const client of clients) {
    for (let s = 0; s < inflight; s++) {
      const slot = { client, state: {} };
      loops.push((async () => {
        while (more()) {
          requests += 1;
          // A double, not hrtime's BigInt: a request's clock costs the
          // driver no allocation (the run's span is timed by nowNs()).
          const t0 = performance.now();
          try {
            // The client bounds every call itself (requestTimeoutMs): no
            // timer of the driver's own on the measured path.
            const wrong = await step(slot);
            if (wrong) {
              mismatches += 1;
              problem(wrong);
            }
          } catch (e) {
            errors += 1;
            problem(String(e && e.message ? e.message : e));
            slot.state = {}; // its effect is unknown: a chain starts again
          }
          const t1 = performance.now();
          latency.record((t1 - t0) * 1000);
          onDone(t1);
        }
      })());
    }
  }
  await Promise.all(loops);
}

// set(key i) on unique keys; remembers which were acknowledged.
function uniqueSets(acked) {
  let next = 0;
  return {
    sent: () => next,
    async step(slot) {
      const i = next++;
      await slot.client.set(table, keyFor(i), smallValue(i));
      acked.push(i);
      return '';
    },
  };
}

// Reads back `ids` after the run, off the clock: each must hold its value.
async function readBack(client, ids) {
  let verified = 0;
  const wrong = [];
  for (let k = 0; k < ids.length; k += 64) {
    const part = ids.slice(k, k + 64);
    const got = await Promise.all(part.map((i) => withDeadline(
      client.get(table, keyFor(i)), timeoutMs, 'a read-back')));
    got.forEach((value, n) => {
      if (sameJson(value, smallValue(part[n]))) verified += 1;
      else wrong.push(keyFor(part[n]));
    });
  }
  if (wrong.length > 0) problem(`read-back: ${wrong.length} rows differ, first ${wrong[0]}`);
  return verified;
}

// Per slot, a chain on its own key: set, get, has, add, get, delete, has;
// each reply checked against what the chain did before.
function mixedChains() {
  let next = 0;
  let chains = 0;
  return {
    chains: () => chains,
    async step(slot) {
      const st = slot.state;
      if (st.step === undefined) {
        st.step = 0;
        st.i = next++;
      }
      const i = st.i;
      const key = keyFor(i);
      const c = slot.client;
      const done = st.step;
      st.step = (st.step + 1) % 7;
      switch (done) {
        case 0:
          await c.set(table, key, smallValue(i));
          return '';
        case 1: {
          const value = await c.get(table, key);
          return sameJson(value, smallValue(i)) ? '' : `get after set of ${key} differs`;
        }
        case 2:
          return (await c.has(table, key)) ? '' : `has after set of ${key} said false`;
        case 3:
          return (await c.add(table, key, 1, ['c'])) === 1 ? '' : `add on ${key} not 1`;
        case 4: {
          const value = await c.get(table, key);
          return sameJson(value, { c: 1, n: i, s: 'v' + i })
            ? '' : `get after add of ${key} differs`;
        }
        case 5:
          return (await c.delete(table, key)) ? '' : `delete of ${key} found nothing`;
        case 6: {
          const had = await c.has(table, key);
          delete st.step;
          if (had) return `has after delete of ${key} said true`;
          chains += 1;
          return '';
        }
      }
      return '';
    },
  };
}

async function main() {
  const loaded = await loadClient(config.client, wire)
    .catch((e) => fail(`cannot load the client ${config.client}: ${e.message}`));
  const open = () => withDeadline(openClient(loaded, config, inflight), timeoutMs,
    'connect and login');
  const clients = [];
  for (let c = 0; c < connections; c++) clients.push(await open());

  const out = { runtime: runtimeName(), runtime_version: runtimeVersion(),
    scenario: config.scenario, connections, inflight };
  let rowsChecked = 0;
  let rowsExpected = 0;
  let elapsedNs = 0n;
  const scenario = config.scenario;
  if (scenario === 'set-small') {
    const acked = [];
    const sets = uniqueSets(acked);
    const ops = config.ops;
    elapsedNs = await measured(() => drive(clients, () => sets.sent() < ops,
      (slot) => sets.step(slot)));
    const ids = sample(acked.sort((a, b) => a - b), config.read_back ?? 10000);
    rowsExpected = ids.length;
    rowsChecked = await readBack(clients[0], ids);
    out.acked = acked.length;
  } else if (scenario === 'get-hot') {
    const hot = payloadValue(1, 200);
    await withDeadline(clients[0].set(table, 'hot', hot), timeoutMs, 'preload');
    const ops = config.ops;
    elapsedNs = await measured(() => drive(clients, () => requests < ops, async (slot) => {
      const value = await slot.client.get(table, 'hot');
      if (!sameJson(value, hot)) return 'the hot document read back differs';
      rowsChecked += 1;
      return '';
    }));
    rowsExpected = ops;
  } else if (scenario === 'mixed' || scenario === 'mixed-long') {
    const chains = mixedChains();
    if (scenario === 'mixed') {
      const ops = config.ops;
      elapsedNs = await measured(() => drive(clients, () => requests < ops,
        (slot) => chains.step(slot)));
    } else {
      // Completions per tenth of the run: the rate at its start and its end.
      const spanMs = config.seconds * 1000;
      const tenths = new Array(10).fill(0);
      let t0 = 0;
      out.tenths = tenths;
      out.tenth_seconds = config.seconds / 10;
      elapsedNs = await measured(() => {
        t0 = performance.now();
        return drive(clients, () => performance.now() - t0 < spanMs, (slot) => chains.step(slot),
          (at) => {
            const tenth = Math.floor(((at - t0) * 10) / spanMs);
            if (tenth < 10) tenths[tenth] += 1;
          });
      });
    }
    // Every completed chain read its key back three times and checked it.
    out.chains = chains.chains();
    rowsChecked = chains.chains();
    rowsExpected = rowsChecked > 0 ? rowsChecked : 1;
  } else {
    fail(`unknown scenario "${scenario}"`);
  }
  Object.assign(out, heapAfterGc());
  Object.assign(out, {
    ops: latency.n,
    requests,
    errors,
    mismatches,
    first_error: firstError,
    elapsed_ns: Number(elapsedNs),
    latency_us: latency.summary(),
    rows_checked: rowsChecked,
    rows_expected: rowsExpected,
    cpu_us: cpuMeasured,
    wire: wireMeasured,
  });
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  printResult(out);
  process.exit(0);
}

main().catch((e) => fail(e && e.stack ? e.stack : e));
