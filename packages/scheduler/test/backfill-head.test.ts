import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type EventDataOf,
  instanceStream,
  SchedulerProjection,
  type TaskState,
  taskStream,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { backfill, cancelBackfill, catchUp, declare } from "@chronolog/scheduler";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";

/**
 * The compare-and-set of a backfill and of its cancel. One decided on a view of the log that a
 * dispatch has since moved past (the scheduler started the task's interval: a write to its
 * attempt stream, which the task stream does not show) is not written as decided: the log's head
 * moved, it reads the log again and decides on what is there. A backfill then waits for that
 * interval (refused, naming it); a cancel lets it finish before the task returns.
 */
const HOUR = 3_600_000;
const TASK = "p/a/hourly/ALL";
const KEY = { project: "p", account: "a", name: "hourly", partition: "ALL" };
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

async function logWithTask(): Promise<{ log: EventLog; fresh: SchedulerProjection }> {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-cancel-cas-"));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  cleanup.push(async () => {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const start = new Date(Date.now() - 3 * 24 * HOUR).toISOString();
  const yaml = `tasks:\n  - { project: p, account: a, name: hourly, cron: "0 * * * *", startDate: "${start}", catchup: false, operator: { type: noop } }\n`;
  const fresh = new SchedulerProjection();
  await declare(log, fresh, [{ filename: "t.yaml", document: parse(yaml) }], Date.now());
  await catchUp(log, fresh);
  return { log, fresh };
}

describe("a backfill's cancel decided on a view the log has moved past", () => {
  it("decides again: the interval dispatched meanwhile finishes, then the task returns", async () => {
    const { log, fresh } = await logWithTask();
    const before = fresh.tasks.get(TASK) as TaskState;
    const h = (n: number) => new Date(Date.parse(before.logicalDate) - n * HOUR).toISOString();
    const plan = await backfill(log, fresh, TASK, h(5), h(3), false);
    const id = plan.backfillId as string;
    // The cancel's view: the backfill, and nothing after it.
    const stale = new SchedulerProjection();
    await catchUp(log, stale);
    // Meanwhile the scheduler dispatches the walk's first interval.
    await log.append(
      instanceStream(KEY, h(5)),
      [
        {
          type: "DispatchIntended",
          data: {
            key: KEY,
            logicalDate: h(5),
            attempt: 1,
            token: "token-of-the-first-attempt",
            operator: { type: "noop" },
            idempotent: false,
            leaseSeconds: 30,
          },
        },
      ],
      { expectedRevision: "no_stream" },
    );
    const cancel = await cancelBackfill(log, stale, id);
    expect(cancel.targets).toEqual([
      { task: TASK, at: h(5), returnsTo: before.logicalDate, finishing: h(5) },
    ]);
    const resets = (await log.readStream(taskStream(KEY)))
      .filter((e) => e.type === "IntervalReset")
      .map((e) => e.data as EventDataOf<"IntervalReset">);
    // Cut short where it stands, the attempt under way still its own; not sent back past it.
    expect(resets.at(-1)).toMatchObject({
      reason: "backfill_cancelled",
      logicalDate: h(5),
      until: h(5),
      continues: true,
      resume: { logicalDate: before.logicalDate },
    });
    await catchUp(log, fresh);
    const task = fresh.tasks.get(TASK) as TaskState;
    expect(fresh.currentInstance(task)?.status).toBe("queued");
  });
});

describe("a backfill decided on a view the log has moved past", () => {
  it("decides again: the task's interval dispatched meanwhile holds it (wait for it to finish)", async () => {
    const { log, fresh } = await logWithTask();
    const task = fresh.tasks.get(TASK) as TaskState;
    const h = (n: number) => new Date(Date.parse(task.logicalDate) - n * HOUR).toISOString();
    // The backfill's view: the task at its interval, nothing under way.
    const stale = new SchedulerProjection();
    await catchUp(log, stale);
    // Meanwhile the scheduler dispatches that interval.
    await log.append(
      instanceStream(KEY, task.logicalDate),
      [
        {
          type: "DispatchIntended",
          data: {
            key: KEY,
            logicalDate: task.logicalDate,
            attempt: 1,
            token: "token-of-the-first-attempt",
            operator: { type: "noop" },
            idempotent: false,
            leaseSeconds: 30,
          },
        },
      ],
      { expectedRevision: "no_stream" },
    );
    await expect(backfill(log, stale, TASK, h(5), h(3), false)).rejects.toThrow(
      `wait for the running intervals to finish first: ${TASK} ${task.logicalDate} is queued`,
    );
    const resets = (await log.readStream(taskStream(KEY))).filter((e) => e.type === "IntervalReset");
    expect(resets).toEqual([]);
  });
});
