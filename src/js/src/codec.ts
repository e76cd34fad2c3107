// Request framing and reply reading. A request is encoded once, without its
// id, when the call is made (so a bad or oversized request fails before it
// waits for a slot); the id is spliced in when it is sent. Pure functions.

import { SkiffError } from './errors.js';
import { utf8Length } from './limits.js';
import { OPS } from './ops.js';

/**
 * The JSON text of a request without its id and its opening brace:
 * `"op":"get",...}`. Kept open at the front so that the frame is one
 * concatenation when it is sent (no slice of a body to copy again).
 */
export function encodeBody(op: string, fields: Record<string, unknown>): string {
  // op first, then the caller's fields: the server finds members by name,
  // but a reader of captured frames finds the op first. Spliced as text, not
  // spread into a new object: copying the fields was the call's most
  // expensive step.
  const rest = JSON.stringify(fields);
  const head = opHead(op);
  return rest.length <= 2 ? `${head}}` : `${head},${rest.slice(1)}`;
}

// `"op":"get"` for every op of the table, written once: a call then writes
// only its fields.
const OP_HEADS: ReadonlyMap<string, string> = new Map(OPS.map((spec) => [spec.name, `"op":${JSON.stringify(spec.name)}`]));

function opHead(op: string): string {
  return OP_HEADS.get(op) ?? `"op":${JSON.stringify(op)}`;
}

/** The frame of a request body (encodeBody) with its id: `{"id":7,"op":"get",...}`. */
export function frameWithId(id: number, body: string): string {
  return '{"id":' + id + ',' + body;
}

/** Bytes the id and the opening brace add to a body, at most (ids stay below 2^53). */
export const MAX_ID_OVERHEAD = '{"id":9007199254740991,'.length;

/**
 * Throws too_large when a body's frame could exceed `maxFrameBytes`,
 * as the server would answer it (before closing the connection).
 */
export function checkFrameSize(op: string, body: string, maxFrameBytes: number): void {
  // A UTF-16 unit is at most 3 UTF-8 bytes: most frames need no counting.
  if ((body.length + MAX_ID_OVERHEAD) * 3 <= maxFrameBytes) return;
  const bytes = utf8Length(body) + MAX_ID_OVERHEAD;
  if (bytes > maxFrameBytes) {
    throw new SkiffError(
      'too_large',
      `request of about ${bytes} bytes is over the frame limit of ${maxFrameBytes} bytes`,
      op,
    );
  }
}

export type Reply =
  | { id: number | null; ok: true; reply: Record<string, unknown> }
  | { id: number | null; ok: false; error: unknown }; // errorFromReply reads it

const BARE_OK_HEAD = '{"id":';
const BARE_OK_TAIL = ',"ok":true}';

/**
 * The id of a reply that is exactly `{"id":<digits>,"ok":true}` (a write's
 * usual reply), or -1 for any other text: that one is read without
 * JSON.parse, which costs a pipelining caller more than the rest of the
 * reply's handling.
 */
function bareOkId(text: string): number {
  const end = text.length - BARE_OK_TAIL.length;
  const digits = end - BARE_OK_HEAD.length;
  if (digits < 1 || digits > 15 || !text.startsWith(BARE_OK_HEAD) || !text.endsWith(BARE_OK_TAIL)) return -1;
  // JSON writes no leading zero: "07" is left for JSON.parse to refuse.
  if (digits > 1 && text.charCodeAt(BARE_OK_HEAD.length) === 48) return -1;
  let id = 0;
  for (let i = BARE_OK_HEAD.length; i < end; ++i) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    id = id * 10 + digit;
  }
  return id;
}

/** Reads a reply frame; throws protocol_error when it is not one. */
export function decodeReply(text: string): Reply {
  const bare = bareOkId(text);
  if (bare >= 0) return { id: bare, ok: true, reply: { id: bare, ok: true } };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SkiffError('protocol_error', 'a reply is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new SkiffError('protocol_error', 'a reply is not a JSON object');
  }
  const obj = parsed as Record<string, unknown>;
  const id = obj['id'];
  if (id !== null && !(typeof id === 'number' && Number.isSafeInteger(id) && id >= 0)) {
    throw new SkiffError('protocol_error', 'a reply has no usable id');
  }
  if (obj['ok'] === true) return { id, ok: true, reply: obj };
  return { id, ok: false, error: obj['error'] };
}
