import { rmSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { type Api, openApi, SseClient, writeNotes } from "./events-support.js";

/**
 * `GET /api/v1/events` against a real server on loopback: resuming with Last-Event-ID while the
 * log is written, a client too slow to keep up, a replay from the start, and a missing token.
 */
let open: Api[] = [];
let clients: SseClient[] = [];
afterEach(async () => {
  for (const c of clients) c.close();
  clients = [];
  for (const a of open) {
    await a.server.close();
    await a.log.close();
    rmSync(a.dir, { recursive: true, force: true });
  }
  open = [];
});

async function api(options: { sseMaxLag?: number } = {}): Promise<Api> {
  const a = await openApi(options);
  open.push(a);
  return a;
}

function connect(a: Api, query = "", headers: Record<string, string> = {}, stalled = false): SseClient {
  const c = new SseClient(
    `${a.server.url}/api/v1/events${query}`,
    { authorization: `Bearer ${a.token}`, ...headers },
    { stalled },
  );
  clients.push(c);
  return c;
}

/** Checks that `positions` run from `first` one by one, with no gap and no repeat. */
function expectConsecutive(positions: readonly bigint[], first: bigint): void {
  const bad = positions.findIndex((p, i) => p !== first + BigInt(i));
  expect(
    bad,
    bad < 0 ? "" : `position ${positions[bad]} at index ${bad}, expected ${first + BigInt(bad)}`,
  ).toBe(-1);
}

describe("GET /api/v1/events", () => {
  it("a client that reconnects with Last-Event-ID while 10,000 events are written gets each once, in order", async () => {
    const a = await api();
    const TOTAL = 10_000;
    const first = a.server.state.head.position + 1n;
    const last = first + BigInt(TOTAL) - 1n;
    // Disconnect points: at least 3, at random counts of events received.
    const cuts = Array.from({ length: 4 }, () => 500 + Math.floor(Math.random() * (TOTAL - 1000))).sort(
      (x, y) => x - y,
    );
    const received: bigint[] = [];
    let client = connect(a, `?from=${first}`);
    expect(await client.opened).toBe(200);
    const writer = writeNotes(a.log, TOTAL, { batch: 25, streams: 3 });
    let reconnects = 0;
    for (const cut of cuts) {
      const c = client;
      await c.until(() => received.length + c.positions().length >= cut, 30_000, `${cut} events`);
      c.close();
      received.push(...c.positions());
      const lastId = c.lastId() ?? String(first - 1n);
      client = connect(a, "", { "last-event-id": lastId });
      expect(await client.opened).toBe(200);
      reconnects += 1;
    }
    const c = client;
    await c.until(() => c.positions().at(-1) === last, 30_000, `position ${last}`);
    await writer;
    received.push(...c.positions());
    expect(reconnects).toBeGreaterThanOrEqual(3);
    expect(received.length).toBe(TOTAL);
    expectConsecutive(received, first);
    // Every event is a Note, with its data whole.
    const notes = [...clients.flatMap((k) => k.frames)].filter((f) => f.event === "Note");
    expect(notes.length).toBeGreaterThanOrEqual(TOTAL);
    const seq = JSON.parse(c.frames.at(-1)?.data ?? "{}").data?.seq;
    expect(typeof seq).toBe("number");
  }, 120_000);

  it("a client that stops reading does not hold the writer back and is dropped, saying why", async () => {
    const MAX_LAG = 200;
    const a = await api({ sseMaxLag: MAX_LAG });
    // Large events, so the stalled client's socket buffers fill well before the writer ends.
    const text = "x".repeat(8192);
    const TOTAL = 3000;
    const first = a.server.state.head.position + 1n;
    const last = first + BigInt(TOTAL) - 1n;
    const stalled = connect(a, `?from=${first}`, {}, true);
    const live = connect(a, `?from=${first}`);
    expect(await stalled.opened).toBe(200);
    expect(await live.opened).toBe(200);
    // The live client keeps up while the writer writes: sample how far behind it is.
    const lags: bigint[] = [];
    const sampler = setInterval(() => {
      const got = live.positions().at(-1) ?? first - 1n;
      lags.push(a.server.state.head.position - got);
    }, 20);
    const t0 = performance.now();
    await writeNotes(a.log, TOTAL, { batch: 10, streams: 2, text });
    const writerMs = performance.now() - t0;
    const writtenAt = performance.now();
    await live.until(() => live.positions().at(-1) === last, 10_000, `position ${last} on the live client`);
    const liveTrailMs = performance.now() - writtenAt;
    clearInterval(sampler);
    expect(writerMs).toBeLessThan(30_000);
    // The live client had everything soon after the writer's last append, in order.
    expect(liveTrailMs).toBeLessThan(2000);
    expectConsecutive(live.positions(), first);
    expect(live.frames.some((f) => f.event === "dropped")).toBe(false);
    // It never fell far behind while the stalled client sat there.
    lags.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    expect(Number(lags[Math.floor(lags.length * 0.9)] ?? 0n)).toBeLessThan(TOTAL / 2);

    // The stalled client, once it reads, gets what the server had queued for it, then
    // `dropped` with the reason, and the server ends the stream.
    stalled.resume();
    await stalled.until(() => stalled.ended, 10_000, "the end of the stalled client's stream");
    const positions = stalled.positions();
    expect(positions.length).toBeGreaterThan(0);
    expect(positions.length).toBeLessThan(TOTAL);
    expectConsecutive(positions, first);
    const lastFrame = stalled.frames.at(-1);
    expect(lastFrame?.event).toBe("dropped");
    const dropped = JSON.parse(lastFrame?.data ?? "{}");
    expect(dropped.reason).toMatch(/behind the log \(the limit is 200\)/);
    // What it says to resume from is right after the last event the client got.
    const lastGot = positions.at(-1) as bigint;
    expect(dropped.next).toBe(String(lastGot + 1n));
    expect(dropped.reason).toContain(`Last-Event-ID ${lastGot}`);

    // Resuming where it says gets the rest, once each.
    const again = connect(a, "", { "last-event-id": String(lastGot) });
    await again.until(() => again.positions().at(-1) === last, 20_000, `position ${last} on resuming`);
    expectConsecutive([...positions, ...again.positions()], first);
  }, 120_000);

  it("?from=0 replays the log from its start, then follows it live", async () => {
    const a = await api();
    const head = await writeNotes(a.log, 300, { batch: 7 });
    const c = connect(a, "?from=0");
    expect(await c.opened).toBe(200);
    await c.until(() => (c.positions().at(-1) ?? -1n) >= head, 10_000, `the head ${head}`);
    const [start] = await a.log.readAll({ fromPosition: 0n, maxCount: 1 });
    expect(c.frames[0]?.event).toBe("AccessTokenIssued");
    expect(c.positions()[0]).toBe(start?.position);
    expectConsecutive(c.positions(), start?.position as bigint);
    const end = await writeNotes(a.log, 120, { batch: 3, prefix: "live" });
    expect(end).toBe(head + 120n);
    await c.until(() => c.positions().at(-1) === end, 10_000, `position ${end}`);
    expectConsecutive(c.positions(), start?.position as bigint);
    const lastData = JSON.parse(c.frames.at(-1)?.data ?? "{}");
    expect(lastData.streamId).toMatch(/^note-live/);
    expect(lastData.position).toBe(String(end));
    // Single events, one at a time: each arrives at once, not at the next keepalive.
    for (let i = 0; i < 30; i++) {
      const p = await writeNotes(a.log, 1, { prefix: "one" });
      await c.until(() => c.positions().at(-1) === p, 2000, `position ${p} within 2 s`);
    }
    expectConsecutive(c.positions(), start?.position as bigint);
  });

  it("refuses a client without a token, or with one the log never issued, with 401", async () => {
    const a = await api();
    for (const headers of [{}, { authorization: "Bearer chl.nobody.0000" }]) {
      const res = await fetch(`${a.server.url}/api/v1/events`, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get("content-type")).toMatch(/json/);
      const body = await res.json();
      expect(JSON.stringify(body)).toMatch(/token/);
    }
  });
});
