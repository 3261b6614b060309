// bench/api: the HTTP API over 10,000 declared tasks on the embedded log: request latency under a
// bounded loopback load, live-event delivery, and what serving it costs the scheduler.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { issueToken, startApiServer } from "@chronolog/api";
import { lastSlotEndingBy, SchedulerProjection } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, declare, Scheduler } from "@chronolog/scheduler";
import { WorkerPool } from "@chronolog/worker";
import { parse } from "yaml";
import { fmt, percentile, printTable, silent, waitFor } from "../table.mjs";

const quick = process.env.BENCH_QUICK === "1";
const TASKS = quick ? 2000 : 10_000;
const CONCURRENCY = 4;
const PER_CLIENT = quick ? 250 : 1000; // requests per client, per endpoint, back to back
// The bounded load the latency target is for: requests due at this rate in all, dealt in turn to
// the clients (about a quarter of what the server answers back to back).
const PACED_RATE = 500;
const PACED_COUNT = quick ? 1000 : 4000; // requests per endpoint
const SSE_EVENTS = quick ? 300 : 1000;
const SSE_READERS = 4;
const POLL_RATE = 100; // requests/s while the scheduler runs
const PAIRS = quick ? 2 : 4; // rounds of each condition, alternated: A, B, A, B, ...

const DAY = 86_400_000;
const now = Date.now();
// As bench/scheduler: a daily slot hour twelve hours away, so no run crosses its boundary.
const SLOT_HOUR = (new Date(now).getUTCHours() + 12) % 24;
const latest = lastSlotEndingBy(`0 ${SLOT_HOUR} * * *`, "UTC", new Date(now));
const start = new Date(latest.getTime() - 400 * DAY).toISOString();
const taskId = (i) => `bench/b/t${i}/ALL`;

function tasksYaml(n) {
  let yaml = "tasks:\n";
  for (let i = 0; i < n; i++)
    yaml += `  - { project: bench, account: b, name: t${i}, cron: "0 ${SLOT_HOUR} * * *", startDate: "${start}", catchup: false, idempotent: true, operator: { type: noop } }\n`;
  return yaml;
}

/** A data directory with `n` declared due tasks, a read token, and a pool of 2 worker processes. */
async function setup(label, n) {
  const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), `chronolog-bench-api-${label}-`));
  const log = openSqliteLog({ path: join(dir, "log.db"), actor: "bench" });
  const { token } = await issueToken(log, { name: "bench", scope: "read" });
  const projection = new SchedulerProjection();
  await declare(log, projection, [{ filename: `${label}.yaml`, document: parse(tasksYaml(n)) }], Date.now());
  await catchUp(log, projection);
  const pool = new WorkerPool({ size: 2, capacity: 5000 });
  await pool.ready();
  // The events the scheduler applies, for an API beside it (as `chronolog up` serves it).
  const applied = new Set();
  return { dir, log, projection, pool, token, applied };
}

async function teardown({ dir, log, pool }, scheduler, api) {
  await pool.close(1000);
  await scheduler?.stop();
  await api?.close();
  await log.close();
  rmSync(dir, { recursive: true, force: true });
}

/** The clients' worker thread: send it a task, get its one answer. */
function clients() {
  const worker = new Worker(new URL("./client.mjs", import.meta.url));
  const queue = [];
  worker.on("message", (m) => {
    const next = queue.shift();
    if (m?.error) next?.reject(new Error(m.error));
    else next?.resolve(m);
  });
  const ask = (m, answers = 1) => {
    const replies = Array.from(
      { length: answers },
      () => new Promise((resolve, reject) => queue.push({ resolve, reject })),
    );
    worker.postMessage(m);
    return replies;
  };
  return { ask, close: () => worker.terminate() };
}

// As `chronolog up` serves it: reading the scheduler's projection, fed by what it applies.
const startApi = (env) =>
  startApiServer({
    log: env.log,
    writeLog: env.log,
    dataDir: env.dir,
    listen: "127.0.0.1:0",
    shared: {
      projection: env.projection,
      feed: (listener) => {
        env.applied.add(listener);
        return () => env.applied.delete(listener);
      },
    },
  });

async function runScheduler(env) {
  const scheduler = new Scheduler({
    log: env.log,
    projection: env.projection,
    dispatcher: env.pool,
    logger: silent,
    observer: {
      applied: (e) => {
        for (const l of env.applied) l(e);
      },
    },
  });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await scheduler.start();
  await waitFor(() => scheduler.stats.completed >= TASKS);
  const secs = (performance.now() - t0) / 1000;
  // The process's CPU per task: the scheduler's, the API's when it is on, and the polling
  // clients' (a worker thread of this process; not the worker processes running the tasks).
  const cpu = process.cpuUsage(cpu0);
  return { scheduler, secs, cpuUs: (cpu.user + cpu.system) / TASKS };
}

const keyPaths = (count) =>
  Array.from(
    { length: count },
    () => `/api/v1/tasks/${encodeURIComponent(taskId(Math.floor(Math.random() * TASKS)))}`,
  );

// ---- 1. request latency, and live-event delivery, over tasks that have run once ----------------
async function latency(c) {
  const env = await setup("latency", TASKS);
  // Run every task once, so that each row has an attempt to show.
  const { scheduler } = await runScheduler(env);
  const api = await startApi(env);
  await waitFor(() => api.state.ready && api.state.projection.position >= env.projection.position);
  const base = api.url;
  // The server's event loop time per request (busy, of its wall time), beside the latencies the
  // clients saw: less bent by whatever else the machine runs than a percentile is.
  const measure = async (kind, paths) => {
    const elu = performance.eventLoopUtilization();
    const [answer] = c.ask({
      kind,
      base,
      token: env.token,
      paths,
      concurrency: CONCURRENCY,
      perClient: PER_CLIENT,
      rate: PACED_RATE,
      count: PACED_COUNT,
    });
    const r = await answer;
    return { ...r, busyMs: performance.eventLoopUtilization(elu).active / (r.ms.length + 50) };
  };
  const keys = keyPaths(1000);
  // Pages from across the key range (cursors are the ids before each page's first).
  const pages = Array.from({ length: 100 }, (_, i) => {
    const after = Buffer.from(taskId(Math.floor((i * TASKS) / 100)), "utf8").toString("base64url");
    return `/api/v1/tasks?limit=100${i === 0 ? "" : `&cursor=${after}`}`;
  });
  // Back to back first: it also warms the server's code for the bounded runs.
  const keyFull = await measure("timed", keys);
  const pageFull = await measure("timed", pages);
  const key = await measure("paced", keys);
  const page = await measure("paced", pages);

  // Live events: readers connected at the head, a writer appending one Note at a time.
  const from = api.state.head.position + 1n;
  const [connected, received] = c.ask(
    { kind: "follow", base, token: env.token, from: String(from), count: SSE_EVENTS, readers: SSE_READERS },
    2,
  );
  await connected;
  const calledAt = new Map();
  const ackedAt = new Map();
  for (let i = 0; i < SSE_EVENTS; i++) {
    const t = performance.timeOrigin + performance.now();
    const r = await env.log.append("note-bench", [{ type: "Note", data: { text: "bench", sentAt: t } }], {
      expectedRevision: "any",
    });
    const id = String(r.position);
    calledAt.set(id, t);
    ackedAt.set(id, performance.timeOrigin + performance.now());
    await new Promise((r) => setTimeout(r, 2));
  }
  const fromCall = [];
  const fromAck = [];
  for (const reader of (await received).received)
    for (const [id, at] of reader) {
      fromCall.push(at - calledAt.get(id));
      fromAck.push(at - ackedAt.get(id));
    }
  const sorted = (xs) => xs.sort((a, b) => a - b);
  await teardown(env, scheduler, api);
  const perSecond = (r) => r.ms.length / (r.ms.reduce((t, x) => t + x, 0) / CONCURRENCY / 1000);
  // One endpoint: its bounded run, and its back-to-back run beside it.
  const endpoint = (paced, full) => ({
    ms: sorted(paced.ms),
    late: paced.lateStarts,
    busyMs: paced.busyMs,
    full: sorted(full.ms),
    fullRate: perSecond(full),
  });
  return {
    key: endpoint(key, keyFull),
    page: endpoint(page, pageFull),
    pageBytes: pageFull.bytes / pageFull.ms.length,
    fromCall: sorted(fromCall),
    fromAck: sorted(fromAck),
  };
}

// ---- 2. the scheduler's tasks/s without the API (A) and with it polled (B), alternated --------
async function round(c, withApi) {
  const env = await setup(withApi ? "b" : "a", TASKS);
  let api = null;
  let polled = null;
  if (withApi) {
    api = await startApi(env);
    await waitFor(() => api.state.ready);
    const paths = [...keyPaths(900), ...Array.from({ length: 100 }, () => "/api/v1/tasks?limit=100")];
    const [started] = c.ask({ kind: "poll", base: api.url, token: env.token, paths, rate: POLL_RATE });
    await started;
  }
  const { scheduler, secs, cpuUs } = await runScheduler(env);
  if (withApi) {
    const [stopped] = c.ask({ kind: "stop" });
    polled = await stopped;
  }
  await teardown(env, scheduler, api);
  return { rate: TASKS / secs, secs, cpuUs, polled };
}

const c = clients();
const lat = await latency(c);
const rounds = { A: [], B: [] };
for (let i = 0; i < PAIRS; i++)
  for (const withApi of [false, true]) rounds[withApi ? "B" : "A"].push(await round(c, withApi));
await c.close();

const mean = (xs) => xs.reduce((s, x) => s + x, 0) / xs.length;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
// Each B against the A just before it: the two ran in the same minute.
const pairRatios = rounds.B.map((b, i) => b.rate / rounds.A[i].rate);
const rateA = median(rounds.A.map((r) => r.rate));
const rateB = median(rounds.B.map((r) => r.rate));
const cpuA = median(rounds.A.map((r) => r.cpuUs));
const cpuB = median(rounds.B.map((r) => r.cpuUs));
const pollRates = rounds.B.map((r) => r.polled.made / r.polled.secs);
const failedPolls = rounds.B.reduce((s, r) => s + r.polled.failed, 0);

console.log(
  `\nbench/api (embedded SQLite log, synchronous=FULL, ${fmt(TASKS)} tasks, ${CONCURRENCY} keep-alive loopback clients)\n`,
);
const bounded = `${fmt(PACED_RATE)} req/s in all, ${fmt(PACED_COUNT)} requests`;
/** An endpoint's rows: its bounded run against the target, then its back-to-back run. */
const endpointRows = (route, about, e) => [
  [`${route} p50, ms (${[...about, bounded].join(", ")})`, fmt(percentile(e.ms, 50), 2), ""],
  ["  ... p99, ms", fmt(percentile(e.ms, 99), 2), "< 5"],
  ...(e.late ? [["  ... requests sent late (the client was still waiting)", fmt(e.late), ""]] : []),
  ["  ... server event-loop time per request, ms", fmt(e.busyMs, 3), ""],
  [
    `  ... p50 / p99, ms (back to back, ${fmt(PER_CLIENT)} each: ${fmt(e.fullRate)} req/s)`,
    `${fmt(percentile(e.full, 50), 2)} / ${fmt(percentile(e.full, 99), 2)}`,
    "",
  ],
];
printTable(
  ["measure", "chronolog", "target"],
  [
    ...endpointRows("GET /tasks/{key}", [], lat.key),
    ...endpointRows("GET /tasks?limit=100", [`${fmt(lat.pageBytes / 1024)} KiB a page`], lat.page),
    [
      `SSE append -> receipt p50, ms (${SSE_READERS} readers, ${fmt(SSE_EVENTS)} appends)`,
      fmt(percentile(lat.fromCall, 50), 2),
      "",
    ],
    ["  ... p99, ms", fmt(percentile(lat.fromCall, 99), 2), "< 10"],
    ["  ... p99 from the append's acknowledgement, ms", fmt(percentile(lat.fromAck, 99), 2), ""],
    [`scheduler tasks/s, no API (A: ${rounds.A.map((r) => fmt(r.rate)).join(", ")}), median`, fmt(rateA), ""],
    [
      `  ... API polled at ${fmt(mean(pollRates))} req/s (B: ${rounds.B.map((r) => fmt(r.rate)).join(", ")}), median`,
      fmt(rateB),
      "",
    ],
    [
      `  ... ratio B / A, median of ${PAIRS} pairs (${pairRatios.map((r) => fmt(r, 2)).join(", ")})`,
      fmt(median(pairRatios), 3),
      ">= 0.95",
    ],
    [`  ... process CPU per task, us, A / B (medians)`, `${fmt(cpuA)} / ${fmt(cpuB)}`, ""],
    ["  ... ratio A / B of that CPU", fmt(cpuA / cpuB, 3), ""],
    ...(failedPolls ? [["  ... polls that failed", fmt(failedPolls), "0"]] : []),
  ],
);
