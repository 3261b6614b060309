import { z } from "zod";
import { lazySchema } from "../lazy-schema.js";

/** Metadata a writer supplies with each event. */
export const eventMetadataInput = lazySchema(() =>
  z
    .object({
      eventId: z.uuid(),
      /** Which producer, scheduler instance, worker or person wrote it, e.g. `scheduler:host:1234`. */
      actor: z.string().min(1).max(256),
      causationId: z.string().max(256).nullable().default(null),
      correlationId: z.string().max(256).nullable().default(null),
    })
    .strict(),
);
export type EventMetadataInput = z.input<typeof eventMetadataInput>;

/** Metadata as recorded: the writer's fields plus what the log adds at commit. */
export interface RecordedMetadata {
  readonly eventId: string;
  readonly actor: string;
  readonly causationId: string | null;
  readonly correlationId: string | null;
  readonly schemaVersion: number;
  /** ISO-8601 time the log committed the event. */
  readonly recordedAt: string;
  /** Hex SHA-256 of the previous event in the log's chain ("" for the first). */
  readonly prevHash: string;
  /** Hex SHA-256 over prevHash and this event's content. */
  readonly hash: string;
}
