import { EventLog } from "@chronolog/log";
import { logContractSuite } from "@chronolog/log/contract";
import { EventStoreBackend, openEventStoreLog } from "@chronolog/log-eventstore";
import { EventStoreStandIn } from "@chronolog/log-eventstore/stand-in";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventstoreForSuite } from "../../../test/support/eventstore.js";

let server: Awaited<ReturnType<typeof eventstoreForSuite>>;

beforeAll(async () => {
  server = await eventstoreForSuite("log-eventstore contract");
});

afterAll(async () => {
  await server?.stop();
});

logContractSuite("eventstore", async () => {
  const stream = server.uniqueStream("contract");
  const open = (actor: string) =>
    openEventStoreLog({ connectionString: server.connectionString, stream, actor });
  const log = await open("test:contract");
  const others: EventLog[] = [];
  return {
    log,
    async openAnother() {
      const another = await open("test:contract-2");
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

describe("eventstore log", () => {
  const openBackend = (stream: string) =>
    EventStoreBackend.open({ connectionString: server.connectionString, stream, retryForMs: 10_000 });

  it("a client opened later rebuilds the log from the stream: positions, revisions, chain", async () => {
    const stream = server.uniqueStream("reopen");
    const first = new EventLog(await openBackend(stream));
    for (let i = 0; i < 10; i++)
      await first.append(`test-t${i % 3}`, [note(`n${i}`), note(`m${i}`)], { expectedRevision: "any" });
    await first.close();
    const later = new EventLog(await openBackend(stream));
    expect(await later.headPosition()).toBe(19n);
    expect(await later.streamRevision("test-t0")).toBe(7n);
    expect(await later.verify()).toEqual({ checked: 20, headPosition: 19n, break: null });
    expect(await later.append("test-t1", [note("after")], { expectedRevision: 5n })).toEqual({
      nextExpectedRevision: 6n,
      position: 20n,
    });
    await later.close();
  });

  it("four clients appending with compare-and-set at once: no lost or duplicated revision", async () => {
    const stream = server.uniqueStream("cas");
    const backends = await Promise.all([1, 2, 3, 4].map(() => openBackend(stream)));
    const logs = backends.map((b) => new EventLog(b));
    const won: string[] = [];
    await Promise.all(
      logs.map(async (log, c) => {
        for (let k = 0; k < 25; k++) {
          for (;;) {
            const rev = await log.streamRevision("test-shared");
            const r = await log
              .append("test-shared", [note(`${c}.${k}`)], { expectedRevision: rev })
              .catch((e) => e);
            if (r instanceof Error) continue;
            won.push(String(r.nextExpectedRevision));
            break;
          }
        }
      }),
    );
    expect(new Set(won).size).toBe(100);
    const events = await logs[0]!.readStream("test-shared");
    expect(events.map((e) => e.revision)).toEqual(events.map((_, i) => BigInt(i)));
    const verified = await Promise.all(logs.map((l) => l.verify()));
    for (const v of verified) expect(v).toEqual(verified[0]);
    expect(verified[0]?.break).toBeNull();
    expect(backends.reduce((n, b) => n + b.stats().conflicts, 0)).toBeGreaterThan(0);
    for (const l of logs) await l.close();
  });

  const standIn = () => server.standIn;

  it.skipIf(!!process.env.CHRONOLOG_EVENTSTORE_URL)(
    "reads and appends retry through UNAVAILABLE on the next calls",
    async () => {
      const log = new EventLog(await openBackend(server.uniqueStream("unavailable")));
      standIn()!.failNext(3);
      const r = await log.append("test-u", [note("a")], { expectedRevision: "no_stream" });
      expect(r.nextExpectedRevision).toBe(0n);
      standIn()!.failNext(2);
      expect((await log.readStream("test-u")).length).toBe(1);
      await log.close();
    },
  );

  it.skipIf(!!process.env.CHRONOLOG_EVENTSTORE_URL)(
    "an append applied but its answer lost is retried and applied once",
    async () => {
      const stream = server.uniqueStream("lost");
      const backend = await openBackend(stream);
      const log = new EventLog(backend);
      await log.append("test-l", [note("first")], { expectedRevision: "no_stream" });
      standIn()!.loseNextAppendAnswer();
      const r = await log.append("test-l", [note("second")], { expectedRevision: 0n });
      expect(r).toEqual({ nextExpectedRevision: 1n, position: 1n });
      expect(standIn()!.events(stream).length).toBe(2);
      // The client chose BatchAppend, which the stand-in lists as a real server does.
      expect(standIn()!.counts.batchAppends).toBeGreaterThan(0);
      const later = new EventLog(await openBackend(stream));
      expect((await later.readStream("test-l")).map((e) => (e.data as { text: string }).text)).toEqual([
        "first",
        "second",
      ]);
      await later.close();
      await log.close();
    },
  );

  it.skipIf(!!process.env.CHRONOLOG_EVENTSTORE_URL)(
    "a subscription follows through a server restart, and sees no event twice",
    async () => {
      const stream = server.uniqueStream("restart");
      const writer = new EventLog(await openBackend(stream));
      const readerBackend = await openBackend(stream);
      const reader = new EventLog(readerBackend);
      const seen: string[] = [];
      const sub = reader.subscribe((e) => void seen.push((e.data as { text: string }).text), {
        pollMs: 60_000,
      });
      await sub.caughtUp;
      for (let i = 0; i < 5; i++) await writer.append("test-r", [note(`a${i}`)], { expectedRevision: "any" });
      await waitUntil(() => seen.length === 5);
      await standIn()!.restart(300);
      for (let i = 0; i < 5; i++) await writer.append("test-r", [note(`b${i}`)], { expectedRevision: "any" });
      await waitUntil(() => seen.length === 10);
      expect(seen).toEqual([0, 1, 2, 3, 4].map((i) => `a${i}`).concat([0, 1, 2, 3, 4].map((i) => `b${i}`)));
      // The reader catches up by reading before it subscribes again: the events can arrive
      // through that read a moment before the new subscription is counted.
      await waitUntil(() => readerBackend.stats().subscriptions > 1);
      expect(readerBackend.stats().subscriptions).toBeGreaterThan(1);
      await sub.close();
      await reader.close();
      await writer.close();
    },
  );

  // (It reads the stored events through the stand-in: a real server is left out, visibly.)
  it.skipIf(!!process.env.CHRONOLOG_EVENTSTORE_URL)(
    "each append is one event of the log's stream, typed and tagged with its streams",
    async () => {
      if (!server.standIn) throw new Error("the stand-in server is not running");
      const stream = server.uniqueStream("layout");
      const log = new EventLog(await openBackend(stream));
      await log.append("task-a", [note("one")], { expectedRevision: "no_stream" });
      await log.appendMany([
        { streamId: "task-a", events: [note("two")], expectedRevision: 0n },
        { streamId: "run-b", events: [note("three")], expectedRevision: "no_stream" },
      ]);
      const stored = server.standIn.events(stream);
      expect(stored.map((e) => e.type)).toEqual(["Note", "chronolog.append"]);
      expect(JSON.parse(stored[1]!.metadata)).toEqual({ streams: ["task-a", "run-b"] });
      await log.close();
    },
  );
});

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe.skipIf(!!process.env.CHRONOLOG_EVENTSTORE_URL)("on a server without BatchAppend", () => {
  it("the client appends with the streaming Append call, with the same outcomes", async () => {
    const old = await EventStoreStandIn.start({ batchAppend: false });
    const log = new EventLog(await EventStoreBackend.open({ connectionString: old.url, stream: "old" }));
    await log.append("test-o", [note("a")], { expectedRevision: "no_stream" });
    const stale = await log.append("test-o", [note("b")], { expectedRevision: "no_stream" }).catch((e) => e);
    expect(stale).toMatchObject({ type: "wrong_expected_revision", actual: 0n });
    old.loseNextAppendAnswer();
    expect(await log.append("test-o", [note("c")], { expectedRevision: 0n })).toEqual({
      nextExpectedRevision: 1n,
      position: 1n,
    });
    expect(old.counts.batchAppends).toBe(0);
    expect(old.counts.appends).toBeGreaterThanOrEqual(2);
    expect(old.events("old").length).toBe(2);
    await log.close();
    await old.stop();
  });
});
