#!/usr/bin/env node
// Prints one run as a compact table on the terminal: every case of every
// family (time, rate, flags) and how each family ended. What tools/bench
// shows at the end of a run.
//
//   node tools/report/summary.mjs RESULTS_DIR
//
// Figures come from skiff-compare (lib/comparer.mjs). Exit 0, 3 on
// unreadable input, 6 when skiff-compare cannot be found, 64 on bad arguments.
import { duration, rate } from './lib/format.mjs';
import { shortName } from './lib/page.mjs';
import { MissingComparer } from './lib/comparer.mjs';
import { loadRecord, loadRunDir } from './lib/runs.mjs';

const args = process.argv.slice(2);
if (args[0] === '-h' || args[0] === '--help') {
  process.stdout.write('usage: summary.mjs RESULTS_DIR\n');
  process.exit(0);
}
if (args.length !== 1) {
  process.stderr.write('usage: summary.mjs RESULTS_DIR\n');
  process.exit(64);
}

function cut(text, width) {
  return text.length <= width ? text.padEnd(width) : `${text.slice(0, width - 1)}~`;
}

try {
  const record = loadRecord(args[0]);
  const families = loadRunDir(args[0], record);
  const lines = [`${cut('case', 56)} ${'time'.padStart(10)} ${'rate'.padStart(11)}  status`];
  for (const fam of families) {
    for (const b of fam.benchmarks) {
      const name = `${fam.family.replace(/_bench$/, '')}/${shortName(b.name)}`;
      const per = Number.isFinite(b.itemsPerSecond) ? b.itemsPerSecond : b.counters.ops_per_s;
      const flags = [b.capped ? 'capped' : '', b.otherCpuPct > 25 ? 'noisy' : ''].filter(Boolean).join(',');
      const status = b.error ? (b.skipped ? 'skipped' : 'FAILED') : `ok${flags ? ` ${flags}` : ''}`;
      lines.push(`${cut(name, 56)} ${duration(b.timeNs).padStart(10)} ${rate(per).padStart(11)}  ${status}`);
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  if (record) {
    const by = {};
    for (const f of record.families) (by[f.status] ??= []).push(f.name.replace(/_bench$/, ''));
    const parts = Object.entries(by).map(([s, names]) =>
      `${names.length} ${s}${s === 'ok' ? '' : ` (${names.join(', ')})`}`);
    process.stdout.write(`\nfamilies: ${parts.join('; ')}\nverdict: ${record.verdict}\n`);
  }
} catch (e) {
  process.stderr.write(`summary: ${e.message}\n`);
  process.exit(e instanceof MissingComparer ? 6 : 3);
}
