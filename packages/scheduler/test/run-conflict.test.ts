import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runIdOf, runStream, SchedulerProjection, type TaskState } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, pauseTask, readRun, rerun, resumeTask, trigger } from "@chronolog/scheduler";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";

/**
 * A rerun or trigger decided on a projection another writer has moved past (two processes that
 * read the log before either wrote) catches up and decides again: it goes ahead on what the log
 * holds now, or is refused for where the run stands; it never fails on the compare-and-set.
 */
const HOUR = 3_600_000;
const TASK = "p/a/only/ALL";
let cleanup: (() => Promise<void>) | null = null;
afterEach(async () => {
  await cleanup?.();
  cleanup = null;
});

async function twoReaders(): Promise<{ log: EventLog; a: SchedulerProjection; b: SchedulerProjection }> {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-run-cas-"));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  cleanup = async () => {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  };
  const start = new Date(Date.now() - 3 * HOUR).toISOString();
  const yaml = `workflows:\n  - name: w\n    project: p\n    account: a\n    cron: "0 * * * *"\n    startDate: "${start}"\n    catchup: false\n    tasks:\n      - { name: only, operator: { type: noop } }\n`;
  const a = new SchedulerProjection();
  await declare(log, a, [{ filename: "w.yaml", document: parse(yaml) }], Date.now());
  await catchUp(log, a);
  const b = new SchedulerProjection();
  await catchUp(log, b);
  return { log, a, b };
}

const latestSlot = () => new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();

describe("a rerun or trigger on a stale projection", () => {
  it("a trigger of a run another process started meanwhile is refused as running, not a conflict", async () => {
    const { log, a, b } = await twoReaders();
    const at = latestSlot();
    await trigger(log, a, "w", at, {}, Date.now());
    await expect(trigger(log, b, "w", at, {}, Date.now())).rejects.toMatchObject({
      type: "state",
      message: expect.stringContaining(
        `run ${runIdOf("w", at)} is already running (try 1, manual): wait for it`,
      ),
    });
  });

  it("a rerun whose task another process changed meanwhile decides again and goes ahead", async () => {
    const { log, a, b } = await twoReaders();
    const at = latestSlot();
    const runId = runIdOf("w", at);
    await trigger(log, a, "w", at, {}, Date.now());
    const { revision } = await readRun(log, runId);
    await log.append(
      runStream(runId),
      [
        {
          type: "RunFinished",
          data: { runId, state: "failed", workflow: "w", logicalDate: at, failed: [TASK] },
        },
      ],
      { expectedRevision: revision },
    );
    await catchUp(log, a);
    await catchUp(log, b);
    // Another process pauses and resumes the task: `b` still holds its older revision.
    await pauseTask(log, a, TASK, "a moment");
    await catchUp(log, a);
    await resumeTask(log, a, TASK);
    const stale = (b.tasks.get(TASK) as TaskState).revision;
    const r = await rerun(log, b, runId, false);
    expect(r.tasks).toEqual([TASK]);
    expect((b.tasks.get(TASK) as TaskState).revision).toBeGreaterThan(stale);
    const after = await readRun(log, runId);
    expect(after.run?.status).toBe("running");
    expect(after.run?.try).toBe(2);
  });
});
