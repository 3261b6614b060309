import type { StoredEvent } from "@chronolog/log";
import { BodyCache } from "../../src/body-cache.js";
import { EventReader, type RawRecord, type RecordSource } from "../../src/event-reader.js";
import { type DecodedAppend, encodeAppend, encodeExpected, encodeRecord } from "../../src/record.js";
import { DEDUPE_WINDOW, type Decision, RecordDecider } from "../../src/record-decider.js";

/** A partition in memory: records by offset, as the brokers would hand them back. */
export class MemoryRecords implements RecordSource {
  readonly records = new Map<bigint, Buffer>();
  reads = 0;

  put(offset: bigint, appends: readonly DecodedAppend[]): void {
    const encoded = appends.map((a) =>
      encodeAppend({
        v: 2,
        id: a.id,
        base: a.base.toString(),
        recordedAt: a.recordedAt,
        writes: a.writes.map((w) => ({
          stream: w.stream,
          expected: encodeExpected(w.expected),
          events: w.events.map(({ data: _data, ...e }) => e),
        })),
      }),
    );
    this.records.set(offset, Buffer.from(encodeRecord(encoded)));
  }

  async read(offset: bigint, maxBytes: number): Promise<RawRecord[]> {
    this.reads += 1;
    const out: RawRecord[] = [];
    let bytes = 0;
    for (const [at, value] of [...this.records].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (at < offset) continue;
      if (out.length > 0 && bytes + value.length > maxBytes) break;
      out.push({ offset: at, value });
      bytes += value.length;
    }
    return out;
  }
}

/**
 * A decider fed records as the follower would, which also keeps each record's bytes, so that
 * its events can be read back as a client reads them from the brokers: `readAll` and
 * `readStream` read every body back from the records (no cache), `cached` reads what the
 * decider kept whole.
 */
export class FedDecider {
  readonly source = new MemoryRecords();
  readonly decider: RecordDecider;
  private readonly reader: EventReader;
  private readonly cachedReader: EventReader;

  constructor(dedupeWindow: number = DEDUPE_WINDOW, cacheEvents = 1_000_000) {
    this.decider = new RecordDecider(dedupeWindow, new BodyCache(cacheEvents));
    this.reader = new EventReader(() => this.decider.index, new BodyCache(0), this.source);
    this.cachedReader = new EventReader(() => this.decider.index, this.decider.cache, this.source);
  }

  decideRecord(offset: bigint, appends: readonly DecodedAppend[]): Decision[] {
    if (!this.decider.has(offset)) this.source.put(offset, appends);
    return this.decider.decideRecord(offset, appends);
  }

  readAll(from: bigint, max: number): Promise<StoredEvent[]> {
    return this.reader.readAll(from, max);
  }

  readStream(stream: string, from: bigint, max: number): Promise<StoredEvent[]> {
    return this.reader.readStream(stream, from, max);
  }

  cached(from: bigint, max: number): Promise<StoredEvent[]> {
    return this.cachedReader.readAll(from, max);
  }

  get eventCount() {
    return this.decider.eventCount;
  }
  get streamCount() {
    return this.decider.streamCount;
  }
  get nextOffset() {
    return this.decider.nextOffset;
  }
  get refused() {
    return this.decider.refused;
  }
  get duplicates() {
    return this.decider.duplicates;
  }
  get lastHash() {
    return this.decider.lastHash;
  }
  revision(stream: string) {
    return this.decider.revision(stream);
  }
  headPosition() {
    return this.decider.headPosition();
  }
  has(offset: bigint) {
    return this.decider.has(offset);
  }
  advanceTo(offset: bigint) {
    this.decider.advanceTo(offset);
  }
}
