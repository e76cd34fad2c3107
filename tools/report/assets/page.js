// Draws the page's charts from the JSON in #skiff-data with Chart.js, then
// records on <body> how many charts were expected, how many have pixels on
// their canvas and how many axis labels did not fit, so a headless browser
// can check that they rendered whole.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('skiff-data').textContent);
  const palette = ['#2f6fb0', '#d1495b', '#3a9d5d', '#e5a50a', '#7b5ea7', '#1b998b', '#8d6a4f'];
  const policyColours = { none: '#d1495b', evict: '#e5a50a', pack: '#2f6fb0', pack_evict: '#3a9d5d' };
  const phaseColours = {
    load: 'rgba(47,111,176,0.10)', idle: 'rgba(58,157,93,0.10)', read: 'rgba(229,165,10,0.16)',
    rewrite: 'rgba(209,73,91,0.12)', restart: 'rgba(120,120,120,0.16)', readback: 'rgba(123,94,167,0.14)',
  };

  Chart.defaults.animation = false;
  Chart.defaults.responsive = true;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif';
  Chart.defaults.font.size = 12;
  Chart.defaults.color = '#333';

  // Shades each phase of a timeline behind the lines and names it.
  const phaseBands = {
    id: 'phaseBands',
    beforeDatasetsDraw(chart, _args, options) {
      const phases = options.phases || [];
      const { ctx, chartArea, scales } = chart;
      if (!phases.length || !scales.x) return;
      ctx.save();
      ctx.font = '11px ' + Chart.defaults.font.family;
      ctx.textBaseline = 'top';
      for (const p of phases) {
        if (p.name === 'start') continue;
        const x0 = Math.max(chartArea.left, scales.x.getPixelForValue(p.start));
        const x1 = Math.min(chartArea.right, scales.x.getPixelForValue(p.end));
        if (x1 <= x0) continue;
        ctx.fillStyle = phaseColours[p.name] || 'rgba(0,0,0,0.05)';
        ctx.fillRect(x0, chartArea.top, x1 - x0, chartArea.bottom - chartArea.top);
        const width = ctx.measureText(p.name).width;
        if (x1 - x0 > width + 4) {
          ctx.fillStyle = '#555';
          ctx.fillText(p.name, x0 + 3, chartArea.top + 3);
        }
      }
      ctx.restore();
    },
  };
  Chart.register(phaseBands);

  const charts = [];
  function make(canvas, config) {
    charts.push({ canvas, chart: new Chart(canvas, config) });
  }

  function family(name) {
    return data.families.find((f) => f.family === name);
  }

  function throughputChart(canvas) {
    const f = family(canvas.dataset.family);
    const rows = f.rows.filter((r) => Number.isFinite(r.throughput));
    const datasets = [{ label: 'this run', data: rows.map((r) => r.throughput), backgroundColor: palette[0] }];
    if (data.hasBase) {
      datasets.push({ label: 'base', data: rows.map((r) => r.baseThroughput), backgroundColor: '#b9c4d0' });
    }
    make(canvas, {
      type: 'bar',
      data: { labels: rows.map((r) => r.name), datasets },
      options: {
        indexAxis: 'y',
        scales: {
          x: { type: 'logarithmic', ticks: { maxTicksLimit: 8, maxRotation: 0 },
               title: { display: true, text: 'operations per second' } },
          y: { ticks: { autoSkip: false } },
        },
        plugins: { legend: { display: data.hasBase } },
      },
    });
  }

  function latencyChart(canvas) {
    const f = family(canvas.dataset.family);
    const keys = f.latencyKeys.filter((k) => k !== 'avg');
    const rows = f.rows.filter((r) => keys.some((k) => Number.isFinite(r.latency[k])));
    make(canvas, {
      type: 'bar',
      data: {
        labels: rows.map((r) => r.name),
        datasets: keys.map((k, i) => ({
          label: k,
          data: rows.map((r) => r.latency[k] ?? null),
          backgroundColor: palette[i % palette.length],
        })),
      },
      options: {
        indexAxis: 'y',
        scales: {
          x: { type: 'logarithmic', ticks: { maxTicksLimit: 8, maxRotation: 0 },
               title: { display: true, text: 'µs' } },
          y: { ticks: { autoSkip: false } },
        },
      },
    });
  }

  function historyChart(canvas) {
    const lines = data.history.series[canvas.dataset.family] || [];
    make(canvas, {
      type: 'line',
      data: {
        labels: data.history.runs,
        datasets: lines.map((l, i) => ({
          label: l.name,
          data: l.values.map((ns) => (Number.isFinite(ns) ? ns / 1000 : null)),
          borderColor: palette[i % palette.length],
          backgroundColor: palette[i % palette.length],
          spanGaps: true,
          pointRadius: 2,
          borderWidth: 1.5,
        })),
      },
      options: {
        scales: {
          x: { ticks: { maxRotation: 60, autoSkip: true } },
          y: { type: 'logarithmic', title: { display: true, text: 'µs per operation (per iteration where not end-to-end)' } },
        },
        plugins: { legend: { position: 'right', labels: { boxWidth: 12 } } },
      },
    });
  }

  function rssPoints(timeline) {
    return (timeline.rss_mib || []).map(([t, mib]) => ({ x: t, y: mib }));
  }

  function rssAllChart(canvas) {
    const m = data.memory;
    const datasets = Object.keys(m.policies)
      .filter((p) => m.timelines[p])
      .map((p) => ({
        label: m.policies[p],
        data: rssPoints(m.timelines[p]),
        borderColor: policyColours[p],
        backgroundColor: policyColours[p],
        pointRadius: 0,
        borderWidth: 2,
      }));
    make(canvas, {
      type: 'line',
      data: { datasets },
      options: {
        parsing: false,
        scales: {
          x: { type: 'linear', title: { display: true, text: 'seconds since the server started' } },
          y: { type: 'linear', beginAtZero: true, title: { display: true, text: 'RSS (MiB)' } },
        },
        plugins: { legend: { position: 'top' } },
      },
    });
  }

  function rssChart(canvas) {
    const p = canvas.dataset.policy;
    const t = data.memory.timelines[p];
    const tiers = t.tiers || [];
    const datasets = [{
      label: 'RSS (MiB)',
      data: rssPoints(t),
      borderColor: policyColours[p],
      backgroundColor: policyColours[p],
      pointRadius: 0,
      borderWidth: 2,
      yAxisID: 'y',
    }];
    if (tiers.length) {
      datasets.push(
        { label: 'hot documents', data: tiers.map((s) => ({ x: s.t, y: s.hot })), borderColor: '#d1495b',
          borderDash: [4, 3], pointRadius: 0, borderWidth: 1.5, yAxisID: 'docs' },
        { label: 'packed documents', data: tiers.map((s) => ({ x: s.t, y: s.packed })), borderColor: '#2f6fb0',
          borderDash: [4, 3], pointRadius: 0, borderWidth: 1.5, yAxisID: 'docs' });
    }
    make(canvas, {
      type: 'line',
      data: { datasets },
      options: {
        parsing: false,
        scales: {
          x: { type: 'linear', title: { display: true, text: 's' } },
          y: { type: 'linear', beginAtZero: true, title: { display: true, text: 'RSS (MiB)' } },
          docs: { type: 'linear', beginAtZero: true, position: 'right', display: tiers.length > 0,
                  grid: { drawOnChartArea: false }, title: { display: true, text: 'documents' } },
        },
        plugins: { phaseBands: { phases: t.phases || [] }, legend: { labels: { boxWidth: 14 } } },
      },
    });
  }

  const builders = {
    throughput: throughputChart, latency: latencyChart, history: historyChart,
    'rss-all': rssAllChart, rss: rssChart,
  };
  const canvases = document.querySelectorAll('canvas[data-chart]');
  document.body.dataset.chartsExpected = String(canvases.length);
  for (const canvas of canvases) {
    try {
      builders[canvas.dataset.chart](canvas);
    } catch (e) {
      canvas.insertAdjacentHTML('afterend', '<p class="bad">chart failed: ' + String(e.message).replace(/</g, '&lt;') + '</p>');
    }
  }

  // A chart counts as rendered when its canvas has a drawn pixel.
  function drawn(canvas) {
    if (!canvas.width || !canvas.height) return false;
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) return true;
    return false;
  }
  document.body.dataset.chartsRendered = String(charts.filter((c) => drawn(c.canvas)).length);

  // A category label wider than its axis is cut at the canvas edge.
  function cutLabels(chart) {
    let cut = 0;
    for (const scale of Object.values(chart.scales)) {
      if (scale.type !== 'category' || scale.axis !== 'y') continue;
      const ctx = chart.ctx;
      ctx.save();
      ctx.font = Chart.helpers.toFont(scale.options.ticks.font).string;
      for (const label of scale.getLabels()) {
        if (ctx.measureText(String(label)).width > scale.width) cut += 1;
      }
      ctx.restore();
    }
    return cut;
  }
  document.body.dataset.labelsCut = String(charts.reduce((n, c) => n + cutLabels(c.chart), 0));
})();
