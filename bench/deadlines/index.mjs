// bench/deadlines: what watching deadlines costs. N hourly tasks in 10 projects, each after 0 to
// 2 tasks of other projects (as bench/scale), every one with `deadline: { within: "30m" }`, and
// a recorded duration each. Measured in one process, on the projection and the scheduler's
// DeadlineWatch alone (no log, no workers): the fold of successful attempts (which keeps the
// durations), the memory of the durations and of the watch, the start (one timer per task),
// the first look at every task (the estimate over its ancestors), and an event of a task with a
// deadline against one without. Durations are kept for every task (an ancestor's count), with a
// deadline or not.
import { performance } from "node:perf_hooks";
import { instanceStream, SchedulerProjection, taskSpecSchema, taskStream } from "@chronolog/core";
import { DeadlineWatch } from "@chronolog/scheduler";
import { fmt, printTable, silent } from "../table.mjs";

const N = Number(process.env.BENCH_DEADLINE_TASKS ?? 100_000);
const PROJECTS = 10;
const HOUR = 3_600_000;
const gc = () => globalThis.gc?.();
const heap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const keyOf = (i) => ({ project: `p${i % PROJECTS}`, account: "acme", name: `t${i}`, partition: "ALL" });
const parentsOf = (i) => [i - 1, i - 13].slice(0, i % 3).filter((j) => j >= 0);

// The current hour's interval is due at the next hour; its deadline is 30 minutes after.
const now = Math.floor(Date.now() / HOUR) * HOUR + HOUR / 4;
const logicalDate = new Date(Math.floor(now / HOUR) * HOUR).toISOString();
const nextRunDate = new Date(Math.floor(now / HOUR) * HOUR + HOUR).toISOString();

function build(withDeadline) {
  const p = new SchedulerProjection();
  let position = 0n;
  const apply = (streamId, revision, type, data) =>
    p.apply({
      type,
      data,
      streamId,
      revision,
      position: position++,
      metadata: { recordedAt: new Date(now - HOUR).toISOString() },
    });
  for (let i = 0; i < N; i++) {
    const spec = taskSpecSchema.parse({
      key: keyOf(i),
      cron: "0 * * * *",
      startDate: "2026-01-01T00:00:00.000Z",
      operator: { type: "noop" },
      parents: parentsOf(i).map(keyOf),
      ...(withDeadline ? { deadline: { within: "30m" } } : {}),
    });
    apply(taskStream(keyOf(i)), 0n, "TaskDeclared", { key: keyOf(i), spec, logicalDate, nextRunDate });
  }
  return { p, apply };
}

/** One successful attempt of each task (an earlier interval's): intent, start, success. */
function runOnce({ apply }) {
  const earlier = new Date(Date.parse(logicalDate) - HOUR).toISOString();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const stream = instanceStream(keyOf(i), earlier);
    const token = `tok-${i}-000000`;
    apply(stream, 0n, "DispatchIntended", {
      key: keyOf(i),
      logicalDate: earlier,
      attempt: 1,
      token,
      operator: { type: "noop" },
      idempotent: true,
      leaseSeconds: 30,
    });
    apply(stream, 1n, "AttemptStarted", { attempt: 1, token, workerId: "w", leaseExpiresAt: nextRunDate });
    apply(stream, 2n, "AttemptSucceeded", {
      attempt: 1,
      token,
      durationMs: 60_000 + (i % 7) * 1000,
      exitCode: 0,
      cacheHit: false,
    });
  }
  return (performance.now() - t0) / (3 * N);
}

const fakeLog = { append: async () => ({}), streamRevision: async () => "no_stream" };

function watch(p) {
  return new DeadlineWatch({ log: fakeLog, projection: p, now: () => now, owns: () => true, logger: silent });
}

// Without deadlines, then with: the fold of attempts, and the memory (after a warm-up of both).
const full = N;
runOnce(build(true));
const plain = build(false);
const withD = build(true);
const foldWith = runOnce(withD);
const p = withD.p;
// The durations at their fullest: 9 a task.
let h = heap();
const full9 = new Map();
for (const [k, v] of p.durations) full9.set(k, [...v, ...v, ...v, ...v, ...v, ...v, ...v, ...v, ...v]);
const durationsBytes = (heap() - h) / full;
full9.clear();
h = 0;

// The watch: its start looks at every task (finds its interval, makes its estimate, arms its
// timer), 500 a turn of the event loop; timed here as one loop.
const h0 = heap();
const w = watch(p);
let t = performance.now();
for (const id of p.tasks.keys()) w.check(id);
const checkMs = performance.now() - t;
const checks = w.stats.checks;
const armedBytes = (heap() - h0) / N;

// An event of a task's stream: one with a deadline, one without (the hot path).
w.start();
const ids = [...p.tasks.keys()];
const events = 200_000;
t = performance.now();
for (let i = 0; i < events; i++) w.taskEvent(ids[i % N], "IntervalCompleted", {});
const withDeadlineUs = ((performance.now() - t) * 1000) / events;
const plainWatch = watch(plain.p);
plainWatch.start();
const plainIds = [...plain.p.tasks.keys()];
t = performance.now();
for (let i = 0; i < events; i++) plainWatch.taskEvent(plainIds[i % N], "IntervalCompleted", {});
const withoutDeadlineUs = ((performance.now() - t) * 1000) / events;
w.stop();
plainWatch.stop();

console.log(
  `\nbench/deadlines (${fmt(N)} hourly tasks in 10 projects, 0-2 parents each in other projects, each with deadline { within: 30m } and recorded durations; in-process, no log)\n`,
);
printTable(
  ["measure", "value"],
  [
    ["fold of an attempt's events (the success keeps its duration), us per event", fmt(foldWith * 1000, 2)],
    ["durations kept, 9 a task (the most), heap bytes per task", fmt(durationsBytes)],
    [`watch start: ${fmt(N)} tasks looked at (interval, estimate, timer), ms`, fmt(checkMs, 1)],
    ["  ... per task, us", fmt((checkMs * 1000) / Math.max(1, checks), 1)],
    ["  ... heap of the watch (interval, timer), bytes per task", fmt(armedBytes)],
    ["a task event, task with a deadline (timer moved), us", fmt(withDeadlineUs, 2)],
    ["a task event, task without one, us", fmt(withoutDeadlineUs, 2)],
    ["timers left armed", fmt(w.size)],
  ],
);
