// bench/graph: the ten-job graph (three fetches, three parses, a join, an index, a report and a
// notify, with a 0.50 s critical path) as one workflow of shell tasks (each a separate process,
// every step a durable event), against its critical path and against asyncio + graphlib.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { formatTaskKey, lastSlotEndingBy, SchedulerProjection } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { criticalPath, declare, describeRun, Scheduler } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import { parse } from "yaml";
import { fmt, printTable, silent } from "../table.mjs";

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

// One long-lived scheduler, log and pool of two worker processes serve every run, as they would
// in service: each run is a new workflow (its own project) declared while the scheduler runs. A
// warm-up run comes first (module loading, the workers' shells started ahead of need), then five
// measured runs without a limit and three with `maxActiveTasks: 2`; the table shows the median
// run of each, and the line below it every run.
const quick = process.env.BENCH_QUICK === "1";
const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-graph-"));
const log = openSqliteLog({ path: join(dir, "log.db"), actor: "bench" });
const projection = new SchedulerProjection();
const pool = new WorkerPool({ size: 2, capacity: 16 });
await pool.ready();
const scheduler = new Scheduler({ log, projection, dispatcher: pool, logger: silent });
await scheduler.start();
let runs = 0;

async function runOnce(maxActiveTasks) {
  const n = ++runs;
  const tasks = Object.entries(GRAPH)
    .map(
      ([name, [sleep, parents]]) =>
        `      - { name: ${name}, parents: [${parents.join(", ")}], operator: { type: shell, command: "sleep ${sleep}" } }`,
    )
    .join("\n");
  const yaml = `workflows:\n  - name: graph${n}\n    project: run${n}\n    account: acme\n    cron: "0 ${SLOT_HOUR} * * *"\n    startDate: "${new Date(Date.parse(latest) - 5 * DAY).toISOString()}"\n    catchup: false\n    idempotent: true\n    maxActiveTasks: ${maxActiveTasks}\n    tasks:\n${tasks}\n`;
  await declare(log, projection, [{ filename: `graph${n}.yaml`, document: parse(yaml) }], Date.now());
  const runId = `graph${n}@${latest}`;
  for (;;) {
    const status = projection.runs.get(runId)?.status;
    if (status === "success") break;
    if (status !== undefined && status !== "running") throw new Error(`run ${runId} ended ${status}`);
    await new Promise((r) => setTimeout(r, 2));
  }
  const view = await describeRun(log, projection, runId);
  return criticalPath(view, (t) => (projection.tasks.get(t)?.parents ?? []).map(formatTaskKey));
}

/** The median run of `count` (by wall time), and every run's wall time in order. */
async function measure(count, maxActiveTasks) {
  const all = [];
  for (let i = 0; i < count; i++) all.push(await runOnce(maxActiveTasks));
  const sorted = [...all].sort((a, b) => a.wallMs - b.wallMs);
  return { median: sorted[Math.floor(sorted.length / 2)], walls: all.map((p) => p.wallMs / 1000) };
}

await runOnce(16);
const unlimited = await measure(quick ? 3 : 5, 16);
if (process.env.BENCH_DEBUG)
  console.log(unlimited.median.links.map((l) => `${l.task} wait ${l.waitMs} dur ${l.durationMs}`).join("\n"));
const limited = await measure(3, 2);
await scheduler.stop();
await pool.close(500);
await log.close();
rmSync(dir, { recursive: true, force: true });
let py = null;
try {
  py = JSON.parse(execFileSync("python3", [join(here, "graphlib_bench.py")], { encoding: "utf8" }));
} catch (error) {
  console.error(`python3 graphlib comparison not run: ${error.message}`);
}

console.log(
  `\nbench/graph (ten-job graph; critical path 0.50 s of sleeps; 2 worker processes; median of ${unlimited.walls.length} and ${limited.walls.length} runs)\n`,
);
printTable(
  ["", "chronolog run wall, s", "over 0.50 s", "its measured path, s", "asyncio + graphlib, s", "ideal, s"],
  [
    [
      "start when ready, unlimited",
      fmt(unlimited.median.wallMs / 1000, 3),
      `${fmt((unlimited.median.wallMs / 500 - 1) * 100, 1)}%`,
      fmt(unlimited.median.pathMs / 1000, 3),
      py ? fmt(py.unlimited, 3) : "n/a",
      "0.50",
    ],
    [
      "maxActiveTasks: 2",
      fmt(limited.median.wallMs / 1000, 3),
      `${fmt((limited.median.wallMs / 750 - 1) * 100, 1)}% over 0.75`,
      fmt(limited.median.pathMs / 1000, 3),
      py ? fmt(py.limit2, 3) : "n/a",
      "0.75",
    ],
    ["level by level (for reference)", "", "", "", py ? fmt(py.levels, 3) : "n/a", "0.95"],
  ],
);
const list = (m) => m.walls.map((w) => fmt(w, 3)).join(", ");
console.log(
  `\nrun wall = first intent to last task end, median run shown; each task is /bin/sh run by a worker process.`,
);
console.log(`every run, unlimited: ${list(unlimited)}; maxActiveTasks 2: ${list(limited)}`);
