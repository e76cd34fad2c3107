// Reads Google Benchmark JSON files written by the suite and reduces each
// benchmark to one row: median time, throughput and counters over its
// repetitions, with its error state and counter kinds.
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

function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// Google Benchmark 1.7 writes bare NaN and inf for some aggregates, which
// JSON.parse rejects; they carry no information here, so they become null.
export function parseBenchmarkJson(text, file) {
  const cleaned = text.replace(/(?<=[:\[,]\s*)-?(?:nan|NaN|inf|Infinity)(?=\s*[,\]\}])/g, 'null');
  try {
    return JSON.parse(cleaned);
  } catch (e) {
    throw new Error(`${file}: not valid JSON (${e.message})`);
  }
}

function counterKinds(context) {
  let kinds = context?.skiff_counter_kinds ?? {};
  if (typeof kinds === 'string') {
    try { kinds = JSON.parse(kinds); } catch { kinds = {}; }
  }
  return kinds;
}

// One family file -> { family, context, benchmarks: [row] }.
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
    const unit = first.time_unit ?? 'ns';
    const timeNs = median(samples.map((s) => s.real_time * (kNanosPerUnit[s.time_unit ?? 'ns'] ?? 1)));
    rows.push({
      family,
      name,
      label: first.label ?? '',
      repetitions: samples.length,
      timeNs: errored ? null : timeNs,
      unit,
      itemsPerSecond: errored ? null : median(samples.map((s) => s.items_per_second)),
      counters: errored ? {} : counters,
      error: errored ? errored.error_message ?? 'error' : null,
      skipped: errored ? /^skipped/i.test(errored.error_message ?? '') : false,
    });
  }
  return { family, context: json.context ?? {}, kinds, benchmarks: rows };
}

// Every <family>.json in `dir` (memory.json excepted) -> [family summary].
export function loadRunDir(dir) {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new Error(`${dir}: not a directory`);
  }
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'memory.json').sort();
  const families = [];
  for (const f of files) {
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    if (text.trim() === '') continue;  // a family still running
    families.push(summariseFamily(path.basename(f, '.json'), parseBenchmarkJson(text, f)));
  }
  return families;
}

// memory.json in `dir`, or null.
export function loadMemory(dir) {
  const file = path.join(dir, 'memory.json');
  if (!fs.existsSync(file)) return null;
  return parseBenchmarkJson(fs.readFileSync(file, 'utf8'), file);
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
