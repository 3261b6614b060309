// bench/scheduler: the scheduler on the embedded log, end to end with real worker processes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { lastSlotEndingBy, SchedulerProjection } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { backfill, backfillProgress, catchUp, declare, Scheduler } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import { bullmqChain, bullmqIndependent, startRedis } from "../peers/bullmq.mjs";
import { fmt, percentile, printTable, silent, waitFor } from "../table.mjs";

const quick = process.env.BENCH_QUICK === "1";
const DAY = 86_400_000;
const now = Date.now();
// A daily slot hour twelve hours away from now, and the latest interval of that schedule that
// has ended (the one a task with catch-up off jumps to): with the slot hour far from now, no run
// crosses the slot's boundary (a fixed 02:00 moved the latest interval under runs made between
// 02:00 and 03:00 UTC).
const SLOT_HOUR = (new Date(now).getUTCHours() + 12) % 24;
const latest = lastSlotEndingBy(`0 ${SLOT_HOUR} * * *`, "UTC", new Date(now));
const start = new Date(latest.getTime() - 400 * DAY).toISOString();

function taskYaml(name, parents = [], project = "bench") {
  return `  - { project: ${project}, account: b, name: ${name}, cron: "0 ${SLOT_HOUR} * * *", startDate: "${start}", catchup: false, idempotent: true, operator: { type: noop }, parents: [${parents.map((p) => `"${p}"`).join(", ")}] }\n`;
}

async function setup(label, yaml) {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), `chronolog-bench-${label}-`));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "bench" });
  const projection = new SchedulerProjection();
  await declare(
    log,
    projection,
    [{ filename: `${label}.yaml`, document: (await import("yaml")).parse(yaml) }],
    Date.now(),
  );
  await catchUp(log, projection);
  sharedPool ??= new WorkerPool({ size: 2, capacity: 5000 });
  await sharedPool.ready();
  return { dir, log, projection, pool: sharedPool };
}

/**
 * The worker processes, one pool for every run (a pool outlives its scheduler): they stay up
 * and warm from one run to the next, as a running scheduler's do and as BullMQ's worker, in this
 * process, does.
 */
let sharedPool = null;

async function teardown({ dir, log }, scheduler) {
  await scheduler?.stop();
  await log.close();
  rmSync(dir, { recursive: true, force: true });
}

// ---- 1. N independent due noop tasks -----------------------------------------------------------
async function independent(n) {
  let yaml = "tasks:\n";
  for (let i = 0; i < n; i++) yaml += taskYaml(`t${i}`);
  const env = await setup("independent", yaml);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const scheduler = new Scheduler({
    log: env.log,
    projection: env.projection,
    dispatcher: env.pool,
    logger: silent,
  });
  await scheduler.start();
  await waitFor(() => scheduler.stats.completed >= n);
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await teardown(env, scheduler);
  return { n, secs, rate: n / secs, cpuPerTaskUs: (cpu.user + cpu.system) / n };
}

// ---- 2. a chain: parent success -> child dispatch, per hop ---------------------------------------
async function chain(n) {
  let yaml = "tasks:\n";
  for (let i = 0; i < n; i++) yaml += taskYaml(`c${i}`, i === 0 ? [] : [`bench/b/c${i - 1}`]);
  const env = await setup("chain", yaml);
  const succeededAt = new Map(); // task name -> time the worker's success report reached the scheduler
  const dispatchedAt = new Map(); // task name -> time its RunCommand left for a worker
  const nameOf = (s) => /bench\/b\/(c\d+)\//.exec(s)?.[1];
  const stopHearing = env.pool.onReport((r) => {
    if (r.kind === "succeeded") succeededAt.set(nameOf(r.instanceStream), performance.now());
  });
  const dispatch = env.pool.dispatch.bind(env.pool);
  env.pool.dispatch = (cmds) => {
    const t = performance.now();
    for (const c of cmds) dispatchedAt.set(nameOf(c.instanceStream), t);
    dispatch(cmds);
  };
  const scheduler = new Scheduler({
    log: env.log,
    projection: env.projection,
    dispatcher: env.pool,
    logger: silent,
  });
  const t0 = performance.now();
  await scheduler.start();
  await waitFor(() => scheduler.stats.completed >= n);
  const wall = performance.now() - t0;
  const hops = [];
  for (let i = 1; i < n; i++) hops.push(dispatchedAt.get(`c${i}`) - succeededAt.get(`c${i - 1}`));
  hops.sort((a, b) => a - b);
  stopHearing();
  delete env.pool.dispatch;
  await teardown(env, scheduler);
  return { n, p50: percentile(hops, 50), p99: percentile(hops, 99), wall };
}

// ---- 3. the 90-day three-task backfill -------------------------------------------------------------
async function backfill90() {
  const yaml = `tasks:\n${taskYaml("orders_raw", [], "ingest")}${taskYaml("orders_enriched", ["ingest/b/orders_raw"], "sales")}${taskYaml("orders_daily_report", ["sales/b/orders_enriched"], "sales")}`;
  const env = await setup("backfill", yaml);
  const scheduler = new Scheduler({
    log: env.log,
    projection: env.projection,
    dispatcher: env.pool,
    logger: silent,
  });
  await scheduler.start();
  await waitFor(() => scheduler.stats.completed >= 3);
  const from = new Date(latest.getTime() - 100 * DAY);
  const to = new Date(from.getTime() + 89 * DAY);
  const t0 = performance.now();
  const plan = await backfill(
    env.log,
    env.projection,
    "ingest/b/orders_raw/ALL",
    from.toISOString(),
    to.toISOString(),
    true,
  );
  await waitFor(() => backfillProgress(env.projection, plan).finished);
  const secs = (performance.now() - t0) / 1000;
  const intervals = plan.targets.reduce((s, t) => s + t.intervals, 0);
  await teardown(env, scheduler);
  return { secs, intervals };
}

// Chronolog, BullMQ-durable and BullMQ in memory on the same work, in turn, in the same minutes:
// this machine's speed moves with its host's load, so only a ratio measured side by side says
// anything.
const N = quick ? 2000 : 10_000;
const CHAIN = quick ? 200 : 1000;
const PAIRS = Number(process.env.BENCH_PAIRS ?? (quick ? 1 : 3));
const redis = await startRedis();
const memory = await startRedis({ durable: false });
const pairs = [];
try {
  // One round of each at a fifth of the size first, not counted: both start with their code
  // compiled, as a scheduler or a queue that has been running does.
  await independent(N / 5);
  await bullmqIndependent(redis, N / 5);
  await bullmqIndependent(memory, N / 5);
  await chain(CHAIN / 5);
  await bullmqChain(redis, CHAIN / 5);
  await bullmqChain(memory, CHAIN / 5);
  for (let i = 0; i < PAIRS; i++) {
    const ind = await independent(N);
    const bInd = await bullmqIndependent(redis, N);
    const mInd = await bullmqIndependent(memory, N);
    const ch = await chain(CHAIN);
    const bCh = await bullmqChain(redis, CHAIN);
    const mCh = await bullmqChain(memory, CHAIN);
    pairs.push({ ind, bInd, mInd, ch, bCh, mCh });
  }
} finally {
  await redis.stop();
  await memory.stop();
}
const bf = await backfill90();
await sharedPool?.close(1000);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ratios = (f) => pairs.map(f);
const range = (xs, digits = 2) =>
  xs.length > 1 ? ` (${fmt(Math.min(...xs), digits)}-${fmt(Math.max(...xs), digits)})` : "";
const show = (f, digits) => {
  const xs = ratios(f);
  return `${fmt(median(xs), digits)}${range(xs, digits)}`;
};
const thr = ratios((p) => p.ind.rate / p.bInd.rate);
const p50 = ratios((p) => p.ch.p50 / p.bCh.p50);
const p99 = ratios((p) => p.ch.p99 / p.bCh.p99);
const wall = ratios((p) => p.ch.wall / p.bCh.wall);
const mThr = ratios((p) => p.ind.rate / p.mInd.rate);
const mP50 = ratios((p) => p.ch.p50 / p.mCh.p50);
const mP99 = ratios((p) => p.ch.p99 / p.mCh.p99);
const mWall = ratios((p) => p.ch.wall / p.mCh.wall);
const x = (xs) => `${fmt(median(xs), 2)}x${range(xs)}`;

console.log(
  `\nbench/scheduler (embedded SQLite log, synchronous=FULL, 2 worker processes, noop tasks), beside BullMQ ${"6.7"} on two redis-servers of its own, one durable (appendonly yes, appendfsync always), one in memory (no persistence); one worker, concurrency 50; ${PAIRS} round${PAIRS === 1 ? "" : "s"} of the three in turn after a warm-up round of each; median (range)\n`,
);
printTable(
  ["measure", "chronolog", "BullMQ-durable", "ratio", "BullMQ-memory", "ratio", "target"],
  [
    [
      `${fmt(N)} independent due no-op tasks, completed per s`,
      show((p) => p.ind.rate, 0),
      show((p) => p.bInd.rate, 0),
      x(thr),
      show((p) => p.mInd.rate, 0),
      x(mThr),
      ">= 1.0x",
    ],
    [`  ... scheduler CPU per task, us`, show((p) => p.ind.cpuPerTaskUs, 1), "", "", "", "", ""],
    [
      `${fmt(CHAIN)}-step chain hop p50, ms (chronolog: success report -> child dispatched; BullMQ: completed -> next step started)`,
      show((p) => p.ch.p50, 2),
      show((p) => p.bCh.p50, 2),
      x(p50),
      show((p) => p.mCh.p50, 2),
      x(mP50),
      "<= 1.0x",
    ],
    [
      `  ... p99, ms`,
      show((p) => p.ch.p99, 2),
      show((p) => p.bCh.p99, 2),
      x(p99),
      show((p) => p.mCh.p99, 2),
      x(mP99),
      "<= 1.0x",
    ],
    [
      `  ... whole chain wall time, s`,
      show((p) => p.ch.wall / 1000, 2),
      show((p) => p.bCh.wall / 1000, 2),
      x(wall),
      show((p) => p.mCh.wall / 1000, 2),
      x(mWall),
      "<= 1.0x",
    ],
    [
      `90-day backfill of 3 tasks (${bf.intervals} intervals), wall time, s`,
      fmt(bf.secs, 2),
      "",
      "",
      "",
      "",
      "< 3",
    ],
  ],
);
