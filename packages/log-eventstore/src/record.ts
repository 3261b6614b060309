import { ChronologError } from "@chronolog/core";
import {
  type AppendResult,
  ChainedEvents,
  type PreparedEvent,
  type PreparedWrite,
  revisionMatches,
  type StreamRevision,
  WrongExpectedRevisionError,
} from "@chronolog/log";

/** The EventStoreDB event type a Chronolog append is stored as, when it holds several events. */
export const APPEND_TYPE = "chronolog.append";

/** One Chronolog append as the data of one EventStoreDB event (JSON). */
export interface AppendRecord {
  readonly v: 1;
  readonly recordedAt: string;
  readonly writes: ReadonlyArray<{
    readonly stream: string;
    /** The revision the stream had before this append: -1 for none. */
    readonly from: string;
    readonly events: ReadonlyArray<{
      readonly type: string;
      /** The event's data, as the exact JSON text the hash covers. */
      readonly data: string;
      readonly schemaVersion: number;
      readonly eventId: string;
      readonly actor: string;
      readonly causationId: string | null;
      readonly correlationId: string | null;
    }>;
  }>;
}

/** An event of the log's EventStoreDB stream that is not a Chronolog append. */
export class ForeignEventError extends ChronologError {
  readonly type = "foreign_record" as const;
  constructor(
    readonly revision: bigint,
    reason: string,
  ) {
    super(`event ${revision} of the log's stream is not a Chronolog append: ${reason}`);
    this.name = "ForeignEventError";
  }
}

/**
 * The EventStoreDB event type for an append: the Chronolog event's own type when it holds
 * one event (so the server's stream browser reads as the task's history), else APPEND_TYPE.
 */
export function recordType(writes: readonly PreparedWrite[]): string {
  const events = writes.flatMap((w) => w.events);
  return events.length === 1 ? (events[0] as PreparedEvent).type : APPEND_TYPE;
}

/**
 * The log as the EventStoreDB stream's events make it: every event of that stream is an
 * append that its writer decided against the stream at the revision just before it (the
 * server's compare-and-set saw to that), so applying them in order gives every client the
 * same positions, revisions and hash chain. It does no I/O.
 */
export class LogState extends ChainedEvents {
  /** How many records (events of the EventStoreDB stream) are applied. */
  private applied = 0n;

  /** The next record's revision in the EventStoreDB stream. */
  get nextRecord(): bigint {
    return this.applied;
  }

  /**
   * Decides an append against this state plus `overlay` (the revisions earlier appends of the
   * same batch will leave): the error of its first mismatch, or null and the overlay updated.
   */
  decide(
    writes: readonly PreparedWrite[],
    overlay: Map<string, StreamRevision>,
  ): WrongExpectedRevisionError | null {
    const local = new Map<string, StreamRevision>();
    for (const w of writes) {
      const actual = local.get(w.streamId) ?? overlay.get(w.streamId) ?? this.revision(w.streamId);
      if (!revisionMatches(w.expected, actual))
        return new WrongExpectedRevisionError(w.streamId, w.expected, actual);
      // (A write of no events, a check, leaves its stream as it is: nothing for the next append.)
      if (w.events.length > 0)
        local.set(w.streamId, (actual === "no_stream" ? -1n : actual) + BigInt(w.events.length));
    }
    for (const [k, v] of local) overlay.set(k, v);
    return null;
  }

  /** The record for an append decided against this state plus `overlay`. */
  encode(
    writes: readonly PreparedWrite[],
    overlay: ReadonlyMap<string, StreamRevision>,
    recordedAt: string,
  ): AppendRecord {
    const at = new Map<string, bigint>();
    return {
      v: 1,
      recordedAt,
      writes: writes.map((w) => {
        const before = at.get(w.streamId) ?? this.nextRevisionOf(w.streamId, overlay);
        at.set(w.streamId, before + BigInt(w.events.length));
        return {
          stream: w.streamId,
          from: String(before - 1n),
          events: w.events.map((e) => ({
            type: e.type,
            data: e.dataJson,
            schemaVersion: e.schemaVersion,
            eventId: e.eventId,
            actor: e.actor,
            causationId: e.causationId,
            correlationId: e.correlationId,
          })),
        };
      }),
    };
  }

  private nextRevisionOf(streamId: string, overlay: ReadonlyMap<string, StreamRevision>): bigint {
    const r = overlay.get(streamId) ?? this.revision(streamId);
    return r === "no_stream" ? 0n : r + 1n;
  }

  /**
   * Applies the record at `revision` of the EventStoreDB stream, if it is the next one.
   * Returns its results, or null for a record applied already. `parsed` gives the data
   * objects of an append this process wrote.
   */
  apply(revision: bigint, record: AppendRecord, parsed?: readonly PreparedWrite[]): AppendResult[] | null {
    if (revision < this.applied) return null;
    if (revision > this.applied)
      throw new Error(`record ${revision} arrived before record ${this.applied}: a gap in the stream`);
    const results: AppendResult[] = [];
    for (const [wi, w] of record.writes.entries()) {
      const at = this.revision(w.stream);
      const current = at === "no_stream" ? -1n : at;
      if (BigInt(w.from) !== current)
        throw new ForeignEventError(
          revision,
          `stream ${w.stream} was at ${current}, the append expected ${w.from}`,
        );
      const events = w.events.map((e, ei) => ({
        ...e,
        dataJson: e.data,
        data: parsed?.[wi]?.events[ei]?.data,
      }));
      const result = this.store(w.stream, events, record.recordedAt);
      if (result) results.push(result);
    }
    this.applied = revision + 1n;
    return results;
  }
}

const isString = (v: unknown): v is string => typeof v === "string";

/** Checks that an EventStoreDB event's data is a Chronolog append record. */
export function decodeRecord(revision: bigint, data: unknown): AppendRecord {
  const r = data as AppendRecord;
  if (typeof r !== "object" || r === null || r.v !== 1 || !isString(r.recordedAt) || !Array.isArray(r.writes))
    throw new ForeignEventError(revision, "not a version 1 append record");
  for (const w of r.writes) {
    if (!isString(w?.stream) || !isString(w.from) || !Array.isArray(w.events))
      throw new ForeignEventError(revision, "a write without stream, from or events");
    for (const e of w.events)
      if (!isString(e?.type) || !isString(e.data) || !isString(e.eventId) || !isString(e.actor))
        throw new ForeignEventError(revision, "an event without type, data, eventId or actor");
  }
  return r;
}
