// Reconnecting after a lost connection: capped, jittered exponential
// back-off between attempts, each attempt a new socket and a new login.
// Gives up for good on a login the server would refuse again, after the
// policy's last attempt, or on a failure that is not the network's.

import { type ErrorCode, SkiffError } from './errors.js';
import { type ReconnectPolicy, reconnectDelayMs } from './backoff.js';

// A re-login refused with these would be refused again: retrying cannot help.
const FINAL_LOGIN_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['unauthorized', 'forbidden', 'bad_request']);

/** What the reconnect loop needs of the client. */
export interface ReconnectTarget {
  /** The client was closed for good (checked after every wait). */
  isClosed(): boolean;
  /** Opens a socket, makes it current and logs in. */
  open(): Promise<void>;
  /** Closes the current socket of an attempt that failed, if any. */
  dropAttempt(): void;
  /** Closes for good; the calls waiting fail with `error`. */
  giveUp(error: SkiffError): void;
  /** The new connection is up and logged in. */
  reconnected(): void;
}

export class Reconnector {
  /** Attempts since a connection last stayed up. */
  private attempts = 0;
  private openedAt = 0;
  private cancelSleep: (() => void) | null = null;

  constructor(private readonly target: ReconnectTarget) {}

  /** A connection came up now. */
  opened(): void {
    this.openedAt = Date.now();
  }

  /** Ends a back-off wait at once (the client is closing). */
  cancel(): void {
    this.cancelSleep?.();
  }

  async run(policy: ReconnectPolicy): Promise<void> {
    const target = this.target;
    // A server that accepts and then drops at once must not reset the
    // back-off each time (a reconnect storm): only a connection that stayed
    // up about as long as the longest delay starts the count afresh.
    if (Date.now() - this.openedAt >= policy.maxDelayMs) this.attempts = 0;
    let retryAfterMs: number | undefined;
    for (;;) {
      ++this.attempts;
      if (policy.maxAttempts !== undefined && this.attempts > policy.maxAttempts) {
        target.giveUp(new SkiffError('not_connected', `gave up reconnecting after ${policy.maxAttempts} attempts`));
        return;
      }
      await this.sleep(retryAfterMs ?? reconnectDelayMs(policy, this.attempts));
      retryAfterMs = undefined;
      if (target.isClosed()) return;
      try {
        await target.open();
      } catch (e) {
        if (target.isClosed()) return;
        target.dropAttempt();
        if (!(e instanceof SkiffError)) {
          // Not a network failure (a WebSocket class that misbehaves): say so
          // to the waiting calls rather than retry for ever.
          target.giveUp(new SkiffError('not_connected', `reconnecting failed: ${String(e)}`));
          return;
        }
        if (FINAL_LOGIN_ERRORS.has(e.code)) {
          target.giveUp(e);
          return;
        }
        // The server said when it will take a login again.
        if (e.code === 'rate_limited' && e.retryAfterMs !== undefined && e.retryAfterMs >= 0) {
          retryAfterMs = e.retryAfterMs;
        }
        continue; // unreachable, overloaded, unavailable...: later may work
      }
      this.opened();
      target.reconnected();
      return;
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.cancelSleep = null;
        resolve();
      }, ms);
      this.cancelSleep = () => {
        clearTimeout(timer);
        this.cancelSleep = null;
        resolve();
      };
    });
  }
}
