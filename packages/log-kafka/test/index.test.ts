import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventLog, type StoredEvent } from "@chronolog/log";
import { KafkaBackend, type KafkaLogOptions } from "@chronolog/log-kafka";
import { afterAll, describe, expect, it } from "vitest";
import { useCluster } from "./support/cluster.js";

/**
 * A client keeps an index of the log and reads older events back from the brokers; a
 * checkpoint of the index lets a new client read only the topic past it. Against a real broker.
 */

const cluster = useCluster();
const dir = mkdtempSync(join(tmpdir(), "chronolog-kafka-index-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const note = (text: string) => ({ type: "Note", data: { text } });
const bare = (events: StoredEvent[]) => events.map(({ parsed: _parsed, ...e }) => e);

interface Notice {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

function open(topic: string, options: Partial<KafkaLogOptions> = {}, notices: Notice[] = []) {
  return KafkaBackend.open({
    brokers: cluster.brokers,
    topic,
    notice: (level, message, fields) => void notices.push({ level, message, fields }),
    ...options,
  });
}

/** Appends of every kind a log holds: batched into shared records, multi-stream, refused. */
async function write(backend: KafkaBackend, label: string, rounds = 4): Promise<void> {
  const log = new EventLog(backend);
  for (let r = 0; r < rounds; r++) {
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        log.append(`test-${label}${i % 5}`, [note(`${r}.${i}a`), note(`${r}.${i}b`)], {
          expectedRevision: "any",
        }),
      ),
    );
    await log.appendMany([
      { streamId: `test-${label}many${r}`, events: [note("m0")], expectedRevision: "no_stream" },
      { streamId: `test-${label}0`, events: [note("m1"), note("m2")], expectedRevision: "any" },
    ]);
    await log.append(`test-${label}1`, [note("stale")], { expectedRevision: 0n }).catch(() => {});
  }
}

/** Everything a client holds: every event, each stream's events and revision, the chain. */
async function holdings(backend: KafkaBackend) {
  const all = bare(await backend.readAll(0n, 100_000));
  const streams = [...new Set(all.map((e) => e.streamId))].sort();
  const byStream: Record<string, unknown> = {};
  for (const s of streams)
    byStream[s] = {
      events: bare(await backend.readStream(s, 0n, 100_000)).map((e) => [
        e.revision,
        e.position,
        e.metadata.hash,
      ]),
      revision: await backend.streamRevision(s),
      page: bare(await backend.readStream(s, 1n, 2)).map((e) => e.revision),
    };
  const verified = await new EventLog(backend).verify();
  return { all, byStream, head: await backend.headPosition(), verified };
}

async function deleteTopic(topic: string): Promise<void> {
  const admin = cluster.kafka().admin();
  await admin.connect();
  await admin.deleteTopics({ topics: [topic] });
  for (let i = 0; i < 200 && (await admin.listTopics()).includes(topic); i++)
    await new Promise((r) => setTimeout(r, 100));
  await admin.disconnect();
}

/** Opens (and so creates) a topic just deleted: the brokers may still be removing it. */
async function reopen(topic: string): Promise<KafkaBackend> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await open(topic);
    } catch (error) {
      if (attempt > 50) throw error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

describe("kafka log index", () => {
  it("reads events evicted from its cache back from the brokers, as they were decided", async () => {
    const topic = cluster.topic("evicted");
    const small = await open(topic, { cacheEvents: 3 });
    await write(small, "ev");
    const whole = await open(topic, { cacheEvents: 1_000_000 });
    const before = small.stats().readBack;
    const mine = await holdings(small);
    expect(small.stats().readBack).toBeGreaterThan(before);
    expect(mine.verified.break).toBeNull();
    expect(mine.verified.checked).toBe(mine.all.length);
    expect(mine.all.map((e) => e.position)).toEqual(mine.all.map((_, i) => BigInt(i)));
    // A client that holds every event whole (it decided each one) holds the same.
    const theirs = await holdings(whole);
    expect(mine).toEqual(theirs);
    expect(small.stats().refused).toBe(4);
    await small.close();
    await whole.close();
  });

  it("a client started from a checkpoint holds what a client reading from offset 0 holds", async () => {
    const topic = cluster.topic("resume");
    const path = join(dir, "resume.index");
    const first = await open(topic, { indexPath: path });
    await write(first, "rs");
    const head = await first.headPosition();
    // Closing writes the checkpoint; another client then writes on past it.
    await first.close();
    const other = await open(topic);
    await write(other, "rt", 2);
    await other.close();

    const notices: Notice[] = [];
    const resumed = await open(topic, { indexPath: path, cacheEvents: 0 }, notices);
    expect(notices.map((n) => [n.level, n.message])).toEqual([
      ["info", "index checkpoint read; reading the topic past it"],
    ]);
    expect(notices[0]?.fields.events).toBe(Number(head) + 1);
    // It read the topic only past the checkpoint.
    expect(resumed.stats().reread).toBe(0);
    const fromZero = await open(topic, { cacheEvents: 0 });
    const [a, b] = [await holdings(resumed), await holdings(fromZero)];
    expect(a).toEqual(b);
    expect(a.verified.break).toBeNull();
    expect(a.head).toBeGreaterThan(head);
    expect(resumed.stats()).toMatchObject({
      refused: fromZero.stats().refused,
      duplicates: fromZero.stats().duplicates,
      offset: fromZero.stats().offset,
    });
    // Both decide what comes next alike.
    const next = await new EventLog(resumed).append("test-rs2", [note("next")], {
      expectedRevision: "exists",
    });
    await fromZero.readAll(0n, 1);
    expect(await fromZero.streamRevision("test-rs2")).toBe(next.nextExpectedRevision);
    expect(await fromZero.headPosition()).toBe(next.position);
    expect(bare(await fromZero.readAll(next.position, 1))).toEqual(
      bare(await resumed.readAll(next.position, 1)),
    );
    await resumed.close();
    await fromZero.close();
  });

  describe("refuses a checkpoint that does not fit the topic, says why, and reads from offset 0", () => {
    /** Opens with a checkpoint that must be refused; the client must hold the topic's own log. */
    async function refused(topic: string, path: string, reason: RegExp): Promise<void> {
      const notices: Notice[] = [];
      const client = await open(topic, { indexPath: path }, notices);
      expect(notices.map((n) => [n.level, n.message])).toEqual([
        ["warn", "index checkpoint refused; reading the topic from offset 0"],
      ]);
      expect(String(notices[0]?.fields.reason)).toMatch(reason);
      const fromZero = await open(topic);
      expect(await holdings(client)).toEqual(await holdings(fromZero));
      await client.close();
      await fromZero.close();
    }

    async function checkpointOf(topic: string, name: string): Promise<string> {
      const path = join(dir, `${name}.index`);
      const client = await open(topic, { indexPath: path });
      await write(client, name);
      await client.close();
      return path;
    }

    it("another topic's", async () => {
      const path = await checkpointOf(cluster.topic("mine"), "mine");
      const theirs = cluster.topic("theirs");
      const client = await open(theirs);
      await write(client, "th", 1);
      await client.close();
      await refused(
        theirs,
        path,
        /made for topic chronolog-test\..*\.mine\.\d+, not chronolog-test\..*\.theirs/,
      );
    });

    it("a topic made anew, shorter", async () => {
      const topic = cluster.topic("shorter");
      const path = await checkpointOf(topic, "shorter");
      await deleteTopic(topic);
      const client = await reopen(topic);
      await write(client, "sh", 1);
      await client.close();
      await refused(topic, path, /the topic ends at offset \d+, before the checkpoint's \d+/);
    });

    it("a topic made anew with other records at the same offsets", async () => {
      const topic = cluster.topic("other");
      const path = await checkpointOf(topic, "other");
      await deleteTopic(topic);
      const client = await reopen(topic);
      await write(client, "ot", 6);
      await client.close();
      await refused(topic, path, /the record at offset \d+ does not match this client's index/);
    });

    it("a damaged file", async () => {
      const topic = cluster.topic("damaged");
      const path = await checkpointOf(topic, "damaged");
      const bytes = readFileSync(path);
      bytes[40] = (bytes[40] as number) ^ 0xff;
      writeFileSync(path, bytes);
      await refused(topic, path, /damaged/);
    });
  });
});
