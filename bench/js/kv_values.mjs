// The key-value scenarios' keys and values, the same as the C++ load
// driver's (support/kv_workloads.h), so both clients write the same bytes.

export const keyFor = (i) => 'k' + String(i).padStart(9, '0');
export const smallValue = (i) => ({ n: i, s: 'v' + i });

// {"blob":"<letters>","n":i}, `bytes` long as compact JSON.
export function payloadValue(i, bytes) {
  const frame = JSON.stringify({ blob: '', n: i }).length;
  let blob = '';
  for (let k = 0; blob.length < Math.max(bytes - frame, 0); k++) {
    blob += String.fromCharCode(97 + ((i + k) % 26));
  }
  return { blob, n: i };
}

// Deep equality of two JSON values (member order ignored, as the server may
// sort members).
export function sameJson(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, k) => sameJson(x, b[k]));
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJson(a[k], b[k]));
}

// Up to `n` of `ids`, spread evenly, always with the first and the last.
export function sample(ids, n) {
  if (ids.length <= n) return ids.slice();
  const out = [];
  for (let k = 0; k < n; k++) out.push(ids[Math.round((k * (ids.length - 1)) / (n - 1))]);
  return out;
}
