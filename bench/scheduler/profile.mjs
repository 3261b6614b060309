// Where the scheduler's time goes on N independent no-op tasks (bench/scheduler's first row), or
// with --realistic on bench/scale's catalogue (the scheduler alone, beside what `up` adds):
//
//   node --expose-gc --max-semi-space-size=32 bench/scheduler/profile.mjs [N] [--alloc] [--realistic]
//
// Runs the work twice on a fresh log each time (the first round warms the code up), profiles
// the scheduler's thread through the second with the inspector, and prints each part's share of
// that thread's time and its time per task, each sample counted under the innermost part it was
// in. Beside it, the CPU per task of the process's other threads (the engine's garbage collection
// helpers and compilers) and of the worker processes, read from /proc, and the bytes the process
// writes through system calls a task (its log's WAL and checkpoints, its pipes to the workers).
//
// With --alloc, ALLOC_TOP=n lists n sites (25 by default), and ALLOC_LIVE says which allocations
// count: all of them (unset), those that outlived a young-generation collection (`promoted`:
// what the old generation has to mark and sweep later), or those still alive at the end (`1`).
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lastSlotEndingBy, SchedulerProjection } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, Scheduler } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import { parse } from "yaml";
import { catalogue } from "../scale/catalogue.mjs";
import { fmt, printTable, silent, waitFor } from "../table.mjs";

const N = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 10_000);
/**
 * With --realistic: bench/scale's catalogue (N hourly tasks over 20 projects, 0 to 2 parents
 * each in other projects, three intervals due each) in place of N independent daily ones.
 */
const realistic = process.argv.includes("--realistic");
/** With --alloc: where the scheduler's thread allocates, from the engine's sampling heap profiler. */
const alloc = process.argv.includes("--alloc");
/** The completions the run waits for (and each per-task figure is divided by). */
const COMPLETIONS = realistic ? 3 * N : N;
const DAY = 86_400_000;
const SLOT_HOUR = (new Date().getUTCHours() + 12) % 24;
const latest = lastSlotEndingBy(`0 ${SLOT_HOUR} * * *`, "UTC", new Date());
const start = new Date(latest.getTime() - 400 * DAY).toISOString();
const HOUR = 3_600_000;
// Realistic: three intervals due, the first starting two hours before the last that has ended.
const tasks = realistic
  ? parse(catalogue(N, new Date((Math.floor(Date.now() / HOUR) - 3) * HOUR).toISOString()).text).tasks
  : Array.from({ length: N }, (_, i) => ({
      project: "bench",
      account: "b",
      name: `t${i}`,
      cron: `0 ${SLOT_HOUR} * * *`,
      startDate: start,
      catchup: false,
      idempotent: true,
      operator: { type: "noop" },
    }));

/** CPU seconds of a thread or process, from its stat line (utime and stime, in clock ticks). */
const cpuOf = (statFile) => {
  const stat = readFileSync(statFile, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
};
/** Bytes the process has written through system calls (its log's WAL and checkpoints, its pipes). */
const written = () => Number(/^wchar: (\d+)$/m.exec(readFileSync("/proc/self/io", "utf8"))[1]);
const threads = () => readdirSync("/proc/self/task");
const threadCpu = (ids) => ids.reduce((s, t) => s + cpuOf(`/proc/self/task/${t}/stat`), 0);

/** The part of the scheduler a frame belongs to, if it marks one. */
const PARTS = [
  // Stopping the profiler: not the scheduler's (left out of the shares below).
  ["the profiler itself", (f) => f.url === "node:inspector"],
  ["garbage collection", (f) => f.functionName === "(garbage collector)"],
  ["waiting (idle)", (f) => f.functionName === "(idle)"],
  ["validating events against the catalog", (f) => /\/zod\/|\/log\/dist\/validate\.js/.test(f.url)],
  ["the hash chain", (f) => /\/log\/dist\/hash\.js/.test(f.url)],
  ["the embedded log (commits, reads)", (f) => /\/log-sqlite\/|better-sqlite3/.test(f.url)],
  [
    "deciding the workers' reports",
    (f) => /\/scheduler\/dist\/success-commit\.js|\/task\/decide-success-commit\.js/.test(f.url),
  ],
  [
    "applying events to the projection",
    (f) => /\/log\/dist\/subscription\.js|\/projection\/scheduler-projection\.js/.test(f.url),
  ],
  [
    "the pass (decisions, intents, successes)",
    (f) => /\/scheduler\/dist\/(scheduler|intent-writer|success-commit|command)\.js/.test(f.url),
  ],
  ["IPC with the workers", (f) => /\/worker\/dist\/pool\.js|child_process/.test(f.url)],
];

function breakdown(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const partOf = new Map();
  const part = (id) => {
    if (partOf.has(id)) return partOf.get(id);
    const f = byId.get(id).callFrame;
    const own = PARTS.find(([, match]) => match(f))?.[0];
    const p = own ?? (parent.has(id) ? part(parent.get(id)) : "the rest");
    partOf.set(id, p);
    return p;
  };
  const us = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    if (part(id) === "the profiler itself") return;
    total += dt;
    us.set(part(id), (us.get(part(id)) ?? 0) + dt);
  });
  return { us, total };
}

async function round(profiled) {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-profile-"));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "bench" });
  const projection = new SchedulerProjection();
  await declare(log, projection, [{ filename: "tasks.json", document: { tasks } }], Date.now());
  await catchUp(log, projection);
  const pool = new WorkerPool({ size: 2, capacity: 5000 });
  await pool.ready();
  const session = new Session();
  if (profiled) {
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 250 });
    await session.post("Profiler.start");
    if (alloc) {
      await session.post("HeapProfiler.enable");
      await session.post("HeapProfiler.startSampling", {
        samplingInterval: 8192,
        includeObjectsCollectedByMajorGC: process.env.ALLOC_LIVE !== "1",
        includeObjectsCollectedByMinorGC: process.env.ALLOC_LIVE === undefined,
      });
    }
  }
  const workers = () => pool.stats().reduce((s, w) => s + cpuOf(`/proc/${w.pid}/stat`), 0);
  const all = threads();
  const cpu0 = { main: threadCpu([String(process.pid)]), all: threadCpu(all), workers: workers() };
  const written0 = written();
  const t0 = performance.now();
  const scheduler = new Scheduler({ log, projection, dispatcher: pool, logger: silent });
  await scheduler.start();
  await waitFor(() => scheduler.stats.completed >= COMPLETIONS);
  const secs = (performance.now() - t0) / 1000;
  const live = all.filter((t) => readdirSync("/proc/self/task").includes(t));
  const cpu = {
    main: threadCpu([String(process.pid)]) - cpu0.main,
    all: threadCpu(live) - cpu0.all,
    workers: workers() - cpu0.workers,
  };
  const bytes = written() - written0;
  let profile = null;
  let heap = null;
  if (profiled && alloc) heap = (await session.post("HeapProfiler.stopSampling")).profile;
  if (profiled) {
    profile = (await session.post("Profiler.stop")).profile;
    session.disconnect();
    if (process.env.PROFILE_OUT) writeFileSync(process.env.PROFILE_OUT, JSON.stringify(profile));
  }
  const commits = log.backend.commits;
  await pool.close(1000);
  await scheduler.stop();
  await log.close();
  rmSync(dir, { recursive: true, force: true });
  return { secs, cpu, profile, heap, commits, bytes };
}

await round(false);
const { secs, cpu, profile, heap, commits, bytes } = await round(true);
const { us, total } = breakdown(profile);
const perTask = (s) => fmt((s * 1e6) / COMPLETIONS, 1);
console.log(
  realistic
    ? `\nbench/scheduler/profile --realistic: ${fmt(N)} hourly no-op tasks of bench/scale's catalogue, ${fmt(COMPLETIONS)} intervals, embedded log, 2 worker processes: ${fmt(COMPLETIONS / secs)} completions/s (per task below: per completion)\n`
    : `\nbench/scheduler/profile: ${fmt(N)} independent no-op tasks, embedded log, 2 worker processes: ${fmt(N / secs)} tasks/s\n`,
);
printTable(
  ["the scheduler's thread", "share", "us per task"],
  [...us]
    .sort((a, b) => b[1] - a[1])
    .map(([p, t]) => [p, `${fmt((100 * t) / total, 1)}%`, fmt(t / COMPLETIONS, 1)]),
);
console.log("");
printTable(
  ["CPU per task", "us"],
  [
    ["the scheduler's thread", perTask(cpu.main)],
    ["the process's other threads (garbage collection, compilers)", perTask(cpu.all - cpu.main)],
    ["the two worker processes", perTask(cpu.workers)],
  ],
);
console.log(
  `\ngroup commits: ${fmt(commits)} (the declaration's included), ${fmt((COMPLETIONS * 3) / commits, 1)} events a commit; ${fmt(bytes / COMPLETIONS)} bytes written by the process a task (its log's WAL and checkpoints, its pipes)`,
);

if (heap) {
  const bytes = new Map();
  let total = 0;
  const walk = (n) => {
    const f = n.callFrame;
    const at = `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(packages|services|node_modules)\//, "$1/")}:${f.lineNumber + 1}`;
    total += n.selfSize;
    bytes.set(at, (bytes.get(at) ?? 0) + n.selfSize);
    for (const c of n.children) walk(c);
  };
  walk(heap.head);
  console.log(
    `\nallocated on the scheduler's thread: ${fmt(total / COMPLETIONS)} bytes per task; the largest sites:\n`,
  );
  printTable(
    ["function", "bytes per task", "share"],
    [...bytes]
      .sort((a, b) => b[1] - a[1])
      .slice(0, Number(process.env.ALLOC_TOP ?? 25))
      .map(([at, b]) => [at, fmt(b / COMPLETIONS), `${fmt((100 * b) / total, 1)}%`]),
  );
}
