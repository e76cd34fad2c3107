// Number and text formatting shared by the page's tables.

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// Three significant digits, thin-space thousands: 1 234, 12.3, 0.0456.
export function num(x, digits = 3) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  if (x === 0) return '0';
  const abs = Math.abs(x);
  if (abs >= 10 ** digits) return Math.round(x).toLocaleString('en-US').replace(/,/g, '\u202f');
  return Number(x.toPrecision(digits)).toString();
}

export function duration(ns) {
  if (ns === null || ns === undefined || !Number.isFinite(ns)) return '–';
  if (ns >= 1e9) return `${num(ns / 1e9)} s`;
  if (ns >= 1e6) return `${num(ns / 1e6)} ms`;
  if (ns >= 1e3) return `${num(ns / 1e3)} µs`;
  return `${num(ns)} ns`;
}

export function rate(perSecond) {
  if (perSecond === null || perSecond === undefined || !Number.isFinite(perSecond)) return '–';
  if (perSecond >= 1e6) return `${num(perSecond / 1e6)} M/s`;
  if (perSecond >= 1e3) return `${num(perSecond / 1e3)} k/s`;
  return `${num(perSecond)} /s`;
}

// Relative change of head against base as "+12.3 %", with a class saying
// whether it is better (`good`), worse (`bad`) or within `threshold`.
export function change(head, base, higherIsBetter, threshold = 0.05) {
  if (!Number.isFinite(head) || !Number.isFinite(base) || base === 0) return { text: '–', cls: '' };
  const d = (head - base) / base;
  const text = `${d >= 0 ? '+' : '−'}${Math.abs(d * 100).toFixed(1)} %`;
  if (Math.abs(d) < threshold) return { text, cls: 'same' };
  const better = higherIsBetter ? d > 0 : d < 0;
  return { text, cls: better ? 'good' : 'bad' };
}
