// bench/scale: the footprint of many tasks. For each size N, N hourly no-op tasks in 10 projects,
// each after 0 to 2 tasks of other projects, on the embedded log: the declaration's time, the
// settled memory of a process holding their projection, the log's bytes per completed instance
// once their three due intervals have run, and the restart from the scheduler's checkpoint.
// Each step runs in a fresh process (bench/scale/size.mjs), so that one size's heap does not
// bend the next.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cliNodeFlags, fmt, printTable } from "../table.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const quick = process.env.BENCH_QUICK === "1";
const max = Number(process.env.BENCH_SCALE_MAX ?? 0);
const sizes = quick ? [2000, 20_000] : [10_000, 100_000];
if (max >= 1_000_000) sizes.push(1_000_000);
// Sizes above this declare and restart, but do not run their intervals (3 per task, at a few
// thousand a second on this machine).
const RUN_MAX = Number(process.env.BENCH_SCALE_RUN_MAX ?? 100_000);

function step(name, dir, n, ...rest) {
  const r = spawnSync(
    process.execPath,
    ["--expose-gc", ...cliNodeFlags(), join(here, "size.mjs"), name, dir, String(n), ...rest.map(String)],
    { encoding: "utf8", maxBuffer: 16 * 1024 * 1024, stdio: ["ignore", "pipe", "inherit"] },
  );
  if (r.status !== 0) throw new Error(`bench/scale ${name} ${n} failed (status ${r.status})`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1));
}

const results = [];
for (const n of sizes) {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), `chronolog-bench-scale-${n}-`));
  try {
    const declared = { ...step("declare", dir, n), ...step("yaml", dir, n) };
    if (declared.declared !== n) throw new Error(`declared ${declared.declared} of ${n} tasks`);
    const held = step("hold", dir, n);
    const ran = step("run", dir, n, n <= RUN_MAX ? 1 : 0);
    const restarted = step("restart", dir, n);
    if (restarted.tasks !== n || restarted.discarded)
      throw new Error(`restart: ${JSON.stringify(restarted)}`);
    results.push({ n, declared, held, ran, restarted });
    if (process.env.BENCH_VERBOSE) console.error(JSON.stringify(results.at(-1)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const MB = 1024 * 1024;
const first = results[0];
const last = results.at(-1);
/** How a measure grows from the smallest size to the largest, as a ratio per 10x of tasks. */
const growth = (f) => {
  const a = f(first);
  const b = f(last);
  if (!(Number.isFinite(a) && Number.isFinite(b)) || a <= 0) return "";
  return `${fmt((b / a) ** (1 / Math.log10(last.n / first.n)), 2)}x`;
};
/** Per task between one size and the one before it. */
const slope = (f, i) =>
  i === 0 ? Number.NaN : (f(results[i]) - f(results[i - 1])) / (results[i].n - results[i - 1].n);
const ran = (r) => r.ran.completed !== undefined;
const bytesPerInstance = (r) => (ran(r) ? (r.ran.after - r.ran.before) / r.ran.completed : Number.NaN);
const restartSlope = slope((r) => r.restarted.secs, results.length - 1);
const at1M = last.restarted.secs + restartSlope * (1_000_000 - last.n);

const row = (label, f, target = "", grows = true) => [
  label,
  ...results.map((r, i) => f(r, i)),
  target,
  grows ? growth((r) => Number(String(f(r, results.indexOf(r))).replace(/,/g, ""))) : "",
];

console.log(
  `\nbench/scale (embedded SQLite log, synchronous=FULL; N hourly no-op tasks in 10 projects, 0-2 parents each in other projects; each step a fresh process; runs: 3 due intervals per task, 2 worker processes${
    results.some((r) => !ran(r)) ? `, not run above ${fmt(RUN_MAX)} tasks` : ""
  })\n`,
);
printTable(
  ["measure", ...results.map((r) => `${fmt(r.n)} tasks`), "target", "growth per 10x"],
  [
    row(
      "declare from a JSON file (parse, load, decide, append), s",
      (r) => fmt(r.declared.secs, 2),
      "< 10 at 100,000",
    ),
    row("  ... the same tasks as YAML, parsing alone, s", (r) =>
      r.declared.yamlParseSecs === undefined ? "-" : fmt(r.declared.yamlParseSecs, 2),
    ),
    row("projection loaded from the log, s", (r) => fmt(r.held.loadSecs, 2)),
    row("settled resident memory, MB", (r) => fmt(r.held.rss / MB, 1)),
    row("  ... of which the process's own pages (RssAnon), MB", (r) => fmt(r.held.rssAnon / MB, 1)),
    row("  ... of which the log file's mapped pages (RssFile), MB", (r) => fmt(r.held.rssFile / MB, 1)),
    row("  ... heap used, MB", (r) => fmt(r.held.heapUsed / MB, 1)),
    row(
      "  ... resident per task (slope from the size before), bytes",
      (_r, i) => fmt(slope((x) => x.held.rss, i)),
      "<= 2,048",
      false,
    ),
    row(
      "  ... own pages per task (slope from the size before), bytes",
      (_r, i) => fmt(slope((x) => x.held.rssAnon, i)),
      "",
      false,
    ),
    row(
      "  ... heap per task (slope from the size before), bytes",
      (_r, i) => fmt(slope((x) => x.held.heapUsed, i)),
      "",
      false,
    ),
    row("instances run to completion", (r) => (ran(r) ? fmt(r.ran.completed) : "-")),
    row("  ... wall time, s", (r) => (ran(r) ? fmt(r.ran.runSecs, 1) : "-")),
    row("  ... completed per s", (r) => (ran(r) ? fmt(r.ran.completed / r.ran.runSecs) : "-")),
    row(
      "  ... log bytes per completed instance (checkpointed file)",
      (r) => fmt(bytesPerInstance(r)),
      "<= 800",
    ),
    row("  ... settled resident memory after the runs, MB", (r) => fmt(r.ran.rss / MB, 1)),
    row("  ... heap used after the runs, MB", (r) => fmt(r.ran.heapUsed / MB, 1)),
    row("checkpoint file, bytes per task", (r) => fmt(r.ran.snapshotBytes / r.n)),
    row(
      "restart: open to projection ready (checkpoint + tail), s",
      (r) => fmt(r.restarted.secs, 2),
      "< 5 at 1,000,000",
    ),
    row("  ... events replayed past the checkpoint", (r) => fmt(r.restarted.replayed), "", false),
    row(
      "  ... per task (slope from the size before), us",
      (_r, i) => fmt(slope((x) => x.restarted.secs, i) * 1e6, 2),
      "",
      false,
    ),
  ],
);
if (last.n < 1_000_000)
  console.log(
    `\nrestart at 1,000,000 tasks, read off the slope: ${fmt(at1M, 1)} s (target < 5 s); resident memory at 1,000,000 by the slope: ${fmt(
      (last.held.rss + slope((x) => x.held.rss, results.length - 1) * (1_000_000 - last.n)) / MB / 1024,
      1,
    )} GB`,
  );

// The cost of watching deadlines at the largest size run here (bench/deadlines, in a process of
// its own).
{
  const n = Math.min(last.n, 100_000);
  const r = spawnSync(
    process.execPath,
    ["--expose-gc", ...cliNodeFlags(), join(here, "..", "deadlines", "index.mjs")],
    { stdio: "inherit", env: { ...process.env, BENCH_DEADLINE_TASKS: String(n) } },
  );
  if (r.status !== 0) throw new Error(`bench/deadlines failed (status ${r.status})`);
}
