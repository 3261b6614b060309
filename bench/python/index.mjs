// Python worker: no-op python tasks through one Python worker (python -m chronolog.worker), beside
// no-op shell tasks through one Node remote worker (chronolog worker), the same queue shape: N
// tasks of one interval each on one queue, one worker of capacity 8, a scheduler with its API on
// a loopback port; each as tasks that are not idempotent (the default: an attempt waits for its
// start permission, a round trip through the log) and as idempotent ones. Prints tasks/s (first dispatch to last success, from the log) and the start
// latency: the attempt's DispatchIntended, as recorded, to the time the function (or the shell
// command) was entered, which it prints into its output.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join, resolve } from "node:path";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { cliNodeFlags, fmt, percentile, printTable } from "../table.mjs";

const quick = process.env.BENCH_QUICK === "1";
const TASKS = Number(process.env.BENCH_TASKS ?? (quick ? 60 : 300));
const CAPACITY = 8;
const HOUR = 3_600_000;
const root = resolve(".");
const cli = join(root, "services/cli/bin/chronolog.mjs");
const pkg = join(root, "clients/python");
// Tasks run as this user (as the tests run them): no other user needed on the machine.
const env = {
  ...process.env,
  CHRONOLOG_RUN_AS: process.env.CHRONOLOG_RUN_AS ?? userInfo().username,
  CHRONOLOG_LOG_FORMAT: "json",
  CHRONOLOG_LOG_LEVEL: "info",
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function run(dir, args) {
  const r = spawnSync(process.execPath, [...cliNodeFlags(), cli, "--data-dir", dir, ...args], {
    env,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`chronolog ${args.join(" ")} failed: ${r.stderr}`);
  return r.stdout;
}

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

function declare(dir, operator, idempotent, tasks) {
  const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
  const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
  const lines = [];
  for (let i = 0; i < tasks; i++)
    lines.push(
      `  - { project: bench, account: a, name: t${i}, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", queue: q, idempotent: ${idempotent}, operator: ${operator} }`,
    );
  const file = join(dir, "tasks.yaml");
  writeFileSync(file, `tasks:\n${lines.join("\n")}\n`);
  run(dir, ["declare", file]);
}

async function readAll(dir) {
  const log = openSqliteLog({ path: join(dir, "log.db"), readonly: true, watchOtherProcesses: false });
  try {
    const out = [];
    let from = 0n;
    for (;;) {
      const page = await log.readAll({ fromPosition: from, maxCount: 5000 });
      if (page.length === 0) return out;
      out.push(...page);
      from = page.at(-1).position + 1n;
    }
  } finally {
    await log.close();
  }
}

/** CPU seconds used by a process and every process under it (those that ended counted once
 * their parent has waited for them), from /proc. */
function treeCpu(pid) {
  const tick = 100; // USER_HZ on Linux
  const stat = (p) => {
    try {
      const text = readFileSync(`/proc/${p}/stat`, "utf8");
      const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
      return { ppid: Number(f[1]), cpu: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) };
    } catch {
      return undefined;
    }
  };
  const all = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(name);
    if (s) all.set(Number(name), s);
  }
  let total = 0;
  const walk = (p) => {
    const s = all.get(p);
    if (!s) return;
    total += s.cpu;
    for (const [q, t] of all) if (t.ppid === p) walk(q);
  };
  walk(pid);
  return total / tick;
}

function startProc(cmd, args, options) {
  const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
  p.text = "";
  p.stdout.on("data", (c) => {
    p.text += c;
  });
  p.stderr.on("data", (c) => {
    p.text += c;
  });
  return p;
}

async function measure(kind, idempotent, pythonPackage = pkg, capacity = CAPACITY, tasks = TASKS) {
  const dir = mkdtempSync(join(tmpdir(), `chronolog-bench-python-${kind}-`));
  const procs = [];
  try {
    declare(
      dir,
      kind === "python"
        ? `{ type: python, function: "tests.worker_tasks:noop" }`
        : `{ type: shell, command: "echo entered $(date +%s%3N)" }`,
      idempotent,
      tasks,
    );
    const token = run(dir, ["token", "create", "bench", "--scope", "work", "--queue", "q"]).trim();
    const port = await freePort();
    const up = startProc(
      process.execPath,
      [...cliNodeFlags(), cli, "--data-dir", dir, "up", "--workers", "1", "--http", `127.0.0.1:${port}`],
      { env },
    );
    procs.push(up);
    for (let i = 0; !up.text.includes("api listening"); i++) {
      if (i > 600 || up.exitCode !== null) throw new Error(`the scheduler did not listen:\n${up.text}`);
      await sleep(50);
    }
    const url = `http://127.0.0.1:${port}`;
    const common = [
      "--connect",
      url,
      "--token",
      token,
      "--queue",
      "q",
      "--capacity",
      String(capacity),
      "--id",
      `bench-${kind}`,
    ];
    const worker =
      kind === "python"
        ? startProc(
            "python3",
            ["-m", "chronolog.worker", ...common, "--import", "tests.worker_tasks", "--dir", join(dir, "w")],
            {
              cwd: pythonPackage,
              env: { ...process.env, PYTHONPATH: join(pythonPackage, "src"), PYTHONDONTWRITEBYTECODE: "1" },
            },
          )
        : startProc(
            process.execPath,
            [
              ...cliNodeFlags(),
              cli,
              "--data-dir",
              join(dir, "wd"),
              "worker",
              ...common,
              "--dir",
              join(dir, "w"),
            ],
            { env },
          );
    procs.push(worker);
    // CPU from the worker's connection on: what the attempts cost, not the processes' start.
    for (let i = 0; !worker.text.includes("connected to"); i++) {
      if (i > 6000 || worker.exitCode !== null)
        throw new Error(`${kind}: the worker did not connect:\n${worker.text}`);
      await sleep(5);
    }
    const cpu0 = { up: treeCpu(up.pid), worker: treeCpu(worker.pid) };
    let events = [];
    let cpu;
    for (let i = 0; ; i++) {
      await sleep(500);
      events = await readAll(dir);
      const done = events.filter((e) => e.type === "AttemptSucceeded" || e.type === "AttemptFailed").length;
      cpu = { up: treeCpu(up.pid) - cpu0.up, worker: treeCpu(worker.pid) - cpu0.worker };
      if (done >= tasks) break;
      if (i > 1200 || worker.exitCode !== null)
        throw new Error(`${kind}: ${done} of ${tasks} done:\n${worker.text}`);
    }
    const failed = events.filter((e) => e.type === "AttemptFailed");
    if (failed.length > 0)
      throw new Error(`${kind}: ${failed.length} attempts failed: ${failed[0].dataJson}`);
    const at = (e) => Date.parse(e.metadata.recordedAt);
    const dispatched = events.filter((e) => e.type === "DispatchIntended");
    const succeeded = events.filter((e) => e.type === "AttemptSucceeded");
    const first = Math.min(...dispatched.map(at));
    const last = Math.max(...succeeded.map(at));
    const latencies = [];
    const inWorker = [];
    for (const d of dispatched) {
      const token = JSON.parse(d.dataJson).token;
      const file = join(dir, "output", `${token}.log`);
      if (!existsSync(file)) continue;
      const m = /entered (\d+(?:\.\d+)?)(?: received (\d+(?:\.\d+)?))?/.exec(readFileSync(file, "utf8"));
      if (m) latencies.push(Number(m[1]) - at(d));
      if (m?.[2]) inWorker.push(Number(m[1]) - Number(m[2]));
    }
    latencies.sort((a, b) => a - b);
    inWorker.sort((a, b) => a - b);
    return {
      kind,
      tasks: succeeded.length,
      perSecond: succeeded.length / ((last - first) / 1000),
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      measured: latencies.length,
      workerP50: percentile(inWorker, 50),
      workerP99: percentile(inWorker, 99),
      upCpuMs: (cpu.up * 1000) / succeeded.length,
      workerCpuMs: (cpu.worker * 1000) / succeeded.length,
    };
  } finally {
    for (const p of procs.reverse()) {
      p.kill("SIGTERM");
      await Promise.race([new Promise((r) => p.once("exit", r)), sleep(10_000)]);
      if (p.exitCode === null) p.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
    rmSync(`${dir}-tasks`, { recursive: true, force: true });
  }
}

// BENCH_PYTHON_BEFORE: another checkout's clients/python, measured first in the same run (a
// before/after comparison in the same minutes).
const before = process.env.BENCH_PYTHON_BEFORE;
const oneAtATime = Math.max(20, Math.round(TASKS / 4));
const runs = [
  ...(before
    ? [
        ["Python worker (before), python no-op", "python", false, before],
        ["Python worker (before), idempotent", "python", true, before],
        ["Python worker (before), python no-op, one at a time", "python", false, before, 1, oneAtATime],
      ]
    : []),
  ["Python worker, python no-op", "python", false, pkg],
  ["Python worker, idempotent", "python", true, pkg],
  // The floor under the queueing: one attempt at a time, nothing else in the worker's way.
  [
    "Python worker, python no-op, one at a time",
    "python",
    false,
    pkg,
    1,
    Math.max(20, Math.round(TASKS / 4)),
  ],
  ["Node worker, shell echo", "node", false, pkg],
  ["Node worker, idempotent", "node", true, pkg],
];
const rows = [];
// BENCH_PYTHON_ONLY=TEXT: only the rows whose label holds TEXT ("Python", "idempotent").
const only = process.env.BENCH_PYTHON_ONLY;
for (const [label, kind, idempotent, pythonPackage, capacity, tasks] of runs.filter(
  ([l]) => !only || l.includes(only),
)) {
  const r = await measure(kind, idempotent, pythonPackage, capacity, tasks);
  rows.push([
    label,
    fmt(r.tasks),
    fmt(r.perSecond, 1),
    fmt(r.p50, 1),
    fmt(r.p99, 1),
    fmt(r.workerP50, 1),
    fmt(r.workerP99, 1),
    fmt(r.upCpuMs, 1),
    fmt(r.workerCpuMs, 1),
    `${r.measured}`,
  ]);
}
console.log(
  `${TASKS} tasks of one interval on one queue, one remote worker of capacity ${CAPACITY} (one at a time: capacity 1, a quarter of the tasks), API on loopback`,
);
console.log(
  "start: DispatchIntended as recorded -> function (or command) entered; in worker: run command received -> function entered",
);
console.log(
  "not idempotent (the default): the attempt waits for its start permission, sent once its AttemptStarted is durable",
);
printTable(
  [
    "worker",
    "tasks",
    "tasks/s",
    "start p50 ms",
    "start p99 ms",
    "in worker p50",
    "in worker p99",
    "scheduler CPU ms/task",
    "worker CPU ms/task",
    "latencies",
  ],
  rows,
);
