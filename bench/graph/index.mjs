// bench/graph: seed 002's ten-job graph as one workflow of shell tasks (each a separate process,
// every step a durable event), against its critical path and against asyncio + graphlib.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { formatTaskKey, lastSlotEndingBy, SchedulerProjection } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, criticalPath, declare, describeRun, Scheduler } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import { parse } from "yaml";
import { fmt, printTable } from "../table.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const GRAPH = {
  fetch_a: [0.3, []],
  fetch_b: [0.05, []],
  fetch_c: [0.1, []],
  parse_a: [0.05, ["fetch_a"]],
  parse_b: [0.3, ["fetch_b"]],
  parse_c: [0.05, ["fetch_c"]],
  join_ab: [0.1, ["parse_a", "parse_b"]],
  index_c: [0.2, ["parse_c"]],
  report: [0.05, ["join_ab", "index_c"]],
  notify: [0.3, ["parse_c"]],
};
const DAY = 86_400_000;
// A daily slot hour twelve hours away from now, and the latest interval of that schedule that
// has ended (the one a task with catch-up off jumps to): with the slot hour far from now, no run
// crosses the slot's boundary (a fixed 02:00 moved the latest interval under runs made between
// 02:00 and 03:00 UTC).
const SLOT_HOUR = (new Date().getUTCHours() + 12) % 24;
const latest = lastSlotEndingBy(`0 ${SLOT_HOUR} * * *`, "UTC", new Date()).toISOString();
const silent = {
  info() {},
  warn() {},
  debug() {},
  error(o, m) {
    console.error(m, o);
  },
};

async function runOnce(maxActiveTasks) {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-graph-"));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "bench" });
  const projection = new SchedulerProjection();
  const tasks = Object.entries(GRAPH)
    .map(
      ([name, [sleep, parents]]) =>
        `      - { name: ${name}, parents: [${parents.join(", ")}], operator: { type: shell, command: "sleep ${sleep}" } }`,
    )
    .join("\n");
  const yaml = `workflows:\n  - name: graph\n    project: demo\n    account: acme\n    cron: "0 ${SLOT_HOUR} * * *"\n    startDate: "${new Date(Date.parse(latest) - 5 * DAY).toISOString()}"\n    catchup: false\n    idempotent: true\n    maxActiveTasks: ${maxActiveTasks}\n    tasks:\n${tasks}\n`;
  await declare(log, projection, [{ filename: "graph.yaml", document: parse(yaml) }], Date.now());
  await catchUp(log, projection);
  const pool = new WorkerPool({ size: 2, capacity: 16 });
  await pool.ready();
  const scheduler = new Scheduler({ log, projection, dispatcher: pool, logger: silent });
  const runId = `graph@${latest}`;
  await scheduler.start();
  while (projection.runs.get(runId)?.status !== "success") {
    if (projection.runs.get(runId) && projection.runs.get(runId).status !== "running")
      throw new Error("run failed");
    await new Promise((r) => setTimeout(r, 2));
  }
  const view = await describeRun(log, projection, runId);
  const path = criticalPath(view, (t) => (projection.tasks.get(t)?.spec.parents ?? []).map(formatTaskKey));
  await pool.close(500);
  await scheduler.stop();
  await log.close();
  rmSync(dir, { recursive: true, force: true });
  return path;
}

// Warm up once (process start-up, module loading), then measure.
await runOnce(16);
const unlimited = await runOnce(16);
if (process.env.BENCH_DEBUG)
  console.log(unlimited.links.map((l) => `${l.task} wait ${l.waitMs} dur ${l.durationMs}`).join("\n"));
const limited = await runOnce(2);
let py = null;
try {
  py = JSON.parse(execFileSync("python3", [join(here, "graphlib_bench.py")], { encoding: "utf8" }));
} catch (error) {
  console.error(`python3 graphlib comparison not run: ${error.message}`);
}

console.log("\nbench/graph (seed 002's ten-job graph; critical path 0.50 s of sleeps; 2 worker processes)\n");
printTable(
  ["", "chronolog run wall, s", "over 0.50 s", "its measured path, s", "asyncio + graphlib, s", "seed 002"],
  [
    [
      "start when ready, unlimited",
      fmt(unlimited.wallMs / 1000, 3),
      `${fmt((unlimited.wallMs / 500 - 1) * 100, 1)}%`,
      fmt(unlimited.pathMs / 1000, 3),
      py ? fmt(py.unlimited, 3) : "n/a",
      "0.50",
    ],
    [
      "maxActiveTasks: 2",
      fmt(limited.wallMs / 1000, 3),
      `${fmt((limited.wallMs / 750 - 1) * 100, 1)}% over 0.75`,
      fmt(limited.pathMs / 1000, 3),
      py ? fmt(py.limit2, 3) : "n/a",
      "0.75",
    ],
    ["level by level (for reference)", "", "", "", py ? fmt(py.levels, 3) : "n/a", "0.95"],
  ],
);
console.log(`\nrun wall = first intent to last task end; each task is /bin/sh started by a worker process.`);
