import { type ExpectedRevision, GENESIS_HASH, hashStored, WrongExpectedRevisionError } from "@chronolog/log";
import { describe, expect, it } from "vitest";
import { type DecodedAppend, decodeRecord, ForeignRecordError } from "../src/record.js";
import type { Decision } from "../src/record-decider.js";
import { FedDecider } from "./support/memory-records.js";

/**
 * The decider alone, with no broker: records are handed to it as the follower would, in
 * offset order, already decoded, and kept in memory as a partition would keep them, so that
 * every read makes the events again from the records (as a client reads evicted events back
 * from the brokers).
 */

const RECORDED_AT = "2024-01-01T00:00:00.000Z";

function event(text: string) {
  return {
    eventId: `event-${text}`,
    type: "Note",
    dataJson: JSON.stringify({ text }),
    schemaVersion: 1,
    actor: "test:decider",
    causationId: null,
    correlationId: null,
  };
}

function write(stream: string, expected: ExpectedRevision, ...texts: string[]) {
  return { stream, expected, events: texts.map(event) };
}

function append(id: string, writes: DecodedAppend["writes"], base = 0n): DecodedAppend {
  return { id, base, recordedAt: RECORDED_AT, writes };
}

/** Every event's hash recomputed from the one before it: the chain holds. */
async function expectChain(d: FedDecider): Promise<void> {
  let prev = GENESIS_HASH;
  const all = await d.readAll(0n, Number.MAX_SAFE_INTEGER);
  // Read back from the records, every event is the one the decider made and kept.
  expect(all).toEqual((await d.cached(0n, Number.MAX_SAFE_INTEGER)).map(({ parsed: _p, ...e }) => e));
  for (const e of all) {
    expect(e.metadata.prevHash).toBe(prev);
    expect(hashStored(prev, e)).toBe(e.metadata.hash);
    prev = e.metadata.hash;
  }
  expect(d.lastHash).toBe(prev);
}

describe("RecordDecider", () => {
  it("accepts appends in order: dense positions, revisions per stream, one hash chain", async () => {
    const d = new FedDecider();
    const first = d.decideRecord(0n, [append("a1", [write("task-1", "no_stream", "one", "two")])]);
    const second = d.decideRecord(1n, [
      append("a2", [write("task-2", "no_stream", "three")]),
      append("a3", [write("task-1", 1n, "four")]),
    ]);
    expect(first).toEqual([
      { kind: "accepted", id: "a1", results: [{ nextExpectedRevision: 1n, position: 1n }] },
    ]);
    expect(second).toEqual([
      { kind: "accepted", id: "a2", results: [{ nextExpectedRevision: 0n, position: 2n }] },
      { kind: "accepted", id: "a3", results: [{ nextExpectedRevision: 2n, position: 3n }] },
    ]);
    expect(d.nextOffset).toBe(2n);
    expect(d.headPosition()).toBe(3n);
    expect(d.eventCount).toBe(4);
    expect(d.streamCount).toBe(2);
    expect(d.revision("task-1")).toBe(2n);
    expect(d.revision("task-2")).toBe(0n);
    expect(d.revision("task-3")).toBe("no_stream");
    expect((await d.readStream("task-1", 0n, 10)).map((e) => [e.revision, e.position, e.dataJson])).toEqual([
      [0n, 0n, '{"text":"one"}'],
      [1n, 1n, '{"text":"two"}'],
      [2n, 3n, '{"text":"four"}'],
    ]);
    expect((await d.readStream("task-1", 1n, 1)).map((e) => e.position)).toEqual([1n]);
    expect((await d.readAll(2n, 10)).map((e) => e.streamId)).toEqual(["task-2", "task-1"]);
    expect(await d.readAll(4n, 10)).toEqual([]);
    expect((await d.readAll(0n, 1))[0]?.metadata.recordedAt).toBe(RECORDED_AT);
    await expectChain(d);
  });

  it("refuses a compare-and-set that does not match, naming the stream, expected and actual", () => {
    const d = new FedDecider();
    d.decideRecord(0n, [append("a1", [write("task-1", "no_stream", "one")])]);
    const [refused, again, exists] = d.decideRecord(1n, [
      append("a2", [write("task-1", "no_stream", "two")]),
      append("a3", [write("task-1", 5n, "three")]),
      append("a4", [write("task-9", "exists", "four")]),
    ]);
    for (const [decision, stream, expected, actual] of [
      [refused, "task-1", "no_stream", 0n],
      [again, "task-1", 5n, 0n],
      [exists, "task-9", "exists", "no_stream"],
    ] as const) {
      expect(decision?.kind).toBe("refused");
      const error = (decision as Extract<Decision, { kind: "refused" }>).error;
      expect(error).toBeInstanceOf(WrongExpectedRevisionError);
      expect(error.type).toBe("wrong_expected_revision");
      expect(error.streamId).toBe(stream);
      expect(error.expected).toBe(expected);
      expect(error.actual).toBe(actual);
    }
    expect(d.refused).toBe(3);
    expect(d.eventCount).toBe(1);
    expect(d.revision("task-1")).toBe(0n);
    expect(d.nextOffset).toBe(2n);
    // A refusal changes nothing: the next append at the real revision is accepted.
    expect(d.decideRecord(2n, [append("a5", [write("task-1", 0n, "five")])])[0]?.kind).toBe("accepted");
  });

  it("decides a record delivered twice once", () => {
    const d = new FedDecider();
    const a = append("a1", [write("task-1", "no_stream", "one")]);
    expect(d.decideRecord(0n, [a])[0]?.kind).toBe("accepted");
    // The same record read again (after a rebalance seeks back): already decided, no decisions.
    expect(d.has(0n)).toBe(true);
    expect(d.decideRecord(0n, [a])).toEqual([]);
    // A copy sent again lands at a later offset: recognised by its id, ignored.
    expect(d.decideRecord(1n, [a])).toEqual([{ kind: "duplicate", id: "a1" }]);
    expect(d.duplicates).toBe(1);
    expect(d.refused).toBe(0);
    expect(d.eventCount).toBe(1);
    expect(d.revision("task-1")).toBe(0n);
    expect(d.nextOffset).toBe(2n);
  });

  it("refuses an append made before the dedupe window began, since its copy may be forgotten", () => {
    const d = new FedDecider(2);
    d.decideRecord(0n, [append("a1", [write("task-1", "any", "one")])]);
    d.decideRecord(1n, [append("a2", [write("task-1", "any", "two")])]);
    // The window holds two ids: a third forgets a1 (decided at offset 0), so the floor is 1.
    d.decideRecord(2n, [append("a3", [write("task-1", "any", "three")], 1n)]);
    const [old, fresh] = d.decideRecord(3n, [
      append("a4", [write("task-1", "any", "four")], 0n),
      append("a5", [write("task-1", "any", "five")], 3n),
    ]);
    // Each of a4 and a5 forgets one more id (a2, then a3): the floor is now 3, and a4 made at
    // 0 is refused, while a5, made after its writer had read the record at offset 2, is not.
    expect(old).toEqual({ kind: "too_old", id: "a4", base: 0n, offset: 3n });
    expect(fresh?.kind).toBe("accepted");
    expect(d.refused).toBe(1);
    expect(d.revision("task-1")).toBe(3n);
  });

  it("applies a multi-stream append all or nothing", async () => {
    const d = new FedDecider();
    d.decideRecord(0n, [append("a1", [write("task-1", "no_stream", "one")])]);
    const [refused] = d.decideRecord(1n, [
      append("a2", [write("task-2", "no_stream", "two"), write("task-1", "no_stream", "three")]),
    ]);
    expect(refused?.kind).toBe("refused");
    expect((refused as Extract<Decision, { kind: "refused" }>).error.streamId).toBe("task-1");
    expect(d.revision("task-2")).toBe("no_stream");
    expect(d.eventCount).toBe(1);

    const [accepted] = d.decideRecord(2n, [
      append("a3", [write("task-2", "no_stream", "two"), write("task-1", 0n, "three", "four")]),
    ]);
    expect(accepted).toEqual({
      kind: "accepted",
      id: "a3",
      results: [
        { nextExpectedRevision: 0n, position: 1n },
        { nextExpectedRevision: 2n, position: 3n },
      ],
    });
    // Two writes to one stream in one append: the second expects what the first leaves.
    const [same] = d.decideRecord(3n, [
      append("a4", [write("task-3", "no_stream", "five"), write("task-3", 0n, "six")]),
    ]);
    expect(same?.kind).toBe("accepted");
    expect(d.revision("task-3")).toBe(1n);
    const [stale] = d.decideRecord(4n, [append("a5", [write("task-3", 1n, "x"), write("task-3", 1n, "y")])]);
    expect(stale?.kind).toBe("refused");
    expect(d.revision("task-3")).toBe(1n);
    await expectChain(d);
  });

  it("moves past offsets with nothing to decide, never backwards", () => {
    const d = new FedDecider();
    d.advanceTo(5n);
    expect(d.nextOffset).toBe(5n);
    d.advanceTo(3n);
    expect(d.nextOffset).toBe(5n);
    expect(d.has(4n)).toBe(true);
    expect(d.decideRecord(4n, [append("a1", [write("task-1", "any", "one")])])).toEqual([]);
    expect(d.decideRecord(5n, [append("a1", [write("task-1", "any", "one")])])[0]?.kind).toBe("accepted");
    expect(d.nextOffset).toBe(6n);
  });

  it("two deciders fed the same records in the same order hold the same log", async () => {
    const records: Array<[bigint, DecodedAppend[]]> = [];
    for (let i = 0; i < 200; i++) {
      const stream = `task-${i % 7}`;
      const other = `task-${(i * 3) % 11}`;
      // A mix of accepted appends, conflicts, multi-stream appends and copies sent again.
      const expected: ExpectedRevision = i % 5 === 0 ? "any" : i % 3 === 0 ? "no_stream" : BigInt(i % 4);
      const appends = [append(`a${i}`, [write(stream, expected, `e${i}`)], BigInt(i))];
      if (i % 4 === 0)
        appends.push(append(`m${i}`, [write(other, "any", `m${i}`), write(stream, "exists", `n${i}`)]));
      if (i % 9 === 0 && i > 0) appends.push(append(`a${i - 1}`, records[i - 1]?.[1][0]?.writes ?? []));
      records.push([BigInt(i * 2), appends]);
    }
    const run = () => {
      const d = new FedDecider(50);
      const decisions = records.flatMap(([offset, appends]) => d.decideRecord(offset, appends));
      return { d, decisions };
    };
    const one = run();
    const two = run();
    expect(two.decisions).toEqual(one.decisions);
    const kinds = new Set(one.decisions.map((x) => x.kind));
    expect(kinds).toEqual(new Set(["accepted", "refused", "duplicate", "too_old"]));
    expect(await two.d.readAll(0n, 10_000)).toEqual(await one.d.readAll(0n, 10_000));
    expect(two.d.lastHash).toBe(one.d.lastHash);
    expect(two.d.lastHash).not.toBe(GENESIS_HASH);
    for (const d of [one.d, two.d]) await expectChain(d);
    for (let s = 0; s < 11; s++) expect(two.d.revision(`task-${s}`)).toEqual(one.d.revision(`task-${s}`));
    expect([two.d.refused, two.d.duplicates, two.d.nextOffset]).toEqual([
      one.d.refused,
      one.d.duplicates,
      one.d.nextOffset,
    ]);
  });
});

describe("checks: streams an append expects and does not write", () => {
  it("are decided with the append's writes, store nothing, and refuse it whole when a stream moved", () => {
    const d = new FedDecider();
    d.decideRecord(0n, [append("a1", [write("task-1", "no_stream", "one")])]);
    const [made, refused] = d.decideRecord(1n, [
      append("a2", [
        write("attempt-1", "no_stream", "two"),
        write("task-1", 0n),
        write("task-9", "no_stream"),
      ]),
      append("a3", [write("attempt-2", "no_stream", "three"), write("task-1", "no_stream")]),
    ]);
    // One result, the write's; the checks made no stream and took no position.
    expect(made).toEqual({
      kind: "accepted",
      id: "a2",
      results: [{ nextExpectedRevision: 0n, position: 1n }],
    });
    expect(refused).toMatchObject({ kind: "refused", error: { streamId: "task-1", actual: 0n } });
    expect(d.revision("task-9")).toBe("no_stream");
    expect(d.revision("attempt-2")).toBe("no_stream");
    expect(d.headPosition()).toBe(1n);
  });

  it("travel in layout 3, which a record without them never takes, and in no other place", () => {
    const head = (v: number, writes: unknown[]) =>
      JSON.stringify({ v, id: "x", base: "0", recordedAt: RECORDED_AT, writes });
    const ev = {
      eventId: "e",
      type: "Note",
      length: 2,
      schemaVersion: 1,
      actor: "a",
      causationId: null,
      correlationId: null,
    };
    const withEvent = { stream: "s", expected: "no_stream", events: [ev] };
    const check = { stream: "c", expected: "3", events: [] };
    const record = (h: string) => Buffer.from(`[${h}]\n{}`);
    const [decoded] = decodeRecord(record(head(3, [withEvent, check])), "7");
    expect(decoded?.writes.map((w) => [w.stream, w.expected, w.events.length])).toEqual([
      ["s", "no_stream", 1],
      ["c", 3n, 0],
    ]);
    // A check in layout 2 (a writer that cannot have made it), first, or before a write of events.
    for (const bad of [head(2, [withEvent, check]), head(3, [check, withEvent]), head(3, [check])])
      expect(() => decodeRecord(record(bad), "8")).toThrow(ForeignRecordError);
    // A layout of a later version names itself, and what to do.
    expect(() => decodeRecord(record(head(4, [withEvent])), "9")).toThrow(
      "record at offset 9 is not a Chronolog append: written in layout 4 by a newer Chronolog, which this version (layouts 2 and 3) does not read: upgrade this client",
    );
  });
});
