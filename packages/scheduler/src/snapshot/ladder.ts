/*
 * The ladder: snapshots kept at spaced positions of the log, so that the state as of any
 * position is folded from the nearest one below it (see `projectionAsOf`), not from the start.
 */

import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { copyFile, link, rename, rm } from "node:fs/promises";
import { join } from "node:path";

export interface LadderOptions {
  /** Rungs closer than this many events to the one below are dropped (default LADDER_SPACING). */
  readonly spacing?: bigint;
}

/** Where the ladder's snapshots are, one file per position: `snapshots/<position>.json`. */
export const LADDER_DIR = "snapshots";
/** Rungs closer than this many events to the one below are dropped (the newest stays). */
export const LADDER_SPACING = 50_000n;
/** Rungs kept at most: past this, the two closest merge, so the spacing grows with the log. */
export const LADDER_MAX_RUNGS = 32;

const RUNG = /^(\d+)\.json$/;

/** The positions of the ladder's snapshots, lowest first. */
export function ladderRungs(dir: string): bigint[] {
  let names: string[];
  try {
    names = readdirSync(join(dir, LADDER_DIR));
  } catch {
    return [];
  }
  return names
    .map((n) => RUNG.exec(n)?.[1])
    .filter((m): m is string => m !== undefined)
    .map(BigInt)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

export const rungPath = (dir: string, position: bigint) => join(dir, LADDER_DIR, `${position}.json`);

/** The temporary file a rung is made as before it is renamed into place. */
const rungTemp = (target: string, pid: number) => `${target}.${pid}.tmp`;
export const RUNG_TEMP = /^\d+\.json\.\d+\.tmp$/;

/**
 * Keeps the checkpoint just written as the ladder's newest rung (a hard link: no copy), then
 * thins the ladder: a rung too close to the one below goes unless it is the newest, and past
 * the most rungs kept the one whose removal leaves the smallest gap goes.
 */
export async function addRung(
  dir: string,
  snapshotPath: string,
  position: bigint,
  spacing: bigint,
): Promise<void> {
  if (position < 0n) return;
  mkdirSync(join(dir, LADDER_DIR), { recursive: true });
  const target = rungPath(dir, position);
  if (!existsSync(target)) {
    const tmp = rungTemp(target, process.pid);
    try {
      await link(snapshotPath, tmp);
    } catch {
      await copyFile(snapshotPath, tmp);
    }
    await rename(tmp, target);
  }
  const rungs = ladderRungs(dir);
  const keep: bigint[] = [];
  for (const [i, r] of rungs.entries()) {
    const last = keep.at(-1);
    const newest = i === rungs.length - 1;
    if (last !== undefined && !newest && r - last < spacing) continue;
    keep.push(r);
  }
  while (keep.length > LADDER_MAX_RUNGS) {
    let at = 1;
    let smallest: bigint | null = null;
    for (let i = 1; i < keep.length - 1; i++) {
      const gap = (keep[i + 1] as bigint) - (keep[i - 1] as bigint);
      if (smallest === null || gap < smallest) {
        smallest = gap;
        at = i;
      }
    }
    keep.splice(at, 1);
  }
  const kept = new Set(keep);
  await Promise.all(rungs.filter((r) => !kept.has(r)).map((r) => rm(rungPath(dir, r), { force: true })));
}
