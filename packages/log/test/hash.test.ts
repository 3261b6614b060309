import { createHash } from "node:crypto";
import { chainHash, type HashedFields } from "@chronolog/log";
import { describe, expect, it } from "vitest";

/** The chain hash as its definition reads: SHA-256 of each field framed as length, colon, text. */
function byDefinition(prevHash: string, e: HashedFields): string {
  const fields = [
    prevHash,
    e.position.toString(),
    e.streamId,
    e.revision.toString(),
    e.type,
    String(e.schemaVersion),
    e.dataJson,
    e.eventId,
    e.actor,
    e.causationId ?? "\u0000",
    e.correlationId ?? "\u0000",
    e.recordedAt,
  ];
  return createHash("sha256")
    .update(fields.map((f) => `${f.length}:${f}`).join(""), "utf8")
    .digest("hex");
}

const event: HashedFields = {
  position: 41n,
  streamId: "instance-sales/acme/orders/ALL/2026-11-28T02:00:00.000Z",
  revision: 2n,
  type: "AttemptSucceeded",
  schemaVersion: 1,
  dataJson: '{"attempt":1,"token":"abcdefgh","durationMs":3}',
  eventId: "5b0c8e0e-8c1f-4a52-9d5e-0d8f6f1f2a11",
  actor: "scheduler",
  causationId: null,
  correlationId: "c-1",
  recordedAt: "2026-11-28T02:00:01.234Z",
};

describe("chainHash", () => {
  it("keeps the value it has always had for an event", () => {
    // Pinned: stored logs carry hashes made this way, and a change of framing would break them.
    expect(chainHash("", event)).toBe(byDefinition("", event));
    expect(chainHash("", event)).toBe("322ed38bd4362e5e1b8d3adc5cd5261ef107bb44fed717419541dcba7ee23bbb");
  });

  it("frames text by its UTF-16 length and hashes its UTF-8 bytes, lone surrogates included", () => {
    const texts = ["é", "€", "😀", "\ud800", "\udc00x", "\u0000", '"', "plain"];
    let seed = 7;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed;
    };
    const text = (n: number) => Array.from({ length: n }, () => texts[next() % texts.length]).join("");
    for (let i = 0; i < 500; i++) {
      const e: HashedFields = {
        ...event,
        position: BigInt(next()),
        streamId: text(i % 40),
        type: text(3),
        dataJson: text(i % 300),
        actor: text(2),
        causationId: i % 2 ? null : text(5),
      };
      const prev = i % 3 ? text(64) : "";
      expect(chainHash(prev, e)).toBe(byDefinition(prev, e));
    }
  });

  it("hashes an event larger than any before it, and a small one after it", () => {
    const big = { ...event, dataJson: JSON.stringify({ text: "€".repeat(400_000) }) };
    expect(chainHash("x", big)).toBe(byDefinition("x", big));
    expect(chainHash("x", event)).toBe(byDefinition("x", event));
  });
});
