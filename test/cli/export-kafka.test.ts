import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { EventLog } from "@chronolog/log";
import { EventStoreBackend } from "@chronolog/log-eventstore";
import { KafkaBackend } from "@chronolog/log-kafka";
import { SqliteBackend } from "@chronolog/log-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";
import { eventstoreForSuite } from "../support/eventstore.js";
import { kafkaForSuite } from "../support/kafka.js";

const left = new Leftovers();
let kafka: { brokers: string; stop: () => Promise<void> };
let eventstore: Awaited<ReturnType<typeof eventstoreForSuite>>;
beforeAll(async () => {
  // The CLI runs synchronously here: the EventStoreDB stand-in needs a process of its own.
  eventstore = await eventstoreForSuite("export", { separate: true });
  kafka = await kafkaForSuite("export");
}, 240_000);
afterAll(async () => {
  await left.clear();
  await kafka?.stop();
  await eventstore?.stop();
});

/** The same clock and ids for every log: each call one second after the last. */
function deterministic() {
  let tick = 0;
  let id = 0;
  return {
    clock: () => new Date(Date.UTC(2026, 0, 1) + 1000 * tick++),
    newId: () => `00000000-0000-4000-8000-${String(id++).padStart(12, "0")}`,
  };
}

/** One history, appended one step at a time (each step one commit on either backend). */
async function history(log: EventLog): Promise<void> {
  await log.append("note-ops", [{ type: "Note", data: { text: 'héllo \u2028 "quoted" ☃' } }], {
    expectedRevision: "no_stream",
  });
  await log.append(
    "note-ops",
    [
      { type: "Note", data: { text: "two", n: 2 }, metadata: { correlationId: "c-1" } },
      { type: "Note", data: { text: "three", nested: { a: [1, 2.5, null, true] } } },
    ],
    { expectedRevision: 0n },
  );
  await log.appendMany([
    { streamId: "note-a", events: [{ type: "Note", data: { text: "a" } }], expectedRevision: "no_stream" },
    { streamId: "note-b", events: [{ type: "Note", data: { text: "b" } }], expectedRevision: "no_stream" },
  ]);
  for (let i = 0; i < 20; i++)
    await log.append(
      "note-a",
      [{ type: "Note", data: { text: `a${i}` }, metadata: { causationId: `x${i}` } }],
      {
        expectedRevision: BigInt(i),
      },
    );
}

describe("exports of the same history on the embedded, the Kafka and the EventStoreDB log", () => {
  it("are identical byte for byte: positions, hashes, data, metadata and times", async () => {
    const dir = tempDataDir("export-kafka");
    left.dirs.push(dir);
    const topic = `chronolog-export-${process.pid}-${Date.now()}`;
    const s = deterministic();
    const sqlite = new EventLog(new SqliteBackend({ path: join(dir, "log.db"), clock: s.clock }), {
      actor: "test",
      newId: s.newId,
    });
    await history(sqlite);
    await sqlite.close();
    const k = deterministic();
    const onKafka = new EventLog(await KafkaBackend.open({ brokers: kafka.brokers, topic, clock: k.clock }), {
      actor: "test",
      newId: k.newId,
    });
    await history(onKafka);
    await onKafka.close();
    const stream = eventstore.uniqueStream("export");
    const e = deterministic();
    const onEventStore = new EventLog(
      await EventStoreBackend.open({ connectionString: eventstore.connectionString, stream, clock: e.clock }),
      { actor: "test", newId: e.newId },
    );
    await history(onEventStore);
    await onEventStore.close();

    const [base, query] = eventstore.connectionString.split("?");
    const exports = {
      sqlite: chronolog(dir, ["log", "export"]),
      kafka: chronolog(dir, ["--log", `kafka://${kafka.brokers.split(",")[0]}/${topic}`, "log", "export"]),
      eventstore: chronolog(dir, ["--log", `${base}/${stream}${query ? `?${query}` : ""}`, "log", "export"]),
    };
    for (const [name, r] of Object.entries(exports)) expect(r.code, `${name}: ${r.stderr}`).toBe(0);
    const text = exports.sqlite.stdout;
    const lines = text.trimEnd().split("\n");
    expect(lines).toHaveLength(25);
    // Every log numbers its events from 0, and the chain starts from no hash at all.
    expect(lines.map((l) => JSON.parse(l).position)).toEqual(lines.map((_, i) => String(i)));
    expect(JSON.parse(lines[0] as string).metadata.prevHash).toBe("");
    expect(lines[0]).toContain('"recordedAt":"2026-01-01T00:00:00.000Z"');
    expect(lines.at(-1)).toContain('"recordedAt":"2026-01-01T00:00:22.000Z"');
    // The whole files, byte for byte: positions and the hashes that cover them included.
    expect(exports.kafka.stdout).toBe(text);
    expect(exports.eventstore.stdout).toBe(text);
    // Each export is a pure function of its log's stored events, and verifies by itself.
    expect(chronolog(dir, ["log", "export"]).stdout).toBe(text);
    const file = join(dir, "export.jsonl");
    writeFileSync(file, text);
    const v = chronolog(dir, ["log", "verify", "--file", file, "--json"]);
    expect(v.code, v.stdout).toBe(0);
    expect(JSON.parse(v.stdout)).toMatchObject({ checked: 25, headPosition: "24", ok: true });
  });
});
