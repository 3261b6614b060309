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
  // Each field is written as its length, a colon, then its text: an unambiguous framing that
  // costs far less than JSON-escaping the event's data a second time.
  const fields = [
    prevHash,
    e.position.toString(),
    e.streamId,
    e.revision.toString(),
    e.type,
    String(e.schemaVersion),
    e.dataJson,
    e.eventId,
    e.actor,
    e.causationId ?? "\u0000",
    e.correlationId ?? "\u0000",
    e.recordedAt,
  ];
  let text = "";
  for (const f of fields) text += `${f.length}:${f}`;
  return createHash("sha256").update(text).digest("hex");
}
