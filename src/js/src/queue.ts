// A first-in first-out queue with O(1) push and shift (Array.shift is O(n)).

export class Queue<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    // Compact once the dead prefix is most of the array.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** Removes and returns every item, oldest first. */
  drain(): T[] {
    const out = this.items.slice(this.head) as T[];
    this.items = [];
    this.head = 0;
    return out;
  }

  /** Removes the items `drop` selects, keeping the order of the rest. */
  removeWhere(drop: (item: T) => boolean): T[] {
    const removed: T[] = [];
    const kept: T[] = [];
    for (const item of this.drain()) (drop(item) ? removed : kept).push(item);
    this.items = kept;
    return removed;
  }
}
