import type { StoredEvent } from "@chronolog/log";

/**
 * One event as a Kafka record's value: JSON, bigints as decimal strings. `dataJson` stays a
 * string (not nested JSON) because the hash covers its exact bytes. `v` versions the layout.
 */
interface WireEvent {
  readonly v: 1;
  readonly streamId: string;
  readonly revision: string;
  readonly position: string;
  readonly type: string;
  readonly dataJson: string;
  readonly metadata: {
    readonly eventId: string;
    readonly actor: string;
    readonly causationId: string | null;
    readonly correlationId: string | null;
    readonly schemaVersion: number;
    readonly recordedAt: string;
    readonly prevHash: string;
    readonly hash: string;
  };
}

export const RECORD_LAYOUT_VERSION = 1;

export function encodeEvent(e: StoredEvent): string {
  const m = e.metadata;
  const wire: WireEvent = {
    v: 1,
    streamId: e.streamId,
    revision: e.revision.toString(),
    position: e.position.toString(),
    type: e.type,
    dataJson: e.dataJson,
    metadata: {
      eventId: m.eventId,
      actor: m.actor,
      causationId: m.causationId,
      correlationId: m.correlationId,
      schemaVersion: m.schemaVersion,
      recordedAt: m.recordedAt,
      prevHash: m.prevHash,
      hash: m.hash,
    },
  };
  return JSON.stringify(wire);
}

/** A record in the log's topic that this package did not write, or that was damaged. */
export class ForeignRecordError extends Error {
  constructor(
    readonly offset: string,
    reason: string,
  ) {
    super(`record at offset ${offset} is not a Chronolog event: ${reason}`);
    this.name = "ForeignRecordError";
  }
}

const isString = (x: unknown): x is string => typeof x === "string";
const isNullableString = (x: unknown): x is string | null => x === null || typeof x === "string";
const DECIMAL = /^(0|[1-9][0-9]*)$/;

export function decodeEvent(value: Buffer | null, offset: string): StoredEvent {
  if (value === null) throw new ForeignRecordError(offset, "no value");
  let w: Partial<WireEvent>;
  try {
    w = JSON.parse(value.toString("utf8")) as Partial<WireEvent>;
  } catch {
    throw new ForeignRecordError(offset, "the value is not JSON");
  }
  const m = w.metadata;
  if (
    typeof w !== "object" ||
    w === null ||
    w.v !== RECORD_LAYOUT_VERSION ||
    !isString(w.streamId) ||
    !isString(w.revision) ||
    !DECIMAL.test(w.revision) ||
    !isString(w.position) ||
    !DECIMAL.test(w.position) ||
    !isString(w.type) ||
    !isString(w.dataJson) ||
    typeof m !== "object" ||
    m === null ||
    !isString(m.eventId) ||
    !isString(m.actor) ||
    !isNullableString(m.causationId) ||
    !isNullableString(m.correlationId) ||
    typeof m.schemaVersion !== "number" ||
    !isString(m.recordedAt) ||
    !isString(m.prevHash) ||
    !isString(m.hash)
  ) {
    throw new ForeignRecordError(offset, `unexpected layout (version ${String(w?.v)})`);
  }
  return {
    streamId: w.streamId,
    revision: BigInt(w.revision),
    position: BigInt(w.position),
    type: w.type,
    dataJson: w.dataJson,
    metadata: {
      eventId: m.eventId,
      actor: m.actor,
      causationId: m.causationId,
      correlationId: m.correlationId,
      schemaVersion: m.schemaVersion,
      recordedAt: m.recordedAt,
      prevHash: m.prevHash,
      hash: m.hash,
    },
  };
}
