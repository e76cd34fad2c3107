// Request framing and reply reading. A request is encoded once, without its
// id, when the call is made (so a bad or oversized request fails before it
// waits for a slot); the id is spliced in when it is sent. Pure functions.

import { SkiffError } from './errors.js';
import { utf8Length } from './limits.js';

/** The JSON text of a request without its id: `{"op":"get",...}`. */
export function encodeBody(op: string, fields: Record<string, unknown>): string {
  // op first, then the caller's fields: the server finds members by name,
  // but a reader of captured frames finds the op first.
  return JSON.stringify({ op, ...fields });
}

/** The frame of a request body with its id: `{"id":7,"op":"get",...}`. */
export function frameWithId(id: number, body: string): string {
  return `{"id":${id},${body.slice(1)}`;
}

/** Bytes the id adds to a body, at most (ids stay below 2^53). */
export const MAX_ID_OVERHEAD = '"id":9007199254740991,'.length;

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

/** Reads a reply frame; throws protocol_error when it is not one. */
export function decodeReply(text: string): Reply {
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
