import {
  type AppendResult,
  GENESIS_HASH,
  type PreparedFields,
  type StoredEvent,
  type StreamRevision,
  storePrepared,
} from "@chronolog/log";
import { RecordTable } from "./record-table.js";
import { StreamTable } from "./stream-table.js";

/** The record being decided: where it began, and which of its appends were accepted. */
interface OpenRecord {
  readonly offset: bigint;
  readonly first: number;
  readonly prevHash: string;
  readonly accepted: boolean[];
}

/**
 * The log as numbers: where each stream's events are (StreamTable), which records hold which
 * positions (RecordTable) and the hash chain's head. Events are stored here as the decider
 * accepts them, record by record; their bodies are handed to the caller and not kept, since
 * the record they came from can be read again and makes the same events (see EventReader).
 */
export class LogIndex {
  private open: OpenRecord | null = null;

  constructor(
    readonly streams: StreamTable = StreamTable.empty(),
    readonly records: RecordTable = RecordTable.empty(),
    private hash: string = GENESIS_HASH,
  ) {}

  /** The hash of the last event (GENESIS_HASH while the log is empty). */
  get lastHash(): string {
    return this.hash;
  }

  get eventCount(): number {
    return this.streams.events;
  }

  get streamCount(): number {
    return this.streams.size;
  }

  revision(streamId: string): StreamRevision {
    return this.streams.revision(streamId);
  }

  /** The position of the last event, or -1n while the log is empty. */
  headPosition(): bigint {
    return BigInt(this.eventCount) - 1n;
  }

  /** The record at `offset` is about to be decided. */
  beginRecord(offset: bigint): void {
    this.open = { offset, first: this.eventCount, prevHash: this.hash, accepted: [] };
  }

  /** Whether the record's next append was accepted (in the order of its appends). */
  decided(accepted: boolean): void {
    this.open?.accepted.push(accepted);
  }

  /** The record is decided: kept if it put any event in the log. */
  endRecord(): void {
    const r = this.open;
    this.open = null;
    if (!r || this.eventCount === r.first) return;
    this.records.add(r.offset, r.first, r.prevHash, r.accepted.every(Boolean) ? undefined : r.accepted);
  }

  /**
   * Stores one write's events at the end of its stream and of the log, each chained to the one
   * before, and hands each stored event to `keep`; the last one's revision and position, or
   * null for a write of no events.
   */
  store(
    streamId: string,
    events: Iterable<PreparedFields>,
    recordedAt: string,
    keep: (e: StoredEvent) => void,
  ): AppendResult | null {
    let last: StoredEvent | undefined;
    for (const e of events) {
      const position = this.eventCount;
      const revision = this.streams.add(streamId);
      const stored = storePrepared(this.hash, e, {
        streamId,
        revision: BigInt(revision),
        position: BigInt(position),
        recordedAt,
      });
      this.hash = stored.metadata.hash;
      keep(stored);
      last = stored;
    }
    return last ? { nextExpectedRevision: last.revision, position: last.position } : null;
  }
}
