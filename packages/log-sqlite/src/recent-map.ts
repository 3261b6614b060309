/**
 * A map that keeps about its most recently used `limit` entries, in two generations of up to
 * `limit / 2` each: entries are set in the young one, and one read from the old one moves to the
 * young one; when the young one is full it becomes the old one, and the old one is dropped. Every
 * operation costs a lookup or two, where evicting a map's oldest entry one at a time costs a walk
 * past the holes earlier deletes left at its start.
 */
export class RecentMap<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private readonly half: number;

  constructor(limit: number) {
    this.half = Math.max(1, Math.floor(limit / 2));
  }

  get(key: K): V | undefined {
    const v = this.young.get(key);
    if (v !== undefined) return v;
    const o = this.old.get(key);
    if (o !== undefined) this.set(key, o);
    return o;
  }

  set(key: K, value: V): void {
    if (this.young.size >= this.half && !this.young.has(key)) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }

  clear(): void {
    this.young = new Map();
    this.old = new Map();
  }

  /** Entries held, a key in both generations counted twice (at most `limit`). */
  get size(): number {
    return this.young.size + this.old.size;
  }
}
