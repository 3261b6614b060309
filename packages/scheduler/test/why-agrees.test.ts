import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  explainTask,
  instanceStream,
  nextCronTime,
  SchedulerProjection,
  type TaskState,
  taskSpecSchema,
  taskStream,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, pauseTask, renderProblem, Scheduler } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import { afterEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { LATEST, SLOT_HOUR, silent, until } from "./harness.js";

/**
 * `why` and the scheduler make one decision: while `explainTask` says a task is held or blocked,
 * the scheduler has written no intent for it; when it lets the task go, the scheduler starts it.
 * Each case runs a real scheduler and worker pool on a real SQLite file, and reads `why` from
 * the same projection the scheduler decides on.
 */
let dir: string;
let log: EventLog;
let projection: SchedulerProjection;
let pool: WorkerPool | null = null;
let scheduler: Scheduler | null = null;

afterEach(async () => {
  await pool?.close(500);
  await scheduler?.stop();
  await log?.close();
  pool = null;
  scheduler = null;
  rmSync(dir, { recursive: true, force: true });
});

const CRON = `0 ${SLOT_HOUR} * * *`;
const DAY = 86_400_000;

/** Declares `yaml`'s tasks (each with one due interval, LATEST, unless it says otherwise) and starts a scheduler. */
async function start(yaml: string, opts: { run?: boolean } = {}): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), "chronolog-why-"));
  log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  projection = new SchedulerProjection();
  const text = yaml.replaceAll("$DIR", dir).replaceAll("$CRON", CRON).replaceAll("$LATEST", LATEST);
  await declare(log, projection, [{ filename: "t.yaml", document: parse(text) }], Date.now());
  await catchUp(log, projection);
  if (opts.run === false) return;
  await startScheduler();
}

/** A real worker pool and a scheduler on the test's log and projection. */
async function startScheduler(): Promise<void> {
  pool = new WorkerPool({ size: 1, capacity: 8, idPrefix: `why${process.pid}` });
  await pool.ready();
  scheduler = new Scheduler({ log, projection, dispatcher: pool, logger: silent });
  await scheduler.start();
}

const task = (name: string) => projection.tasks.get(`p/a/${name}/ALL`) as TaskState;
const why = (name: string) => explainTask(projection, `p/a/${name}/ALL`, Date.now());
/** Whether the scheduler has written an intent for the task's current interval. */
const dispatched = (name: string) => {
  const t = task(name);
  return projection.instances.has(instanceStream(t.key, t.logicalDate));
};
const release = (name: string) => writeFileSync(join(dir, `${name}.go`), "");
/** A shell command that runs until `release(name)`. */
const waitFor = (name: string) => `while [ ! -e $DIR/${name}.go ]; do sleep 0.02; done`;

describe("why and the scheduler agree", () => {
  it("a task waiting for a slot on its connection: held, with the holder, and not dispatched", async () => {
    await start(`
connections:
  - { name: pg, operators: [shell], maxParallelism: 1 }
tasks:
  - { project: p, account: a, name: s1, cron: "$CRON", startDate: "$LATEST", connection: pg, idempotent: true, operator: { type: shell, command: "${waitFor("s1")}" } }
  - { project: p, account: a, name: s2, cron: "$CRON", startDate: "$LATEST", connection: pg, idempotent: true, operator: { type: shell, command: "${waitFor("s2")}" } }
`);
    // One of the two holds the slot (the pass gives it out in key order on one interval).
    await until("one task to run", () => projection.instances.size === 1);
    const [holder, waiter] = dispatched("s1") ? ["s1", "s2"] : ["s2", "s1"];
    await until("the holder to start", () => why(holder as string).condition === "running");
    const w = why(waiter as string);
    expect(w.condition).toBe("held");
    expect(w.reasons[0]).toMatch(
      new RegExp(
        `^waiting for a slot on connection pg \\(1 of 1 in use: p/a/${holder}/ALL since \\d\\d:\\d\\d:\\d\\dZ\\); first in line for it \\(its priority 0\\)$`,
      ),
    );
    expect(w.decision).toMatchObject({
      kind: "held",
      hold: { on: "connection", connection: "pg", inUse: 1, limit: 1 },
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(dispatched(waiter as string)).toBe(false);
    release(holder as string);
    release(waiter as string);
    await until(
      "both to finish",
      () => task("s1").prevIntervalStart === LATEST && task("s2").prevIntervalStart === LATEST,
    );
  });

  it("a task waiting for a slot in its run (maxActiveTasks): held with the run's numbers", async () => {
    await start(`
workflows:
  - name: etl
    project: p
    account: a
    cron: "$CRON"
    startDate: "$LATEST"
    maxActiveTasks: 2
    tasks:
      - { name: t1, idempotent: true, operator: { type: shell, command: "${waitFor("t1")}" } }
      - { name: t2, idempotent: true, operator: { type: shell, command: "${waitFor("t2")}" } }
      - { name: t3, idempotent: true, operator: { type: shell, command: "${waitFor("t3")}" } }
`);
    await until(
      "two tasks to run",
      () => ["t1", "t2", "t3"].filter((t) => why(t).condition === "running").length === 2,
    );
    const waiter = ["t1", "t2", "t3"].find((t) => !dispatched(t)) as string;
    const w = why(waiter);
    expect(w.condition).toBe("held");
    expect(w.reasons).toEqual([
      `waiting for a slot in run etl@${LATEST.replace(":00.000Z", "Z")} (2 of 2 in use); first in line for it (its priority 0)`,
    ]);
    await new Promise((r) => setTimeout(r, 200));
    expect(dispatched(waiter)).toBe(false);
    for (const t of ["t1", "t2", "t3"]) if (t !== waiter) release(t);
    await until("the waiter to be dispatched", () => dispatched(waiter));
    release(waiter);
    await until("all to finish", () => ["t1", "t2", "t3"].every((t) => task(t).prevIntervalStart === LATEST));
  });

  it("a run that waits for an earlier one (maxActiveRuns): held until that run finishes", async () => {
    const earlier = new Date(Date.parse(LATEST) - DAY).toISOString();
    await start(`
workflows:
  - name: daily
    project: p
    account: a
    cron: "$CRON"
    startDate: "${earlier}"
    maxActiveRuns: 1
    tasks:
      - { name: slow, idempotent: true, operator: { type: shell, command: "${waitFor("slow")}" } }
      - { name: quick, idempotent: true, operator: { type: noop } }
`);
    // The earlier day's run goes on while slow runs; quick finishes it and moves to the later
    // day, whose run cannot start while the earlier one is going.
    await until("quick to reach the later day", () => task("quick").logicalDate === LATEST);
    await until("quick to be held", () => why("quick").condition === "held");
    expect(why("slow").condition).toBe("running");
    expect(why("quick").reasons).toEqual([
      "waiting for a run of workflow daily to finish (1 of 1 run going)",
    ]);
    await new Promise((r) => setTimeout(r, 300));
    expect(why("quick").condition).toBe("held");
    expect(dispatched("quick")).toBe(false);
    expect(projection.runs.has(`daily@${LATEST}`)).toBe(false);
    release("slow");
    await until(
      "both days to finish",
      () => task("slow").prevIntervalStart === LATEST && task("quick").prevIntervalStart === LATEST,
    );
  });

  it("a payload that does not render: held with the renderer's message, and never dispatched", async () => {
    await start("tasks: []", { run: false });
    // A declaration whose template cannot render (recorded by a producer that did not check it:
    // `declare` refuses one): the scheduler holds the task, and why says so, with the same message.
    const spec = taskSpecSchema.parse({
      key: { project: "p", account: "a", name: "tpl", partition: "ALL" },
      cron: CRON,
      startDate: LATEST,
      idempotent: true,
      operator: { type: "shell", command: "echo {{ config.missing.deeper }}" },
    });
    await log.append(
      taskStream(spec.key),
      [
        {
          type: "TaskDeclared",
          data: {
            key: spec.key,
            spec,
            logicalDate: LATEST,
            nextRunDate: nextCronTime(CRON, "UTC", new Date(LATEST)).toISOString(),
          },
        },
      ],
      { expectedRevision: "no_stream" },
    );
    await catchUp(log, projection);
    await startScheduler();
    const held = await until("the task to be held", () => {
      const w = explainTask(projection, "p/a/tpl/ALL", Date.now(), {
        renderProblem: renderProblem(projection),
      });
      return w.condition === "held" ? w : undefined;
    });
    expect(held.reasons[0]).toMatch(
      /^its payload does not render \(operator\.command: .*config\.missing.*\): held until its declaration changes$/,
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(dispatched("tpl")).toBe(false);
  });

  it("a paused task says why it was paused, and a child of a paused parent says its parent is paused", async () => {
    await start(
      `
tasks:
  - { project: p, account: a, name: up, cron: "$CRON", startDate: "$LATEST", idempotent: true, operator: { type: noop } }
  - { project: p, account: a, name: down, parents: [p/a/up/ALL], cron: "$CRON", startDate: "$LATEST", idempotent: true, operator: { type: noop } }
`,
      { run: false },
    );
    await pauseTask(log, projection, "p/a/up/ALL", "the warehouse is being migrated");
    await catchUp(log, projection);
    await startScheduler();
    await new Promise((r) => setTimeout(r, 300));
    expect(why("up")).toMatchObject({
      condition: "paused",
      reasons: ["the task is paused: the warehouse is being migrated"],
    });
    const down = why("down");
    expect(down.condition).toBe("blocked");
    expect(down.reasons[0]).toContain("paused");
    expect(dispatched("up")).toBe(false);
    expect(dispatched("down")).toBe(false);
  });

  it("a retry delay says when the retry is due, and nothing runs before it", async () => {
    await start(`
tasks:
  - { project: p, account: a, name: flaky, cron: "$CRON", startDate: "$LATEST", idempotent: true, retry: { maxAttempts: 2, initialDelayMs: 1500, jitter: 0 }, operator: { type: shell, command: "if [ -e $DIR/ok ]; then exit 0; fi; touch $DIR/ok; echo first try fails >&2; exit 3" } }
`);
    await until("the first attempt to fail", () => why("flaky").condition === "retry_wait");
    const w = why("flaky");
    expect(w.reasons[0]).toMatch(
      /^attempt 1 for .* failed \(exited with code 3\); retry due \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    );
    expect(w.decision?.kind).toBe("retry_at");
    const attempts = () =>
      projection.instances.get(instanceStream(task("flaky").key, LATEST))?.attempts.length;
    expect(attempts()).toBe(1);
    await until("the retry to succeed", () => task("flaky").prevIntervalStart === LATEST, 10_000);
    const types = (await log.readStream(instanceStream(task("flaky").key, LATEST))).map((e) => e.type);
    expect(types.filter((t) => t === "DispatchIntended")).toHaveLength(2);
  });

  it("a task stopped by its own failed interval says so, with the last line of stderr", async () => {
    await start(`
tasks:
  - { project: p, account: a, name: broken, cron: "$CRON", startDate: "${new Date(Date.parse(LATEST) - DAY).toISOString()}", idempotent: true, operator: { type: shell, command: "echo working; echo 'connection refused' >&2; exit 2" } }
`);
    await until("the interval to fail for good", () => task("broken").failure !== null);
    const failed = task("broken").failure?.logicalDate as string;
    const w = why("broken");
    expect(w.condition).toBe("failed");
    expect(w.reasons).toEqual([
      `blocked by its own failed interval ${failed.replace(":00.000Z", "Z")} (a task never advances past an interval it did not complete: retry it, or mark it succeeded or skipped)`,
      `${failed.replace(":00.000Z", "Z")} ended failed: exited with code 2`,
      "last line of stderr: connection refused",
    ]);
    // The later interval is due, but the scheduler never goes past the failed one.
    await new Promise((r) => setTimeout(r, 300));
    expect(task("broken").logicalDate).toBe(failed);
    expect(projection.instances.get(instanceStream(task("broken").key, LATEST))).toBeUndefined();
  });
});
