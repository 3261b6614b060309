import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  instanceStream,
  lastSlotEndingBy,
  parseTaskKey,
  runIdOf,
  runStream,
  SchedulerProjection,
  type TaskKey,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, Reconciler, Scheduler } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import { parse } from "yaml";

export const silent = {
  info() {},
  warn() {},
  debug() {},
  error(o: object, m?: string) {
    console.error(m, o);
  },
};

export const DAY = 86_400_000;
/**
 * A daily slot hour twelve hours away from now, and the latest interval of that schedule that
 * has ended: the interval a task with catch-up off jumps to. With the slot hour far from now,
 * no test or benchmark runs across the slot's boundary (a fixed 02:00 moved the latest interval
 * under any run made between 02:00 and 03:00 UTC).
 */
export const SLOT_HOUR = (new Date().getUTCHours() + 12) % 24;
export const LATEST = lastSlotEndingBy(`0 ${SLOT_HOUR} * * *`, "UTC", new Date()).toISOString();

export interface Harness {
  readonly dir: string;
  readonly log: EventLog;
  readonly projection: SchedulerProjection;
  pool: WorkerPool;
  scheduler: Scheduler | null;
  reconciler: Reconciler | null;
  effects(name: string): number;
  start(options?: { reconcile?: boolean; poolPrefix?: string; workerGone?: boolean }): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A daily task per name: shell `echo x >> <dir>/<name>.effects`, catch-up off, so each has one
 * due interval (LATEST). `idempotent` per name.
 */
export async function harness(
  tasks: Array<{ name: string; idempotent: boolean; command?: string; lease?: number; queue?: string }>,
): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), "chronolog-sched-"));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
  const projection = new SchedulerProjection();
  const yaml = `tasks:\n${tasks
    .map(
      (t) =>
        `  - { project: p, account: a, name: ${t.name}, cron: "0 ${SLOT_HOUR} * * *", startDate: "${new Date(Date.parse(LATEST) - 30 * DAY).toISOString()}", catchup: false, idempotent: ${t.idempotent}, leaseSeconds: ${t.lease ?? 2},${t.queue ? ` queue: ${t.queue},` : ""} operator: { type: shell, command: ${JSON.stringify(t.command ?? `echo x >> ${join(dir, `${t.name}.effects`)}`)} } }`,
    )
    .join("\n")}\n`;
  await declare(log, projection, [{ filename: "t.yaml", document: parse(yaml) }], Date.now());
  await catchUp(log, projection);
  const h: Harness = {
    dir,
    log,
    projection,
    pool: null as unknown as WorkerPool,
    scheduler: null,
    reconciler: null,
    effects(name) {
      const f = join(dir, `${name}.effects`);
      return existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean).length : 0;
    },
    async start(options = {}) {
      const prefix = options.poolPrefix ?? `t${Math.floor(Math.random() * 1e6)}`;
      h.pool = new WorkerPool({ size: 1, capacity: 8, idPrefix: prefix });
      await h.pool.ready();
      const scheduler = new Scheduler({
        log,
        projection,
        dispatcher: h.pool,
        logger: silent,
      });
      const rec = new Reconciler({
        log,
        projection,
        dispatcher: h.pool,
        actor: "reconciler:test",
        intervalMs: 100,
        confirmGraceMs: 300,
        scheduler,
        ...(options.workerGone === false
          ? {}
          : { isWorkerGone: (id: string) => !id.startsWith(`${prefix}-`) }),
      });
      h.scheduler = scheduler;
      h.reconciler = rec;
      await scheduler.start();
      if (options.reconcile !== false) rec.start();
    },
    async stop() {
      h.reconciler?.stop();
      await h.pool?.close(500);
      await h.scheduler?.stop();
    },
    async close() {
      await h.stop();
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return h;
}

export function key(name: string): TaskKey {
  const k = parseTaskKey(`p/a/${name}`);
  if (!k.ok) throw new Error(k.error);
  return k.key;
}

export function stream(name: string, date = LATEST): string {
  return instanceStream(key(name), date);
}

export async function until<T>(
  what: string,
  check: () => T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A run of workflow `workflow` at `logicalDate` started as the scheduler starts it (its first try). */
export async function startedRun(
  log: EventLog,
  workflow: string,
  logicalDate: string,
  tasks: readonly TaskKey[],
  trigger: "schedule" | "backfill",
): Promise<string> {
  const runId = runIdOf(workflow, logicalDate);
  await log.append(
    runStream(runId),
    [
      {
        type: "RunStarted",
        data: { runId, workflow, logicalDate, tasks: [...tasks], trigger, params: {}, try: 1 },
      },
    ],
    { expectedRevision: "no_stream" },
  );
  return runId;
}
