// What every driver measures and prints: a latency histogram, the run's
// clock, the process's heap and CPU, and the one JSON result line on stdout
// that support/js_runner.h reads. Runs under Node and Bun alike.

// Latency in microseconds, 64 buckets per power of two (about 1.1 % wide),
// so a five-minute run keeps a fixed few kilobytes however many requests.
export class Latency {
  constructor() {
    this.counts = new Float64Array(64 * 40);
    this.n = 0;
    this.sum = 0;
    this.max = 0;
  }
  record(us) {
    const v = Math.max(us, 1);
    const exp = Math.floor(Math.log2(v));
    const sub = Math.floor((v / 2 ** exp - 1) * 64);
    this.counts[Math.min(exp * 64 + sub, this.counts.length - 1)] += 1;
    this.n += 1;
    this.sum += us;
    if (us > this.max) this.max = us;
  }
  percentile(p) {
    if (this.n === 0) return 0;
    const want = Math.ceil((p / 100) * this.n);
    let seen = 0;
    for (let b = 0; b < this.counts.length; b++) {
      seen += this.counts[b];
      if (seen >= want) {
        const exp = Math.floor(b / 64);
        // The bucket's upper edge, never above the largest sample.
        return Math.min(2 ** exp * (1 + ((b % 64) + 1) / 64), this.max);
      }
    }
    return this.max;
  }
  summary() {
    return {
      count: this.n,
      avg: this.n ? this.sum / this.n : 0,
      p50: this.percentile(50),
      p95: this.percentile(95),
      p99: this.percentile(99),
      max: this.max,
    };
  }
}

export const nowNs = () => process.hrtime.bigint();
export const usSince = (t0) => Number(process.hrtime.bigint() - t0) / 1000;

export function runtimeName() {
  return typeof globalThis.Bun !== 'undefined' ? 'bun' : 'node';
}

export function runtimeVersion() {
  return typeof globalThis.Bun !== 'undefined' ? globalThis.Bun.version : process.versions.node;
}

// Heap in use after a full collection where the runtime offers one (node
// --expose-gc, Bun.gc(true)); `gc_forced` says whether it did.
export function heapAfterGc() {
  let forced = false;
  if (typeof globalThis.Bun !== 'undefined') {
    globalThis.Bun.gc(true);
    forced = true;
  } else if (typeof globalThis.gc === 'function') {
    globalThis.gc();
    forced = true;
  }
  return { heap_bytes: process.memoryUsage().heapUsed, gc_forced: forced };
}

// The result line: the only line a driver writes on stdout.
export function printResult(result) {
  process.stdout.write(JSON.stringify(result) + '\n');
}

// A failure the C++ side reports as the case's error; exits non-zero.
export function fail(why) {
  process.stdout.write(JSON.stringify({ error: String(why) }) + '\n');
  process.exit(1);
}

// The driver's one argument: a JSON object of what to do.
export function readConfig() {
  const arg = process.argv[process.argv.length - 1];
  try {
    const config = JSON.parse(arg);
    if (config === null || typeof config !== 'object') throw new Error('not an object');
    return config;
  } catch (e) {
    fail(`the last argument must be the driver's JSON configuration: ${e.message}`);
  }
}

// Every async step of a driver is bounded: a hang becomes an error.
export function withDeadline(promise, ms, what) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
