// bench/recovery: how soon `chronolog up` dispatches again after a crash. Each round declares
// tasks that sleep, starts `chronolog up`, waits for every attempt to run, SIGKILLs the
// scheduler (its workers die with it), starts it again and measures, from its "chronolog is
// up" line, the time to its first dispatch intent and to the first attempt a worker starts
// (both as recorded in the log). With BENCH_COMPARE=<another checkout, built>, rounds alternate
// between that build and this one and a ratio is printed.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { cliNodeFlags, fmt, percentile, printTable } from "../table.mjs";

const quick = process.env.BENCH_QUICK === "1";
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (quick ? 3 : 10));
const IDEMPOTENT = 4;
const ONCE = 2;
const HOUR = 3_600_000;
const here = resolve(".");
const builds = [{ name: "this build", root: here }];
if (process.env.BENCH_COMPARE)
  builds.unshift({ name: "compared build", root: resolve(process.env.BENCH_COMPARE) });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cliOf = (root) => join(root, "services/cli/bin/chronolog.mjs");
const env = { ...process.env, CHRONOLOG_LOG_FORMAT: "json", CHRONOLOG_LOG_LEVEL: "info" };

function declare(root, dir) {
  const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
  const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
  const task = (name, idempotent) =>
    `  - { project: bench, account: a, name: ${name}, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", idempotent: ${idempotent}, operator: { type: shell, command: "sleep 30" } }`;
  const lines = [];
  for (let i = 0; i < IDEMPOTENT; i++) lines.push(task(`idem${i}`, true));
  for (let i = 0; i < ONCE; i++) lines.push(task(`once${i}`, false));
  const file = join(dir, "tasks.yaml");
  writeFileSync(file, `tasks:\n${lines.join("\n")}\n`);
  const r = spawnSync(process.execPath, [cliOf(root), "--data-dir", dir, "declare", file], {
    env,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`declare failed: ${r.stderr}`);
}

/** Starts `chronolog up`; resolves `up` with the time of its "chronolog is up" line. */
function startUp(root, dir) {
  const p = spawn(
    process.execPath,
    [...cliNodeFlags(), cliOf(root), "--data-dir", dir, "up", "--workers", "2"],
    {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  p.stdout.resume();
  let rest = "";
  let resolveUp;
  const up = new Promise((r) => {
    resolveUp = r;
  });
  p.stderr.on("data", (chunk) => {
    rest += chunk.toString();
    const lines = rest.split("\n");
    rest = lines.pop() ?? "";
    for (const l of lines) {
      try {
        const o = JSON.parse(l);
        if (o.msg === "chronolog is up") resolveUp(o.time);
      } catch {
        // not a log line
      }
    }
  });
  const exited = new Promise((r) => p.once("exit", r));
  return { p, up, exited };
}

/** Polls the log until `pick` returns a value for the events read so far. */
async function waitInLog(dir, pick, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  const events = [];
  let from = 0n;
  while (Date.now() < deadline) {
    const log = openSqliteLog({ path: join(dir, "log.db"), readonly: true, watchOtherProcesses: false });
    try {
      for (;;) {
        const page = await log.readAll({ fromPosition: from, maxCount: 5000 });
        if (page.length === 0) break;
        events.push(...page);
        from = page.at(-1).position + 1n;
      }
    } finally {
      await log.close();
    }
    const v = pick(events);
    if (v !== undefined) return v;
    await sleep(20);
  }
  throw new Error("timed out waiting in the log");
}

async function round(root) {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-recovery-"));
  try {
    declare(root, dir);
    const first = startUp(root, dir);
    await waitInLog(dir, (events) =>
      events.filter((e) => e.type === "AttemptStarted").length >= IDEMPOTENT + ONCE ? true : undefined,
    );
    first.p.kill("SIGKILL");
    await first.exited;
    const again = startUp(root, dir);
    const upAt = await again.up;
    const at = (e) => Date.parse(e.metadata.recordedAt);
    const [intentAt, startedAt] = await waitInLog(dir, (events) => {
      const intent = events.find((e) => e.type === "DispatchIntended" && e.data.attempt > 1);
      const started = events.find((e) => e.type === "AttemptStarted" && e.data.attempt > 1);
      return intent && started ? [at(intent), at(started)] : undefined;
    });
    again.p.kill("SIGKILL");
    await again.exited;
    return { intent: intentAt - upAt, started: startedAt - upAt };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const samples = new Map(builds.map((b) => [b.name, { intent: [], started: [] }]));
for (let i = 0; i < ROUNDS; i++) {
  for (const b of builds) {
    const r = await round(b.root);
    const s = samples.get(b.name);
    s.intent.push(r.intent);
    s.started.push(r.started);
  }
}
console.log(
  `${ROUNDS} restarts per build, ${IDEMPOTENT} idempotent and ${ONCE} non-idempotent attempts in flight at the SIGKILL, 2 workers, default reconcile interval`,
);
const rows = [];
const p50 = {};
for (const b of builds) {
  const s = samples.get(b.name);
  const intent = [...s.intent].sort((x, y) => x - y);
  const started = [...s.started].sort((x, y) => x - y);
  p50[b.name] = percentile(started, 50);
  rows.push([
    b.name,
    fmt(percentile(intent, 50)),
    fmt(percentile(intent, 99)),
    fmt(percentile(started, 50)),
    fmt(percentile(started, 99)),
  ]);
}
printTable(["build", "up→intent p50 ms", "up→intent p99 ms", "up→started p50 ms", "up→started p99 ms"], rows);
if (builds.length === 2)
  console.log(
    `up→started p50, compared build / this build: ${fmt(p50["compared build"] / p50["this build"], 1)}x`,
  );
