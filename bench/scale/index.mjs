// bench/scale: a company's catalogue through the CLI, as users run it. For each size N, a seeded
// generator writes one YAML file of N hourly no-op tasks over 20 projects, each after 0 to 2
// tasks declared before it (of other projects), starting three hours back (three intervals due).
// Then, each a real child process on one embedded log:
//   `chronolog declare tasks.yaml`             timed as a whole (start, parse, decide, append)
//   `chronolog up`                             the scheduler and 2 workers settle the 3N intervals,
//                                              timed from its own log: "chronolog is up" to the
//                                              last "interval completed"; its peak and settled RSS
//   `chronolog tasks` (all; a page of 100), `chronolog why TASK`
//                                              while it runs, settled, each with its CPU time
//   GET /api/v1/tasks?limit=100                on its HTTP API
//   stop (SIGTERM), then `chronolog up` again  the restart: spawn to "chronolog is up"
// and, in a process of its own (bench/scale/size.mjs), the projection alone as `up` loads it:
// its heap and own pages per task, which the resident memory of `up` mixes with its pools.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { cliNodeFlags, fmt, printTable } from "../table.mjs";
import { catalogue, PROJECTS } from "./catalogue.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const cli = join(root, "services/cli/bin/chronolog.mjs");
const quick = process.env.BENCH_QUICK === "1";
const max = Number(process.env.BENCH_SCALE_MAX ?? 0);
const sizes = process.env.BENCH_SCALE_SIZES
  ? process.env.BENCH_SCALE_SIZES.split(",").map(Number)
  : quick
    ? [2000, 20_000]
    : [10_000, 100_000];
if (max >= 1_000_000) sizes.push(1_000_000);
// BENCH_SCALE_ONLY=declare: only `chronolog declare tasks.yaml` at each size (its three rows);
// BENCH_SCALE_ONLY=settle: declare, then `chronolog up` until it has settled, and stop (their rows).
const only = process.env.BENCH_SCALE_ONLY ?? "";
if (only !== "" && only !== "declare" && only !== "settle")
  throw new Error(`BENCH_SCALE_ONLY takes "declare" or "settle", not "${only}"`);
// BENCH_SCALE_CPU_PROF=DIR: `chronolog up` writes a CPU profile of its thread into DIR when it
// stops (node --cpu-prof; bench/cpuprofile.mjs sums one up per function).
const cpuProf = process.env.BENCH_SCALE_CPU_PROF;
const HOUR = 3_600_000;
const READS = 3; // each read command is timed this many times; the median is printed
const env = { ...process.env, CHRONOLOG_LOG_FORMAT: "json", CHRONOLOG_LOG_LEVEL: "info" };
const MB = 1024 * 1024;

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** The log file's size with its WAL: read with the log closed (the last close checkpoints it). */
function fileBytes(dir) {
  const db = join(dir, "log.db");
  return statSync(db).size + (existsSync(`${db}-wal`) ? statSync(`${db}-wal`).size : 0);
}

/** The CPU time a process has spent (user and system, all its threads), from /proc (seconds). */
function cpuSecondsOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** Resident and peak resident memory of a process, from /proc (bytes). */
function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1]) * 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

/**
 * Runs the CLI to its end, its output thrown away: its wall time (spawn to exit), the CPU time it
 * spent (user and system, s) and its peak resident memory (bytes), as /usr/bin/time reports them.
 * On a shared machine the wall time waits for a core; the CPU time does not.
 */
function run(dir, args) {
  const report = join(dir, "time.txt");
  const r = spawnSync(
    "/usr/bin/time",
    ["-f", "%e %U %S %M", "-o", report, process.execPath, ...cliNodeFlags(), cli, "--data-dir", dir, ...args],
    { env, stdio: ["ignore", "ignore", "pipe"], maxBuffer: 64 * MB },
  );
  if (r.status !== 0) throw new Error(`chronolog ${args.join(" ")}: status ${r.status}: ${r.stderr}`);
  const [wall, user, sys, kb] = readFileSync(report, "utf8").trim().split("\n").at(-1).split(" ").map(Number);
  return { secs: wall, cpu: user + sys, peak: kb * 1024 };
}

/** The `chronolog up` processes still running: stopped if the bench fails. */
const running = new Set();
process.on("exit", () => {
  for (const p of running) p.kill("SIGKILL");
});

/**
 * GET of a page of 100 tasks, timed: seconds. A kept-alive connection the server closes as the
 * request goes out (seconds pass between two GETs here) is tried again, and that try is timed.
 */
async function timedGet(url, tries = 2) {
  const t0 = performance.now();
  let res;
  try {
    res = await fetch(url);
  } catch (error) {
    if (tries > 1 && error?.cause?.code === "UND_ERR_SOCKET") return timedGet(url, tries - 1);
    throw error;
  }
  const body = await res.json();
  const secs = (performance.now() - t0) / 1000;
  if (res.status !== 200 || body.items?.length !== 100)
    throw new Error(`GET /api/v1/tasks: ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
  return secs;
}

/** The median of runs, by wall time. */
const median = (xs) => [...xs].sort((a, b) => (a.secs ?? a) - (b.secs ?? b))[Math.floor(xs.length / 2)];

/**
 * Starts `chronolog up` and follows its log: the time of its "chronolog is up" line, and of the
 * last "interval completed" line of one of the intervals wanted, counted as they come.
 */
function startUp(dir, port, intervals, n = 0) {
  const t0 = performance.now();
  const p = spawn(
    process.execPath,
    [
      ...cliNodeFlags(),
      ...(cpuProf ? ["--cpu-prof", `--cpu-prof-dir=${cpuProf}`] : []),
      cli,
      "--data-dir",
      dir,
      "up",
      "--workers",
      "2",
      "--http",
      `127.0.0.1:${port}`,
      "--public-read",
    ],
    { env, stdio: ["ignore", "ignore", "pipe"] },
  );
  const state = {
    spawnedAt: t0,
    upAt: 0,
    upTime: 0,
    completed: 0,
    lastCompletedTime: 0,
    errors: [],
    cpuAtUp: 0,
    cpuAtLast: 0,
  };
  let resolveUp;
  state.up = new Promise((r) => {
    resolveUp = r;
  });
  let rest = "";
  p.stderr.on("data", (chunk) => {
    rest += chunk.toString();
    const lines = rest.split("\n");
    rest = lines.pop() ?? "";
    for (const l of lines) {
      // Most lines are completions: counted without parsing the whole line.
      if (l.includes('"msg":"interval completed"')) {
        const interval = /"interval":"([^"]+)"/.exec(l)?.[1];
        if (intervals.has(interval)) {
          state.completed += 1;
          state.lastCompletedTime = Number(/"time":(\d+)/.exec(l)?.[1]);
          if (state.completed === intervals.size * state.n) state.cpuAtLast = cpuSecondsOf(p.pid);
        }
      } else if (l.includes('"msg":"chronolog is up"')) {
        state.upAt = performance.now();
        state.upTime = Number(/"time":(\d+)/.exec(l)?.[1]);
        state.cpuAtUp = cpuSecondsOf(p.pid);
        resolveUp();
      } else if (l.includes('"level":50') || l.includes('"level":40') || !l.startsWith("{"))
        state.errors.push(l);
    }
  });
  state.n = n;
  state.exited = new Promise((r) => p.once("exit", r));
  p.once("exit", (code, signal) => {
    if (code !== 0)
      console.error(`chronolog up exited (${code ?? signal}): ${state.errors.slice(-5).join("\n")}`);
  });
  state.p = p;
  running.add(p);
  p.once("exit", () => running.delete(p));
  return state;
}

async function until(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function measure(n) {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), `chronolog-bench-scale-${n}-`));
  try {
    // Three intervals due: the first starts two hours before the last one that has ended.
    const latest = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
    const start = latest - 2 * HOUR;
    const short = (ms) => `${new Date(ms).toISOString().slice(0, 16)}Z`;
    const intervals = new Set([short(start), short(start + HOUR), short(latest)]);
    const { text, lastWithParents } = catalogue(n, new Date(start).toISOString());
    const file = join(dir, "tasks.yaml");
    writeFileSync(file, text);
    const out = { n, yamlBytes: Buffer.byteLength(text) };

    out.declare = run(dir, ["declare", file]);
    if (only === "declare") {
      if (process.env.BENCH_VERBOSE) console.error(JSON.stringify(out));
      return out;
    }
    const declaredBytes = fileBytes(dir);

    const port = await freePort();
    const up = startUp(dir, port, intervals, n);
    await Promise.race([up.up, up.exited.then(() => Promise.reject(new Error("up exited")))]);
    out.upSecs = (up.upAt - up.spawnedAt) / 1000;
    await until(() => up.completed >= 3 * n, 3_600_000, `${3 * n} completions`);
    out.completed = up.completed;
    out.settleSecs = (up.lastCompletedTime - up.upTime) / 1000;
    out.settleCpuSecs = up.cpuAtLast - up.cpuAtUp;
    if (only === "settle") {
      up.p.kill("SIGTERM");
      await up.exited;
      if (process.env.BENCH_VERBOSE) console.error(JSON.stringify(out));
      return out;
    }
    // Settled: a checkpoint of the projection written (every 5 s), and the collector's work done.
    await new Promise((r) => setTimeout(r, 6000));
    Object.assign(out, memoryOf(up.p.pid));

    const tasks = [];
    const why = [];
    const api = [];
    const version = [];
    const page = [];
    for (let i = 0; i < READS; i++) {
      version.push(run(dir, ["--version"]));
      tasks.push(run(dir, ["tasks"]));
      page.push(run(dir, ["tasks", "--limit", "100"]));
      why.push(run(dir, ["why", lastWithParents]));
      api.push(await timedGet(`http://127.0.0.1:${port}/api/v1/tasks?limit=100`));
    }
    out.version = median(version);
    out.tasks = median(tasks);
    out.page = median(page);
    out.why = median(why);
    out.apiSecs = median(api);

    up.p.kill("SIGTERM");
    await up.exited;
    if (up.errors.length > 0) console.error(`up logged ${up.errors.length} warnings/errors: ${up.errors[0]}`);
    out.logBytesPerInstance = (fileBytes(dir) - declaredBytes) / out.completed;
    out.snapshotBytes = statSync(join(dir, "projection.snapshot.json")).size;

    // The restart: spawn to "chronolog is up", from the checkpoint the stop wrote.
    const again = startUp(dir, await freePort(), intervals);
    await Promise.race([again.up, again.exited.then(() => Promise.reject(new Error("up exited")))]);
    out.restartSecs = (again.upAt - again.spawnedAt) / 1000;
    again.p.kill("SIGTERM");
    await again.exited;

    // The projection alone, in a process of its own.
    const r = spawnSync(
      process.execPath,
      ["--expose-gc", ...cliNodeFlags(), join(here, "size.mjs"), "hold", dir, String(n)],
      { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
    );
    if (r.status !== 0) throw new Error(`bench/scale hold ${n} failed (status ${r.status})`);
    out.held = JSON.parse(r.stdout.trim().split("\n").at(-1));
    if (process.env.BENCH_VERBOSE) console.error(JSON.stringify(out));
    return out;
  } finally {
    // BENCH_SCALE_KEEP=1 keeps the data directories (to profile the commands on them).
    if (process.env.BENCH_SCALE_KEEP === "1") console.error(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

const results = [];
for (const n of sizes) results.push(await measure(n));

const first = results[0];
const last = results.at(-1);
/** How a measure grows from the smallest size to the largest, as a ratio per 10x of tasks. */
const growth = (f) => {
  const a = f(first);
  const b = f(last);
  if (!(Number.isFinite(a) && Number.isFinite(b)) || a <= 0 || last.n === first.n) return "";
  return `${fmt((b / a) ** (1 / Math.log10(last.n / first.n)), 2)}x`;
};
/** Per task between one size and the one before it. */
const slope = (f, i) =>
  i === 0 ? Number.NaN : (f(results[i]) - f(results[i - 1])) / (results[i].n - results[i - 1].n);
const row = (label, f, target = "", grows = () => Number.NaN) => [
  label,
  ...results.map((r, i) => f(r, i)),
  target,
  growth(grows),
];

console.log(
  `\nbench/scale (the CLI as users run it, embedded SQLite log; N hourly no-op tasks in ${PROJECTS} projects, 0-2 random parents each among the tasks before it in other projects, seeded; 3 due intervals each; \`chronolog up\` with 2 worker processes; reads: median of ${READS})\n`,
);
const rows = [
  row("YAML file, MB", (r) => fmt(r.yamlBytes / MB, 1)),
  row(
    "chronolog declare tasks.yaml, s",
    (r) => fmt(r.declare.secs, 2),
    "< 10 at 100k, < 90 at 1M",
    (r) => r.declare.secs,
  ),
  row(
    "  ... CPU time (user + system), s",
    (r) => fmt(r.declare.cpu, 2),
    "",
    (r) => r.declare.cpu,
  ),
  row(
    "  ... peak resident memory, MB",
    (r) => fmt(r.declare.peak / MB),
    "",
    (r) => r.declare.peak,
  ),
];
const settleRows = () => [
  row(
    "chronolog up: spawn to 'chronolog is up', s",
    (r) => fmt(r.upSecs, 2),
    "",
    (r) => r.upSecs,
  ),
  row("  ... settle: up to the last of 3N completions, s", (r) => fmt(r.settleSecs, 1)),
  row("  ... completions per s", (r) => fmt(r.completed / r.settleSecs), ">= 10,000"),
  row("  ... CPU time of up per completion (all its threads), us", (r) =>
    fmt((r.settleCpuSecs * 1e6) / r.completed),
  ),
];
const rest = () => [
  ...settleRows(),
  row(
    "  ... peak resident memory of up, MB",
    (r) => fmt(r.peak / MB),
    "",
    (r) => r.peak,
  ),
  row(
    "  ... peak per declared task (slope from the size before), bytes",
    (_r, i) => fmt(slope((x) => x.peak, i)),
    "<= 2,048",
  ),
  row(
    "  ... settled resident memory of up, MB",
    (r) => fmt(r.rss / MB),
    "",
    (r) => r.rss,
  ),
  row("  ... log bytes per completed instance", (r) => fmt(r.logBytesPerInstance), "<= 800"),
  row("  ... checkpoint file, bytes per task", (r) => fmt(r.snapshotBytes / r.n)),
  row(
    "restart: spawn to 'chronolog is up', s",
    (r) => fmt(r.restartSecs, 2),
    "",
    (r) => r.restartSecs,
  ),
  row("chronolog --version (the command's start alone), s", (r) => fmt(r.version.secs, 2)),
  row("  ... CPU time, s", (r) => fmt(r.version.cpu, 2)),
  row(
    "chronolog tasks (every task), s",
    (r) => fmt(r.tasks.secs, 2),
    "",
    (r) => r.tasks.secs,
  ),
  row(
    "  ... CPU time, s",
    (r) => fmt(r.tasks.cpu, 2),
    "",
    (r) => r.tasks.cpu,
  ),
  row(
    "  ... peak resident memory, MB",
    (r) => fmt(r.tasks.peak / MB),
    "",
    (r) => r.tasks.peak,
  ),
  row(
    "chronolog tasks --limit 100 (one page), s",
    (r) => fmt(r.page.secs, 2),
    "< 0.3 at 1M",
    (r) => r.page.secs,
  ),
  row(
    "  ... CPU time, s",
    (r) => fmt(r.page.cpu, 2),
    "",
    (r) => r.page.cpu,
  ),
  row(
    "chronolog why TASK, s",
    (r) => fmt(r.why.secs, 2),
    "< 0.3 at 1M",
    (r) => r.why.secs,
  ),
  row(
    "  ... CPU time, s",
    (r) => fmt(r.why.cpu, 2),
    "",
    (r) => r.why.cpu,
  ),
  row(
    "  ... peak resident memory, MB",
    (r) => fmt(r.why.peak / MB),
    "",
    (r) => r.why.peak,
  ),
  row(
    "GET /api/v1/tasks?limit=100, ms",
    (r) => fmt(r.apiSecs * 1000, 1),
    "",
    (r) => r.apiSecs,
  ),
  row("projection alone: loaded from the checkpoint, s", (r) => fmt(r.held.loadSecs, 2)),
  row("  ... heap per task (slope from the size before), bytes", (_r, i) =>
    fmt(slope((x) => x.held.heapUsed, i)),
  ),
  row("  ... own pages per task (slope from the size before), bytes", (_r, i) =>
    fmt(slope((x) => x.held.rssAnon, i)),
  ),
];
printTable(
  ["measure", ...results.map((r) => `${fmt(r.n)} tasks`), "target", "growth per 10x"],
  only === "declare" ? rows : only === "settle" ? [...rows, ...settleRows()] : [...rows, ...rest()],
);

// The cost of watching deadlines at the largest size run here (bench/deadlines, in a process of
// its own).
if (process.env.BENCH_SCALE_DEADLINES !== "0" && only === "") {
  const n = Math.min(last.n, 100_000);
  const r = spawnSync(
    process.execPath,
    ["--expose-gc", ...cliNodeFlags(), join(here, "..", "deadlines", "index.mjs")],
    { stdio: "inherit", env: { ...process.env, BENCH_DEADLINE_TASKS: String(n) } },
  );
  if (r.status !== 0) throw new Error(`bench/deadlines failed (status ${r.status})`);
}
