// bench/kafka: schedulers sharing a Kafka log on a three-broker cluster, end to end with real
// `chronolog scheduler` processes and their worker processes.
//
//   node bench/kafka/index.mjs            (BENCH_KAFKA_BROKERS=host:port,... to use a running cluster)
//
// Prints completed no-op tasks per second with one and with two schedulers, the CPU seconds
// each scheduler process spends per 1,000 tasks, how the two split the work, and the
// takeover time after one of two is killed with SIGKILL. Then the realistic catalogue
// (bench/scale's: hourly tasks over 20 projects, 0-2 parents each, three intervals due) settled
// by one and by two schedulers, and once more by two while the broker leading the log's
// partition is killed with SIGKILL: the time from the kill to the next completion, to both
// schedulers holding shards again, and to the last completion.
// BENCH_KAFKA_ONLY=realistic runs only the realistic rounds (after the warm-up).
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openKafkaLog } from "@chronolog/log-kafka";
import { Kafka, logLevel } from "kafkajs";
import { catalogue } from "../scale/catalogue.mjs";
import { cliNodeFlags, fmt, printTable } from "../table.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(root, "services/cli/bin/chronolog.mjs");
const quick = process.env.BENCH_QUICK === "1";
const TASKS = quick ? 2000 : 10_000;
const WARMUP = TASKS;
const DAY = 86_400_000;
const HOUR = 3_600_000;
const SESSION_MS = 6000;
const only = process.env.BENCH_KAFKA_ONLY ?? "";
if (only !== "" && only !== "realistic") throw new Error(`BENCH_KAFKA_ONLY takes "realistic", not "${only}"`);
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
      // No HTTP API: the schedulers of one run would all ask for the same port. The tasks run as
      // this user (run as root, they would run as nobody, who cannot reach the bench's directory).
      env: {
        ...process.env,
        CHRONOLOG_LOG_FORMAT: "json",
        CHRONOLOG_LOG_LEVEL: "info",
        CHRONOLOG_HTTP: "off",
        CHRONOLOG_RUN_AS: process.env.CHRONOLOG_RUN_AS ?? userInfo().username,
      },
    },
  );
  const s = { name, proc, shards: [], last: [], exited: new Promise((r) => proc.once("exit", r)) };
  let buffer = "";
  proc.stderr.on("data", (c) => {
    buffer += c.toString();
    const lines = buffer.split("\n");
    buffer = lines.pop();
    for (const l of lines) {
      // The last lines, said if the scheduler does not join.
      s.last.push(l);
      if (s.last.length > 10) s.last.shift();
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
/** Resolves once the scheduler holds shards; throws with its last lines if it exits first. */
function joined(s) {
  return until(`${s.name} to join`, () => {
    if (s.proc.exitCode !== null || s.proc.signalCode !== null)
      throw new Error(`scheduler ${s.name} exited before it joined:\n${s.last.join("\n")}`);
    return s.shards.length > 0;
  });
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
    await joined(s);
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
  await joined(a);
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

/**
 * The realistic catalogue of `n` tasks (bench/scale's, seeded), three hourly intervals due each
 * and no more (an endDate), every task without parents after one gate task held paused.
 */
function realisticYaml(n) {
  const latest = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
  const start = new Date(latest - 2 * HOUR).toISOString();
  const end = new Date(latest + HOUR / 2).toISOString();
  const { text } = catalogue(n, start, { end, gate: "gate/k/g" });
  return `${text}  - { project: gate, account: k, name: g, cron: "0 * * * *", startDate: "${start}", endDate: "${end}", idempotent: true, operator: { type: noop } }\n`;
}

/** Kills (SIGKILL) the broker leading the topic's partition; its node id and when. */
async function killLeader(topic) {
  const admin = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  await admin.disconnect();
  const leader = meta.topics[0]?.partitions[0]?.leader;
  const pid = Number(readFileSync(join(clusterEnv.CHRONOLOG_KAFKA_DIR, `node${leader}`, "pid"), "utf8"));
  process.kill(pid, "SIGKILL");
  return { leader, at: Date.now() };
}

/**
 * When every scheduler that lost its shards after `since` held some again for the last time
 * (undefined if none lost them).
 */
function heldAgain(schedulers, since) {
  let last;
  for (const s of schedulers) {
    const after = s.shards.filter((x) => x.at >= since);
    const lost = after.findIndex((x) => x.shards.length === 0);
    if (lost < 0) continue;
    const back = after
      .slice(lost)
      .findLast((x, i, list) => x.shards.length > 0 && list[i - 1]?.shards.length === 0);
    last = Math.max(last ?? 0, back?.at ?? Number.NaN);
  }
  return last;
}

/**
 * The realistic catalogue settled by `count` schedulers, from the gate's first completion to
 * the last completion; with `kill`, the broker leading the log's partition is killed a fifth of
 * the way.
 */
async function realistic(label, count, kill = false) {
  const topic = `bench-${label}-${Date.now()}`;
  const url = `kafka://${brokers}/${topic}`;
  declare(url, realisticYaml(TASKS), "gate/k/g");
  const schedulers = [];
  for (let i = 0; i < count; i++) {
    const s = startScheduler(url, `${label}-${i}`);
    schedulers.push(s);
    await joined(s);
  }
  const share = 12 / count;
  await until("the shards to be split", () =>
    schedulers.every((s) => s.shards.at(-1)?.shards.length === share),
  );
  const log = await observe(topic);
  const from = (await log.headPosition()) + 1n;
  const total = 3 * (TASKS + 1);
  const completions = [];
  let abandoned = 0;
  let killed;
  let seenAfterKill;
  const successes = new Map();
  const sub = log.subscribe(
    (e) => {
      if (e.type === "IntervalCompleted") {
        const recorded = Date.parse(e.metadata.recordedAt);
        completions.push(recorded);
        // When a completion recorded after the kill reaches a reader: the writer stamps a
        // record before the brokers acknowledge it.
        if (killed && recorded > killed.at) seenAfterKill ??= Date.now();
      } else if (e.type === "AttemptAbandoned") abandoned += 1;
      else if (e.type === "AttemptSucceeded") successes.set(e.streamId, (successes.get(e.streamId) ?? 0) + 1);
    },
    { fromPosition: from },
  );
  let failed;
  void sub.done.catch((error) => {
    failed = error;
  });
  cli(url, "resume", "gate/k/g");
  if (kill) {
    await until("a fifth of the run", () => {
      if (failed) throw failed;
      return completions.length >= total / 5;
    });
    killed = await killLeader(topic);
  }
  await until(
    "the catalogue to settle",
    () => {
      if (failed) throw failed;
      return completions.length >= total;
    },
    900_000,
  );
  await sub.close();
  await log.close();
  for (const s of schedulers) s.proc.kill("SIGTERM");
  await Promise.all(schedulers.map((s) => s.exited));
  const first = Math.min(...completions);
  const last = Math.max(...completions);
  const out = {
    rate: total / ((last - first) / 1000),
    total,
    abandoned,
    duplicates: [...successes.values()].filter((n) => n > 1).length,
  };
  if (!killed) return out;
  const next = seenAfterKill ?? Number.NaN;
  const again = heldAgain(schedulers, killed.at);
  return {
    ...out,
    leader: killed.leader,
    nextCompletion: next - killed.at,
    heldAgain: again === undefined ? undefined : again - killed.at,
    settledAfter: last - killed.at,
  };
}

try {
  // A warm-up round first, on a topic of its own and not reported: a cluster in use has its
  // brokers' code compiled and its page cache warm, one just started has neither.
  await throughput("warmup", 1, WARMUP);
  if (only !== "realistic") await flat();
  const real1 = await realistic("real-one", 1);
  const real2 = await realistic("real-two", 2);
  // Last: the cluster has a broker fewer after it.
  const ownCluster = !process.env.BENCH_KAFKA_BROKERS;
  const realKill = ownCluster ? await realistic("real-kill", 2, true) : undefined;
  console.log(
    `\nthe realistic catalogue: ${TASKS.toLocaleString("en-US")} hourly no-op tasks over 20 projects, 0-2 parents each (bench/scale's), 3 intervals due each (${(3 * (TASKS + 1)).toLocaleString("en-US")} completions with the gate's), released by resuming one gate task; from the first completion to the last\n`,
  );
  const row = (label, r) => [label, fmt(r.rate), String(r.abandoned), String(r.duplicates)];
  printTable(
    ["schedulers", "completions/s to settle", "attempts abandoned", "duplicates"],
    [
      row("1", real1),
      row("2", real2),
      ...(realKill ? [row(`2, broker ${realKill.leader} (the log's leader) killed`, realKill)] : []),
    ],
  );
  if (realKill) {
    console.log(
      "\nthe log's partition leader killed with SIGKILL a fifth of the way (two schedulers; the brokers fence a silent broker after 4 s)",
    );
    printTable(
      [
        "session timeout",
        "kill to the next completion read",
        "to both holding shards again",
        "to the last completion",
      ],
      [
        [
          `${SESSION_MS} ms`,
          `${fmt(realKill.nextCompletion)} ms`,
          realKill.heldAgain === undefined ? "no shard moved" : `${fmt(realKill.heldAgain)} ms`,
          `${fmt(realKill.settledAfter)} ms`,
        ],
      ],
    );
  } else
    console.log("\n(no broker killed: the cluster BENCH_KAFKA_BROKERS names is not this benchmark's own)");
  for (const r of [real1, real2, realKill])
    if (r && r.duplicates > 0) throw new Error("a task ran twice to success");
} finally {
  stopCluster();
  rmSync(work, { recursive: true, force: true });
}

/** The flat fan-out rounds and a scheduler's failover, with their tables. */
async function flat() {
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
}
