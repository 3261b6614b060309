/**
 * The ids of the last `size` appends decided, each with the offset of its record, oldest first.
 * The order is kept in a ring beside the map, so forgetting the oldest is one step: asking a
 * map for its first entry walks over every entry deleted before it, which after a few hundred
 * thousand appends made each decision cost thousands of steps.
 */
export class DedupeWindow {
  private readonly offsets = new Map<string, bigint>();
  private readonly ring: Array<string | undefined>;
  /** Index in the ring of the oldest id. */
  private head = 0;

  constructor(readonly size: number) {
    if (!(Number.isInteger(size) && size >= 1)) throw new RangeError(`a dedupe window of ${size} appends`);
    this.ring = new Array(size);
  }

  get count(): number {
    return this.offsets.size;
  }

  has(id: string): boolean {
    return this.offsets.has(id);
  }

  /**
   * Remembers `id` (not remembered yet), decided in the record at `offset`; once the window is
   * full, forgets the oldest and returns the offset of its record.
   */
  add(id: string, offset: bigint): bigint | null {
    let forgotten: bigint | null = null;
    const at = (this.head + this.offsets.size) % this.size;
    if (this.offsets.size === this.size) {
      const oldest = this.ring[this.head] as string;
      forgotten = this.offsets.get(oldest) as bigint;
      this.offsets.delete(oldest);
      this.head = (this.head + 1) % this.size;
    }
    this.ring[at] = id;
    this.offsets.set(id, offset);
    return forgotten;
  }

  /** Every id remembered with its record's offset, oldest first. */
  entries(): Array<readonly [string, bigint]> {
    const out: Array<readonly [string, bigint]> = [];
    for (let k = 0; k < this.offsets.size; k++) {
      const id = this.ring[(this.head + k) % this.size] as string;
      out.push([id, this.offsets.get(id) as bigint]);
    }
    return out;
  }
}
