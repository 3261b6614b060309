// bench/reconcile: a reconcile pass's cost as completed history grows, and the time from a
// worker's death to its attempt being retried (with the supervisor, and by lease expiry).
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { instanceStream, lastSlotEndingBy, SchedulerProjection } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, loadProjection, Reconciler, Scheduler } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import { parse } from "yaml";
import { fmt, percentile, printTable, silent } from "../table.mjs";

const quick = process.env.BENCH_QUICK === "1";
const levels = quick ? [10_000, 50_000] : [10_000, 100_000, 1_000_000];
const ACTIVE = 100;
const key = (i) => ({ project: "bench", account: "b", name: `t${i % 1000}`, partition: "ALL" });
const day = (n) => new Date(Date.UTC(2020, 0, 1) + n * 3_600_000).toISOString();

// ---- pass cost against history ---------------------------------------------------------------
async function passCost() {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-reconcile-"));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "bench", watchOtherProcesses: false });
  const rows = [];
  let written = 0;
  // 100 attempts in flight, running with fresh leases.
  const active = [];
  for (let i = 0; i < ACTIVE; i++) {
    const k = { project: "bench", account: "b", name: `active${i}`, partition: "ALL" };
    const token = randomUUID();
    active.push(
      log.append(
        instanceStream(k, day(0)),
        [
          {
            type: "DispatchIntended",
            data: {
              key: k,
              logicalDate: day(0),
              attempt: 1,
              token,
              operator: { type: "noop" },
              idempotent: true,
              leaseSeconds: 3600,
            },
          },
          {
            type: "AttemptStarted",
            data: {
              attempt: 1,
              token,
              workerId: "bench-1",
              leaseExpiresAt: new Date(Date.now() + 3_600_000).toISOString(),
            },
          },
        ],
        { expectedRevision: "no_stream" },
      ),
    );
  }
  await Promise.all(active);
  const pool = { onReport() {}, query: async () => new Map(), dispatch() {}, cancel() {}, proceed() {} };
  for (const target of levels) {
    const t0 = performance.now();
    while (written < target) {
      const batch = [];
      for (let j = 0; j < 500 && written < target; j++, written++) {
        const k = key(written);
        const token = randomUUID();
        batch.push(
          log.append(
            instanceStream(k, day(1 + Math.floor(written / 1000))),
            [
              {
                type: "DispatchIntended",
                data: {
                  key: k,
                  logicalDate: day(1 + Math.floor(written / 1000)),
                  attempt: 1,
                  token,
                  operator: { type: "noop" },
                  idempotent: true,
                  leaseSeconds: 30,
                },
              },
              {
                type: "AttemptStarted",
                data: { attempt: 1, token, workerId: "bench-1", leaseExpiresAt: new Date().toISOString() },
              },
              { type: "AttemptSucceeded", data: { attempt: 1, token, durationMs: 1, exitCode: 0 } },
            ],
            { expectedRevision: "no_stream" },
          ),
        );
      }
      await Promise.all(batch);
    }
    const writeSecs = (performance.now() - t0) / 1000;
    const r0 = performance.now();
    const { projection } = await loadProjection(log, dir, { fromScratch: true });
    const replaySecs = (performance.now() - r0) / 1000;
    const reconciler = new Reconciler({
      log,
      projection,
      dispatcher: pool,
      actor: "bench",
      confirmGraceMs: 60_000,
    });
    // The replay's garbage is collected first, so that the passes time a pass, not a
    // collection the replay left due (bench/run.mjs runs each benchmark with --expose-gc).
    globalThis.gc?.();
    const times = [];
    for (let p = 0; p < 60; p++) {
      const s = performance.now();
      const result = await reconciler.pass();
      times.push(performance.now() - s);
      if (result.written !== 0) throw new Error("the pass should find nothing to repair");
    }
    times.sort((a, b) => a - b);
    rows.push({
      history: target,
      inMemory: projection.instances.size,
      p50: percentile(times, 50),
      p99: percentile(times, 99),
      writeSecs,
      replaySecs,
    });
  }
  await log.close();
  rmSync(dir, { recursive: true, force: true });
  return rows;
}

// ---- time from a worker's death to the retry ---------------------------------------------------
async function killToRetry(signal) {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-kill-"));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "bench" });
  const projection = new SchedulerProjection();
  // A daily slot hour twelve hours away from now, and the latest interval of it that has ended:
  // no run crosses the slot's boundary.
  const slotHour = (new Date().getUTCHours() + 12) % 24;
  const latest = lastSlotEndingBy(`0 ${slotHour} * * *`, "UTC", new Date());
  const pidFile = join(dir, "pid");
  const yaml = `tasks:\n  - { project: bench, account: b, name: victim, cron: "0 ${slotHour} * * *", startDate: "${new Date(latest.getTime() - 5 * 86_400_000).toISOString()}", catchup: false, idempotent: true, leaseSeconds: 2, operator: { type: shell, command: "[ -f ${pidFile} ] && exit 0; echo $CHRONOLOG_WORKER_PID > ${pidFile}; sleep 30" } }\n`;
  await declare(log, projection, [{ filename: "b.yaml", document: parse(yaml) }], Date.now());
  await catchUp(log, projection);
  const pool = new WorkerPool({ size: 2, capacity: 4, idPrefix: "wbench", queryTimeoutMs: 500 });
  await pool.ready();
  const scheduler = new Scheduler({
    log,
    projection,
    dispatcher: pool,
    logger: silent,
  });
  const reconciler = new Reconciler({
    log,
    projection,
    dispatcher: pool,
    actor: "bench",
    intervalMs: 200,
    confirmGraceMs: 1000,
    scheduler,
  });
  await scheduler.start();
  reconciler.start();
  while (!existsSync(pidFile) || readFileSync(pidFile, "utf8").trim() === "")
    await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 100));
  const pid = Number(readFileSync(pidFile, "utf8"));
  const stream = instanceStream(
    { project: "bench", account: "b", name: "victim", partition: "ALL" },
    latest.toISOString(),
  );
  const t0 = performance.now();
  process.kill(pid, signal);
  for (;;) {
    const inst = projection.instances.get(stream);
    if (inst && inst.attempts.length >= 2) break;
    if (!inst && projection.tasks.get("bench/b/victim/ALL")?.prevIntervalStart === latest.toISOString())
      break;
    await new Promise((r) => setTimeout(r, 2));
  }
  const ms = performance.now() - t0;
  if (signal === "SIGSTOP") process.kill(pid, "SIGKILL");
  reconciler.stop();
  await pool.close(500);
  await scheduler.stop();
  await log.close();
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

const passes = await passCost();
const supervised = await killToRetry("SIGKILL");
const byLease = await killToRetry("SIGSTOP");

console.log(`\nbench/reconcile (embedded SQLite log; ${ACTIVE} attempts in flight)\n`);
printTable(
  [
    "completed instances in the log",
    "held in memory",
    "pass p50, ms",
    "pass p99, ms",
    "replay from scratch, s",
  ],
  passes.map((r) => [fmt(r.history), fmt(r.inMemory), fmt(r.p50, 3), fmt(r.p99, 3), fmt(r.replaySecs, 1)]),
);
const first = passes[0].p50;
const last = passes.at(-1).p50;
console.log(`\npass cost ratio, largest history / smallest: ${fmt(last / first, 2)}x (target: within 2x)\n`);
printTable(
  ["worker lost", "until its attempt is retried, ms", "target"],
  [
    ["SIGKILL (the supervisor sees the exit)", fmt(supervised), "< 1,000"],
    [
      "SIGSTOP (silent: lease 2 s + reconcile pass + worker query)",
      fmt(byLease),
      "within the lease timeout + a pass",
    ],
  ],
);
