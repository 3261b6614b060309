import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { EventLog } from "@chronolog/log";
import { logContractSuite } from "@chronolog/log/contract";
import { ForeignRecordError, KafkaBackend, openKafkaLog } from "@chronolog/log-kafka";
import { Kafka, logLevel } from "kafkajs";
import { describe, expect, it } from "vitest";
import { useCluster } from "./support/cluster.js";

/**
 * Runs against the cluster named by CHRONOLOG_KAFKA_BROKERS, or else a one-broker cluster of
 * this file's own (see support/cluster.ts).
 */
const appender = fileURLToPath(new URL("./fixtures/appender.mjs", import.meta.url));
const testCluster = useCluster();
const cluster = {
  get brokers() {
    return testCluster.brokers;
  },
};
const uniqueTopic = (label: string) => testCluster.topic(label);

logContractSuite("kafka", async () => {
  const topic = uniqueTopic("contract");
  const log = await openKafkaLog({ brokers: cluster.brokers, topic, actor: "test:contract" });
  const others: EventLog[] = [];
  return {
    log,
    async openAnother() {
      const another = await openKafkaLog({ brokers: cluster.brokers, topic, actor: "test:contract-2" });
      others.push(another);
      return another;
    },
    async close() {
      for (const o of others) await o.close();
      await log.close();
    },
  };
});

const note = (text: string) => ({ type: "Note", data: { text } });

function runChild(args: string[]): {
  child: ChildProcess;
  lines: string[];
  next: () => Promise<string>;
  exited: Promise<number | null>;
} {
  const child = spawn(process.execPath, [appender, ...args], { stdio: ["pipe", "pipe", "pipe"] });
  const lines: string[] = [];
  let read = 0;
  let wake: (() => void) | null = null;
  let buffer = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split("\n");
    buffer = parts.pop() ?? "";
    lines.push(...parts);
    wake?.();
  });
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      if (code !== 0 && code !== null) process.stderr.write(stderr);
      wake?.();
      resolve(code);
    }),
  );
  const next = async () => {
    while (read >= lines.length) {
      if (child.exitCode !== null) throw new Error(`child exited (${child.exitCode}): ${stderr}`);
      await new Promise<void>((r) => {
        wake = r;
      });
      wake = null;
    }
    return lines[read++] as string;
  };
  return { child, lines, next, exited };
}

describe("kafka log", () => {
  it("two processes racing to create the same stream: exactly one wins, every time", async () => {
    const topic = uniqueTopic("race");
    // Open the topic first, so both children find it made.
    await (await openKafkaLog({ brokers: cluster.brokers, topic })).close();
    const a = runChild([cluster.brokers, topic, "race"]);
    const b = runChild([cluster.brokers, topic, "race"]);
    expect(await a.next()).toBe("ready");
    expect(await b.next()).toBe("ready");
    const rounds = 15;
    for (let r = 0; r < rounds; r++) {
      const stream = `race-r${r}`;
      a.child.stdin?.write(`${stream}\n`);
      b.child.stdin?.write(`${stream}\n`);
      const outcomes = [await a.next(), await b.next()].map((l) => l.split(" ")[0]).sort();
      expect(outcomes, stream).toEqual(["lost", "won"]);
    }
    a.child.stdin?.end();
    b.child.stdin?.end();
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
    const log = await openKafkaLog({ brokers: cluster.brokers, topic });
    for (let r = 0; r < rounds; r++) expect((await log.readStream(`race-r${r}`)).length).toBe(1);
    expect((await log.verify()).checked).toBe(rounds);
    await log.close();
  }, 60_000);

  it("two processes appending with compare-and-set: no lost or duplicated revision", async () => {
    const topic = uniqueTopic("cas");
    await (await openKafkaLog({ brokers: cluster.brokers, topic })).close();
    const a = runChild([cluster.brokers, topic, "cas", "shared", "3", "2", "40"]);
    const b = runChild([cluster.brokers, topic, "cas", "shared", "3", "2", "40"]);
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
    const log = await openKafkaLog({ brokers: cluster.brokers, topic });
    let total = 0;
    for (let s = 0; s < 3; s++) {
      const events = await log.readStream(`shared-s${s}`);
      expect(events.map((e) => e.revision)).toEqual(events.map((_, i) => BigInt(i)));
      total += events.length;
    }
    expect(total).toBe(2 * 40 * 2);
    // No two appends were told they won the same revision.
    const acked = [...a.lines, ...b.lines].map((l) => l.split(" ").slice(0, 2).join(" "));
    expect(new Set(acked).size).toBe(acked.length);
    const verified = await log.verify();
    expect(verified.break).toBeNull();
    expect(verified.checked).toBe(160);
    await log.close();
  }, 90_000);

  it("a subscriber sees another process's appends within milliseconds", async () => {
    const topic = uniqueTopic("xproc");
    const reader = await openKafkaLog({ brokers: cluster.brokers, topic });
    const seen: string[] = [];
    const sub = reader.subscribe((e) => void seen.push(e.streamId), { pollMs: 5_000 });
    await sub.caughtUp;
    const child = runChild([cluster.brokers, topic, "cas", "xproc", "1", "1", "20"]);
    expect(await child.exited).toBe(0);
    const start = Date.now();
    while (seen.length < 20 && Date.now() - start < 4_000) await new Promise((r) => setTimeout(r, 5));
    await sub.close();
    await reader.close();
    // With a 5 s poll interval, 20 events in under 4 s can only come from the follower's notifications.
    expect(seen.length).toBe(20);
  }, 60_000);

  it("a client opened later rebuilds the log from the topic: positions, revisions, chain", async () => {
    const topic = uniqueTopic("reopen");
    const first = await openKafkaLog({ brokers: cluster.brokers, topic });
    const positions: bigint[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await first.append(`test-t${i % 3}`, [note(`n${i}`), note(`m${i}`)], {
        expectedRevision: "any",
      });
      positions.push(r.position);
    }
    await first.close();
    // Positions are dense: a transaction's control record takes an offset, not a position.
    expect(positions).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(2 * i + 1)));
    const later = await openKafkaLog({ brokers: cluster.brokers, topic });
    expect(await later.headPosition()).toBe(19n);
    expect(await later.streamRevision("test-t0")).toBe(7n);
    const verified = await later.verify();
    expect(verified).toEqual({ checked: 20, headPosition: 19n, break: null });
    const r = await later.append("test-t1", [note("after")], { expectedRevision: 5n });
    expect(r).toEqual({ nextExpectedRevision: 6n, position: 20n });
    await later.close();
  });

  it("clients append alternately with no ownership to move; a stale expectation is refused", async () => {
    const topic = uniqueTopic("alternate");
    const a = await KafkaBackend.open({ brokers: cluster.brokers, topic });
    const b = await KafkaBackend.open({ brokers: cluster.brokers, topic });
    const la = new EventLog(a);
    const lb = new EventLog(b);
    let expected: bigint | "no_stream" = "no_stream";
    for (let i = 0; i < 6; i++) {
      const r = await (i % 2 === 0 ? la : lb).append("test-ping", [note(String(i))], {
        expectedRevision: expected,
      });
      expected = r.nextExpectedRevision;
    }
    // A's expectation is stale: the log's order refuses it, and both clients agree.
    const stale = await la.append("test-ping", [note("stale")], { expectedRevision: 4n }).catch((e) => e);
    expect(stale).toMatchObject({ type: "wrong_expected_revision", actual: 5n });
    expect(a.stats().refused).toBe(1);
    await b.readAll(0n, 100);
    expect(b.stats().refused).toBe(1);
    const [va, vb] = [await la.verify(), await lb.verify()];
    expect(va).toEqual(vb);
    expect(va.break).toBeNull();
    await la.close();
    await lb.close();
  });

  it("a record sent twice is decided once, by every reader", async () => {
    const topic = uniqueTopic("twice");
    const log = await KafkaBackend.open({ brokers: cluster.brokers, topic });
    const el = new EventLog(log);
    await el.append("test-d", [note("first")], { expectedRevision: "no_stream" });
    // Copy the record as a producer retrying after a lost acknowledgement would send it.
    const raw = new Kafka({ brokers: cluster.brokers.split(","), logLevel: logLevel.NOTHING });
    const consumer = raw.consumer({ groupId: `copy-${topic}` });
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    const value = await new Promise<Buffer>((resolve) => {
      void consumer.run({ eachMessage: async ({ message }) => resolve(message.value as Buffer) });
    });
    await consumer.disconnect();
    const producer = raw.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ key: "test-d", value, partition: 0 }] });
    await producer.disconnect();
    await el.append("test-d", [note("second")], { expectedRevision: 0n });
    const later = await KafkaBackend.open({ brokers: cluster.brokers, topic });
    for (const b of [log, later]) {
      expect((await b.readStream("test-d", 0n, 10)).map((e) => JSON.parse(e.dataJson).text)).toEqual([
        "first",
        "second",
      ]);
      expect(b.stats().duplicates).toBe(1);
    }
    await el.close();
    await later.close();
  });

  it("a client pinned to layout 2 writes what an earlier client reads: an append's checks left out", async () => {
    const topic = uniqueTopic("layout2");
    const pinned = await openKafkaLog({ brokers: cluster.brokers, topic, recordLayout: 2 });
    const current = await openKafkaLog({ brokers: cluster.brokers, topic });
    await pinned.append("task-a", [note("declared")], { expectedRevision: "no_stream" });
    await pinned.append("task-a", [note("moved")], { expectedRevision: 0n });
    // Its check of task-a at revision 0 would refuse it (task-a is at 1): left out, it is made.
    await pinned.appendMany(
      [{ streamId: "instance-a", events: [note("intent")], expectedRevision: "no_stream" }],
      {
        checks: [{ streamId: "task-a", expectedRevision: 0n }],
      },
    );
    // The current client still writes its checks, in layout 3, and they are decided.
    await expect(
      current.appendMany(
        [{ streamId: "instance-b", events: [note("intent")], expectedRevision: "no_stream" }],
        {
          checks: [{ streamId: "task-a", expectedRevision: 0n }],
        },
      ),
    ).rejects.toMatchObject({ streamId: "task-a", actual: 1n });
    await current.appendMany(
      [{ streamId: "instance-b", events: [note("intent")], expectedRevision: "no_stream" }],
      {
        checks: [{ streamId: "task-a", expectedRevision: 1n }],
      },
    );
    // The records as they are in the topic: each append's layout and streams.
    const raw = new Kafka({ brokers: cluster.brokers.split(","), logLevel: logLevel.NOTHING });
    const consumer = raw.consumer({ groupId: `read-${topic}` });
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    const appends: Array<{ v: number; writes: Array<{ stream: string }> }> = [];
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          const value = (message.value as Buffer).toString("utf8");
          appends.push(...JSON.parse(value.slice(0, value.indexOf("\n"))));
          if (appends.length >= 5) resolve();
        },
      });
    });
    await consumer.disconnect();
    expect(appends.map((a) => [a.v, a.writes.map((w) => w.stream)])).toEqual([
      [2, ["task-a"]],
      [2, ["task-a"]],
      [2, ["instance-a"]],
      [3, ["instance-b", "task-a"]],
      [3, ["instance-b", "task-a"]],
    ]);
    // Both clients hold the same log.
    for (const log of [pinned, current])
      expect((await log.readAll()).map((e) => e.streamId)).toEqual([
        "task-a",
        "task-a",
        "instance-a",
        "instance-b",
      ]);
    await pinned.close();
    await current.close();
    await expect(openKafkaLog({ brokers: cluster.brokers, topic, recordLayout: 4 as 3 })).rejects.toThrow(
      "recordLayout 4: 2 or 3",
    );
  });

  it("a record another program put in the topic stops the log with a clear error", async () => {
    const topic = uniqueTopic("foreign");
    const log = await openKafkaLog({ brokers: cluster.brokers, topic });
    await log.append("test-f", [note("x")], { expectedRevision: "any" });
    const producer = new Kafka({
      brokers: cluster.brokers.split(","),
      logLevel: logLevel.NOTHING,
    }).producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ key: "test-f", value: "not an event", partition: 0 }] });
    await producer.disconnect();
    const err = await log.readAll().catch((e) => e);
    expect(err).toBeInstanceOf(ForeignRecordError);
    expect(String(err.message)).toMatch(/offset 1 is not a Chronolog append/);
    await log.close();
  });
});
