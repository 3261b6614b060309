// bench/kafka-memory: the resident memory of a process following a Kafka log, per event, and
// how long a new client takes to catch up from offset 0 and from a checkpoint of its index.
//
//   node bench/kafka-memory/index.mjs     (BENCH_KAFKA_BROKERS=host:port to use a running broker)
//
// Writes logs of the sizes in BENCH_EVENTS (default 1,000,000 and 10,000,000; 100,000 with
// BENCH_QUICK=1) in the shape a scheduler leaves: three events per completed no-op task
// instance (DispatchIntended, AttemptStarted, AttemptSucceeded), one instance stream each,
// plus one stream per task; the appends of many instances share each record, as a busy
// scheduler's produce requests do. Then, each in a fresh process: a client reading the topic
// from offset 0 (and writing a checkpoint of its index), a client starting from that
// checkpoint, and with BENCH_COMPARE=<another checkout, built> the same from offset 0 with that
// build, for the sizes up to BENCH_COMPARE_MAX_EVENTS (default 1,000,000: a client that holds
// the whole log needs far more memory than this machine has for 10,000,000 events).
// BENCH_REUSE_TOPICS=1 (with BENCH_KAFKA_BROKERS) reads the logs an earlier run left instead of
// writing new ones, and leaves them.
import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Kafka, logLevel } from "kafkajs";
import { encodeAppend, encodeRecord } from "../../packages/log-kafka/dist/record.js";
import { cliNodeFlags, fmt, printTable } from "../table.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const quick = process.env.BENCH_QUICK === "1";
const SIZES = (process.env.BENCH_EVENTS ?? (quick ? "100000" : "1000000,10000000")).split(",").map(Number);
const COMPARE = process.env.BENCH_COMPARE ? resolve(process.env.BENCH_COMPARE) : null;
const COMPARE_MAX = Number(process.env.BENCH_COMPARE_MAX_EVENTS ?? 1_000_000);
const TASKS = 1000;
/** BENCH_REUSE_TOPICS=1: use (and keep) a log this bench wrote before on the same brokers. */
const REUSE = process.env.BENCH_REUSE_TOPICS === "1";
/** Appends per record: about what a scheduler dispatching hundreds of tasks at once sends. */
const APPENDS_PER_RECORD = 100;
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-kafka-memory-"));
const THIS_BUILD = join(root, "packages/log-kafka/dist");

// ---- the broker --------------------------------------------------------------------------------
let brokers = process.env.BENCH_KAFKA_BROKERS;
const clusterEnv = {
  ...process.env,
  CHRONOLOG_KAFKA_DIR: join(work, "cluster"),
  CHRONOLOG_KAFKA_PORT: "26092",
};
if (!brokers) {
  console.log("starting a one-broker Kafka cluster...");
  brokers = execFileSync(join(root, "infra/kafka/start"), [], { env: clusterEnv, encoding: "utf8" })
    .trim()
    .split("\n")
    .at(-1);
}
const stopCluster = () => {
  if (!process.env.BENCH_KAFKA_BROKERS)
    execFileSync(join(root, "infra/kafka/stop"), { env: clusterEnv, stdio: "ignore" });
};

// ---- writing a log -----------------------------------------------------------------------------
const DAY = 86_400_000;
const ACTOR = "scheduler:bench@host:4242";
const RECORDED = "2026-01-01T00:00:00.000Z";

function wireEvent(type, data) {
  return {
    eventId: randomUUID(),
    type,
    dataJson: JSON.stringify(data),
    schemaVersion: type === "AttemptSucceeded" ? 2 : 1,
    actor: ACTOR,
    causationId: null,
    correlationId: null,
  };
}

function instance(i) {
  const task = `t${i % TASKS}`;
  const logicalDate = new Date(Date.UTC(2020, 0, 1) + Math.floor(i / TASKS) * DAY).toISOString();
  return { task, logicalDate, stream: `instance-bench/k/${task}/ALL@${logicalDate}`, token: randomUUID() };
}

/** The events of an instance, step by step. */
function instanceEvent(step, inst) {
  const key = { project: "bench", account: "k", name: inst.task, partition: "ALL" };
  if (step === 0)
    return wireEvent("DispatchIntended", {
      key,
      logicalDate: inst.logicalDate,
      attempt: 1,
      token: inst.token,
      operator: { type: "noop" },
      idempotent: true,
      leaseSeconds: 30,
    });
  if (step === 1)
    return wireEvent("AttemptStarted", {
      attempt: 1,
      token: inst.token,
      workerId: "w4242-1",
      pid: 4243,
      leaseExpiresAt: RECORDED,
    });
  return wireEvent("AttemptSucceeded", {
    attempt: 1,
    token: inst.token,
    durationMs: 3,
    output: { stdoutTail: "", stderrTail: "" },
  });
}

/**
 * Writes a log of about `events` events to a new topic with a plain producer (the records a
 * scheduler's client would send: each append expects the revision it extends). Returns the topic.
 */
async function writeLog(events) {
  const topic = `bench-memory-${events}-${Date.now()}`;
  const kafka = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  if (REUSE) {
    const found = (await admin.listTopics()).find((t) => t.startsWith(`bench-memory-${events}-`));
    if (found) {
      const [p] = await admin.fetchTopicOffsets(found);
      await admin.disconnect();
      return {
        topic: found,
        events: TASKS + Math.ceil((events - TASKS) / 3) * 3,
        records: Number(p.high),
        reused: true,
      };
    }
  }
  await admin.createTopics({
    waitForLeaders: true,
    topics: [
      {
        topic,
        numPartitions: 1,
        replicationFactor: -1,
        configEntries: [
          { name: "retention.ms", value: "-1" },
          { name: "retention.bytes", value: "-1" },
        ],
      },
    ],
  });
  await admin.disconnect();
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
  });
  await producer.connect();
  let offset = 0;
  let pending = [];
  const flush = async (force) => {
    if (pending.length === 0 || (!force && pending.length < 8)) return;
    await producer.send({ topic, acks: -1, messages: pending.map((value) => ({ value, partition: 0 })) });
    pending = [];
  };
  let record = [];
  const appendTo = async (stream, expected, wire) => {
    record.push(
      encodeAppend({
        v: 2,
        id: randomUUID(),
        base: String(Math.max(0, offset - 1)),
        recordedAt: RECORDED,
        writes: [{ stream, expected, events: [wire] }],
      }),
    );
    if (record.length >= APPENDS_PER_RECORD) {
      pending.push(encodeRecord(record));
      record = [];
      offset += 1;
      await flush(false);
    }
  };
  for (let t = 0; t < TASKS; t++)
    await appendTo(
      `task-bench/k/t${t}`,
      "no_stream",
      wireEvent("TaskDeclared", {
        key: { project: "bench", account: "k", name: `t${t}`, partition: "ALL" },
        spec: { cron: "0 0 * * *", operator: { type: "noop" }, idempotent: true },
      }),
    );
  // Instances in flight together, as a scheduler runs them: each step of a group of 100 is one
  // record's worth of appends, and the groups follow one another.
  const instances = Math.ceil((events - TASKS) / 3);
  const group = APPENDS_PER_RECORD;
  for (let g = 0; g < instances; g += group) {
    const batch = [];
    for (let i = g; i < Math.min(instances, g + group); i++) batch.push(instance(i));
    for (let step = 0; step < 3; step++)
      for (const inst of batch)
        await appendTo(inst.stream, step === 0 ? "no_stream" : String(step - 1), instanceEvent(step, inst));
  }
  if (record.length > 0) {
    pending.push(encodeRecord(record));
    offset += 1;
  }
  await flush(true);
  await producer.disconnect();
  return { topic, events: TASKS + instances * 3, records: offset };
}

// ---- following it ------------------------------------------------------------------------------
function follow(dist, topic, indexPath, save) {
  return new Promise((resolvePromise, reject) => {
    const args = [
      "--expose-gc",
      ...cliNodeFlags(),
      join(root, "bench/kafka-memory/follow.mjs"),
      dist,
      brokers,
      topic,
    ];
    if (indexPath) args.push(indexPath, save ? "save" : "");
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (c) => {
      out += c;
    });
    child.on("exit", (code, signal) => {
      const line = out.trim().split("\n").at(-1);
      if (code === 0 && line) resolvePromise(JSON.parse(line));
      else reject(new Error(`follower exited with ${signal ?? code}`));
    });
  });
}

const MB = 1024 * 1024;
const rows = [];
const savedRows = [];
try {
  for (const size of SIZES) {
    const t = performance.now();
    const written = await writeLog(size);
    console.log(
      `${written.reused ? "reused" : "wrote"} ${fmt(written.events)} events in ${fmt(written.records)} records in ${fmt((performance.now() - t) / 1000, 0)} s`,
    );
    const indexPath = join(work, `${written.topic}.index`);
    const fromZero = await follow(THIS_BUILD, written.topic, indexPath, true);
    const resumed = await follow(THIS_BUILD, written.topic, indexPath, false);
    if (resumed.notices[0]?.level !== "info")
      throw new Error(`checkpoint not used: ${JSON.stringify(resumed.notices)}`);
    const runs = [
      ["this build, from offset 0", fromZero],
      ["this build, from checkpoint", resumed],
    ];
    if (COMPARE && size <= COMPARE_MAX)
      runs.push([
        "earlier build, from offset 0",
        await follow(join(COMPARE, "packages/log-kafka/dist"), written.topic),
      ]);
    for (const [label, r] of runs) {
      if (r.events !== written.events)
        throw new Error(`${label} holds ${r.events} events, not ${written.events}`);
      rows.push([
        fmt(written.events),
        label,
        fmt(r.rss / MB),
        fmt(r.maxRss / MB),
        fmt(r.heapUsed / MB),
        fmt((r.external + 0) / MB),
        fmt(r.rss / r.events, 1),
        fmt(r.heapUsed / r.events, 1),
        fmt(r.catchUpMs / 1000, 1),
      ]);
    }
    savedRows.push([
      fmt(written.events),
      fmt(fromZero.saved.bytes / MB),
      fmt(fromZero.saved.ms / 1000, 1),
      fmt(resumed.catchUpMs / 1000, 1),
      fmt(fromZero.catchUpMs / resumed.catchUpMs, 1),
    ]);
    if (!REUSE) {
      const admin = new Kafka({ brokers: brokers.split(","), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.deleteTopics({ topics: [written.topic] }).catch(() => {});
      await admin.disconnect();
    }
  }
  console.log(
    "\nbench/kafka-memory: a fresh process opening a Kafka log (one broker) and reading it to its end, then settled (gc); three events per completed no-op instance, 1,000 task streams, 100 appends a record\n",
  );
  printTable(
    [
      "events",
      "client",
      "resident MiB",
      "peak resident MiB",
      "heap MiB",
      "external MiB",
      "resident bytes/event",
      "heap bytes/event",
      "catch-up s",
    ],
    rows,
  );
  console.log("");
  printTable(
    ["events", "checkpoint MiB", "written in, s", "catch-up from it, s", "from 0 / from checkpoint"],
    savedRows,
  );
} finally {
  stopCluster();
  rmSync(work, { recursive: true, force: true });
}
