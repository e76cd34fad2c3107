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

// Relative change of head against base as "+12.3 %"; '–' when either is
// missing. Only the text: whether a change matters is the comparer's verdict.
export function changeText(head, base) {
  if (!Number.isFinite(head) || !Number.isFinite(base) || base === 0) return '–';
  const d = (head - base) / base;
  return `${d >= 0 ? '+' : '−'}${Math.abs(d * 100).toFixed(1)} %`;
}

// The CSS class of a comparer verdict: slower and worse are bad, faster and
// better good, same muted; unstable and too few repetitions are marked as
// not judged.
export function verdictClass(verdict) {
  if (verdict === 'slower' || verdict === 'worse') return 'bad';
  if (verdict === 'faster' || verdict === 'better') return 'good';
  if (verdict === 'same') return 'same';
  return 'unjudged';
}
