import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { openKafkaLog } from "@chronolog/log-kafka";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { chronolog, tempDataDir } from "../support/cli.js";
import { signalProcess } from "../support/signal.js";
import { waitUntil } from "../support/wait.js";
import { DAY, type SchedulerProc, startScheduler, stopScheduler, waitForShards } from "./support.js";

/**
 * A three-broker cluster (replication factor 3, min.insync.replicas 2), two schedulers and
 * 10,000 tasks. The broker leading the log's partition is killed with SIGKILL in the middle of
 * the run. Every event acknowledged to anyone is still in the log, the hash chain verifies,
 * and every task completes exactly once.
 */
const root = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);
const TASKS = 10_000;
const clusterDir = join(root, "infra/kafka/.data", `cluster-test-${process.pid}`);
const env = { ...process.env, CHRONOLOG_KAFKA_DIR: clusterDir, CHRONOLOG_KAFKA_PORT: "25092" };
let brokers = "";
let dir = "";
const procs: SchedulerProc[] = [];
let appender: ChildProcess | null = null;

beforeAll(async () => {
  const { stdout } = await run(join(root, "infra/kafka/start"), ["--brokers", "3"], {
    env,
    timeout: 240_000,
  });
  brokers = stdout.trim().split("\n").at(-1) ?? "";
}, 300_000);
afterAll(async () => {
  appender?.kill("SIGKILL");
  await Promise.all(procs.map(stopScheduler));
  delete process.env.CHRONOLOG_LOG;
  await run(join(root, "infra/kafka/stop"), [], { env, timeout: 60_000 }).catch(() => {});
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 120_000);

it("kill the log's partition leader during 10,000 tasks: no acknowledged event lost, every task exactly once", async () => {
  dir = tempDataDir("cluster");
  const topic = `chronolog-cluster-${process.pid}`;
  process.env.CHRONOLOG_LOG = `kafka://${brokers}/${topic}`;

  // The tasks, all held behind one paused gate task, declared before any scheduler runs.
  const day = Math.floor(Date.now() / DAY) * DAY - DAY;
  const common = `cron: "0 0 * * *", startDate: "${new Date(day).toISOString()}", endDate: "${new Date(day + DAY / 2).toISOString()}", idempotent: true`;
  const lines = [`  - { project: gate, account: k, name: go, ${common}, operator: { type: noop } }`];
  for (let i = 0; i < TASKS; i++)
    lines.push(
      `  - { project: c, account: k, name: t${i}, ${common}, parents: ["gate/k/go"], operator: { type: noop } }`,
    );
  writeFileSync(join(dir, "tasks.yaml"), `tasks:\n${lines.join("\n")}\n`);
  expect(chronolog(dir, ["declare", join(dir, "tasks.yaml")]).code).toBe(0);
  expect(chronolog(dir, ["pause", "gate/k/go"]).code).toBe(0);

  // A 20 s group session: the brokers' election after the kill, on a loaded machine, must not
  // also fence the schedulers over and over (each fence kills every attempt in hand; the
  // failover and netcut suites test fences with short sessions).
  const options = ["--capacity", "5000", "--session-timeout-ms", "20000"];
  const a = startScheduler(join(dir, "a"), "a", options);
  procs.push(a);
  await waitForShards(a, 12);
  const b = startScheduler(join(dir, "b"), "b", options);
  procs.push(b);
  await Promise.all([waitForShards(a, 6), waitForShards(b, 6)]);

  // Beside the schedulers, a client appending with compare-and-set and printing each ack.
  const acked: string[] = [];
  appender = spawn(
    process.execPath,
    [
      join(root, "packages/log-kafka/test/fixtures/appender.mjs"),
      brokers,
      topic,
      "cas",
      "probe",
      "4",
      "1",
      "1000000",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  if (appender.stdout) createInterface({ input: appender.stdout }).on("line", (l) => acked.push(l));
  await waitUntil("the appender to append", () => (acked.length > 10 ? true : undefined), 60_000, 50);

  const log = await openKafkaLog({ brokers, topic, actor: "test:cluster", createTopic: false });
  let completed = 0;
  const sub = log.subscribe(
    (e) => {
      if (e.type === "IntervalCompleted") completed += 1;
    },
    { fromPosition: (await log.headPosition()) + 1n },
  );
  expect(chronolog(dir, ["resume", "gate/k/go"]).code).toBe(0);
  await waitUntil("a fifth of the tasks", () => (completed >= TASKS / 5 ? true : undefined), 180_000, 20);

  // Kill the broker that leads the log's partition.
  const kafka = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  await admin.disconnect();
  const leader = meta.topics[0]?.partitions[0]?.leader as number;
  const pid = Number(readFileSync(join(clusterDir, `node${leader}`, "pid"), "utf8"));
  const ackedBefore = acked.length;
  const completedBefore = completed;
  signalProcess(pid, "SIGKILL");
  const killedAt = Date.now();
  // Completions every five seconds after the kill: how the run recovered, printed at the end.
  const trace: number[] = [];
  const tracer = setInterval(() => trace.push(completed), 5000);

  await waitUntil(
    "every task to complete",
    () => (completed >= TASKS + 1 ? true : undefined),
    360_000,
    50,
  ).catch(async (error: unknown) => {
    console.log(await stallReport(completed));
    throw error;
  });
  const recoveredIn = Date.now() - killedAt;
  clearInterval(tracer);
  await waitUntil(
    "the appender to append after the kill",
    () => (acked.length > ackedBefore + 10 ? true : undefined),
    60_000,
    50,
  );
  appender.kill("SIGKILL");
  await sub.close();
  await log.close();

  // A fresh client reads the log from the two brokers left.
  const reader = await openKafkaLog({ brokers, topic, actor: "test:reader", createTopic: false });
  const events = await reader.readAll({ fromPosition: 0n, maxCount: 10_000_000 });
  const verified = await reader.verify();
  await reader.close();
  expect(verified.break).toBeNull();

  // Every acknowledged append is there, at the position and revision it was acknowledged with.
  const byPosition = new Map(events.map((e) => [e.position, e]));
  for (const line of acked) {
    const [stream, revision, position] = line.split(" ");
    const e = byPosition.get(BigInt(position as string));
    expect(e?.streamId).toBe(stream);
    expect(e?.revision).toBe(BigInt(revision as string));
  }
  // Every task completed its interval exactly once, from exactly one successful attempt.
  const completions = new Map<string, number>();
  const successes = new Map<string, number>();
  for (const e of events) {
    if (e.type === "IntervalCompleted") completions.set(e.streamId, (completions.get(e.streamId) ?? 0) + 1);
    if (e.type === "AttemptSucceeded") successes.set(e.streamId, (successes.get(e.streamId) ?? 0) + 1);
  }
  expect(completions.size).toBe(TASKS + 1);
  expect([...completions.values()].every((n) => n === 1)).toBe(true);
  expect(successes.size).toBe(TASKS + 1);
  expect([...successes.values()].every((n) => n === 1)).toBe(true);
  console.log(
    [
      `cluster: 3 brokers, ${TASKS.toLocaleString("en-US")} tasks, 2 schedulers; broker ${leader} (the log's leader) killed after ${completedBefore} completions`,
      `  the run finished ${recoveredIn} ms after the kill; ${acked.length} appends acknowledged to the probe client (${acked.length - ackedBefore} after the kill), all present`,
      `  completions every 5 s after the kill: ${trace.join(" ")}`,
      `  ${events.length} events, chain verified, every task completed once`,
      ...procs.map((p) => `  scheduler ${p.name}'s shards after the kill: ${shardsAfter(p, killedAt)}`),
      ...procs.map((p) => `  scheduler ${p.name}'s warnings and errors: ${loudCounts(p)}`),
    ].join("\n"),
  );
}, 720_000);

/**
 * What a stalled run looks like, printed when the tasks do not all complete: each scheduler's
 * warnings and errors, and the last events of a few tasks that did not complete.
 */
async function stallReport(completed: number): Promise<string> {
  const out = [`stalled at ${completed} of ${TASKS + 1} completions`];
  for (const p of procs) {
    const loud = p.lines.filter((l) => Number(l.level) >= 40);
    out.push(
      `scheduler ${p.name}: exit ${p.proc.exitCode ?? p.proc.signalCode ?? "running"}, ${p.lines.length} log lines, ${loud.length} warnings or errors; the last:`,
    );
    for (const l of loud.slice(-15)) {
      const err = l.err as { message?: string } | undefined;
      out.push(
        `  ${String(l.msg)}${err?.message ? `: ${err.message}` : ""}${l.task ? ` (${String(l.task)})` : ""}`,
      );
    }
  }
  try {
    const reader = await openKafkaLog({
      brokers,
      topic: String(process.env.CHRONOLOG_LOG).split("/").at(-1) as string,
      actor: "test:stall",
      createTopic: false,
    });
    const events = await reader.readAll({ fromPosition: 0n, maxCount: 10_000_000 });
    await reader.close();
    const keyOf = (stream: string) => stream.replace(/^(task|instance)-/, "").split("@")[0] as string;
    const done = new Set(events.filter((e) => e.type === "IntervalCompleted").map((e) => keyOf(e.streamId)));
    const byStream = new Map<string, string[]>();
    for (const e of events) {
      if (!/^(task|instance)-/.test(e.streamId) || done.has(keyOf(e.streamId))) continue;
      const list = byStream.get(e.streamId) ?? [];
      list.push(`${e.position} ${e.type} ${e.metadata.actor}`);
      byStream.set(e.streamId, list);
    }
    const stuck = [...new Set([...byStream.keys()].map(keyOf))];
    out.push(`${stuck.length} tasks without a completion; the first ones:`);
    for (const key of stuck.slice(0, 3))
      for (const [stream, list] of byStream)
        if (keyOf(stream) === key) out.push(`  ${stream}: ${list.slice(-8).join(" | ")}`);
  } catch (error) {
    out.push(`could not read the log: ${(error as Error).message}`);
  }
  return out.join("\n");
}

/**
 * How many shards a scheduler held after the kill, each time that changed, in ms from the kill
 * (where the group's rejoin or a fence took the time).
 */
function shardsAfter(p: SchedulerProc, killedAt: number): string {
  const moves = p.lines.filter((l) => l.msg === "shards assigned" && Number(l.time) >= killedAt);
  if (moves.length === 0) return "kept them";
  return moves
    .map(
      (l) =>
        `+${Number(l.time) - killedAt} ms ${(l.shards as number[]).length}${l.fenced ? " (fenced)" : ""}`,
    )
    .join(", ");
}

/** A scheduler's warnings and errors, counted by message. */
function loudCounts(p: SchedulerProc): string {
  const counts = new Map<string, number>();
  for (const l of p.lines)
    if (Number(l.level) >= 40) counts.set(String(l.msg), (counts.get(String(l.msg)) ?? 0) + 1);
  return [...counts].map(([msg, n]) => `${n} x ${msg}`).join("; ") || "none";
}
