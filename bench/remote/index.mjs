// bench/remote: remote workers (`chronolog worker`) on loopback beside the local pool, on the
// embedded log, every step durable: no-op tasks per second, and the chain's hop.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { startApiServer } from "@chronolog/api";
import { ACCESS_TOKEN_STREAM, lastSlotEndingBy, SchedulerProjection } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, RemoteWorkers, RoutingDispatcher, Scheduler } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import { parse } from "yaml";
import { cliNodeFlags, fmt, percentile, printTable, silent, waitFor } from "../table.mjs";

const quick = process.env.BENCH_QUICK === "1";
const N = quick ? 2000 : 10_000;
const CHAIN = quick ? 200 : 1000;
const PAIRS = Number(process.env.BENCH_PAIRS ?? (quick ? 1 : 3));
const WORKERS = 2;
const QUEUE = "r";
const DAY = 86_400_000;
const now = Date.now();
// As bench/scheduler: a daily slot hour twelve hours away, so no run crosses its boundary.
const SLOT_HOUR = (new Date(now).getUTCHours() + 12) % 24;
const latest = lastSlotEndingBy(`0 ${SLOT_HOUR} * * *`, "UTC", new Date(now));
const start = new Date(latest.getTime() - 400 * DAY).toISOString();
const CLI = fileURLToPath(new URL("../../services/cli/bin/chronolog.mjs", import.meta.url));

function taskYaml(name, parents, queue) {
  return `  - { project: bench, account: b, name: ${name}, cron: "0 ${SLOT_HOUR} * * *", startDate: "${start}", catchup: false, idempotent: true${queue ? `, queue: ${queue}` : ""}, operator: { type: noop }, parents: [${parents.map((p) => `"${p}"`).join(", ")}] }\n`;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// One work token for every round's log (its SHA-256 recorded in each), so that the same worker
// processes, warm, reconnect to each round's scheduler on the same port.
const TOKEN = `chl.bench.${createHash("sha256").update(String(now)).digest("hex")}`;
const PORT = await freePort();
const root = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-remote-"));

/** The local pool: two worker processes, warm from one run to the next (as bench/scheduler's). */
const pool = new WorkerPool({ size: WORKERS, capacity: 5000 });
await pool.ready();

/** Two `chronolog worker` processes on loopback, for every round. */
const workers = Array.from({ length: WORKERS }, (_, i) => {
  const dir = join(root, `worker-${i + 1}`);
  mkdirSync(dir);
  // BENCH_WORKER_NODE_FLAGS: more node flags for the workers (e.g. --cpu-prof, to profile them).
  const args = [
    ...cliNodeFlags(),
    ...(process.env.BENCH_WORKER_NODE_FLAGS ?? "").split(/\s+/).filter(Boolean),
    CLI,
    "worker",
    "--connect",
    `http://127.0.0.1:${PORT}`,
    "--queue",
    QUEUE,
    "--id",
    `bench-${i + 1}`,
    "--capacity",
    "5000",
    "--dir",
    join(dir, "w"),
  ];
  const child = spawn(process.execPath, args, {
    cwd: dir,
    env: {
      ...process.env,
      CHRONOLOG_TOKEN: TOKEN,
      CHRONOLOG_LOG_LEVEL: "error",
      // Tasks as this user, as the local pool's run (noop tasks start no process anyway).
      CHRONOLOG_RUN_AS: process.env.CHRONOLOG_RUN_AS ?? userInfo().username,
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  return child;
});

/**
 * A data directory with the declared tasks; remote: the HTTP API on the fixed port, serving the
 * worker protocol, and the remote workers connected to it before anything is timed.
 */
async function setup(label, yaml, remote) {
  const dir = mkdtempSync(join(root, `${label}-`));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "bench" });
  const projection = new SchedulerProjection();
  await declare(log, projection, [{ filename: `${label}.yaml`, document: parse(yaml) }], Date.now());
  const env = { dir, log, projection, dispatcher: pool, queues: undefined, api: null, applied: new Set() };
  if (remote) {
    await log.append(
      ACCESS_TOKEN_STREAM,
      [
        {
          type: "AccessTokenIssued",
          data: {
            name: "bench",
            scope: "work",
            projects: [],
            queues: [QUEUE],
            sha256: createHash("sha256").update(TOKEN).digest("hex"),
          },
        },
      ],
      { expectedRevision: "any" },
    );
    const hub = new RemoteWorkers({
      log,
      projection,
      logger: silent,
      schedulerId: "bench",
      outputRoot: join(dir, "output"),
      outputMaxBytes: 1 << 20,
    });
    env.remote = hub;
    env.queues = hub;
    env.dispatcher = new RoutingDispatcher(pool, hub);
  }
  await catchUp(log, projection);
  if (remote) {
    env.api = await startApiServer({
      log,
      writeLog: log,
      dataDir: dir,
      listen: `127.0.0.1:${PORT}`,
      shared: {
        projection,
        feed: (l) => {
          env.applied.add(l);
          return () => env.applied.delete(l);
        },
        workers: env.remote,
      },
    });
    await waitFor(() => {
      if (workers.some((w) => w.exitCode !== null)) throw new Error("a remote worker exited");
      return env.remote.connected === WORKERS;
    }, 60_000);
  }
  return env;
}

function newScheduler(env) {
  return new Scheduler({
    log: env.log,
    projection: env.projection,
    dispatcher: env.dispatcher,
    ...(env.queues ? { queues: env.queues } : {}),
    logger: silent,
    observer: {
      applied: (e) => {
        for (const l of env.applied) l(e);
      },
    },
  });
}

async function teardown(env, scheduler) {
  await scheduler?.stop();
  await env.remote?.close();
  await env.api?.close();
  await env.log.close();
  rmSync(env.dir, { recursive: true, force: true });
}

// ---- 1. N independent due no-op tasks ----------------------------------------------------------
async function independent(n, remote) {
  let yaml = "tasks:\n";
  for (let i = 0; i < n; i++) yaml += taskYaml(`t${i}`, [], remote ? QUEUE : undefined);
  const env = await setup("independent", yaml, remote);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const scheduler = newScheduler(env);
  await scheduler.start();
  await waitFor(() => scheduler.stats.completed >= n);
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await teardown(env, scheduler);
  return { rate: n / secs, cpuPerTaskUs: (cpu.user + cpu.system) / n };
}

// ---- 2. a chain: parent success -> child dispatch, per hop -------------------------------------
async function chain(n, remote) {
  let yaml = "tasks:\n";
  for (let i = 0; i < n; i++)
    yaml += taskYaml(`c${i}`, i === 0 ? [] : [`bench/b/c${i - 1}`], remote ? QUEUE : undefined);
  const env = await setup("chain", yaml, remote);
  const succeededAt = new Map(); // step -> its success report reached the scheduler
  const dispatchedAt = new Map(); // step -> its RunCommand left for a worker
  const nameOf = (s) => /bench\/b\/(c\d+)\//.exec(s)?.[1];
  const stopHearing = env.dispatcher.onReport((r) => {
    if (r.kind === "succeeded") succeededAt.set(nameOf(r.instanceStream), performance.now());
  });
  const dispatch = env.dispatcher.dispatch.bind(env.dispatcher);
  env.dispatcher.dispatch = (cmds) => {
    const t = performance.now();
    for (const c of cmds) dispatchedAt.set(nameOf(c.instanceStream), t);
    dispatch(cmds);
  };
  const scheduler = newScheduler(env);
  const t0 = performance.now();
  await scheduler.start();
  await waitFor(() => scheduler.stats.completed >= n);
  const wall = performance.now() - t0;
  const hops = [];
  const trips = [];
  for (let i = 1; i < n; i++) {
    hops.push(dispatchedAt.get(`c${i}`) - succeededAt.get(`c${i - 1}`));
    trips.push(succeededAt.get(`c${i}`) - dispatchedAt.get(`c${i}`));
  }
  hops.sort((a, b) => a - b);
  trips.sort((a, b) => a - b);
  stopHearing?.();
  if (env.dispatcher === pool) delete pool.dispatch;
  await teardown(env, scheduler);
  return {
    p50: percentile(hops, 50),
    p99: percentile(hops, 99),
    trip50: percentile(trips, 50),
    trip99: percentile(trips, 99),
    step: wall / n,
  };
}

// Local and remote in turn, in the same minutes: only a ratio measured side by side says anything
// on a machine whose speed moves with its load.
const pairs = [];
try {
  // A round of each at a fifth of the size first, not counted: code compiled, workers warm.
  await independent(N / 5, false);
  await independent(N / 5, true);
  await chain(CHAIN / 5, false);
  await chain(CHAIN / 5, true);
  for (let i = 0; i < PAIRS; i++) {
    const local = await independent(N, false);
    const remote = await independent(N, true);
    const lch = await chain(CHAIN, false);
    const rch = await chain(CHAIN, true);
    pairs.push({ local, remote, lch, rch });
  }
} finally {
  for (const w of workers) w.kill("SIGTERM");
  await Promise.all(workers.map((w) => new Promise((r) => (w.exitCode !== null ? r() : w.once("exit", r)))));
  await pool.close(1000);
  rmSync(root, { recursive: true, force: true });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const range = (xs, digits = 2) =>
  xs.length > 1 ? ` (${fmt(Math.min(...xs), digits)}-${fmt(Math.max(...xs), digits)})` : "";
const show = (f, digits) => {
  const xs = pairs.map(f);
  return `${fmt(median(xs), digits)}${range(xs, digits)}`;
};
const ratio = (f, digits = 2) => {
  const xs = pairs.map(f);
  return `${fmt(median(xs), digits)}x${range(xs, digits)}`;
};

console.log(
  `\nbench/remote (embedded SQLite log, synchronous=FULL, no-op tasks): the local pool (${WORKERS} worker processes) beside ${WORKERS} \`chronolog worker\` processes on loopback (plain HTTP/1.1: commands over Server-Sent Events, reports POSTed in batches), ${PAIRS} pair${PAIRS === 1 ? "" : "s"} in turn after a warm-up round of each; median (range)\n`,
);
printTable(
  ["measure", "local pool", "remote workers", "remote/local", "target"],
  [
    [
      `${fmt(N)} independent due no-op tasks, completed per s`,
      show((p) => p.local.rate, 0),
      show((p) => p.remote.rate, 0),
      ratio((p) => p.remote.rate / p.local.rate),
      ">= 0.8x",
    ],
    [
      `  ... scheduler process CPU per task, us`,
      show((p) => p.local.cpuPerTaskUs, 1),
      show((p) => p.remote.cpuPerTaskUs, 1),
      ratio((p) => p.remote.cpuPerTaskUs / p.local.cpuPerTaskUs),
      "",
    ],
    [
      `${fmt(CHAIN)}-step chain hop p50, ms (success report heard -> child dispatched)`,
      show((p) => p.lch.p50, 2),
      show((p) => p.rch.p50, 2),
      ratio((p) => p.rch.p50 / p.lch.p50),
      "remote < 2 ms",
    ],
    [
      `  ... p99, ms`,
      show((p) => p.lch.p99, 2),
      show((p) => p.rch.p99, 2),
      ratio((p) => p.rch.p99 / p.lch.p99),
      "",
    ],
    [
      `  ... step round trip p50, ms (dispatched -> its success report heard)`,
      show((p) => p.lch.trip50, 2),
      show((p) => p.rch.trip50, 2),
      ratio((p) => p.rch.trip50 / p.lch.trip50),
      "",
    ],
    [
      `  ... step round trip p99, ms`,
      show((p) => p.lch.trip99, 2),
      show((p) => p.rch.trip99, 2),
      ratio((p) => p.rch.trip99 / p.lch.trip99),
      "",
    ],
    [
      `  ... whole chain wall time per step, ms`,
      show((p) => p.lch.step, 2),
      show((p) => p.rch.step, 2),
      ratio((p) => p.rch.step / p.lch.step),
      "",
    ],
  ],
);
