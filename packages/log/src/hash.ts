import { createHash } from "node:crypto";

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
  return createHash("sha256")
    .update(
      JSON.stringify([
        prevHash,
        e.position.toString(),
        e.streamId,
        e.revision.toString(),
        e.type,
        e.schemaVersion,
        e.dataJson,
        e.eventId,
        e.actor,
        e.causationId,
        e.correlationId,
        e.recordedAt,
      ]),
    )
    .digest("hex");
}
