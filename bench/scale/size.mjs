// bench/scale, the projection alone, in a process of its own: `node --expose-gc
// bench/scale/size.mjs hold <dir> <tasks>` loads the projection of the data directory's log as
// `chronolog up` loads it (its checkpoint plus the log's tail), lets it settle, and prints one
// line of JSON: the load's time, resident memory (the process's own pages apart from the log
// file's mapped pages) and heap. BENCH_SCALE_HEAPSNAPSHOT=FILE also writes a heap snapshot.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { writeHeapSnapshot } from "node:v8";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { loadProjection } from "@chronolog/scheduler";

const [step, dir] = process.argv.slice(2);
const dbPath = join(dir, "log.db");

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
if (step === "hold") {
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
} else {
  throw new Error(`unknown step ${step}`);
}
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
