#!/usr/bin/env node
// Builds the benchmark results page: one self-contained HTML file from a run's
// JSON (every <family>.json in a directory, plus memory.json when present),
// optionally compared with a base run's directory.
//
//   tools/report/build-page.mjs [--base DIR] [--out FILE] [--title TEXT] RESULTS_DIR
//
// Prints the page's path. Exit 0 on success, 2 on bad arguments, 3 on
// unreadable or malformed input. Needs `npm ci --prefix tools/report` once.
import fs from 'node:fs';
import path from 'node:path';

import { renderPage } from './lib/page.mjs';
import { attachBase, loadMemory, loadRunDir } from './lib/runs.mjs';

function usage(message) {
  if (message) process.stderr.write(`build-page: ${message}\n`);
  process.stderr.write('usage: build-page.mjs [--base DIR] [--out FILE] [--title TEXT] RESULTS_DIR\n');
  process.exit(2);
}

function parseArgs(argv) {
  const args = { base: null, out: null, title: 'Skiff benchmark results', results: null };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    if (a === '--base') args.base = value();
    else if (a === '--out') args.out = value();
    else if (a === '--title') args.title = value();
    else if (a === '-h' || a === '--help') usage();
    else if (a.startsWith('-')) usage(`unknown option ${a}`);
    else if (args.results === null) args.results = a;
    else usage(`unexpected argument ${a}`);
  }
  if (args.results === null) usage('RESULTS_DIR is required');
  args.out ??= path.join(args.results, 'index.html');
  return args;
}

const args = parseArgs(process.argv.slice(2));
let html;
try {
  const families = loadRunDir(args.results);
  const memory = loadMemory(args.results);
  if (families.length === 0 && !memory) throw new Error(`${args.results}: no benchmark JSON found`);
  const baseFamilies = args.base ? loadRunDir(args.base) : null;
  attachBase(families, baseFamilies);
  html = renderPage({ families, memory, baseFamilies, title: args.title });
} catch (e) {
  process.stderr.write(`build-page: ${e.message}\n`);
  process.exit(3);
}
fs.mkdirSync(path.dirname(path.resolve(args.out)), { recursive: true });
fs.writeFileSync(args.out, html);
process.stdout.write(`${path.resolve(args.out)}\n`);
