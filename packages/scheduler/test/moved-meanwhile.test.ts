import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { instanceStream, SchedulerProjection, type TaskState } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import {
  backfill,
  cancelBackfill,
  catchUp,
  declare,
  handleCommand,
  pauseTask,
  trigger,
} from "@chronolog/scheduler";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ConnectionSlots } from "../src/admission/connection-slots.js";
import { IntentWriter } from "../src/intent-writer.js";
import { startedRun } from "./harness.js";

/**
 * A dispatch intent is decided on where the task stands in the scheduler's projection, which
 * trails the log: an operator's write to the task meanwhile (a pause, a backfill that sets it
 * back) must refuse the intent, not let an attempt of an interval the task has left run.
 */
const HOUR = 3_600_000;
let cleanup: (() => Promise<void>) | null = null;
afterEach(async () => {
  await cleanup?.();
  cleanup = null;
});

async function twoReaders(
  connection: boolean,
  workflow = false,
): Promise<{
  log: EventLog;
  operator: SchedulerProjection;
  scheduler: SchedulerProjection;
}> {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-moved-"));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  cleanup = async () => {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  };
  const start = new Date(Math.floor(Date.now() / HOUR) * HOUR - 4 * HOUR).toISOString();
  const yaml = workflow
    ? `workflows:\n  - { name: w, project: p, account: a, cron: "0 * * * *", startDate: "${start}", catchup: false, tasks: [{ name: t, operator: { type: noop } }] }\n`
    : `${connection ? "connections:\n  - { name: wh, maxParallelism: 2 }\n" : ""}tasks:\n  - { project: p, account: a, name: t, cron: "0 * * * *", startDate: "${start}", catchup: false, ${connection ? "connection: wh, " : ""}operator: { type: noop } }\n`;
  const operator = new SchedulerProjection();
  await declare(log, operator, [{ filename: "t.yaml", document: parse(yaml) }], Date.now());
  await catchUp(log, operator);
  const scheduler = new SchedulerProjection();
  await catchUp(log, scheduler);
  return { log, operator, scheduler };
}

/** The scheduler's intent writer on `projection`, its attempts' tokens all one. */
const intentWriter = (log: EventLog, projection: SchedulerProjection) =>
  new IntentWriter(log, projection, new ConnectionSlots(log, { wakeWaiters: () => {} }), () => "token-0001");

describe("an intent decided before the task moved", () => {
  for (const connection of [false, true]) {
    it(`is not written, and is decided again once the move is seen${connection ? " (one that takes a connection's slot)" : ""}`, async () => {
      const { log, operator, scheduler } = await twoReaders(connection);
      const writer = intentWriter(log, scheduler);
      const task = scheduler.tasks.get("p/a/t/ALL") as TaskState;
      // The scheduler has decided to dispatch; an operator pauses the task before it writes.
      const command = writer.prepare(task, null, scheduler.connectionRevisions.get("wh"));
      if (!("decide" in command)) throw new Error("the payload did not render");
      await pauseTask(log, operator, task.id, "not now");
      const outcome = writer.outcome(command, await handleCommand(log, command));
      const head = await log.headPosition();
      expect(outcome).toEqual({ kind: "look_again", until: head });
      // Nothing was written for the interval: no attempt of a paused task runs.
      expect(await log.readStream(instanceStream(task.key, task.logicalDate))).toEqual([]);
      // Once the scheduler has seen the pause, the task is paused there and decides no intent.
      await catchUp(log, scheduler);
      expect(scheduler.tasks.get(task.id)?.status).toBe("paused");
    });
  }

  it("is written after an event of no meaning to the task (appended by hand) once it is seen", async () => {
    const { log, scheduler } = await twoReaders(false);
    await log.append("task-p/a/t/ALL", [{ type: "Note", data: { text: "looked at by hand" } }], {
      expectedRevision: "any",
    });
    await catchUp(log, scheduler);
    const writer = intentWriter(log, scheduler);
    const command = writer.prepare(scheduler.tasks.get("p/a/t/ALL") as TaskState, null);
    if (!("decide" in command)) throw new Error("the payload did not render");
    // Not refused for good: the task's revision counts the note as the stream does.
    expect(writer.outcome(command, await handleCommand(log, command)).kind).toBe("dispatch");
  });

  it("is written when the task has not moved", async () => {
    const { log, scheduler } = await twoReaders(false);
    const writer = intentWriter(log, scheduler);
    const task = scheduler.tasks.get("p/a/t/ALL") as TaskState;
    const command = writer.prepare(task, null);
    if (!("decide" in command)) throw new Error("the payload did not render");
    const outcome = writer.outcome(command, await handleCommand(log, command));
    expect(outcome.kind).toBe("dispatch");
    expect((await log.readStream(instanceStream(task.key, task.logicalDate))).map((e) => e.type)).toEqual([
      "DispatchIntended",
    ]);
  });
});

/** The scheduler's dispatch of the interval `task` stands at, as it writes it (its projection caught up). */
async function dispatch(log: EventLog, scheduler: SchedulerProjection, id: string): Promise<string> {
  await catchUp(log, scheduler);
  const task = scheduler.tasks.get(id) as TaskState;
  const writer = intentWriter(log, scheduler);
  const command = writer.prepare(task, null);
  if (!("decide" in command)) throw new Error("the payload did not render");
  expect(writer.outcome(command, await handleCommand(log, command)).kind).toBe("dispatch");
  return task.logicalDate;
}

const keyOfT = { project: "p", account: "a", name: "t", partition: "ALL" } as const;

/** A backfill of the two intervals before the one `id` stands at, as the operator writes it. */
async function backfillTwoBack(log: EventLog, operator: SchedulerProjection, id: string) {
  const front = (operator.tasks.get(id) as TaskState).logicalDate;
  const first = new Date(Date.parse(front) - 2 * HOUR).toISOString();
  const last = new Date(Date.parse(front) - HOUR).toISOString();
  return { front, first, plan: await backfill(log, operator, id, first, last, false) };
}

const resets = async (log: EventLog, id: string) =>
  (await log.readStream(`task-${id}`)).filter((e) => e.type === "IntervalReset").map((e) => e.data);

describe("an operator's move decided before the scheduler dispatched", () => {
  it("a backfill finds the interval under way and is refused, not written over it", async () => {
    const { log, operator, scheduler } = await twoReaders(false);
    const id = "p/a/t/ALL";
    const front = (operator.tasks.get(id) as TaskState).logicalDate;
    // The operator's projection is read; the scheduler dispatches the interval the task stands at.
    const at = await dispatch(log, scheduler, id);
    expect(at).toBe(front);
    const from = new Date(Date.parse(front) - 2 * HOUR).toISOString();
    const to = new Date(Date.parse(front) - HOUR).toISOString();
    await expect(backfill(log, operator, id, from, to, false)).rejects.toMatchObject({
      type: "state",
      message: expect.stringContaining(
        `wait for the running intervals to finish first: ${id} ${front} is queued`,
      ),
    });
    // The task was not set back: the attempt goes on for the interval it was dispatched for.
    expect(await resets(log, id)).toEqual([]);
  });

  it("a cancel finds the walk's interval under way and lets it finish first", async () => {
    const { log, operator, scheduler } = await twoReaders(false);
    const id = "p/a/t/ALL";
    const { front, first, plan } = await backfillTwoBack(log, operator, id);
    await catchUp(log, operator);
    // The scheduler dispatches the backfill's first interval after the operator read the log.
    expect(await dispatch(log, scheduler, id)).toBe(first);
    const cancelled = await cancelBackfill(log, operator, plan.backfillId as string);
    expect(cancelled.targets).toEqual([{ task: id, at: first, returnsTo: front, finishing: first }]);
    // Cut short where it stands (its walk goes on there), not sent back under the attempt.
    expect((await resets(log, id)).at(-1)).toMatchObject({
      logicalDate: first,
      until: first,
      continues: true,
    });
  });

  it("a cancel does not close the interval of the backfill's run that was dispatched meanwhile", async () => {
    const { log, operator, scheduler } = await twoReaders(false, true);
    const id = "p/a/t/ALL";
    const { front, first, plan } = await backfillTwoBack(log, operator, id);
    // The scheduler starts the backfill's run of that date (as it does before the interval's
    // dispatch), and the operator reads the log.
    const runId = await startedRun(log, "w", first, [keyOfT], "backfill");
    await catchUp(log, operator);
    expect(operator.runs.get(runId)?.status).toBe("running");
    expect(await dispatch(log, scheduler, id)).toBe(first);
    const cancelled = await cancelBackfill(log, operator, plan.backfillId as string);
    // The interval under way finishes (its run waits for it); only the date it will not reach closes.
    expect(cancelled.targets).toEqual([{ task: id, at: first, returnsTo: front, finishing: first }]);
    expect(cancelled.runTasks.map((r) => r.logicalDate)).not.toContain(first);
    const stream = await log.readStream(instanceStream(keyOfT, first));
    expect(stream.map((e) => e.type)).toEqual(["DispatchIntended"]);
  });
});

describe("a trigger decided before the scheduler dispatched", () => {
  it("finds the interval under way and is refused, not written over it", async () => {
    const { log, operator, scheduler } = await twoReaders(false, true);
    const id = "p/a/t/ALL";
    const front = (operator.tasks.get(id) as TaskState).logicalDate;
    expect(await dispatch(log, scheduler, id)).toBe(front);
    const earlier = new Date(Date.parse(front) - 2 * HOUR).toISOString();
    const refused = await trigger(log, operator, "w", earlier, {}, Date.now()).catch((e: unknown) => e);
    expect(refused).toMatchObject({ type: "state" });
    expect((refused as Error).message).toContain(`${id} ${front} is queued`);
    expect(await resets(log, id)).toEqual([]);
  });
});

describe("a declaration that moves a task to its new schedule, decided before a dispatch", () => {
  it("finds the interval under way and leaves the task there (the new schedule follows it)", async () => {
    const { log, scheduler } = await twoReaders(false);
    const id = "p/a/t/ALL";
    const at = (scheduler.tasks.get(id) as TaskState).logicalDate;
    const start = new Date(Math.floor(Date.now() / HOUR) * HOUR - 4 * HOUR).toISOString();
    const yaml = `tasks:\n  - { project: p, account: a, name: t, cron: "30 * * * *", startDate: "${start}", catchup: false, operator: { type: noop } }\n`;
    // The scheduler dispatches the interval the task stands at between the declaration's read
    // of the log and its append.
    let dispatched = false;
    const racing = new Proxy(log, {
      get(target, name) {
        if (name === "appendMany")
          return async (...args: Parameters<EventLog["appendMany"]>) => {
            if (!dispatched) {
              dispatched = true;
              await dispatch(log, scheduler, id);
            }
            return target.appendMany(...args);
          };
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const declaring = new SchedulerProjection();
    await declare(racing, declaring, [{ filename: "t.yaml", document: parse(yaml) }], Date.now());
    expect(dispatched).toBe(true);
    const events = await log.readStream(`task-${id}`);
    // Its declaration changed, and it was not moved off the interval under way.
    expect(events.map((e) => e.type)).toEqual(["TaskDeclared", "TaskDeclarationChanged"]);
    await catchUp(log, declaring);
    expect(declaring.tasks.get(id)?.logicalDate).toBe(at);
  });
});
