/**
 * Wakes keys at given times with one timer: a min-heap keyed on time. Re-adding a key keeps
 * its earliest wake-up. A blocked or not-yet-due task costs one heap entry, nothing per tick.
 */
export class TimerQueue {
  private heap: Array<{ at: number; key: string }> = [];
  private readonly due = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private armedAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly onDue: (keys: string[]) => void,
    private readonly now: () => number = Date.now,
  ) {}

  wakeAt(key: string, at: number): void {
    const existing = this.due.get(key);
    if (existing !== undefined && existing <= at) return;
    this.due.set(key, at);
    this.push({ at, key });
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
    const top = this.heap[0];
    if (!top) {
      this.timer = null;
      this.armedAt = Number.POSITIVE_INFINITY;
      return;
    }
    this.armedAt = top.at;
    // setTimeout takes at most 2^31-1 ms; a later wake-up re-arms on the way.
    const delay = Math.min(Math.max(0, top.at - this.now()), 2_147_000_000);
    this.timer = setTimeout(() => this.fire(), delay);
  }

  private fire(): void {
    this.timer = null;
    this.armedAt = Number.POSITIVE_INFINITY;
    const now = this.now();
    const keys: string[] = [];
    while (this.heap.length > 0 && (this.heap[0] as { at: number }).at <= now) {
      const top = this.pop() as { at: number; key: string };
      if (this.due.get(top.key) === top.at) {
        this.due.delete(top.key);
        keys.push(top.key);
      }
    }
    this.arm();
    if (keys.length > 0) this.onDue(keys);
  }

  private push(item: { at: number; key: string }): void {
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((h[parent] as { at: number }).at <= item.at) break;
      h[i] = h[parent] as { at: number; key: string };
      i = parent;
    }
    h[i] = item;
  }

  private pop(): { at: number; key: string } | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length === 0 || !last) return top;
    h[0] = last;
    let i = 0;
    const at = (k: number) => (h[k] as { at: number }).at;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && at(l) < at(m)) m = l;
      if (r < h.length && at(r) < at(m)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m] as { at: number; key: string }, h[i] as { at: number; key: string }];
      i = m;
    }
    return top;
  }
}
