import { rmSync } from "node:fs";
import { join } from "node:path";
import { SchedulerProjection } from "@chronolog/core";
import type { EventLog, RecordedEvent } from "@chronolog/log";
import { LADDER_DIR, LADDER_SPACING, type LadderOptions } from "./snapshot/ladder.js";
import { readSnapshot, saveSnapshot } from "./snapshot/store.js";

/**
 * Events read at a time while folding. A page is garbage once it is applied: at 1,000 events
 * it dies young, where pages of 5,000 outlived the young generation and made the heap's full
 * collections (about three times as many) the largest cost of a long fold.
 */
const FOLD_PAGE = 1000;

export interface LoadedProjection {
  readonly projection: SchedulerProjection;
  /** Position the snapshot started from (-1n: the whole log was replayed). */
  readonly snapshotPosition: bigint;
  readonly replayed: number;
  /** Why a snapshot on disk was not used, if one was there. */
  readonly discarded: string | null;
}

/**
 * Writes rungs of the ladder while folding the whole log from the start (what `rebuild` does):
 * a snapshot every `LADDER_SPACING` events, then the head's. Returns the projection at the head.
 */
export async function rebuildWithLadder(
  log: EventLog,
  dir: string,
  options: LadderOptions = {},
): Promise<LoadedProjection> {
  const spacing = options.spacing ?? LADDER_SPACING;
  rmSync(join(dir, LADDER_DIR), { recursive: true, force: true });
  const projection = new SchedulerProjection();
  let replayed = 0;
  let nextRung = spacing - 1n;
  for (;;) {
    const page = await log.readAll({ fromPosition: projection.position + 1n, maxCount: FOLD_PAGE });
    if (page.length === 0) break;
    for (const e of page) {
      projection.apply(e);
      replayed += 1;
      if (e.position >= nextRung) {
        await saveSnapshot(dir, log, projection, options);
        nextRung = e.position + spacing;
      }
    }
  }
  await saveSnapshot(dir, log, projection, options);
  return { projection, snapshotPosition: -1n, replayed, discarded: null };
}

/**
 * The projection as of the log's head: from the last snapshot plus the log's tail, or from
 * the whole log when there is no usable snapshot (or `fromScratch`).
 */
export async function loadProjection(
  log: EventLog,
  dir: string,
  options: { fromScratch?: boolean } = {},
): Promise<LoadedProjection> {
  const loaded = options.fromScratch ? { discarded: null } : await readSnapshot(dir, log);
  const projection = loaded.projection ?? new SchedulerProjection();
  const snapshotPosition = projection.position;
  const replayed = await catchUp(log, projection);
  return { projection, snapshotPosition, replayed, discarded: loaded.discarded };
}

/** Applies every event after the projection's position; returns how many. */
export async function catchUp(
  log: EventLog,
  projection: SchedulerProjection,
  /** Hears each event as it is applied (a command watching for one). */
  onEvent?: (e: RecordedEvent) => void,
): Promise<number> {
  let count = 0;
  for (;;) {
    const page = await log.readAll({ fromPosition: projection.position + 1n, maxCount: FOLD_PAGE });
    if (page.length === 0) return count;
    for (const e of page) {
      projection.apply(e);
      onEvent?.(e);
    }
    count += page.length;
  }
}
