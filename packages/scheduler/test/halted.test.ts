import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type DomainEvent,
  instanceStream,
  runStream,
  SchedulerProjection,
  taskStream,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { actOnInterval, catchUp, declare, loadProjection, saveSnapshot } from "@chronolog/scheduler";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/**
 * The shell of retry and mark on a real SQLite log: read, decided by the core, written in one
 * append with compare-and-set; a conflict is decided again on the log as it is; and what they
 * write survives a checkpoint (the snapshot restores the same projection as a replay).
 */
const DAY = "2026-11-28T02:00:00.000Z";
const key = (name: string) => ({ project: "p", account: "a", name, partition: "ALL" });
const id = (name: string) => `p/a/${name}/ALL`;
const runId = `wf@${DAY}`;
const BY = "cli:alice@laptop:1";
let dir: string;
let log: EventLog;

/** The scheduler's part, written by hand: a run of wf whose `a` failed and `b` was closed for it. */
async function failedRun(): Promise<void> {
  const projection = new SchedulerProjection();
  await declare(
    log,
    projection,
    [
      {
        filename: "wf.json",
        document: {
          workflows: [
            {
              name: "wf",
              project: "p",
              account: "a",
              cron: "0 2 * * *",
              startDate: DAY,
              tasks: [
                { name: "a", operator: { type: "noop" }, retry: { maxAttempts: 2 } },
                { name: "b", parents: ["a"], operator: { type: "noop" } },
              ],
            },
          ],
        },
      },
    ],
    Date.now(),
  );
  const append = (stream: string, events: DomainEvent[]) =>
    log.append(stream, events, { expectedRevision: "any" });
  await append(runStream(runId), [
    {
      type: "RunStarted",
      data: {
        runId,
        workflow: "wf",
        logicalDate: DAY,
        tasks: [key("a"), key("b")],
        trigger: "schedule",
        params: {},
      },
    },
  ]);
  const token = "token-a-0001";
  await append(instanceStream(key("a"), DAY), [
    {
      type: "DispatchIntended",
      data: {
        key: key("a"),
        logicalDate: DAY,
        attempt: 1,
        token,
        runId,
        operator: { type: "noop" },
        idempotent: true,
        leaseSeconds: 30,
      },
    },
    {
      type: "AttemptFailed",
      data: { attempt: 1, token, error: { kind: "exit_code", message: "exited with code 3" }, exitCode: 3 },
    },
  ]);
  await append(instanceStream(key("b"), DAY), [
    {
      type: "InstanceUpstreamFailed",
      data: {
        key: key("b"),
        logicalDate: DAY,
        failedParent: key("a"),
        reason: `upstream ${id("a")} failed`,
        runId,
      },
    },
  ]);
  for (const [name, state] of [
    ["a", "failed"],
    ["b", "upstream_failed"],
  ] as const)
    await append(taskStream(key(name)), [
      { type: "IntervalFailed", data: { key: key(name), logicalDate: DAY, state, reason: "it failed" } },
    ]);
  await append(runStream(runId), [
    {
      type: "RunFinished",
      data: {
        runId,
        state: "failed",
        workflow: "wf",
        logicalDate: DAY,
        succeeded: [],
        failed: [id("a")],
        skipped: [],
        upstreamFailed: [id("b")],
        cancelled: [],
      },
    },
  ]);
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-halted-"));
  log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  await failedRun();
});
afterEach(async () => {
  await log.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("retry and mark on a real log", () => {
  it("a mark reopens the run and the child in one append, and a checkpoint restores what a replay folds", async () => {
    const projection = new SchedulerProjection();
    await catchUp(log, projection);
    const head = await log.headPosition();
    const r = await actOnInterval(
      log,
      projection,
      id("a"),
      DAY,
      { kind: "mark", outcome: "skipped", reason: "no data" },
      { by: BY },
    );
    expect(r.reopened).toEqual([id("b")]);
    expect(r.run).toEqual({ runId, reopened: true, try: 2 });
    // One append: three events, after the head, in the decided order.
    const written = await log.readAll({ fromPosition: head + 1n });
    expect(written.map((e) => [e.streamId, e.type])).toEqual([
      [runStream(runId), "RunStarted"],
      [instanceStream(key("a"), DAY), "IntervalMarked"],
      [taskStream(key("b")), "IntervalRetried"],
    ]);
    expect(r.position).toBe(written.at(-1)?.position);

    await catchUp(log, projection);
    await saveSnapshot(dir, log, projection);
    const restored = (await loadProjection(log, dir)).projection;
    const replayed = (await loadProjection(log, dir, { fromScratch: true })).projection;
    expect(restored.toSnapshot()).toEqual(replayed.toSnapshot());
    expect(restored.runs.get(runId)).toMatchObject({ status: "running", marked: { [id("a")]: "skipped" } });
    expect(restored.instances.get(instanceStream(key("a"), DAY))?.marked).toMatchObject({
      by: BY,
      reason: "no data",
    });
    expect(restored.tasks.get(id("b"))?.failure).toBeNull();
  });

  it("a retry decided on a stale projection is decided again on the log, and then refused", async () => {
    const stale = new SchedulerProjection();
    await catchUp(log, stale);
    // Another operator retries first, through a projection of their own.
    const other = new SchedulerProjection();
    await catchUp(log, other);
    await actOnInterval(log, other, id("a"), DAY, { kind: "retry" }, { by: "cli:bob@desk:2" });
    const head = await log.headPosition();
    await expect(actOnInterval(log, stale, id("a"), DAY, { kind: "retry" }, { by: BY })).rejects.toThrow(
      /has not ended: nothing to retry/,
    );
    expect(await log.headPosition()).toBe(head);
  });
});
