/** A bounded buffer: keeps the newest `capacity` items, drops the oldest. */
export class Ring<T> {
  readonly capacity: number;
  #items: T[] = [];

  constructor(capacity: number) {
    if (!(capacity > 0)) throw new RangeError("a ring needs a capacity above 0");
    this.capacity = capacity;
  }

  /** Adds items at the new end, dropping the oldest past capacity. */
  push(items: readonly T[]): void {
    if (items.length === 0) return;
    const kept = this.#items.concat(items);
    this.#items = kept.length > this.capacity ? kept.slice(kept.length - this.capacity) : kept;
  }

  /** Newest first (a new array: safe to hand to views). */
  newestFirst(): T[] {
    return this.#items.slice().reverse();
  }

  get size(): number {
    return this.#items.length;
  }

  /** The newest item. */
  get newest(): T | undefined {
    return this.#items[this.#items.length - 1];
  }

  clear(): void {
    this.#items = [];
  }
}
