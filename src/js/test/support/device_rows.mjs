// The rows the device tests and the browser page write: the sync
// benchmark's task row of about 200 bytes (bench/sync_bench_common.h,
// TaskRow), byte for byte, and its key. Plain JavaScript, so the browser
// page imports it too.

export function taskRow(i) {
  let title = `task ${i} `;
  const mask = (1n << 64n) - 1n;
  let x = (BigInt(i) * 0x9e3779b97f4a7c15n + 7n) & mask; // uint64_t arithmetic, as the C++ benchmark's
  while (title.length < 120) {
    x ^= (x << 13n) & mask;
    x ^= x >> 7n;
    x ^= (x << 17n) & mask;
    title += String.fromCharCode(97 + Number(x % 26n));
  }
  return { id: i, title, done: false, owner: `user-${i % 97}`, priority: i % 5, tags: ['sync', 'bench'] };
}

export const rowKey = (i) => `r${String(i).padStart(8, '0')}`;

