// Renders the results page: static tables written here, charts drawn in the
// browser by assets/page.js with the charting library inlined, so the one
// HTML file opens offline.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { changeText, duration, escapeHtml as h, num, rate, verdictClass } from './format.mjs';
import { kStores, withoutStore } from './runs.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

const kLatencyOrder = ['avg', 'p50', 'p90', 'p95', 'p99', 'p999', 'max'];
const kLatencyPattern = /^(avg|max|p\d+)_us$/;
// Counters the main table shows already, or that only the harness reads.
const kShownElsewhere = new Set(['ops_per_s', 'capped', 'other_cpu_pct', 'wall_s']);
const kNoisyPct = 25;

// The memory timeline's targets and the figures Horizon (a WebSocket
// document server on PostgreSQL) published for the same timeline. Both are
// for 200,000 guild documents: the RSS rows are judged only on a run of that
// size; the per-document rows hold at any size.
export const kTargetDocuments = 200000;
const kMemoryTargets = [
  { key: 'rss_pack_evict', label: 'RSS after idle, packing + eviction', unit: 'MiB', target: 120, horizon: 360, perRun: true },
  { key: 'rss_pack', label: 'RSS after idle, packing only', unit: 'MiB', target: 250, horizon: 417, perRun: true },
  { key: 'rss_evict', label: 'RSS after idle, eviction only', unit: 'MiB', target: null, horizon: 60, perRun: true },
  { key: 'rss_none', label: 'RSS after idle, no policy', unit: 'MiB', target: null, horizon: 2703, perRun: true },
  { key: 'hot', label: 'Hot form as a parsed tree (a document after add or merge, or read from the store; one a set wrote stays text), bytes per document', unit: 'B', target: 3000, horizon: 11200 },
  { key: 'packed', label: 'Packed form, bytes per document', unit: 'B', target: 600, horizon: 1000 },
  { key: 'packed_heap', label: 'Packed form on the heap (with std::string and chunk header)', unit: 'B', target: null, horizon: null },
  { key: 'unpack_small', label: 'Unpack a ~1 KB document', unit: 'µs', target: 4, horizon: 4 },
  { key: 'unpack_large', label: 'Unpack a ~870 KB document', unit: 'ms', target: null, horizon: 7 },
];

export const kPolicyNames = {
  none: 'no policy',
  evict: 'eviction only',
  pack: 'packing only',
  pack_evict: 'packing + eviction',
};

// Without "BM_" and the segments Google Benchmark adds for its settings.
export function shortName(name) {
  return name.replace(/^BM_/, '').split('/')
    .filter((s, i) => i === 0 || !/^(real_time|manual_time|iterations:\d+|repeats:\d+)$/.test(s))
    .join('/');
}

function throughputOf(row) {
  if (!row) return null;
  if (Number.isFinite(row.itemsPerSecond)) return row.itemsPerSecond;
  const key = Object.keys(row.counters ?? {}).find((k) => /_per_s$/.test(k));
  return key ? row.counters[key] : null;
}

function latencyOf(row) {
  const out = {};
  for (const [k, v] of Object.entries(row?.counters ?? {})) {
    const m = k.match(kLatencyPattern);
    if (m && Number.isFinite(v)) out[m[1]] = v;
  }
  return out;
}

function latencyColumns(rows) {
  const seen = new Set();
  for (const r of rows) for (const k of Object.keys(latencyOf(r))) seen.add(k);
  return [...seen].sort((a, b) => {
    const ia = kLatencyOrder.indexOf(a);
    const ib = kLatencyOrder.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
}

// Counters a reader can only see here: everything but latency, throughput
// and the harness's own bookkeeping; deterministic ones first.
function counterColumns(fam) {
  const seen = new Set();
  for (const r of fam.benchmarks) {
    for (const k of Object.keys(r.counters)) {
      if (!kLatencyPattern.test(k) && !kShownElsewhere.has(k) && !/_per_s$/.test(k)) seen.add(k);
    }
  }
  const det = (k) => fam.kinds[k] === 'deterministic';
  return [...seen].sort((a, b) => Number(det(b)) - Number(det(a)) || a.localeCompare(b));
}

function flagsOf(b) {
  const flags = [];
  if (b.capped) {
    flags.push(`<span class="flag capped" title="the scenario's wall-time budget (--cap) ended it before its op count in ${b.capped} of ${b.repetitions} runs; its time is per operation, so it still compares">capped</span>`);
  }
  if (b.otherCpuPct > kNoisyPct) {
    flags.push(`<span class="flag noisy" title="other processes used ${num(b.otherCpuPct)} % of a CPU while it ran">noisy</span>`);
  }
  return flags.join(' ');
}

function statusCell(b) {
  if (!b.error) return '<span class="ok">ok</span>';
  return `<span class="${b.skipped ? 'skip' : 'bad'}" title="${h(b.error)}">${b.skipped ? 'skipped' : 'failed'}</span>`;
}

// A verdict with its change and the smallest change the row could see.
function verdictSpan(row, label) {
  const diff = Number.isFinite(row.diff_pct) ? `${row.diff_pct >= 0 ? '+' : '−'}${Math.abs(row.diff_pct).toFixed(1)} %` : '–';
  const sees = Number.isFinite(row.detectable_pct) ? `; sees ≥ ${row.detectable_pct.toFixed(1)} %` : '';
  const verdict = row.verdict.replace(/_/g, ' ');
  return `<span class="${verdictClass(row.verdict)}" data-verdict="${h(row.verdict)}" title="skiff-compare: ${h(verdict)}${h(sees)}${row.note ? ` (${h(row.note)})` : ''}">${label ? `${h(label)} ` : ''}${diff} ${h(verdict)}</span>`;
}

// The time against the base: the comparer's verdict when the run was
// compared, else the change alone, judged by nobody.
function timeVerdictCell(b) {
  if (b.verdict) return `<td>${verdictSpan(b.verdict, '')}</td>`;
  return `<td class="unjudged" title="no comparer verdict for this case">${changeText(b.timeNs, b.base?.timeNs)}</td>`;
}

function judgedCell(b) {
  if (!b.judged?.length) return '<td>–</td>';
  const short = { server_cpu_us_per_op: 'CPU/op', server_rss_mib: 'RSS' };
  return `<td>${b.judged.map((r) => verdictSpan(r, short[r.counter] ?? r.counter)).join('<br>')}</td>`;
}

// "this comparison can see a change of X % or more": per measure, the median
// of the rows' smallest detectable changes in this family.
function detectableLine(fam) {
  const by = new Map();
  const add = (measure, row) => {
    if (!Number.isFinite(row?.detectable_pct)) return;
    if (!by.has(measure)) by.set(measure, []);
    by.get(measure).push(row.detectable_pct);
  };
  for (const b of fam.benchmarks) {
    add('time', b.verdict);
    for (const r of b.judged ?? []) add(r.counter, r);
  }
  if (by.size === 0) return '';
  const parts = [...by].map(([measure, values]) => {
    values.sort((x, y) => x - y);
    const mid = values.length >> 1;
    const median = values.length % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
    return `${h(measure)} ${median.toFixed(1)} % (at most ${values[values.length - 1].toFixed(1)} %)`;
  });
  return `<p class="note detectable">This comparison can see a change of: ${parts.join('; ')}, or more (median over the family's cases; skiff-compare's "Sees").</p>`;
}

function familyTable(fam, hasBase) {
  const lat = latencyColumns(fam.benchmarks);
  const head = ['Benchmark', 'Time', 'Throughput', ...lat.map((k) => `${k} µs`)];
  if (hasBase) head.push('Time vs base', 'Judged vs base');
  head.push('Flags', 'Status');
  const body = fam.benchmarks.map((b) => {
    const l = latencyOf(b);
    const cells = [
      `<td class="name">${h(shortName(b.name))}${b.label ? ` <span class="tag">${h(b.label)}</span>` : ''}</td>`,
      `<td>${duration(b.timeNs)}</td>`,
      `<td>${rate(throughputOf(b))}</td>`,
      ...lat.map((k) => `<td>${num(l[k])}</td>`),
    ];
    if (hasBase) cells.push(timeVerdictCell(b), judgedCell(b));
    cells.push(`<td>${flagsOf(b)}</td>`, `<td>${statusCell(b)}</td>`);
    return `<tr data-case="${h(b.name)}">${cells.join('')}</tr>`;
  });
  return `<table class="results"><thead><tr>${head.map((x) => `<th>${h(x)}</th>`).join('')}</tr></thead>
<tbody>${body.join('\n')}</tbody></table>`;
}

function countersTable(fam) {
  const columns = counterColumns(fam);
  if (columns.length === 0) return '';
  const rows = fam.benchmarks.filter((b) => columns.some((k) => Number.isFinite(b.counters[k])));
  if (rows.length === 0) return '';
  const th = columns.map((k) => {
    const det = fam.kinds[k] === 'deterministic';
    return `<th class="${det ? 'det' : ''}" title="${det ? 'deterministic: counted, identical on every run' : 'info: varies, shown only'}">${h(k)}${det ? ' ≡' : ''}</th>`;
  });
  const body = rows.map((b) => `<tr><td class="name">${h(shortName(b.name))}</td>${columns
    .map((k) => `<td>${num(b.counters[k], 6)}</td>`).join('')}</tr>`);
  return `<h3>Counters</h3>
<p class="note">≡ marks deterministic counters: counted, not timed, identical on every run and machine; a change fails a comparison.</p>
<div class="scroll"><table class="results counters"><thead><tr><th>Benchmark</th>${th.join('')}</tr></thead>
<tbody>${body.join('\n')}</tbody></table></div>`;
}

// The same case on each store of the run, side by side.
function storesTable(fam) {
  const stores = kStores.filter((s) => fam.benchmarks.some((b) => b.store === s));
  if (stores.length < 2) return '';
  const byCase = new Map();
  for (const b of fam.benchmarks) {
    if (!b.store) continue;
    const key = withoutStore(b.name);
    if (!byCase.has(key)) byCase.set(key, {});
    byCase.get(key)[b.store] = b;
  }
  const body = [...byCase].map(([key, by]) => {
    const times = stores.map((s) => by[s]?.timeNs).filter(Number.isFinite);
    const best = Math.min(...times);
    const cells = stores.map((s) => {
      const t = by[s]?.timeNs;
      if (!Number.isFinite(t)) return `<td>${by[s]?.error ? statusCell(by[s]) : '–'}</td>`;
      const x = t / best;
      return `<td>${duration(t)} <span class="tag">${x < 1.005 ? 'fastest' : `×${num(x)}`}</span></td>`;
    });
    return `<tr><td class="name">${h(shortName(key))}</td>${cells.join('')}</tr>`;
  });
  return `<h3>Stores side by side</h3>
<table class="results stores"><thead><tr><th>Case</th>${stores.map((s) => `<th>${h(s)}</th>`).join('')}</tr></thead>
<tbody>${body.join('\n')}</tbody></table>`;
}

function memoryFigures(memory) {
  const t = memory.timelines ?? {};
  return {
    rss_pack_evict: t.pack_evict?.rss_after_idle_mib,
    rss_pack: t.pack?.rss_after_idle_mib,
    rss_evict: t.evict?.rss_after_idle_mib,
    rss_none: t.none?.rss_after_idle_mib,
    hot: memory.bytes_per_document?.hot,
    packed: memory.bytes_per_document?.packed_payload,
    packed_heap: memory.bytes_per_document?.packed,
    unpack_small: memory.unpack?.small?.us,
    unpack_large: memory.unpack?.large ? memory.unpack.large.us / 1000 : undefined,
  };
}

function memorySection(memory) {
  if (memory.stale) {
    return `<section id="memory"><h2>Memory tiers</h2><p class="bad" data-memory="stale">${h(memory.stale)}</p></section>`;
  }
  const policies = Object.keys(kPolicyNames).filter((p) => memory.timelines?.[p]);
  const any = memory.timelines?.[policies[0]] ?? {};
  const documents = any.documents;
  const sameSize = documents === kTargetDocuments;
  const figures = memoryFigures(memory);
  const rows = kMemoryTargets.map((m) => {
    const v = figures[m.key];
    const fmt = (x) => (x === null || x === undefined ? '–' : `${num(x, 4)} ${m.unit}`);
    let verdict = '';
    const comparable = !m.perRun || sameSize;
    if (Number.isFinite(v) && m.target !== null) {
      verdict = comparable
        ? (v <= m.target ? '<span class="ok">met</span>' : '<span class="bad">missed</span>')
        : `<span class="skip">not judged: ${num(documents)} documents</span>`;
    }
    const refCls = comparable ? '' : ' class="skip"';
    return `<tr><td class="name">${h(m.label)}</td><td>${fmt(Number.isFinite(v) ? v : null)}</td>
<td${refCls}>${m.target === null ? '–' : `≤ ${fmt(m.target)}`}</td><td${refCls}>${fmt(m.horizon)}</td><td>${verdict}</td></tr>`;
  });
  const longest = (field) => Math.max(0, ...policies.map((p) => memory.timelines[p][field] ?? 0));
  const jsonBytes = memory.bytes_per_document?.json ?? memory.unpack?.small?.json_bytes;
  const detail = policies.map((p) => {
    const t = memory.timelines[p];
    const tiers = t.tiers_after_idle ?? {};
    return `<tr><td class="name">${h(kPolicyNames[p])}</td><td>${num(t.rss_empty_mib, 4)}</td>
<td>${num(t.rss_after_load_mib, 4)}</td><td><b>${num(t.rss_after_idle_mib, 4)}</b></td><td>${num(t.rss_peak_mib, 4)}</td>
<td>${num(tiers.hot)}</td><td>${num(tiers.packed)}</td><td>${num(tiers.evicted)}</td>
<td>${rate(t.documents / t.load_seconds)}</td><td>${num(t.reads_compared)}</td>
<td class="${t.mismatches === 0 && t.errors === 0 ? 'ok' : 'bad'}">${num(t.mismatches)} / ${num(t.errors)}</td></tr>`;
  });
  const charts = policies
    .map((p) => `<figure class="chart small"><figcaption>${h(kPolicyNames[p])}</figcaption>
<div class="box"><canvas data-chart="rss" data-policy="${h(p)}"></canvas></div></figure>`)
    .join('\n');
  const scale = sameSize
    ? `This run loaded ${num(documents)} documents, the size the targets and Horizon's figures are for, so every row is judged.`
    : `This run loaded ${num(documents)} documents; the targets and Horizon's figures are for ${num(kTargetDocuments)}, so the RSS rows are shown but not judged (RSS does not scale in proportion: the empty server's floor stays). The per-document rows hold at any size and are judged. <code>--profile=full</code> runs ${num(kTargetDocuments)}.`;
  return `<section id="memory"><h2>Memory tiers</h2>
<p class="lead">${num(documents)} guild documents${jsonBytes ? ` of about ${num(jsonBytes)} bytes of JSON` : ''},
loaded into a real <code>skiffd</code> (SQLite store), then idle for ${num(any.idle_s)} s
(packing after ${num(longest('pack_after_s'))} s, eviction after ${num(longest('evict_after_s'))} s where the policy has them),
2,000 random reads, 10 % rewritten, a restart and 2,000 reads again; every read is compared with the generated document.
RSS is the server process's VmRSS, sampled every 250 ms.</p>
<p class="note" data-memory="${sameSize ? 'judged' : 'scaled'}">${scale} Horizon is a WebSocket document server on PostgreSQL whose published memory timeline these runs follow.</p>
<table class="results"><thead><tr><th>Measure</th><th>Skiff</th><th>Target (${num(kTargetDocuments)} docs)</th><th>Horizon (published, ${num(kTargetDocuments)} docs)</th><th></th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>
<figure class="chart wide"><figcaption>Server RSS over the timeline, all policies</figcaption>
<div class="box"><canvas data-chart="rss-all"></canvas></div></figure>
<div class="grid">${charts}</div>
<table class="results"><thead><tr><th>Policy</th><th>RSS empty MiB</th><th>after load</th><th>after idle</th><th>peak</th>
<th>hot docs</th><th>packed docs</th><th>evicted</th><th>load rate</th><th>reads compared</th><th>mismatches / errors</th></tr></thead>
<tbody>${detail.join('\n')}</tbody></table></section>`;
}

function chartHeight(rows, perRow) {
  return 60 + perRow * Math.max(1, rows);
}

// The sustainable-rate scenarios: the highest open-loop rate that held the
// p99 bound, beside what a closed loop reached.
function sustainableTable(fam) {
  const rows = fam.benchmarks.filter((b) => Number.isFinite(b.counters?.sustainable_ops_per_s));
  if (rows.length === 0) return '';
  // Runs older than the confirmation step carry no search_ops_per_s.
  const found = (b) => (Number.isFinite(b.counters.search_ops_per_s) ? rate(b.counters.search_ops_per_s) : '-');
  const body = rows.map((b) => `<tr><td class="name">${h(shortName(b.name))}</td><td>${rate(b.counters.sustainable_ops_per_s)}</td>\
<td>${found(b)}</td><td>${rate(b.counters.closed_loop_ops_per_s)}</td><td>${num(b.counters.p99_bound_ms)} ms</td><td>${num(latencyOf(b).p99)} µs</td></tr>`);
  return `<h3>Sustainable rate</h3>
<p class="note">The highest rate at which requests sent on a fixed schedule (latency counted from when each was due) kept their p99 under the bound with no error: found by a bounded search of short probes, then run again, stepping down to 3/4 while that run does not hold; beside it, the search's own answer and the rate of a closed loop, which never waits for a schedule.</p>
<table class="results sustainable"><thead><tr><th>Case</th><th>Sustainable</th><th>Search found</th><th>Closed loop</th><th>p99 bound</th><th>p99 at the sustainable rate</th></tr></thead>
<tbody>${body.join('\n')}</tbody></table>`;
}

function familySection(fam, hasBase, history) {
  const charts = [];
  const n = fam.benchmarks.length;
  if (fam.benchmarks.some((b) => Number.isFinite(throughputOf(b)))) {
    charts.push(`<figure class="chart"><figcaption>Throughput (operations per second${hasBase ? ', head and base' : ''})</figcaption>
<div class="box" style="height:${chartHeight(n, 26 * (hasBase ? 1.6 : 1))}px"><canvas data-chart="throughput" data-family="${h(fam.family)}"></canvas></div></figure>`);
  }
  if (latencyColumns(fam.benchmarks).length > 0) {
    charts.push(`<figure class="chart"><figcaption>Latency percentiles (µs, log scale)</figcaption>
<div class="box" style="height:${chartHeight(n, 30)}px"><canvas data-chart="latency" data-family="${h(fam.family)}"></canvas></div></figure>`);
  }
  if (history && history.runs.length > 0 && history.series[fam.family]) {
    charts.push(`<figure class="chart"><figcaption>Time over the last ${history.runs.length} runs (log scale)</figcaption>
<div class="box" style="height:340px"><canvas data-chart="history" data-family="${h(fam.family)}"></canvas></div></figure>`);
  }
  return `<section id="family-${h(fam.family)}"><h2>${h(fam.family)}</h2>
${familyTable(fam, hasBase)}
${hasBase ? detectableLine(fam) : ''}
${storesTable(fam)}
${sustainableTable(fam)}
${countersTable(fam)}
<div class="charts">${charts.join('\n')}</div></section>`;
}

function contextLine(context, label) {
  if (!context) return '';
  const machine = context.skiff_machine;
  const parts = [
    ['run', context.skiff_run_id], ['revision', context.skiff_git_revision],
    ['build', context.skiff_build_type], ['profile', context.skiff_profile],
    ['stores', context.skiff_stores], ['PostgreSQL', context.skiff_postgres_version],
    ['machine', context.skiff_label || context.host_name], ['CPUs', context.num_cpus],
    ['others used', machine && Number.isFinite(machine.other_cpu_pct) ? `${num(machine.other_cpu_pct)} % of a CPU` : undefined],
    ['date', context.date],
  ].filter(([, v]) => v !== undefined && v !== '' && v !== null);
  return `<p class="meta"><b>${h(label)}</b> ${parts.map(([k, v]) => `${h(k)} <code>${h(v)}</code>`).join(' · ')}</p>`;
}

// The verdict line: the run record's verdict, never a guess from the files.
function verdictLine(record, families) {
  const rows = families.flatMap((f) => f.benchmarks);
  const failedCases = rows.filter((b) => b.error && !b.skipped).length;
  const cases = `${rows.length} cases in ${families.length} families with results`;
  if (!record) {
    return `<p class="verdict unknown" data-verdict="unknown">No run record (run.json) here: this folder was not written by one tools/bench run, so nothing says which families ran or how they ended; a family that wrote no JSON is missing. ${failedCases ? `${failedCases} case(s) failed` : 'No case in these files failed'} · ${cases}.</p>`;
  }
  const by = (s) => record.families.filter((f) => f.status === s).map((f) => f.name);
  const failed = by('failed');
  const notSelected = by('not selected');
  const notRun = record.families.filter((f) => f.status.startsWith('not run')).map((f) => f.name);
  const others = [
    notSelected.length ? `${notSelected.length} not selected by the filter` : '',
    notRun.length ? `${notRun.length} not run` : '',
  ].filter(Boolean).join(', ');
  if (record.verdict === 'ok' && record.exit_code === 0) {
    return `<p class="verdict ok" data-verdict="ok">Every family that ran passed its checks (exit 0): ${by('ok').length} families${others ? `; ${others}` : ''} · ${cases}.</p>`;
  }
  const what = failed.length ? `${failed.length} of ${record.families.length} families failed: ${failed.join(', ')}` : `the run ended ${record.verdict}`;
  return `<p class="verdict bad" data-verdict="${h(record.verdict)}">Verdict ${h(record.verdict)} (exit ${h(record.exit_code)}): ${h(what)}${others ? `; ${others}` : ''} · ${cases}.</p>`;
}

function recordTable(record, families) {
  if (!record) return '';
  const cases = new Map(families.map((f) => [f.family, f.benchmarks.length]));
  const rows = record.families.map((f) => {
    const cls = f.status === 'ok' ? 'ok' : f.status === 'failed' ? 'bad' : 'skip';
    const name = f.json ? `<a href="#family-${h(f.name)}">${h(f.name)}</a>` : h(f.name);
    return `<tr data-family="${h(f.name)}"><td class="name">${name}</td><td class="${cls}">${h(f.status)}</td>
<td>${f.exit_code ?? '–'}</td><td>${cases.get(f.name) ?? '–'}</td><td>${f.seconds ? `${f.seconds} s` : '–'}</td>
<td>${f.log ? `<code>${h(f.log)}</code>` : '–'}</td></tr>`;
  });
  return `<section id="families"><h2>Families</h2>
<table class="results record"><thead><tr><th>Family</th><th>Status</th><th>Exit</th><th>Cases</th><th>Time</th><th>Log</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table></section>`;
}

// The history as the charts need it: per family, per case, one time per run.
function historySeries(runs, families) {
  const series = {};
  for (const fam of families) {
    const names = fam.benchmarks.filter((b) => !b.error).map((b) => b.name);
    const lines = names.map((name) => ({
      name: shortName(name),
      values: runs.map((r) => r.cases[`${fam.family}/${name}`]?.time_ns ?? null),
    })).filter((l) => l.values.some(Number.isFinite));
    if (lines.length) series[fam.family] = lines;
  }
  return { runs: runs.map((r) => r.run_id ?? r.date ?? '?'), series };
}

// Data the browser needs for the charts, nothing more.
function chartData(families, memory, hasBase, history) {
  return {
    hasBase,
    families: families.map((f) => ({
      family: f.family,
      rows: f.benchmarks.map((b) => ({
        name: shortName(b.name),
        throughput: throughputOf(b),
        baseThroughput: hasBase ? throughputOf(b.base) : null,
        latency: latencyOf(b),
      })),
      latencyKeys: latencyColumns(f.benchmarks),
    })),
    memory: memory && !memory.stale ? { timelines: memory.timelines ?? {}, policies: kPolicyNames } : null,
    history,
  };
}

// Text that is safe inside <script>: no "</script", no "<!--".
function scriptSafe(text) {
  return text.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
}

export function renderPage({ families, memory, baseFamilies, record, historyRuns, title }) {
  const hasBase = Boolean(baseFamilies);
  // The package exports no path to its UMD build, so it is found beside the
  // main entry point.
  const dist = path.dirname(require.resolve('chart.js'));
  const library = fs.readFileSync(path.join(dist, 'chart.umd.min.js'), 'utf8');
  const libraryVersion = JSON.parse(fs.readFileSync(path.join(dist, '..', 'package.json'), 'utf8')).version;
  const script = fs.readFileSync(path.join(here, '..', 'assets', 'page.js'), 'utf8');
  const css = fs.readFileSync(path.join(here, '..', 'assets', 'page.css'), 'utf8');
  const history = historyRuns ? historySeries(historyRuns, families) : null;
  const data = JSON.stringify(chartData(families, memory, hasBase, history)).replace(/</g, '\\u003c');
  const nav = [record ? '<a href="#families">families</a>' : '', memory ? '<a href="#memory">memory</a>' : '',
    ...families.map((f) => `<a href="#family-${h(f.family)}">${h(f.family)}</a>`)]
    .filter(Boolean).join(' ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${h(title)}</title>
<style>${css}</style></head>
<body data-charts-expected="0" data-charts-rendered="0" data-labels-cut="0">
<header><h1>${h(title)}</h1>
${contextLine(families[0]?.context, 'run')}
${hasBase ? contextLine(baseFamilies[0]?.context, 'base') : ''}
${verdictLine(record, families)}
<nav>${nav}</nav></header>
<main>
${recordTable(record, families)}
${memory ? memorySection(memory) : ''}
${families.map((f) => familySection(f, hasBase, history)).join('\n')}
</main>
<footer>Time is per operation for the end-to-end cases (the scenario's wall time is the counter wall_s) and per iteration elsewhere; medians over repetitions, wall-clock.
Charts drawn with Chart.js ${h(libraryVersion)}, inlined in this file.</footer>
<script type="application/json" id="skiff-data">${data}</script>
<script>${scriptSafe(library)}</script>
<script>${scriptSafe(script)}</script>
</body></html>
`;
}
