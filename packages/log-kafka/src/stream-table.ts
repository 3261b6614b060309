import type { StreamRevision } from "@chronolog/log";
import { type Column, uint32Column } from "./column.js";

/** No position: the first event of a stream has none before it. */
export const NO_POSITION = 0xffff_ffff;
/** Positions are kept in 32 bits: a log holds at most this many events. */
export const MAX_EVENTS = NO_POSITION;
/** Every SKIP-th revision of a long stream is kept aside, so no walk along a stream is longer. */
export const SKIP = 64;

/** What a stream table is made of: what a checkpoint writes and reads back. */
export interface StreamTableParts {
  /** Stream names, in the order the streams began (a stream's id is its index). */
  readonly names: Iterable<string>;
  /** Stream id -> position of its last event. */
  readonly last: Column<Uint32Array>;
  /** Position -> the event's revision in its stream. */
  readonly revision: Column<Uint32Array>;
  /** Position -> the position of the event before it in its stream, or NO_POSITION. */
  readonly previous: Column<Uint32Array>;
}

/**
 * Where each stream's events are, in numbers only: per event its revision and the position of
 * the one before it in its stream (8 bytes), per stream its name and its last event's position.
 * A stream's events are found by walking back from its last one, or for a long stream from the
 * nearest of every SKIP-th revision, which are kept aside. It holds no event bodies.
 */
export class StreamTable {
  private readonly ids = new Map<string, number>();
  private readonly last: Column<Uint32Array>;
  private readonly revisions: Column<Uint32Array>;
  private readonly previous: Column<Uint32Array>;
  /** Stream id -> positions of revisions SKIP, 2 SKIP, ... (streams that long only). */
  private readonly skips = new Map<number, number[]>();

  /** An empty table, or one made from the parts a checkpoint held (see `from`). */
  private constructor(parts?: StreamTableParts) {
    this.last = parts?.last ?? uint32Column();
    this.revisions = parts?.revision ?? uint32Column();
    this.previous = parts?.previous ?? uint32Column();
  }

  static empty(): StreamTable {
    return new StreamTable();
  }

  /** Events in the log. */
  get events(): number {
    return this.revisions.length;
  }

  get size(): number {
    return this.ids.size;
  }

  /** The stream's current revision: its last event's, or "no_stream". */
  revision(name: string): StreamRevision {
    const id = this.ids.get(name);
    return id === undefined ? "no_stream" : BigInt(this.count(id) - 1);
  }

  /** The revision of the event at `position`. */
  revisionAt(position: number): number {
    return this.revisions.get(position);
  }

  private count(id: number): number {
    return this.revisions.get(this.last.get(id)) + 1;
  }

  /** Adds the next event of the log (at position `events`) to the end of its stream; its revision. */
  add(name: string): number {
    const position = this.revisions.length;
    if (position >= MAX_EVENTS) throw new RangeError(`the Kafka log holds at most ${MAX_EVENTS} events`);
    let id = this.ids.get(name);
    let revision = 0;
    if (id === undefined) {
      id = this.ids.size;
      this.ids.set(name, id);
      this.last.push(position);
      this.previous.push(NO_POSITION);
    } else {
      const before = this.last.get(id);
      revision = this.revisions.get(before) + 1;
      this.previous.push(before);
      this.last.set(id, position);
      if (revision % SKIP === 0) this.skip(id, revision, position);
    }
    this.revisions.push(revision);
    return revision;
  }

  private skip(id: number, revision: number, position: number): void {
    let list = this.skips.get(id);
    if (!list) {
      list = [];
      this.skips.set(id, list);
    }
    // (Revision k * SKIP goes at index k - 1: they come in order.)
    if (list.length === revision / SKIP - 1) list.push(position);
  }

  /**
   * The positions of the stream's events from `fromRevision` on, at most `maxCount`, in order,
   * and the revision of the first.
   */
  positions(name: string, fromRevision: number, maxCount: number): { from: number; positions: number[] } {
    const id = this.ids.get(name);
    const from = Math.max(0, fromRevision);
    if (id === undefined || maxCount <= 0) return { from, positions: [] };
    const count = this.count(id);
    const to = Math.min(count, from + maxCount) - 1;
    if (to < from) return { from, positions: [] };
    // Start at the nearest kept event at or after `to`, and walk back to `from`.
    const k = Math.ceil(to / SKIP);
    const list = this.skips.get(id);
    let revision = count - 1;
    let position = this.last.get(id);
    if (k >= 1 && list && k - 1 < list.length) {
      revision = k * SKIP;
      position = list[k - 1] as number;
    }
    while (revision > to) {
      position = this.previous.get(position);
      revision -= 1;
    }
    const out = new Array<number>(to - from + 1);
    for (let r = to; r >= from; r--) {
      out[r - from] = position;
      if (r > from) position = this.previous.get(position);
    }
    return { from, positions: out };
  }

  /** The table's parts as they are now; the caller copies what it must before more is added. */
  parts(): StreamTableParts & { readonly streams: number } {
    return {
      streams: this.ids.size,
      names: this.ids.keys(),
      last: this.last,
      revision: this.revisions,
      previous: this.previous,
    };
  }

  /** A table made from parts a checkpoint held (the skips are found again by walking). */
  static from(parts: StreamTableParts): StreamTable {
    const t = new StreamTable(parts);
    for (const name of parts.names) t.ids.set(name, t.ids.size);
    if (t.ids.size !== t.last.length) throw new RangeError("stream names and last positions differ in count");
    if (t.revisions.length !== t.previous.length)
      throw new RangeError("revisions and previous positions differ in count");
    for (let id = 0; id < t.last.length; id++) {
      const last = t.last.get(id);
      if (last >= t.revisions.length) throw new RangeError(`stream ${id} ends past the last event`);
      const count = t.count(id);
      if (count <= SKIP) continue;
      const list = new Array<number>(Math.floor((count - 1) / SKIP));
      let position = last;
      for (let r = count - 1; r >= SKIP; r--) {
        if (r % SKIP === 0) list[r / SKIP - 1] = position;
        position = t.previous.get(position);
      }
      t.skips.set(id, list);
    }
    return t;
  }
}
