import {
  budgetPlace,
  budgetText,
  type DomainEvent,
  evolveRun,
  formatTaskKey,
  type RunState,
  summarizeRun,
  type TaskState,
  withBudget,
  withOutcome,
} from "@chronolog/core";
import { describe, expect, it } from "vitest";
import { failed, instance, intended, keyOf, started, succeeded, tokenOf } from "./support/events.js";
import { instanceOf } from "./support/specification.js";

/** An attempt a shutdown stopped, as the worker reports it (and old logs hold it). */
const interrupted = (name: string, attempt: number, retryAt?: string): DomainEvent => ({
  type: "AttemptFailed",
  data: {
    attempt,
    token: tokenOf(name, attempt),
    error: { kind: "interrupted", message: "worker shutdown (grace of 1000 ms elapsed)" },
    exitCode: null,
    durationMs: 800,
    ...(retryAt ? { retryAt } : {}),
  },
});

describe("an attempt stopped by a shutdown", () => {
  it("is interrupted, not failed, read from the event the log has always held", () => {
    const s = instanceOf(
      instance(
        "t",
        intended("t", { idempotent: true }),
        started("t"),
        interrupted("t", 1, "2026-11-30T00:00:00.000Z"),
      ),
    );
    expect(s?.attempts.map((a) => a.status)).toEqual(["interrupted"]);
    expect(s?.attempts[0]?.endReason).toBe("interrupted: worker shutdown (grace of 1000 ms elapsed)");
    expect(s?.status).toBe("retry_wait");
  });

  it("a failure is still failed", () => {
    const s = instanceOf(instance("t", intended("t"), started("t"), failed("t")));
    expect(s?.attempts.map((a) => a.status)).toEqual(["failed"]);
  });
});

describe("an attempt's place in its interval's retry budget", () => {
  it("counts every attempt of the interval but the interrupted ones", () => {
    const s = instanceOf(
      instance(
        "t",
        intended("t", { idempotent: true }),
        started("t"),
        interrupted("t", 1, "2026-11-30T00:00:00.000Z"),
        intended("t", { idempotent: true, attempt: 2 }),
        started("t", 2),
        failed("t", 2, "2026-11-30T00:00:01.000Z"),
        intended("t", { idempotent: true, attempt: 3 }),
        started("t", 3),
        succeeded("t", 3),
      ),
    );
    const attempts = s?.attempts ?? [];
    const places = attempts.map((a) => budgetPlace(attempts, a.attempt, 3));
    expect(places).toEqual([
      { place: null, of: 3 },
      { place: 1, of: 3 },
      { place: 2, of: 3 },
    ]);
    expect(withBudget(attempts, 3).map((a) => [a.attempt, a.status, a.budget])).toEqual(
      attempts.map((a, i) => [a.attempt, a.status, places[i]]),
    );
    expect(places.map(budgetText)).toEqual([
      "not counted in its budget of 3",
      "attempt 1 of 3",
      "attempt 2 of 3",
    ]);
  });

  it("a rerun continues the interval's count: past the budget it says so", () => {
    // Two attempts failed under a budget of two; the budget raised to three; a rerun's attempt is the third.
    const attempts = [
      { attempt: 1, status: "failed" as const },
      { attempt: 2, status: "failed" as const },
      { attempt: 3, status: "failed" as const },
    ];
    expect(budgetText(budgetPlace(attempts, 3, 3))).toBe("attempt 3 of 3");
    expect(budgetText(budgetPlace(attempts, 3, 2))).toBe("attempt 3 of 2 (past its budget)");
  });
});

describe("summarizeRun: one account of a run for every surface", () => {
  const ids = ["extract", "load", "report"].map((n) => formatTaskKey(keyOf(n)));
  const [extract, load, report] = ids as [string, string, string];
  const start = (state: RunState | undefined, tasks: readonly string[], trigger: "schedule" | "rerun") =>
    evolveRun(
      state,
      {
        type: "RunStarted",
        data: {
          runId: "etl@d",
          workflow: "etl",
          logicalDate: "2026-11-28T02:00:00.000Z",
          tasks: tasks.map((t) => keyOf(t.split("/")[2] as string)),
          trigger,
          params: {},
        },
      },
      { revision: 0n, recordedAt: "2026-11-29T00:00:00.000Z" },
    ) as RunState;
  const tasks = (paused: string[] = []): Map<string, TaskState> =>
    new Map(
      ids.map((id) => [
        id,
        { id, status: paused.includes(id) ? "paused" : "active" } as unknown as TaskState,
      ]),
    );

  it("counts each task by its state, and a task the run has done nothing for is pending", () => {
    let run = start(undefined, ids, "schedule");
    run = withOutcome(withOutcome(run, extract, "success"), load, "running");
    const s = summarizeRun(run, tasks());
    expect(s.tasks).toEqual({ [extract]: "success", [load]: "running", [report]: "pending" });
    expect(s.counts.success).toBe(1);
    expect(s.counts.running).toBe(1);
    expect(s.counts.pending).toBe(1);
    expect(s.counts.failed).toBe(0);
    expect([s.ended, s.total, s.state]).toEqual([1, 3, "running"]);
    expect(s.text).toBe("running, 1 of 3 tasks ended (success 1, running 1, pending 1)");
  });

  it("a rerun's tasks start again as pending, whatever their earlier outcome, and the run says why it waits", () => {
    let run = start(undefined, ids, "schedule");
    run = withOutcome(
      withOutcome(withOutcome(run, extract, "success"), load, "failed"),
      report,
      "upstream_failed",
    );
    run = { ...run, status: "failed" };
    const rerun = start(run, [load, report], "rerun");
    const s = summarizeRun(rerun, tasks([load]));
    expect(s.tasks).toEqual({ [extract]: "success", [load]: "pending", [report]: "pending" });
    expect(s.counts.failed).toBe(0);
    expect(s.counts.upstream_failed).toBe(0);
    expect(s.waiting).toEqual([`${load} is paused`]);
    expect(s.text).toContain(`; waiting: ${load} is paused`);
  });

  it("a run that has ended waits for nothing", () => {
    let run = start(undefined, ids, "schedule");
    for (const t of ids) run = withOutcome(run, t, "success");
    const s = summarizeRun({ ...run, status: "success" }, tasks([load]));
    expect(s.waiting).toEqual([]);
    expect(s.ended).toBe(3);
  });
});
