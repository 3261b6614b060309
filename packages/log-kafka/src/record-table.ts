import { bytesColumn, type Column, float64Column } from "./column.js";

/** Bytes of a SHA-256 hash. */
export const HASH_BYTES = 32;

/** What a record table is made of: what a checkpoint writes and reads back. */
export interface RecordTableParts {
  /** Record -> its Kafka offset. */
  readonly offset: Column<Float64Array>;
  /** Record -> the position of its first event. */
  readonly first: Column<Float64Array>;
  /** Record -> the hash of the event before its first (32 bytes each; empty for the genesis). */
  readonly prevHash: Column<Uint8Array>;
  /** Record -> which of its appends were accepted, for records where not all were. */
  readonly accepted: ReadonlyMap<number, Uint8Array>;
}

const GENESIS_BYTES = new Uint8Array(HASH_BYTES);

/**
 * The records that put events in the log, in offset order: per record its Kafka offset, the
 * position of its first event and the hash before it (48 bytes), and, for the rare record some
 * of whose appends were refused or copies, which ones were accepted. A record none of whose
 * appends was accepted is not kept: it holds no event. That is what it takes to read a record
 * back from the brokers and make exactly the events the decider made of it: the positions
 * follow from the first, the hashes from the one before.
 */
export class RecordTable {
  private readonly offsets: Column<Float64Array>;
  private readonly firsts: Column<Float64Array>;
  private readonly hashes: Column<Uint8Array>;
  private readonly masks: Map<number, Uint8Array>;

  private constructor(parts?: RecordTableParts) {
    this.offsets = parts?.offset ?? float64Column(1 << 14);
    this.firsts = parts?.first ?? float64Column(1 << 14);
    this.hashes = parts?.prevHash ?? bytesColumn(HASH_BYTES << 12);
    this.masks = new Map(parts?.accepted ?? []);
  }

  static empty(): RecordTable {
    return new RecordTable();
  }

  /** A table made from the parts a checkpoint held. */
  static from(parts: RecordTableParts): RecordTable {
    const t = new RecordTable(parts);
    if (t.firsts.length !== t.offsets.length || t.hashes.length !== t.offsets.length * HASH_BYTES)
      throw new RangeError("record offsets, first positions and hashes differ in count");
    for (let i = 1; i < t.offsets.length; i++) {
      if (!(t.offsets.get(i) > t.offsets.get(i - 1) && t.firsts.get(i) > t.firsts.get(i - 1)))
        throw new RangeError(`record ${i} is not after record ${i - 1}`);
    }
    return t;
  }

  get size(): number {
    return this.offsets.length;
  }

  /** Adds a record that put events in the log; `accepted` only if some append was not. */
  add(offset: bigint, first: number, prevHash: string, accepted?: readonly boolean[]): void {
    const i = this.offsets.length;
    this.offsets.push(Number(offset));
    this.firsts.push(first);
    this.hashes.pushAll(prevHash === "" ? GENESIS_BYTES : Buffer.from(prevHash, "hex"));
    if (accepted)
      this.masks.set(
        i,
        Uint8Array.from(accepted, (a) => (a ? 1 : 0)),
      );
  }

  offset(i: number): bigint {
    return BigInt(this.offsets.get(i));
  }

  first(i: number): number {
    return this.firsts.get(i);
  }

  /** The hash before the record's first event ("" before the log's first). */
  prevHash(i: number): string {
    if (this.firsts.get(i) === 0) return "";
    return Buffer.from(this.hashes.view(i * HASH_BYTES, HASH_BYTES)).toString("hex");
  }

  /** Which of the record's appends were accepted, or null if all of them were. */
  accepted(i: number): Uint8Array | null {
    return this.masks.get(i) ?? null;
  }

  /** The record holding the event at `position` (the caller knows the log holds it). */
  find(position: number): number {
    let lo = 0;
    let hi = this.offsets.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.firsts.get(mid) <= position) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** The table's parts as they are now (values never change once added). */
  parts(): RecordTableParts & { readonly records: number } {
    return {
      records: this.offsets.length,
      offset: this.offsets,
      first: this.firsts,
      prevHash: this.hashes,
      accepted: this.masks,
    };
  }
}
