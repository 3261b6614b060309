import { ChronologError } from "@chronolog/core";
import type { ExpectedRevision } from "@chronolog/log";

/**
 * One append, as a Kafka record carries it; a record carries the appends of one produce
 * request, each whole (an append of several streams is in the log whole or not at all). The
 * value is a line of JSON (the appends without their events' data: bigints as decimal
 * strings, each event's data length) followed by every event's data JSON, exactly as stored
 * (the hash covers those bytes), one after another: the data is neither escaped into a string
 * nor parsed twice. `v` versions the layout.
 *
 * The record carries what the writer asked for, not what it got: the expected revision of
 * each stream. Every reader decides the compare-and-set the same way, in the partition's
 * order (see RecordDecider), and assigns revisions, positions and the hash chain.
 */
export interface WireAppend {
  /**
   * 2, or 3 for an append that holds checks (writes of no events, after its writes of events: a
   * stream expected at a revision and not written). A client that reads only layout 2 stops at
   * the first layout 3 record, saying so, rather than decide it without its checks, which
   * would make its log differ from the others'.
   */
  readonly v: 2 | 3;
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
  /** On the wire: the data's length, its text follows the JSON line. */
  readonly dataJson: string;
  readonly schemaVersion: number;
  readonly actor: string;
  readonly causationId: string | null;
  readonly correlationId: string | null;
}

/** The layout of an append without checks; one with checks is RECORD_LAYOUT_WITH_CHECKS. */
export const RECORD_LAYOUT_VERSION = 2;
export const RECORD_LAYOUT_WITH_CHECKS = 3;

export function encodeExpected(e: ExpectedRevision): string {
  return typeof e === "bigint" ? e.toString() : e;
}

/**
 * One append made ready for the wire: its head (the append without its events' data, with
 * each event's data length) as JSON, and its events' data one after another. Made once, so an
 * append sent again is the same append.
 */
export interface EncodedAppend {
  readonly head: string;
  readonly data: string;
}

export function encodeAppend(a: WireAppend): EncodedAppend {
  let data = "";
  const head = {
    ...a,
    writes: a.writes.map((w) => ({
      ...w,
      events: w.events.map(({ dataJson, ...e }) => {
        data += dataJson;
        return { ...e, length: dataJson.length };
      }),
    })),
  };
  return { head: JSON.stringify(head), data };
}

/**
 * The value of a record holding `appends`, in order: a line of JSON `[head, head, ...]`, then
 * their data, in the same order. (JSON.stringify escapes every line break, so the first
 * "\n" ends the line.)
 */
export function encodeRecord(appends: readonly EncodedAppend[]): string {
  let heads = "";
  let data = "";
  for (const a of appends) {
    heads += heads === "" ? a.head : `,${a.head}`;
    data += a.data;
  }
  return `[${heads}]\n${data}`;
}

/** A record in the log's topic that this package did not write, or that was damaged. */
export class ForeignRecordError extends ChronologError {
  readonly type = "foreign_record" as const;
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
    /** With `data` when the append is this client's own, still in memory. */
    readonly events: ReadonlyArray<WireEvent & { readonly data?: unknown }>;
  }>;
}

function isEvent(e: unknown): e is Omit<WireEvent, "dataJson"> & { length: number } {
  const x = e as (Partial<WireEvent> & { length?: unknown }) | null;
  return (
    typeof x === "object" &&
    x !== null &&
    isString(x.eventId) &&
    isString(x.type) &&
    typeof x.length === "number" &&
    Number.isInteger(x.length) &&
    x.length >= 0 &&
    typeof x.schemaVersion === "number" &&
    isString(x.actor) &&
    isNullableString(x.causationId) &&
    isNullableString(x.correlationId)
  );
}

/** The appends of one record, in order. */
export function decodeRecord(value: Buffer | null, offset: string): DecodedAppend[] {
  if (value === null) throw new ForeignRecordError(offset, "no value");
  const text = value.toString("utf8");
  const newline = text.indexOf("\n");
  let heads: unknown;
  try {
    heads = JSON.parse(newline < 0 ? text : text.slice(0, newline));
  } catch {
    throw new ForeignRecordError(offset, "the value does not start with a line of JSON");
  }
  if (!Array.isArray(heads)) {
    const v = (heads as { v?: unknown } | null)?.v;
    throw new ForeignRecordError(
      offset,
      v === 1
        ? "written in layout 1, by the earlier single-writer Kafka log, which this version does not read"
        : `unexpected layout (version ${String(v)})`,
    );
  }
  if (heads.length === 0) throw new ForeignRecordError(offset, "a record without appends");
  const at = { i: newline + 1 };
  const appends = heads.map((h) => decodeHead(h, text, newline, at, offset));
  if (newline >= 0 && at.i !== text.length) throw new ForeignRecordError(offset, "data after the last event");
  return appends;
}

function decodeHead(
  head: unknown,
  text: string,
  newline: number,
  at: { i: number },
  offset: string,
): DecodedAppend {
  const w = head as Partial<WireAppend> | null;
  if (
    typeof w !== "object" ||
    w === null ||
    (w.v !== RECORD_LAYOUT_VERSION && w.v !== RECORD_LAYOUT_WITH_CHECKS) ||
    !isString(w.id) ||
    !isString(w.base) ||
    !DECIMAL.test(w.base) ||
    !isString(w.recordedAt) ||
    !Array.isArray(w.writes) ||
    w.writes.length === 0
  ) {
    const v = w?.v;
    throw new ForeignRecordError(
      offset,
      typeof v === "number" && Number.isInteger(v) && v > RECORD_LAYOUT_WITH_CHECKS
        ? `written in layout ${v} by a newer Chronolog, which this version (layouts 2 and 3) does not read: upgrade this client`
        : `unexpected layout (version ${String(v)})`,
    );
  }
  const writes: Array<DecodedAppend["writes"][number]> = [];
  // Layout 3: checks (writes of no events) after the writes of events, of which there is one at least.
  let checks = false;
  for (const x of w.writes as unknown[]) {
    const write = x as Partial<WireWrite> | null;
    const expected = decodeExpected(write?.expected);
    if (
      typeof write !== "object" ||
      write === null ||
      !isString(write.stream) ||
      expected === null ||
      !Array.isArray(write.events) ||
      (write.events.length === 0 && (w.v !== RECORD_LAYOUT_WITH_CHECKS || writes.length === 0)) ||
      (write.events.length > 0 && checks) ||
      !(write.events as unknown[]).every(isEvent)
    ) {
      throw new ForeignRecordError(offset, "a write is malformed");
    }
    if (write.events.length === 0) checks = true;
    const events: WireEvent[] = [];
    for (const { length, ...e } of write.events as unknown as Array<
      Omit<WireEvent, "dataJson"> & { length: number }
    >) {
      if (newline < 0 || at.i + length > text.length)
        throw new ForeignRecordError(offset, "an event's data is cut short");
      events.push({ ...e, dataJson: text.slice(at.i, at.i + length) });
      at.i += length;
    }
    writes.push({ stream: write.stream, expected, events });
  }
  return { id: w.id, base: BigInt(w.base), recordedAt: w.recordedAt, writes };
}
