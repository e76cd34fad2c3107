// The results page shows skiff-compare's verdicts and figures, never a
// judgement of its own: a change the comparer calls noise is not coloured
// worse, however far the medians moved, and one it calls slower is. A run
// without a base is read with skiff-compare --figures, never judged against
// itself.
// Fixtures: verdicts/base and verdicts/head (store_bench, nine repetitions a
// side): BM_Slower +30 % tight, BM_Noise +8 % inside a spread of about 18 %,
// BM_Steady +2 %, BM_Faster -20 %.
//
//   SKIFF_COMPARE=build/ci/tools/compare/skiff-compare node test/report/verdicts_test.mjs
//   npm test --prefix tools/report      # the comparer of the first build found
//
// Exit 77 (skipped) when the page's npm packages or skiff-compare are
// missing, except under CI=true.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const report = path.resolve(here, '..', '..', 'tools', 'report');
const fixtures = path.join(here, 'fixtures', 'verdicts');

function missing(what) {
  process.stderr.write(`report_verdicts_test: ${what}\n`);
  process.exit(process.env.CI === 'true' ? 1 : 77);
}
if (!fs.existsSync(path.join(report, 'node_modules', 'chart.js'))) {
  missing("the page's packages are not installed (npm ci --prefix tools/report)");
}
const { compareRuns, comparerPath, runFigures } = await import(path.join(report, 'lib', 'comparer.mjs'));
try {
  comparerPath();
} catch (e) {
  missing(e.message);
}
const { attachBase, attachVerdicts, loadRunDir } = await import(path.join(report, 'lib', 'runs.mjs'));
const { duration } = await import(path.join(report, 'lib', 'format.mjs'));

const out = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-verdicts-'));
process.on('exit', () => fs.rmSync(out, { recursive: true, force: true }));

function buildPage(args, env = process.env) {
  const page = path.join(out, `page-${Math.random().toString(36).slice(2)}.html`);
  const r = spawnSync(process.execPath, [path.join(report, 'build-page.mjs'), ...args, '--out', page],
    { encoding: 'utf8', env });
  return { status: r.status, stderr: r.stderr, html: r.status === 0 ? fs.readFileSync(page, 'utf8') : '' };
}

// The "Time vs base" cell of a case: its class and verdict.
function timeVerdict(html, name) {
  const row = html.match(new RegExp(`<tr data-case="${name.replace(/[/]/g, '\\/')}">(.*?)</tr>`));
  assert.ok(row, `the page has no row for ${name}`);
  const span = row[1].match(/<span class="([^"]*)" data-verdict="([^"]*)"/);
  assert.ok(span, `${name}: its change carries no verdict`);
  return { cls: span[1], verdict: span[2], row: row[1] };
}

const base = path.join(fixtures, 'base', 'store_bench.json');
const head = path.join(fixtures, 'head', 'store_bench.json');
const comparison = compareRuns(base, head);
const byName = new Map(comparison.benchmarks.map((r) => [r.benchmark, r]));

test('the fixtures say what they are meant to', () => {
  // A plain 5 % rule on medians would colour the noisy case red.
  assert.ok(byName.get('BM_Noise/sqlite').diff_pct > 5);
  assert.equal(byName.get('BM_Noise/sqlite').verdict, 'unstable');
  assert.equal(byName.get('BM_Slower/sqlite').verdict, 'slower');
  assert.equal(byName.get('BM_Steady/sqlite').verdict, 'same');
  assert.equal(byName.get('BM_Faster/sqlite').verdict, 'faster');
});

test('the page runs the comparer and shows its verdicts', () => {
  const page = buildPage(['--base', path.join(fixtures, 'base'), path.join(fixtures, 'head')]);
  assert.equal(page.status, 0, page.stderr);
  const noise = timeVerdict(page.html, 'BM_Noise/sqlite');
  assert.equal(noise.verdict, 'unstable');
  assert.notEqual(noise.cls, 'bad', 'a change the comparer calls noise is coloured worse');
  const slower = timeVerdict(page.html, 'BM_Slower/sqlite');
  assert.equal(slower.verdict, 'slower');
  assert.equal(slower.cls, 'bad', 'a change the comparer calls slower is not coloured worse');
  assert.equal(timeVerdict(page.html, 'BM_Steady/sqlite').cls, 'same');
  assert.equal(timeVerdict(page.html, 'BM_Faster/sqlite').cls, 'good');
});

test('a given comparison is the verdict shown', () => {
  // The same runs, judged with a threshold of 50 %: nothing is slower then,
  // and the page says what that report says, not what it would judge.
  const lenient = structuredClone(comparison);
  for (const r of lenient.benchmarks) r.verdict = 'same';
  const file = path.join(out, 'lenient.json');
  fs.writeFileSync(file, JSON.stringify(lenient));
  const page = buildPage(['--base', path.join(fixtures, 'base'), '--compare', file, path.join(fixtures, 'head')]);
  assert.equal(page.status, 0, page.stderr);
  const slower = timeVerdict(page.html, 'BM_Slower/sqlite');
  assert.equal(slower.verdict, 'same');
  assert.notEqual(slower.cls, 'bad');
});

test("the figures are the comparer's medians", () => {
  const families = attachVerdicts(attachBase(loadRunDir(path.join(fixtures, 'head'), null,
    { baseDir: path.join(fixtures, 'base') })));
  assert.equal(families.length, 1);
  const [fam] = families;
  assert.equal(fam.context.skiff_run_id, 'fixture-verdicts-head');
  assert.equal(fam.base.context.skiff_run_id, 'fixture-verdicts-base');
  assert.equal(fam.kinds.statements_per_write, 'deterministic');
  const figures = new Map(comparison.runs.head.benchmarks.map((b) => [b.name, b]));
  for (const b of fam.benchmarks) {
    const row = byName.get(b.name);
    // Judged per iteration here, so the verdict's median is the page's time.
    assert.equal(b.timeNs, row.head.median_ns, b.name);
    assert.equal(b.base.timeNs, row.base.median_ns, b.name);
    assert.equal(b.timeNs, figures.get(b.name).real_time_ns, b.name);
    assert.equal(b.repetitions, 9);
    assert.equal(b.counters.statements_per_write, 1);
    assert.equal(b.verdict.verdict, row.verdict);
  }
  const page = buildPage(['--base', path.join(fixtures, 'base'), path.join(fixtures, 'head')]);
  const noise = timeVerdict(page.html, 'BM_Noise/sqlite');
  assert.ok(noise.row.includes(`<td>${duration(byName.get('BM_Noise/sqlite').head.median_ns)}</td>`));
});

// A comparer that logs how it is called, then runs the real one.
function loggingComparer(name) {
  const log = path.join(out, `${name}.log`);
  const exe = path.join(out, name);
  fs.writeFileSync(exe, `#!/bin/sh\nprintf '%s\\n' "$*" >>'${log}'\nexec '${comparerPath()}' "$@"\n`,
    { mode: 0o755 });
  return { exe, calls: () => fs.readFileSync(log, 'utf8').trim().split('\n') };
}

test('a run without a base is read for its figures, never judged against itself', () => {
  const comparer = loggingComparer('figures-only');
  const page = buildPage([path.join(fixtures, 'head')], { ...process.env, SKIFF_COMPARE: comparer.exe });
  assert.equal(page.status, 0, page.stderr);
  assert.deepEqual(comparer.calls(), [`--figures ${head}`]);
  // The figures are those a comparison with the run as HEAD carries.
  assert.deepEqual(runFigures(head).runs.head, comparison.runs.head);
  const [fam] = loadRunDir(path.join(fixtures, 'head'), null);
  assert.equal(fam.base, null);
  assert.equal(fam.comparison, null);
  const figures = new Map(comparison.runs.head.benchmarks.map((b) => [b.name, b]));
  for (const b of fam.benchmarks) assert.equal(b.timeNs, figures.get(b.name).real_time_ns, b.name);
});

test('a comparer without --figures is named as too old', () => {
  const old = path.join(out, 'old-compare');
  fs.writeFileSync(old, "#!/bin/sh\necho 'skiff-compare: The following argument was not expected: --figures' >&2\nexit 64\n",
    { mode: 0o755 });
  const page = buildPage([path.join(fixtures, 'head')], { ...process.env, SKIFF_COMPARE: old });
  assert.equal(page.status, 3);
  assert.match(page.stderr, /older than this page .*--figures.*rebuild it/);
});

test('no comparer, no page', () => {
  const page = buildPage([path.join(fixtures, 'head')], { ...process.env, SKIFF_COMPARE: path.join(out, 'none') });
  assert.equal(page.status, 6);
  assert.match(page.stderr, /SKIFF_COMPARE/);
});
