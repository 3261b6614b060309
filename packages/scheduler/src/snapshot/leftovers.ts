import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { LADDER_DIR, RUNG_TEMP } from "./ladder.js";
import { SNAPSHOT_TEMP } from "./store.js";

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
  let rungs: string[] = [];
  try {
    rungs = readdirSync(join(dir, LADDER_DIR));
  } catch {
    // no ladder yet
  }
  for (const name of rungs) {
    if (!RUNG_TEMP.test(name)) continue;
    rmSync(join(dir, LADDER_DIR, name), { force: true });
    removed += 1;
  }
  return removed;
}
