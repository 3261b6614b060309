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

/** `text` framed as its length (in UTF-16 code units), a colon, then the text itself. */
const frame = (text: string): string => `${text.length}:${text}`;

/**
 * SHA-256 over the previous event's hash and this event's fields. Any change to a stored event,
 * or a deleted or re-ordered one, breaks the chain from that position on.
 *
 * Each field is framed as its length, a colon, then its text (hashed as UTF-8): an unambiguous
 * framing that costs far less than JSON-escaping the event's data a second time. The frames are
 * joined into one string and hashed in one call: the text is encoded to UTF-8 once, where
 * writing each field into a buffer of its own made twelve calls into the runtime per event.
 */
export function chainHash(prevHash: string, e: HashedFields): string {
  return hash(
    "sha256",
    frame(prevHash) +
      frame(e.position.toString()) +
      frame(e.streamId) +
      frame(e.revision.toString()) +
      frame(e.type) +
      frame(String(e.schemaVersion)) +
      frame(e.dataJson) +
      frame(e.eventId) +
      frame(e.actor) +
      frame(e.causationId ?? "\u0000") +
      frame(e.correlationId ?? "\u0000") +
      frame(e.recordedAt),
    "hex",
  );
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
