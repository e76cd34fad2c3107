// Reads one run of the suite: the run's record (run.json, written by
// tools/bench: which families ran and how each ended), every family's
// Google Benchmark JSON (written by the suite's main: valid JSON, counter
// kinds in its context) and memory.json. Each benchmark becomes one row:
// median time, throughput and counters over its repetitions, its error
// state, the store it ran on and whether its budget cut it short.
import fs from 'node:fs';
import path from 'node:path';

// Fields of a benchmark row that are not user counters.
const kStandardFields = new Set([
  'name', 'family_index', 'per_family_instance_index', 'run_name', 'run_type',
  'repetitions', 'repetition_index', 'threads', 'iterations', 'real_time', 'cpu_time',
  'time_unit', 'error_occurred', 'error_message', 'label', 'aggregate_name',
  'aggregate_unit', 'items_per_second', 'bytes_per_second',
]);

const kNanosPerUnit = { ns: 1, us: 1e3, ms: 1e6, s: 1e9 };
export const kStores = ['memory', 'sqlite', 'postgres'];

function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// The suite's main writes valid JSON; anything else is refused, with the
// likely reason.
export function parseJson(text, file) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: not valid JSON (${e.message}); the suite's main writes valid JSON, ` +
      'so this file comes from elsewhere or was cut short');
  }
}

function counterKinds(context) {
  let kinds = context?.skiff_counter_kinds ?? {};
  if (typeof kinds === 'string') {
    try { kinds = JSON.parse(kinds); } catch { kinds = {}; }
  }
  return kinds;
}

// The store a case ran on: the segment of its name that names one.
export function storeOf(name) {
  return name.split('/').find((s) => kStores.includes(s)) ?? null;
}

// The case without its store segment and Google Benchmark's time suffix:
// "BM_WriteOne/*", "get-hot/sequential/*/commit".
export function withoutStore(name) {
  return name.split('/').map((s) => (kStores.includes(s) ? '*' : s)).join('/');
}

// One family file -> { family, context, kinds, benchmarks: [row] }.
export function summariseFamily(family, json) {
  if (!json || !Array.isArray(json.benchmarks)) {
    throw new Error(`${family}: no "benchmarks" array`);
  }
  const kinds = counterKinds(json.context);
  const byName = new Map();
  for (const b of json.benchmarks) {
    const name = b.run_name ?? b.name;
    if (!byName.has(name)) byName.set(name, { iterations: [], aggregates: [] });
    (b.run_type === 'aggregate' ? byName.get(name).aggregates : byName.get(name).iterations).push(b);
  }
  const rows = [];
  for (const [name, { iterations, aggregates }] of byName) {
    // The repetitions are the samples; aggregates only stand in when a run
    // kept nothing else (--benchmark_report_aggregates_only).
    let samples = iterations;
    if (samples.length === 0) {
      samples = aggregates.filter((a) => a.aggregate_name === 'median');
      if (samples.length === 0) samples = aggregates.filter((a) => a.aggregate_name === 'mean');
    }
    if (samples.length === 0) continue;
    const first = samples[0];
    const errored = samples.find((s) => s.error_occurred);
    const counters = {};
    for (const key of Object.keys(first)) {
      if (kStandardFields.has(key) || typeof first[key] !== 'number') continue;
      counters[key] = median(samples.map((s) => s[key]));
    }
    const timeNs = median(samples.map((s) => s.real_time * (kNanosPerUnit[s.time_unit ?? 'ns'] ?? 1)));
    rows.push({
      family,
      name,
      label: first.label ?? '',
      store: storeOf(name),
      repetitions: samples.length,
      timeNs: errored ? null : timeNs,
      itemsPerSecond: errored ? null : median(samples.map((s) => s.items_per_second)),
      counters: errored ? {} : counters,
      capped: samples.filter((s) => (s.capped ?? 0) > 0).length,
      otherCpuPct: errored ? null : counters.other_cpu_pct ?? null,
      error: errored ? errored.error_message ?? 'error' : null,
      skipped: errored ? /^skipped/i.test(errored.error_message ?? '') : false,
    });
  }
  return { family, context: json.context ?? {}, kinds, benchmarks: rows };
}

// run.json, or null when the folder has none (a folder ctest wrote).
export function loadRecord(dir) {
  const file = path.join(dir, 'run.json');
  if (!fs.existsSync(file)) return null;
  const record = parseJson(fs.readFileSync(file, 'utf8'), file);
  if (record?.format !== 'skiff-bench-run/1' || !Array.isArray(record.families)) {
    throw new Error(`${file}: not a run record (format skiff-bench-run/1)`);
  }
  return record;
}

// Every <family>.json in `dir` (memory.json and run.json excepted), or the
// ones the run record names -> [family summary].
export function loadRunDir(dir, record = loadRecord(dir)) {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new Error(`${dir}: not a directory`);
  }
  const files = record
    ? record.families.filter((f) => f.json).map((f) => f.json)
    : fs.readdirSync(dir).filter((f) => f.endsWith('.json') && !['memory.json', 'run.json', 'compare.json'].includes(f) &&
      !f.startsWith('compare-')).sort();
  const families = [];
  for (const f of files) {
    const file = path.join(dir, f);
    if (!fs.existsSync(file)) throw new Error(`${file}: named by run.json but missing`);
    const text = fs.readFileSync(file, 'utf8');
    if (text.trim() === '') continue;  // a family still running
    families.push(summariseFamily(path.basename(f, '.json'), parseJson(text, f)));
  }
  return families;
}

// memory.json in `dir` when it belongs to this run, else { stale } saying
// why it is not shown; null when there is none.
export function loadMemory(dir, families, record) {
  const file = path.join(dir, 'memory.json');
  if (!fs.existsSync(file)) return null;
  const memory = parseJson(fs.readFileSync(file, 'utf8'), file);
  const family = families.find((f) => f.family === 'memory_bench');
  const runId = family?.context?.skiff_run_id ?? record?.run_id;
  if (!runId || memory.run_id !== runId) {
    return { stale: `memory.json is from run ${memory.run_id ?? '(unnamed)'}, not from ` +
      `${runId ?? 'this run (no memory_bench results here)'}: not shown` };
  }
  return memory;
}

// Attaches the base run's row to each head row of the same family and name.
export function attachBase(head, base) {
  const index = new Map();
  for (const fam of base ?? []) for (const b of fam.benchmarks) index.set(`${fam.family}\u0000${b.name}`, b);
  for (const fam of head) {
    for (const b of fam.benchmarks) b.base = index.get(`${fam.family}\u0000${b.name}`) ?? null;
  }
  return head;
}

// The comparer's verdicts (skiff-compare --format json): the page shows them
// and never judges a change itself, so every view of a comparison agrees.
export function loadComparison(file) {
  const c = parseJson(fs.readFileSync(file, 'utf8'), file);
  if (c?.format !== 'skiff-compare/1' || !Array.isArray(c.benchmarks)) {
    throw new Error(`${file}: not a comparison (skiff-compare --format json)`);
  }
  return c;
}

// Puts on each head row its comparer verdicts: `verdict` (the time row) and
// `judged` (one per judged counter).
export function attachVerdicts(head, comparison) {
  const times = new Map(comparison.benchmarks.map((r) => [r.benchmark, r]));
  const judged = new Map();
  for (const r of comparison.judged_counters ?? []) {
    if (!judged.has(r.benchmark)) judged.set(r.benchmark, []);
    judged.get(r.benchmark).push(r);
  }
  for (const fam of head) {
    for (const b of fam.benchmarks) {
      b.verdict = times.get(b.name) ?? null;
      b.judged = judged.get(b.name) ?? [];
    }
  }
  return head;
}
