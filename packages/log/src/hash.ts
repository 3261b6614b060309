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

/**
 * SHA-256 over the previous event's hash and this event's fields. Any change to a stored event,
 * or a deleted or re-ordered one, breaks the chain from that position on.
 */
export function chainHash(prevHash: string, e: HashedFields): string {
  // Each field is written as its length, a colon, then its text: an unambiguous framing that
  // costs far less than JSON-escaping the event's data a second time. One template, not a loop
  // over an array of the fields: an event's hash leaves that much less garbage behind.
  const position = e.position.toString();
  const revision = e.revision.toString();
  const version = String(e.schemaVersion);
  const causation = e.causationId ?? "\u0000";
  const correlation = e.correlationId ?? "\u0000";
  return hash(
    "sha256",
    `${prevHash.length}:${prevHash}${position.length}:${position}${e.streamId.length}:${e.streamId}${revision.length}:${revision}${e.type.length}:${e.type}${version.length}:${version}${e.dataJson.length}:${e.dataJson}${e.eventId.length}:${e.eventId}${e.actor.length}:${e.actor}${causation.length}:${causation}${correlation.length}:${correlation}${e.recordedAt.length}:${e.recordedAt}`,
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
