/*
 * The checkpoint in the data directory: written atomically (each one also kept as a rung of the
 * ladder), and read back only if it belongs to the log beside it.
 */

import { existsSync, rmSync } from "node:fs";
import { open, rename } from "node:fs/promises";
import { join } from "node:path";
import { SchedulerProjection } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { parseSnapshotFile, type SnapshotFile, snapshotPieces } from "./file.js";
import { addRung, LADDER_SPACING, type LadderOptions } from "./ladder.js";

/** The checkpoint's name in the data directory. */
export const SNAPSHOT_FILE = "projection.snapshot.json";

/** The temporary file a checkpoint is written to before it is renamed over the snapshot. */
const snapshotTemp = (path: string, pid: number) => `${path}.${pid}.tmp`;
export const SNAPSHOT_TEMP = /^projection\.snapshot\.json\.\d+\.tmp$/;

/**
 * Writes a snapshot atomically: a temporary file, fsync, then rename over the old one. The
 * projection is serialised at once (it is the state as of its position); the write and the
 * fsync happen off the event loop.
 */
export async function saveSnapshot(
  dir: string,
  log: EventLog,
  projection: SchedulerProjection,
  options: LadderOptions = {},
): Promise<void> {
  // Taken before any await: the projection keeps following the log meanwhile, and the hash
  // read below must be the one at the snapshot's own position.
  const snapshot = projection.toSnapshot();
  const position = projection.position;
  let headHash: string | null = null;
  if (position >= 0n) {
    const [at] = await log.readAllStored({ fromPosition: position, maxCount: 1 });
    headHash = at && at.position === position ? at.metadata.hash : null;
  }
  const body: SnapshotFile = { snapshot, headHash };
  const path = join(dir, SNAPSHOT_FILE);
  const tmp = snapshotTemp(path, process.pid);
  const pieces = snapshotPieces(body);
  const file = await open(tmp, "w");
  try {
    // Each piece is written whole, after the one before (a handle writes on from where it is).
    for (const piece of pieces) await file.writeFile(piece);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, path);
  await addRung(dir, path, position, options.spacing ?? LADDER_SPACING);
}

/** Removes the checkpoint from the data directory; false if there was none. */
export function dropSnapshot(dir: string): boolean {
  const path = join(dir, SNAPSHOT_FILE);
  if (!existsSync(path)) return false;
  rmSync(path);
  return true;
}

/**
 * The checkpoint in the data directory as a projection, if it belongs to this log; else why it
 * was not used (null: there was none).
 */
export async function readSnapshot(
  dir: string,
  log: EventLog,
): Promise<{ projection?: SchedulerProjection; discarded: string | null }> {
  const path = join(dir, SNAPSHOT_FILE);
  if (!existsSync(path)) return { discarded: null };
  return readSnapshotFile(path, log);
}

/**
 * A snapshot file, if it belongs to this log: the event at its position has the hash it
 * recorded. Else why not, in one line: a file refused by its reader (another format or layout,
 * cut short, a record this version does not write) is "unreadable snapshot: <why>".
 */
export async function readSnapshotFile(
  path: string,
  log: EventLog,
): Promise<{ projection?: SchedulerProjection; discarded: string | null }> {
  try {
    const file = await parseSnapshotFile(path);
    const projection = SchedulerProjection.fromSnapshot(file.snapshot);
    if (projection.position >= 0n) {
      const [at] = await log.readAllStored({ fromPosition: projection.position, maxCount: 1 });
      if (!at || at.position !== projection.position || at.metadata.hash !== file.headHash) {
        return { discarded: "the snapshot does not match this log" };
      }
    }
    return { projection, discarded: null };
  } catch (error) {
    return { discarded: `unreadable snapshot: ${(error as Error).message}` };
  }
}
