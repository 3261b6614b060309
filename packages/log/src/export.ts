import { readFileSync } from "node:fs";
import { LogReadOnlyError } from "./errors.js";
import { GENESIS_HASH, hashStored } from "./hash.js";
import type {
  AppendResult,
  LogBackend,
  PreparedEvent,
  PreparedWrite,
  StoredEvent,
  StreamRevision,
} from "./types.js";

/**
 * An export: the log's stored events, one JSON object a line, each line ended by "\n". A line
 * has exactly these keys, in this order, and nothing else (no spaces, JSON.stringify's escapes):
 *
 *   {"position":"P","streamId":S,"revision":"R","type":T,"dataJson":D,
 *    "metadata":{"eventId":..,"actor":..,"causationId":..,"correlationId":..,
 *                "schemaVersion":N,"recordedAt":..,"prevHash":..,"hash":..}}
 *
 * Positions and revisions are decimal strings; `dataJson` is the data's JSON text exactly as
 * stored, as a JSON string, so the hash recomputes over the same characters. An export is a
 * pure function of the stored events: the same events always give the same bytes, and a line
 * that is not in this form (even one that parses to the same event) is refused.
 */
export function exportLine(e: StoredEvent): string {
  const m = e.metadata;
  return `${JSON.stringify({
    position: e.position.toString(),
    streamId: e.streamId,
    revision: e.revision.toString(),
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
  })}\n`;
}

/** A line of an export that is not one event in the export's form. */
export class ExportLineError extends Error {
  constructor(
    /** From 1. */
    readonly line: number,
    readonly reason: string,
  ) {
    super(`line ${line}: ${reason}`);
    this.name = "ExportLineError";
  }
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;
const HASH = /^([0-9a-f]{64})?$/;
const isString = (x: unknown): x is string => typeof x === "string";
const isNullableString = (x: unknown): x is string | null => x === null || typeof x === "string";

/** One line of an export (without its "\n") as the stored event it holds, or an ExportLineError. */
export function parseExportLine(text: string, line: number): StoredEvent {
  let x: Record<string, unknown>;
  try {
    x = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new ExportLineError(line, "not JSON");
  }
  const m = (typeof x === "object" && x !== null ? x.metadata : null) as Record<string, unknown> | null;
  if (
    typeof x !== "object" ||
    x === null ||
    !isString(x.position) ||
    !DECIMAL.test(x.position) ||
    !isString(x.streamId) ||
    !isString(x.revision) ||
    !DECIMAL.test(x.revision) ||
    !isString(x.type) ||
    !isString(x.dataJson) ||
    typeof m !== "object" ||
    m === null ||
    !isString(m.eventId) ||
    !isString(m.actor) ||
    !isNullableString(m.causationId) ||
    !isNullableString(m.correlationId) ||
    typeof m.schemaVersion !== "number" ||
    !isString(m.recordedAt) ||
    !isString(m.prevHash) ||
    !HASH.test(m.prevHash) ||
    !isString(m.hash) ||
    !HASH.test(m.hash)
  ) {
    throw new ExportLineError(line, "not an exported event (a field is missing or of the wrong kind)");
  }
  const event: StoredEvent = {
    streamId: x.streamId,
    revision: BigInt(x.revision),
    position: BigInt(x.position),
    type: x.type,
    dataJson: x.dataJson,
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
  // Only the canonical form: a line with other keys, another order or other spacing is refused.
  if (exportLine(event) !== `${text}\n`)
    throw new ExportLineError(line, `position ${x.position}: not in the export's canonical form`);
  return event;
}

/** The lines of an export's text, each with its number; an unended last line is one too. */
function* linesOf(text: string): Generator<{ text: string; line: number; ended: boolean }> {
  let at = 0;
  let line = 1;
  while (at < text.length) {
    const end = text.indexOf("\n", at);
    if (end < 0) {
      yield { text: text.slice(at), line, ended: false };
      return;
    }
    yield { text: text.slice(at, end), line, ended: true };
    at = end + 1;
    line += 1;
  }
}

/** Where an export's chain first does not hold: its line, and the position when known. */
export interface ExportBreak {
  readonly line: number;
  readonly position: bigint | null;
  readonly reason: string;
}

export interface ExportVerifyResult {
  readonly checked: number;
  /** The first event's position (null for an empty export). */
  readonly firstPosition: bigint | null;
  /** The hash the chain starts from: GENESIS_HASH at the log's start, else the first event's prevHash. */
  readonly startHash: string;
  /** The last event verified, and its hash (-1n and GENESIS_HASH when none). */
  readonly headPosition: bigint;
  readonly headHash: string;
  readonly break: ExportBreak | null;
}

/**
 * Verifies an export by itself: every line in the export's form, positions dense, each event's
 * prevHash the hash of the line before, and each hash recomputed from the event. The chain
 * starts at the first event's prevHash: at the log's start that is GENESIS_HASH; an export
 * from a later position can only say that its events hold together, from that hash on.
 */
export function verifyExportText(text: string): { result: ExportVerifyResult; events: StoredEvent[] } {
  const events: StoredEvent[] = [];
  let prev: string | null = null;
  let last: StoredEvent | null = null;
  const result = (brk: ExportBreak | null): { result: ExportVerifyResult; events: StoredEvent[] } => ({
    result: {
      checked: events.length,
      firstPosition: events[0]?.position ?? null,
      startHash: events[0]?.metadata.prevHash ?? GENESIS_HASH,
      headPosition: last?.position ?? -1n,
      headHash: last?.metadata.hash ?? GENESIS_HASH,
      break: brk,
    },
    events,
  });
  for (const l of linesOf(text)) {
    const expected = last ? last.position + 1n : null;
    let e: StoredEvent;
    try {
      e = parseExportLine(l.text, l.line);
    } catch (error) {
      const reason = error instanceof ExportLineError ? error.reason : String(error);
      // The position the line should hold; on the first line, the one it seems to name.
      const named = /^\{"position":"(0|[1-9][0-9]*)"/.exec(l.text)?.[1];
      return result({ line: l.line, position: expected ?? (named ? BigInt(named) : null), reason });
    }
    const brk = (reason: string) => result({ line: l.line, position: e.position, reason });
    if (!l.ended) return brk("the line is not ended (the export is cut short)");
    if (expected !== null && e.position !== expected)
      return brk(`positions are not dense: expected position ${expected}`);
    if (prev !== null && e.metadata.prevHash !== prev)
      return brk("prev_hash does not match the previous event's hash");
    if (hashStored(e.metadata.prevHash, e) !== e.metadata.hash)
      return brk("the event's content does not match its hash");
    events.push(e);
    prev = e.metadata.hash;
    last = e;
  }
  return result(null);
}

/** The events of an export, or an ExportLineError naming the first line not in its form. */
export function parseExport(text: string): StoredEvent[] {
  const events: StoredEvent[] = [];
  for (const l of linesOf(text)) {
    const e = parseExportLine(l.text, l.line);
    if (!l.ended) throw new ExportLineError(l.line, "the line is not ended (the export is cut short)");
    const prev = events.at(-1);
    if (prev && e.position !== prev.position + 1n)
      throw new ExportLineError(l.line, `position ${e.position}: expected position ${prev.position + 1n}`);
    events.push(e);
  }
  return events;
}

/**
 * A log read from an export, read-only: what it holds is what the export holds, nothing is
 * ever appended, and no one else writes to it (`watch` never calls back).
 */
export class ExportBackend implements LogBackend {
  readonly name = "export";
  private readonly first: bigint;
  private readonly streams = new Map<string, StoredEvent[]>();

  constructor(
    readonly events: readonly StoredEvent[],
    /** How errors name it, e.g. `the export audit.jsonl`. */
    readonly where = "the export",
  ) {
    this.first = events[0]?.position ?? 0n;
    for (let i = 0; i < events.length; i++) {
      const e = events[i] as StoredEvent;
      if (e.position !== this.first + BigInt(i))
        throw new Error(`${where}: positions are not dense at position ${e.position}`);
      let stream = this.streams.get(e.streamId);
      if (!stream) {
        stream = [];
        this.streams.set(e.streamId, stream);
      }
      stream.push(e);
    }
  }

  /** Reads and parses an export file (an ExportLineError names the first bad line). */
  static fromFile(path: string): ExportBackend {
    return new ExportBackend(parseExport(readFileSync(path, "utf8")), `the export ${path}`);
  }

  async append(_s: string, _e: readonly PreparedEvent[]): Promise<AppendResult> {
    throw new LogReadOnlyError(this.where);
  }

  async appendMany(_w: readonly PreparedWrite[]): Promise<AppendResult[]> {
    throw new LogReadOnlyError(this.where);
  }

  async readStream(streamId: string, fromRevision: bigint, maxCount: number): Promise<StoredEvent[]> {
    const stream = this.streams.get(streamId) ?? [];
    // A stream's revisions in an export from a later position may not start at 0.
    const start = stream.findIndex((e) => e.revision >= fromRevision);
    if (start < 0) return [];
    return stream.slice(start, start + Math.max(0, maxCount));
  }

  async readAll(fromPosition: bigint, maxCount: number): Promise<StoredEvent[]> {
    const start = fromPosition <= this.first ? 0 : Number(fromPosition - this.first);
    return this.events.slice(start, start + Math.max(0, maxCount));
  }

  async streamRevision(streamId: string): Promise<StreamRevision> {
    return this.streams.get(streamId)?.at(-1)?.revision ?? "no_stream";
  }

  async headPosition(): Promise<bigint> {
    return this.events.at(-1)?.position ?? -1n;
  }

  watch(_listener: () => void): () => void {
    return () => {};
  }

  async close(): Promise<void> {}
}
