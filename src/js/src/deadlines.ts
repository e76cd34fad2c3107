// Failing calls past their deadline. Deadlines are checked by one timer
// while calls are pending rather than a timer per call: a pipelined burst
// then costs no timers. A deadline is thus noticed up to a quarter of
// requestTimeoutMs (at most 1 s) late.

import { SkiffError } from './errors.js';
import type { Call } from './call.js';
import type { Queue } from './queue.js';

/** Runs `sweep` periodically from start() until stop(); the timer keeps no process alive. */
export class DeadlineTimer {
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly periodMs: number;

  constructor(
    timeoutMs: number,
    private readonly sweep: () => void,
  ) {
    this.periodMs = Math.min(1000, Math.max(10, timeoutMs / 4));
  }

  start(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(this.sweep, this.periodMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  stop(): void {
    if (this.timer === null) return;
    clearInterval(this.timer);
    this.timer = null;
  }
}

/**
 * Fails the calls of `inFlight` and `waiting` whose deadline is at or before
 * `now`: timeout for a call sent (its outcome unknown) or waiting for a slot,
 * not_connected for one waiting for the connection (`connected` false).
 */
export function failExpired(inFlight: Map<number, Call>, waiting: Queue<Call>, now: number, connected: boolean): void {
  for (const [id, call] of inFlight) {
    if (call.deadline > now) continue;
    inFlight.delete(id);
    call.reject(
      new SkiffError('timeout', `no reply within ${call.timeoutMs} ms; whether it was applied is unknown`, call.op),
    );
  }
  if (waiting.length === 0) return;
  for (const call of waiting.removeWhere((c) => c.deadline <= now)) {
    call.reject(
      connected
        ? new SkiffError(
            'timeout',
            `no free slot within ${call.timeoutMs} ms (maxInFlight calls in flight); the request was not sent`,
            call.op,
          )
        : new SkiffError('not_connected', `no connection within ${call.timeoutMs} ms; the request was not sent`, call.op),
    );
  }
}
