import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { instanceStream, SchedulerProjection } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, SNAPSHOT_FILE, saveSnapshot, snapshotPieces } from "@chronolog/scheduler";
import { afterEach, beforeEach } from "vitest";

/*
 * What the tests of the snapshot file share: a log to checkpoint, and the file's blocks of
 * tasks taken apart as the reader takes them.
 */

/** The data directory and log of the running case (see `useSnapshotFixture`). */
export let dir: string;
export let log: EventLog;

export const TASKS = 40;

/**
 * Each case of a file that calls this gets a data directory of its own and a real SQLite log in
 * it, holding 40 tasks declared alike in four projects (each from t4 on the child of the task
 * before it) and an instance of t0.
 */
export function useSnapshotFixture(): void {
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "chronolog-checkpoint-"));
    log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
    const tasks = Array.from({ length: TASKS }, (_, i) => ({
      project: `p${i % 4}`,
      account: "acme",
      name: `t${i}`,
      cron: "0 * * * *",
      startDate: "2026-11-30T00:00:00Z",
      operator: { type: "noop" },
      parents: i >= 4 ? [`p${(i - 1) % 4}/acme/t${i - 1}`] : [],
    }));
    const projection = new SchedulerProjection();
    await declare(log, projection, [{ filename: "tasks.json", document: { tasks } }], Date.now());
    // An instance too, so that more than one list has records.
    await log.append(
      instanceStream(
        { project: "p0", account: "acme", name: "t0", partition: "ALL" },
        "2026-11-30T00:00:00.000Z",
      ),
      [
        {
          type: "DispatchIntended",
          data: {
            key: { project: "p0", account: "acme", name: "t0", partition: "ALL" },
            logicalDate: "2026-11-30T00:00:00.000Z",
            attempt: 1,
            token: "token-0001",
            operator: { type: "noop" },
            idempotent: true,
            leaseSeconds: 30,
          },
        },
      ],
      { expectedRevision: "no_stream" },
    );
  });

  afterEach(async () => {
    await log?.close();
    rmSync(dir, { recursive: true, force: true });
  });
}

export async function checkpointed(): Promise<SchedulerProjection> {
  const projection = new SchedulerProjection();
  await catchUp(log, projection);
  await saveSnapshot(dir, log, projection);
  return projection;
}

export const snapshotPath = () => join(dir, SNAPSHOT_FILE);

/** Pauses task t6 with a reason: a field past a task's usual ones. */
export async function pauseT6(): Promise<void> {
  await log.append(
    "task-p2/acme/t6/ALL",
    [
      {
        type: "TaskPaused",
        data: { key: { project: "p2", account: "acme", name: "t6", partition: "ALL" }, reason: "held" },
      },
    ],
    { expectedRevision: "exists" },
  );
}

/** A block of tasks as its line holds it: a column per field, each as long as `id`. */
export interface Block {
  id: string[];
  decl: number[];
  parents: number[];
  parentRefs: Array<number | string>;
  status: string[];
  logicalDate: Array<number | string>;
  prevIntervalStart: Array<number | null>;
  nextRunDate: number[];
  failure: unknown[];
  backfill: unknown[];
  revision: Array<number | string>;
  movedAt: Array<number | string>;
  extras: Record<string, unknown>;
  whole: Record<string, unknown>;
}

/** The columns as long as the ids. */
export const COLUMNS = [
  "id",
  "decl",
  "parents",
  "status",
  "logicalDate",
  "prevIntervalStart",
  "nextRunDate",
  "failure",
  "backfill",
  "revision",
  "movedAt",
] as const;

/** The columns written `{ "same": value }` when every task of the block holds that value. */
const SAME_COLUMNS = [
  "decl",
  "parents",
  "status",
  "logicalDate",
  "prevIntervalStart",
  "nextRunDate",
  "failure",
  "backfill",
  "revision",
] as const;

/** A block as its line holds it, its columns of one value filled in as the reader does. */
function expandBlock(line: string): Block {
  const b = JSON.parse(line) as Record<string, unknown>;
  const n = (b.id as string[]).length;
  for (const c of SAME_COLUMNS) {
    const column = b[c];
    if (!Array.isArray(column)) b[c] = new Array(n).fill((column as { same: unknown }).same);
  }
  return b as unknown as Block;
}

/** The file's lines, its header, where its blocks of tasks start, and the blocks. */
export function layout(text: string) {
  const lines = text.split("\n");
  const header = JSON.parse(lines[0] as string);
  const first = 1 + header.specs + header.instants;
  const blocks = lines.slice(first, first + header.blocks).map(expandBlock);
  const instants = lines.slice(1 + header.specs, first).map((l) => JSON.parse(l) as string);
  return { lines, header, first, blocks, instants };
}

/**
 * Where a task is in the blocks: its block, its place in it (`i`), its place in the file's task
 * order, and its parents' references (from `refAt` in its block's `parentRefs`).
 */
export function placeOf(blocks: Block[], id: string) {
  let before = 0;
  for (const [n, b] of blocks.entries()) {
    const i = b.id.indexOf(id);
    if (i >= 0) {
      const refAt = b.parents.slice(0, i).reduce((a, c) => a + c, 0);
      const refs = b.parentRefs.slice(refAt, refAt + (b.parents[i] as number));
      return { block: n, b, i, place: before + i, refAt, refs };
    }
    before += b.id.length;
  }
  throw new Error(`no task ${id} in the blocks`);
}

/** Writes the checkpoint of `written` in blocks of `blockSize` tasks, as `saveSnapshot` would. */
export async function writeInBlocks(written: SchedulerProjection, blockSize: number): Promise<string> {
  const [at] = await log.readAllStored({ fromPosition: written.position, maxCount: 1 });
  const body = { snapshot: written.toSnapshot(), headHash: at?.metadata.hash ?? null };
  const text = snapshotPieces(body, 1 << 20, blockSize).join("");
  writeFileSync(snapshotPath(), text);
  return text;
}
