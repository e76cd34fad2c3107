#!/usr/bin/env node
// Builds the benchmark results page: one self-contained HTML file from a run's
// folder (run.json from tools/bench, every <family>.json, memory.json when it
// belongs to the run), optionally compared with a base run's folder and with
// a history of runs charted.
//
//   tools/report/build-page.mjs [--base DIR [--compare FILE]] [--history FILE] [--out FILE] [--title TEXT] RESULTS_DIR
//
// Every figure and verdict is skiff-compare's (one reader, one judge; found
// as lib/comparer.mjs says, $SKIFF_COMPARE first): each family is run
// through it, against the base's file of the same name when --base is given.
// --compare names skiff-compare's JSON for BASE vs this run (what tools/bench
// writes for all families at once): its verdicts are shown instead.
//
// Prints the page's path. Exit 0 on success, 3 on unreadable or malformed
// input, 6 when skiff-compare cannot be found or run, 64 on bad arguments.
// Needs `npm ci --prefix tools/report` once.
import fs from 'node:fs';
import path from 'node:path';

import { MissingComparer } from './lib/comparer.mjs';
import { loadHistory } from './lib/history.mjs';
import { renderPage } from './lib/page.mjs';
import { attachBase, attachVerdicts, loadComparison, loadMemory, loadRecord, loadRunDir } from './lib/runs.mjs';

const kUsage = 'usage: build-page.mjs [--base DIR [--compare FILE]] [--history FILE] [--out FILE] [--title TEXT] RESULTS_DIR\n';

function usage(message) {
  if (!message) {
    process.stdout.write(kUsage);
    process.exit(0);
  }
  process.stderr.write(`build-page: ${message}\n${kUsage}`);
  process.exit(64);
}

function parseArgs(argv) {
  const args = { base: null, compare: null, history: null, out: null, title: 'Skiff benchmark results', results: null };
  for (let i = 0; i < argv.length; ++i) {
    let a = argv[i];
    let inline = null;
    if (a.startsWith('--') && a.includes('=')) [a, inline] = [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)];
    const value = () => inline ?? (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === '--base') args.base = value();
    else if (a === '--compare') args.compare = value();
    else if (a === '--history') args.history = value();
    else if (a === '--out') args.out = value();
    else if (a === '--title') args.title = value();
    else if (a === '-h' || a === '--help') usage();
    else if (a.startsWith('-')) usage(`unknown option ${a}`);
    else if (args.results === null) args.results = a;
    else usage(`unexpected argument ${a}`);
  }
  if (args.results === null) usage('RESULTS_DIR is required');
  if (args.compare !== null && args.base === null) usage('--compare needs --base');
  args.out ??= path.join(args.results, 'index.html');
  return args;
}

const args = parseArgs(process.argv.slice(2));
let html;
try {
  if (!fs.existsSync(args.results) || !fs.statSync(args.results).isDirectory()) {
    throw new Error(`${args.results}: not a directory`);
  }
  const record = loadRecord(args.results);
  if (args.base && (!fs.existsSync(args.base) || !fs.statSync(args.base).isDirectory())) {
    throw new Error(`${args.base}: not a directory`);
  }
  const families = loadRunDir(args.results, record, { baseDir: args.base });
  const memory = loadMemory(args.results, families, record);
  if (families.length === 0 && !memory && !record) throw new Error(`${args.results}: no benchmark JSON found`);
  let baseFamilies = null;
  if (args.base) {
    baseFamilies = families.filter((f) => f.base).map((f) => f.base);
    // No family in common: the base's own files still say what it was.
    if (baseFamilies.length === 0) baseFamilies = loadRunDir(args.base);
  }
  attachBase(families);
  if (args.base) attachVerdicts(families, args.compare ? loadComparison(args.compare) : null);
  const historyRuns = args.history ? loadHistory(args.history) : null;
  html = renderPage({ families, memory, baseFamilies, record, historyRuns, title: args.title });
} catch (e) {
  process.stderr.write(`build-page: ${e.message}\n`);
  process.exit(e instanceof MissingComparer ? 6 : 3);
}
fs.mkdirSync(path.dirname(path.resolve(args.out)), { recursive: true });
fs.writeFileSync(args.out, html);
process.stdout.write(`${path.resolve(args.out)}\n`);
