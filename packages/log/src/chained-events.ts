import { GENESIS_HASH, type PreparedFields, storePrepared } from "./hash.js";
import type { AppendResult, StoredEvent, StreamRevision } from "./types.js";

/**
 * A log held in memory: every event by position and by stream, and the hash chain over them.
 * It is what a backend keeps that decides its records in every client (Kafka, EventStoreDB):
 * given the same writes in the same order, every copy holds the same positions, revisions and
 * hashes. Positions and revisions are dense from 0. It does no I/O.
 */
export class ChainedEvents {
  /** Every event, index = position. */
  private readonly events: StoredEvent[] = [];
  /** Each stream's events, index = revision. */
  private readonly streams = new Map<string, StoredEvent[]>();
  private hash = GENESIS_HASH;

  /** The hash of the last event (GENESIS_HASH while the log is empty). */
  get lastHash(): string {
    return this.hash;
  }

  get eventCount(): number {
    return this.events.length;
  }

  get streamCount(): number {
    return this.streams.size;
  }

  /** The stream's current revision: its last event's, or "no_stream". */
  revision(streamId: string): StreamRevision {
    const n = this.streams.get(streamId)?.length ?? 0;
    return n === 0 ? "no_stream" : BigInt(n - 1);
  }

  /**
   * Stores one write's events at the end of its stream and of the log, each chained to the one
   * before; the last one's revision and position, or null for a write of no events.
   */
  protected store(
    streamId: string,
    events: Iterable<PreparedFields>,
    recordedAt: string,
  ): AppendResult | null {
    let stream = this.streams.get(streamId);
    let last: StoredEvent | undefined;
    for (const e of events) {
      // (Made on its first event: a write of none, a check, makes no stream.)
      if (!stream) {
        stream = [];
        this.streams.set(streamId, stream);
      }
      const stored = storePrepared(this.hash, e, {
        streamId,
        revision: BigInt(stream.length),
        position: BigInt(this.events.length),
        recordedAt,
      });
      this.events.push(stored);
      stream.push(stored);
      this.hash = stored.metadata.hash;
      last = stored;
    }
    return last ? { nextExpectedRevision: last.revision, position: last.position } : null;
  }

  /** Up to `maxCount` of the stream's events from `fromRevision` on. */
  readStream(streamId: string, fromRevision: bigint, maxCount: number): StoredEvent[] {
    const stream = this.streams.get(streamId);
    if (!stream || fromRevision >= BigInt(stream.length)) return [];
    const from = Number(fromRevision < 0n ? 0n : fromRevision);
    return stream.slice(from, from + maxCount);
  }

  /** Up to `maxCount` events of the whole log from `fromPosition` on. */
  readAll(fromPosition: bigint, maxCount: number): StoredEvent[] {
    if (fromPosition >= BigInt(this.events.length)) return [];
    const from = Number(fromPosition < 0n ? 0n : fromPosition);
    return this.events.slice(from, from + maxCount);
  }

  /** The position of the last event, or -1n while the log is empty. */
  headPosition(): bigint {
    return BigInt(this.events.length) - 1n;
  }
}
