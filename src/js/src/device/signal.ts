// Signal: something a loop can sleep on until it happens (a write, a close,
// progress) instead of polling, and the cancellable delay the loop backs
// off with.
//
// Listeners are one-shot and every waiter removes its own when it wakes for
// another reason: a loop that backs off for hours while offline keeps one
// listener per signal, not one per round (a promise raced against a signal
// that never fires would keep a reaction per round until it does).

export class Signal {
  private readonly listeners = new Set<() => void>();

  /** Listeners waiting for the next `fire` (bounded by the waiters in progress; for leak checks). */
  get listenerCount(): number {
    return this.listeners.size;
  }

  /** Calls `listener` once, on the next `fire`; returns its removal. */
  once(listener: () => void): () => void {
    // A wrapper of its own, so one function waiting twice is two listeners.
    const entry = () => listener();
    this.listeners.add(entry);
    return () => this.listeners.delete(entry);
  }

  fire(): void {
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const l of listeners) l();
  }
}

/** Resolves when the first of `signals` fires; leaves no listener on the others behind. */
export function firstOf(...signals: Signal[]): Promise<void> {
  return new Promise<void>((resolve) => {
    const removals: (() => void)[] = [];
    const done = () => {
      for (const remove of removals) remove();
      resolve();
    };
    for (const s of signals) removals.push(s.once(done));
  });
}

/** Resolves after `ms` or when `cancel` fires, whichever comes first; leaves no timer or listener behind. */
export function delay(ms: number, cancel: Signal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      remove();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const remove = cancel.once(done);
  });
}
