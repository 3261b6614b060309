/**
 * Wakes keys at given times with one timer: a min-heap keyed on time. Re-adding a key keeps
 * its earliest wake-up. A blocked or not-yet-due task costs one heap entry, nothing per tick.
 *
 * Held for every task (the agenda's next wake-up of each), so kept small: the heap is two
 * parallel arrays (keys, and times as numbers stored unboxed), not an object per entry, and the
 * times are kept as milliseconds from when the queue was made, small integers V8 stores in
 * place, where an epoch time in a map or an object's field is a boxed number of its own.
 */
export class TimerQueue {
  /** The heap: a key and its time at the same index. */
  private keys: string[] = [];
  private ats: number[] = [];
  /** key -> its earliest wake-up, from `base`. */
  private readonly due = new Map<string, number>();
  private readonly base: number;
  private timer: NodeJS.Timeout | null = null;
  private armedAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly onDue: (keys: string[]) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.base = this.now();
  }

  wakeAt(key: string, when: number): void {
    const at = when - this.base;
    const existing = this.due.get(key);
    if (existing !== undefined && existing <= at) return;
    this.due.set(key, at);
    this.push(key, at);
    if (at < this.armedAt) this.arm();
  }

  get size(): number {
    return this.due.size;
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.armedAt = Number.POSITIVE_INFINITY;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.keys.length === 0) {
      this.timer = null;
      this.armedAt = Number.POSITIVE_INFINITY;
      return;
    }
    const top = this.ats[0] as number;
    this.armedAt = top;
    // setTimeout takes at most 2^31-1 ms; a later wake-up re-arms on the way.
    const delay = Math.min(Math.max(0, top + this.base - this.now()), 2_147_000_000);
    this.timer = setTimeout(() => this.fire(), delay);
  }

  private fire(): void {
    this.timer = null;
    this.armedAt = Number.POSITIVE_INFINITY;
    const now = this.now() - this.base;
    const keys: string[] = [];
    while (this.keys.length > 0 && (this.ats[0] as number) <= now) {
      const at = this.ats[0] as number;
      const key = this.pop();
      if (this.due.get(key) === at) {
        this.due.delete(key);
        keys.push(key);
      }
    }
    this.arm();
    if (keys.length > 0) this.onDue(keys);
  }

  private push(key: string, at: number): void {
    const { keys, ats } = this;
    let i = keys.length;
    keys.push(key);
    ats.push(at);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((ats[parent] as number) <= at) break;
      keys[i] = keys[parent] as string;
      ats[i] = ats[parent] as number;
      i = parent;
    }
    keys[i] = key;
    ats[i] = at;
  }

  /** Takes the earliest entry off the heap: its key. */
  private pop(): string {
    const { keys, ats } = this;
    const top = keys[0] as string;
    const lastKey = keys.pop() as string;
    const lastAt = ats.pop() as number;
    const n = keys.length;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const m = r < n && (ats[r] as number) < (ats[l] as number) ? r : l;
      if ((ats[m] as number) >= lastAt) break;
      keys[i] = keys[m] as string;
      ats[i] = ats[m] as number;
      i = m;
    }
    keys[i] = lastKey;
    ats[i] = lastAt;
    return top;
  }
}
