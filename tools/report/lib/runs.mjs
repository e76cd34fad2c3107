// Reads one run of the suite: the run's record (run.json, written by
// tools/bench: which families ran and how each ended), every family's
// figures and memory.json. A family's Google Benchmark JSON is read by
// skiff-compare alone (lib/comparer.mjs): each benchmark becomes one row of
// its medians over the repetitions (time, throughput, counters), its error
// state, the store it ran on and how often its budget cut it short; with a
// base run, the comparer's verdicts of this run against it come along
// (without one, its figures alone: skiff-compare --figures).
import fs from 'node:fs';
import path from 'node:path';

import { compareRuns, runFigures } from './comparer.mjs';

export const kStores = ['memory', 'sqlite', 'postgres'];

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

// The store a case ran on: the segment of its name that names one.
export function storeOf(name) {
  return name.split('/').find((s) => kStores.includes(s)) ?? null;
}

// The case without its store segment and Google Benchmark's time suffix:
// "BM_WriteOne/*", "get-hot/sequential/*/commit".
export function withoutStore(name) {
  return name.split('/').map((s) => (kStores.includes(s) ? '*' : s)).join('/');
}

// One side of skiff-compare's report ("runs.head" or "runs.base") ->
// { family, context, kinds, benchmarks: [row] }.
export function familyFigures(family, figures) {
  const rows = [];
  for (const b of figures.benchmarks) {
    const failed = b.state !== 'ok';
    // A name with no sample and no error (only spread aggregates) has nothing to show.
    if (!failed && b.repetitions === 0) continue;
    const counters = failed ? {} : b.counters;
    rows.push({
      family,
      name: b.name,
      label: b.label ?? '',
      store: storeOf(b.name),
      repetitions: b.repetitions,
      timeNs: failed ? null : b.real_time_ns,
      itemsPerSecond: failed ? null : b.items_per_second,
      counters,
      capped: b.capped_repetitions ?? 0,
      otherCpuPct: counters.other_cpu_pct ?? null,
      error: failed ? b.error_message || 'error' : null,
      skipped: b.state === 'skipped',
    });
  }
  return { family, context: figures.context ?? {}, kinds: figures.counter_kinds ?? {}, benchmarks: rows };
}

// The text of a results file, refused unless it is JSON (what the suite's
// main writes); null for an empty file (a family still running).
function resultsText(file, label) {
  const text = fs.readFileSync(file, 'utf8');
  if (text.trim() === '') return null;
  parseJson(text, label);
  return text;
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
// ones the run record names -> [family summary]. With `baseDir`, each family
// that has a file of the same name there is compared with it: `base` holds
// the base's figures and `comparison` skiff-compare's whole report.
export function loadRunDir(dir, record = loadRecord(dir), { baseDir = null } = {}) {
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
    if (resultsText(file, f) === null) continue;
    const baseFile = baseDir ? path.join(baseDir, path.basename(f)) : null;
    const paired = baseFile !== null && fs.existsSync(baseFile) && resultsText(baseFile, baseFile) !== null;
    // Without a base there is nothing to judge: the run's figures alone.
    const report = paired ? compareRuns(baseFile, file) : runFigures(file);
    const family = familyFigures(path.basename(f, '.json'), report.runs.head);
    family.base = paired ? familyFigures(family.family, report.runs.base) : null;
    family.comparison = paired ? report : null;
    families.push(family);
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

// Attaches to each row its base run's row of the same name, if any.
export function attachBase(head) {
  for (const fam of head) {
    const index = new Map((fam.base?.benchmarks ?? []).map((b) => [b.name, b]));
    for (const b of fam.benchmarks) b.base = index.get(b.name) ?? null;
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
// `judged` (one per judged counter), from `comparison` when given (one
// report for every family, as tools/bench writes it), else from each
// family's own comparison with the base.
export function attachVerdicts(head, comparison = null) {
  for (const fam of head) {
    const report = comparison ?? fam.comparison;
    const times = new Map((report?.benchmarks ?? []).map((r) => [r.benchmark, r]));
    const judged = new Map();
    for (const r of report?.judged_counters ?? []) {
      if (!judged.has(r.benchmark)) judged.set(r.benchmark, []);
      judged.get(r.benchmark).push(r);
    }
    for (const b of fam.benchmarks) {
      b.verdict = times.get(b.name) ?? null;
      b.judged = judged.get(b.name) ?? [];
    }
  }
  return head;
}
