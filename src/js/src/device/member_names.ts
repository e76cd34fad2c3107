// Compact row text: a value is kept as its compact JSON text with each
// object member name ("title":) written as a code from a per-device
// dictionary, so 10,000 rows of one table do not each repeat their six
// names. Codes are control characters, which compact JSON never holds raw
// (JSON.stringify escapes them): the first 28 names are one character each
// (\x01-\x08, \x0b-\x1e; tab and newline separate rows), the next 224 are
// \x1f and a Latin-1 character, later ones stay written out. V8 keeps such
// text one byte per character.
//
// Not thread-safe (JavaScript has one thread); a dictionary belongs to one
// device and is stored with its rows, since stored text refers to it.

const kSingle: string[] = [];
for (let c = 0x01; c <= 0x1e; ++c) if (c !== 0x09 && c !== 0x0a) kSingle.push(String.fromCharCode(c));
const kLong = '\x1f';
const kLongFirst = 0x20;
const kLongCount = 0x100 - kLongFirst;
const kCode = /[\x01-\x08\x0b-\x1e]|\x1f[\s\S]/g;
/** Nesting accepted in a value: the server's default max_depth less the request object. */
export const kMaxDepth = 63;

/** A value that cannot be written as a row (not JSON, or nested too deep). */
export class ValueError extends Error {
  constructor(
    readonly code: 'bad_request' | 'too_large',
    message: string,
  ) {
    super(message);
    this.name = 'ValueError';
  }
}

export class MemberNames {
  private readonly names: string[] = [];
  private readonly codes = new Map<string, string>();

  /** A dictionary with `names` (as stored) in code order. */
  constructor(names: readonly string[] = []) {
    for (const n of names) this.add(n);
  }

  /** The names in code order, for storing with the rows. */
  list(): string[] {
    return this.names.slice();
  }

  /** Writes `value` as compact text; ValueError when it is not JSON. */
  encode(value: unknown): string {
    const out: string[] = [];
    this.write(value, out, 0);
    return out.join('');
  }

  /** The plain JSON text of compact text `text`. */
  decode(text: string): string {
    return text.replace(kCode, (code: string) => {
      const index =
        code.length === 1 ? kSingle.indexOf(code) : kSingle.length + code.charCodeAt(1) - kLongFirst;
      const name = this.names[index];
      if (name === undefined) throw new Error('row text refers to an unknown member name');
      return JSON.stringify(name) + ':';
    });
  }

  private add(name: string): string | undefined {
    const n = this.names.length;
    if (n >= kSingle.length + kLongCount) return undefined;
    const code = n < kSingle.length ? kSingle[n] : kLong + String.fromCharCode(kLongFirst + n - kSingle.length);
    this.names.push(name);
    this.codes.set(name, code);
    return code;
  }

  private write(v: unknown, out: string[], depth: number): void {
    if (v === null) {
      out.push('null');
      return;
    }
    switch (typeof v) {
      case 'string':
        out.push(JSON.stringify(v));
        return;
      case 'boolean':
        out.push(v ? 'true' : 'false');
        return;
      case 'number':
        if (!Number.isFinite(v)) throw new ValueError('bad_request', `${v} is not a JSON number`);
        out.push(JSON.stringify(v));
        return;
      case 'object':
        break;
      default:
        throw new ValueError('bad_request', `a ${typeof v} is not a JSON value`);
    }
    if (depth >= kMaxDepth) throw new ValueError('too_large', `value nests deeper than ${kMaxDepth} levels`);
    if (Array.isArray(v)) {
      out.push('[');
      for (let i = 0; i < v.length; ++i) {
        if (i > 0) out.push(',');
        this.write(v[i] === undefined ? null : v[i], out, depth + 1);
      }
      out.push(']');
      return;
    }
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) {
      throw new ValueError('bad_request', 'only plain objects, arrays and JSON scalars can be stored');
    }
    out.push('{');
    let first = true;
    for (const name of Object.keys(v as object)) {
      const member = (v as Record<string, unknown>)[name];
      if (member === undefined) continue;
      if (!first) out.push(',');
      first = false;
      const code = this.codes.get(name) ?? this.add(name);
      out.push(code ?? JSON.stringify(name) + ':');
      this.write(member, out, depth + 1);
    }
    out.push('}');
  }
}
