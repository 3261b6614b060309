import type { ChildProcess } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chronolog, chronologAsync, chronologSpawn, tempDataDir } from "../support/cli.js";
import { eventstoreForSuite } from "../support/eventstore.js";
import { kafkaForSuite } from "../support/kafka.js";
import { waitUntil } from "../support/wait.js";

/**
 * A backfill across projects, end to end with real processes: three daily tasks, `orders_raw` in one
 * project and `orders_enriched` and `orders_daily_report` in another; a 90-day backfill with
 * --downstream; the history shows every day run upstream-first, exactly once per task.
 */
const DAY = 86_400_000;
const RAW = "ingest/acme/orders_raw/ALL";
const ENRICHED = "sales/acme/orders_enriched/ALL";
const REPORT = "sales/acme/orders_daily_report/ALL";

interface HistoryEvent {
  position: string;
  streamId: string;
  type: string;
  data: Record<string, unknown> & { logicalDate?: string };
}

function history(dir: string, task: string): HistoryEvent[] {
  const r = chronolog(dir, ["history", task, "--json"]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as HistoryEvent);
}

function tasks(dir: string): Array<{ task: string; prevIntervalStart: string | null; logicalDate: string }> {
  return JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout);
}

const today0200 = new Date(Math.floor(Date.now() / DAY) * DAY + 2 * 3_600_000);
const latest = new Date(
  today0200.getTime() > Date.now() ? today0200.getTime() - 2 * DAY : today0200.getTime() - DAY,
);
const from = new Date(latest.getTime() - 100 * DAY);
const to = new Date(from.getTime() + 89 * DAY);

describe.each(["sqlite", "kafka", "eventstore"] as const)("on the %s log", (backend) => {
  let dir: string;
  let up: ChildProcess;
  let upLog = "";
  let kafka: { brokers: string; stop: () => Promise<void> } | null = null;
  let eventstore: Awaited<ReturnType<typeof eventstoreForSuite>> | null = null;

  beforeAll(async () => {
    dir = tempDataDir("backfill");
    if (backend === "kafka") {
      kafka = await kafkaForSuite("backfill");
      // Every chronolog process of this suite uses a topic of its own on that cluster.
      process.env.CHRONOLOG_LOG = `kafka://${kafka.brokers}/chronolog-backfill-${process.pid}-${Date.now()}`;
    } else if (backend === "eventstore") {
      // The CLI runs synchronously here: the stand-in needs a process of its own.
      eventstore = await eventstoreForSuite("backfill", { separate: true });
      process.env.CHRONOLOG_LOG = eventstore.logUrl("backfill");
    } else delete process.env.CHRONOLOG_LOG;
    const start = new Date(latest.getTime() - 200 * DAY).toISOString();
    // The first runs a shell (its output is checked below); the two after it are no-ops, which
    // run in the scheduler's workers without a process each: the order and the counts are the
    // same, for a third of the processes.
    const task = (project: string, name: string, parents: string[]) => `
  - project: ${project}
    account: acme
    name: ${name}
    cron: "0 2 * * *"
    startDate: ${start}
    catchup: false
    idempotent: true
    operator: ${parents.length === 0 ? `{ type: shell, command: "echo ${name} {{ ds }}" }` : "{ type: noop }"}
    parents: [${parents.map((p) => `"${p}"`).join(", ")}]`;
    const file = join(dir, "orders.yaml");
    writeFileSync(
      file,
      `tasks:${task("ingest", "orders_raw", [])}${task("sales", "orders_enriched", [RAW])}${task("sales", "orders_daily_report", [ENRICHED])}\n`,
    );
    const declared = chronolog(dir, ["declare", file]);
    expect(declared.code, declared.stderr).toBe(0);
    up = chronologSpawn(dir, ["up", "--workers", "2"]);
    up.stderr?.on("data", (c: Buffer) => {
      upLog += c.toString();
    });
    // catch-up is off: each task runs only its latest interval first.
    await waitUntil("the latest interval to finish", () =>
      tasks(dir).every((t) => t.prevIntervalStart === latest.toISOString()) ? true : undefined,
    );
  }, 300_000);

  afterAll(async () => {
    if (up && up.exitCode === null) {
      up.kill("SIGTERM");
      await new Promise((r) => up.once("exit", r));
    }
    rmSync(dir, { recursive: true, force: true });
    delete process.env.CHRONOLOG_LOG;
    await kafka?.stop();
    await eventstore?.stop();
  });

  describe("a 90-day backfill with --downstream across two projects", () => {
    it("runs every day upstream-first, each task exactly once per day, then returns to the present", async () => {
      // (Asynchronously: `up` logs every interval it completes, and its output must be read
      // meanwhile, or it blocks on a full pipe.)
      const r = await chronologAsync(
        dir,
        [
          "backfill",
          "ingest/acme/orders_raw",
          "--from",
          from.toISOString(),
          "--to",
          to.toISOString(),
          "--downstream",
          "--timeout",
          "240",
        ],
        { timeoutMs: 250_000 },
      );
      expect(r.code, `${r.stdout}\n${r.stderr}\n${upLog.slice(-3000)}`).toBe(0);
      expect(r.stdout).toContain(`reset ${RAW}: 90 intervals`);
      expect(r.stdout).toContain(`reset ${ENRICHED}: 90 intervals`);
      expect(r.stdout).toContain(`reset ${REPORT}: 90 intervals`);
      expect(r.stdout).toContain("backfill done: 270 intervals");

      const days = Array.from({ length: 90 }, (_, i) => new Date(from.getTime() + i * DAY).toISOString());
      const events = {
        [RAW]: history(dir, RAW),
        [ENRICHED]: history(dir, ENRICHED),
        [REPORT]: history(dir, REPORT),
      };
      const resetAt = (task: string) => {
        const reset = events[task]?.find((e) => e.type === "IntervalReset");
        expect(reset, task).toBeDefined();
        return BigInt(reset?.position as string);
      };
      /** The events of one task for one day, after the backfill's reset. */
      const dayEvents = (task: string, day: string) =>
        (events[task] ?? []).filter(
          (e) =>
            BigInt(e.position) > resetAt(task) &&
            (e.streamId.endsWith(`@${day}`) ||
              (e.type === "IntervalCompleted" && e.data.logicalDate === day)),
        );
      for (const day of days) {
        const positions: Record<string, { dispatched: bigint; completed: bigint }> = {};
        for (const task of [RAW, ENRICHED, REPORT]) {
          const evs = dayEvents(task, day);
          const dispatches = evs.filter((e) => e.type === "DispatchIntended");
          const successes = evs.filter((e) => e.type === "AttemptSucceeded");
          const completions = evs.filter((e) => e.type === "IntervalCompleted");
          expect(dispatches.length, `${task} ${day} dispatches`).toBe(1);
          expect(successes.length, `${task} ${day} successes`).toBe(1);
          expect(completions.length, `${task} ${day} completions`).toBe(1);
          positions[task] = {
            dispatched: BigInt(dispatches[0]?.position as string),
            completed: BigInt(completions[0]?.position as string),
          };
        }
        // Each child was dispatched only after its parent finished that same day.
        expect(positions[ENRICHED]?.dispatched, day).toBeGreaterThan(positions[RAW]?.completed as bigint);
        expect(positions[REPORT]?.dispatched, day).toBeGreaterThan(positions[ENRICHED]?.completed as bigint);
      }
      // After the range, every task is back where it was: the latest interval is done, nothing re-ran beyond the range.
      for (const t of tasks(dir)) expect(t.prevIntervalStart).toBe(latest.toISOString());
      const outsideRange = events[RAW]?.filter(
        (e) =>
          e.type === "DispatchIntended" &&
          BigInt(e.position) > resetAt(RAW) &&
          !days.includes(e.data.logicalDate as string),
      );
      expect(outsideRange).toEqual([]);
      // The worker's output is recorded with the attempt.
      const attempts = JSON.parse(chronolog(dir, ["attempts", RAW, "--json"]).stdout) as Array<{
        stdoutTail: string;
        logicalDate: string;
      }>;
      const sample = attempts.find((a) => a.logicalDate === days[10]);
      expect(sample?.stdoutTail).toBe(`orders_raw ${days[10]?.slice(0, 10)}\n`);
    }, 300_000);
  });
});
