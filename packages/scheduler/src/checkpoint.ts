import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { open, rename } from "node:fs/promises";
import { join } from "node:path";
import { type ProjectionSnapshot, SchedulerProjection } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";

export const SNAPSHOT_FILE = "projection.snapshot.json";

/** The temporary file a checkpoint is written to before it is renamed over the snapshot. */
const snapshotTemp = (path: string, pid: number) => `${path}.${pid}.tmp`;
const SNAPSHOT_TEMP = /^projection\.snapshot\.json\.\d+\.tmp$/;

/**
 * Removes the temporary files of checkpoints that a killed process left half-written in `dir`,
 * and returns how many. Call it only where no other process can be writing a checkpoint there
 * (under the data directory's scheduler lock).
 */
export function removeSnapshotLeftovers(dir: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!SNAPSHOT_TEMP.test(name)) continue;
    rmSync(join(dir, name), { force: true });
    removed += 1;
  }
  return removed;
}

interface SnapshotFile {
  readonly snapshot: ProjectionSnapshot;
  /** Hash of the log's event at the snapshot's position: proves the snapshot belongs to this log. */
  readonly headHash: string | null;
}

export interface LoadedProjection {
  readonly projection: SchedulerProjection;
  /** Position the snapshot started from (-1n: the whole log was replayed). */
  readonly snapshotPosition: bigint;
  readonly replayed: number;
  /** Why a snapshot on disk was not used, if one was there. */
  readonly discarded: string | null;
}

/**
 * Writes a snapshot atomically: a temporary file, fsync, then rename over the old one. The
 * projection is serialised at once (it is the state as of its position); the write and the
 * fsync happen off the event loop.
 */
export async function saveSnapshot(
  dir: string,
  log: EventLog,
  projection: SchedulerProjection,
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
  const text = JSON.stringify(body);
  const file = await open(tmp, "w");
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, path);
}

export function dropSnapshot(dir: string): boolean {
  const path = join(dir, SNAPSHOT_FILE);
  if (!existsSync(path)) return false;
  rmSync(path);
  return true;
}

async function readSnapshot(
  dir: string,
  log: EventLog,
): Promise<{ projection?: SchedulerProjection; discarded: string | null }> {
  const path = join(dir, SNAPSHOT_FILE);
  if (!existsSync(path)) return { discarded: null };
  try {
    const file = JSON.parse(readFileSync(path, "utf8")) as SnapshotFile;
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
export async function catchUp(log: EventLog, projection: SchedulerProjection): Promise<number> {
  let count = 0;
  for (;;) {
    const page = await log.readAll({ fromPosition: projection.position + 1n, maxCount: 5000 });
    if (page.length === 0) return count;
    for (const e of page) projection.apply(e);
    count += page.length;
  }
}
