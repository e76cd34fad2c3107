// The run history: one JSON line per run (what github-action-benchmark and
// Bencher keep), so the page can chart a case over many runs.
//
// A line: { "format": "skiff-history/1", "run_id", "date", "revision",
// "verdict", "cases": { "<family>/<case>": { "time_ns", "per_second",
// "capped" } } }. Time is per operation for end-to-end cases (the suite's
// main reports it so), per iteration otherwise.
import fs from 'node:fs';

import { parseJson } from './runs.mjs';

export function historyLine(record, families) {
  const cases = {};
  for (const fam of families) {
    for (const b of fam.benchmarks) {
      if (b.error) continue;
      cases[`${fam.family}/${b.name}`] = {
        time_ns: b.timeNs,
        per_second: Number.isFinite(b.itemsPerSecond) ? b.itemsPerSecond : b.counters.ops_per_s ?? null,
        capped: b.capped > 0,
      };
    }
  }
  const context = families[0]?.context ?? {};
  return {
    format: 'skiff-history/1',
    run_id: record?.run_id ?? context.skiff_run_id ?? null,
    date: record?.started ?? context.date ?? null,
    revision: record?.revision ?? context.skiff_git_revision ?? null,
    verdict: record?.verdict ?? null,
    cases,
  };
}

// Every run in a history file, oldest first; a bad line is an error that
// names its line number.
export function loadHistory(file) {
  if (!fs.existsSync(file)) return [];
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const runs = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    const run = parseJson(line, `${file}:${i + 1}`);
    if (run?.format !== 'skiff-history/1' || typeof run.cases !== 'object') {
      throw new Error(`${file}:${i + 1}: not a history line (format skiff-history/1)`);
    }
    runs.push(run);
  });
  return runs;
}

export function appendHistory(file, line) {
  fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
}
