import type { ChildProcess } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { explainTask, SchedulerProjection } from "@chronolog/core";
import { type EventLog, logAsOf } from "@chronolog/log";
import { openSqliteLog } from "@chronolog/log-sqlite";
import {
  catchUp,
  diffPositions,
  LADDER_DIR,
  ladderRungs,
  projectionAsOf,
  rebuildWithLadder,
  taskRows,
} from "@chronolog/scheduler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil as waitFor } from "../support/wait.js";

const waitUntil = (check: () => boolean, ms: number, what = "the history to be written") =>
  waitFor(what, () => (check() ? true : undefined), ms);

/**
 * A history with every kind of event a scheduler writes (declarations, intervals completed and
 * failed, retries, runs, a rerun, a trigger, a backfill, a pause, alerts) and a crash: the
 * scheduler is killed with SIGKILL mid-run and started again. The state as of any position
 * must be the state a fold of the log cut at that position gives, whatever snapshots lie
 * between, and a snapshot that does not belong to the log is never used.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
let dir = "";
let log: EventLog;
let head = 0n;

function up(): { proc: ChildProcess; out: () => string } {
  const proc = chronologSpawn(dir, ["up", "--snapshot-seconds", "1", "--reconcile-ms", "200"]);
  left.processes.push(proc);
  let out = "";
  proc.stdout?.on("data", (d) => {
    out += d;
  });
  proc.stderr?.on("data", (d) => {
    out += d;
  });
  return { proc, out: () => out };
}

const cli = (...args: string[]) => {
  const r = chronolog(dir, args);
  expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r.stdout;
};

/** The state a fold of the log cut at `position` gives, with no snapshot. */
async function foldedTo(position: bigint): Promise<SchedulerProjection> {
  const p = new SchedulerProjection();
  await catchUp(logAsOf(log, position), p);
  return p;
}

const stateOf = (p: SchedulerProjection) =>
  JSON.stringify(p.toSnapshot(), (_k, v) => (typeof v === "bigint" ? v.toString() : v));

/** Positions spread over the log, the ends included, the same in every run. */
function positions(n: number): bigint[] {
  let seed = 17;
  const out = new Set<bigint>([0n, head]);
  while (out.size < n) {
    seed = (seed * 48271) % 2147483647;
    out.add(BigInt(seed % Number(head + 1n)));
  }
  return [...out].sort((a, b) => (a < b ? -1 : 1));
}

beforeAll(async () => {
  dir = tempDataDir("as-of");
  left.dirs.push(dir);
  const hour = Math.floor(Date.now() / HOUR) * HOUR;
  const start = new Date(hour - 12 * HOUR).toISOString();
  const flag = join(dir, "flaky-ran");
  writeFileSync(
    join(dir, "history.yaml"),
    `connections:
  - { name: db, maxParallelism: 2 }
tasks:
  - { project: ingest, account: a, name: hourly, cron: "0 * * * *", startDate: "${start}", idempotent: true,
      operator: { type: shell, command: "sleep 0.05; echo landed {{ ts }}" }, connection: db }
  - { project: ingest, account: a, name: doomed, cron: "0 */6 * * *", startDate: "${start}",
      operator: { type: shell, command: "echo broken >&2; exit 3" },
      alerts: [{ on: [task_failed], command: "true" }] }
workflows:
  - name: wf
    project: sales
    account: a
    cron: "0 */4 * * *"
    startDate: "${start}"
    tasks:
      - { name: flaky, parents: ["ingest/a/hourly"], idempotent: true, retry: { maxAttempts: 3, initialDelayMs: 50 },
          operator: { type: shell, command: "if [ -e ${flag}-{{ ds_nodash }}{{ ts_nodash }} ]; then echo ok; else touch ${flag}-{{ ds_nodash }}{{ ts_nodash }}; exit 1; fi" } }
      - { name: report, parents: [flaky], idempotent: true, operator: { type: shell, command: "echo report {{ ds }}" } }
`,
  );
  cli("declare", join(dir, "history.yaml"));
  // A first scheduler, killed in the middle of the catch-up.
  const first = up();
  await waitUntil(
    () => /IntervalCompleted|interval completed/.test(first.out()) && first.out().length > 4000,
    30_000,
  );
  first.proc.kill("SIGKILL");
  await new Promise((r) => first.proc.once("exit", r));
  // A second one: what the first left in flight is settled, and operators act meanwhile.
  const second = up();
  await waitUntil(() => second.out().includes("chronolog is up"), 30_000);
  cli("pause", "ingest/a/doomed", "--reason", "looking into it");
  cli("resume", "ingest/a/doomed");
  const runs = () => JSON.parse(cli("runs", "wf", "--json")) as Array<{ runId: string; status: string }>;
  await waitUntil(() => runs().filter((r) => r.status === "success").length >= 2, 60_000);
  const done = runs().find((r) => r.status === "success") as { runId: string };
  cli("rerun", done.runId);
  cli(
    "backfill",
    "ingest/a/hourly",
    "--from",
    new Date(hour - 10 * HOUR).toISOString(),
    "--to",
    new Date(hour - 9 * HOUR).toISOString(),
    "--detach",
  );
  await waitUntil(() => runs().filter((r) => r.status === "running").length === 0, 60_000);
  second.proc.kill("SIGTERM");
  await new Promise((r) => second.proc.once("exit", r));
  log = await openSqliteLog({ path: join(dir, "log.db"), readonly: true });
  head = await log.headPosition();
}, 180_000);

afterAll(async () => {
  await log?.close();
  await left.clear();
});

describe("the state as of a position", () => {
  it("has every kind of event a scheduler writes", async () => {
    const types = new Set((await log.readAll({ maxCount: 100_000 })).map((e) => e.type));
    for (const t of [
      "TaskDeclared",
      "ConnectionDeclared",
      "WorkflowDeclared",
      "DispatchIntended",
      "AttemptStarted",
      "AttemptSucceeded",
      "AttemptFailed",
      "IntervalCompleted",
      "IntervalFailed",
      "IntervalReset",
      "RunStarted",
      "RunFinished",
      "TaskPaused",
      "TaskResumed",
      "AlertRaised",
      "ConnectionSlotsTaken",
    ])
      expect(types, t).toContain(t);
  });

  it("equals the fold of the log cut there, from the ladder the scheduler left", async () => {
    expect(ladderRungs(dir).length).toBeGreaterThan(0);
    for (const p of positions(25)) {
      const asOf = await projectionAsOf(log, dir, p);
      expect(asOf.position).toBe(p);
      expect(stateOf(asOf.projection), `position ${p}`).toBe(stateOf(await foldedTo(p)));
    }
  }, 120_000);

  it("equals it with snapshots every few events, and with none", async () => {
    const ladder = tempDataDir("as-of-ladder");
    left.dirs.push(ladder);
    await rebuildWithLadder(log, ladder, { spacing: 9n });
    expect(ladderRungs(ladder).length).toBeGreaterThan(5);
    const bare = tempDataDir("as-of-bare");
    left.dirs.push(bare);
    for (const p of positions(40)) {
      const folded = stateOf(await foldedTo(p));
      const near = await projectionAsOf(log, ladder, p);
      expect(stateOf(near.projection), `position ${p}, ladder`).toBe(folded);
      // It folded from the nearest rung at or below the position.
      const below = ladderRungs(ladder).filter((r) => r <= p);
      expect(near.fromSnapshot).toBe(below.at(-1) ?? -1n);
      const none = await projectionAsOf(log, bare, p);
      expect(none.fromSnapshot).toBe(-1n);
      expect(stateOf(none.projection), `position ${p}, no snapshot`).toBe(folded);
    }
  }, 120_000);

  it("never uses a snapshot whose hash does not match its log", async () => {
    const other = tempDataDir("as-of-foreign");
    left.dirs.push(other);
    await rebuildWithLadder(log, other, { spacing: 50n });
    const rungs = ladderRungs(other);
    const victim = rungs[Math.floor(rungs.length / 2)] as bigint;
    // The rung claims a position whose event is another: its recorded hash is not the log's.
    const path = join(other, LADDER_DIR, `${victim}.json`);
    // The file's first line is its header, which holds the hash.
    const text = (await import("node:fs")).readFileSync(path, "utf8");
    const cut = text.indexOf("\n");
    const header = JSON.parse(text.slice(0, cut)) as { headHash: string };
    header.headHash = "0".repeat(64);
    writeFileSync(path, JSON.stringify(header) + text.slice(cut));
    const asOf = await projectionAsOf(log, other, victim + 1n);
    expect(asOf.fromSnapshot).toBeLessThan(victim);
    expect(asOf.discarded.join()).toContain(
      `snapshot at position ${victim}: the snapshot does not match this log`,
    );
    expect(stateOf(asOf.projection)).toBe(stateOf(await foldedTo(victim + 1n)));
    expect(readdirSync(join(other, LADDER_DIR))).toContain(`${victim}.json`);
  });

  it("from the CLI: tasks, why, runs and history --at P say what the fold says, as of when P was recorded", async () => {
    for (const p of positions(6)) {
      const r = chronolog(dir, ["tasks", "--at", String(p), "--json"]);
      expect(r.code, r.stderr).toBe(0);
      const [event] = await log.readAllStored({ fromPosition: p, maxCount: 1 });
      expect(r.stderr).toContain(
        `as of position ${p} (hash ${event?.metadata.hash}, recorded ${event?.metadata.recordedAt})`,
      );
      const folded = await foldedTo(p);
      const now = Date.parse(event?.metadata.recordedAt as string);
      expect(JSON.parse(r.stdout)).toEqual(
        JSON.parse(
          JSON.stringify(taskRows(folded, now), (_k, v) => (typeof v === "bigint" ? v.toString() : v)),
        ),
      );
      const why = chronolog(dir, ["why", "sales/a/flaky", "--at", String(p), "--json"]);
      if (folded.tasks.has("sales/a/flaky/ALL")) {
        expect(why.code, why.stderr).toBe(0);
        expect(JSON.parse(why.stdout).condition).toBe(
          explainTask(folded, "sales/a/flaky/ALL", now).condition,
        );
      }
      const history = chronolog(dir, ["history", "ingest/a/hourly", "--at", String(p), "--json"]);
      if (folded.tasks.has("ingest/a/hourly/ALL")) {
        const shown = history.stdout
          .trim()
          .split("\n")
          .filter(Boolean)
          .map((l) => BigInt(JSON.parse(l).position));
        expect(
          shown.every((x) => x <= p),
          `history --at ${p}`,
        ).toBe(true);
      }
    }
    // --as-of an instant is the last event recorded at or before it.
    const [mid] = await log.readAllStored({ fromPosition: head / 2n, maxCount: 1 });
    const asOf = chronolog(dir, ["runs", "--as-of", mid?.metadata.recordedAt as string, "--json"]);
    expect(asOf.code, asOf.stderr).toBe(0);
    const named = BigInt(/as of position (\d+)/.exec(asOf.stderr)?.[1] ?? "-1");
    const [at] = await log.readAllStored({ fromPosition: named, maxCount: 2 });
    expect(Date.parse(at?.metadata.recordedAt as string)).toBeLessThanOrEqual(
      Date.parse(mid?.metadata.recordedAt as string),
    );
    expect(named).toBeGreaterThanOrEqual(head / 2n);
    // Past the head, or not a position: refused.
    const past = chronolog(dir, ["tasks", "--at", String(head + 5n)]);
    expect(past.code).toBe(2);
    expect(past.stderr).toContain(`position ${head + 5n} is past the log's head (${head})`);
    expect(chronolog(dir, ["tasks", "--at", "x"]).code).toBe(2);
  }, 120_000);

  it("diff lists what changed between two positions, with the events that changed it", async () => {
    const from = head / 3n;
    const to = (2n * head) / 3n;
    const diff = await diffPositions(log, dir, from, to);
    expect(diff.events).toBe(Number(to - from));
    const a = await foldedTo(from);
    const b = await foldedTo(to);
    for (const [id, task] of b.tasks) {
      const before = a.tasks.get(id);
      const change = diff.changes.find((c) => c.kind === "task" && c.id === id);
      if (before?.prevIntervalStart !== task.prevIntervalStart) {
        expect(change?.changes, id).toContainEqual({
          field: "prevIntervalStart",
          from: before?.prevIntervalStart ?? null,
          to: task.prevIntervalStart,
        });
      }
    }
    for (const c of diff.changes)
      for (const e of c.events) expect(e.position > from && e.position <= to).toBe(true);
    const r = chronolog(dir, ["diff", "--from", String(from), "--to", String(to)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`from position ${from} to ${to}: ${to - from} events`);
    const backwards = chronolog(dir, ["diff", "--from", String(to), "--to", String(from)]);
    expect(backwards.code).toBe(2);
  }, 120_000);
});
