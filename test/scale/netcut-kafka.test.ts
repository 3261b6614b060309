import { existsSync, mkdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { join } from "node:path";
import { formatTaskKey, instanceStream, parseTaskKey, type TaskKey } from "@chronolog/core";
import type { RecordedEvent } from "@chronolog/log";
import { shardKeyOf, shardOf } from "@chronolog/scheduler";
import { afterAll, beforeAll, expect, it } from "vitest";
import { readLog } from "../faults/support.js";
import { chronolog, tempDataDir } from "../support/cli.js";
import { kafkaForSuite } from "../support/kafka.js";
import { type LinkedNamespace, linkedNamespace, namespacesUnavailable } from "../support/netns.js";
import { waitUntil } from "../support/wait.js";
import {
  actorPid,
  DAY,
  declareYaml,
  heldShards,
  maxSlotsHeld,
  type SchedulerProc,
  startScheduler,
  stopScheduler,
  waitForShards,
} from "./support.js";

/**
 * Two `chronolog scheduler` processes share one Kafka log of the test's own broker. Scheduler a
 * runs in a network namespace whose only way to the broker is a veth pair; b runs beside the
 * broker. In the middle of a run a's link is cut (every packet dropped both ways, so a sees
 * only silence) for longer than the group session, then restored. Meanwhile the group drops a
 * and b takes its shards; a, which cannot hear that, fences itself before the group can have
 * dropped it: it holds nothing, kills what its workers run and dispatches nothing until it
 * renews its membership, which it does once the link is back.
 *
 * The tasks are not idempotent and share one connection of LIMIT slots. Each holds a kernel
 * lock on its instance and one of LIMIT slot locks while it runs (the locks go with the process
 * however it ends): a second execution at the same time, or one execution past the limit,
 * says so in the journal. Two long tasks of a's shards are running when the link is cut: on a
 * scheduler that does not fence itself they run on, unsupervised, while b, having waited out
 * their lease (2 s, well within the cut), takes them for lost and gives their slots to other
 * tasks.
 */
const SHORT = 100;
const LONG = 2;
const LIMIT = 4;
const SESSION_MS = 6000;
const CUT_MS = 15_000;
const LONG_SECONDS = 20;

const unavailable = namespacesUnavailable();
let net: LinkedNamespace | null = null;
let kafka: { brokers: string; stop: () => Promise<void> } | null = null;
const procs: SchedulerProc[] = [];
let dir = "";
let cut = false;

beforeAll(async () => {
  if (unavailable) return;
  net = linkedNamespace("netcut");
  kafka = await kafkaForSuite("netcut", { host: net.hostAddress });
}, 300_000);
afterAll(async () => {
  // (Restored before the schedulers are stopped: a cut-off one could not leave its group.)
  if (cut)
    try {
      net?.restore();
    } catch {
      // (the namespace goes below, and its link with it)
    }
  await Promise.all(procs.map(stopScheduler));
  delete process.env.CHRONOLOG_LOG;
  await kafka?.stop();
  net?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

interface Mark {
  readonly kind: "start" | "end";
  readonly token: string;
  readonly at: number;
  readonly netns?: string;
}

it("a scheduler cut off from Kafka past its session fences itself; nothing runs twice or past a limit", async (ctx) => {
  if (unavailable) ctx.skip(`needs a network namespace: ${unavailable}`);
  const link = net as LinkedNamespace;
  dir = tempDataDir("netcut");
  for (const d of ["effects", "locks"]) mkdirSync(join(dir, d));
  const journal = join(dir, "journal");
  process.env.CHRONOLOG_LOG = `kafka://${kafka?.brokers}/chronolog-netcut-${process.pid}-${Date.now()}`;
  const session = ["--session-timeout-ms", String(SESSION_MS), "--grace", "1"];
  const a = startScheduler(join(dir, "a"), "a", session, link.exec);
  procs.push(a);
  await waitForShards(a, 12);
  const b = startScheduler(join(dir, "b"), "b", session);
  procs.push(b);
  await Promise.all([waitForShards(a, 6), waitForShards(b, 6)]);
  const aShards = heldShards(a) as number[];
  const aId = a.lines.find((l) => l.msg === "shards assigned")?.scheduler as string;

  const taskId = (name: string) => {
    const k = parseTaskKey(`f/a/${name}`);
    if (!k.ok) throw new Error(k.error);
    return formatTaskKey(k.key);
  };
  const shard = (name: string) => shardOf(shardKeyOf({ id: taskId(name), spec: {} }), 12);
  // The long tasks are a's: they sort first, so a starts them first.
  const long: string[] = [];
  for (let i = 0; long.length < LONG; i++) if (aShards.includes(shard(`long${i}`))) long.push(`long${i}`);
  const short = Array.from({ length: SHORT }, (_, i) => `t${i}`);
  const names = [...long, ...short];

  const command = (name: string, seconds: number) => {
    const fx = join(dir, "effects", name);
    const locks = join(dir, "locks");
    const slots = Array.from({ length: LIMIT }, (_, i) => i + 1).join(" ");
    return [
      `exec 9>>${join(locks, name)}; flock -n 9 || echo "OVERLAP ${name} $CHRONOLOG_TOKEN" >> ${journal}`,
      `got=; for i in ${slots}; do exec 8>>${locks}/slot.$i; if flock -n 8; then got=$i; break; fi; done`,
      `[ -n "$got" ] || echo "OVERLIMIT ${name} $CHRONOLOG_TOKEN $(date +%s%3N)" >> ${journal}`,
      `echo "start $CHRONOLOG_TOKEN $(date +%s%3N) $(readlink /proc/self/ns/net)" >> ${fx}`,
      `sleep ${seconds}`,
      `echo "end $CHRONOLOG_TOKEN $(date +%s%3N)" >> ${fx}`,
    ].join("; ");
  };
  // One daily interval per task, all due now.
  const day = Math.floor(Date.now() / DAY) * DAY - DAY;
  const start = new Date(day).toISOString();
  const end = new Date(day + DAY / 2).toISOString();
  const line = (name: string, seconds: number) =>
    `  - { project: f, account: a, name: ${name}, cron: "0 0 * * *", startDate: "${start}", endDate: "${end}", idempotent: false, connection: wh, leaseSeconds: 2, retry: { maxAttempts: 1 }, operator: { type: shell, command: ${JSON.stringify(command(name, seconds))} } }`;
  declareYaml(
    dir,
    `connections:\n  - { name: wh, operators: [shell], maxParallelism: ${LIMIT} }\ntasks:\n${[
      ...long.map((n) => line(n, LONG_SECONDS)),
      ...short.map((n) => line(n, 0.5)),
    ].join("\n")}\n`,
  );

  const marks = (name: string): Mark[] => {
    const f = join(dir, "effects", name);
    if (!existsSync(f)) return [];
    return readFileSync(f, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => {
        const [kind, token, at, netns] = l.split(" ");
        return { kind: kind as Mark["kind"], token: token as string, at: Number(at), netns };
      });
  };
  const hostNetns = readlinkSync("/proc/self/ns/net");
  await waitUntil(
    "a's long tasks to start, inside its namespace",
    () =>
      long.every((n) => marks(n).some((m) => m.kind === "start" && m.netns !== hostNetns)) ? true : undefined,
    60_000,
    50,
  );
  const before = await readLog(dir);

  const cutAt = Date.now();
  link.cut();
  cut = true;
  const takenOver = await waitForShards(b, 12, cutAt, CUT_MS);
  await new Promise((r) => setTimeout(r, cutAt + CUT_MS - Date.now()));
  const restoredAt = Date.now();
  link.restore();
  cut = false;
  const rejoined = await waitUntil(
    "a to hold shards again",
    () => {
      const l = a.lines.find(
        (x) =>
          x.msg === "shards assigned" && Number(x.time) >= restoredAt && (x.shards as number[]).length > 0,
      );
      return l ? Number(l.time) : undefined;
    },
    60_000,
    100,
  );

  const events = await waitUntil(
    "every task to finish its interval",
    async () => {
      const ev = await readLog(dir);
      const ended = ev.filter((e) => e.type === "IntervalCompleted" || e.type === "IntervalFailed");
      return ended.length >= names.length ? ev : undefined;
    },
    90_000,
    500,
  );
  const verify = chronolog(dir, ["log", "verify"]);
  const trouble = existsSync(journal) ? readFileSync(journal, "utf8").split("\n").filter(Boolean) : [];
  const fence = a.lines.find((l) => typeof l.msg === "string" && l.msg.startsWith("fenced:"));
  const lifted = a.lines.find(
    (l) => typeof l.msg === "string" && l.msg.startsWith("fence lifted") && Number(l.time) > restoredAt,
  );
  const fencedAt = fence ? Number(fence.time) : Number.POSITIVE_INFINITY;
  const liftedAt = lifted ? Number(lifted.time) : Number.POSITIVE_INFINITY;
  const streamOf = (e: RecordedEvent) => e.streamId.slice("instance-".length).split("@")[0] as string;
  const ofA = (e: RecordedEvent) => aShards.includes(shardOf(shardKeyOf({ id: streamOf(e), spec: {} }), 12));
  const firstTakeover = events.find(
    (e) =>
      e.type === "DispatchIntended" &&
      actorPid(e) === b.proc.pid &&
      Date.parse(e.metadata.recordedAt) > cutAt &&
      ofA(e),
  );
  const completed = events.filter((e) => e.type === "IntervalCompleted");
  const failed = events.filter((e) => e.type === "IntervalFailed");
  const attemptFailures = events.filter((e) => e.type === "AttemptFailed");
  const started = new Set(events.filter((e) => e.type === "AttemptStarted").map((e) => e.data.token));
  const startedOnA = names.flatMap((n) =>
    marks(n).filter((m) => m.kind === "start" && m.netns !== hostNetns),
  );
  const held = a.lines.filter((l) => typeof l.msg === "string" && l.msg.startsWith("intents not handed"));
  console.log(
    [
      `net cut: ${names.length} tasks (${LONG} of ${LONG_SECONDS} s), 2 schedulers, connection limit ${LIMIT}, session ${SESSION_MS} ms`,
      `  a (in namespace ${link.name}) fenced ${fencedAt - cutAt} ms after the cut (${fence ? `${fence.killed} attempts killed` : "never"})`,
      `  b held every shard ${takenOver - cutAt} ms after the cut; first dispatch of a's work by b ${firstTakeover ? Date.parse(firstTakeover.metadata.recordedAt) - cutAt : "-"} ms after`,
      `  link restored ${restoredAt - cutAt} ms after the cut; a's fence lifted ${liftedAt - restoredAt} ms and a held shards ${rejoined - restoredAt} ms after that`,
      `  intervals completed ${completed.length}, failed ${failed.length}; attempts started on a ${startedOnA.length}; intents a did not hand over (acknowledged late) ${held.reduce((n, l) => n + Number(l.attempts), 0)}`,
      `  most slots held at once on the connection: ${maxSlotsHeld(events)}; journal: ${trouble.length ? trouble.join(" | ") : "clean"}`,
    ].join("\n"),
  );

  // No two executions of one interval at once, and never more than LIMIT on the connection,
  // by the kernel's locks; nor by the log.
  expect(trouble).toEqual([]);
  expect(maxSlotsHeld(events)).toBeLessThanOrEqual(LIMIT);
  // Not idempotent: no task ran twice, and none ran before its start was durable.
  for (const n of names) {
    const starts = marks(n).filter((m) => m.kind === "start");
    expect(starts.length, `${n} started ${starts.length} times`).toBeLessThanOrEqual(1);
    for (const s of starts) expect(started.has(s.token), `${n} ran before its start was recorded`).toBe(true);
  }
  // a fenced itself after the cut, within the session, before the group gave b its shards and
  // before b dispatched any of a's work; it killed the long tasks, which never finished.
  expect(fence).toBeDefined();
  expect(fencedAt).toBeGreaterThan(cutAt);
  expect(fencedAt - cutAt).toBeLessThan(SESSION_MS);
  expect(fencedAt).toBeLessThan(takenOver);
  expect(b.lines.filter((l) => typeof l.msg === "string" && l.msg.startsWith("fenced:"))).toEqual([]);
  if (firstTakeover) expect(fencedAt).toBeLessThan(Date.parse(firstTakeover.metadata.recordedAt));
  for (const n of long) expect(marks(n).filter((m) => m.kind === "end")).toEqual([]);
  // While fenced, a started nothing.
  expect(startedOnA.filter((m) => m.at > fencedAt && m.at < liftedAt)).toEqual([]);
  // b took every shard while the link was down; a renewed its membership and held shards
  // again once it was back.
  expect(takenOver - cutAt).toBeLessThan(CUT_MS);
  expect(lifted).toBeDefined();
  expect(rejoined).toBeGreaterThan(restoredAt);
  expect(a.proc.exitCode).toBeNull();
  // Every interval ended. One that failed did so because its only attempt, started on one of a's
  // workers, was lost with them (not idempotent: never run again on its own); every other one
  // succeeded, its side effect complete exactly once.
  expect(completed.length + failed.length).toBe(names.length);
  expect(failed.length).toBeLessThanOrEqual(LIMIT);
  const instanceOf = (e: RecordedEvent) => {
    const { key, logicalDate } = e.data as { key: TaskKey; logicalDate: string };
    return instanceStream(key, logicalDate);
  };
  for (const f of failed) {
    const stream = instanceOf(f);
    const lastFailure = attemptFailures.filter((e) => e.streamId === stream).at(-1);
    // Gone with a's workers, which a killed as it fenced itself: interrupted, not the task's failure.
    expect(lastFailure?.data).toMatchObject({
      error: {
        kind: "interrupted",
        message: expect.stringContaining("belonged to an earlier scheduler process"),
      },
    });
    const intent = events.filter((e) => e.type === "DispatchIntended" && e.streamId === stream).at(-1);
    const startedBy = events.find((e) => e.type === "AttemptStarted" && e.data.token === intent?.data.token);
    expect(String(startedBy?.data.workerId)).toMatch(new RegExp(`^${aId.replaceAll(".", "\\.")}-`));
  }
  for (const c of completed) {
    const name = (c.data as { key: TaskKey }).key.name;
    expect(
      marks(name).filter((m) => m.kind === "end"),
      `${name} completed`,
    ).toHaveLength(1);
  }
  // Nothing the log had acknowledged before the cut is gone, and the log is whole.
  const done = new Set(completed.map(instanceOf));
  for (const e of before.filter((x) => x.type === "IntervalCompleted"))
    expect(done.has(instanceOf(e))).toBe(true);
  expect(verify.code, verify.stderr).toBe(0);
}, 240_000);
