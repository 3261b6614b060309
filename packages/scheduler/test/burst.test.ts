import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SchedulerProjection } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import type { RunCommand, WorkerReport } from "@chronolog/worker";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { declare } from "../src/declare.js";
import type { Dispatcher } from "../src/dispatcher.js";
import { catchUp } from "../src/projection-loader.js";
import { Scheduler } from "../src/scheduler.js";
import { DAY, LATEST, SLOT_HOUR, silent, until } from "./harness.js";

/** Hands nothing to a worker: records what it is given, dispatch by dispatch. */
class RecordingDispatcher implements Dispatcher {
  readonly batches: RunCommand[][] = [];
  dispatch(commands: readonly RunCommand[]): void {
    this.batches.push([...commands]);
  }
  onReport(_listener: (r: WorkerReport) => void): () => void {
    return () => {};
  }
  async query(): Promise<Map<string, string>> {
    return new Map();
  }
  cancel(): void {}
  proceed(): void {}
}

let dir: string;
let log: EventLog;
let projection: SchedulerProjection;
let scheduler: Scheduler | null = null;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "chronolog-burst-"));
  log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  projection = new SchedulerProjection();
});
afterEach(async () => {
  await scheduler?.stop();
  scheduler = null;
  await log.close();
  rmSync(dir, { recursive: true, force: true });
});

/** `n` daily no-op tasks, the i-th due from `daysAgo(i)` days before the latest slot, with `extra` fields. */
function tasks(
  prefix: string,
  n: number,
  daysAgo: (i: number) => number,
  extra: Record<string, unknown> = {},
) {
  return Array.from({ length: n }, (_, i) => ({
    project: "p",
    account: "a",
    name: `${prefix}${i}`,
    cron: `0 ${SLOT_HOUR} * * *`,
    startDate: new Date(Date.parse(LATEST) - daysAgo(i) * DAY).toISOString(),
    catchup: true,
    idempotent: true,
    operator: { type: "noop" },
    ...extra,
  }));
}

async function declareDocument(document: Record<string, unknown>): Promise<void> {
  await declare(log, projection, [{ filename: "t.json", document }], Date.now());
  await catchUp(log, projection);
}

describe("a burst of due tasks", () => {
  it("is decided in pieces: each dispatched as its intents are durable, every task once", async () => {
    await declareDocument({ tasks: tasks("t", 2500, () => 0) });
    const dispatcher = new RecordingDispatcher();
    scheduler = new Scheduler({ log, projection, dispatcher, logger: silent });
    await scheduler.start();
    await until("every task dispatched", () => dispatcher.batches.flat().length === 2500, 30_000);
    const sizes = dispatcher.batches.map((b) => b.length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(250);
    expect(sizes.length).toBeGreaterThanOrEqual(10);
    const dispatched = dispatcher.batches.flat().map((c) => c.taskKey);
    expect(new Set(dispatched).size).toBe(2500);
    expect(scheduler.stats.passes).toBeGreaterThanOrEqual(10);
  });

  it("decides the tasks of a shared connection together: its one slot goes to the oldest interval", async () => {
    // 1,500 tasks on one connection of one slot, each due from another day; the oldest is declared last.
    await declareDocument({
      connections: [{ name: "warehouse", maxParallelism: 1 }],
      tasks: tasks("c", 1500, (i) => 1 + i, { connection: "warehouse" }),
    });
    const dispatcher = new RecordingDispatcher();
    scheduler = new Scheduler({ log, projection, dispatcher, logger: silent });
    await scheduler.start();
    await until("a task dispatched", () => dispatcher.batches.flat().length === 1, 30_000);
    await new Promise((r) => setTimeout(r, 200));
    expect(dispatcher.batches.flat().map((c) => c.taskKey)).toEqual(["p/a/c1499/ALL"]);
  });
});
