// bench/scale, one step at one size, in a process of its own (so that one size's heap does not
// bend the next): `node --expose-gc bench/scale/size.mjs <step> <dir> <tasks> [<run>]` prints one
// line of JSON. The steps, in the order bench/scale/index.mjs runs them on one data directory:
//   declare  the N tasks declared from a JSON file, as `chronolog declare` does (file parsed,
//            projection loaded, declared)
//   yaml     the same tasks as YAML, parsed only (in a process of its own, so that the YAML
//            document's garbage does not bend the declaration's time)
//   hold     the projection of the declared tasks loaded as `chronolog up` loads it, then settled
//   run      the due intervals of every task run by a Scheduler and a WorkerPool (<run> 0: none),
//            then the checkpoint `chronolog up` writes when it stops
//   restart  the projection restored from that checkpoint plus the log's tail
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { writeHeapSnapshot } from "node:v8";
import { lastSlotEndingBy, parseDeclarationText } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { declare, loadProjection, Scheduler, saveSnapshot } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import { silent, waitFor } from "../table.mjs";

const [step, dir, tasksArg, runArg] = process.argv.slice(2);
const N = Number(tasksArg);
const RUN = Number(runArg ?? 1);
const HOUR = 3_600_000;
const PROJECTS = 10;
const YAML_MAX = 100_000;
const dbPath = join(dir, "log.db");

/** Task i: project p(i mod 10); after 0, 1 or 2 tasks before it, each in another project. */
const taskId = (i) => `p${i % PROJECTS}/acme/t${i}`;
function parentsOf(i) {
  // i-1 and i-13 are in other projects than i (neither differs from i by a multiple of 10), and
  // both are tasks with i mod 3 one less than i's: chains are at most three tasks deep.
  const count = i % 3;
  return [i - 1, i - 13].slice(0, count).filter((j) => j >= 0);
}

/** The declarations: hourly no-op tasks whose first interval starts `start`. */
function declarations(start) {
  const tasks = [];
  for (let i = 0; i < N; i++)
    tasks.push({
      project: `p${i % PROJECTS}`,
      account: "acme",
      name: `t${i}`,
      cron: "0 * * * *",
      startDate: start,
      catchup: true,
      idempotent: true,
      operator: { type: "noop" },
      parents: parentsOf(i).map(taskId),
    });
  return tasks;
}

/** The same declarations as a YAML file, one flow mapping a task (as a person might write it). */
const asYaml = (tasks) => `tasks:\n${tasks.map((t) => `  - ${JSON.stringify(t)}\n`).join("")}`;

/** The log file's size with its WAL folded in: read with the log closed (the last connection's close checkpoints it). */
function fileBytes() {
  const wal = `${dbPath}-wal`;
  return statSync(dbPath).size + (existsSync(wal) ? statSync(wal).size : 0);
}

/** Resident memory and heap once the garbage is collected and the process has settled. */
async function settled() {
  for (let i = 0; i < 2; i++) {
    globalThis.gc();
    await new Promise((r) => setTimeout(r, 250));
  }
  const m = process.memoryUsage();
  // Resident memory of the process's own (anonymous) pages, apart from the log file's pages that
  // SQLite's memory map has brought in (file pages, which the kernel may drop).
  const status = existsSync("/proc/self/status") ? readFileSync("/proc/self/status", "utf8") : "";
  const kb = (field) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: m.rss, rssAnon: kb("RssAnon"), rssFile: kb("RssFile"), heapUsed: m.heapUsed };
}

const out = {};
if (step === "declare") {
  // The first interval starts two hours before the last one that has ended: three are due.
  const latest = lastSlotEndingBy("0 * * * *", "UTC", new Date());
  const start = new Date(latest.getTime() - 2 * HOUR).toISOString();
  // Declared from a JSON file, as a catalogue this large is generated; the same tasks' YAML is
  // only parsed, and timed on its own.
  const tasks = declarations(start);
  const file = join(dir, "tasks.json");
  writeFileSync(file, JSON.stringify({ tasks }, null, 1));
  writeFileSync(join(dir, "latest"), `${latest.toISOString()}\n`);
  // Not above 100,000 tasks: the YAML library's document of a million of them outgrows the
  // default heap (about 4 GB) before it is read.
  if (N <= YAML_MAX) writeFileSync(join(dir, "tasks.yaml"), asYaml(tasks));
  tasks.length = 0;
  const t0 = performance.now();
  const source = parseDeclarationText(readFileSync(file, "utf8"), { filename: "tasks.json" });
  const log = openSqliteLog({ path: dbPath, actor: "cli" });
  const { projection } = await loadProjection(log, dir);
  const outcome = await declare(log, projection, [source], Date.now());
  await log.close();
  out.secs = (performance.now() - t0) / 1000;
  out.declared = outcome.tasks.filter((t) => t.outcome === "declared").length;
  out.bytes = fileBytes();
} else if (step === "yaml") {
  if (existsSync(join(dir, "tasks.yaml"))) {
    const y0 = performance.now();
    parseDeclarationText(readFileSync(join(dir, "tasks.yaml"), "utf8"), { filename: "tasks.yaml" });
    out.yamlParseSecs = (performance.now() - y0) / 1000;
  }
} else if (step === "hold") {
  const log = openSqliteLog({ path: dbPath, actor: "scheduler" });
  const t0 = performance.now();
  const { projection, replayed } = await loadProjection(log, dir);
  out.loadSecs = (performance.now() - t0) / 1000;
  out.replayed = replayed;
  out.tasks = projection.tasks.size;
  Object.assign(out, await settled());
  if (process.env.BENCH_SCALE_HEAPSNAPSHOT)
    out.heapSnapshot = writeHeapSnapshot(process.env.BENCH_SCALE_HEAPSNAPSHOT);
  // Kept alive until measured.
  out.children = projection.children.size;
  await log.close();
} else if (step === "run") {
  const before = fileBytes();
  const latest = Date.parse(readFileSync(join(dir, "latest"), "utf8").trim());
  // The clock stops short of the next hour: a run that crosses it runs three intervals, not four.
  const fence = latest + 2 * HOUR - 1;
  const now = () => Math.min(Date.now(), fence);
  const log = openSqliteLog({ path: dbPath, actor: "scheduler" });
  const loaded = await loadProjection(log, dir);
  // <run> 0: no runs, only the checkpoint (a size too large to run in the bench's time).
  if (RUN > 0) {
    const pool = new WorkerPool({ size: 2, capacity: 5000 });
    await pool.ready();
    const scheduler = new Scheduler({
      log,
      projection: loaded.projection,
      dispatcher: pool,
      logger: silent,
      now,
    });
    const t0 = performance.now();
    await scheduler.start();
    await waitFor(() => scheduler.stats.completed >= 3 * N, 3_600_000);
    out.runSecs = (performance.now() - t0) / 1000;
    out.completed = scheduler.stats.completed;
    out.failed = scheduler.stats.failed;
    await pool.close(1000);
    await scheduler.stop();
  }
  out.instancesInMemory = loaded.projection.instances.size;
  Object.assign(out, await settled());
  // As `chronolog up` does when it stops: the checkpoint it restarts from.
  const s0 = performance.now();
  await saveSnapshot(dir, log, loaded.projection);
  out.snapshotSecs = (performance.now() - s0) / 1000;
  out.snapshotBytes = statSync(join(dir, "projection.snapshot.json")).size;
  await log.close();
  out.before = before;
  out.after = fileBytes();
} else if (step === "restart") {
  const t0 = performance.now();
  const log = openSqliteLog({ path: dbPath, actor: "scheduler" });
  const loaded = await loadProjection(log, dir);
  out.secs = (performance.now() - t0) / 1000;
  out.snapshotPosition = String(loaded.snapshotPosition);
  out.replayed = loaded.replayed;
  out.discarded = loaded.discarded;
  out.tasks = loaded.projection.tasks.size;
  Object.assign(out, await settled());
  await log.close();
} else {
  throw new Error(`unknown step ${step}`);
}
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
