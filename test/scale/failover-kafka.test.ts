import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { readLog } from "../faults/support.js";
import { tempDataDir } from "../support/cli.js";
import { kafkaForSuite } from "../support/kafka.js";
import { waitUntil } from "../support/wait.js";
import {
  actorPid,
  DAY,
  declareYaml,
  maxSlotsHeld,
  type SchedulerProc,
  startScheduler,
  stopScheduler,
  waitForShards,
} from "./support.js";

/**
 * Two `chronolog scheduler` processes share one Kafka log. One is killed with SIGKILL in the
 * middle of a run; the other takes its shards when the group's session for it expires and
 * finishes the work. No task that is not idempotent runs twice, none is lost, and the
 * connection's maxParallelism holds across both schedulers the whole time.
 */
const TASKS = 240;
const LIMIT = 6;
let kafka: { brokers: string; stop: () => Promise<void> };
const procs: SchedulerProc[] = [];
let dir = "";

beforeAll(async () => {
  kafka = await kafkaForSuite("failover");
}, 300_000);
afterAll(async () => {
  await Promise.all(procs.map(stopScheduler));
  delete process.env.CHRONOLOG_LOG;
  if (dir) rmSync(dir, { recursive: true, force: true });
  await kafka?.stop();
}, 60_000);

it("SIGKILL one of two schedulers mid-run: the other takes over its shards and finishes; nothing runs twice", async () => {
  dir = tempDataDir("failover");
  mkdirSync(join(dir, "effects"));
  process.env.CHRONOLOG_LOG = `kafka://${kafka.brokers}/chronolog-failover-${process.pid}-${Date.now()}`;
  const a = startScheduler(join(dir, "a"), "a");
  procs.push(a);
  await waitForShards(a, 12);
  const b = startScheduler(join(dir, "b"), "b");
  procs.push(b);
  await Promise.all([waitForShards(a, 6), waitForShards(b, 6)]);

  // One daily interval per task, all due now, all on one connection of LIMIT slots.
  const day = Math.floor(Date.now() / DAY) * DAY - DAY;
  const start = new Date(day).toISOString();
  const end = new Date(day + DAY / 2).toISOString();
  const effect = (name: string) =>
    JSON.stringify(`sleep 0.25; echo {{ logical_date }} "$CHRONOLOG_TOKEN" >> ${join(dir, "effects", name)}`);
  const tasks = Array.from(
    { length: TASKS },
    (_, i) =>
      `  - { project: f, account: a, name: t${i}, cron: "0 0 * * *", startDate: "${start}", endDate: "${end}", idempotent: false, connection: wh, leaseSeconds: 5, retry: { maxAttempts: 1 }, operator: { type: shell, command: ${effect(`t${i}`)} } }`,
  );
  declareYaml(
    dir,
    `connections:\n  - { name: wh, operators: [shell], maxParallelism: ${LIMIT} }\ntasks:\n${tasks.join("\n")}\n`,
  );

  const effects = (i: number) => {
    const f = join(dir, "effects", `t${i}`);
    return existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean) : [];
  };
  const done = () => Array.from({ length: TASKS }, (_, i) => effects(i).length).reduce((x, y) => x + y, 0);
  await waitUntil("a third of the tasks to run", () => (done() >= TASKS / 3 ? true : undefined), 120_000, 50);
  const killedAt = Date.now();
  a.proc.kill("SIGKILL");
  await a.exited;
  const takenOver = await waitForShards(b, 12, killedAt, 60_000);

  // Every task ends: succeeded, or failed because its only attempt was lost with its worker.
  const events = await waitUntil(
    "every task to finish its interval",
    async () => {
      const ev = await readLog(dir);
      const ended = ev.filter((e) => e.type === "IntervalCompleted" || e.type === "IntervalFailed");
      return ended.length >= TASKS ? ev : undefined;
    },
    180_000,
    500,
  );
  const intents = events.filter((e) => e.type === "DispatchIntended");
  const byA = intents.filter((e) => actorPid(e) === a.proc.pid).length;
  const byB = intents.filter((e) => actorPid(e) === b.proc.pid).length;
  const firstAfter = intents.find(
    (e) => actorPid(e) === b.proc.pid && Date.parse(e.metadata.recordedAt) > takenOver,
  );
  const completed = new Set(events.filter((e) => e.type === "IntervalCompleted").map((e) => e.streamId));
  const failed = events.filter((e) => e.type === "IntervalFailed");
  // Ended with a's workers: interrupted, gone with their scheduler process (not the tasks' failure).
  const lost = events.filter(
    (e) =>
      e.type === "AttemptFailed" &&
      (e.data as { error: { kind: string; message: string } }).error.kind === "interrupted" &&
      (e.data as { error: { message: string } }).error.message.includes(
        "belonged to an earlier scheduler process",
      ),
  );
  console.log(
    [
      `failover: ${TASKS} tasks, 2 schedulers, connection limit ${LIMIT}`,
      `  intents written: a ${byA} (killed), b ${byB}`,
      `  takeover: b held every shard ${takenOver - killedAt} ms after the SIGKILL (session timeout 6,000 ms)`,
      `  first dispatch by b after takeover: ${firstAfter ? Date.parse(firstAfter.metadata.recordedAt) - killedAt : "-"} ms after the SIGKILL`,
      `  intervals completed ${completed.size}, failed ${failed.length} (attempts lost with a's workers: ${lost.length})`,
      `  most slots held at once on the connection: ${maxSlotsHeld(events)}`,
    ].join("\n"),
  );

  expect(byA).toBeGreaterThan(0);
  expect(byB).toBeGreaterThan(0);
  // Not idempotent: no task ran twice, and every completed task ran exactly once.
  for (let i = 0; i < TASKS; i++) expect(effects(i).length).toBeLessThanOrEqual(1);
  expect(completed.size + failed.length).toBe(TASKS);
  expect(done()).toBeGreaterThanOrEqual(completed.size);
  // Failures are only attempts that a's death took, never more than it could run at once.
  expect(failed.length).toBe(lost.length);
  expect(lost.length).toBeLessThanOrEqual(LIMIT);
  for (const e of lost) expect(e.data).toMatchObject({ error: { kind: "interrupted" } });
  // One intent per task, and a second only where the first was abandoned unstarted (an
  // intent a wrote but could not hand over before it died).
  const perTask = new Map<string, number>();
  for (const e of intents) perTask.set(e.streamId, (perTask.get(e.streamId) ?? 0) + 1);
  const abandoned = new Set(events.filter((e) => e.type === "AttemptAbandoned").map((e) => e.streamId));
  expect(perTask.size).toBe(TASKS);
  for (const [stream, n] of perTask) expect(n).toBe(abandoned.has(stream) ? 2 : 1);
  expect(maxSlotsHeld(events)).toBeLessThanOrEqual(LIMIT);
  expect(takenOver - killedAt).toBeLessThan(20_000);
}, 300_000);
