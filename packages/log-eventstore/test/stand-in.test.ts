import { EventStoreStandIn } from "@chronolog/log-eventstore/stand-in";
import {
  BACKWARDS,
  END,
  EventStoreDBClient,
  jsonEvent,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
} from "@eventstore/db-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The stand-in against the client library directly: every call and answer the backend relies
 * on, in the client's own terms, through both append calls.
 */
describe.each([true, false])("the stand-in (BatchAppend listed: %s)", (batchAppend) => {
  let server: EventStoreStandIn;
  let client: EventStoreDBClient;
  const ev = (n: number) => jsonEvent({ type: "Thing", data: { n } });

  beforeAll(async () => {
    server = await EventStoreStandIn.start({ batchAppend });
    client = EventStoreDBClient.connectionString(server.url);
  });
  afterAll(async () => {
    await client.dispose();
    await server.stop();
  });

  it("appends with each expected revision, and answers WrongExpectedVersion", async () => {
    expect(
      (await client.appendToStream("a", [ev(0), ev(1)], { expectedRevision: NO_STREAM }))
        .nextExpectedRevision,
    ).toBe(1n);
    expect((await client.appendToStream("a", ev(2), { expectedRevision: 1n })).nextExpectedRevision).toBe(2n);
    expect(
      (await client.appendToStream("a", ev(3), { expectedRevision: STREAM_EXISTS })).nextExpectedRevision,
    ).toBe(3n);
    expect((await client.appendToStream("a", ev(4))).nextExpectedRevision).toBe(4n);
    const stale = await client.appendToStream("a", ev(5), { expectedRevision: 2n }).catch((e) => e);
    expect(stale).toBeInstanceOf(WrongExpectedVersionError);
    expect(stale).toMatchObject({ streamName: "a", expectedVersion: 2n, actualVersion: 4n });
    const missing = await client
      .appendToStream("b", ev(0), { expectedRevision: STREAM_EXISTS })
      .catch((e) => e);
    expect(missing).toBeInstanceOf(WrongExpectedVersionError);
    expect(batchAppend ? server.counts.batchAppends : server.counts.appends).toBeGreaterThanOrEqual(6);
  });

  it("the same events sent again with the same expectation succeed without a second copy", async () => {
    const events = [ev(10), ev(11)];
    await client.appendToStream("c", events, { expectedRevision: NO_STREAM });
    const again = await client.appendToStream("c", events, { expectedRevision: NO_STREAM });
    expect(again.nextExpectedRevision).toBe(1n);
    expect(server.events("c").length).toBe(2);
    expect(server.counts.idempotent).toBe(1);
  });

  it("reads a stream forwards and backwards, and a missing one is StreamNotFound", async () => {
    const revs = async (it: AsyncIterable<{ event?: { revision: bigint } }>) => {
      const out: bigint[] = [];
      for await (const r of it) out.push(r.event?.revision as bigint);
      return out;
    };
    expect(await revs(client.readStream("a", { fromRevision: 2n, maxCount: 2 }))).toEqual([2n, 3n]);
    expect(
      await revs(client.readStream("a", { direction: BACKWARDS, fromRevision: END, maxCount: 3 })),
    ).toEqual([4n, 3n, 2n]);
    const missing = await revs(client.readStream("nothing-here")).catch((e) => e);
    expect(missing).toBeInstanceOf(StreamNotFoundError);
  });

  it("reads $all forwards and backwards, with increasing commit positions", async () => {
    const forwards: Array<{ stream: string; commit: bigint }> = [];
    for await (const r of client.readAll({ fromPosition: START, maxCount: 100 }))
      forwards.push({ stream: r.event?.streamId as string, commit: r.event?.position?.commit as bigint });
    expect(forwards.length).toBe(server.size);
    for (let i = 1; i < forwards.length; i++)
      expect((forwards[i] as { commit: bigint }).commit).toBeGreaterThan(
        (forwards[i - 1] as { commit: bigint }).commit,
      );
    const backwards: string[] = [];
    for await (const r of client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 2 }))
      backwards.push(`${r.event?.streamId}:${r.event?.revision}`);
    expect(backwards).toEqual(["c:1", "c:0"]);
  });

  it("a catch-up subscription: confirmation, the events so far, caught up, then live", async () => {
    const seen: bigint[] = [];
    const sub = client.subscribeToStream("d", { fromRevision: START });
    let caughtUp = false;
    let confirmed = false;
    sub.on("confirmation", () => {
      confirmed = true;
    });
    sub.on("caughtUp", () => {
      caughtUp = true;
    });
    sub.on("data", (r) => seen.push(r.event?.revision as bigint));
    await client.appendToStream("d", [ev(0), ev(1)]);
    const all = client.subscribeToAll({ fromPosition: START });
    const allSeen: string[] = [];
    all.on("data", (r) => {
      if (r.event?.streamId === "d") allSeen.push(String(r.event.revision));
    });
    await waitFor(() => seen.length === 2 && allSeen.length === 2);
    await client.appendToStream("d", ev(2));
    await waitFor(() => seen.length === 3 && allSeen.length === 3);
    expect(seen).toEqual([0n, 1n, 2n]);
    expect(confirmed && caughtUp).toBe(true);
    // From a revision: what comes after it.
    const after: bigint[] = [];
    const from = client.subscribeToStream("d", { fromRevision: 0n });
    from.on("data", (r) => after.push(r.event?.revision as bigint));
    await waitFor(() => after.length === 2);
    expect(after).toEqual([1n, 2n]);
    await Promise.all([sub.unsubscribe(), all.unsubscribe(), from.unsubscribe()]);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}
