// Errors of the Skiff client. Every failure a call can meet is a SkiffError
// whose `code` says which: the server's wire codes (docs/protocol.md, "Error
// codes"), or one of the client's own for a reply that never came.

/** The codes the server answers with (docs/protocol.md, "Error codes"). */
export const SERVER_ERROR_CODES = [
  'bad_request',
  'unauthorized',
  'forbidden',
  'type_mismatch',
  'too_large',
  'overloaded',
  'unavailable',
  'internal',
  'outcome_unknown',
  'rate_limited',
] as const;
export type ServerErrorCode = (typeof SERVER_ERROR_CODES)[number];

/**
 * The client's own codes, for calls the server did not answer:
 * - connection_lost: the connection dropped while the call was in flight; a
 *   write may or may not have been applied.
 * - timeout: no reply within requestTimeoutMs of the call (the late reply
 *   is dropped); a write may or may not have been applied. A call that
 *   spent the whole time waiting for a free slot was not sent (its message
 *   says so), but the code is the same: either way the caller waited too long.
 * - not_connected: the request was never sent (no connection could be made
 *   within requestTimeoutMs of the call, or reconnecting gave up).
 * - queue_full: the request was never sent: maxWaiting calls were already
 *   waiting for a slot or for the connection.
 * - closed: the client is closed (close() was called, or it gave up
 *   reconnecting) and the request was not sent. Calls in flight at close()
 *   get connection_lost.
 * - protocol_error: the server answered the call with an error this client
 *   cannot read (a code it does not know, or none); the outcome is unknown.
 *   A frame that cannot be read at all names no call: the connection is
 *   dropped and the calls in flight get connection_lost.
 */
export const CLIENT_ERROR_CODES = [
  'connection_lost',
  'timeout',
  'not_connected',
  'closed',
  'protocol_error',
  'queue_full',
] as const;
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];

export type ErrorCode = ServerErrorCode | ClientErrorCode;

const serverCodes: ReadonlySet<string> = new Set(SERVER_ERROR_CODES);

export function isServerErrorCode(code: string): code is ServerErrorCode {
  return serverCodes.has(code);
}

export class SkiffError extends Error {
  readonly code: ErrorCode;
  /** The op of the failed call, when the failure belongs to one. */
  readonly op: string | undefined;
  /** rate_limited: how long to wait before the same request succeeds. */
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, message: string, op?: string, retryAfterMs?: number) {
    super(op === undefined ? `${code}: ${message}` : `${op}: ${code}: ${message}`);
    this.name = 'SkiffError';
    this.code = code;
    this.op = op;
    this.retryAfterMs = retryAfterMs;
  }

  /** True when the server itself answered with this error. */
  get fromServer(): boolean {
    return isServerErrorCode(this.code);
  }

  /**
   * True when a write that failed with this error may nevertheless have been
   * applied: every other code guarantees nothing was changed.
   */
  get outcomeUnknown(): boolean {
    return (
      this.code === 'outcome_unknown' ||
      this.code === 'connection_lost' ||
      this.code === 'timeout' ||
      this.code === 'protocol_error'
    );
  }
}

/** A SkiffError from a server's error object; protocol_error when malformed. */
export function errorFromReply(error: unknown, op?: string): SkiffError {
  if (typeof error === 'object' && error !== null) {
    const { code, message, retry_after_ms: retry } = error as {
      code?: unknown;
      message?: unknown;
      retry_after_ms?: unknown;
    };
    if (typeof code === 'string' && isServerErrorCode(code)) {
      const retryAfterMs = typeof retry === 'number' ? retry : undefined;
      return new SkiffError(code, typeof message === 'string' ? message : '', op, retryAfterMs);
    }
    if (typeof code === 'string') {
      // A newer server's code this client does not know: keep its words.
      return new SkiffError('protocol_error', `unknown error code '${code}': ${String(message)}`, op);
    }
  }
  return new SkiffError('protocol_error', 'error reply without a code', op);
}
