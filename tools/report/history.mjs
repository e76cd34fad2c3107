#!/usr/bin/env node
// Appends one run to a history file (JSON lines; lib/history.mjs):
//
//   node tools/report/history.mjs append HISTORY.jsonl RESULTS_DIR
//
// Figures come from skiff-compare (lib/comparer.mjs). Exit 0 on success, 3
// on unreadable input, 6 when skiff-compare cannot be found, 64 on bad arguments.
import { appendHistory, historyLine, loadHistory } from './lib/history.mjs';
import { MissingComparer } from './lib/comparer.mjs';
import { loadRecord, loadRunDir } from './lib/runs.mjs';

const [verb, file, dir, ...rest] = process.argv.slice(2);
if (verb === '-h' || verb === '--help') {
  process.stdout.write('usage: history.mjs append HISTORY.jsonl RESULTS_DIR\n');
  process.exit(0);
}
if (verb !== 'append' || !file || !dir || rest.length > 0) {
  process.stderr.write('usage: history.mjs append HISTORY.jsonl RESULTS_DIR\n');
  process.exit(64);
}
try {
  loadHistory(file);  // refuse to append to a file that is not a history
  const record = loadRecord(dir);
  const line = historyLine(record, loadRunDir(dir, record));
  appendHistory(file, line);
  process.stdout.write(`${file}: ${Object.keys(line.cases).length} cases of run ${line.run_id}\n`);
} catch (e) {
  process.stderr.write(`history: ${e.message}\n`);
  process.exit(e instanceof MissingComparer ? 6 : 3);
}
