import { randomUUID } from "node:crypto";
import { ValidationError } from "@chronolog/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  InvalidAppendError,
  InvalidExpectedRevisionError,
  InvalidStreamNameError,
  LogMovedError,
  WrongExpectedRevisionError,
} from "../errors.js";
import type { EventLog } from "../event-log.js";
import type { NewEvent, RecordedEvent } from "../types.js";

/**
 * What a backend gives the contract suite. Every test isolates itself with unique stream
 * names, so one harness (one file, one broker) can serve the whole suite.
 */
export interface ContractHarness {
  /** The log the suite writes to. */
  readonly log: EventLog;
  /** Another client of the same log, as a second process would have. */
  openAnother(): Promise<EventLog>;
  close(): Promise<void>;
}

export type HarnessFactory = () => Promise<ContractHarness>;

const note = (text: string, extra: Record<string, unknown> = {}): NewEvent => ({
  type: "Note",
  data: { text, ...extra },
});

let counter = 0;
const uniqueStream = (label: string) => `contract-${label}.${randomUUID().slice(0, 8)}.${++counter}`;

async function collect(log: EventLog, streams: Set<string>, fromPosition: bigint, until: number) {
  const seen: RecordedEvent[] = [];
  const sub = log.subscribe(
    (e) => {
      if (streams.has(e.streamId)) seen.push(e);
    },
    { fromPosition },
  );
  await waitFor(() => seen.length >= until);
  return { seen, sub };
}

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > timeoutMs) throw new Error("timed out waiting for condition");
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The log contract: every backend passes this suite unchanged. */
export function logContractSuite(backendName: string, factory: HarnessFactory): void {
  describe(`log contract: ${backendName}`, () => {
    let h: ContractHarness;
    let other: EventLog;
    beforeAll(async () => {
      h = await factory();
      other = await h.openAnother();
    });
    afterAll(async () => {
      await other?.close();
      await h?.close();
    });

    describe("append and read", () => {
      it("numbers a stream's events from revision 0 and fills metadata", async () => {
        const s = uniqueStream("basic");
        const r = await h.log.append(s, [note("a"), note("b"), note("c")], { expectedRevision: "no_stream" });
        expect(r.nextExpectedRevision).toBe(2n);
        const events = await h.log.readStream(s);
        expect(events.map((e) => e.revision)).toEqual([0n, 1n, 2n]);
        expect(events.map((e) => (e.data as { text: string }).text)).toEqual(["a", "b", "c"]);
        expect(events.at(-1)?.position).toBe(r.position);
        for (const e of events) {
          expect(e.streamId).toBe(s);
          expect(e.type).toBe("Note");
          expect(e.metadata.eventId).toMatch(/^[0-9a-f-]{36}$/);
          expect(e.metadata.schemaVersion).toBe(1);
          expect(Number.isNaN(Date.parse(e.metadata.recordedAt))).toBe(false);
          expect(e.metadata.hash).toMatch(/^[0-9a-f]{64}$/);
        }
      });

      it("keeps the writer's metadata: actor, causation and correlation ids, event id", async () => {
        const s = uniqueStream("meta");
        const eventId = randomUUID();
        await h.log.append(
          s,
          [
            {
              ...note("m"),
              metadata: { eventId, actor: "test:actor", causationId: "c-1", correlationId: "k-1" },
            },
          ],
          { expectedRevision: "any" },
        );
        const [e] = await h.log.readStream(s);
        expect(e?.metadata).toMatchObject({
          eventId,
          actor: "test:actor",
          causationId: "c-1",
          correlationId: "k-1",
        });
      });

      it("orders positions by commit across streams and reads all from a position", async () => {
        const a = uniqueStream("order-a");
        const b = uniqueStream("order-b");
        const r1 = await h.log.append(a, [note("a1")], { expectedRevision: "no_stream" });
        const r2 = await h.log.append(b, [note("b1"), note("b2")], { expectedRevision: "no_stream" });
        const r3 = await h.log.append(a, [note("a2")], { expectedRevision: 0n });
        expect(r1.position < r2.position && r2.position < r3.position).toBe(true);
        const all = await readAllFrom(h.log, r1.position, new Set([a, b]));
        expect(all.map((e) => (e.data as { text: string }).text)).toEqual(["a1", "b1", "b2", "a2"]);
        const positions = all.map((e) => e.position);
        expect([...positions].sort((x, y) => (x < y ? -1 : 1))).toEqual(positions);
        const fromMiddle = await readAllFrom(h.log, r2.position, new Set([a, b]));
        expect(fromMiddle.map((e) => (e.data as { text: string }).text)).toEqual(["b2", "a2"]);
      });

      it("reads a stream from a revision with a maximum count", async () => {
        const s = uniqueStream("page");
        await h.log.append(
          s,
          Array.from({ length: 10 }, (_, i) => note(`e${i}`)),
          { expectedRevision: "no_stream" },
        );
        const page = await h.log.readStream(s, { fromRevision: 3n, maxCount: 4 });
        expect(page.map((e) => e.revision)).toEqual([3n, 4n, 5n, 6n]);
        expect(await h.log.readStream(s, { fromRevision: 10n })).toEqual([]);
        expect(await h.log.readStream(uniqueStream("none"))).toEqual([]);
      });

      it("reads its own writes at once, from this client and another", async () => {
        const s = uniqueStream("ryw");
        for (let i = 0; i < 5; i++) {
          const r = await h.log.append(s, [note(`w${i}`)], {
            expectedRevision: i === 0 ? "no_stream" : BigInt(i - 1),
          });
          expect(await h.log.streamRevision(s)).toBe(r.nextExpectedRevision);
          expect((await h.log.readStream(s)).length).toBe(i + 1);
          expect(await other.streamRevision(s)).toBe(r.nextExpectedRevision);
          expect(await h.log.headPosition()).toBeGreaterThanOrEqual(r.position);
        }
        expect((await other.readStream(s)).length).toBe(5);
      });
    });

    describe("expected revision", () => {
      it("no_stream: succeeds on a new stream, fails on an existing one", async () => {
        const s = uniqueStream("ns");
        await h.log.append(s, [note("1")], { expectedRevision: "no_stream" });
        const err = await h.log.append(s, [note("2")], { expectedRevision: "no_stream" }).catch((e) => e);
        expect(err).toBeInstanceOf(WrongExpectedRevisionError);
        expect(err).toMatchObject({
          type: "wrong_expected_revision",
          streamId: s,
          expected: "no_stream",
          actual: 0n,
        });
      });

      it("exists: fails on a new stream, succeeds on an existing one", async () => {
        const s = uniqueStream("ex");
        const err = await h.log.append(s, [note("1")], { expectedRevision: "exists" }).catch((e) => e);
        expect(err).toBeInstanceOf(WrongExpectedRevisionError);
        expect(err).toMatchObject({ expected: "exists", actual: "no_stream" });
        expect(await h.log.readStream(s)).toEqual([]);
        await h.log.append(s, [note("1")], { expectedRevision: "any" });
        const r = await h.log.append(s, [note("2")], { expectedRevision: "exists" });
        expect(r.nextExpectedRevision).toBe(1n);
      });

      it("a revision: succeeds when it matches, fails when stale or ahead", async () => {
        const s = uniqueStream("rev");
        await h.log.append(s, [note("1"), note("2")], { expectedRevision: "no_stream" });
        const stale = await h.log.append(s, [note("x")], { expectedRevision: 0n }).catch((e) => e);
        expect(stale).toMatchObject({ type: "wrong_expected_revision", expected: 0n, actual: 1n });
        const ahead = await h.log.append(s, [note("x")], { expectedRevision: 5n }).catch((e) => e);
        expect(ahead).toMatchObject({ type: "wrong_expected_revision", expected: 5n, actual: 1n });
        const onNew = await h.log
          .append(uniqueStream("rev-new"), [note("x")], { expectedRevision: 0n })
          .catch((e) => e);
        expect(onNew).toMatchObject({ type: "wrong_expected_revision", expected: 0n, actual: "no_stream" });
        const ok = await h.log.append(s, [note("3")], { expectedRevision: 1n });
        expect(ok.nextExpectedRevision).toBe(2n);
        expect((await h.log.readStream(s)).length).toBe(3);
      });

      it("any: always succeeds", async () => {
        const s = uniqueStream("any");
        await h.log.append(s, [note("1")], { expectedRevision: "any" });
        const r = await h.log.append(s, [note("2")], { expectedRevision: "any" });
        expect(r.nextExpectedRevision).toBe(1n);
      });

      it("concurrent appenders racing for the same revision: exactly one wins", async () => {
        const s = uniqueStream("race");
        await h.log.append(s, [note("base")], { expectedRevision: "no_stream" });
        const attempts = Array.from({ length: 24 }, (_, i) =>
          (i % 2 === 0 ? h.log : other).append(s, [note(`racer-${i}`), note(`racer-${i}-b`)], {
            expectedRevision: 0n,
          }),
        );
        const results = await Promise.allSettled(attempts);
        const won = results.filter((r) => r.status === "fulfilled");
        const lost = results.filter((r) => r.status === "rejected");
        expect(won.length).toBe(1);
        for (const r of lost)
          expect((r as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
        const events = await h.log.readStream(s);
        expect(events.length).toBe(3);
        const texts = events.map((e) => (e.data as { text: string }).text);
        // The winner's two events are adjacent: no loser's event slipped in between.
        expect(texts[2]).toBe(`${texts[1]}-b`);
      });

      it("concurrent appenders at 'no_stream' creating one stream: exactly one wins", async () => {
        const s = uniqueStream("race-new");
        const results = await Promise.allSettled(
          Array.from({ length: 10 }, (_, i) =>
            (i % 2 === 0 ? h.log : other).append(s, [note(`c${i}`)], { expectedRevision: "no_stream" }),
          ),
        );
        expect(results.filter((r) => r.status === "fulfilled").length).toBe(1);
        expect((await h.log.readStream(s)).length).toBe(1);
      });
    });

    describe("atomicity", () => {
      it("an append whose expected revision fails writes none of its events", async () => {
        const s = uniqueStream("atomic-cas");
        await h.log.append(s, [note("1")], { expectedRevision: "no_stream" });
        await h.log.append(s, [note("a"), note("b"), note("c")], { expectedRevision: 7n }).catch(() => {});
        expect((await h.log.readStream(s)).length).toBe(1);
      });

      it("readers see a multi-event append whole or not at all", async () => {
        const s = uniqueStream("atomic-read");
        const sizes = new Set<number>();
        let writing = true;
        const reader = (async () => {
          while (writing) {
            sizes.add((await other.readStream(s)).length % 25);
            await new Promise((r) => setImmediate(r));
          }
        })();
        let expected: bigint | "no_stream" = "no_stream";
        for (let i = 0; i < 20; i++) {
          const r = await h.log.append(
            s,
            Array.from({ length: 25 }, (_, j) => note(`${i}.${j}`)),
            { expectedRevision: expected },
          );
          expected = r.nextExpectedRevision;
        }
        writing = false;
        await reader;
        expect([...sizes]).toEqual([0]);
        const events = await h.log.readStream(s);
        expect(events.length).toBe(500);
        expect(events.map((e) => e.revision)).toEqual(Array.from({ length: 500 }, (_, i) => BigInt(i)));
      });

      it("concurrent appends to many streams all land, each stream gapless", async () => {
        const streams = Array.from({ length: 20 }, (_, i) => uniqueStream(`many-${i}`));
        await Promise.all(
          streams.flatMap((s) => [
            h.log.append(s, [note("1"), note("2")], { expectedRevision: "any" }),
            other.append(s, [note("3")], { expectedRevision: "any" }),
          ]),
        );
        for (const s of streams) {
          const events = await h.log.readStream(s);
          expect(events.map((e) => e.revision)).toEqual([0n, 1n, 2n]);
        }
      });
    });

    describe("atomic appends to several streams", () => {
      it("writes every stream or, on one conflict, none", async () => {
        const a = uniqueStream("many-a");
        const b = uniqueStream("many-b");
        await h.log.append(b, [note("b0")], { expectedRevision: "no_stream" });
        const results = await h.log.appendMany([
          { streamId: a, events: [note("a0"), note("a1")], expectedRevision: "no_stream" },
          { streamId: b, events: [note("b1")], expectedRevision: 0n },
        ]);
        expect(results.map((r) => r.nextExpectedRevision)).toEqual([1n, 1n]);
        expect(
          (results[0] as { position: bigint }).position < (results[1] as { position: bigint }).position,
        ).toBe(true);
        const err = await h.log
          .appendMany([
            { streamId: a, events: [note("a2")], expectedRevision: 1n },
            { streamId: b, events: [note("b2")], expectedRevision: 0n },
          ])
          .catch((e) => e);
        expect(err).toBeInstanceOf(WrongExpectedRevisionError);
        expect(err).toMatchObject({ streamId: b, expected: 0n, actual: 1n });
        expect((await h.log.readStream(a)).length).toBe(2);
        expect((await other.readStream(b)).length).toBe(2);
        const bad = await h.log
          .appendMany([
            { streamId: a, events: [note("ok")], expectedRevision: 1n },
            { streamId: b, events: [{ type: "Nope", data: {} }], expectedRevision: 1n },
          ])
          .catch((e) => e);
        expect(bad.type).toBe("unknown_event_type");
        expect((await h.log.readStream(a)).length).toBe(2);
      });
    });

    describe("checks: streams expected at a revision and not written", () => {
      it("make the append when they hold, refuse it whole when one moved, and write nothing there", async () => {
        const a = uniqueStream("check-a");
        const idle = uniqueStream("check-idle");
        const gone = uniqueStream("check-never");
        await h.log.append(idle, [note("i0")], { expectedRevision: "no_stream" });
        const head = await h.log.headPosition();
        const [made] = await h.log.appendMany(
          [{ streamId: a, events: [note("a0")], expectedRevision: "no_stream" }],
          {
            checks: [
              { streamId: idle, expectedRevision: 0n },
              { streamId: gone, expectedRevision: "no_stream" },
            ],
          },
        );
        // One result, the write's: the checks wrote nothing, made no stream and took no position.
        expect(made).toMatchObject({ nextExpectedRevision: 0n, position: head + 1n });
        expect(await h.log.streamRevision(gone)).toBe("no_stream");
        expect(await h.log.streamRevision(idle)).toBe(0n);
        expect(await h.log.headPosition()).toBe(head + 1n);
        // Another client writes the checked stream: the next append on that check is refused whole.
        await other.append(idle, [note("i1")], { expectedRevision: 0n });
        const err = await h.log
          .appendMany([{ streamId: a, events: [note("a1")], expectedRevision: 0n }], {
            checks: [{ streamId: idle, expectedRevision: 0n }],
          })
          .catch((e) => e);
        expect(err).toBeInstanceOf(WrongExpectedRevisionError);
        expect(err).toMatchObject({ streamId: idle, expected: 0n, actual: 1n });
        expect((await h.log.readStream(a)).length).toBe(1);
        // A check of a stream written since it was expected absent refuses too.
        await other.append(gone, [note("g0")], { expectedRevision: "no_stream" });
        const absent = await h.log
          .appendMany([{ streamId: a, events: [note("a1")], expectedRevision: 0n }], {
            checks: [{ streamId: gone, expectedRevision: "no_stream" }],
          })
          .catch((e) => e);
        expect(absent).toMatchObject({ streamId: gone, expected: "no_stream", actual: 0n });
        // A stream both written and checked, or checked twice, is refused before anything is sent.
        for (const checks of [
          [{ streamId: a, expectedRevision: 0n }],
          [
            { streamId: idle, expectedRevision: 1n },
            { streamId: idle, expectedRevision: 1n },
          ],
        ] as const) {
          const twice = await h.log
            .appendMany([{ streamId: a, events: [note("a1")], expectedRevision: 0n }], { checks })
            .catch((e) => e);
          expect(twice).toBeInstanceOf(InvalidAppendError);
        }
        expect((await h.log.readStream(a)).length).toBe(1);
        // Every client reads the same log: the refused appends are in no one's.
        expect((await other.readStream(a)).map((e) => e.revision)).toEqual([0n]);
        const [last] = await h.log.appendMany([{ streamId: a, events: [note("a1")], expectedRevision: 0n }], {
          checks: [
            { streamId: idle, expectedRevision: 1n },
            { streamId: gone, expectedRevision: 0n },
          ],
        });
        expect(last?.nextExpectedRevision).toBe(1n);
      });

      it("leave the stream they check as it is for the appends made beside them", async () => {
        const a = uniqueStream("check-beside-a");
        const absent = uniqueStream("check-beside-absent");
        const kept = uniqueStream("check-beside-kept");
        await h.log.append(kept, [note("k0")], { expectedRevision: "no_stream" });
        // In one group commit or batch, where the backend makes one: a check, then appends to the
        // streams it checked, expecting them as the check found them.
        const [checked, created, moved] = await Promise.all([
          h.log.append(a, [note("a0")], {
            expectedRevision: "no_stream",
            checks: [
              { streamId: absent, expectedRevision: "no_stream" },
              { streamId: kept, expectedRevision: "exists" },
            ],
          }),
          h.log.append(absent, [note("x0")], { expectedRevision: "no_stream" }),
          h.log.append(kept, [note("k1")], { expectedRevision: 0n }),
        ]);
        expect(checked.nextExpectedRevision).toBe(0n);
        expect(created.nextExpectedRevision).toBe(0n);
        expect(moved.nextExpectedRevision).toBe(1n);
        // A check of a stream that does not exist, expecting it to, refuses without making it.
        const none = uniqueStream("check-beside-none");
        const err = await h.log
          .append(a, [note("a1")], {
            expectedRevision: 0n,
            checks: [{ streamId: none, expectedRevision: "exists" }],
          })
          .catch((e) => e);
        expect(err).toMatchObject({ streamId: none, expected: "exists", actual: "no_stream" });
        expect(await h.log.streamRevision(none)).toBe("no_stream");
        expect(await other.streamRevision(none)).toBe("no_stream");
      });
    });

    describe("appends conditional on the log's head (where the backend offers them)", () => {
      it("are made while nothing was written since that position, and refused once anything was", async () => {
        const a = uniqueStream("head-a");
        const b = uniqueStream("head-b");
        if (!h.log.supportsExpectedHead) {
          const err = await h.log
            .appendMany([{ streamId: a, events: [note("a0")], expectedRevision: "no_stream" }], {
              expectedHead: await h.log.headPosition(),
            })
            .catch((e) => e);
          expect(err).toBeInstanceOf(InvalidAppendError);
          expect(await h.log.readStream(a)).toEqual([]);
          return;
        }
        const head = await h.log.headPosition();
        const [made] = await h.log.appendMany(
          [{ streamId: a, events: [note("a0"), note("a1")], expectedRevision: "no_stream" }],
          { expectedHead: head },
        );
        expect(made?.position).toBe(head + 2n);
        // Written since (by another client, here): the same condition no longer holds.
        await other.append(b, [note("b0")], { expectedRevision: "no_stream" });
        const err = await h.log
          .appendMany([{ streamId: a, events: [note("a2")], expectedRevision: 1n }], {
            expectedHead: head + 2n,
          })
          .catch((e) => e);
        expect(err).toBeInstanceOf(LogMovedError);
        expect(err).toMatchObject({ expected: head + 2n, actual: head + 3n });
        expect((await h.log.readStream(a)).length).toBe(2);
        // Two appends on the same condition at once: the first is made, the second refused.
        const now = await h.log.headPosition();
        const [first, second] = await Promise.allSettled([
          h.log.appendMany([{ streamId: a, events: [note("a2")], expectedRevision: 1n }], {
            expectedHead: now,
          }),
          h.log.appendMany([{ streamId: b, events: [note("b1")], expectedRevision: 0n }], {
            expectedHead: now,
          }),
        ]);
        expect(first.status).toBe("fulfilled");
        expect(second.status === "rejected" && second.reason).toBeInstanceOf(LogMovedError);
        expect((await h.log.readStream(b)).length).toBe(1);
        const bad = await h.log
          .appendMany([{ streamId: a, events: [note("a3")], expectedRevision: 2n }], { expectedHead: -2n })
          .catch((e) => e);
        expect(bad).toBeInstanceOf(InvalidAppendError);
      });
    });

    describe("bad input is refused with a typed error and writes nothing", () => {
      it("an event that fails its schema", async () => {
        const s = uniqueStream("bad-schema");
        const err = await h.log
          .append(s, [note("ok"), { type: "TaskPaused", data: { key: { project: "p" } } }], {
            expectedRevision: "any",
          })
          .catch((e) => e);
        expect(err).toBeInstanceOf(ValidationError);
        expect(err.type).toBe("validation");
        expect(err.message).toContain("events[1] (TaskPaused)");
        expect(err.message).toContain("data.key.account");
        expect(await h.log.readStream(s)).toEqual([]);
      });

      it("an unknown event type", async () => {
        const s = uniqueStream("bad-type");
        const err = await h.log
          .append(s, [{ type: "Nope", data: {} }], { expectedRevision: "any" })
          .catch((e) => e);
        expect(err.type).toBe("unknown_event_type");
        expect(await h.log.readStream(s)).toEqual([]);
      });

      it("a malformed stream name", async () => {
        for (const bad of [
          "",
          "nocategory",
          "Upper-case",
          "has space-x",
          "-x",
          "x-",
          "a-b\nc",
          "$all-x",
          42,
        ]) {
          const err = await h.log
            .append(bad as string, [note("x")], { expectedRevision: "any" })
            .catch((e) => e);
          expect(err, String(bad)).toBeInstanceOf(InvalidStreamNameError);
        }
      });

      it("an expected revision of the wrong type", async () => {
        const s = uniqueStream("bad-rev");
        for (const bad of [3, "3", null, undefined, -1n, "latest", {}]) {
          const err = await h.log.append(s, [note("x")], { expectedRevision: bad as never }).catch((e) => e);
          expect(err, String(bad)).toBeInstanceOf(InvalidExpectedRevisionError);
          expect(err.type).toBe("invalid_expected_revision");
        }
        expect(await h.log.readStream(s)).toEqual([]);
      });

      it("an empty append and bad metadata", async () => {
        const s = uniqueStream("bad-empty");
        expect(await h.log.append(s, [], { expectedRevision: "any" }).catch((e) => e)).toBeInstanceOf(
          InvalidAppendError,
        );
        const badMeta = await h.log
          .append(s, [{ ...note("x"), metadata: { eventId: "not-a-uuid" } }], { expectedRevision: "any" })
          .catch((e) => e);
        expect(badMeta).toBeInstanceOf(ValidationError);
        expect(badMeta.message).toContain("metadata.eventId");
        expect(await h.log.readStream(s)).toEqual([]);
      });
    });

    describe("subscriptions", () => {
      it("catch up, then follow live appends", async () => {
        const s = uniqueStream("sub");
        const first = await h.log.append(s, [note("0"), note("1"), note("2")], {
          expectedRevision: "no_stream",
        });
        const { seen, sub } = await collect(h.log, new Set([s]), first.position - 2n, 3);
        await sub.caughtUp;
        await h.log.append(s, [note("3")], { expectedRevision: 2n });
        await other.append(s, [note("4"), note("5")], { expectedRevision: 3n });
        await waitFor(() => seen.length >= 6);
        await sub.close();
        expect(seen.map((e) => (e.data as { text: string }).text)).toEqual(["0", "1", "2", "3", "4", "5"]);
      });

      it("a subscription on another client sees appends from this one", async () => {
        const s = uniqueStream("sub-other");
        const head = await h.log.headPosition();
        const seen: RecordedEvent[] = [];
        const sub = other.subscribe((e) => void (e.streamId === s && seen.push(e)), {
          fromPosition: head + 1n,
        });
        await sub.caughtUp;
        await h.log.append(s, [note("x")], { expectedRevision: "no_stream" });
        await waitFor(() => seen.length === 1);
        await sub.close();
      });

      it("resumes from a saved position with no gap and no duplicate", async () => {
        const s = uniqueStream("resume");
        const start = await h.log.append(s, [note("0")], { expectedRevision: "no_stream" });
        const seen: string[] = [];
        let sub = h.log.subscribe(
          (e) => void (e.streamId === s && seen.push((e.data as { text: string }).text)),
          {
            fromPosition: start.position,
          },
        );
        let revision = 0n;
        for (let i = 1; i <= 5; i++) {
          revision = (await h.log.append(s, [note(String(i))], { expectedRevision: revision }))
            .nextExpectedRevision;
        }
        await waitFor(() => seen.length === 6);
        await sub.close();
        const saved = sub.nextPosition;
        for (let i = 6; i <= 10; i++) {
          revision = (await h.log.append(s, [note(String(i))], { expectedRevision: revision }))
            .nextExpectedRevision;
        }
        sub = other.subscribe(
          (e) => void (e.streamId === s && seen.push((e.data as { text: string }).text)),
          {
            fromPosition: saved,
          },
        );
        for (let i = 11; i <= 15; i++) {
          revision = (await h.log.append(s, [note(String(i))], { expectedRevision: revision }))
            .nextExpectedRevision;
        }
        await waitFor(() => seen.length === 16);
        await new Promise((r) => setTimeout(r, 50));
        await sub.close();
        expect(seen).toEqual(Array.from({ length: 16 }, (_, i) => String(i)));
      });

      it("a handler that throws ends the subscription with its error", async () => {
        const s = uniqueStream("sub-throw");
        const r = await h.log.append(s, [note("boom")], { expectedRevision: "no_stream" });
        const sub = h.log.subscribe(
          (e) => {
            if (e.streamId === s) throw new Error("handler failed");
          },
          { fromPosition: r.position },
        );
        await expect(sub.done).rejects.toThrow("handler failed");
      });
    });

    describe("tamper evidence", () => {
      it("the hash chain verifies over the whole log", async () => {
        await h.log.append(uniqueStream("chain"), [note("x")], { expectedRevision: "any" });
        const result = await h.log.verify();
        expect(result.break).toBeNull();
        expect(result.checked).toBeGreaterThan(0);
      });
    });
  });
}

async function readAllFrom(log: EventLog, from: bigint, streams: Set<string>): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  let position = from;
  for (;;) {
    const page = await log.readAll({ fromPosition: position, maxCount: 500 });
    if (page.length === 0) return out;
    for (const e of page) if (streams.has(e.streamId)) out.push(e);
    position = (page.at(-1) as RecordedEvent).position + 1n;
  }
}
