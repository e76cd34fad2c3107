// Reconnect delays: exponential from initialDelayMs, capped at maxDelayMs,
// each drawn from the upper half of its step so that many clients cut off
// at once do not come back at once. Pure; `random` is injected for tests.

import { SkiffError } from './errors.js';

export interface ReconnectPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  /** Attempts after a loss before giving up; unset = keep trying. */
  maxAttempts?: number;
}

export const DEFAULT_RECONNECT: ReconnectPolicy = { initialDelayMs: 100, maxDelayMs: 5000 };

/**
 * Throws bad_request for a policy that would retry in a tight loop (a zero
 * or negative delay), never (NaN, Infinity) or backwards (max below initial).
 */
export function checkReconnectPolicy(policy: ReconnectPolicy): void {
  const bad = (why: string): never => {
    throw new SkiffError('bad_request', `option reconnect: ${why}`);
  };
  if (typeof policy !== 'object' || policy === null) bad('must be an object or false');
  const { initialDelayMs, maxDelayMs, maxAttempts } = policy;
  if (typeof initialDelayMs !== 'number' || !Number.isFinite(initialDelayMs) || initialDelayMs <= 0) {
    bad('initialDelayMs must be a finite number above 0');
  }
  if (typeof maxDelayMs !== 'number' || !Number.isFinite(maxDelayMs) || maxDelayMs < initialDelayMs) {
    bad('maxDelayMs must be a finite number at least initialDelayMs');
  }
  if (maxAttempts !== undefined && (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1)) {
    bad('maxAttempts must be an integer of at least 1');
  }
}

/** The delay before attempt `attempt` (1 for the first) of a reconnect. */
export function reconnectDelayMs(
  policy: ReconnectPolicy,
  attempt: number,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const step = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** exponent);
  return step / 2 + (random() * step) / 2;
}
