import { ChronologError } from "@chronolog/core";
import { type StoredEvent, storePrepared } from "@chronolog/log";
import type { BodyCache } from "./body-cache.js";
import type { LogIndex } from "./log-index.js";
import { decodeRecord } from "./record.js";

/** One record as the brokers hold it. */
export interface RawRecord {
  readonly offset: bigint;
  readonly value: Buffer | null;
}

/** Where records are read back from by offset (the brokers; in tests, memory). */
export interface RecordSource {
  /**
   * Records from `offset` on, in offset order: at least the one at `offset` if it exists, and
   * after it as many as about `maxBytes` hold.
   */
  read(offset: bigint, maxBytes: number): Promise<RawRecord[]>;
}

/**
 * A record read back does not make the events the index holds for it: the topic is not the log
 * this client read (it was made anew, or its records were changed in the brokers' files).
 */
export class IndexMismatchError extends ChronologError {
  readonly type = "foreign_record" as const;
  constructor(
    readonly offset: bigint,
    reason: string,
  ) {
    super(`the record at offset ${offset} does not match this client's index of the log: ${reason}`);
    this.name = "IndexMismatchError";
  }
}

/** Bytes asked for when reading one record, and at most when reading on through the log. */
const ONE_BYTES = 64 * 1024;
const MAX_RUN_BYTES = 8 * 1024 * 1024;
/** Records of one stream read at once. */
const PARALLEL = 8;

/**
 * Reads events whose bodies this client no longer holds: it finds their records in the index,
 * reads them back from the brokers by offset and makes their events again exactly as the
 * decider did: the accepted appends' events in order, positions from the record's first,
 * revisions from the index, hashes chained from the hash before the record. The chain must
 * arrive at the hash the index holds after the record, and the positions at the next record's
 * first: a record that does not is refused (IndexMismatchError), never served. The newest
 * events come from the cache.
 */
export class EventReader {
  constructor(
    private readonly index: () => LogIndex,
    private readonly cache: BodyCache,
    private readonly source: RecordSource,
  ) {}

  /** Bytes a record takes per event, as last seen: how much to ask for to read on. */
  private bytesPerEvent = 512;

  /** Up to `maxCount` events of the whole log from `fromPosition` on. */
  async readAll(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]> {
    const head = this.index().eventCount;
    const from = Number(fromPosition < 0n ? 0n : fromPosition);
    if (from >= head || maxCount <= 0) return [];
    const end = Math.min(head, from + maxCount);
    const out: StoredEvent[] = [];
    let p = from;
    while (p < end) {
      const cached = this.cache.get(p);
      if (cached) {
        out.push(cached);
        p += 1;
        continue;
      }
      p = await this.readRun(p, end, out);
    }
    return out;
  }

  /**
   * Reads records from the one holding position `p` on, pushing their events from `p` to at most
   * `end`, until a fetch's worth is used or `end` is reached; the position reached.
   */
  private async readRun(p: number, end: number, out: StoredEvent[]): Promise<number> {
    const index = this.index();
    let i = index.records.find(p);
    // Enough for the events wanted (and the part of the first record before them), no more.
    const want = (end - index.records.first(i)) * this.bytesPerEvent * 1.25;
    const bytes = Math.min(MAX_RUN_BYTES, Math.max(ONE_BYTES, Math.ceil(want)));
    const batch = await this.source.read(index.records.offset(i), bytes);
    const start = p;
    for (const record of batch) {
      if (p >= end || i >= index.records.size) break;
      const want = index.records.offset(i);
      if (record.offset < want) continue;
      // The first record asked for must come back: a source that skips it is not the log.
      if (record.offset > want) throw new IndexMismatchError(want, "the brokers hold no record there");
      for (const e of this.derive(i, record)) {
        const at = Number(e.position);
        if (at >= p && at < end) out.push(e);
      }
      p = Math.min(end, this.endOf(i));
      i += 1;
    }
    if (p === start)
      throw new IndexMismatchError(index.records.offset(i), "the brokers hold no record there");
    return p;
  }

  /** Up to `maxCount` of the stream's events from `fromRevision` on. */
  async readStream(streamId: string, fromRevision: bigint, maxCount: number): Promise<StoredEvent[]> {
    const index = this.index();
    const from = fromRevision < 0n ? 0 : Number(fromRevision);
    const { positions } = index.streams.positions(streamId, from, maxCount);
    const found = new Map<number, StoredEvent>();
    const records = new Set<number>();
    for (const p of positions) {
      const cached = this.cache.get(p);
      if (cached) found.set(p, cached);
      else records.add(index.records.find(p));
    }
    const list = [...records];
    for (let at = 0; at < list.length; at += PARALLEL) {
      const made = await Promise.all(list.slice(at, at + PARALLEL).map((i) => this.recordEvents(i)));
      for (const events of made) for (const e of events) found.set(Number(e.position), e);
    }
    return positions.map((p) => {
      const e = found.get(p);
      if (!e || e.streamId !== streamId)
        throw new IndexMismatchError(
          index.records.offset(index.records.find(p)),
          `position ${p} is not an event of ${streamId}`,
        );
      return e;
    });
  }

  /** The events of the `i`th record of the index, read back from the brokers. */
  async recordEvents(i: number): Promise<StoredEvent[]> {
    const offset = this.index().records.offset(i);
    const [record] = await this.source.read(offset, ONE_BYTES);
    if (!record || record.offset !== offset)
      throw new IndexMismatchError(offset, "the brokers hold no record there");
    return this.derive(i, record);
  }

  /** The position after the `i`th record's last event. */
  private endOf(i: number): number {
    const index = this.index();
    return i + 1 < index.records.size ? index.records.first(i + 1) : index.eventCount;
  }

  /** The events the decider made of the `i`th record, made again from its body. */
  private derive(i: number, record: RawRecord): StoredEvent[] {
    const index = this.index();
    const { records, streams } = index;
    const appends = decodeRecord(record.value, record.offset.toString());
    const accepted = records.accepted(i);
    if (accepted && accepted.length !== appends.length)
      throw new IndexMismatchError(
        record.offset,
        `it holds ${appends.length} appends, the index ${accepted.length}`,
      );
    const end = this.endOf(i);
    if (record.value && end > records.first(i))
      this.bytesPerEvent = record.value.length / (end - records.first(i));
    const out: StoredEvent[] = [];
    let prevHash = records.prevHash(i);
    let position = records.first(i);
    for (const [j, a] of appends.entries()) {
      if (accepted && accepted[j] === 0) continue;
      for (const w of a.writes) {
        for (const e of w.events) {
          if (position >= end)
            throw new IndexMismatchError(
              record.offset,
              `it holds more events than positions ${records.first(i)} to ${end - 1}`,
            );
          const stored = storePrepared(prevHash, e, {
            streamId: w.stream,
            revision: BigInt(streams.revisionAt(position)),
            position: BigInt(position),
            recordedAt: a.recordedAt,
          });
          out.push(stored);
          prevHash = stored.metadata.hash;
          position += 1;
        }
      }
    }
    const after = i + 1 < records.size ? records.prevHash(i + 1) : index.lastHash;
    if (position !== end || prevHash !== after)
      throw new IndexMismatchError(
        record.offset,
        position !== end
          ? `it makes ${position - records.first(i)} events, the index ${end - records.first(i)}`
          : "its events' hashes differ from those the index holds",
      );
    return out;
  }
}
