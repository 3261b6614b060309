import { SchedulerProjection } from "@chronolog/core";
import { type EventLog, logAsOf } from "@chronolog/log";
import { catchUp } from "../projection-loader.js";
import { ladderRungs, rungPath } from "./ladder.js";
import { readSnapshotFile } from "./store.js";

export interface ProjectionAsOf {
  readonly projection: SchedulerProjection;
  /** The log as of the position: reads of history through it see nothing later. */
  readonly log: EventLog;
  readonly position: bigint;
  /** The event at the position (null: before the first event). */
  readonly event: { readonly hash: string; readonly recordedAt: string } | null;
  /** The rung it was folded from (-1n: from the start), and how many events were folded. */
  readonly fromSnapshot: bigint;
  readonly replayed: number;
  /** Rungs not used because they did not match this log, with why. */
  readonly discarded: readonly string[];
}

/**
 * The state as the projection was right after the event at `position`: folded from the
 * nearest rung of the ladder at or below it whose hash matches the log at its position (a
 * rung that does not match is never used), or from the start. A position past the head is the
 * head. With no directory (an export read on its own), it folds from the start.
 */
export async function projectionAsOf(
  log: EventLog,
  dir: string | null,
  position: bigint,
): Promise<ProjectionAsOf> {
  const head = await log.headPosition();
  const at = position > head ? head : position;
  const view = logAsOf(log, at);
  const discarded: string[] = [];
  let projection: SchedulerProjection | null = null;
  for (const r of dir === null ? [] : ladderRungs(dir).reverse()) {
    if (r > at || dir === null) continue;
    const loaded = await readSnapshotFile(rungPath(dir, r), log);
    if (loaded.projection) {
      projection = loaded.projection;
      break;
    }
    discarded.push(`snapshot at position ${r}: ${loaded.discarded}`);
  }
  projection ??= new SchedulerProjection();
  const fromSnapshot = projection.position;
  const replayed = await catchUp(view, projection);
  let event: ProjectionAsOf["event"] = null;
  if (at >= 0n) {
    const [e] = await log.readAllStored({ fromPosition: at, maxCount: 1 });
    if (e) event = { hash: e.metadata.hash, recordedAt: e.metadata.recordedAt };
  }
  return { projection, log: view, position: at, event, fromSnapshot, replayed, discarded };
}
