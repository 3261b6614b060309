import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { explainTask, instanceStream, SchedulerProjection, type TaskState } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, pauseTask, Scheduler } from "@chronolog/scheduler";
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
        `^waiting for a slot on connection pg \\(1 of 1 in use: p/a/${holder}/ALL since \\d\\d:\\d\\d:\\d\\dZ\\)$`,
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
      `waiting for a slot in run etl@${LATEST.replace(":00.000Z", "Z")} (2 of 2 in use)`,
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
      - { name: d1, idempotent: true, operator: { type: shell, command: "${waitFor("d1")}" } }
      - { name: d2, parents: [d1], idempotent: true, operator: { type: noop } }
`);
    // d1 runs the earlier day; d2 waits for it (blocked); the later day cannot start a run.
    await until("d1 to run", () => why("d1").condition === "running");
    const d2 = why("d2");
    expect(d2.condition).toBe("blocked");
    expect(d2.reasons[0]).toContain("p/a/d1/ALL");
    release("d1");
    await until("d1 to move to the later day", () => task("d1").logicalDate === LATEST);
    // d1's later day waits while d2 finishes the earlier run: either it is held by
    // maxActiveRuns, or it already runs once the earlier run has finished — never both at once.
    for (let i = 0; i < 50 && task("d2").prevIntervalStart !== earlier; i++) {
      const d1 = why("d1");
      if (d1.condition === "held") {
        expect(d1.reasons).toEqual(["waiting for a run of workflow daily to finish (1 of 1 runs going)"]);
        expect(dispatched("d1")).toBe(false);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    await until("both days to finish", () => task("d2").prevIntervalStart === LATEST);
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
    pool = new WorkerPool({ size: 1, capacity: 8, idPrefix: `why${process.pid}` });
    await pool.ready();
    scheduler = new Scheduler({ log, projection, dispatcher: pool, logger: silent });
    await scheduler.start();
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
      `blocked by its own failed interval ${failed.replace(":00.000Z", "Z")} (a task never advances past an interval it did not complete; rerun or abandon it)`,
      `${failed.replace(":00.000Z", "Z")} ended failed: exited with code 2`,
      "last line of stderr: connection refused",
    ]);
    // The later interval is due, but the scheduler never goes past the failed one.
    await new Promise((r) => setTimeout(r, 300));
    expect(task("broken").logicalDate).toBe(failed);
    expect(projection.instances.get(instanceStream(task("broken").key, LATEST))).toBeUndefined();
  });
});
