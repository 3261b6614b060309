import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  countsForTask,
  type EventDataOf,
  type InstanceState,
  instanceStream,
  SchedulerProjection,
  type TaskState,
  taskStream,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { backfill, catchUp, declare } from "@chronolog/scheduler";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";

/**
 * The compare-and-set of a backfill: two backfills decided on the same state (two processes
 * that read the log before either wrote) end merged or one refused. The second one's append
 * fails on the task stream's revision, it reads the log again and decides on what the first
 * wrote: it joins that backfill, keeping its resume point, or is refused naming it.
 */
const HOUR = 3_600_000;
const TASK = "p/a/hourly/ALL";
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

async function twoReaders(): Promise<{ log: EventLog; a: SchedulerProjection; b: SchedulerProjection }> {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-bf-cas-"));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  cleanup.push(async () => {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const start = new Date(Date.now() - 3 * 24 * HOUR).toISOString();
  const yaml = `tasks:\n  - { project: p, account: a, name: hourly, cron: "0 * * * *", startDate: "${start}", catchup: false, operator: { type: noop } }\n`;
  const a = new SchedulerProjection();
  await declare(log, a, [{ filename: "t.yaml", document: parse(yaml) }], Date.now());
  await catchUp(log, a);
  const b = new SchedulerProjection();
  await catchUp(log, b);
  return { log, a, b };
}

/** The IntervalResets on the task's stream, oldest first. */
async function resets(log: EventLog): Promise<Array<EventDataOf<"IntervalReset">>> {
  const task = [
    ...(await log.readStream(taskStream({ project: "p", account: "a", name: "hourly", partition: "ALL" }))),
  ];
  return task.filter((e) => e.type === "IntervalReset").map((e) => e.data as EventDataOf<"IntervalReset">);
}

const positionOf = (t: TaskState) => ({
  logicalDate: t.logicalDate,
  nextRunDate: t.nextRunDate,
  prevIntervalStart: t.prevIntervalStart,
});

describe("two backfills decided on the same state", () => {
  it("overlapping: the second joins the first (union range, the first's resume point and id)", async () => {
    const { log, a, b } = await twoReaders();
    const task = a.tasks.get(TASK) as TaskState;
    const now = Date.parse(task.logicalDate);
    const h = (n: number) => new Date(now - n * HOUR).toISOString();
    const first = await backfill(log, a, TASK, h(5), h(4), false);
    // `b` has not seen the first backfill: its append conflicts and it decides again.
    const second = await backfill(log, b, TASK, h(4), h(3), false);
    expect(second.targets[0]?.backfillId).toBe(first.backfillId);
    expect(second.targets[0]?.merged).toMatchObject({ from: h(5), until: h(3) });
    const written = await resets(log);
    expect(written).toHaveLength(2);
    expect(written[1]).toMatchObject({
      logicalDate: h(5),
      until: h(3),
      backfillId: first.backfillId,
      resume: positionOf(task),
    });
    await catchUp(log, b);
    expect(b.tasks.get(TASK)?.backfill).toMatchObject({ from: h(5), until: h(3), resume: positionOf(task) });
  });

  it("apart: the second is refused naming the first, and only the first is written", async () => {
    const { log, a, b } = await twoReaders();
    const task = a.tasks.get(TASK) as TaskState;
    const now = Date.parse(task.logicalDate);
    const h = (n: number) => new Date(now - n * HOUR).toISOString();
    const first = await backfill(log, a, TASK, h(6), h(6), false);
    await expect(backfill(log, b, TASK, h(3), h(2), false)).rejects.toMatchObject({
      type: "state",
      message: expect.stringContaining(
        `backfill ${first.backfillId} over ${h(6)} .. ${h(6)} is pending on ${TASK}: 0 of 1 interval done, next ${h(6)}`,
      ),
    });
    const written = await resets(log);
    expect(written).toHaveLength(1);
    expect(written[0]).toMatchObject({ backfillId: first.backfillId, resume: positionOf(task) });
  });
});

describe("a backfill joining one whose interval is under way", () => {
  it("goes on where the walk stands: the attempt under way still counts for its interval", async () => {
    const { log, a } = await twoReaders();
    const task = a.tasks.get(TASK) as TaskState;
    const now = Date.parse(task.logicalDate);
    const h = (n: number) => new Date(now - n * HOUR).toISOString();
    const first = await backfill(log, a, TASK, h(5), h(4), false);
    await catchUp(log, a);
    // The walk's first interval is dispatched (as the scheduler would), its attempt under way.
    const key = { project: "p", account: "a", name: "hourly", partition: "ALL" };
    await log.append(
      instanceStream(key, h(5)),
      [
        {
          type: "DispatchIntended",
          data: {
            key,
            logicalDate: h(5),
            attempt: 1,
            token: "tok-under-way",
            operator: { type: "noop" },
            idempotent: true,
            leaseSeconds: 30,
          },
        },
      ],
      { expectedRevision: "no_stream" },
    );
    await catchUp(log, a);
    const before = a.tasks.get(TASK) as TaskState;
    const second = await backfill(log, a, TASK, h(4), h(2), false);
    expect(second.targets[0]).toMatchObject({
      backfillId: first.backfillId,
      merged: { from: h(5), until: h(2) },
    });
    expect((await resets(log)).at(-1)).toMatchObject({ logicalDate: h(5), until: h(2), continues: true });
    await catchUp(log, a);
    const after = a.tasks.get(TASK) as TaskState;
    expect(after.movedAt).toBe(before.movedAt);
    expect(after.backfill?.until).toBe(h(2));
    // The attempt under way is the interval's: its success completes it.
    expect(countsForTask(a.instances.get(instanceStream(key, h(5))) as InstanceState, after)).toBe(true);
    // A range that would move the walk back, behind the attempt under way, still waits for it.
    await expect(backfill(log, a, TASK, h(7), h(6), false)).rejects.toMatchObject({
      type: "state",
      message: expect.stringContaining("wait for the running intervals to finish first"),
    });
  });
});
