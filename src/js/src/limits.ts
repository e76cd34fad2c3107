// The protocol's limits (docs/protocol.md, "Names and limits") as this
// client enforces them before sending, so a request the server would refuse
// fails at once with the code the server would give.

export interface Limits {
  /** Largest request frame in bytes (the server's max_frame_bytes). */
  readonly maxFrameBytes: number;
  /** Deepest JSON nesting counting the request object (the server's max_depth). */
  readonly maxDepth: number;
}

export const DEFAULT_LIMITS: Limits = { maxFrameBytes: 16 * 1024 * 1024, maxDepth: 64 };

export const MAX_TABLE_NAME_BYTES = 64;
export const MAX_KEY_BYTES = 1024;
export const MAX_SCAN_LIMIT = 10000;
export const MAX_NEAR_LIMIT = 10000;

/** Bytes of `text` in UTF-8 (a lone surrogate counts as the 3 of U+FFFD). */
export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; ++i) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        ++i;
      } else {
        n += 3;
      }
    } else n += 3;
  }
  return n;
}

/** True when `text` has a UTF-16 surrogate without its pair (not valid UTF-8 on the wire). */
export function hasLoneSurrogate(text: string): boolean {
  for (let i = 0; i < text.length; ++i) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      if (d < 0xdc00 || d > 0xdfff) return true;
      ++i;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return true;
    }
  }
  return false;
}
