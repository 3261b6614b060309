// bench/kafka: schedulers sharing a Kafka log on a three-broker cluster, end to end with real
// `chronolog scheduler` processes and their worker processes.
//
//   node bench/kafka/index.mjs            (BENCH_KAFKA_BROKERS=host:port,... to use a running cluster)
//
// Prints completed no-op tasks per second with one and with two schedulers, the CPU seconds
// each scheduler process spends per 1,000 tasks, how the two split the work, and the
// takeover time after one of two is killed with SIGKILL.
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openKafkaLog } from "@chronolog/log-kafka";
import { cliNodeFlags, fmt, printTable } from "../table.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(root, "services/cli/bin/chronolog.mjs");
const quick = process.env.BENCH_QUICK === "1";
const TASKS = quick ? 2000 : 10_000;
const WARMUP = TASKS;
const DAY = 86_400_000;
const SESSION_MS = 6000;
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-kafka-"));

// ---- the cluster -------------------------------------------------------------------------------
let brokers = process.env.BENCH_KAFKA_BROKERS;
const clusterEnv = {
  ...process.env,
  CHRONOLOG_KAFKA_DIR: join(work, "cluster"),
  CHRONOLOG_KAFKA_PORT: "24092",
};
if (!brokers) {
  console.log("starting a three-broker Kafka cluster (replication factor 3, min.insync.replicas 2)...");
  brokers = execFileSync(join(root, "infra/kafka/start"), ["--brokers", "3"], {
    env: clusterEnv,
    encoding: "utf8",
  })
    .trim()
    .split("\n")
    .at(-1);
}
const stopCluster = () => {
  if (!process.env.BENCH_KAFKA_BROKERS)
    execFileSync(join(root, "infra/kafka/stop"), { env: clusterEnv, stdio: "ignore" });
};

// ---- processes ---------------------------------------------------------------------------------
const CLK_TCK = 100;
function cpuSeconds(pid) {
  // utime and stime, fields 14 and 15 of /proc/PID/stat (after the command name in parentheses)
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

function startScheduler(logUrl, name) {
  const dataDir = join(work, name);
  mkdirSync(dataDir, { recursive: true });
  const proc = spawn(
    process.execPath,
    [
      // BENCH_CPU_PROF=DIR: a CPU profile of each scheduler process, written when it stops.
      ...(process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      ...cliNodeFlags(),
      CLI,
      "--data-dir",
      dataDir,
      "--log",
      logUrl,
      "scheduler",
      "--workers",
      "2",
      "--capacity",
      "5000",
      "--session-timeout-ms",
      String(SESSION_MS),
    ],
    {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, CHRONOLOG_LOG_FORMAT: "json", CHRONOLOG_LOG_LEVEL: "info" },
    },
  );
  const s = { name, proc, shards: [], exited: new Promise((r) => proc.once("exit", r)) };
  let buffer = "";
  proc.stderr.on("data", (c) => {
    buffer += c.toString();
    const lines = buffer.split("\n");
    buffer = lines.pop();
    for (const l of lines) {
      if (!l.includes("shards assigned")) continue;
      const j = JSON.parse(l);
      s.shards.push({ at: j.time, shards: j.shards });
    }
  });
  return s;
}

async function until(what, check, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const holding = (s, n, since = 0) => s.shards.find((x) => x.at >= since && x.shards.length === n)?.at;

/** Declares the tasks with their gate paused, before any scheduler runs. */
function declare(logUrl, yaml, gate) {
  const file = join(work, `declare-${Date.now()}.yaml`);
  writeFileSync(file, yaml);
  cli(logUrl, "declare", file);
  cli(logUrl, "pause", gate);
}

/**
 * `n` no-op tasks with one due interval each, all children of one gate task that the
 * benchmark holds paused: resuming it releases them all at once (a fan-out).
 */
function tasksYaml(prefix, n, extra = "") {
  const day = Math.floor(Date.now() / DAY) * DAY - DAY;
  const start = new Date(day).toISOString();
  const end = new Date(day + DAY / 2).toISOString();
  const common = `cron: "0 0 * * *", startDate: "${start}", endDate: "${end}", idempotent: true`;
  const lines = [`  - { project: gate, account: k, name: ${prefix}, ${common}, operator: { type: noop } }`];
  for (let i = 0; i < n; i++)
    lines.push(
      `  - { project: bench, account: k, name: ${prefix}${i}, ${common}${extra}, parents: ["gate/k/${prefix}"], operator: { type: noop } }`,
    );
  return `tasks:\n${lines.join("\n")}\n`;
}

function cli(logUrl, ...args) {
  execFileSync(process.execPath, [CLI, "--data-dir", join(work, "cli"), "--log", logUrl, ...args], {
    stdio: "ignore",
  });
}

/** Follows the log until `n` intervals completed; returns the events. */
async function completed(log, n, fromPosition = 0n) {
  const events = [];
  let done = 0;
  await new Promise((resolve, reject) => {
    const sub = log.subscribe(
      (e) => {
        events.push(e);
        if (e.type === "IntervalCompleted" && ++done >= n) {
          void sub.close();
          resolve();
        }
      },
      { fromPosition },
    );
    void sub.done.catch(reject);
  });
  return events;
}

/**
 * The benchmark's own reader of a topic. It fetches in large, unhurried batches, to take as
 * little as it can from the brokers and the CPU the schedulers under test share with it.
 */
function observe(topic) {
  return openKafkaLog({
    brokers,
    topic,
    actor: "bench",
    createTopic: false,
    fetch: { minBytes: 1 << 20, maxWaitMs: 100 },
  });
}

const pidOf = (e) => Number(e.metadata.actor.split(":").at(-1));

async function throughput(label, count, tasks = TASKS) {
  const topic = `bench-${label}-${Date.now()}`;
  const url = `kafka://${brokers}/${topic}`;
  declare(url, tasksYaml("t", tasks), "gate/k/t");
  const schedulers = [];
  for (let i = 0; i < count; i++) {
    const s = startScheduler(url, `${label}-${i}`);
    schedulers.push(s);
    await until(`${s.name} to join`, () => s.shards.length > 0);
  }
  const share = 12 / count;
  await until("the shards to be split", () =>
    schedulers.every((s) => s.shards.at(-1)?.shards.length === share),
  );
  const log = await observe(topic);
  const from = (await log.headPosition()) + 1n;
  const cpu0 = schedulers.map((s) => cpuSeconds(s.proc.pid));
  const resumed = Date.now();
  cli(url, "resume", "gate/k/t");
  const events = await completed(log, tasks + 1, from);
  const cpu = schedulers.map((s, i) => cpuSeconds(s.proc.pid) - cpu0[i]);
  const intents = events.filter(
    (e) => e.type === "DispatchIntended" && e.streamId.startsWith("instance-bench/"),
  );
  // From the gate's completion (which releases every task) to the last task's.
  const gate = events.find((e) => e.type === "IntervalCompleted" && e.streamId.startsWith("task-gate/"));
  const first = gate ? Date.parse(gate.metadata.recordedAt) : resumed;
  const last = Math.max(
    ...events.filter((e) => e.type === "IntervalCompleted").map((e) => Date.parse(e.metadata.recordedAt)),
  );
  const by = schedulers.map((s) => intents.filter((e) => pidOf(e) === s.proc.pid).length);
  const successes = new Map();
  for (const e of events)
    if (e.type === "AttemptSucceeded" && e.streamId.startsWith("instance-bench/"))
      successes.set(e.streamId, (successes.get(e.streamId) ?? 0) + 1);
  const duplicates = [...successes.values()].filter((v) => v > 1).length;
  await log.close();
  for (const s of schedulers) s.proc.kill("SIGTERM");
  await Promise.all(schedulers.map((s) => s.exited));
  return { seconds: (last - first) / 1000, cpu, by, duplicates, instances: successes.size };
}

async function failover() {
  const topic = `bench-failover-${Date.now()}`;
  const url = `kafka://${brokers}/${topic}`;
  const a = startScheduler(url, "fo-a");
  await until("a to join", () => a.shards.length > 0);
  const n = quick ? 1000 : 4000;
  // Work that lasts: a connection of 20 slots, so the run is still going when a dies.
  declare(
    url,
    `connections:\n  - { name: slow, operators: [noop], maxParallelism: 20 }\n${tasksYaml("f", n, ", connection: slow")}`,
    "gate/k/f",
  );
  const b = startScheduler(url, "fo-b");
  await until(
    "the shards to be split",
    () => a.shards.at(-1)?.shards.length === 6 && b.shards.at(-1)?.shards.length === 6,
  );
  const log = await observe(topic);
  cli(url, "resume", "gate/k/f");
  let done = 0;
  const sub = log.subscribe(
    (e) => {
      if (e.type === "IntervalCompleted") done += 1;
    },
    { fromPosition: 0n },
  );
  await until("a quarter of the run", () => done >= n / 4);
  const killedAt = Date.now();
  a.proc.kill("SIGKILL");
  await a.exited;
  const held = await until("b to hold every shard", () => holding(b, 12, killedAt));
  await until("the run to finish", () => done >= n + 1);
  await sub.close();
  const events = await log.readAll({ fromPosition: 0n, maxCount: 10_000_000 });
  const afterKill = events.find(
    (e) =>
      e.type === "DispatchIntended" && pidOf(e) === b.proc.pid && Date.parse(e.metadata.recordedAt) >= held,
  );
  const successes = new Map();
  for (const e of events)
    if (e.type === "AttemptSucceeded" && e.streamId.startsWith("instance-bench/"))
      successes.set(e.streamId, (successes.get(e.streamId) ?? 0) + 1);
  await log.close();
  b.proc.kill("SIGTERM");
  await b.exited;
  return {
    takeover: held - killedAt,
    firstDispatch: afterKill ? Date.parse(afterKill.metadata.recordedAt) - killedAt : Number.NaN,
    instances: successes.size,
    n,
  };
}

try {
  // A warm-up round first, on a topic of its own and not reported: a cluster in use has its
  // brokers' code compiled and its page cache warm, one just started has neither.
  await throughput("warmup", 1, WARMUP);
  const one = await throughput("one", 1);
  const two = await throughput("two", 2);
  const fo = await failover();
  console.log(
    `\n${TASKS.toLocaleString("en-US")} no-op tasks released at once (children of one gate task), on a three-broker cluster after a warm-up round of ${WARMUP.toLocaleString("en-US")}; each scheduler with 2 worker processes\n`,
  );
  printTable(
    [
      "schedulers",
      "completed tasks/s",
      "CPU s per 1,000 tasks (each scheduler)",
      "share of tasks (each)",
      "duplicates",
    ],
    [
      [
        "1",
        fmt(TASKS / one.seconds),
        one.cpu.map((c) => fmt((c * 1000) / TASKS, 2)).join(" "),
        "100%",
        String(one.duplicates),
      ],
      [
        "2",
        fmt(TASKS / two.seconds),
        two.cpu.map((c, i) => fmt((c * 1000) / two.by[i], 2)).join(" / "),
        two.by.map((n) => `${fmt((100 * n) / TASKS, 1)}%`).join(" / "),
        String(two.duplicates),
      ],
    ],
  );
  console.log(
    `\nfailover: two schedulers, ${fo.n.toLocaleString("en-US")} tasks on a 20-slot connection, one killed with SIGKILL a quarter of the way`,
  );
  printTable(
    ["session timeout", "survivor holds every shard", "its first dispatch after that", "intervals completed"],
    [
      [
        `${SESSION_MS} ms`,
        `${fmt(fo.takeover)} ms`,
        `${fmt(fo.firstDispatch)} ms`,
        `${fo.instances} of ${fo.n}`,
      ],
    ],
  );
  if (one.instances !== TASKS || two.instances !== TASKS) throw new Error("some task did not complete");
} finally {
  stopCluster();
  rmSync(work, { recursive: true, force: true });
}
