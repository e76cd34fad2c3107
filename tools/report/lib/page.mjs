// Renders the results page: static tables written here, charts drawn in the
// browser by assets/page.js with the charting library inlined, so the one
// HTML file opens offline.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { change, duration, escapeHtml as h, num, rate } from './format.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

const kLatencyOrder = ['avg', 'p50', 'p90', 'p95', 'p99', 'p999', 'max'];
const kLatencyPattern = /^(avg|max|p\d+)_us$/;

// What the memory timeline is held to: Skiff's targets and the figures
// Horizon published for the same timeline (200,000 guild documents).
const kMemoryTargets = [
  { key: 'rss_pack_evict', label: 'RSS after idle, packing + eviction', unit: 'MiB', target: 120, horizon: 360 },
  { key: 'rss_pack', label: 'RSS after idle, packing only', unit: 'MiB', target: 250, horizon: 417 },
  { key: 'rss_evict', label: 'RSS after idle, eviction only', unit: 'MiB', target: null, horizon: 60 },
  { key: 'rss_none', label: 'RSS after idle, no policy', unit: 'MiB', target: null, horizon: 2703 },
  { key: 'hot', label: 'Hot form, bytes per document', unit: 'B', target: 3000, horizon: 11200 },
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

export function shortName(name) {
  return name.replace(/^BM_/, '').replace(/\/(real|manual)_time$/, '');
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

function familyTable(fam, hasBase) {
  const lat = latencyColumns(fam.benchmarks);
  const head = ['Benchmark', 'Time/op', 'Throughput', ...lat.map((k) => `${k} µs`)];
  if (hasBase) head.push('Time vs base', 'Throughput vs base');
  head.push('Status');
  const body = fam.benchmarks.map((b) => {
    const l = latencyOf(b);
    const cells = [
      `<td class="name">${h(shortName(b.name))}${b.label ? ` <span class="tag">${h(b.label)}</span>` : ''}</td>`,
      `<td>${duration(b.timeNs)}</td>`,
      `<td>${rate(throughputOf(b))}</td>`,
      ...lat.map((k) => `<td>${num(l[k])}</td>`),
    ];
    if (hasBase) {
      const t = change(b.timeNs, b.base?.timeNs, false);
      const r = change(throughputOf(b), throughputOf(b.base), true);
      cells.push(`<td class="${t.cls}">${t.text}</td>`, `<td class="${r.cls}">${r.text}</td>`);
    }
    const status = b.error
      ? `<span class="${b.skipped ? 'skip' : 'bad'}" title="${h(b.error)}">${b.skipped ? 'skipped' : 'failed'}</span>`
      : '<span class="ok">ok</span>';
    cells.push(`<td>${status}</td>`);
    return `<tr>${cells.join('')}</tr>`;
  });
  return `<table class="results"><thead><tr>${head.map((x) => `<th>${h(x)}</th>`).join('')}</tr></thead>
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
  const figures = memoryFigures(memory);
  const rows = kMemoryTargets.map((m) => {
    const v = figures[m.key];
    let verdict = '';
    if (Number.isFinite(v) && m.target !== null) {
      verdict = v <= m.target ? '<span class="ok">met</span>' : '<span class="bad">missed</span>';
    }
    const fmt = (x) => (x === null || x === undefined ? '–' : `${num(x, 4)} ${m.unit}`);
    return `<tr><td class="name">${h(m.label)}</td><td>${fmt(Number.isFinite(v) ? v : null)}</td>
<td>${m.target === null ? '–' : `≤ ${fmt(m.target)}`}</td><td>${fmt(m.horizon)}</td><td>${verdict}</td></tr>`;
  });
  const policies = Object.keys(kPolicyNames).filter((p) => memory.timelines?.[p]);
  const any = memory.timelines?.[policies[0]] ?? {};
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
  return `<section id="memory"><h2>Memory tiers</h2>
<p class="lead">${num(any.documents)} guild documents${jsonBytes ? ` of about ${num(jsonBytes)} bytes of JSON` : ''},
loaded into a real <code>skiffd</code> (SQLite store), then idle for ${num(any.idle_s)} s
(packing after ${num(longest('pack_after_s'))} s, eviction after ${num(longest('evict_after_s'))} s where the policy has them),
2,000 random reads, 10 % rewritten, a restart and 2,000 reads again; every read is compared with the generated document.
RSS is the server process's VmRSS, sampled every 250 ms.</p>
<table class="results"><thead><tr><th>Measure</th><th>Skiff</th><th>Target</th><th>Horizon (published)</th><th></th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>
<figure class="chart wide"><figcaption>Server RSS over the timeline, all policies</figcaption>
<div class="box"><canvas data-chart="rss-all"></canvas></div></figure>
<div class="grid">${charts}</div>
<table class="results"><thead><tr><th>Policy</th><th>RSS empty MiB</th><th>after load</th><th>after idle</th><th>peak</th>
<th>hot docs</th><th>packed docs</th><th>evicted</th><th>load rate</th><th>reads compared</th><th>mismatches / errors</th></tr></thead>
<tbody>${detail.join('\n')}</tbody></table></section>`;
}

function familySection(fam, hasBase) {
  const charts = [];
  if (fam.benchmarks.some((b) => Number.isFinite(throughputOf(b)))) {
    charts.push(`<figure class="chart"><figcaption>Throughput (operations per second${hasBase ? ', head and base' : ''})</figcaption>
<div class="box" style="height:${60 + 26 * fam.benchmarks.length * (hasBase ? 1.6 : 1)}px"><canvas data-chart="throughput" data-family="${h(fam.family)}"></canvas></div></figure>`);
  }
  if (latencyColumns(fam.benchmarks).length > 0) {
    charts.push(`<figure class="chart"><figcaption>Latency percentiles (µs, log scale)</figcaption>
<div class="box" style="height:${80 + 30 * fam.benchmarks.length}px"><canvas data-chart="latency" data-family="${h(fam.family)}"></canvas></div></figure>`);
  }
  return `<section id="family-${h(fam.family)}"><h2>${h(fam.family)}</h2>
${familyTable(fam, hasBase)}
<div class="grid two">${charts.join('\n')}</div></section>`;
}

function contextLine(context, label) {
  if (!context) return '';
  const parts = [
    ['revision', context.skiff_git_revision], ['build', context.skiff_build_type],
    ['profile', context.skiff_profile], ['stores', context.skiff_stores],
    ['machine', context.skiff_label || context.host_name], ['CPUs', context.num_cpus],
    ['date', context.date],
  ].filter(([, v]) => v !== undefined && v !== '');
  return `<p class="meta"><b>${h(label)}</b> ${parts.map(([k, v]) => `${h(k)} <code>${h(v)}</code>`).join(' · ')}</p>`;
}

// Data the browser needs for the charts, nothing more.
function chartData(families, memory, hasBase) {
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
    memory: memory ? { timelines: memory.timelines ?? {}, policies: kPolicyNames } : null,
  };
}

// Text that is safe inside <script>: no "</script", no "<!--".
function scriptSafe(text) {
  return text.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
}

export function renderPage({ families, memory, baseFamilies, title }) {
  const hasBase = Boolean(baseFamilies);
  // The package exports no path to its UMD build, so it is found beside the
  // main entry point.
  const dist = path.dirname(require.resolve('chart.js'));
  const library = fs.readFileSync(path.join(dist, 'chart.umd.min.js'), 'utf8');
  const libraryVersion = JSON.parse(fs.readFileSync(path.join(dist, '..', 'package.json'), 'utf8')).version;
  const script = fs.readFileSync(path.join(here, '..', 'assets', 'page.js'), 'utf8');
  const css = fs.readFileSync(path.join(here, '..', 'assets', 'page.css'), 'utf8');
  const data = JSON.stringify(chartData(families, memory, hasBase)).replace(/</g, '\\u003c');
  const failed = families.flatMap((f) => f.benchmarks).filter((b) => b.error && !b.skipped);
  const nav = [memory ? '<a href="#memory">memory</a>' : '', ...families.map((f) => `<a href="#family-${h(f.family)}">${h(f.family)}</a>`)]
    .filter(Boolean).join(' ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${h(title)}</title>
<style>${css}</style></head>
<body data-charts-expected="0" data-charts-rendered="0">
<header><h1>${h(title)}</h1>
${contextLine(families[0]?.context, 'run')}
${hasBase ? contextLine(baseFamilies[0]?.context, 'base') : ''}
<p class="verdict ${failed.length ? 'bad' : 'ok'}">${failed.length ? `${failed.length} benchmark(s) failed` : 'every benchmark passed its checks'}
· ${families.reduce((n, f) => n + f.benchmarks.length, 0)} benchmarks in ${families.length} families</p>
<nav>${nav}</nav></header>
<main>
${memory ? memorySection(memory) : ''}
${families.map((f) => familySection(f, hasBase)).join('\n')}
</main>
<footer>Times are medians over repetitions (wall-clock). Charts drawn with Chart.js ${h(libraryVersion)}, inlined in this file.</footer>
<script type="application/json" id="skiff-data">${data}</script>
<script>${scriptSafe(library)}</script>
<script>${scriptSafe(script)}</script>
</body></html>
`;
}
