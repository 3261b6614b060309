import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExpectedRevision } from "@chronolog/log";
import { afterAll, describe, expect, it } from "vitest";
import { BodyCache } from "../src/body-cache.js";
import { EventReader } from "../src/event-reader.js";
import { checkIndex } from "../src/index-check.js";
import { IndexFileError, loadIndex, saveIndex } from "../src/index-file.js";
import type { DecodedAppend } from "../src/record.js";
import { SKIP } from "../src/stream-table.js";
import { FedDecider } from "./support/memory-records.js";

/**
 * Checkpoints of the index, with no broker: written, read back and checked against records
 * kept in memory as a partition keeps them.
 */

const dir = mkdtempSync(join(tmpdir(), "chronolog-index-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function event(text: string) {
  return {
    eventId: `event-${text}-${n++}`,
    type: "Note",
    dataJson: JSON.stringify({ text }),
    schemaVersion: 1,
    actor: "test:index",
    causationId: null,
    correlationId: null,
  };
}

function append(id: string, stream: string, expected: ExpectedRevision, count = 1, base = 0n): DecodedAppend {
  return {
    id,
    base,
    recordedAt: "2024-01-01T00:00:00.000Z",
    writes: [{ stream, expected, events: Array.from({ length: count }, (_, i) => event(`${id}.${i}`)) }],
  };
}

/** A log of short streams and one long one, with refusals and a copy among the records. */
function sample(): FedDecider {
  const d = new FedDecider(1000, 0);
  let offset = 0n;
  for (let i = 0; i < 300; i++) {
    const appends = [append(`a${i}`, `instance-t/${i}`, "no_stream", 3), append(`l${i}`, "task-long", "any")];
    if (i % 50 === 7) appends.push(append(`r${i}`, `instance-t/${i}`, "no_stream"));
    if (i % 60 === 9) appends.push(append(`a${i - 1}`, "x-ignored", "any"));
    d.decideRecord(offset, appends);
    offset += i % 3 === 0 ? 2n : 1n;
  }
  d.decideRecord(offset, [append("only-refused", "task-long", 0n)]);
  d.advanceTo(offset + 1n);
  return d;
}

describe("index checkpoints", () => {
  it("a checkpoint read back holds the same log: positions, revisions, hashes, decisions", async () => {
    const d = sample();
    const path = join(dir, "same.index");
    const saved = await saveIndex(path, "topic-a", d.decider);
    expect(saved.nextOffset).toBe(d.nextOffset);
    const loaded = await loadIndex(path, "topic-a");
    expect(await checkIndex(loaded, { low: 0n, high: loaded.state.next }, d.source)).toBeNull();
    const again = new FedDecider(1000, 0);
    for (const [offset, value] of d.source.records) again.source.records.set(offset, value);
    again.decider.restore(loaded.index, loaded.state);
    expect([again.eventCount, again.streamCount, again.lastHash, again.nextOffset]).toEqual([
      d.eventCount,
      d.streamCount,
      d.lastHash,
      d.nextOffset,
    ]);
    expect([again.refused, again.duplicates]).toEqual([d.refused, d.duplicates]);
    expect(await again.readAll(0n, 100_000)).toEqual(await d.readAll(0n, 100_000));
    // A long stream is found through its kept revisions, page by page.
    const long = await d.readStream("task-long", 0n, 1000);
    expect(long.length).toBeGreaterThan(4 * SKIP);
    for (const from of [0n, 1n, 63n, 64n, 65n, 130n, 299n]) {
      const page = await again.readStream("task-long", from, 70);
      expect(page).toEqual(long.slice(Number(from), Number(from) + 70));
    }
    expect(await again.readStream("instance-t/7", 0n, 10)).toEqual(
      await d.readStream("instance-t/7", 0n, 10),
    );
    // The restored decider decides the next records as the first does.
    const next = [
      append("z1", "task-long", 299n),
      append("z2", "instance-t/3", 2n),
      append("a299", "y", "any"),
    ];
    expect(again.decideRecord(d.nextOffset, next)).toEqual(d.decideRecord(d.nextOffset, next));
    expect(again.lastHash).toBe(d.lastHash);
  });

  it("refuses a file made for another topic, a damaged one, and one that is not a checkpoint", async () => {
    const d = sample();
    const path = join(dir, "refused.index");
    await saveIndex(path, "topic-a", d.decider);
    await expect(loadIndex(path, "topic-b")).rejects.toThrow(/made for topic topic-a, not topic-b/);
    const bytes = readFileSync(path);
    const damaged = Buffer.from(bytes);
    damaged[100] = (damaged[100] as number) ^ 1;
    writeFileSync(path, damaged);
    await expect(loadIndex(path, "topic-a")).rejects.toThrow(/damaged/);
    writeFileSync(path, bytes.subarray(0, bytes.length - 10));
    await expect(loadIndex(path, "topic-a")).rejects.toBeInstanceOf(IndexFileError);
    writeFileSync(path, "not a checkpoint at all, but long enough to have a trailer");
    await expect(loadIndex(path, "topic-a")).rejects.toBeInstanceOf(IndexFileError);
  });

  it("refuses a checkpoint the topic does not fit: cut short, records gone, records changed", async () => {
    const d = sample();
    const path = join(dir, "check.index");
    await saveIndex(path, "topic-a", d.decider);
    const loaded = await loadIndex(path, "topic-a");
    const next = loaded.state.next;
    expect(await checkIndex(loaded, { low: 0n, high: next - 1n }, d.source)).toMatch(
      /ends at offset \d+, before the checkpoint's \d+: it was cut short or made anew/,
    );
    expect(await checkIndex(loaded, { low: 5n, high: next }, d.source)).toMatch(
      /before offset 5 were deleted/,
    );
    // The same offsets holding other records: a topic made anew under the same name.
    const other = sample();
    expect(await checkIndex(loaded, { low: 0n, high: next }, other.source)).toMatch(
      /does not match this client's index/,
    );
    // One record changed, the last one that holds events: its hashes no longer arrive.
    const changed = sample();
    const last = loaded.index.records.offset(loaded.index.records.size - 1);
    changed.source.put(last, [append("changed", "task-long", "any")]);
    expect(await checkIndex(loaded, { low: 0n, high: next }, changed.source)).toMatch(/does not match/);
  });

  it("reads evicted events back through a reader with no cache, the same as kept ones", async () => {
    const d = sample();
    const reader = new EventReader(() => d.decider.index, new BodyCache(5), d.source);
    const all = await reader.readAll(0n, 100_000);
    expect(all.length).toBe(d.eventCount);
    expect(all).toEqual(await d.readAll(0n, 100_000));
    expect(all.map((e) => e.position)).toEqual(all.map((_, i) => BigInt(i)));
  });

  it("refuses to read where the records are gone, rather than serve a log with a hole", async () => {
    const d = sample();
    const reader = new EventReader(() => d.decider.index, new BodyCache(0), d.source);
    const middle = d.decider.index.records.offset(40);
    d.source.records.delete(middle);
    const position = BigInt(d.decider.index.records.first(40));
    await expect(reader.readAll(position, 10)).rejects.toThrow(
      /offset \d+ .*the brokers hold no record there/,
    );
    await expect(reader.readAll(0n, 100_000)).rejects.toThrow(/no record there/);
    d.source.records.clear();
    await expect(reader.readAll(0n, 10)).rejects.toThrow(/no record there/);
  });
});
