import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { EventLog } from "@chronolog/log";
import { KafkaBackend } from "@chronolog/log-kafka";
import { SqliteBackend } from "@chronolog/log-sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";
import { kafkaForSuite } from "../support/kafka.js";

const left = new Leftovers();
let kafka: { brokers: string; stop: () => Promise<void> };
beforeAll(async () => {
  kafka = await kafkaForSuite("export");
}, 240_000);
afterAll(async () => {
  await left.clear();
  await kafka?.stop();
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

/** Drops what the backend's numbering decides (position, and the hashes that cover it). */
const content = (line: string) =>
  line
    .replace(/^\{"position":"\d+",/, "{")
    .replace(/,"prevHash":"[0-9a-f]*","hash":"[0-9a-f]{64}"\}\}$/, "}}");

describe("exports of the same history on the embedded and the Kafka log", () => {
  it("hold the same events, data, metadata and times; only the positions (and so the hashes) differ", async () => {
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

    const a = chronolog(dir, ["log", "export"]);
    const b = chronolog(dir, ["--log", `kafka://${kafka.brokers.split(",")[0]}/${topic}`, "log", "export"]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const la = a.stdout.trimEnd().split("\n");
    const lb = b.stdout.trimEnd().split("\n");
    expect(la).toHaveLength(25);
    expect(lb).toHaveLength(25);
    // The embedded log numbers its events from 1 (SQLite rowids), the Kafka log from 0 (its
    // decider's index); the hash covers the position, so every hash differs with it.
    expect(la.map((l) => JSON.parse(l).position)).toEqual(la.map((_, i) => String(i + 1)));
    expect(lb.map((l) => JSON.parse(l).position)).toEqual(lb.map((_, i) => String(i)));
    // Everything else is the same, byte for byte: data text, metadata, times and ids.
    expect(lb.map(content).join("\n")).toBe(la.map(content).join("\n"));
    expect(la[0]).toContain('"recordedAt":"2026-01-01T00:00:00.000Z"');
    expect(la.at(-1)).toContain('"recordedAt":"2026-01-01T00:00:22.000Z"');
    // Each export is a pure function of its log's stored events, and verifies by itself.
    expect(chronolog(dir, ["log", "export"]).stdout).toBe(a.stdout);
    for (const [name, text] of [
      ["sqlite.jsonl", a.stdout],
      ["kafka.jsonl", b.stdout],
    ] as const) {
      const file = join(dir, name);
      writeFileSync(file, text);
      const v = chronolog(dir, ["log", "verify", "--file", file, "--json"]);
      expect(v.code, v.stdout).toBe(0);
      expect(JSON.parse(v.stdout)).toMatchObject({ checked: 25, ok: true });
    }
  });
});
