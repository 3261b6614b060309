import { hash } from "node:crypto";
import type { PreparedEvent, StoredEvent } from "./types.js";

/** The fields of an event that the chain hash covers, in a fixed order. */
export interface HashedFields {
  readonly position: bigint;
  readonly streamId: string;
  readonly revision: bigint;
  readonly type: string;
  readonly schemaVersion: number;
  readonly dataJson: string;
  readonly eventId: string;
  readonly actor: string;
  readonly causationId: string | null;
  readonly correlationId: string | null;
  readonly recordedAt: string;
}

export const GENESIS_HASH = "";

/** Where chainHash lays out the bytes it hashes; grown when an event needs more. */
let scratch = Buffer.allocUnsafe(16_384);

/** Writes `text` framed as its length (in UTF-16 code units), a colon, then its UTF-8 bytes. */
function frame(text: string, at: number): number {
  const length = text.length;
  if (length < 10) scratch[at++] = 0x30 + length;
  else {
    const digits = String(length);
    for (let i = 0; i < digits.length; i++) scratch[at++] = digits.charCodeAt(i);
  }
  scratch[at++] = 0x3a; // ":"
  return at + scratch.write(text, at);
}

/**
 * SHA-256 over the previous event's hash and this event's fields. Any change to a stored event,
 * or a deleted or re-ordered one, breaks the chain from that position on.
 *
 * Each field is framed as its length, a colon, then its text (UTF-8): an unambiguous framing that
 * costs far less than JSON-escaping the event's data a second time. The frames are written into
 * one buffer kept from call to call, so hashing an event leaves no text of its size behind.
 */
export function chainHash(prevHash: string, e: HashedFields): string {
  const causation = e.causationId ?? "\u0000";
  const correlation = e.correlationId ?? "\u0000";
  // At most three bytes of UTF-8 per UTF-16 code unit of the texts; then 32 bytes for each of the
  // twelve fields, room for its length and colon and for the digits of position, revision, version.
  const most =
    3 *
      (prevHash.length +
        e.streamId.length +
        e.type.length +
        e.dataJson.length +
        e.eventId.length +
        e.actor.length +
        causation.length +
        correlation.length +
        e.recordedAt.length) +
    12 * 32;
  if (most > scratch.length) scratch = Buffer.allocUnsafe(Math.max(most, 2 * scratch.length));
  let at = frame(prevHash, 0);
  at = frame(e.position.toString(), at);
  at = frame(e.streamId, at);
  at = frame(e.revision.toString(), at);
  at = frame(e.type, at);
  at = frame(String(e.schemaVersion), at);
  at = frame(e.dataJson, at);
  at = frame(e.eventId, at);
  at = frame(e.actor, at);
  at = frame(causation, at);
  at = frame(correlation, at);
  at = frame(e.recordedAt, at);
  return hash("sha256", scratch.subarray(0, at), "hex");
}

/** Where an event is stored: what a backend decides for it beside what the writer gave. */
export interface StoredAt {
  readonly streamId: string;
  readonly revision: bigint;
  readonly position: bigint;
  readonly recordedAt: string;
}

/** A prepared event's fields, with its parsed data when the writer still holds it. */
export type PreparedFields = Omit<PreparedEvent, "data"> & { readonly data?: unknown };

/** The chain hash of an event a writer is about to store at `position`. */
export function hashPrepared(prevHash: string, e: PreparedFields, at: StoredAt): string {
  return chainHash(prevHash, {
    position: at.position,
    streamId: at.streamId,
    revision: at.revision,
    type: e.type,
    schemaVersion: e.schemaVersion,
    dataJson: e.dataJson,
    eventId: e.eventId,
    actor: e.actor,
    causationId: e.causationId,
    correlationId: e.correlationId,
    recordedAt: at.recordedAt,
  });
}

/** The chain hash a stored event must carry, given the previous event's. */
export function hashStored(prevHash: string, e: StoredEvent): string {
  return chainHash(prevHash, {
    position: e.position,
    streamId: e.streamId,
    revision: e.revision,
    type: e.type,
    schemaVersion: e.metadata.schemaVersion,
    dataJson: e.dataJson,
    eventId: e.metadata.eventId,
    actor: e.metadata.actor,
    causationId: e.metadata.causationId,
    correlationId: e.metadata.correlationId,
    recordedAt: e.metadata.recordedAt,
  });
}

/** The stored event a backend keeps for `e` at `at`, its hash chained to `prevHash`. */
export function storePrepared(prevHash: string, e: PreparedFields, at: StoredAt): StoredEvent {
  const stored: { -readonly [K in keyof StoredEvent]: StoredEvent[K] } = {
    streamId: at.streamId,
    revision: at.revision,
    position: at.position,
    type: e.type,
    dataJson: e.dataJson,
    metadata: {
      eventId: e.eventId,
      actor: e.actor,
      causationId: e.causationId,
      correlationId: e.correlationId,
      schemaVersion: e.schemaVersion,
      recordedAt: at.recordedAt,
      prevHash,
      hash: hashPrepared(prevHash, e, at),
    },
  };
  if (e.data !== undefined) stored.parsed = e.data;
  return stored;
}
