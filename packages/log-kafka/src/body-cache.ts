import type { StoredEvent } from "@chronolog/log";

/** Events kept whole by default: the newest, which a following subscription reads next. */
export const DEFAULT_CACHE_EVENTS = 20_000;

/**
 * The newest events, whole, up to `capacity` of them: a ring indexed by position. A scheduler's
 * subscription reads what was just appended, and finds it here rather than at the brokers.
 * Older events are read back from the brokers.
 */
export class BodyCache {
  private readonly ring: Array<StoredEvent | undefined>;

  constructor(readonly capacity: number = DEFAULT_CACHE_EVENTS) {
    if (!(Number.isInteger(capacity) && capacity >= 0))
      throw new RangeError(`the event cache holds a whole number of events, not ${capacity}`);
    this.ring = new Array(capacity);
  }

  put(event: StoredEvent): void {
    if (this.capacity === 0) return;
    this.ring[Number(event.position % BigInt(this.capacity))] = event;
  }

  /** The event at `position` if it is still here. */
  get(position: number): StoredEvent | undefined {
    if (this.capacity === 0) return undefined;
    const e = this.ring[position % this.capacity];
    return e !== undefined && Number(e.position) === position ? e : undefined;
  }
}
