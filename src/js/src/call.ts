// A call of the client while it waits or is in flight.

import type { SkiffError } from './errors.js';

export type Reply = Record<string, unknown>;

export interface Call {
  op: string;
  /** The request without its id; emptied once sent (only the reply matters then). */
  body: string;
  /** How long the call may take from when it was made. */
  timeoutMs: number;
  /** When it was made plus timeoutMs: it fails then, sent or not. */
  deadline: number;
  resolve: (reply: Reply) => void;
  reject: (error: SkiffError) => void;
}
