import type { ExpectedRevision } from "@chronolog/log";

/**
 * One append as one Kafka record's value: JSON, bigints as decimal strings. An append of
 * several streams is one record, so it is in the log whole or not at all. `dataJson` stays a
 * string (not nested JSON) because the hash covers its exact bytes. `v` versions the layout.
 *
 * The record carries what the writer asked for, not what it got: the expected revision of
 * each stream. Every reader decides the compare-and-set the same way, in the partition's
 * order (see KafkaBackend), and assigns revisions, positions and the hash chain.
 */
export interface WireAppend {
  readonly v: 2;
  /** Unique per append; a copy of a record that was sent twice is recognised by it. */
  readonly id: string;
  /** The offset the writer had read up to when it made the record (bounds the dedupe window). */
  readonly base: string;
  readonly recordedAt: string;
  readonly writes: readonly WireWrite[];
}

export interface WireWrite {
  readonly stream: string;
  /** "any" | "no_stream" | "exists" | a decimal revision. */
  readonly expected: string;
  readonly events: readonly WireEvent[];
}

export interface WireEvent {
  readonly eventId: string;
  readonly type: string;
  readonly dataJson: string;
  readonly schemaVersion: number;
  readonly actor: string;
  readonly causationId: string | null;
  readonly correlationId: string | null;
}

export const RECORD_LAYOUT_VERSION = 2;

export function encodeExpected(e: ExpectedRevision): string {
  return typeof e === "bigint" ? e.toString() : e;
}

/** A record in the log's topic that this package did not write, or that was damaged. */
export class ForeignRecordError extends Error {
  constructor(
    readonly offset: string,
    reason: string,
  ) {
    super(`record at offset ${offset} is not a Chronolog append: ${reason}`);
    this.name = "ForeignRecordError";
  }
}

const isString = (x: unknown): x is string => typeof x === "string";
const isNullableString = (x: unknown): x is string | null => x === null || typeof x === "string";
const DECIMAL = /^(0|[1-9][0-9]*)$/;

function decodeExpected(x: unknown): ExpectedRevision | null {
  if (x === "any" || x === "no_stream" || x === "exists") return x;
  if (isString(x) && DECIMAL.test(x)) return BigInt(x);
  return null;
}

export interface DecodedAppend {
  readonly id: string;
  readonly base: bigint;
  readonly recordedAt: string;
  readonly writes: ReadonlyArray<{
    readonly stream: string;
    readonly expected: ExpectedRevision;
    readonly events: readonly WireEvent[];
  }>;
}

function isEvent(e: unknown): e is WireEvent {
  const x = e as Partial<WireEvent> | null;
  return (
    typeof x === "object" &&
    x !== null &&
    isString(x.eventId) &&
    isString(x.type) &&
    isString(x.dataJson) &&
    typeof x.schemaVersion === "number" &&
    isString(x.actor) &&
    isNullableString(x.causationId) &&
    isNullableString(x.correlationId)
  );
}

export function decodeAppend(value: Buffer | null, offset: string): DecodedAppend {
  if (value === null) throw new ForeignRecordError(offset, "no value");
  let w: Partial<WireAppend>;
  try {
    w = JSON.parse(value.toString("utf8")) as Partial<WireAppend>;
  } catch {
    throw new ForeignRecordError(offset, "the value is not JSON");
  }
  if (
    typeof w !== "object" ||
    w === null ||
    w.v !== RECORD_LAYOUT_VERSION ||
    !isString(w.id) ||
    !isString(w.base) ||
    !DECIMAL.test(w.base) ||
    !isString(w.recordedAt) ||
    !Array.isArray(w.writes) ||
    w.writes.length === 0
  ) {
    throw new ForeignRecordError(offset, `unexpected layout (version ${String(w?.v)})`);
  }
  const writes: Array<DecodedAppend["writes"][number]> = [];
  for (const x of w.writes as unknown[]) {
    const write = x as Partial<WireWrite> | null;
    const expected = decodeExpected(write?.expected);
    if (
      typeof write !== "object" ||
      write === null ||
      !isString(write.stream) ||
      expected === null ||
      !Array.isArray(write.events) ||
      write.events.length === 0 ||
      !write.events.every(isEvent)
    ) {
      throw new ForeignRecordError(offset, "a write is malformed");
    }
    writes.push({ stream: write.stream, expected, events: write.events });
  }
  return { id: w.id, base: BigInt(w.base), recordedAt: w.recordedAt, writes };
}
