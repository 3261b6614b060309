import type { PreparedFields, StoredEvent } from "@chronolog/log";
import type { LayoutVersion } from "./schema.js";

/** One event as the writer inserts it, its place and hash decided. */
export interface NewRow {
  readonly position: bigint;
  readonly sid: bigint;
  readonly revision: bigint;
  readonly event: PreparedFields;
  /** The commit's time, in the form `EventRows.commitTime` gave. */
  readonly recordedAt: unknown;
  readonly hash: Buffer;
  /** The hash of the event before it (the chain's start: empty). */
  readonly prevHash: Buffer;
}

/**
 * How one layout of the file stores and reads events and streams: the statements and the
 * mapping between a row and a StoredEvent. Everything else (group commit, revision checks, the
 * chain) is the backend's, the same for every layout.
 */
export interface EventRows {
  readonly version: LayoutVersion;
  /** The stream's interned id, when it has one. */
  sidOf(name: string): bigint | undefined;
  insertStream(name: string): bigint;
  /** A commit's time (ISO-8601) as the layout stores it: worked out once per commit. */
  commitTime(recordedAt: string): unknown;
  insertEvent(row: NewRow): void;
  readStream(name: string, fromRevision: bigint, maxCount: number): StoredEvent[];
  readAll(fromPosition: bigint, maxCount: number): StoredEvent[];
  /** A transaction rolled back: forget what was cached from it. */
  rolledBack(): void;
}
