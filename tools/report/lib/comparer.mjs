// Runs skiff-compare (tools/compare), the one reader of Google Benchmark
// JSON: its JSON report holds each run's figures (medians over repetitions)
// and the verdicts of one run against another, so the page, the terminal
// table and the history show the numbers the verdicts rest on. A run with
// no base gets the same figures from --figures, with nothing judged.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

// Where a build leaves the comparer: tools/bench builds the release preset.
const kBuilds = ['release', 'dev', 'ci', 'asan', 'tsan'];

// A tool that is missing is not bad input: tools/bench and build-page say
// so with their own exit code.
export class MissingComparer extends Error {}

// $SKIFF_COMPARE, else the first build of this checkout that has one, else
// skiff-compare on the PATH.
export function comparerPath() {
  if (process.env.SKIFF_COMPARE) {
    if (!fs.existsSync(process.env.SKIFF_COMPARE)) {
      throw new MissingComparer(`SKIFF_COMPARE names ${process.env.SKIFF_COMPARE}, which does not exist`);
    }
    return process.env.SKIFF_COMPARE;
  }
  for (const build of kBuilds) {
    const exe = path.join(root, 'build', build, 'tools', 'compare', 'skiff-compare');
    if (fs.existsSync(exe)) return exe;
  }
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const exe = path.join(dir, 'skiff-compare');
    if (fs.existsSync(exe)) return exe;
  }
  throw new MissingComparer('skiff-compare is not built: cmake --build --preset release --target skiff-compare ' +
    '(or name it in SKIFF_COMPARE)');
}

// Runs skiff-compare with `args` and parses the JSON it prints. Exit codes
// in `verdicts` are results of the run, not failures of the tool; 3 (bad
// input) and anything else are. The page passes only arguments it knows,
// so a usage error (64) means a comparer built before them.
function runComparer(args, file, verdicts) {
  const exe = comparerPath();
  const r = spawnSync(exe, args, { encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.error) throw new MissingComparer(`${exe}: ${r.error.message}`);
  if (!verdicts.includes(r.status)) {
    const why = (r.stderr ?? '').trim().replace(/^skiff-compare: /, '') || `exit ${r.status ?? r.signal}`;
    if (r.status === 64) throw new Error(`${exe} is older than this page (${why.split('\n')[0]}): rebuild it`);
    throw new Error(why);
  }
  try {
    return JSON.parse(r.stdout);
  } catch (e) {
    throw new Error(`${exe} printed no JSON report for ${file} (${e.message})`);
  }
}

// skiff-compare --format json BASE HEAD, parsed. Its exit codes 1, 2 and 4
// are verdicts (a counter changed, a case errored, slower), not failures of
// the comparison.
export function compareRuns(baseFile, headFile) {
  const report = runComparer(['--format', 'json', baseFile, headFile], headFile, [0, 1, 2, 4]);
  if (report?.format !== 'skiff-compare/1' || !report.runs?.head) {
    throw new Error(`${comparerPath()} is older than this page (its JSON report has no "runs"): rebuild it`);
  }
  return report;
}

// skiff-compare --figures RUN, parsed: one run's figures with nothing judged,
// shaped like a comparison's (`runs.head`), for a run without a base.
export function runFigures(file) {
  const report = runComparer(['--figures', file], file, [0]);
  if (report?.format !== 'skiff-compare-figures/1' || !report.runs?.head) {
    throw new Error(`${comparerPath()} printed no figures for ${file}: rebuild it`);
  }
  return report;
}
