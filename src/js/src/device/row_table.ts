// RowTable: a device's rows in memory as a few large strings instead of one
// object per row. A chunk holds rows of one table of one group, in key
// order: a header line `group \t table \n`, then one record per row,
// `key \t value \n` (the key as encodeName writes it, the value as compact
// text: member_names.ts), about `chunkChars` characters in all. A chunk is also
// the unit a storage writes: the table hands back the chunks a change
// rewrote, so a write costs one record per chunk it touched, and a device
// open reads a few large records instead of one per row.
//
// Each chunk keeps two Uint32Arrays of offsets (where each record and its
// value begin); lookups binary-search the chunks by their first row's name
// (`group \t table \t key`, the order rows sort in) and then the keys. A
// value is cut out of its chunk only when read.
//
// Rows are kept in the order of their names' UTF-8 bytes, the server's
// order (compareNames), so a scan reads them out as they lie. The key
// encoding preserves that order.
//
// Not thread-safe (one JavaScript thread).

import type { RowName } from '../sync.js';

/** A chunk as stored: an id that stays with it while it lives, and its text. */
export interface ChunkRecord {
  id: number;
  text: string;
}

/** What a change did to the chunks: those to store (new or rewritten) and those to delete. */
export interface ChunkChanges {
  put: ChunkRecord[];
  deleted: number[];
}

/** A row change in the table's terms: the encoded name and compact value text (null deletes). */
export interface EncodedWrite {
  name: string;
  value: string | null;
}

/**
 * The encoded name of a row: records sort by it (compareNames), and one
 * table's rows are contiguous. The key is written as it is except for
 * U+0001..U+000A, which includes the record separators tab and newline:
 * each becomes U+0001 and a printable character (U+0021..U+002A). The
 * pair sorts where the character did (below U+000B, in the same order) and
 * no raw U+0001 is left, so encoded keys sort as the keys do.
 */
export function encodeName(name: RowName): string {
  return `${name.group}\t${name.table}\t${encodeKey(name.key)}`;
}

/**
 * Orders strings by code point, which is the order of their UTF-8 bytes
 * (the server's). Plain `<` compares UTF-16 units and puts a supplementary
 * character (a surrogate pair, 0xD800..0xDFFF) before U+E000..U+FFFF.
 */
export function compareNames(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; ++i) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Below 0xD800 units compare as code points; above, surrogates move past U+FFFF.
    if (x >= 0xd800 && y >= 0xd800) return lift(x) - lift(y);
    return x - y;
  }
  return a.length - b.length;
}

function lift(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

export function decodeName(encoded: string): RowName {
  const a = encoded.indexOf('\t');
  const b = encoded.indexOf('\t', a + 1);
  return { group: encoded.slice(0, a), table: encoded.slice(a + 1, b), key: decodeKey(encoded.slice(b + 1)) };
}

const kEscaped = /[\u0001-\u000a]/g;
const kEscape = '\u0001';
const kEscapeShift = 0x20;

function encodeKey(key: string): string {
  return key.replace(kEscaped, (c) => kEscape + String.fromCharCode(c.charCodeAt(0) + kEscapeShift));
}

function decodeKey(text: string): string {
  if (!text.includes(kEscape)) return text;
  return text.replace(/\u0001(.)/g, (_, c: string) => String.fromCharCode(c.charCodeAt(0) - kEscapeShift));
}

class Chunk {
  readonly prefix: string; // `group \t table \t` of every record
  // 16-bit offsets where the text allows (a chunk of the default size): half the index.
  readonly starts: Uint16Array | Uint32Array; // record i spans [starts[i], starts[i+1]); one entry more than records
  readonly values: Uint16Array | Uint32Array; // where record i's value begins
  readonly first: string; // the full name of record 0

  constructor(
    readonly id: number,
    readonly text: string,
  ) {
    const header = text.indexOf('\n');
    if (header < 0) throw new Error(`chunk ${id}: no header line`);
    this.prefix = text.slice(0, header) + '\t';
    let n = 0;
    for (let p = text.indexOf('\n', header + 1); p >= 0; p = text.indexOf('\n', p + 1)) ++n;
    const Offsets = text.length < 0x10000 ? Uint16Array : Uint32Array;
    this.starts = new Offsets(n + 1);
    this.values = new Offsets(n);
    let start = header + 1;
    for (let i = 0; i < n; ++i) {
      this.starts[i] = start;
      // Neither form of a key holds a raw tab, so the first one ends it.
      const tab = text.indexOf('\t', start);
      const end = text.indexOf('\n', start);
      if (tab < 0 || tab > end) throw new Error(`chunk ${id}: record ${i} has no value`);
      this.values[i] = tab + 1;
      start = end + 1;
    }
    this.starts[n] = start;
    if (start !== text.length) throw new Error(`chunk ${id}: text does not end with a record`);
    this.first = n > 0 ? this.prefix + this.key(0) : '';
  }

  get size(): number {
    return this.values.length;
  }
  /** Record i's key as encoded (encodeName). */
  key(i: number): string {
    return this.text.slice(this.starts[i], this.values[i] - 1);
  }
  value(i: number): string {
    return this.text.slice(this.values[i], this.starts[i + 1] - 1);
  }
  /** Record i without the prefix: `key \t value \n`. */
  record(i: number): string {
    return this.text.slice(this.starts[i], this.starts[i + 1]);
  }
  /** The index of `name`, or -(insertion point) - 1. */
  find(name: string): number {
    if (!name.startsWith(this.prefix)) return compareNames(name, this.prefix) < 0 ? -1 : -this.size - 1;
    const key = name.slice(this.prefix.length);
    let lo = 0;
    let hi = this.size - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const c = compareNames(this.key(mid), key);
      if (c < 0) lo = mid + 1;
      else if (c > 0) hi = mid - 1;
      else return mid;
    }
    return -lo - 1;
  }
}

// A record on its way into a chunk: the prefix it belongs under and its text without it.
interface Pending {
  prefix: string;
  record: string;
}

export class RowTable {
  private chunks: Chunk[] = [];
  private rows = 0;

  /** `chunkChars`: the size a chunk is cut at; `nextId`: the id the next new chunk gets. */
  constructor(
    private readonly chunkChars: number,
    private nextId = 1,
  ) {
    if (!(chunkChars >= 256)) throw new RangeError('chunkChars must be at least 256');
  }

  /** Loads stored chunks (any order); an Error when a chunk's text is damaged. */
  load(records: readonly ChunkRecord[]): void {
    const chunks = records.map((r) => new Chunk(r.id, r.text)).filter((c) => c.size > 0);
    chunks.sort((a, b) => compareNames(a.first, b.first));
    this.chunks = chunks;
    this.rows = chunks.reduce((s, c) => s + c.size, 0);
    for (const c of chunks) if (c.id >= this.nextId) this.nextId = c.id + 1;
  }

  get size(): number {
    return this.rows;
  }
  get chunkCount(): number {
    return this.chunks.length;
  }
  get nextChunkId(): number {
    return this.nextId;
  }
  /** Characters held in chunk text (the rows' share of memory, at one byte each). */
  get textChars(): number {
    return this.chunks.reduce((s, c) => s + c.text.length, 0);
  }
  /** Bytes of the chunks' offset arrays (outside the JavaScript heap, in ArrayBuffers). */
  get indexBytes(): number {
    return this.chunks.reduce((s, c) => s + c.starts.byteLength + c.values.byteLength, 0);
  }

  /** The compact value text of `name` (encoded), or undefined. */
  get(name: string): string | undefined {
    const c = this.chunkFor(name);
    if (c < 0) return undefined;
    const chunk = this.chunks[c];
    const i = chunk.find(name);
    return i >= 0 ? chunk.value(i) : undefined;
  }

  /** Every row whose encoded name starts with `prefix`, in name order. */
  *scan(prefix: string): Generator<[string, string]> {
    let c = Math.max(0, this.chunkFor(prefix));
    for (; c < this.chunks.length; ++c) {
      const chunk = this.chunks[c];
      if (!chunk.prefix.startsWith(prefix)) {
        if (compareNames(chunk.prefix, prefix) > 0) return;
        continue;
      }
      for (let i = 0; i < chunk.size; ++i) yield [chunk.prefix + chunk.key(i), chunk.value(i)];
    }
  }

  /**
   * Applies `writes` (the last write to a name wins) and returns the chunks
   * to store. The table changes only when this returns.
   */
  apply(writes: readonly EncodedWrite[]): ChunkChanges {
    const sorted = dedupe(writes);
    const changes: ChunkChanges = { put: [], deleted: [] };
    if (sorted.length === 0) return changes;
    const next = this.chunks.slice();
    // Each touched chunk is merged with its writes; walk from the end so
    // replacing one chunk by several does not move the ones still to do.
    let end = sorted.length;
    while (end > 0) {
      const c = Math.max(0, this.chunkFor(sorted[end - 1].name));
      const chunk: Chunk | undefined = next[c];
      let begin = end - 1;
      while (begin > 0 && (chunk === undefined || c === 0 || compareNames(sorted[begin - 1].name, chunk.first) >= 0)) {
        --begin;
      }
      const merged = merge(chunk, sorted.slice(begin, end));
      const texts = cut(merged, this.chunkChars);
      const replacement: Chunk[] = texts.map((t, k) => new Chunk(k === 0 && chunk ? chunk.id : this.nextId++, t));
      if (replacement.length === 0 && chunk) changes.deleted.push(chunk.id);
      for (const r of replacement) changes.put.push({ id: r.id, text: r.text });
      next.splice(c, chunk ? 1 : 0, ...replacement);
      end = begin;
    }
    this.chunks = next;
    this.rows = next.reduce((s, c) => s + c.size, 0);
    return changes;
  }

  // The chunk whose range holds `name`: the last one starting at or before it (-1 when none).
  private chunkFor(name: string): number {
    let lo = 0;
    let hi = this.chunks.length - 1;
    let found = this.chunks.length > 0 ? 0 : -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (compareNames(this.chunks[mid].first, name) <= 0) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }
}

function dedupe(writes: readonly EncodedWrite[]): EncodedWrite[] {
  const last = new Map<string, EncodedWrite>();
  for (const w of writes) last.set(w.name, w);
  const out = [...last.values()];
  out.sort((a, b) => compareNames(a.name, b.name));
  return out;
}

// The records of `chunk` with `writes` (sorted, unique) applied, in order.
function merge(chunk: Chunk | undefined, writes: readonly EncodedWrite[]): Pending[] {
  const out: Pending[] = [];
  const n = chunk ? chunk.size : 0;
  let i = 0;
  let w = 0;
  while (i < n || w < writes.length) {
    const name = i < n ? chunk!.prefix + chunk!.key(i) : undefined;
    const write = writes[w];
    if (write === undefined || (name !== undefined && compareNames(name, write.name) < 0)) {
      out.push({ prefix: chunk!.prefix, record: chunk!.record(i++) });
      continue;
    }
    if (name === write.name) ++i;
    if (write.value !== null) {
      const split = splitName(write.name);
      out.push({ prefix: split.prefix, record: `${split.key}\t${write.value}\n` });
    }
    ++w;
  }
  return out;
}

function splitName(name: string): { prefix: string; key: string } {
  const b = name.indexOf('\t', name.indexOf('\t') + 1) + 1;
  return { prefix: name.slice(0, b), key: name.slice(b) };
}

// Records joined into chunk texts of about `chars` characters each, a chunk
// holding one table of one group (none when there are no records).
function cut(records: readonly Pending[], chars: number): string[] {
  const texts: string[] = [];
  let part: string[] = [];
  let prefix = '';
  let size = 0;
  const flush = () => {
    if (part.length > 0) texts.push(`${prefix.slice(0, -1)}\n${part.join('')}`);
    part = [];
    size = 0;
  };
  for (const r of records) {
    if (r.prefix !== prefix) {
      flush();
      prefix = r.prefix;
    }
    part.push(r.record);
    size += r.record.length;
    if (size >= chars) flush();
  }
  flush();
  return texts;
}
