import { rmSync } from "node:fs";
import { join } from "node:path";
import { type DeclarationSource, parseDeclarationText, SchedulerProjection } from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { catchUp, DeclaredMeanwhileError, declare, pauseTask } from "@chronolog/scheduler";
import { afterEach, describe, expect, it } from "vitest";
import { tempDataDir } from "../support/cli.js";

/**
 * Two producers declare at once, each on its own connection to the same embedded log. Both
 * declarations name one shared task (so one of them loses a compare-and-set) besides a
 * connection and tasks of their own. Whatever the interleaving, each declaration is written
 * whole or not at all: never its connection without its tasks.
 */
const ROUNDS = 20;

function declaration(team: "a" | "b", lease: number): DeclarationSource {
  const text = `
connections:
  - { name: conn_${team}, maxParallelism: 2 }
tasks:
  - { project: p, account: x, name: shared, cron: "0 2 * * *", startDate: 2026-11-01T00:00:00Z, operator: { type: noop }, leaseSeconds: ${lease} }
  - { project: p, account: x, name: ${team}_one, cron: "0 2 * * *", startDate: 2026-11-01T00:00:00Z, operator: { type: noop }, connection: conn_${team} }
  - { project: p, account: x, name: ${team}_two, cron: "0 2 * * *", startDate: 2026-11-01T00:00:00Z, operator: { type: noop }, connection: conn_${team} }
`;
  return parseDeclarationText(text, { filename: `${team}.yaml` });
}

/** The streams a declaration writes besides the shared task's. */
const ownStreams = (team: "a" | "b") => [
  `connection-conn_${team}`,
  `task-p/x/${team}_one/ALL`,
  `task-p/x/${team}_two/ALL`,
];

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

async function producer(
  path: string,
  actor: string,
): Promise<{ log: EventLog; projection: SchedulerProjection }> {
  const log = await openSqliteLog({ path, actor });
  const projection = new SchedulerProjection();
  await catchUp(log, projection);
  return { log, projection };
}

describe("declare: two producers at once", () => {
  it(`each declaration is written whole or not at all (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const dir = tempDataDir("declare-race");
      dirs.push(dir);
      const path = join(dir, "log.db");
      const a = await producer(path, "producer:a");
      const b = await producer(path, "producer:b");
      try {
        const now = Date.parse("2026-11-30T10:00:00.000Z");
        const outcomes = await Promise.allSettled([
          declare(a.log, a.projection, [declaration("a", 30)], now),
          declare(b.log, b.projection, [declaration("b", 60)], now),
        ]);
        const reader = new SchedulerProjection();
        await catchUp(a.log, reader);
        const written = new Set<string>();
        for (const e of await a.log.readAll({ maxCount: 100_000 })) written.add(e.streamId);
        for (const [i, team] of (["a", "b"] as const).entries()) {
          const outcome = outcomes[i];
          const streams = ownStreams(team).map((s) => written.has(s));
          // All of its streams or none of them, and all of them when it says it succeeded.
          expect(new Set(streams).size, `round ${round}, producer ${team}: ${streams}`).toBe(1);
          expect(streams[0], `round ${round}, producer ${team}: ${String(outcome?.status)}`).toBe(
            outcome?.status === "fulfilled",
          );
        }
        // The shared task holds the winner's version; the loser, which would have overwritten
        // a version it never saw, is refused as a conflict and wrote nothing.
        const fulfilled = outcomes.filter((o) => o.status === "fulfilled");
        const rejected = outcomes.filter((o) => o.status === "rejected");
        expect(fulfilled.length, `round ${round}: one declaration wins`).toBe(1);
        const error = (rejected[0] as PromiseRejectedResult).reason;
        expect(error).toBeInstanceOf(DeclaredMeanwhileError);
        expect(error.type).toBe("wrong_expected_revision");
        expect(error.subject).toBe("task p/x/shared/ALL");
        // Both revisions: the one it was decided on, and the one the winner left the stream at.
        expect(error.streamId).toBe("task-p/x/shared/ALL");
        expect(error.expected).toBeDefined();
        expect(error.actual).toBeDefined();
        expect(error.actual).not.toBe(error.expected);
        const winner = outcomes[0]?.status === "fulfilled" ? 30 : 60;
        expect(reader.tasks.get("p/x/shared/ALL")?.spec.leaseSeconds).toBe(winner);
      } finally {
        await a.log.close();
        await b.log.close();
      }
    }
  }, 120_000);
});

describe("declare after other writes to its streams", () => {
  it("decides again when the stream moved for another reason (a pause), and goes through", async () => {
    const dir = tempDataDir("declare-moved");
    dirs.push(dir);
    const path = join(dir, "log.db");
    const a = await producer(path, "producer:a");
    const b = await producer(path, "operator:b");
    try {
      const now = Date.parse("2026-11-30T10:00:00.000Z");
      await declare(a.log, a.projection, [declaration("a", 30)], now);
      await catchUp(b.log, b.projection);
      // The task's stream moves on between producer a's decision and its append, its
      // declaration unchanged: an operator pauses it.
      const appendMany = a.log.appendMany.bind(a.log);
      let paused = false;
      a.log.appendMany = async (...args) => {
        if (!paused) {
          paused = true;
          await pauseTask(b.log, b.projection, "p/x/shared/ALL", "maintenance");
        }
        return appendMany(...args);
      };
      const outcome = await declare(a.log, a.projection, [declaration("a", 45)], now);
      expect(paused).toBe(true);
      expect(outcome.tasks.find((t) => t.task === "p/x/shared/ALL")?.outcome).toBe("changed");
      const reader = new SchedulerProjection();
      await catchUp(a.log, reader);
      expect(reader.tasks.get("p/x/shared/ALL")?.spec.leaseSeconds).toBe(45);
      expect(reader.tasks.get("p/x/shared/ALL")?.status).toBe("paused");
    } finally {
      await a.log.close();
      await b.log.close();
    }
  });
});

describe("a declaration larger than one append", () => {
  it("is written in batches, in order, every task declared once", async () => {
    const dir = tempDataDir("declare-large");
    dirs.push(dir);
    const log = openSqliteLog({ path: join(dir, "log.db"), actor: "test" });
    // The embedded log takes 5,000 streams in one append; a Kafka or EventStoreDB log takes 200,
    // as this one is made to, so that 451 streams take three appends.
    expect(log.streamsPerAppend).toBe(5000);
    Object.defineProperty(log, "streamsPerAppend", { value: 200 });
    // (Checked whole first, then appended in slices.)
    const appends: number[] = [];
    const appendPrepared = log.appendPrepared.bind(log);
    log.appendPrepared = (writes, options) => {
      appends.push(writes.length);
      return appendPrepared(writes, options);
    };
    try {
      const projection = new SchedulerProjection();
      const n = 450;
      let text = "connections:\n  - { name: big, maxParallelism: 2 }\ntasks:\n";
      for (let i = 0; i < n; i++)
        text += `  - { project: p, account: x, name: t${i}, cron: "0 2 * * *", startDate: 2026-11-01T00:00:00Z, operator: { type: noop }, connection: big }\n`;
      const outcome = await declare(
        log,
        projection,
        [parseDeclarationText(text, { filename: "big.yaml" })],
        Date.now(),
      );
      expect(outcome.tasks.filter((t) => t.outcome === "declared")).toHaveLength(n);
      expect(appends).toEqual([200, 200, 51]);
      const events = await log.readAll({ fromPosition: 0n, maxCount: 10_000 });
      expect(events.filter((e) => e.type === "TaskDeclared")).toHaveLength(n);
      // The connection comes first, in the first batch, before any task naming it.
      expect(events[0]?.type).toBe("ConnectionDeclared");
      await catchUp(log, projection);
      // Declared again: nothing changes, nothing is written.
      const again = await declare(
        log,
        projection,
        [parseDeclarationText(text, { filename: "big.yaml" })],
        Date.now(),
      );
      expect(again.tasks.every((t) => t.outcome === "unchanged")).toBe(true);
      expect(await log.headPosition()).toBe(events.at(-1)?.position);
    } finally {
      await log.close();
    }
  });
});
