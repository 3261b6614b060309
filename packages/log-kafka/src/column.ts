/** The typed arrays a column is made of. */
export type ColumnArray = Uint8Array | Uint32Array | Float64Array;

/**
 * A growable array of numbers kept in typed arrays of a fixed size (chunks): one number costs its
 * width and nothing more, growing copies nothing, and at most one chunk is partly unused. Values
 * are only appended and read, or set in place; a value once pushed stays where it is, so the
 * filled part of a chunk can be written out while more are pushed behind it.
 */
export class Column<A extends ColumnArray> {
  private readonly chunks: A[] = [];
  private n = 0;
  private readonly shift: number;
  private readonly mask: number;

  constructor(
    /** Makes an array of this column's kind (a chunk, or a buffer to read one into). */
    readonly make: (length: number) => A,
    /** Values per chunk, a power of two. */
    readonly chunkLength: number = 1 << 16,
  ) {
    this.shift = Math.log2(chunkLength);
    if (!Number.isInteger(this.shift)) throw new RangeError("a column's chunk length is a power of two");
    this.mask = chunkLength - 1;
  }

  get length(): number {
    return this.n;
  }

  push(value: number): void {
    const i = this.n & this.mask;
    if (i === 0) this.chunks.push(this.make(this.chunkLength));
    (this.chunks[this.chunks.length - 1] as A)[i] = value;
    this.n += 1;
  }

  /** Appends every value of `values`. */
  pushAll(values: ArrayLike<number>): void {
    let from = 0;
    while (from < values.length) {
      const i = this.n & this.mask;
      if (i === 0) this.chunks.push(this.make(this.chunkLength));
      const chunk = this.chunks[this.chunks.length - 1] as A;
      const take = Math.min(this.chunkLength - i, values.length - from);
      if (ArrayBuffer.isView(values)) chunk.set((values as A).subarray(from, from + take) as never, i);
      else for (let k = 0; k < take; k++) chunk[i + k] = values[from + k] as number;
      from += take;
      this.n += take;
    }
  }

  get(index: number): number {
    return (this.chunks[index >>> this.shift] as A)[index & this.mask] as number;
  }

  set(index: number, value: number): void {
    (this.chunks[index >>> this.shift] as A)[index & this.mask] = value;
  }

  /** `length` values from `index` on, all in one chunk (the caller keeps to that): no copy. */
  view(index: number, length: number): A {
    const at = index & this.mask;
    return (this.chunks[index >>> this.shift] as A).subarray(at, at + length) as A;
  }

  /** The first `length` values (default all), chunk by chunk, as views: for writing them out. */
  *parts(length: number = this.n): Generator<A> {
    for (let at = 0; at < length; at += this.chunkLength) {
      const chunk = this.chunks[at >>> this.shift] as A;
      yield chunk.subarray(0, Math.min(this.chunkLength, length - at)) as A;
    }
  }

  /** Bytes held, counting the unused end of the last chunk. */
  get bytes(): number {
    return this.chunks.reduce((sum, c) => sum + c.byteLength, 0);
  }
}

export const uint32Column = (chunkLength?: number) =>
  new Column<Uint32Array>((n) => new Uint32Array(n), chunkLength);
export const float64Column = (chunkLength?: number) =>
  new Column<Float64Array>((n) => new Float64Array(n), chunkLength);
export const bytesColumn = (chunkLength?: number) =>
  new Column<Uint8Array>((n) => new Uint8Array(n), chunkLength);
